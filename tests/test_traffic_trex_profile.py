"""TRex stream profiles checked offline with TRex's own STLSim (JSON mode, no server).

The request comes from TrexGenerator.trial_request (in this process, no TRex import); the
worker compiles it into STL streams inside the isolated venv and STLSim dumps them. Every
expected number below is computed here independently from the trial's inputs.
"""
from __future__ import annotations

import base64
import json
import struct
import subprocess
from pathlib import Path

import pytest

from nfvlab.scenario.topology import Port, Stream
from nfvlab.traffic.trex import TrexGenerator, TrexParams

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "nfvlab" / "traffic" / "trex" / "worker.py"
CLIENTS = {"v3": REPO / ".venv-trex" / "bin" / "python",
           "v2": REPO / ".venv-trex-v2" / "bin" / "python"}
STREAMS = [
    Stream(Port("trex", "0"), Port("trex", "1"), "02:00:00:00:00:0a", "02:00:00:00:00:0b",
           "198.19.1.1", "198.19.2.1"),
    Stream(Port("trex", "1"), Port("trex", "0"), "02:00:00:00:00:0b", "02:00:00:00:00:0a",
           "198.19.2.1", "198.19.1.1"),
]


def client_param(kind):
    reason = {"v3": "needs .venv-trex: run scripts/setup-trex.sh",
              "v2": "needs .venv-trex-v2: run scripts/setup-trex.sh --v2"}[kind]
    return pytest.param(kind, marks=pytest.mark.skipif(not CLIENTS[kind].exists(), reason=reason))


ALL_CLIENTS = [client_param("v3"), client_param("v2")]


def simulate(kind, rate_pps, frame_size, *, flows=1, latency_pps=1000, bidirectional=True):
    g = TrexGenerator(STREAMS, TrexParams(server="offline", flows=flows, latency_pps=latency_pps))
    req = g.trial_request(rate_pps, 2.0, frame_size, bidirectional)
    req["client"] = kind
    out = subprocess.run([str(CLIENTS[kind]), str(WORKER), "--sim"], input=json.dumps(req),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def decode(stream):
    """(frame bytes incl. FCS, fields of the Ether/IPv4/UDP headers) of a stream's packet."""
    pkt = base64.b64decode(stream["packet"]["binary"])
    dst, src, etype = pkt[0:6], pkt[6:12], struct.unpack("!H", pkt[12:14])[0]
    ver_ihl, tot_len, frag, ttl, proto = pkt[14], struct.unpack("!H", pkt[16:18])[0], \
        struct.unpack("!H", pkt[20:22])[0], pkt[22], pkt[23]
    sip, dip = ".".join(map(str, pkt[26:30])), ".".join(map(str, pkt[30:34]))
    sport, dport, ulen, csum = struct.unpack("!HHHH", pkt[34:42])
    mac = lambda b: ":".join(f"{x:02x}" for x in b)  # noqa: E731
    return len(pkt) + 4, dict(dst=mac(dst), src=mac(src), etype=etype, ver_ihl=ver_ihl,
                              tot_len=tot_len, df=bool(frag & 0x4000), ttl=ttl, proto=proto,
                              sip=sip, dip=dip, sport=sport, dport=dport, ulen=ulen, csum=csum)


def rate(stream):
    assert stream["mode"]["type"] == "continuous"
    assert stream["mode"]["rate"]["type"] == "pps"
    return stream["mode"]["rate"]["value"]


def kinds(streams):
    return [s["flow_stats"].get("rule_type") if s["flow_stats"]["enabled"] else None
            for s in streams]


@pytest.mark.parametrize("kind", ALL_CLIENTS)
@pytest.mark.parametrize("frame", [64, 128, 1518, 9018])
def test_fixed_frame_size_profile(kind, frame):
    prof = simulate(kind, 50_000, frame)
    assert set(prof) == {"0", "1"}
    for port, (smac, dmac, sip, dip) in {
            "0": ("02:00:00:00:00:0a", "02:00:00:00:00:0b", "198.19.1.1", "198.19.2.1"),
            "1": ("02:00:00:00:00:0b", "02:00:00:00:00:0a", "198.19.2.1", "198.19.1.1")}.items():
        streams = prof[port]
        assert kinds(streams) == ["stats", "latency"]
        probes = min(1000, 50_000 // 10)
        assert [rate(s) for s in streams] == [50_000 - probes, probes]
        base = 10 * (int(port) + 1)
        assert [s["flow_stats"]["stream_id"] for s in streams] == [base, base + 9]
        for s, dport in zip(streams, (1024, 7878)):
            size, h = decode(s)
            assert size == frame                                  # FCS included, as nfvlab counts
            assert (h["src"], h["dst"], h["sip"], h["dip"]) == (smac, dmac, sip, dip)
            assert (h["etype"], h["ver_ihl"], h["proto"], h["ttl"], h["df"]) == (0x0800, 0x45, 17, 64, True)
            assert h["tot_len"] == frame - 4 - 14 and h["ulen"] == frame - 4 - 14 - 20
            assert (h["sport"], h["dport"], h["csum"]) == (1024, dport, 0)
            assert s["vm"]["instructions"] == []


@pytest.mark.parametrize("kind", ALL_CLIENTS)
def test_imix_profile_is_7_4_1(kind):
    prof = simulate(kind, 120_000, "IMIX", latency_pps=2000)
    streams = prof["0"]
    assert kinds(streams) == ["stats", "stats", "stats", "latency"]
    load = streams[:3]
    sizes = [decode(s)[0] for s in load]
    assert sizes == [64, 570, 1518]
    load_pps = 120_000 - 2000
    assert [rate(s) for s in load] == pytest.approx([load_pps * 7 / 12, load_pps * 4 / 12,
                                                     load_pps * 1 / 12])
    assert rate(load[0]) / rate(load[2]) == pytest.approx(7)
    assert rate(load[1]) / rate(load[2]) == pytest.approx(4)
    mean = sum(size * rate(s) for size, s in zip(sizes, load)) / sum(rate(s) for s in load)
    assert mean == pytest.approx((7 * 64 + 4 * 570 + 1518) / 12)   # 353.83 B
    # probes: 64 B frames at the probe rate
    assert decode(streams[3])[0] == 64 and rate(streams[3]) == 2000
    assert len({s["flow_stats"]["stream_id"] for s in streams}) == 4


@pytest.mark.parametrize("kind", ALL_CLIENTS)
@pytest.mark.parametrize("flows", [2, 1000, 65535])
def test_flow_var_range(kind, flows):
    prof = simulate(kind, 10_000, 64, flows=flows, bidirectional=False)
    assert set(prof) == {"0"}
    load, lat = prof["0"]
    var, write = load["vm"]["instructions"]
    assert var["type"] == "flow_var" and var["name"] == "sport" and var["size"] == 2
    first = 1024 if flows <= 65536 - 1024 else 65536 - flows     # ports must stay <= 65535
    assert (var["min_value"], var["max_value"], var["op"]) == (first, first + flows - 1, "inc")
    assert var["max_value"] <= 65535
    assert write["type"] == "write_flow_var" and write["name"] == "sport"
    # the write lands on the UDP source port of the template packet
    pkt = base64.b64decode(load["packet"]["binary"])
    assert struct.unpack("!H", pkt[write["pkt_offset"]:write["pkt_offset"] + 2])[0] == first
    assert lat["vm"]["instructions"] == []


@pytest.mark.parametrize("kind", ALL_CLIENTS)
def test_low_rates_and_disabled_probes(kind):
    prof = simulate(kind, 50, 64, bidirectional=False)
    assert [rate(s) for s in prof["0"]] == [45, 5]                  # probes <= rate / 10
    prof = simulate(kind, 10_000, 64, latency_pps=0, bidirectional=False)
    assert kinds(prof["0"]) == ["stats"] and rate(prof["0"][0]) == 10_000
