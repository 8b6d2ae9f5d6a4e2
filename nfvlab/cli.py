"""The ``nfvlab`` command line.

    nfvlab lab models [--json]            the model catalogue and what this host can run
    nfvlab lab up --model M | down ID | status | clean
    nfvlab lab render --lab-profile K8S.yaml --model M   the Kubernetes manifests of a model
    nfvlab trial --model M --frame-size N --rate-pps R --duration-s D [--json]
    nfvlab search (--model M | --port NS:IFACE --port NS:IFACE) --frame-size N --goal ndr [--json]
    nfvlab calibrate [--frame-sizes 64,512,1518] [--json]   (TRex: its ports looped, [--port trex:N --port trex:M])
    nfvlab experiment run a|b|c|d|e|f --params P --records R [--lab-profile L] [--local-cluster]
    nfvlab experiment run a|...|f|all [--params P --records R] --dry-run   (the plan, nothing measured)
    nfvlab analyze a|b|c|d|e|f --params P --records R --metrics M [--tables DIR] [--figures DIR] [--claims C]
        [--notebook IN.py --executed OUT.ipynb]
    nfvlab cluster up|run -- CMD|clean|status   the local single-node Kubernetes cluster
    nfvlab figures reference --out figures/reference

Every argument is validated (one line naming what is wrong and what is allowed,
exit code 2) before any lab resource is created.
"""
from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
from pathlib import Path
from typing import Optional

from nfvlab import params as P
from nfvlab.commands.analyze import cmd_analyze, cmd_figures
from nfvlab.commands.calibrate import cmd_calibrate
from nfvlab.commands.common import EXIT_BAD_INPUT, EXIT_FAILED, CliError
from nfvlab.commands.lab import cmd_lab
from nfvlab.commands.traffic import cmd_search, cmd_trial


def _frame_size(text: str):
    try:
        return P.parse_frame_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is one --help away)."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="nfvlab", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def lab_profile_arg(p):
        p.add_argument("--lab-profile", type=Path, metavar="FILE",
                       help="lab profile (params/lab.yaml style: lab kind, port speed, MTU, generator); "
                            "default: the embedded lab with its defaults")

    lab = sub.add_parser("lab", help="the embedded local lab").add_subparsers(dest="lab_cmd", required=True)
    m = lab.add_parser("models", help="list networking models and whether the lab can run them "
                                      "(this host's embedded lab, or the lab --lab-profile names)")
    m.add_argument("--json", action="store_true")
    lab_profile_arg(m)
    up = lab.add_parser("up", help="build a lab and keep it until `nfvlab lab down`")
    up.add_argument("--model", required=True)
    up.add_argument("--json", action="store_true")

    def resource_args(p):
        p.add_argument("--pinning", default="plan", choices=["plan", "none", "shared", "exclusive"],
                       help="CPU pinning of pods and noisy neighbour (draft §4.2; plan: docs/core-plan.md)")
        p.add_argument("--noisy-load-pct", type=int, default=None,
                       help="add a noisy-neighbour pod (stress-ng) at this CPU load, 1..100")
        p.add_argument("--hugepages", action="store_true", help="DPDK processes use 2 MB hugepages")
        p.add_argument("--numa", default="s1", help="NUMA scenario s1..s6 (s2.. need two NUMA nodes)")
        p.add_argument("--density", default=None, metavar="TOPO:IxN",
                       help="a service density cell (seed 001), e.g. csp:1x2: topology csc|csp, instances x "
                            "NFs per instance, 1..10 each (on Kubernetes: a chain of N pods)")

    resource_args(up)
    dn = lab.add_parser("down", help="tear down a lab built by `lab up`")
    dn.add_argument("lab_id", nargs="?")
    dn.add_argument("--all", action="store_true")
    st = lab.add_parser("status", help="labs that exist now")
    st.add_argument("--json", action="store_true")
    rn = lab.add_parser("render", help="print the Kubernetes manifests of a model (validated, creates nothing)")
    lab_profile_arg(rn)
    rn.add_argument("--model", required=True)
    resource_args(rn)
    cl = lab.add_parser("clean", help="remove what killed runs left behind (only nfvlab's own)")
    cl.add_argument("--all", action="store_true", help="also labs kept by `lab up`")

    def traffic_args(p, rate: bool):
        lab_profile_arg(p)
        p.add_argument("--calibration", type=Path,
                       help="calibration file the generator-limited flag is judged against "
                            "(default: the lab profile's, else $NFVLAB_STATE/calibration.json)")
        p.add_argument("--model", help="networking model (default linux-bridge); see `nfvlab lab models`")
        p.add_argument("--port", action="append", metavar="NS:IFACE",
                       help="use an existing interface as a traffic port (give two); trex:N for TRex's port N")
        p.add_argument("--dmac", action="append", help="destination MAC per direction with --port")
        p.add_argument("--frame-size", type=_frame_size, default=64, help="bytes incl. FCS (64..9018) or IMIX")
        if rate:
            p.add_argument("--rate-pps", type=float, required=True, help="intended rate per direction")
            p.add_argument("--duration-s", type=float, default=1.0)
        p.add_argument("--flows", type=int, default=1)
        p.add_argument("--unidirectional", action="store_true")
        p.add_argument("--latency-pps", type=int, default=1000)
        p.add_argument("--port-speed", default="10GbE", help="nominal port speed (bounds rates)")
        p.add_argument("--records", type=Path, help="append raw records (JSON Lines) to this file")
        p.add_argument("--json", action="store_true")
        resource_args(p)

    tr = sub.add_parser("trial", help="run one trial")
    traffic_args(tr, rate=True)

    se = sub.add_parser("search", help="run a throughput search")
    traffic_args(se, rate=False)
    se.add_argument("--goal", default="ndr", choices=["ndr", "pdr", "ndr+pdr", "mrr", "sweep"])
    se.add_argument("--method", default="mlrsearch", choices=["mlrsearch", "rfc2544"])
    se.add_argument("--params", type=Path, help="an experiment params file (its search/traffic sections)")
    se.add_argument("--pdr-loss-ratio", type=float, default=0.005)
    se.add_argument("--relative-width", type=float, default=None)
    se.add_argument("--min-rate-pps", type=float, default=None)
    se.add_argument("--max-rate-pps", type=float, default=None)
    se.add_argument("--duration-s", type=float, default=None, help="final trial duration")
    se.add_argument("--no-progress", action="store_true")

    ca = sub.add_parser("calibrate", help="generator ceiling per frame size, and a search on a known path")
    lab_profile_arg(ca)
    ca.add_argument("--out", type=Path, help="calibration file to update (default: the lab profile's "
                                             "calibration, else $NFVLAB_STATE/calibration.json)")
    ca.add_argument("--params", type=Path, help="calibration params file (frame sizes, duration, direction); "
                                                "the flags below override it")
    ca.add_argument("--frame-sizes", default=None, help="comma-separated, e.g. 64,512,1518,IMIX")
    ca.add_argument("--duration-s", type=float, default=None)
    ca.add_argument("--unidirectional", action="store_true")
    ca.add_argument("--max-rate-pps", type=float, default=None,
                    help="top of the ceiling search, packets/s per direction (default 3e6)")
    ca.add_argument("--repetitions", type=int, default=None,
                    help="ceiling searches per frame size and TX path, in turns; the second highest is kept "
                         "(default: the params file's, else 3)")
    ca.add_argument("--max-repetitions", type=int, default=None,
                    help="search a size again while its two highest searches disagree by over 25 %%, up to "
                         "this many (default: the params file's, else 6)")
    ca.add_argument("--port", action="append", metavar="trex:N",
                    help="TRex: its two ports, looped to each other (default: the lab profile's generator.ports)")
    ca.add_argument("--dmac", action="append",
                    help="TRex: destination MAC per direction (default: the other TRex port's source MAC)")
    ca.add_argument("--skip-known-path", action="store_true")
    ca.add_argument("--json", action="store_true")

    ex = sub.add_parser("experiment", help="measure an experiment (records only)").add_subparsers(
        dest="exp_cmd", required=True)
    er = ex.add_parser("run", help="measure an experiment's grid into a records file (see "
                                   "`nfvlab experiment run --help`)", add_help=False)
    er.add_argument("args", nargs=argparse.REMAINDER)

    cl = sub.add_parser("cluster", help="the local single-node Kubernetes cluster (root)", add_help=False)
    cl.add_argument("args", nargs=argparse.REMAINDER)

    an = sub.add_parser("analyze", help="tables, claims, figures and metrics of an experiment")
    an.add_argument("experiment", help="the experiment's letter (nfvlab.experiments: a, b, ...)")
    an.add_argument("--params", type=Path, required=True, help="the experiment's params file")
    an.add_argument("--records", type=Path, required=True, nargs="+",
                    help="records file(s); several (a papermill batch) are analysed together")
    an.add_argument("--tables", type=Path, default=Path("data/tables"))
    an.add_argument("--figures", type=Path, default=Path("figures/experiments"))
    an.add_argument("--metrics", type=Path, required=True)
    an.add_argument("--claims", type=Path, default=None, metavar="FILE",
                    help="the claims design (params/claims.yaml: alpha, margins, power); default: its values")
    an.add_argument("--notebook", type=Path, default=None,
                    help="also execute this experiment notebook (measure=False) over the records")
    an.add_argument("--executed", type=Path, default=None, help="where the executed notebook goes")
    an.add_argument("--lab-profile", type=Path, default=None, metavar="FILE",
                    help="the lab profile the notebook names (default: the notebook's own)")

    fi = sub.add_parser("figures", help="render figures").add_subparsers(dest="fig_cmd", required=True)
    fr = fi.add_parser("reference", help="the seeds' published tables as figures")
    fr.add_argument("--out", type=Path, default=Path("figures/reference"))
    fr.add_argument("--params", type=Path, default=Path("params/reference.yaml"))
    return ap


def main(argv: Optional[list[str]] = None) -> int:
    from nfvlab.labs import LabError, Terminated
    from nfvlab.labs.embedded.state import LabBusy
    from nfvlab.measure import InputError
    from nfvlab.records import RecordWriteError
    from nfvlab.search import SearchError
    from nfvlab.system.build import BuildError
    from nfvlab.traffic import GeneratorError

    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None and hasattr(signal, "SIGUSR1"):
        # `kill -USR1 PID` prints every thread's stack to stderr: what a command that seems stuck is doing.
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    if args[:2] == ["experiment", "run"] and "--dry-run" in args:  # the plan: nothing measured
        from nfvlab.commands import plan

        return plan.main([x for x in args[2:] if x != "--dry-run"])
    if args[:2] == ["experiment", "run"]:  # its own command line (what the DVC stages run), help included
        from nfvlab import stage

        return stage.main(args[2:], prog="nfvlab experiment run")
    if args[:1] == ["cluster"]:  # its own command line too (`nfvlab cluster --help` included)
        from nfvlab.labs.kubernetes import local_cluster

        return local_cluster.main(args[1:])
    a = _build_parser().parse_args(args)
    from nfvlab.system.hostlock import lock_wait_s

    try:
        lock_wait_s()  # a bad value is an input error now, not after a lab was built
    except ValueError as err:
        print(f"nfvlab: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    handler = {"lab": cmd_lab, "trial": cmd_trial, "search": cmd_search,
               "calibrate": cmd_calibrate, "analyze": cmd_analyze, "figures": cmd_figures}[a.cmd]
    try:
        return handler(a)
    except (CliError, P.ParamsError, InputError, LabError, BuildError, LabBusy) as err:
        print(f"nfvlab: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (GeneratorError, SearchError, RecordWriteError) as err:
        print(f"nfvlab: failed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except (KeyboardInterrupt, Terminated):
        # Torn down: a second Ctrl-C / SIGTERM now (a user's, or a supervisor's repeat) must not turn
        # the exit status into a death by signal.
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        print("nfvlab: interrupted; the lab was torn down", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())



if __name__ == "__main__":
    sys.exit(main())
