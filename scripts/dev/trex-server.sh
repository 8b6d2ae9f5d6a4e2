#!/usr/bin/env bash
# Development only: build and run a real TRex server from a trex-core source
# snapshot, to check the TRex driver against the real thing (tests/test_traffic_trex_real.py).
# Never a set-up or CI step: fresh machines reach only the package registries.
# Recipe and traps: ../shared/notes/trex-facts.md.
#
#   scripts/dev/trex-server.sh extract GIT_DIR   # tree of a snapshot (skips absent blobs)
#   scripts/dev/trex-server.sh build             # ~20 min on 2 cores, cached
#   scripts/dev/trex-server.sh start IF0 IF1     # af_packet ports on two interfaces
#   scripts/dev/trex-server.sh stop
set -euo pipefail
ROOT=${NFVLAB_TREX_SRC:-/var/cache/nfvlab/trex-core}
RUN=/run/nfvlab/trex-server
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
start)
    if0=${2:?first interface}; if1=${3:?second interface}
    mkdir -p "$RUN"
    hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
    [ "$(cat $hp)" -ge 512 ] || echo 512 > $hp
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
    ;;
*)
    sed -n 2,10p "$0"; exit 2 ;;
esac
