#!/usr/bin/env bash
# Idempotent set-up of the isolated TRex client environments (docs/trex.md).
#
#   scripts/setup-trex.sh          .venv-trex    lbr-trex-client (servers v2.88 .. v3.0.x, STL API 5.x)
#   scripts/setup-trex.sh --v2     also .venv-trex-v2 with trex-stl-lib (old servers, STL API 4.x)
#
# Versions are pinned in scripts/trex-requirements.lock, one "# [v3]" / "# [v2]" block per
# venv, installed with --no-deps so nothing unpinned comes in. A venv whose stamp file
# matches its block is left alone; re-running the script does nothing that is done.
# The TRex client is never installed into .venv: its vendored zmq/yaml/scapy replace
# Jupyter's own in sys.modules (nfvlab talks to it through a worker process instead).
# Needs Debian's python3 (3.11) with venv support; reaches only PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

want_v2=0
for arg in "$@"; do
  case "$arg" in
    --v2) want_v2=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup-trex: unknown argument '$arg' (use --v2 or --help)" >&2; exit 2 ;;
  esac
done

py=${PYTHON:-python3}
lock=scripts/trex-requirements.lock

# Lines of one "# [name] ..." block of the lock file (requirements only).
block() {
  awk -v want="$1" '
    /^# \[[a-z0-9]+\]/ { match($0, /\[[a-z0-9]+\]/); cur = substr($0, RSTART + 1, RLENGTH - 2); next }
    /^[[:space:]]*(#|$)/ { next }
    cur == want { print }
  ' "$lock"
}

# make_venv NAME DIR CHECK: create DIR and install block NAME unless its stamp matches;
# the stamp is written only once the Python statement CHECK runs in the venv.
make_venv() {
  local name=$1 dir=$2 check=$3 reqs stamp want
  reqs=$(block "$name")
  if [ -z "$reqs" ]; then
    echo "setup-trex: no [$name] block in $lock" >&2
    exit 1
  fi
  stamp="$dir/.nfvlab-trex-installed"
  want=$(printf '%s\n' "$reqs" | sha256sum | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "setup-trex: $dir is up to date"
    return
  fi
  if [ ! -x "$dir/bin/python" ]; then
    echo "setup-trex: creating $dir"
    "$py" -m venv "$dir"
  fi
  # a venv is never committed (Python >= 3.13 writes this file itself)
  [ -f "$dir/.gitignore" ] || printf '*\n' > "$dir/.gitignore"
  echo "setup-trex: installing into $dir:" $reqs
  local tmp
  tmp=$(mktemp)
  printf '%s\n' "$reqs" > "$tmp"
  # build-backend chatter goes to the log, shown only when the install fails
  if ! "$dir/bin/pip" install -q --disable-pip-version-check --no-deps -r "$tmp" > "$dir/pip.log" 2>&1; then
    rm -f "$tmp"
    cat "$dir/pip.log" >&2
    echo "setup-trex: pip failed for $dir" >&2
    exit 1
  fi
  rm -f "$tmp"
  # pinned sets must stay exact: remove whatever an older lock had installed
  local keep extra=() pkg
  keep=" $(printf '%s\n' "$reqs" | sed 's/==.*//; s/_/-/g' | tr 'A-Z' 'a-z' | tr '\n' ' ') "
  while read -r pkg; do
    pkg=${pkg%%==*}
    case "$keep" in *" $(printf '%s' "$pkg" | sed 's/_/-/g' | tr 'A-Z' 'a-z') "*) ;; *) extra+=("$pkg") ;; esac
  done < <("$dir/bin/pip" freeze --disable-pip-version-check --exclude-editable)
  if [ ${#extra[@]} -gt 0 ]; then
    "$dir/bin/pip" uninstall -q -y "${extra[@]}"
  fi
  if ! "$dir/bin/python" -c "$check"; then
    echo "setup-trex: the client does not import in $dir" >&2
    exit 1
  fi
  printf '%s\n' "$want" > "$stamp"
}

make_venv v3 .venv-trex \
  'import lbr_trex_client; from trex.stl.api import STLClient; from trex.stl.trex_stl_sim import STLSim'
if [ $want_v2 = 1 ]; then
  make_venv v2 .venv-trex-v2 'from trex_stl_lib.api import STLClient, STLSim'
fi
echo "setup-trex: done"
