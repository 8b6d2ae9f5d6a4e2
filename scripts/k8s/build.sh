#!/usr/bin/env bash
# Idempotent, cached build of the pinned local-Kubernetes binaries that nfvlab/labs/kubernetes/local_cluster/
# runs: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, etcd, the Multus thin
# plugin, kwok (+ its stage files), a static pause binary, and the docker-archive images
# (scripts/k8s/images.sh). Everything comes from Debian packages and the Go module proxy.
#
#   scripts/k8s/build.sh            build what is missing, then write the stamp (a no-op once stamped)
#   scripts/k8s/build.sh --with-kwok  also kwok (only the tests' simulated nodes use it: ./run test)
#   scripts/k8s/build.sh --print-dir  print the output directory and exit
#
# Output: ${NFVLAB_CACHE:-/var/cache/nfvlab}/k8s/<VERSION_KEY>/{bin,images,share,logs}
# Go downloads and the build cache live under ${NFVLAB_CACHE}/go so a re-run (or another key) reuses them.
# A component whose binary is already there is not rebuilt (binaries are renamed into place only
# after a successful build); the stamp is written only when every component and image succeeded.
# Cold: ~20-30 min niced on 2 cores; ~2 GB module cache + ~5 GB build cache + ~0.6 GB output.
set -euo pipefail

# Pinned versions. nfvlab/labs/kubernetes/local_cluster/build.py reads these five lines (keep the NAME=value form).
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
MULTUS_VERSION=v4.2.3
KWOK_VERSION=v0.8.0
RECIPE=r1

VERSION_KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_multus-${MULTUS_VERSION}_kwok-${KWOK_VERSION}_${RECIPE}"
CACHE=${NFVLAB_CACHE:-/var/cache/nfvlab}
OUT="$CACHE/k8s/$VERSION_KEY"
BIN="$OUT/bin"
SHARE="$OUT/share"
LOGS="$OUT/logs"
WORK="$OUT/work"
STAMP="$OUT/stamp"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

WITH_KWOK=0
case "${1:-}" in
  --print-dir) echo "$OUT"; exit 0 ;;
  --with-kwok) WITH_KWOK=1 ;;
  "") ;;
  *) echo "usage: scripts/k8s/build.sh [--with-kwok | --print-dir]" >&2; exit 2 ;;
esac

T0=$(date +%s)
log() { printf '[k8s-build %4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
CURRENT="setup"
CURRENT_LOG=""
exec 3>&2   # the terminal's stderr, also while a step's output goes to its log
on_exit() {
  local rc=$?
  [ "$rc" = 0 ] && return 0
  if [ -n "$CURRENT_LOG" ] && [ -f "$CURRENT_LOG" ]; then
    tail -n 25 "$CURRENT_LOG" | sed 's/^/  | /' >&3
  fi
  echo "k8s-build: FAILED: $CURRENT (exit $rc${CURRENT_LOG:+; log: $CURRENT_LOG})" >&3
}
trap on_exit EXIT

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$GO" ] || { CURRENT="go toolchain (not found: set GO=/path/to/go)"; false; }
GO_VERSION=$("$GO" env GOVERSION)
STAMP_TEXT="$VERSION_KEY $GO_VERSION"

# kwok is stamped on its own (bin/kwok and bin/kwok-stage, renamed into place when built): the main
# job's cluster does not need it.
kwok_ready() { [ "$WITH_KWOK" = 0 ] || { [ -x "$BIN/kwok" ] && [ -d "$BIN/kwok-stage" ]; }; }
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_TEXT" ] && kwok_ready; then
  log "up to date: $OUT"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  CURRENT="root check (apt-get and /var/cache need root; run as root)"
  false
fi

mkdir -p "$BIN" "$SHARE" "$LOGS" "$WORK"
# One build at a time per key.
exec 9>"$OUT/.lock"
if ! flock -n 9; then
  log "another build holds $OUT/.lock: waiting"
  flock 9
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_TEXT" ] && kwok_ready; then log "up to date: $OUT"; exit 0; fi
fi

# --- 1. Debian packages (only the missing ones; their services are not started) --------------------
CURRENT="Debian packages"
CURRENT_LOG="$LOGS/apt.log"
mapfile -t wanted < <(grep -v '^\s*#' "$HERE/debian-packages.txt" | grep -v '^\s*$')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  rc=0
  { apt-get -o DPkg::Lock::Timeout=600 update -q &&
    apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"; } \
    >"$CURRENT_LOG" 2>&1 || rc=$?
  if [ $own_policy = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  [ $rc = 0 ] || { CURRENT="Debian packages: apt-get install ${missing[*]}"; (exit $rc); }
  log "Debian packages installed"
else
  log "Debian packages present"
fi

# --- Go environment ----------------------------------------------------------------------------------
export GOPATH="$CACHE/go"
export GOMODCACHE="$CACHE/go/pkg/mod"
export GOCACHE="$CACHE/go/build-cache"
export GOFLAGS="-mod=mod -buildvcs=false -modcacherw"
export GOTOOLCHAIN=local
export GOPROXY=${GOPROXY:-https://proxy.golang.org,direct}
NICE=(nice -n 19)
# Packages compiled at once: every CPU (on 2 CPUs, kube-apiserver from an empty build cache took
# 416 s with -p 2 against 517 s with -p 1); NFVLAB_BUILD_JOBS=1 leaves a CPU to other work.
JOBS=${NFVLAB_BUILD_JOBS:-$(nproc)}

# build_done NAME: is bin/NAME present (renamed into place only after a successful build)?
have() { [ -x "$BIN/$1" ]; }

# throwaway_module DIR MODULE@VERSION [replace lines...] ; then a tools.go importing $IMPORTS
throwaway_module() {
  local dir=$1 req=$2; shift 2
  rm -rf "$dir"; mkdir -p "$dir"
  (
    cd "$dir"
    "$GO" mod init nfvlab.local/build/"$(basename "$dir")" >/dev/null 2>&1
    "$GO" mod edit -require="$req"
    for r in "$@"; do "$GO" mod edit -replace="$r"; done
    {
      echo '//go:build tools'
      echo
      echo 'package tools'
      echo
      echo 'import ('
      for i in $IMPORTS; do echo "	_ \"$i\""; done
      echo ')'
    } > tools.go
    "${NICE[@]}" "$GO" mod tidy
  )
}

# gobuild NAME DIR PACKAGE [extra go build args...]
gobuild() {
  local name=$1 dir=$2 pkg=$3; shift 3
  ( cd "$dir" && "${NICE[@]}" "$GO" build -p "$JOBS" "$@" -o "$BIN/.$name.tmp" "$pkg" )
  mv -f "$BIN/.$name.tmp" "$BIN/$name"
}

step_start() { CURRENT=$1; CURRENT_LOG="$LOGS/$1.log"; S0=$(date +%s); log "$1: building"; }
step_done() { log "$CURRENT: done in $(( $(date +%s) - S0 ))s"; }

# --- 2. pause (static C) -------------------------------------------------------------------------------
if ! have pause; then
  step_start pause
  cat > "$WORK/pause.c" <<'EOF'
/* Minimal pod sandbox process: sleeps, reaps children, exits 0 on SIGINT/SIGTERM. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>
static void quit(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction a = {0};
  a.sa_handler = quit; sigaction(SIGINT, &a, NULL); sigaction(SIGTERM, &a, NULL);
  a.sa_handler = reap; a.sa_flags = SA_NOCLDSTOP; sigaction(SIGCHLD, &a, NULL);
  for (;;) pause();
}
EOF
  "${NICE[@]}" gcc -static -Os -s -o "$BIN/.pause.tmp" "$WORK/pause.c" >"$CURRENT_LOG" 2>&1
  mv -f "$BIN/.pause.tmp" "$BIN/pause"
  step_done
fi

# --- 3. etcd ------------------------------------------------------------------------------------------
if ! have etcd; then
  step_start etcd
  {
    IMPORTS="go.etcd.io/etcd/server/v3" throwaway_module "$WORK/etcd" "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    gobuild etcd "$WORK/etcd" go.etcd.io/etcd/server/v3 -ldflags "-s -w"
  } >"$CURRENT_LOG" 2>&1
  step_done
fi

# --- 4. Multus thin plugin ------------------------------------------------------------------------------
MULTUS_MOD=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
if ! have multus || [ ! -f "$SHARE/multus-daemonset.yml" ]; then
  step_start multus
  {
    IMPORTS="$MULTUS_MOD/cmd/multus" throwaway_module "$WORK/multus" "$MULTUS_MOD@$MULTUS_VERSION"
    gobuild multus "$WORK/multus" "$MULTUS_MOD/cmd/multus" -ldflags "-s -w"
    mdir=$(cd "$WORK/multus" && "$GO" list -m -f '{{.Dir}}' "$MULTUS_MOD")
    # The NetworkAttachmentDefinition CRD ships in this manifest; the tests create it from here.
    install -m 0644 "$mdir/deployments/multus-daemonset.yml" "$SHARE/multus-daemonset.yml"
  } >"$CURRENT_LOG" 2>&1
  step_done
fi

# --- 5. kwok (+ stage configs next to the binary), with --with-kwok only ----------------------------------
if [ "$WITH_KWOK" = 1 ] && { ! have kwok || [ ! -d "$BIN/kwok-stage" ]; }; then
  step_start kwok
  {
    IMPORTS="sigs.k8s.io/kwok/cmd/kwok" throwaway_module "$WORK/kwok" "sigs.k8s.io/kwok@$KWOK_VERSION"
    gobuild kwok "$WORK/kwok" sigs.k8s.io/kwok/cmd/kwok -ldflags "-s -w"
    kdir=$(cd "$WORK/kwok" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
    rm -rf "$BIN/.kwok-stage.tmp"
    cp -r "$kdir/kustomize/stage" "$BIN/.kwok-stage.tmp"
    chmod -R u+w,a+rX "$BIN/.kwok-stage.tmp"
    find "$BIN/.kwok-stage.tmp" -name '*.go' -delete   # the module's tests of the stages
    ls "$BIN/.kwok-stage.tmp"/node/fast/*.yaml "$BIN/.kwok-stage.tmp"/pod/fast/*.yaml
    rm -rf "$BIN/kwok-stage"
    mv "$BIN/.kwok-stage.tmp" "$BIN/kwok-stage"
  } >"$CURRENT_LOG" 2>&1
  step_done
fi

# --- 6. k8s.io/kubernetes: apiserver, controller-manager, scheduler, kubelet ----------------------------
K8S_CMDS="kube-apiserver kube-controller-manager kube-scheduler kubelet"
need_k8s=0
for c in $K8S_CMDS; do have "$c" || need_k8s=1; done
if [ $need_k8s = 1 ]; then
  CURRENT="k8s.io/kubernetes module setup"
  CURRENT_LOG="$LOGS/kubernetes-module.log"
  S0=$(date +%s)
  log "k8s.io/kubernetes $K8S_VERSION: preparing the throwaway module"
  {
    # k8s.io/kubernetes replaces its staging modules (required at v0.0.0) with ./staging paths, which
    # a dependent module cannot see: replace each of them with the published v0.<minor>.<patch>.
    gomod=$(GOFLAGS=-modcacherw "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | jq -r .GoMod)
    staging_ver="v0.${K8S_VERSION#v1.}"
    mapfile -t staging < <("$GO" mod edit -json "$gomod" |
      jq -r '.Require[] | select(.Version == "v0.0.0") | .Path')
    echo "staging modules (${#staging[@]}) -> $staging_ver: ${staging[*]}"
    [ ${#staging[@]} -gt 20 ]
    reps=()
    for m in "${staging[@]}"; do reps+=("$m=$m@$staging_ver"); done
    IMPORTS=""
    for c in $K8S_CMDS; do IMPORTS="$IMPORTS k8s.io/kubernetes/cmd/$c"; done
    IMPORTS="$IMPORTS" throwaway_module "$WORK/kubernetes" "k8s.io/kubernetes@$K8S_VERSION" "${reps[@]}"
  } >"$CURRENT_LOG" 2>&1
  log "k8s.io/kubernetes module ready in $(( $(date +%s) - S0 ))s"
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  V=k8s.io/component-base/version
  CV=k8s.io/client-go/pkg/version
  ldflags="-s -w"
  for p in $V $CV; do
    ldflags="$ldflags -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldflags="$ldflags -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  for c in $K8S_CMDS; do
    have "$c" && continue
    step_start "$c"
    gobuild "$c" "$WORK/kubernetes" "k8s.io/kubernetes/cmd/$c" -ldflags "$ldflags" >"$CURRENT_LOG" 2>&1
    step_done
  done
fi

# --- 7. Check what was built -----------------------------------------------------------------------------
CURRENT="version check"
CURRENT_LOG="$LOGS/version-check.log"
{
  "$BIN/kube-apiserver" --version
  "$BIN/kubelet" --version
  "$BIN/etcd" --version
  if [ "$WITH_KWOK" = 1 ]; then "$BIN/kwok" --version || true; fi
} >"$CURRENT_LOG" 2>&1
grep -q "Kubernetes $K8S_VERSION" "$CURRENT_LOG" || { CURRENT="version check (kube-apiserver does not report $K8S_VERSION)"; false; }
grep -q "etcd Version: ${ETCD_VERSION#v}" "$CURRENT_LOG" || { CURRENT="version check (etcd does not report $ETCD_VERSION)"; false; }
if [ "$WITH_KWOK" = 1 ]; then ls "$BIN/kwok-stage"/*/ >/dev/null; fi

# --- 8. Images (docker-archive tars; imported into containerd when a cluster starts) ---------------------
CURRENT="images"
CURRENT_LOG="$LOGS/images.log"
S0=$(date +%s)
"$HERE/images.sh" "$BIN/pause" "$OUT/images" >"$CURRENT_LOG" 2>&1
log "images: done in $(( $(date +%s) - S0 ))s"

echo "$STAMP_TEXT" > "$STAMP.tmp"
mv -f "$STAMP.tmp" "$STAMP"
log "all built: $OUT ($(du -sh "$OUT" | cut -f1) output, $(du -sh "$CACHE/go" | cut -f1) Go caches)"
