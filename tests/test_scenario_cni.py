"""Experiment E's grid (nfvlab.scenario.cni): pure data, every bad value refused with one line."""
import pytest

from nfvlab.scenario.cni import CniConfigError, CniGrid, CniPath, IperfParams, WrkParams


def one_line_error(fn, *args, **kwargs) -> str:
    with pytest.raises(CniConfigError) as info:
        fn(*args, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("data_path, link_mtu, pod_mtu", [
    ("direct", 1500, 1500), ("vxlan", 1500, 1450), ("ipip", 1500, 1480), ("sriov-analogue", 9000, 9000),
    ("vxlan", 1330, 1280),  # the smallest link MTU that leaves a VXLAN pod the IPv6 minimum
])
def test_pod_mtu_is_link_mtu_minus_tunnel_overhead(data_path, link_mtu, pod_mtu):
    assert CniPath(data_path, link_mtu).pod_mtu_bytes == pod_mtu


def test_mtu_a_path_cannot_carry_is_refused_naming_field_and_overhead():
    text = one_line_error(CniPath, "vxlan", 1329)
    assert text.startswith("link_mtu_bytes=1329: vxlan needs 50 B")
    assert ">= 1330" in text
    CniPath("direct", 1329)  # no overhead: the same link MTU is fine without a tunnel


@pytest.mark.parametrize("mtu", [1279, 9001, 0, -1500, 1500.0, True])
def test_link_mtu_outside_1280_9000_is_refused(mtu):
    assert "link_mtu_bytes=" in one_line_error(CniPath, "direct", mtu)


def test_unknown_tunnel_type_is_refused_with_the_allowed_ones():
    text = one_line_error(CniPath, "gre", 1500)
    assert text == "data_path='gre': unknown; allowed: direct, vxlan, ipip, sriov-analogue"


@pytest.mark.parametrize("sizes, field", [((0,), "wrk.file_bytes=0"), ((1000, -5), "wrk.file_bytes=-5"),
                                          ((), "wrk.file_bytes=()"), ((10**9,), "wrk.file_bytes=")])
def test_file_size_of_zero_or_out_of_range_is_refused(sizes, field):
    assert field in one_line_error(WrkParams, file_bytes=sizes)


def test_seed_defaults_for_wrk_and_fewer_connections_than_threads_refused():
    w = WrkParams()
    assert (w.threads, w.connections, min(w.file_bytes), max(w.file_bytes)) == (5, 10, 1_000, 10_000_000)
    assert "wrk.connections=4" in one_line_error(WrkParams, threads=5, connections=4)
    assert "iperf.parallel_streams=0" in one_line_error(IperfParams, parallel_streams=0)
    assert "iperf.duration_s=0" in one_line_error(IperfParams, duration_s=0)


def test_grid_expands_every_path_at_every_mtu_in_order():
    grid = CniGrid(data_paths=("direct", "vxlan"), link_mtus_bytes=(1500, 9000))
    assert [p.label for p in grid.paths()] == ["direct@1500", "direct@9000", "vxlan@1500", "vxlan@9000"]
    assert len(list(CniGrid().paths())) == 16


def test_grid_refuses_a_cell_its_path_cannot_carry_and_bad_directions():
    assert "vxlan needs 50 B" in one_line_error(CniGrid, data_paths=("direct", "vxlan"), link_mtus_bytes=(1300,))
    assert "tcp_directions='host-service'" in one_line_error(CniGrid, tcp_directions=("host-service",))
    assert "http_directions='node-pod'" in one_line_error(CniGrid, http_directions=("node-pod",))


def test_grid_from_params_mapping_names_the_source_and_field():
    grid = CniGrid.from_dict({"data_paths": ["direct"], "link_mtus_bytes": [1500, 3000],
                              "iperf": {"parallel_streams": 2, "duration_s": 1},
                              "wrk": {"file_bytes": [1000, 10000]}, "repetitions": 2})
    assert (grid.iperf.parallel_streams, grid.wrk.file_bytes, grid.repetitions) == (2, (1000, 10000), 2)
    text = one_line_error(CniGrid.from_dict, {"wrk": {"file_bytes": [0]}}, source="params.yaml: cni")
    assert text == "params.yaml: cni: wrk.file_bytes=0: give an integer 1..100000000"
    assert "params.yaml: tunel: unknown key" in one_line_error(CniGrid.from_dict, {"tunel": 1},
                                                                 source="params.yaml")
    assert "wrk.thread: unknown key" in one_line_error(CniGrid.from_dict, {"wrk": {"thread": 5}})


# ---------------------------------------------------------------------------
# paired_order: the directions a claim compares, side by side and counterbalanced
# ---------------------------------------------------------------------------
def _grid(reps=4, control=False):
    from nfvlab.scenario.cni import steps
    g = CniGrid.from_dict({"data_paths": ["direct"], "link_mtus_bytes": [1500],
                             "tcp_directions": ["node-pod", "pod-pod"], "http_directions": ["host-pod", "host-service"],
                             "repetitions": reps, "wrk": {"file_bytes": [1000, 1000000]}, "control": control},
                          source="e.yaml")
    return steps(g)


def test_the_aa_twin_runs_next_to_its_original_away_from_the_compared_direction_and_counterbalanced():
    """The A/A control's twin (node-pod again) sits next to node-pod, on the side away from pod-pod,
    so node-pod / pod-pod stay adjacent; it runs first in one repetition of a block and second in
    the other."""
    from nfvlab.scenario.cni import paired_order
    plain = _grid(reps=8)
    all_steps = _grid(reps=8, control=True)
    assert [s for s in all_steps if not s.twin] == plain and sum(s.twin for s in all_steps) == 8
    assert "control=1: give true or false" in one_line_error(CniGrid.from_dict, {"control": 1})
    for seed in ("run-1", "run-2", "run-3"):
        got = paired_order(all_steps, seed)
        tcp = {}
        for s in got:
            if s.protocol == "tcp":
                tcp.setdefault(s.repetition, []).append("twin" if s.twin else s.direction)
        for rep, order in tcp.items():
            assert order in (["twin", "node-pod", "pod-pod"], ["pod-pod", "node-pod", "twin"]), order
            if rep % 2 == 0:  # the block's other repetition: the other way round
                assert tcp[rep + 1] == order[::-1]
        # without the twins, the order is the one without the control
        assert [s for s in got if not s.twin] == paired_order(plain, seed)


def test_paired_order_puts_the_compared_directions_next_to_each_other_in_every_repetition():
    from nfvlab.scenario.cni import paired_order
    all_steps = _grid()
    got = paired_order(all_steps, "run-1")
    assert sorted(got) == sorted(all_steps)  # a reordering, nothing lost or added
    assert [s[0] for s in got] == sorted(s[0] for s in got)  # repetition by repetition
    for i in range(0, len(got), 2):  # each (protocol, size) pair adjacent: the two directions
        a, b = got[i], got[i + 1]
        assert (a[0], a[1], a[3]) == (b[0], b[1], b[3]) and a[2] != b[2]


def test_paired_order_is_counterbalanced_in_blocks_of_two_repetitions_and_reproducible_from_its_seed():
    from nfvlab.scenario.cni import paired_order
    all_steps = _grid(reps=8)

    def firsts(seed):  # (repetition, protocol, size) -> the direction measured first
        got = paired_order(all_steps, seed)
        return {(s[0], s[1], s[3]): s[2] for s in got[::2]}

    f = firsts("run-1")
    for (rep, proto, size), first in f.items():
        if rep % 2 == 0:  # the block's second repetition runs the other way round
            assert f[(rep + 1, proto, size)] != first
    assert firsts("run-1") == f  # the run id fixes the order (a resumed run keeps it)
    orientations = {seed: tuple(f2[(r, "tcp", None)] for r in (0, 2, 4, 6))
                    for seed in ("a", "b", "c", "d", "e", "f") for f2 in [firsts(seed)]}
    assert len(set(orientations.values())) > 1  # drawn, not fixed
    # resuming with part of the steps done keeps the remaining steps' relative order
    rest = [s for s in all_steps if s[0] >= 3]
    assert paired_order(rest, "run-1") == [s for s in paired_order(all_steps, "run-1") if s[0] >= 3]
