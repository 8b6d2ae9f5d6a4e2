"""A trial and a short search through a REAL TRex server (enabled by NFVLAB_TREX_SERVER).

    NFVLAB_TREX_SERVER=host[:sync_port]   a TRex server in stateless mode (t-rex-64 -i)
    NFVLAB_TREX_ASYNC_PORT=4500           its event port (default 4500, or sync_port - 1)
    NFVLAB_TREX_PORTS=0,1                 its two ports (default 0,1)
    NFVLAB_TREX_DMACS=mac0,mac1           destination MAC per direction (default: the other
                                          port's MAC, right for a cable, a bridge or a veth loop)
    NFVLAB_TREX_CLIENT=auto|v3|v2         which client (default auto)
    NFVLAB_TREX_DUT_NETNS=nfvlab-trexdut  a network namespace holding the Linux-bridge DUT TRex's
                                          ports are cabled to (ports dut0/dut1); enables the
                                          known-capacity tests, which shape its egress with tbf

`scripts/dev/trex-server.sh cable && scripts/dev/trex-server.sh start` makes exactly this on a
development host (a TRex server built from trex-core's source); `... stop` removes it.

No registry ships a TRex server, so this test is skipped everywhere but in a lab (or on a
host where TRex was built from source, see /work/shared/notes/trex-facts.md). It needs
.venv-trex (scripts/setup-trex.sh). Numbers it sees are measurements of that lab.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import pytest

from conftest import until_unspoiled
from nfvlab.scenario.topology import Port, Stream
from nfvlab.traffic.trex import TrexGenerator, TrexParams

REPO = Path(__file__).resolve().parents[1]
SERVER = os.environ.get("NFVLAB_TREX_SERVER", "")

pytestmark = [
    pytest.mark.skipif(not SERVER, reason="set NFVLAB_TREX_SERVER=host[:port] to a real TRex "
                                          "server (none ships with any registry)"),
    pytest.mark.skipif(not (REPO / ".venv-trex" / "bin" / "python").exists(),
                       reason="needs .venv-trex: run scripts/setup-trex.sh"),
]


def params() -> TrexParams:
    host, _, port = SERVER.partition(":")
    ports = [int(x) for x in os.environ.get("NFVLAB_TREX_PORTS", "0,1").split(",")]
    kw = dict(server=host, ports=ports, client=os.environ.get("NFVLAB_TREX_CLIENT", "auto"),
              timeout_s=10.0)
    if port:
        kw.update(sync_port=int(port), async_port=int(port) - 1)
    if os.environ.get("NFVLAB_TREX_ASYNC_PORT"):
        kw.update(async_port=int(os.environ["NFVLAB_TREX_ASYNC_PORT"]))
    return TrexParams(**kw)


@pytest.fixture()
def generator():  # per test: a CLI test in a subprocess must be able to acquire the ports
    p = params()
    # learn the ports' MACs first (a throw-away session), then build the real streams
    probe = TrexGenerator([Stream(Port("trex", str(p.ports[0])), Port("trex", str(p.ports[1])),
                                  "02:00:00:00:00:01", "02:00:00:00:00:02", "198.19.1.1",
                                  "198.19.2.1")], p)
    try:
        info = probe.connect()
    finally:
        probe.close()
    macs = [info["ports"][str(x)]["hw_mac"] for x in p.ports]
    dmacs = os.environ.get("NFVLAB_TREX_DMACS", "").split(",") if os.environ.get(
        "NFVLAB_TREX_DMACS") else [macs[1], macs[0]]
    a, b = (Port("trex", str(x)) for x in p.ports)
    streams = [Stream(a, b, macs[0], dmacs[0], "198.19.1.1", "198.19.2.1"),
               Stream(b, a, macs[1], dmacs[1], "198.19.2.1", "198.19.1.1")]
    g = TrexGenerator(streams, p)
    yield g
    g.close()


def _schedule_spoiled(generator) -> Optional[str]:
    """Why the host spoiled the generator's last trial, from its own schedule: the worker's stop came
    late (a stall), or the server was stopped at the deadline with frames unsent; None if neither."""
    sched = generator.last_schedule
    if sched.fault:
        return f"invalid: {sched.fault}"
    return "sent short: stopped at the deadline with frames unsent" if sched.sent_short else None


def test_trial_through_a_real_server(generator):
    ident = generator.identity()
    assert ident["name"] == "trex" and ident["version"] not in ("", "None")
    dirs = until_unspoiled(lambda: generator.run(10_000, 2.0, 64), lambda _: _schedule_spoiled(generator),
                           what="a 10 kpps TRex trial")
    assert len(dirs) == 2
    for x in dirs:
        assert x.intended_packets == 20_000
        # The server finished its trial on time: every frame left, to TRex's own +-1 frame
        assert x.sent_packets >= 0.99 * x.intended_packets, x
        assert x.received_packets <= x.sent_packets
        assert x.latency.probes_sent == pytest.approx(2000, abs=20)
        if x.latency.probes_received:
            assert x.latency.min_ns <= x.latency.p50_ns <= x.latency.max_ns
    raw = generator.last_trial["result"]
    assert set(raw["port_stats"]) == {str(p) for p in generator.params.ports}


def test_short_search_through_a_real_server(generator):
    from nfvlab.search import rfc2544_search
    from nfvlab.trial import GeneratorMeasurer

    # 2 Mpps is far above what TRex sends on af_packet ports here (~0.2-0.4 Mpps): such a trial is
    # invalid (TRex's shortfall beyond the slip budget), repeated, then the rate counts as not offered
    res = rfc2544_search(GeneratorMeasurer(generator, 64), 1000, 2_000_000, loss_ratio=0.005,
                         relative_width=0.1, duration_s=1.0)
    print("TRex PDR (0.5 %) on this host:", res.throughput_pps, "pps in", res.n_trials, "trials")
    assert res.n_trials >= 2 and res.trials[0].loss_ratio > 0.005
    assert res.throughput_pps is not None and 1000 <= res.throughput_pps < 1_000_000
    assert all(t.extra["generator"] == "trex" for t in res.trials)


# ---------------------------------------------------------------- through a DUT of known capacity

DUT_NETNS = os.environ.get("NFVLAB_TREX_DUT_NETNS", "")
needs_dut = pytest.mark.skipif(not DUT_NETNS, reason="set NFVLAB_TREX_DUT_NETNS to the bridge DUT's netns")
CAPACITY_PPS = 40_000
#: TRex on af_packet ports sends in bursts (DPDK tx bursts, one core in low_end mode): a
#: 64-frame bucket + queue put its NDR 27 % below capacity here, so this DUT buffers more.
TBF_FRAMES = 512


@pytest.fixture()
def known_capacity_dut():
    """tbf on the bridge DUT's two egress ports: CAPACITY_PPS of 64 B frames each way (60 B on a veth)."""
    from nfvlab.system import netns as nl

    wire = 60
    for ifname in ("dut0", "dut1"):
        nl.shape_tbf(DUT_NETNS, ifname, rate_bytes_s=CAPACITY_PPS * wire, burst_bytes=TBF_FRAMES * wire,
                     limit_bytes=TBF_FRAMES * wire)
    try:
        yield CAPACITY_PPS
    finally:
        import subprocess

        for ifname in ("dut0", "dut1"):
            subprocess.run(["tc", "-n", DUT_NETNS, "qdisc", "del", "dev", ifname, "root"], check=False)


@needs_dut
def test_cli_search_lands_on_the_known_capacity(known_capacity_dut, tmp_path):
    """`nfvlab search --lab-profile` naming TRex, through a tbf-shaped bridge: NDR near its capacity."""
    import json
    import subprocess
    import sys

    import yaml

    p = params()
    profile = tmp_path / "lab.trex.yaml"
    profile.write_text(yaml.safe_dump({
        "kind": "embedded", "calibration": str(tmp_path / "cal.json"),
        "generator": {"kind": "trex", "server": p.server, "sync_port": p.sync_port,
                      "async_port": p.async_port, "ports": list(p.ports), "client": p.client}}))
    # through a bridge, each direction is addressed to the source MAC of the other TRex port
    out = subprocess.run(
        [sys.executable, "-m", "nfvlab", "search", "--lab-profile", str(profile),
         "--port", f"trex:{p.ports[0]}", "--port", f"trex:{p.ports[1]}",
         "--dmac", f"02:00:00:00:00:{p.ports[1] + 1:02x}", "--dmac", f"02:00:00:00:00:{p.ports[0] + 1:02x}",
         "--frame-size", "64", "--goal", "ndr", "--method", "rfc2544", "--min-rate-pps", "5000",
         "--max-rate-pps", "80000", "--relative-width", "0.02", "--duration-s", "2",
         "--latency-pps", "100", "--json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    # the DUT backpressures TRex's af_packet ports here (a 41,328 pps trial ran 2.068 s): the server
    # is stopped at its duration + stop_tolerance_s after its confirmed start and the unsent frames
    # are loss, so the NDR trial offered its rate
    ndr_trial = [t for t in res["trials"] if t["rate_pps"] == res["ndr_pps"] and t["loss_ratio"] == 0][-1]
    offered = min(x["offered_rate_pps"] for x in ndr_trial["directions"])
    # How close to the capacity the NDR comes depends on how the host ran TRex: a figure, printed.
    print("TRex NDR through a", known_capacity_dut, "pps DUT:", res["ndr_pps"], "pps intended,",
          round(offered), "pps offered (NDR / capacity", round(offered / known_capacity_dut, 3), "), traffic ran",
          ndr_trial["extra"]["schedule"]["elapsed_s"], "s")
    # what the DUT forwards in a 2 s trial: its rate, plus its bucket and its queue (TBF_FRAMES each)
    forwards_pps = known_capacity_dut + 2 * TBF_FRAMES / 2.0
    assert 0 < offered <= forwards_pps
    assert res["ndr_pps"] <= forwards_pps
    assert all(x["received_packets"] <= x["sent_packets"] for t in res["trials"] for x in t["directions"])


def test_unsent_frames_count_as_loss(generator):
    """Asked far above what TRex sends on af_packet ports here, the shortfall is loss, never hidden."""
    dirs = generator.run(2_000_000, 1.0, 64)
    for x in dirs:
        assert x.intended_packets == 2_000_000
        assert x.sent_packets < x.intended_packets, x  # ~200 kpps per port on this machine kind
        assert x.lost_packets >= x.intended_packets - x.sent_packets
