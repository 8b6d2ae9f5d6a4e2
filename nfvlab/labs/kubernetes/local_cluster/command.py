"""``nfvlab cluster``: keep a cluster up, run a command on one, clean leftovers, say whether one can run."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Optional

from nfvlab.labs.kubernetes.local_cluster.build import binaries_dir, unavailable_reason, version_key
from nfvlab.labs.kubernetes.local_cluster.cluster import LocalCluster, install_nad_crd
from nfvlab.labs.kubernetes.local_cluster.state import state_file
from nfvlab.labs.kubernetes.local_cluster.teardown import clean_leftovers


def stamp_text() -> str:
    """One line: ``available <version key>`` or ``unavailable: <reason>``. The pipeline's Kubernetes
    stage depends on a file holding it, so a result recorded without a cluster is re-measured
    once one can run (and one measured with these binaries is not)."""
    why = unavailable_reason()
    return f"unavailable: {why}\n" if why else f"available {version_key()}\n"


def write_stamp(path: Path) -> int:
    """Write :func:`stamp_text` to ``path`` (unchanged content: file untouched); say so when unavailable."""
    text = stamp_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    if text.startswith("unavailable"):
        print(f"nfvlab cluster: no local Kubernetes cluster can run here ({text.split(': ', 1)[1].strip()}): "
              "the Kubernetes lab's configurations will be recorded as not realizable")
    return 0


def main(argv: Optional[list] = None) -> int:
    """nfvlab cluster {up|run -- CMD ...|clean|status|stamp FILE} (also: python -m nfvlab.labs.kubernetes.local_cluster)

    ``up`` keeps a cluster (with the NAD CRD) until Ctrl-C; ``run`` starts one, runs CMD,
    stops it and exits with CMD's status. Neither holds the host lab lock: nfvlab's
    Kubernetes lab takes it for each run (``params/lab.kubernetes.yaml`` fits this cluster).
    """
    import argparse
    ap = argparse.ArgumentParser(prog="nfvlab cluster", description=main.__doc__)
    ap.add_argument("command", choices=("up", "run", "clean", "status", "stamp"))
    ap.add_argument("--hugepages-2m", type=int, default=0)
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="with run: the command (after --); with stamp: the file")
    args = ap.parse_args(argv)
    if args.command in ("up", "clean", "status") and args.cmd:
        # (REMAINDER would swallow them, --help included, and start a cluster.)
        ap.error(f"{args.command} takes no arguments besides --hugepages-2m: got {' '.join(args.cmd)}")
    if args.command == "stamp":
        if len(args.cmd) != 1:
            ap.error("stamp: give the file to write")
        return write_stamp(Path(args.cmd[0]))
    if args.command == "clean":
        print("cleaned" if clean_leftovers() else "nothing to clean")
        return 0
    if args.command == "status":
        print(json.dumps({"binaries_dir": str(binaries_dir()), "unavailable": unavailable_reason(),
                          "state_file": str(state_file()) if state_file().exists() else None},
                         indent=1))
        return 0
    cmd = [c for c in args.cmd if c != "--"] if args.cmd[:1] == ["--"] else list(args.cmd)
    if args.command == "run" and not cmd:
        ap.error("run: give the command after --")
    with LocalCluster(hugepages_2m=args.hugepages_2m, lock=False) as k8s:
        install_nad_crd(k8s)
        if args.command == "run":
            return subprocess.run(cmd, env={**os.environ, "KUBECONFIG": str(k8s.kubeconfig)}).returncode
        print(f"cluster up: KUBECONFIG={k8s.kubeconfig} node={k8s.node_name} api={k8s.api_url}; "
              "Ctrl-C to stop", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0
