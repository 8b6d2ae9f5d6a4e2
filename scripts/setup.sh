#!/usr/bin/env bash
# Idempotent set-up of a Debian 12 host for nfvlab: the lab's Debian packages and
# a virtual environment (.venv) with the pinned Python dependencies.
# Re-running it does nothing that is already done. Needs root (the lab does too).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "setup: run as root (the embedded lab creates network namespaces): sudo make setup" >&2
  exit 1
fi

# 1. Debian packages: install only what is missing.
mapfile -t wanted < <(grep -v '^\s*#' scripts/debian-packages.txt | grep -v '^\s*$')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  mkdir -p build
  apt_log=build/setup-apt.log
  echo "setup: installing ${#missing[@]} Debian packages (scripts/debian-packages.txt; log: $apt_log): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # apt's chatter (thousands of lines on a new machine) goes to the log; shown only if it fails
  apt_failed() {
    cat "$apt_log" >&2
    echo "setup: installing the Debian packages failed (above; also in $apt_log)" >&2
    exit 1
  }
  apt-get update -q > "$apt_log" 2>&1 || apt_failed
  # policy-rc.d 101: do not start the distribution's OVS service; the lab runs private instances.
  # An existing policy-rc.d is the host's own: leave it untouched.
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    own_policy=1
  fi
  apt_rc=0
  apt-get install -y -q --no-install-recommends "${missing[@]}" >> "$apt_log" 2>&1 || apt_rc=$?
  if [ $own_policy = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
  [ $apt_rc = 0 ] || apt_failed
fi

# 2. Python virtual environment with pinned dependencies (requirements.lock).
py=${PYTHON:-python3}
stamp=.venv/.nfvlab-installed
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  echo "setup: installing Python dependencies into .venv (pinned by requirements.lock; log: .venv/pip.log)"
  # pip's and the build backend's chatter goes to the log; it is shown only when the install fails
  if ! { .venv/bin/pip install -q --disable-pip-version-check --upgrade pip &&
         .venv/bin/pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]'; } \
       > .venv/pip.log 2>&1; then
    cat .venv/pip.log >&2
    echo "setup: installing the Python dependencies failed (above; also in .venv/pip.log)" >&2
    exit 1
  fi
  touch "$stamp"
fi

# 3. The TRex client's own environments (its bundled zmq/yaml/scapy must not meet Jupyter's).
bash scripts/setup-trex.sh --v2

# 4. This host's DVC store (remote "local", .dvc/config) is a local directory: create it, so
#    `./run repro`'s push works. The default remote, "published", is a directory in git.
mkdir -p "$(.venv/bin/dvc config remote.local.url 2>/dev/null || echo /var/lib/nfvlab/dvc-remote)"

# 5. Compile the embedded traffic generator now rather than in the first trial.
.venv/bin/python -c 'from nfvlab.traffic.embedded import gen_binary; gen_binary()' || \
  echo "setup: note: traffic generator not compiled yet (see the error above)"
echo "setup: done"
