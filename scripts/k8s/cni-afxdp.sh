#!/usr/bin/env bash
# Idempotent, cached build of the AF_XDP CNI (intel/afxdp-plugins-for-kubernetes, cmd/cni), the CNI
# of the draft's afxdp-cni model on Kubernetes: it moves a netdev into the pod, where the pod's
# DPDK af_xdp port binds its AF_XDP socket (nfvlab/labs/kubernetes/userspace.py renders its NADs).
#
#   scripts/k8s/cni-afxdp.sh              build if missing (a no-op once stamped)
#   scripts/k8s/cni-afxdp.sh --print-dir  print the output directory and exit
#
# Output: ${NFVLAB_CACHE:-/var/cache/nfvlab}/cni/afxdp-<VERSION>_<RECIPE>/{bin/afxdp,stamp,logs}
#
# Source: the module proxy's github.com/intel/afxdp-plugins-for-kubernetes at the pinned tag. Its
# BPF wrapper (cgo) includes <bpf/xsk.h> and calls bpf_set_link_xdp_fd, both gone from libbpf 1.x
# (Debian 12 ships 1.1; the xsk API moved to libxdp): a shim header directory puts <xdp/xsk.h> and
# bpf_xdp_attach() in their place and the link adds -lxdp. Its go.mod replaces the nested module
# pkg/subfunctions (Intel ice CDQ subfunctions, devlink over cgo) by ./pkg/subfunctions, which a
# module zip leaves out and the proxy does not serve on its own: a stub whose every call fails
# with that reason takes its place (CDQ mode only; the CNI's primary mode never calls it).
# - its DEL is not idempotent, which the CNI spec asks of it, and the kubelet retries a failing
#   DEL forever (the pod and its namespace never go): a DEL whose pod network namespace is gone,
#   or whose device is no longer in it, fails. Two guards (internal/cni/cni.go) make both a
#   no-op: the device went with the namespace, or was never moved in. The rest is the module's
#   own code. (Its device
# plugin, cmd/deviceplugin, is not built: it pools physical ports only, which the local node's veth
# NIC ports are not; docs/kubernetes.md says how the local cluster runs the CNI without it.)
# Cold build ~1 min niced on 2 cores (its dependencies: CNI 1.1, netlink, logrus; cgo: libbpf-dev,
# libxdp-dev from scripts/k8s/debian-packages.txt).
set -euo pipefail

VERSION=v0.0.3
RECIPE=r2
MODULE=github.com/intel/afxdp-plugins-for-kubernetes
NAME=afxdp
source "$(dirname "${BASH_SOURCE[0]}")/cni-lib.sh"

cni_source
mkdir -p "$WORK/shim/bpf"
cat > "$WORK/shim/bpf/xsk.h" <<'HEOF'
/* nfvlab's scripts/k8s/cni-afxdp.sh: libbpf 1.x moved the xsk API to libxdp. */
#include <bpf/libbpf.h>
#include <xdp/xsk.h>
#define bpf_set_link_xdp_fd(ifindex, fd, flags) bpf_xdp_attach((ifindex), (fd), (flags), NULL)
HEOF
mkdir -p "$WORK/src/pkg/subfunctions"
printf 'module github.com/intel/afxdp-plugins-for-kubernetes/pkg/subfunctions\n\ngo 1.19\n' \
  > "$WORK/src/pkg/subfunctions/go.mod"
cat > "$WORK/src/pkg/subfunctions/stub.go" <<'GOEOF'
// Package subfunctions: a stub by nfvlab's scripts/k8s/cni-afxdp.sh (the nested module is not
// served by the module proxy); CDQ subfunctions are not available in this build.
package subfunctions

import "errors"

var errNotBuilt = errors.New("CDQ subfunctions: not in this build (nfvlab's scripts/k8s/cni-afxdp.sh " +
	"stubs the nested module pkg/subfunctions, which the module proxy does not serve)")

func CreateCdqSubfunction(parentPci, pfnum, sfnum string) error { return errNotBuilt }
func DeleteCdqSubfunction(portIndex string) error                { return errNotBuilt }
func IsCdqSubfunction(name string) (bool, error)                 { return false, errNotBuilt }
func NumAvailableCdqSubfunctions(name string) (int, error)       { return 0, errNotBuilt }
func GetCdqPortIndex(netdev string) (string, error)              { return "", errNotBuilt }
func GetCdqPfnum(netdev string) (string, error)                  { return "", errNotBuilt }
GOEOF
cni_patch "patching the DEL guards" <<'PYEOF'
patch("internal/cni/cni.go",
      "cmdDel(): failed to open container netns %q: %w\", args.Netns, err)\n\t\tlogging.Errorf(err.Error())\n\n\t\treturn err\n",
      "cmdDel(): failed to open container netns %q: %w\", args.Netns, err)\n\t\tlogging.Errorf(err.Error())\n\n"
      "\t\treturn nil // nfvlab: the pod's netns is gone, and the device with it\n")
patch("internal/cni/cni.go",
      "cmdDel(): failed to find device %q in containerNS: %w\", cfg.Device, err)\n\t\t\tlogging.Errorf(err.Error())\n\n\t\t\treturn err\n",
      "cmdDel(): failed to find device %q in containerNS: %w\", cfg.Device, err)\n\t\t\tlogging.Errorf(err.Error())\n\n"
      "\t\t\treturn nil // nfvlab: never moved in, or already moved out\n")
PYEOF
(
  cd "$WORK/src"
  CGO_ENABLED=1 CGO_CFLAGS="-I$WORK/shim" CGO_LDFLAGS="-lxdp -lbpf" \
    nice -n 19 "$GO" build -p "$JOBS" -trimpath -o "$OUT/bin/afxdp.tmp" ./cmd/cni
) >>"$LOG" 2>&1 || fail "go build ./cmd/cni"
cni_finish
