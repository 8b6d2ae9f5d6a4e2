#!/usr/bin/env bash
# Development only: build and run a real TRex server from a trex-core source
# snapshot, to check the TRex driver against the real thing (tests/test_traffic_trex_real.py).
# Never a set-up or CI step: fresh machines reach only the package registries.
# Recipe and traps: ../shared/notes/trex-facts.md.
#
#   scripts/dev/trex-server.sh extract GIT_DIR   # tree of a snapshot (skips absent blobs)
#   scripts/dev/trex-server.sh build             # ~20 min on 2 cores, cached
#   scripts/dev/trex-server.sh cable             # a bridge DUT in netns nfvlab-trexdut on veths trexa/trexb
#   scripts/dev/trex-server.sh start [IF0 IF1]   # af_packet ports (default trexa trexb)
#   scripts/dev/trex-server.sh stop              # server down, DUT netns removed
set -euo pipefail
ROOT=${NFVLAB_TREX_SRC:-/var/cache/nfvlab/trex-core}
RUN=/run/nfvlab/trex-server
DUT_NS=nfvlab-trexdut
HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
case "${1:-}" in
extract)
    git_dir=${2:?git dir of a trex-core snapshot}
    mkdir -p "$ROOT"
    # file by file: a snapshot may lack a few large blobs (docs, ppc64le libzmq)
    git --git-dir="$git_dir" ls-tree -r HEAD | python3 -c '
import subprocess, sys, os, stat
git_dir, root = sys.argv[1], sys.argv[2]
cat = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE)
skipped = 0
for line in sys.stdin:
    meta, path = line.rstrip("\n").split("\t", 1)
    mode, kind, sha = meta.split()
    if kind != "blob":
        continue
    cat.stdin.write((sha + "\n").encode()); cat.stdin.flush()
    header = cat.stdout.readline().split()
    if header[-1] == b"missing":
        skipped += 1
        continue
    data = cat.stdout.read(int(header[2])); cat.stdout.read(1)
    target = os.path.join(root, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if mode == "120000":
        if os.path.lexists(target): os.unlink(target)
        os.symlink(data.decode(), target)
        continue
    with open(target, "wb") as f: f.write(data)
    if mode == "100755": os.chmod(target, 0o755)
print(f"extracted to {root}; {skipped} absent blobs skipped")
' "$git_dir" "$ROOT"
    ;;
build)
    cd "$ROOT/linux_dpdk"
    # GCC 12 rejects TRex's own code under -Werror with these warnings
    if ! grep -q 'Wno-error=dangling-pointer' ws_main.py; then
        sed -i "s/'-Werror',/'-Werror', '-Wno-error=dangling-pointer', '-Wno-error=array-bounds', '-Wno-error=stringop-overflow', '-Wno-error=use-after-free', '-Wno-error=maybe-uninitialized',/" ws_main.py
    fi
    if [ ! -x "$ROOT/scripts/_t-rex-64" ]; then
        ./b configure
        nice -n 10 ./b build -j"$(nproc)"
    fi
    ls -l "$ROOT/scripts/_t-rex-64"
    ;;
cable)
    # TRex's ports trexa/trexb (host side) cabled to dut0/dut1 on a Linux bridge in $DUT_NS
    ip netns add $DUT_NS 2>/dev/null || true
    for pair in "trexa dut0" "trexb dut1"; do
        set -- $pair
        ip link show "$1" >/dev/null 2>&1 || ip link add "$1" type veth peer name "$2" netns $DUT_NS
        ip link set "$1" up
        ip netns exec $DUT_NS sysctl -qw net.ipv6.conf."$2".disable_ipv6=1 || true
    done
    ip -n $DUT_NS link show br0 >/dev/null 2>&1 || ip -n $DUT_NS link add br0 type bridge
    ip -n $DUT_NS link set dut0 master br0 up
    ip -n $DUT_NS link set dut1 master br0 up
    ip -n $DUT_NS link set br0 up
    echo "DUT: bridge br0 in netns $DUT_NS on dut0/dut1; TRex ports trexa/trexb"
    ;;
start)
    if0=${2:-trexa}; if1=${3:-trexb}
    mkdir -p "$RUN"
    [ -f "$RUN/hugepages.before" ] || cat $HP > "$RUN/hugepages.before"
    [ "$(cat $HP)" -ge 512 ] || echo 512 > $HP
    cat > "$RUN/trex_cfg.yaml" <<CFG
- port_limit: 2
  version: 2
  low_end: true
  low_end_core: 1
  interfaces: ['--vdev=net_af_packet0,iface=$if0', '--vdev=net_af_packet1,iface=$if1']
  port_info: [{ip: 198.18.1.1, default_gw: 198.18.1.2}, {ip: 198.18.2.1, default_gw: 198.18.2.2}]
CFG
    cd "$ROOT/scripts"
    nohup ./t-rex-64 -i --cfg "$RUN/trex_cfg.yaml" --no-ofed-check --no-scapy-server \
        > "$RUN/server.log" 2>&1 &
    for _ in $(seq 60); do
        if ss -ltn | grep -q ':4501 '; then echo "TRex RPC on 127.0.0.1:4501"; exit 0; fi
        sleep 1
    done
    echo "TRex did not listen on 4501; see $RUN/server.log" >&2; exit 1
    ;;
stop)
    # t-rex-64 is a wrapper: stop _t-rex-64 itself or the ZMQ port stays bound
    pkill -f '_t-rex-64' || true
    pkill -f 't-rex-64 -i' || true
    for _ in $(seq 30); do pgrep -f '_t-rex-64' >/dev/null || break; sleep 1; done
    ip netns del $DUT_NS 2>/dev/null || true   # takes the veths with it
    if [ -f "$RUN/hugepages.before" ]; then cat "$RUN/hugepages.before" > $HP; fi
    rm -rf "$RUN"
    ;;
*)
    sed -n 2,10p "$0"; exit 2 ;;
esac
