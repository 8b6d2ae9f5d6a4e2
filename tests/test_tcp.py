"""iperf3 and wrk (nfvlab.traffic.tcp): parsers on recorded tool output, TCP goodput never above a shaped rate.

tests/data/ holds real output captured on this host (iperf 3.12, wrk 4.1 from Debian 12):
``iperf3-tbf200m-P2-t2.json`` (2 streams, 2 s, node1 -> pod2 over a 200 Mbit/s tbf-shaped link),
``iperf3-refused.json`` (the client's report when nothing listens) and ``wrk-t5-c10-10kB.txt``
(5 threads, 10 connections, a 10 kB file through the service DNAT, with the done hook's line).
"""
import json
from pathlib import Path

import pytest

from nfvlab.traffic.tcp import ToolError, parse_iperf3, parse_wrk, results_frame

DATA = Path(__file__).parent / "data"


def test_iperf3_report_gives_receiver_goodput_and_sender_retransmits():
    r = parse_iperf3((DATA / "iperf3-tbf200m-P2-t2.json").read_text())
    # Numbers as recorded in the file (end.sum_received / end.sum_sent).
    assert r.goodput_bps == pytest.approx(191_129_837.405, rel=1e-9)
    assert r.sent_bps == pytest.approx(200_180_288.248, rel=1e-9)
    assert (r.received_bytes, r.retransmits, r.parallel_streams) == (47_985_272, 2654, 2)
    # Goodput is bytes over the receiver's interval: the two must agree.
    assert r.goodput_bps == pytest.approx(r.received_bytes * 8 / r.duration_s, rel=1e-6)


def test_iperf3_error_report_and_garbage_are_tool_errors():
    with pytest.raises(ToolError, match="iperf3: unable to connect to server: Connection refused"):
        parse_iperf3((DATA / "iperf3-refused.json").read_text())
    with pytest.raises(ToolError, match="not a JSON report"):
        parse_iperf3("iperf3: error - the server is busy running a test. try again later\n")
    udp_like = json.loads((DATA / "iperf3-tbf200m-P2-t2.json").read_text())
    del udp_like["end"]["sum_received"]
    with pytest.raises(ToolError, match="sum_received"):
        parse_iperf3(json.dumps(udp_like))


def test_wrk_done_line_gives_exact_rates_and_percentiles():
    w = parse_wrk((DATA / "wrk-t5-c10-10kB.txt").read_text())
    assert (w.requests, w.transfer_bytes, w.errors) == (10_590, 108_463_022, 0)
    assert w.duration_s == pytest.approx(1.100163)
    assert w.requests_per_s == pytest.approx(10_590 / 1.100163)
    assert w.transfer_bytes_per_s == pytest.approx(108_463_022 / 1.100163)
    # wrk's own rounded summary in the same file says 9625.85 requests/s, 94.02 MiB/s.
    assert w.requests_per_s == pytest.approx(9625.85, abs=0.01)
    assert w.transfer_bytes_per_s / 2**20 == pytest.approx(94.02, abs=0.01)
    assert (w.latency_p50_us, w.latency_p90_us, w.latency_p99_us, w.latency_max_us) == (531, 4052, 16531, 31099)
    # 10 kB files: each response carries the body plus headers, so bytes/request is a little above 10000.
    assert 10_000 < w.transfer_bytes / w.requests < 10_400


def test_wrk_without_done_hook_or_with_a_broken_line_is_a_tool_error():
    human_only = "\n".join(ln for ln in (DATA / "wrk-t5-c10-10kB.txt").read_text().splitlines()
                           if not ln.startswith("{"))
    with pytest.raises(ToolError, match="no result line"):
        parse_wrk(human_only)
    with pytest.raises(ToolError, match="bad result line"):
        parse_wrk('{"nfvlab_wrk": 1, "duration_us": 0, "requests": 0}')


def test_results_frame_is_tidy_labels_then_result_fields():
    r = parse_iperf3((DATA / "iperf3-tbf200m-P2-t2.json").read_text())
    df = results_frame([({"data_path": "direct", "repetition": i}, r) for i in range(3)])
    assert list(df.columns[:3]) == ["data_path", "repetition", "goodput_bps"]
    assert "retransmits" in df.columns and len(df) == 3
    assert df["goodput_bps"].sum() == pytest.approx(3 * r.goodput_bps)


# -- a one-sided bound on a real data path ------------------------------------------------------

RATE_BPS = 200e6
DURATION_S = 2
#: tbf's bucket on the shaped link (CniLab.shape_link's default): what may pass above the rate, once.
BUCKET_BYTES = 32_768
#: The receiver's interval may start after the first bytes arrived (its thread stalled: they wait in
#: the socket buffer) and so count them over less time: 1 % of 2 s is a 20 ms head start at the rate.
EDGE = 0.01


def shaped_goodput_bps(payload_bytes: int) -> float:
    """TCP payload per second through a link tbf shapes to RATE_BPS of 1514 B frames (the qdisc
    counts each frame as it sees it: IP packet + 14 B Ethernet header, no FCS or preamble)."""
    return RATE_BPS * payload_bytes / 1514


@pytest.mark.lab
@pytest.mark.parametrize("data_path, payload_bytes", [
    # direct @1500: a full segment is 1500 - 20 IP - 20 TCP - 12 timestamps = 1448 B in 1514 B.
    ("direct", 1448),
    # vxlan @1500: the pod MTU is 1450, so 1398 B of payload per 1450 + 14 + 50 = 1514 B on the link.
    ("vxlan", 1398),
])
def test_tcp_goodput_through_a_tbf_shaped_link_is_never_above_what_the_shaper_passes(clean_host, data_path,
                                                                                    payload_bytes):
    """Goodput at most rate x payload / frame, plus the bucket's one burst and an interval edge.

    How close below it the goodput comes (slow start, the host's stalls) is a benchmark figure:
    bench/accuracy.py. The bound is one-sided, and under the 3.5 % between the two cases: a VXLAN
    path that dropped its 50 B per packet of overhead (or a shaper that passed more) fails.
    """
    from nfvlab.labs.embedded.cni import CniLab
    from nfvlab.scenario.cni import CniPath, IperfParams
    from nfvlab.traffic.tcp import run_iperf3

    with CniLab(CniPath(data_path, 1500)) as lab:
        lab.shape_link(RATE_BPS, burst_bytes=BUCKET_BYTES)
        r = run_iperf3(lab, server_ns=lab.ns("pod2"), server_ip=lab.address("pod2"), client_ns=lab.ns("node1"),
                       params=IperfParams(parallel_streams=2, duration_s=DURATION_S))
    assert r.parallel_streams == 2 and r.received_bytes > 0
    assert r.goodput_bps == pytest.approx(r.received_bytes * 8 / r.duration_s, rel=1e-6)
    ceiling_bps = shaped_goodput_bps(payload_bytes) * (1 + EDGE) + BUCKET_BYTES * 8 / r.duration_s
    assert r.goodput_bps <= ceiling_bps, (r, ceiling_bps)
