#!/usr/bin/env bash
# Build the local cluster's container images as docker-archive tars from host files, without any
# registry (containerd imports them with `ctr -n k8s.io images import FILE` when a cluster starts):
#
#   nfvlab.local/pause:1  -> pause.tar  the static pause binary (build.sh compiles it from C)
#   nfvlab.local/nf:1     -> nf.tar     Debian's busybox-static (sh, ip addr/route/neigh, sysctl, ...)
#
#   scripts/k8s/images.sh PAUSE_BINARY OUT_DIR
#
# Writes OUT_DIR/{pause.tar,nf.tar,images.json}; images.json maps each image name to its tar and
# image id. The tars are reproducible (sorted, mtime 0, uid/gid 0): re-running yields the same bytes.
# Tools: tar, sha256sum, python3 (JSON), all from Debian.
set -euo pipefail
shopt -s inherit_errexit

PAUSE_IMAGE=nfvlab.local/pause:1
NF_IMAGE=nfvlab.local/nf:1
BUSYBOX=${BUSYBOX:-/bin/busybox}

pause_bin=${1:?usage: images.sh PAUSE_BINARY OUT_DIR}
out=${2:?usage: images.sh PAUSE_BINARY OUT_DIR}
[ -x "$pause_bin" ] || { echo "images.sh: FAILED: pause binary not found: $pause_bin" >&2; exit 1; }
file -b "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' || \
  ldd "$BUSYBOX" 2>&1 | grep -q 'not a dynamic executable' || \
  { echo "images.sh: FAILED: $BUSYBOX is not a static busybox (apt-get install busybox-static)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# mktar ROOTFS_DIR OUT_TAR: a reproducible tar of a root file system.
mktar() {
  # Entry names without a leading "./" (as docker save writes them), directories before contents.
  (cd "$1" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z) > "$tmp/list"
  tar -C "$1" --mtime=@0 --owner=0 --group=0 --numeric-owner --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --no-recursion --null -T "$tmp/list" -cf "$2"
}

# docker_archive NAME ROOTFS_DIR OUT_TAR CONFIG_JSON: one-layer docker-archive (docker save format).
docker_archive() {
  local name=$1 rootfs=$2 outtar=$3 cfg=$4 d
  d=$(mktemp -d -p "$tmp")
  mktar "$rootfs" "$d/layer.tar"
  local diff_id
  diff_id=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
  mkdir -p "$d/img/$diff_id"
  mv "$d/layer.tar" "$d/img/$diff_id/layer.tar"
  python3 - "$d/img" "$name" "$diff_id" "$cfg" <<'EOF'
import hashlib, json, sys
root, name, diff_id, cfg = sys.argv[1:5]
config = {
    "architecture": "amd64",
    "os": "linux",
    "created": "1970-01-01T00:00:00Z",
    "config": json.loads(cfg),
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id]},
    "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "nfvlab scripts/k8s/images.sh"}],
}
blob = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
cid = hashlib.sha256(blob).hexdigest()
open(f"{root}/{cid}.json", "wb").write(blob)
manifest = [{"Config": f"{cid}.json", "RepoTags": [name], "Layers": [f"{diff_id}/layer.tar"]}]
open(f"{root}/manifest.json", "w").write(json.dumps(manifest, separators=(",", ":")))
repo, tag = name.rsplit(":", 1)
open(f"{root}/repositories", "w").write(json.dumps({repo: {tag: diff_id}}, separators=(",", ":")))
print(cid)
EOF
  mktar "$d/img" "$outtar"
}

mkdir -p "$out"

# pause image: just /pause.
mkdir -p "$tmp/pause-root"
install -m 0755 "$pause_bin" "$tmp/pause-root/pause"
pause_id=$(docker_archive "$PAUSE_IMAGE" "$tmp/pause-root" "$tmp/pause.tar" \
  '{"Entrypoint":["/pause"],"Env":["PATH=/bin"],"WorkingDir":"/"}')

# NF image: static busybox with a symlink per applet, and the usual mount points.
r="$tmp/nf-root"
mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/run" "$r/root"
chmod 1777 "$r/tmp"
install -m 0755 "$BUSYBOX" "$r/bin/busybox"
for a in $("$BUSYBOX" --list); do
  [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$r/etc/passwd"
printf 'root:x:0:\n' > "$r/etc/group"
# Default command: sleep until SIGTERM/SIGINT, then exit at once (PID 1 ignores unhandled signals).
nf_id=$(docker_archive "$NF_IMAGE" "$r" "$tmp/nf.tar" \
  '{"Cmd":["/bin/sh","-c","trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait $!; done"],"Env":["PATH=/bin"],"WorkingDir":"/"}')

for i in "$tmp/pause.tar" "$tmp/nf.tar"; do
  tar -tf "$i" manifest.json >/dev/null
done
python3 - "$tmp/images.json" "$PAUSE_IMAGE" "$pause_id" "$NF_IMAGE" "$nf_id" <<'EOF'
import json, sys
path, pn, pid, nn, nid = sys.argv[1:6]
json.dump({"pause": {"name": pn, "tar": "pause.tar", "id": "sha256:" + pid},
           "nf": {"name": nn, "tar": "nf.tar", "id": "sha256:" + nid}},
          open(path, "w"), indent=1, sort_keys=True)
EOF
mv -f "$tmp/pause.tar" "$out/pause.tar"
mv -f "$tmp/nf.tar" "$out/nf.tar"
mv -f "$tmp/images.json" "$out/images.json"
echo "images.sh: $PAUSE_IMAGE -> $out/pause.tar ($pause_id)"
echo "images.sh: $NF_IMAGE -> $out/nf.tar ($nf_id)"
