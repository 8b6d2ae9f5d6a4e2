"""``nfvlab calibrate``: the generator's ceiling per frame size, and a search on a known path."""
from __future__ import annotations

import json
from typing import Optional

from nfvlab import params as P
from nfvlab.commands.common import CliError, _check_outputs, _lab_params

#: Top of the ceiling search, packets/s per direction, unless ``--max-rate-pps`` says otherwise.
DEFAULT_MAX_RATE_PPS = 3e6


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
    if a.max_rate_pps is not None and not (1000.0 < a.max_rate_pps < float("inf")):  # also refuses nan
        raise CliError(f"--max-rate-pps {a.max_rate_pps:g}: must be above 1000 (where the search starts) and finite")
    max_rate = a.max_rate_pps or DEFAULT_MAX_RATE_PPS
    reps = cp.repetitions if a.repetitions is None else a.repetitions
    if not 1 <= reps <= 9:
        raise CliError(f"--repetitions {reps}: must be 1 to 9")
    most = max(reps, cp.max_repetitions) if a.max_repetitions is None else a.max_repetitions
    if not reps <= most <= 9:
        raise CliError(f"--max-repetitions {most}: must be {reps} (--repetitions) to 9")
    a.unidirectional = a.unidirectional or not cp.bidirectional
    lab = _lab_params(a)
    _check_outputs(out=(a.out or lab.calibration, "file"))
    ports, dmacs = _ports(a, lab)
    # Through user-named ports (TRex's, looped) there is no tbf bridge nfvlab builds: no known-path check.
    known_path = not a.skip_known_path and not ports
    try:
        backend = labs.backend_for(lab, ports=ports, dmacs=dmacs)
    except labs.LabError as err:
        raise CliError(str(err)) from None
    reasons = backend.ready() or backend.check(Scenario("direct-cable")) or (
        backend.check(Scenario("tbf-bridge", known_path=_dummy_known_path())) if known_path else [])
    if reasons:
        raise CliError(reasons[0])
    try:
        cal = calibrate.Calibration.load(a.out or lab.calibration)
    except ValueError as err:
        raise CliError(str(err)) from None
    report = {"file": str(cal.path), "ceilings": {}, "known_path": {}}
    if ports and not a.skip_known_path:
        report["known_path_skipped"] = "user-named ports: no tbf bridge of nfvlab's between them"
    # tx: auto uses either TX path (per scenario), so both get their ceiling; the first is the
    # path auto prefers, whose ceiling the known-path check below is set against.
    paths = tx_paths(lab.generator) or (None,)
    plan = [(tx, fs) for tx in reversed(paths) for fs in sizes
            if not (tx == "xdp" and not isinstance(fs, str) and fs > XDP_MAX_FRAME_BYTES and len(paths) > 1)]
    # (auto sends frames above XDP_MAX_FRAME_BYTES through the socket path: no xdp ceiling for them)
    found: dict = {}

    def search(tx, fs, n: int, of: int) -> None:
        gen_params = lab.generator.model_copy(update={"tx": tx}) if tx else lab.generator
        r, identity = calibrate.generator_ceiling(backend, gen_params, fs, bidirectional=not a.unidirectional,
                                                  duration_s=a.duration_s, max_rate_pps=max_rate,
                                                  progress=not a.json)
        results = found.setdefault((tx, fs), [])
        results.append(r)
        # saved after every search: an interrupted calibration keeps what it measured
        ceiling = cal.put(identity, fs, results, bidirectional=not a.unidirectional)
        cal.save()
        # "ceilings": per size, the path auto uses (measured last: paths run in reverse preference)
        report["identity"] = identity
        report["ceilings"][str(fs)] = ceiling
        report.setdefault("ceilings_by_tx", {}).setdefault(tx or "-", {})[str(fs)] = ceiling
        report.setdefault("searches_by_tx", {}).setdefault(tx or "-", {})[str(fs)] = [
            x.throughput_pps for x in results]
        if not a.json:
            print(f"generator ceiling at {fs} B{f' (tx {tx})' if tx else ''}, search {n} of {of}: "
                  f"{r.throughput_pps:,.0f} pps per direction ({'bi' if not a.unidirectional else 'uni'}"
                  f"directional, {r.n_trials} trials); the ceiling so far {ceiling:,.0f} pps -> {cal.path}")

    # In turns (every size and path once, then again): a slow spell of the host lands on one of a
    # size's searches, not on all of them.
    for rep in range(reps):
        for tx, fs in plan:
            search(tx, fs, rep + 1, reps)
    # Then again, in turns, each whose two highest searches disagree: a spell can spoil several
    # searches in a row (three of three at 64 B on 7 Dec 2026), and its ceiling would cap the DUT's.
    while True:
        again = [(tx, fs) for tx, fs in plan if 2 <= len(found[(tx, fs)]) < most  # (one search: asked for)
                 and not calibrate.searches_agree(found[(tx, fs)])]
        if not again:
            break
        for tx, fs in again:
            n = len(found[(tx, fs)])
            if not a.json:
                top = sorted((x.throughput_pps for x in found[(tx, fs)]), reverse=True)[:2]
                print(f"generator ceiling at {fs} B{f' (tx {tx})' if tx else ''}: the two highest searches "
                      f"disagree ({' and '.join(f'{x:,.0f}' for x in top)} pps): searching again")
            search(tx, fs, n + 1, most)
    report["disagreed"] = [f"{fs}{f' (tx {tx})' if tx else ''}" for tx, fs in plan
                           if not calibrate.searches_agree(found[(tx, fs)]) and len(found[(tx, fs)]) > 1]
    if report["disagreed"] and not a.json:
        print(f"warning: after {most} searches the two highest still disagree at {', '.join(report['disagreed'])}: "
              f"the ceiling kept is the second highest; the host was unsteady throughout")
    if known_path:
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


def _ports(a, lab: P.LabParams) -> tuple[Optional[list[str]], Optional[list[str]]]:
    """``(ports, dmacs)`` the ceiling is measured through: none for the embedded lab (its direct cable);
    for TRex, ``--port`` or the lab profile's TRex ports looped to each other, each direction sent to
    the other port's source MAC unless ``--dmac`` says otherwise."""
    from nfvlab.labs.external import GENERATOR_NS

    if lab.generator.kind != "trex":
        if a.port or a.dmac:
            raise CliError("--port/--dmac: only for a TRex generator (the embedded one calibrates on "
                           "the lab's own direct cable)")
        return None, None
    want = [f"{GENERATOR_NS}:{x}" for x in lab.generator.ports]
    ports = a.port or want
    if ports != want:
        raise CliError(f"--port: the lab profile's TRex ports are {' '.join(want)} (generator.ports), "
                       f"got {' '.join(ports)}")
    # a loop (cable or bridge between the two ports): each frame goes to the other port's own MAC
    looped = [f"02:00:00:00:00:{x + 1:02x}" for x in reversed(lab.generator.ports)]
    return ports, a.dmac or looped


def _dummy_known_path():
    from nfvlab.scenario import KnownPath

    return KnownPath(capacity_pps=1000.0, frame_size=64)
