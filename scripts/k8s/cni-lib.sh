# Shared steps of the cached CNI plugin builds (scripts/k8s/cni-*.sh), sourced by each after it
# sets NAME (the binary, = the CNI type, and the log prefix), MODULE, VERSION and RECIPE. Sourcing
# it answers --print-dir, exits when the stamped binary is there, else takes the build lock and
# prepares the log, Go's environment and an empty $WORK (cni_begin).
# Output: ${NFVLAB_CACHE:-/var/cache/nfvlab}/cni/<NAME>-<VERSION>_<RECIPE>/{bin/<NAME>,stamp,logs}
# (nfvlab/labs/kubernetes/local_cluster/build.py finds the binary by that path).

CACHE=${NFVLAB_CACHE:-/var/cache/nfvlab}
OUT="$CACHE/cni/${NAME}-${VERSION}_${RECIPE}"
STAMP="$OUT/stamp"

# Exit 0 when the stamped binary is there; else take the build lock, start the log (fail() shows
# its tail), set Go's environment (caches under $CACHE/go, the module proxy) and an empty $WORK.
cni_begin() {
  GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  if [ ! -x "$GO" ]; then
    echo "cni-$NAME: FAILED: no Go toolchain (set GO=/path/to/go)" >&2
    exit 1
  fi
  STAMP_TEXT="$MODULE@$VERSION $RECIPE $("$GO" env GOVERSION)"
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_TEXT" ] && [ -x "$OUT/bin/$NAME" ]; then
    echo "cni-$NAME: up to date: $OUT"
    exit 0
  fi
  mkdir -p "$OUT/bin" "$OUT/logs"
  exec 9>"$OUT/.lock"
  flock 9
  LOG="$OUT/logs/build.log"
  : > "$LOG"
  export GOPATH="$CACHE/go" GOMODCACHE="$CACHE/go/pkg/mod" GOCACHE="$CACHE/go/build-cache"
  export GOFLAGS="-mod=mod -buildvcs=false -modcacherw" GOTOOLCHAIN=local
  export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}
  JOBS=${NFVLAB_BUILD_JOBS:-$(nproc)}  # packages compiled at once (as scripts/k8s/build.sh)
  T0=$(date +%s)
  WORK="$OUT/work"
  rm -rf "$WORK"; mkdir -p "$WORK"
}

fail() { tail -n 20 "$LOG" | sed 's/^/  | /' >&2; echo "cni-$NAME: FAILED: $1 (log: $LOG)" >&2; exit 1; }

# $WORK/src: the module's source at $VERSION from the proxy, writable.
cni_source() {
  local src
  src=$("$GO" mod download -json "$MODULE@$VERSION" 2>>"$LOG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') \
    || fail "go mod download $MODULE@$VERSION"
  cp -r "$src" "$WORK/src"
  chmod -R u+w "$WORK/src"
}

# Run the Python on stdin with patch(rel, old, new): in $WORK/src/<rel>, `old` (which must occur
# exactly once: a changed upstream fails the build, never builds something else) becomes `new`.
# $1: what fails, in fail()'s words.
cni_patch() {
  python3 -c '
import pathlib, sys
src = pathlib.Path(sys.argv[1])
def patch(rel, old, new):
    p = src / rel
    text = p.read_text()
    assert text.count(old) == 1, f"{rel}: expected one {old!r}"
    p.write_text(text.replace(old, new))
exec(sys.stdin.read())' "$WORK/src" >>"$LOG" 2>&1 || fail "$1"
}

# $OUT/bin/$NAME.tmp (the build's output) into place, then the stamp.
cni_finish() {
  mv -f "$OUT/bin/$NAME.tmp" "$OUT/bin/$NAME"
  rm -rf "$WORK"
  echo "$STAMP_TEXT" > "$STAMP.tmp"
  mv -f "$STAMP.tmp" "$STAMP"
  echo "cni-$NAME: built $OUT/bin/$NAME in $(( $(date +%s) - T0 ))s"
}

[ "${1:-}" = "--print-dir" ] && { echo "$OUT"; exit 0; }
cni_begin
