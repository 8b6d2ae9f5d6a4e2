"""TRex's calibrated ceiling, its generator-limited flag and its invalid (short-sent) trials.

Every TRex server here is the project's TEST DOUBLE (tests/support/trex_double.py): no TRex
server can run on this machine (no registry ships one). Its "generator" and "DUT" are
arithmetic (a per-port send limit, a forwarding capacity), so the numbers below are the
double's, never a measurement; the client is the real lbr-trex-client in the real worker.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import nfvlab_cli
from nfvlab.calibrate import GENERATOR_LIMITED_FRACTION, Calibration
from nfvlab.traffic import identity_key
from nfvlab.traffic.stats import DirectionStats, LatencyStats
from nfvlab.traffic.trex.generator import SHORTFALL_BUDGET, schedule, shortfall_fault
from support.trex_double import TrexDouble

REPO = Path(__file__).resolve().parents[1]
needs_trex = pytest.mark.skipif(not (REPO / ".venv-trex" / "bin" / "python").exists(),
                                reason="needs .venv-trex with lbr-trex-client: run scripts/setup-trex.sh")

#: The double's own send limit per port, packets/s: the "generator ceiling" calibration must find.
TX_LIMIT_PPS = 20_000
DMACS = ["--dmac", "02:00:00:00:0d:01", "--dmac", "02:00:00:00:0d:02"]


@pytest.fixture
def double():
    """``double(**kwargs)``: a started TRex double, stopped after the test."""
    made = []

    def make(**kwargs):
        d = TrexDouble(**kwargs).start()
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()


def profile(tmp_path: Path, d: TrexDouble, calibration: Path) -> Path:
    p = tmp_path / f"lab.trex.{d.sync_port}.yaml"
    p.write_text(yaml.safe_dump({
        "port_speed": "10GbE", "calibration": str(calibration),
        "generator": {"kind": "trex", "server": "127.0.0.1", "sync_port": d.sync_port,
                      "async_port": d.async_port, "client": "v3", "timeout_s": 5.0, "settle_s": 0.2,
                      "latency_pps": 100, "core_mask": 6}}))
    return p


def direction(intended: int, sent: int) -> DirectionStats:
    return DirectionStats(tx_port="trex:0", rx_port="trex:1", intended_packets=intended, sent_packets=sent,
                          received_packets=sent, duration_s=1.0, latency=LatencyStats(0, 0))


def test_a_shortfall_beyond_the_slip_budget_is_the_generators_and_invalid():
    """Within the 1 % slip budget (plus a frame of rounding) unsent frames stay loss of a valid trial;
    beyond it the trial is invalid, with a reason naming TRex."""
    assert SHORTFALL_BUDGET == 0.01
    assert shortfall_fault([direction(10_000, 9_899), direction(10_000, 10_000)]) is None
    reason = shortfall_fault([direction(10_000, 10_000), direction(10_000, 9_898)])
    assert reason.startswith("TRex could not keep the rate: it sent 9898 of 10000 frames")
    assert "1.0% short" in reason and "not DUT loss" in reason
    assert shortfall_fault([direction(10_000, 10_500)]) is None            # overshoot is no shortfall
    sched = schedule(1.0, 1.0, 0.01, sent_short=True, shortfall=reason)
    assert sched.fault == reason and sched.sent_short
    both = schedule(1.05, 1.0, 0.01, sent_short=True, stop_late_s=0.03, shortfall=reason)
    assert both.fault.startswith("TRex traffic ended 0.030 s after") and both.fault.endswith(reason)


@needs_trex
def test_a_stretched_trial_is_invalid_with_the_generators_reason(double):
    """A server needing twice the duration is stopped at the deadline having sent about half its
    frames: the trial is invalid (TRex's shortfall, never DUT loss), and its counts are kept."""
    from nfvlab.traffic.trex import TrexGenerator, TrexParams
    from nfvlab.trial import run_trial

    from test_traffic_trex import STREAMS

    d = double(stretch=2.0)
    g = TrexGenerator(STREAMS, TrexParams(server="127.0.0.1", sync_port=d.sync_port, async_port=d.async_port,
                                          client="v3", timeout_s=3.0, settle_s=0.2))
    try:
        t = run_trial(g, 10_000, 1.0, 64, bidirectional=False)
    finally:
        g.close()
    (x,) = t.directions
    assert g.last_trial["result"]["stopped_by"] == "client"
    assert x.intended_packets == 10_000 and x.sent_packets < 10_000 * (1 - SHORTFALL_BUDGET) - 1
    assert not t.valid
    assert f"TRex could not keep the rate: it sent {x.sent_packets} of 10000 frames" in t.invalid_reason
    assert t.extra["schedule"]["sent_short"] is True


def calibrate(tmp_path: Path, d: TrexDouble, cal: Path, *extra: str):
    return nfvlab_cli("calibrate", "--lab-profile", str(profile(tmp_path, d, cal)), "--frame-sizes", "64",
                      "--duration-s", "0.3", "--unidirectional", "--max-rate-pps", "24000", "--repetitions", "1",
                      "--json", *extra,
                      timeout=600)


def search(tmp_path: Path, d: TrexDouble, cal: Path, *extra: str):
    return nfvlab_cli("search", "--lab-profile", str(profile(tmp_path, d, cal)), "--port", "trex:0",
                      "--port", "trex:1", *DMACS, "--frame-size", "64", "--unidirectional", "--latency-pps", "100",
                      "--json", "--no-progress", *extra, timeout=600)


@needs_trex
@pytest.mark.slow  # ceiling search and NDR searches through the double (each rate TRex cannot send is repeated)
def test_calibrated_trex_ceiling_flags_results_at_90_percent_of_it(tmp_path, double):
    """`nfvlab calibrate` with a TRex lab profile writes the ceiling under TRex's identity (server
    version, ports, DP cores, core mask); `nfvlab search` with TRex ports reads it and flags a result
    generator-limited exactly when it reaches 90 % of it: True where the DUT forwards more than TRex
    sends, False where the DUT is the limit."""
    cal = tmp_path / "cal.json"
    out = calibrate(tmp_path, double(tx_limit_pps=TX_LIMIT_PPS), cal)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    ident = report["identity"]
    assert ident["name"] == "trex" and ident["version"] == "v3.02" and ident["core_mask"] == "0x6"
    assert ident["ports"] == "0:net_af_packet, 1:net_af_packet"
    assert report["known_path"] == {} and "known_path_skipped" in report
    data = json.loads(cal.read_text())
    (key,) = data["generators"]
    assert key == identity_key(ident)
    ceiling = Calibration.load(cal).ceiling(ident, 64)
    assert ceiling == report["ceilings"]["64"]
    # zero loss only where the double sends every frame; a 2 % search lands within it
    assert TX_LIMIT_PPS / 1.05 <= ceiling <= TX_LIMIT_PPS

    for capacity_pps, limited in ((60_000, True), (TX_LIMIT_PPS // 2, False)):
        out = search(tmp_path, double(tx_limit_pps=TX_LIMIT_PPS, capacity_pps=capacity_pps), cal,
                     "--goal", "ndr", "--method", "rfc2544", "--min-rate-pps", "2000", "--relative-width", "0.05",
                     "--duration-s", "0.3")
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res["generator_ceiling_pps"] == ceiling and "generator_limited_note" not in res
        (r,) = res["results"]
        assert r["throughput_pps"] <= min(capacity_pps, TX_LIMIT_PPS)
        assert r["generator_limited"] is limited
        assert (r["throughput_pps"] >= GENERATOR_LIMITED_FRACTION * ceiling) is limited
        # every trial TRex sent short beyond the slip budget was ruled invalid, never scored as loss
        for t in res["trials"]:
            if t["intended_packets"] - t["sent_packets"] > SHORTFALL_BUDGET * t["intended_packets"] + 1:
                assert not t["valid"] and "TRex could not keep the rate" in t["invalid_reason"]


@needs_trex
def test_an_uncalibrated_trex_result_says_so(tmp_path, double):
    """No calibration for this TRex: generator_limited is unknown (None) with a note, never False."""
    out = search(tmp_path, double(), tmp_path / "empty.json", "--goal", "mrr", "--max-rate-pps", "5000",
                 "--duration-s", "0.3")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    (r,) = res["results"]
    assert r["generator_limited"] is None and res["generator_ceiling_pps"] is None
    assert "generator not calibrated at 64 B" in res["generator_limited_note"]


def test_calibrate_refuses_ports_that_are_not_the_profiles_trex_ports(tmp_path):
    p = tmp_path / "lab.trex.yaml"
    p.write_text(yaml.safe_dump({"generator": {"kind": "trex", "server": "127.0.0.1"}}))
    out = nfvlab_cli("calibrate", "--lab-profile", str(p), "--port", "trex:1", "--port", "trex:0",
                     "--out", str(tmp_path / "c.json"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "--port: the lab profile's TRex ports are trex:0 trex:1" in out.stderr
    out = nfvlab_cli("calibrate", "--port", "trex:0", "--port", "trex:1", "--out", str(tmp_path / "c.json"))
    assert out.returncode == 2 and "--port/--dmac: only for a TRex generator" in out.stderr
