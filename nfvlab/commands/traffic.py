"""``nfvlab trial`` and ``nfvlab search``: traffic through a lab's data path (a model's, or two ports')."""
from __future__ import annotations

import json
from typing import Optional

from nfvlab import params as P
from nfvlab.commands.common import CliError, _check_outputs, _lab_params, _scenario


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
    return _print_search(a, sp, out, trials, max_rate, calibration, model, ceiling)


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


def _print_search(a, sp, out, trials: list, max_rate: float, calibration, model: str,
                  ceiling: Optional[float]) -> int:
    if a.goal == "sweep":
        if a.json:
            print(out.to_json(orient="records", indent=1))
        else:
            print(out.to_string(index=False))
        return 0
    summary = {"model": model, "frame_size": a.frame_size, "method": sp.method, "max_rate_pps": max_rate,
               "generator_ceiling_pps": ceiling}
    if ceiling is None:  # generator_limited unknown, never silently "not limited"
        summary["generator_limited_note"] = (f"generator not calibrated at {a.frame_size} B in {calibration.path}: "
                                             "run `nfvlab calibrate` with this lab profile")
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
            unoffered = ("" if r.not_offered_pps is None else
                         f"; the generator could not offer {r.not_offered_pps:,.0f} pps")
            print(f"{r.goal.upper()} {r.throughput_pps:,.0f} pps per direction at {a.frame_size} B "
                  f"[{r.lower_bound_pps or 0:,.0f} .. {upper}] "
                  f"{r.n_trials} trials, {r.trial_seconds:g} trial-s{lim}{irregular}{unoffered}")
    return 0
