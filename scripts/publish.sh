#!/usr/bin/env bash
# Publish this checkout's pipeline run: every DVC-tracked output of dvc.lock (raw records,
# calibration, tables, figures, executed notebooks, the report) into published/dvc, the
# remote every clone has (it is in git). Then commit published/ with dvc.lock and metrics/.
#   scripts/publish.sh            after a complete `./run repro`
# A lab publishing its own run to its own remote (S3, SSH, a shared path) instead:
#   dvc remote add -d mylab s3://bucket/nfvlab && dvc push -r mylab   (README, "Publishing")
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
# up to date but for k8s_cluster, which is always re-checked
stale=$(dvc status --json | python -c 'import json, sys
out = json.load(sys.stdin)
print(" ".join(k for k, v in out.items() if v != ["always changed"]))')
if [ -n "$stale" ]; then
  echo "publish: stages not up to date ($stale): run ./run repro first" >&2
  exit 1
fi
# a run measured from code its commit does not hold is not reproducible research: refused, naming files
python scripts/publish_check.py
mkdir -p published/dvc
dvc push -q -r published
# objects of older published runs that this dvc.lock no longer names
dvc gc -q -f -w -c -r published >/dev/null
du -sh published/dvc
echo "publish: done; commit published/ dvc.lock metrics/ together"
