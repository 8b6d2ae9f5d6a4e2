#!/usr/bin/env bash
# Idempotent, cached build of the OVS CNI plugin (k8snetworkplumbingwg/ovs-cni), the CNI that puts
# a pod's veth on a bridge of the node's OVS: with the node's private OVS-DPDK, a port of a
# userspace (netdev) bridge, reached through that OVS's own database socket (NetConf socket_file).
#
#   scripts/k8s/cni-ovs.sh              build if missing (a no-op once stamped)
#   scripts/k8s/cni-ovs.sh --print-dir  print the output directory and exit
#
# Output: ${NFVLAB_CACHE:-/var/cache/nfvlab}/cni/ovs-<VERSION>_<RECIPE>/{bin/ovs,stamp,logs}
# (the binary is named for the CNI type, "ovs").
#
# Source: the module proxy's github.com/k8snetworkplumbingwg/ovs-cni at the pinned tag, its
# cmd/plugin built as upstream's Dockerfile does (CGO_ENABLED=0, -tags no_openssl). Its go.mod has
# replace directives, so `go install pkg@version` refuses it: it is built in a writable copy. The
# module zip keeps only vendor/modules.txt of its vendor/ (the proxy drops vendored code), so that
# stub goes and the build resolves its go.sum-pinned dependencies from the proxy (-mod=mod).
# One change, forced:
# - its DEL is not idempotent, which the CNI spec asks of it (a DEL must succeed when what it
#   deletes is already gone), and the kubelet retries a failing DEL forever, so the pod and its
#   namespace never go. When the port is gone with its OVS, DEL fails and keeps its cached
#   NetConf, so every retry fails the same: (a) no OVS runs (its database socket absent, or
#   refusing: a stale file): "failed to connect to ovsdb error: ... connect: no such file or
#   directory" (or "connection refused"); (b) OVS runs but the bridge was deleted, taking its ports
#   with it: "failed to find bridge <bridge>". Two guards in CmdDel (helpers in
#   pkg/plugin/nfvlab_del.go), before it connects and before it opens the bridge, make that DEL do
#   only what needs no port: the IPAM DEL and a best-effort delete of the pod's veth; for a veth
#   port only (no deviceID: SR-IOV keeps the module's own path). The rest is the module's own code.
# Cold build ~45 s niced on 2 cores from empty Go caches (its dependencies: CNI 1.2, libovsdb 0.7,
# netlink); ~20 s with the shared module and build caches warm from other builds.
set -euo pipefail

VERSION=v0.39.0
RECIPE=r1
MODULE=github.com/k8snetworkplumbingwg/ovs-cni
NAME=ovs
source "$(dirname "${BASH_SOURCE[0]}")/cni-lib.sh"

# The module's source, writable, without its (empty) vendor stub.
cni_source
rm -rf "$WORK/src/vendor"
# The idempotent DEL (above): its helpers, and two guards, each of which must apply exactly once.
cat > "$WORK/src/pkg/plugin/nfvlab_del.go" <<'EOF'
// DEL when OVS has no port left to delete: added by nfvlab's scripts/k8s/cni-ovs.sh.
package plugin

import (
	"errors"
	"log"
	"net"
	"strings"
	"syscall"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"

	"github.com/k8snetworkplumbingwg/ovs-cni/pkg/ovsdb"
	"github.com/k8snetworkplumbingwg/ovs-cni/pkg/types"
)

// ovsGone tells whether no ovsdb-server listens on socketFile, a unix: endpoint whose file is
// absent or refuses (a stale file). Any other endpoint, or error, is left to the module's code.
func ovsGone(socketFile string) bool {
	if socketFile == "" {
		socketFile = "unix:/var/run/openvswitch/db.sock" // the module's default
	}
	path, ok := strings.CutPrefix(socketFile, "unix:")
	if !ok {
		return false
	}
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// bridgeGone tells whether OVS answers that it has no such bridge (so none of its ports).
func bridgeGone(d *ovsdb.OvsDriver, bridge string) bool {
	present, err := d.IsBridgePresent(bridge)
	return err == nil && !present
}

// delWithoutPort is CmdDel for a veth port that OVS no longer has (why says why).
func delWithoutPort(cache *types.CachedNetConf, args *skel.CmdArgs, why string) error {
	log.Printf("nfvlab: %s: no OVS port to delete", why)
	if cache.Netconf.IPAM.Type != "" {
		if err := ipam.ExecDel(cache.Netconf.IPAM.Type, args.StdinData); err != nil {
			return err
		}
	}
	if args.Netns != "" {
		err := ns.WithNetNSPath(args.Netns, func(ns.NetNS) error { return ip.DelLinkByName(args.IfName) })
		if err != nil {
			log.Printf("nfvlab: best-effort delete of %s: %v", args.IfName, err)
		}
	}
	return nil
}
EOF
cni_patch "patching the DEL guards" <<'PYEOF'
# (err is CmdDel's own, which its deferred cache cleanup reads: the cache goes if this succeeds)
patch("pkg/plugin/plugin.go", "\tovsDriver, err := ovsdb.NewOvsDriver(cache.Netconf.SocketFile)\n",
      "\tif cache.Netconf.DeviceID == \"\" && ovsGone(cache.Netconf.SocketFile) { // nfvlab\n"
      "\t\terr = delWithoutPort(cache, args, \"no ovsdb-server at \"+cache.Netconf.SocketFile)\n"
      "\t\treturn err\n\t}\n"
      "\tovsDriver, err := ovsdb.NewOvsDriver(cache.Netconf.SocketFile)\n")
patch("pkg/plugin/plugin.go", "\tovsBridgeDriver, err := ovsdb.NewOvsBridgeDriver(bridgeName, cache.Netconf.SocketFile)\n",
      "\tif cache.Netconf.DeviceID == \"\" && bridgeGone(ovsDriver, bridgeName) { // nfvlab\n"
      "\t\terr = delWithoutPort(cache, args, \"no bridge \"+bridgeName)\n"
      "\t\treturn err\n\t}\n"
      "\tovsBridgeDriver, err := ovsdb.NewOvsBridgeDriver(bridgeName, cache.Netconf.SocketFile)\n")
PYEOF
(
  cd "$WORK/src"
  CGO_ENABLED=0 nice -n 19 "$GO" build -p "$JOBS" -trimpath -tags no_openssl \
    -ldflags "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$VERSION" \
    -o "$OUT/bin/ovs.tmp" ./cmd/plugin
) >>"$LOG" 2>&1 || fail "go build ./cmd/plugin"
cni_finish
