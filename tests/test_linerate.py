"""Line-rate arithmetic against published numbers (seed 004, draft 40 GbE)."""
import math

import pytest

from nfvlab import linerate as lr


def test_seed004_10gbe_64b_is_14_88_mpps_and_67_ns():
    # ITRI slides: 10e9 / (84 * 8) = 14.88e6 packets, ~67 ns per packet.
    assert lr.max_pps("10GbE", 64) == pytest.approx(14_880_952.38, rel=1e-9)
    assert round(lr.max_pps("10GbE", 64) / 1e6, 2) == 14.88
    assert round(1e9 / lr.max_pps("10GbE", 64)) == 67  # ns per packet


def test_seed004_10gbe_1500b_plus_20_is_822368_pps():
    # ITRI slides: 1500 B + 20 B L1 overhead = 1520 B -> 822,368 pps, 1216 ns.
    assert math.floor(lr.max_pps("10GbE", 1500)) == 822_368
    assert round(1e9 / lr.max_pps("10GbE", 1500)) == 1216  # ns per packet


@pytest.mark.parametrize(
    "frame,mpps",
    [(64, 59.52), (128, 33.78), (256, 18.12), (512, 9.40), (1024, 4.79), (1280, 3.85), (1518, 3.25)],
)
def test_draft_40gbe_line_rate_per_frame_size(frame, mpps):
    # The draft's testbed: XL710 40GbE ports, RFC 2544 frame sizes.
    assert round(lr.max_pps("40GbE", frame) / 1e6, 2) == mpps
    assert lr.pps_to_gbps(lr.max_pps("40GbE", frame), frame, layer=1) == pytest.approx(40.0)


@pytest.mark.parametrize("link,bps", [("1GbE", 1e9), ("10GbE", 1e10), ("25GbE", 2.5e10),
                                      ("40GbE", 4e10), ("100GbE", 1e11), (40, 4e10)])
def test_line_rates(link, bps):
    assert lr.line_rate_bps(link) == bps


def test_l1_l2_conversions_round_trip_and_differ_by_overhead():
    pps = 1_000_000
    l1 = lr.pps_to_l1_bps(pps, 64)
    l2 = lr.pps_to_l2_bps(pps, 64)
    assert l1 == 84 * 8 * pps and l2 == 64 * 8 * pps
    assert lr.l1_bps_to_pps(l1, 64) == pytest.approx(pps)
    assert lr.l2_bps_to_pps(l2, 64) == pytest.approx(pps)
    assert lr.gbps_to_pps(lr.pps_to_gbps(pps, 1518, layer=2), 1518, layer=2) == pytest.approx(pps)


def test_imix_is_7_4_1_of_64_570_1518():
    assert dict(zip(lr.IMIX.sizes, lr.IMIX.weights)) == {64: 7, 570: 4, 1518: 1}
    mean = (7 * 64 + 4 * 570 + 1518) / 12
    assert lr.mean_frame_bytes("IMIX") == pytest.approx(mean)
    assert lr.max_pps("10GbE", "imix") == pytest.approx(10e9 / ((mean + 20) * 8))


@pytest.mark.parametrize("bad", [63, 9019, 0, -64, "jumbo"])
def test_frame_size_outside_range_is_rejected(bad):
    with pytest.raises(ValueError):
        lr.mean_frame_bytes(bad)


def test_unknown_link_is_rejected():
    with pytest.raises(ValueError, match="unknown link"):
        lr.line_rate_bps("400GbE")
