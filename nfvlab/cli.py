"""The ``nfvlab`` command line.

    nfvlab lab models [--json]            the model catalogue and what this host can run
    nfvlab lab up --model M | down ID | status | clean
    nfvlab lab render --lab-profile K8S.yaml --model M   the Kubernetes manifests of a model
    nfvlab trial --model M --frame-size N --rate-pps R --duration-s D [--json]
    nfvlab search (--model M | --port NS:IFACE --port NS:IFACE) --frame-size N --goal ndr [--json]
    nfvlab calibrate [--frame-sizes 64,512,1518] [--json]
    nfvlab experiment run a|b|c|d|e|f --params P --records R [--lab-profile L] [--local-cluster]
    nfvlab analyze a|b|c|d|e|f --params P --records R --metrics M [--tables DIR] [--figures DIR] [--claims C]
        [--notebook IN.py --executed OUT.ipynb]
    nfvlab cluster up|run -- CMD|clean|status   the local single-node Kubernetes cluster
    nfvlab figures reference --out figures/reference

Every argument is validated (one line naming what is wrong and what is allowed,
exit code 2) before any lab resource is created.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from nfvlab import params as P
from nfvlab.scenario.catalogue import DEFAULT_MODEL

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class CliError(Exception):
    """A one-line user-facing error."""


def _check_outputs(**outputs) -> None:
    """CliError unless each ``flag=(path, "file"|"dir")`` can be written; run before anything is created."""
    from nfvlab.system.paths import output_problem

    for flag, (path, kind) in outputs.items():
        if path is not None:
            problem = output_problem(Path(path), kind)
            if problem:
                raise CliError(f"--{flag.replace('_', '-')} {problem}")


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


# -- lab -------------------------------------------------------------------
def _lab_params(a) -> P.LabParams:
    return P.load(a.lab_profile, P.LabParams) if getattr(a, "lab_profile", None) else P.LabParams()


def cmd_lab(a) -> int:
    from nfvlab.labs.embedded import EmbeddedLab, state
    from nfvlab.labs.embedded.lab import down

    if a.lab_cmd == "models":
        rows = _models(_lab_params(a))
        if a.json:
            print(json.dumps(rows, indent=1))
        else:
            for r in rows:
                mark = "yes" if r["realizable"] else f"no: {r['reason']}"
                print(f"{r['name']:<16} §{r['section']:<6} {r['title']:<48} {mark}")
        return 0
    if a.lab_cmd == "up":
        scenario = _scenario(a)
        backend = EmbeddedLab()
        reasons = backend.check(scenario)
        if reasons:
            raise CliError(reasons[0])
        with backend.open(scenario, persistent=True) as session:
            lab_id = session.info["lab_id"]
            st = next(s for s in state.all_states() if s.lab_id == lab_id)
            info = {"lab_id": lab_id, "model": a.model, "setup_s": session.info["setup_s"],
                    "namespaces": st.namespaces, **st.info}
        print(json.dumps(info, indent=1) if a.json else
              f"lab {lab_id} ({a.model}) is up: {', '.join(info['namespaces'])}; "
              f"`nfvlab lab down {lab_id}` removes it")
        return 0
    if a.lab_cmd == "down":
        ids = [s.lab_id for s in state.all_states()] if a.all else [a.lab_id]
        if not a.all and not a.lab_id:
            raise CliError("lab down: give a lab id (see `nfvlab lab status`) or --all")
        for i in ids:
            if not down(i):
                raise CliError(f"lab down: no lab {i!r} (see `nfvlab lab status`)")
            print(f"lab {i} removed")
        return 0
    if a.lab_cmd == "status":
        rows = [{"lab_id": s.lab_id, "model": s.model, "status": s.status, "persistent": s.persistent,
                 "owner_alive": s.owner_alive(), "namespaces": s.namespaces} for s in state.all_states()]
        if a.json:
            print(json.dumps(rows, indent=1))
        elif not rows:
            print("no labs")
        else:
            for r in rows:
                print(f"{r['lab_id']} {r['model']:<14} {r['status']:<13} "
                      f"{'kept' if r['persistent'] else 'run'} owner {'alive' if r['owner_alive'] else 'gone'}")
        return 0
    if a.lab_cmd == "render":
        return _render(a)
    if a.lab_cmd == "clean":
        from nfvlab.labs.kubernetes import backend as k8s

        removed = k8s.clean()  # cluster namespaces of dead runs (their owners hold no lock)
        with state.HostLock("lab clean"):
            removed += state.clean(include_persistent=a.all)
        print("\n".join(f"removed {x}" for x in removed) if removed else "nothing to clean")
        return 0
    raise AssertionError(a.lab_cmd)


def _models(lab: P.LabParams) -> list[dict]:
    """``nfvlab lab models``: each model of the catalogue, whether ``lab`` realizes it and why not."""
    from nfvlab import labs
    from nfvlab.labs.embedded import realize
    from nfvlab.scenario import MODELS, Scenario

    feats = realize.kernel_features() if lab.kind == "embedded" else None
    backend = labs.backend_for(lab) if lab.kind != "embedded" else None
    rows = []
    for mdl in MODELS:
        row = {"name": mdl.name, "section": mdl.section, "family": mdl.family, "title": mdl.title,
               "cni_analogue": mdl.cni_analogue, "lab_kind": lab.kind}
        if backend is None:
            ok, why = realize.realizable(mdl.name, feats)
            row.update(realizable=ok, reason=why or None, local=realize.REALIZATIONS[mdl.name].how)
        else:
            why = backend.check(Scenario(mdl.name))
            row.update(realizable=not why, reason=why[0] if why else None)
        rows.append(row)
    return rows


def _render(a) -> int:
    """``nfvlab lab render``: the manifests a Kubernetes run of ``--model`` would create, as YAML."""
    import yaml

    from nfvlab.labs.kubernetes import render

    lab = _lab_params(a)
    if lab.kind != "kubernetes" or lab.kubernetes is None:
        raise CliError("lab render: give --lab-profile with kind: kubernetes (see docs/kubernetes.md)")
    scenario = _scenario(a)
    if not render.renders(scenario, lab.kubernetes):
        why = render.NOT_RENDERED_WHY.get(scenario.model, "nfvlab renders networks for "
                                          + ", ".join(render.rendered_models()))
        raise CliError(f"lab render: {scenario.model} has no rendered networks on Kubernetes: {why} (name two "
                       f"NetworkAttachmentDefinitions the cluster has in kubernetes.networks.{scenario.model})")
    why = render.density_reasons(scenario, lab.kubernetes)
    if why:
        raise CliError(f"lab render: {scenario.label} cannot run on this cluster: {why[0]}")
    objects = render.manifests(scenario, lab.kubernetes)
    problems = [x for m in objects for x in render.validate(m, lab.kubernetes)]
    if problems:
        raise CliError(f"lab render: {problems[0]}")
    print(yaml.safe_dump_all(objects, sort_keys=False), end="")
    return 0


# -- trial / search -----------------------------------------------------------
def _resources(a):
    """The resource knobs of the command line (validated like a params file)."""
    from nfvlab.scenario import Resources

    knobs = P.validate(P.ResourceParams, {"pinning": [a.pinning], "numa": [a.numa],
                                          "noisy_load_pct": a.noisy_load_pct,
                                          "hugepages": a.hugepages}, "arguments")
    return Resources(pinning=a.pinning, numa=a.numa, noisy_load_pct=knobs.noisy_load_pct,
                     hugepages=a.hugepages)


def _scenario(a):
    from nfvlab.scenario import MODEL_NAMES, Scenario

    if getattr(a, "port", None):
        return Scenario("external", _resources(a))
    model = a.model if a.model is not None else DEFAULT_MODEL
    if model not in MODEL_NAMES:
        raise CliError(f"--model: unknown model {model!r}: use one of {', '.join(MODEL_NAMES)} (see `nfvlab lab models`)")
    return Scenario(model, _resources(a), density=_density(getattr(a, "density", None)))


def _density(text):
    """``--density csp:1x2`` as a density cell (bounds as a params file's ``density:``)."""
    import re

    from nfvlab.scenario import DensityCell

    if text is None:
        return None
    m = re.fullmatch(r"(csc|csp):(\d{1,2})x(\d{1,2})", text)
    if not m or not (1 <= int(m[2]) <= 10 and 1 <= int(m[3]) <= 10):
        raise CliError(f"--density {text!r}: use TOPO:IxN with TOPO csc or csp and I, N in 1..10, e.g. csp:1x2")
    return DensityCell(m[1], int(m[2]), int(m[3]))


def _check_common(a, rates=()):
    """Validate everything and pick the lab: ``(lab params, backend, scenario, traffic)``; creates nothing."""
    from nfvlab import labs, measure

    _check_outputs(records=(a.records, "file"))
    if a.port and a.model:
        raise CliError("give either --model or --port, not both")
    if a.port and len(a.port) != 2:
        raise CliError(f"--port: give exactly two ports (got {len(a.port)})")
    if a.dmac and not a.port:
        raise CliError("--dmac goes with --port")
    if a.port_speed not in P.LabParams.model_fields["port_speed"].annotation.__args__:
        raise CliError(f"--port-speed {a.port_speed!r}: use one of 1GbE, 10GbE, 25GbE, 40GbE, 100GbE")
    lab = _lab_params(a)
    traffic = P.validate(P.TrafficParams, {"frame_sizes": [a.frame_size], "flows": a.flows,
                                           "bidirectional": not a.unidirectional,
                                           "latency_pps": a.latency_pps}, "arguments")
    scenario = _scenario(a)
    backend = labs.backend_for(lab, ports=a.port, dmacs=a.dmac)
    measure.check_scenario(backend, scenario, [a.frame_size], port_speed=a.port_speed, rates_pps=tuple(rates),
                           duration_s=getattr(a, "duration_s", None))
    if lab.generator.kind == "embedded":
        from nfvlab.traffic.embedded import gen_binary

        gen_binary()  # a missing compiler is reported now, not after the lab is built
    return lab, backend, scenario, traffic


def _calibration(a, lab: P.LabParams):
    from nfvlab.calibrate import Calibration

    try:
        return Calibration.load(getattr(a, "calibration", None) or lab.calibration)
    except ValueError as err:
        raise CliError(str(err)) from None


def _writer(a, experiment: str, params: dict):
    from contextlib import nullcontext

    from nfvlab.records import RecordWriter

    return RecordWriter(a.records, experiment, params) if a.records else nullcontext(None)


def cmd_trial(a) -> int:
    from nfvlab import measure
    from nfvlab.trial import run_trial

    lab, backend, scenario, traffic = _check_common(a, rates=(a.rate_pps,))
    params = {"model": scenario.model, "ports": a.port, "frame_size": a.frame_size, "rate_pps": a.rate_pps,
              "duration_s": a.duration_s, "lab": lab.model_dump(), **traffic.model_dump()}
    with _writer(a, "trial", params) as rec, measure.bench(backend, lab.generator, scenario,
                                                             traffic) as (session, gen):
        result = run_trial(gen, a.rate_pps, a.duration_s, a.frame_size, bidirectional=traffic.bidirectional,
                           extra={"model": scenario.model})
        if rec is not None:
            rec.trial(result, model=scenario.model)
    d = result.to_dict()
    if a.json:
        print(json.dumps(d, indent=1))
    else:
        for x in result.directions:
            lat = x.latency
            p = (lambda v: "-" if v is None else f"{v / 1000:.1f}")
            print(f"{x.tx_port} -> {x.rx_port}: intended {x.intended_packets} sent {x.sent_packets} "
                  f"received {x.received_packets} (offered {x.offered_rate_pps:,.0f} pps; "
                  f"foreign {getattr(x, 'foreign_packets', 0) or 0}, duplicates "
                  f"{getattr(x, 'duplicate_packets', 0) or 0}); latency us "
                  f"min {p(lat.min_ns)} avg {p(lat.avg_ns)} p50 {p(lat.p50_ns)} p90 {p(lat.p90_ns)} "
                  f"p99 {p(lat.p99_ns)} max {p(lat.max_ns)}")
        print(f"loss ratio {result.loss_ratio:.6f}")
    return 0


def cmd_search(a) -> int:
    from nfvlab import measure
    from nfvlab.traffic.select import identity_for

    exp = P.load(a.params) if a.params else None
    sp_data = exp.search.model_dump() if exp else {}
    if not 0 <= a.pdr_loss_ratio < 1:  # checked even where the goal does not use it (also nan)
        raise CliError(f"--pdr-loss-ratio {a.pdr_loss_ratio:g}: must be at least 0 and below 1")
    method = {"ndr": a.method, "pdr": a.method, "ndr+pdr": a.method, "mrr": "mrr", "sweep": "sweep"}[a.goal]
    sp_data.update(method=method, ndr=a.goal in ("ndr", "ndr+pdr"),
                   pdr_loss_ratio=a.pdr_loss_ratio if a.goal in ("pdr", "ndr+pdr") else None)
    if a.goal in ("ndr", "pdr", "ndr+pdr") and not exp:
        sp_data.update(duration_sum_s=1.0)
    for key in ("relative_width", "min_rate_pps", "max_rate_pps"):
        if getattr(a, key) is not None:
            sp_data[key] = getattr(a, key)
    if a.duration_s is not None:
        sp_data.update(final_trial_duration_s=a.duration_s,
                       initial_trial_duration_s=min(a.duration_s, sp_data.get("initial_trial_duration_s", 0.5)),
                       duration_sum_s=max(a.duration_s, sp_data.get("duration_sum_s", a.duration_s)))
    sp = P.validate(P.SearchParams, sp_data, str(a.params) if a.params else "arguments")
    lab, backend, scenario, traffic = _check_common(a, rates=(sp.max_rate_pps,) if sp.max_rate_pps else ())
    calibration = _calibration(a, lab)

    def rate_cap(identity: dict) -> tuple[Optional[float], float]:
        ceiling = calibration.ceiling(identity, a.frame_size)
        max_rate = sp.max_rate_pps or measure.default_max_rate(a.port_speed, a.frame_size, ceiling)
        if sp.method in ("rfc2544", "mlrsearch") and not max_rate > sp.min_rate_pps:
            raise CliError(f"--max-rate-pps {max_rate:,.0f}: must be above --min-rate-pps {sp.min_rate_pps:,.0f}")
        return ceiling, max_rate

    rate_cap(identity_for(lab.generator))  # before the lab: the TX path tx: auto prefers
    model = scenario.model
    trials = []

    with measure.bench(backend, lab.generator, scenario, traffic) as (session, gen):
        ceiling, max_rate = rate_cap(gen.identity())  # the TX path this scenario got
        params = {"model": model, "ports": a.port, "frame_size": a.frame_size, "goal": a.goal,
                  "search": sp.model_dump(), "traffic": traffic.model_dump(), "max_rate_pps": max_rate,
                  "lab": lab.model_dump(), "generator_ceiling_pps": ceiling}
        with _writer(a, "search", params) as rec:
            out = _search_in(a, sp, gen, traffic, model, max_rate, ceiling, rec, trials)
    return _print_search(a, sp, out, trials, max_rate, calibration, model)


def _search_in(a, sp, gen, traffic, model: str, max_rate: float, ceiling, rec, trials: list):
    """Run ``cmd_search``'s search on the open lab, recording into ``rec``."""
    from nfvlab import measure

    def on_trial(t):
        trials.append(t)
        if rec is not None:
            rec.trial(t, model=model, goal=a.goal)

    meas = measure.measurer(gen, a.frame_size, traffic, extra={"model": model}, search=sp)
    out = measure.search(meas, a.frame_size, sp, max_rate_pps=max_rate, ceiling_pps=ceiling,
                         on_trial=on_trial, progress=not a.no_progress and not a.json)
    if rec is not None and isinstance(out, list):  # a sweep returns a DataFrame
        for r in out:
            rec.search({k: v for k, v in r.to_dict().items() if k != "trials"}, model=model)
    return out


def _print_search(a, sp, out, trials: list, max_rate: float, calibration, model: str) -> int:
    if a.goal == "sweep":
        if a.json:
            print(out.to_json(orient="records", indent=1))
        else:
            print(out.to_string(index=False))
        return 0
    summary = {"model": model, "frame_size": a.frame_size, "method": sp.method, "max_rate_pps": max_rate}
    for r in out:
        summary[f"{r.goal}_pps"] = r.throughput_pps
    summary["results"] = [{k: v for k, v in r.to_dict().items() if k != "trials"} for r in out]
    summary["trials"] = [t.to_dict() for t in trials]
    if a.json:
        print(json.dumps(summary, indent=1))
    else:
        for r in out:
            lim = {True: " (generator-limited)", False: "",
                   None: f" (generator not calibrated: run `nfvlab calibrate`, file {calibration.path})"
                   }[r.generator_limited]
            # RFC 9971: values of an irregular goal result must be marked as such.
            irregular = "" if r.regular is not False else f" IRREGULAR ({', '.join(r.flags)})"
            upper = "none found" if r.upper_bound_pps is None else f"{r.upper_bound_pps:,.0f}"
            print(f"{r.goal.upper()} {r.throughput_pps:,.0f} pps per direction at {a.frame_size} B "
                  f"[{r.lower_bound_pps or 0:,.0f} .. {upper}] "
                  f"{r.n_trials} trials, {r.trial_seconds:g} trial-s{lim}{irregular}")
    return 0


def cmd_calibrate(a) -> int:
    from nfvlab import calibrate, labs
    from nfvlab.scenario import Scenario
    from nfvlab.traffic.embedded.generator import XDP_MAX_FRAME_BYTES
    from nfvlab.traffic.select import tx_paths

    cp = P.load(a.params, P.CalibrationParams) if a.params else P.CalibrationParams()
    try:
        sizes = ([P.parse_frame_size(x) for x in a.frame_sizes.split(",") if x.strip()]
                 if a.frame_sizes is not None else list(cp.frame_sizes))
    except ValueError as err:
        raise CliError(f"--frame-sizes: {err}") from None
    if not sizes:
        raise CliError("--frame-sizes: give at least one frame size, e.g. 64,512,1518")
    from nfvlab.measure import MAX_DURATION_S

    a.duration_s = cp.duration_s if a.duration_s is None else a.duration_s
    if not 0 < a.duration_s <= MAX_DURATION_S:  # also refuses nan and inf
        raise CliError(f"--duration-s {a.duration_s:g}: must be above 0 and at most {MAX_DURATION_S:g} s")
    a.unidirectional = a.unidirectional or not cp.bidirectional
    lab = _lab_params(a)
    _check_outputs(out=(a.out or lab.calibration, "file"))
    backend = labs.backend_for(lab)
    reasons = backend.ready() or backend.check(Scenario("direct-cable")) or (
        [] if a.skip_known_path else backend.check(Scenario("tbf-bridge", known_path=_dummy_known_path())))
    if reasons:
        raise CliError(reasons[0])
    try:
        cal = calibrate.Calibration.load(a.out or lab.calibration)
    except ValueError as err:
        raise CliError(str(err)) from None
    report = {"file": str(cal.path), "ceilings": {}, "known_path": {}}
    # tx: auto uses either TX path (per scenario), so both get their ceiling; the first is the
    # path auto prefers, whose ceiling the known-path check below is set against.
    paths = tx_paths(lab.generator) or (None,)
    for tx in reversed(paths):
        gen_params = lab.generator.model_copy(update={"tx": tx}) if tx else lab.generator
        for fs in sizes:
            if tx == "xdp" and not isinstance(fs, str) and fs > XDP_MAX_FRAME_BYTES and len(paths) > 1:
                continue  # auto sends these through the socket path
            r, identity = calibrate.generator_ceiling(backend, gen_params, fs, bidirectional=not a.unidirectional,
                                                      duration_s=a.duration_s, progress=not a.json)
            cal.put(identity, fs, r, bidirectional=not a.unidirectional)
            cal.save()
            # "ceilings": per size, the path auto uses (measured last: paths run in reverse preference)
            report["identity"] = identity
            report["ceilings"][str(fs)] = r.throughput_pps
            report.setdefault("ceilings_by_tx", {}).setdefault(tx or "-", {})[str(fs)] = r.throughput_pps
            if not a.json:
                print(f"generator ceiling at {fs} B{f' (tx {tx})' if tx else ''}: {r.throughput_pps:,.0f} pps "
                      f"per direction ({'bi' if not a.unidirectional else 'uni'}directional, {r.n_trials} "
                      f"trials) -> {cal.path}")
    if not a.skip_known_path:
        for fs in sizes:
            if isinstance(fs, str):
                continue
            cap = 0.5 * report["ceilings"][str(fs)]
            r, err = calibrate.check_known_path(backend, lab.generator, fs, cap, duration_s=a.duration_s,
                                                progress=not a.json)
            report["known_path"][str(fs)] = {"capacity_pps": cap, "ndr_pps": r.throughput_pps,
                                             "relative_error": err}
            if not a.json:
                print(f"tbf path of {cap:,.0f} pps at {fs} B: NDR {r.throughput_pps:,.0f} pps, "
                      f"error {err:+.2%}")
    if a.json:
        print(json.dumps(report, indent=1))
    return 0


def _dummy_known_path():
    from nfvlab.scenario import KnownPath

    return KnownPath(capacity_pps=1000.0, frame_size=64)


def cmd_analyze(a) -> int:
    from nfvlab import experiments, results
    from nfvlab.records import RecordsError

    try:
        exp = experiments.get(a.experiment)
    except ValueError as err:
        raise CliError(str(err)) from None
    models = None
    if exp.kind == "tools":
        P.load(a.params, P.CniExperimentParams)  # a bad params file fails the stage, as for the others
    else:
        models = P.load(a.params).models
    _check_outputs(metrics=(a.metrics, "file"), tables=(a.tables, "dir"), figures=(a.figures, "dir"))
    _check_notebook_args(a)
    if exp.kind == "tools" and len(a.records) != 1:
        raise CliError(f"--records: experiment {a.experiment} takes one records file")
    for r in a.records:
        if not r.exists():
            raise CliError(f"--records {r}: no such file (run the experiment's measurement stage first)")
    records = a.records[0] if len(a.records) == 1 else list(a.records)
    shown = " ".join(map(str, a.records))
    try:
        empty = (results.measurements_frame(records).empty and results.notes_frame(records).empty
                 if exp.kind == "tools" else
                 results.searches_frame(records).empty and results.not_realizable_frame(records).empty)
        if empty:
            raise CliError(f"--records {shown}: no completed run with results (run the experiment's "
                           "measurement stage first)")
        paths = experiments.write_experiment(a.experiment, records, models, a.tables, a.figures, a.metrics,
                                             _claims_design(a))
    except RecordsError as err:
        raise CliError(f"--records {shown}: {err}") from None
    for p in paths:
        print(p)
    return _run_notebook(a)


def _claims_design(a):
    """The :class:`nfvlab.claims.Design` of ``--claims`` (None: the defaults, ``params/claims.yaml``'s values)."""
    from nfvlab import claims

    if a.claims is None:
        return None
    try:
        return claims.load_design(a.claims)
    except (OSError, ValueError, TypeError) as err:
        raise CliError(f"--claims {a.claims}: {err}") from None


def _check_notebook_args(a) -> None:
    if (a.notebook is None) != (a.executed is None):
        raise CliError("--notebook and --executed go together")
    if a.notebook is not None:
        if not a.notebook.is_file():
            raise CliError(f"--notebook {a.notebook}: no such file")
        if len(a.records) != 1:
            raise CliError("--notebook: give one records file")
        _check_outputs(executed=(a.executed, "file"))
    if a.lab_profile is not None and not a.lab_profile.is_file():
        raise CliError(f"--lab-profile {a.lab_profile}: no such file")


def _run_notebook(a) -> int:
    """The experiment's notebook over the records (measure False), under the papermill guardian."""
    if a.notebook is None:
        return 0
    import subprocess

    cmd = [sys.executable, "-m", "nfvlab.notebook_run", "--no-progress-bar", str(a.notebook), str(a.executed),
           "-p", "params_file", str(a.params), "-p", "records", str(a.records[0]), "-p", "measure", "False"]
    if a.lab_profile is not None:
        cmd += ["-p", "lab_file", str(a.lab_profile)]
    rc = subprocess.run(cmd).returncode
    if rc:
        print(f"nfvlab: failed: the notebook {a.notebook} did not run through (exit {rc}); "
              f"see {a.executed}", file=sys.stderr)
        return EXIT_FAILED
    print(a.executed)
    return 0




def cmd_figures(a) -> int:
    from nfvlab.plots.reference import render_reference_figures

    rp = P.load(a.params, P.ReferenceParams)
    _check_outputs(out=(a.out, "dir"))
    paths = render_reference_figures(a.out, dpi=rp.dpi)
    for p in paths:
        print(p)
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    from nfvlab.labs import LabError, Terminated
    from nfvlab.labs.embedded.state import LabBusy
    from nfvlab.measure import InputError
    from nfvlab.records import RecordWriteError
    from nfvlab.scenario.cni import CniConfigError
    from nfvlab.search import SearchError
    from nfvlab.system.build import BuildError
    from nfvlab.traffic import GeneratorError

    args = list(sys.argv[1:] if argv is None else argv)
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
    except (CliError, P.ParamsError, InputError, LabError, BuildError, LabBusy, CniConfigError) as err:
        print(f"nfvlab: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (GeneratorError, SearchError, RecordWriteError) as err:
        print(f"nfvlab: failed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except (KeyboardInterrupt, Terminated):
        print("nfvlab: interrupted; the lab was torn down", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
