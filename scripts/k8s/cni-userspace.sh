#!/usr/bin/env bash
# Idempotent, cached build of the Userspace CNI plugin (intel/userspace-cni-network-plugin), the
# CNI the draft's user-space models use on Kubernetes: vhost-user ports on the node's OVS-DPDK for
# a DPDK pod (nfvlab/labs/kubernetes/render.py renders its NADs).
#
#   scripts/k8s/cni-userspace.sh              build if missing (a no-op once stamped)
#   scripts/k8s/cni-userspace.sh --print-dir  print the output directory and exit
#
# Output: ${NFVLAB_CACHE:-/var/cache/nfvlab}/cni/userspace-<VERSION>_<RECIPE>/{bin/userspace,stamp,logs}
#
# Source: the module proxy's github.com/intel/userspace-cni-network-plugin at the pinned
# pseudo-version (its v1.x tags are not semver, so not served). Two changes, both forced:
# - its go.mod requires git.fd.io/govpp.git v0.3.5, which the proxy refuses; go.fd.io/govpp
#   v0.3.5 is the same module (its go.mod declares git.fd.io/govpp.git): a replace.
# - its VPP engine (cnivpp) imports cnivpp/bin_api/*, Go bindings `make` generates from VPP
#   19.04's API files; they are not in the module and no registry here serves VPP. The engine is
#   replaced by a stub whose every call fails with that reason, so a NAD asking for engine "vpp"
#   gets one line saying why.
# - its DEL is not idempotent, which the CNI spec asks of it (a DEL must succeed when what it
#   deletes is already gone), and the kubelet retries a failing DEL forever, so the pod and its
#   namespace never go: (a) the first interface's DEL removes the pod's emptied shared dir and the
#   second's then fails opening it; (b) with no OVS running (its database socket absent) there is
#   no port to delete, but ovs-vsctl fails. Two guards make both a no-op (cniovs/cniovs.go,
#   cniovs/ovsctrl.go); the rest of the ovs-dpdk engine (cniovs) is the module's own code.
# Cold build ~1-2 min niced on 2 cores (its dependencies: k8s client-go 0.18, CNI 0.8).
set -euo pipefail

VERSION=v0.0.0-20201116143459-807c52367c73
RECIPE=r2
MODULE=github.com/intel/userspace-cni-network-plugin
NAME=userspace
source "$(dirname "${BASH_SOURCE[0]}")/cni-lib.sh"

# The module's source, writable, with the VPP engine stubbed.
cni_source
rm -rf "$WORK/src/cnivpp" "$WORK/src/docker" "$WORK/src/tests"
mkdir -p "$WORK/src/cnivpp"
cat > "$WORK/src/cnivpp/cnivpp.go" <<'EOF'
// Package cnivpp: the VPP engine, stubbed by nfvlab's scripts/k8s/cni-userspace.sh.
package cnivpp

import (
	"errors"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types/current"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/intel/userspace-cni-network-plugin/pkg/types"
)

var errNotBuilt = errors.New("userspace CNI: engine vpp not built here: its VPP API bindings " +
	"(cnivpp/bin_api) are generated from VPP 19.04's API files, which no registry serves; " +
	"engine ovs-dpdk works")

type CniVpp struct{}

func (CniVpp) AddOnHost(conf *types.NetConf, args *skel.CmdArgs, kubeClient kubernetes.Interface,
	sharedDir string, ipResult *current.Result) error {
	return errNotBuilt
}

func (CniVpp) AddOnContainer(conf *types.NetConf, args *skel.CmdArgs, kubeClient kubernetes.Interface,
	sharedDir string, pod *v1.Pod, ipResult *current.Result) (*v1.Pod, error) {
	return pod, errNotBuilt
}

func (CniVpp) DelFromHost(conf *types.NetConf, args *skel.CmdArgs, sharedDir string) error {
	return nil // nothing was added
}

func (CniVpp) DelFromContainer(conf *types.NetConf, args *skel.CmdArgs, sharedDir string, pod *v1.Pod) error {
	return nil
}
EOF
# The idempotent DEL (above): each guard must apply exactly once.
cni_patch "patching the DEL guards" <<'PYEOF'
patch("cniovs/cniovs.go", "\t\tfolder, err := os.Open(sharedDir)\n\t\tif err != nil {\n",
      "\t\tfolder, err := os.Open(sharedDir)\n\t\tif os.IsNotExist(err) {\n\t\t\treturn nil // nfvlab: already gone\n"
      "\t\t}\n\t\tif err != nil {\n")
patch("cniovs/ovsctrl.go", "\targs := []string{\"--if-exists\", \"del-port\", bridge_name, sock_name}\n",
      "\targs := []string{\"--if-exists\", \"del-port\", bridge_name, sock_name}\n"
      "\tif _, err := os.Stat(\"/var/run/openvswitch/db.sock\"); os.IsNotExist(err) {\n"
      "\t\treturn nil // nfvlab: no OVS runs, so it has no port to delete\n\t}\n")
PYEOF
(
  cd "$WORK/src"
  "$GO" mod edit -replace=git.fd.io/govpp.git=go.fd.io/govpp@v0.3.5
  nice -n 19 "$GO" mod tidy
  nice -n 19 "$GO" build -p "$JOBS" -trimpath \
    -ldflags "-X main.version=$VERSION -X main.commit=807c52367c73 -X main.date=2020-11-16" \
    -o "$OUT/bin/userspace.tmp" ./userspace
) >>"$LOG" 2>&1 || fail "go build ./userspace"
cni_finish
