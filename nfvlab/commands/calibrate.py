"""``nfvlab calibrate``: the generator's ceiling per frame size, and a search on a known path."""
from __future__ import annotations

import json

from nfvlab import params as P
from nfvlab.commands.common import CliError, _check_outputs, _lab_params


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
