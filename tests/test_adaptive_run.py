"""Adaptive repetitions of a run (nfvlab.adaptive_run): the glue records -> nfvlab.adaptive.run -> records,
on experiment B's claims with known values (E's: tests/test_experiment_cni.py)."""
from conftest import REPO
from nfvlab import adaptive_run as AR
from nfvlab import claimsets
from nfvlab import params as P


def b_params(**adaptive) -> P.ExperimentParams:
    """Experiment B's quick params (pinning none / shared / exclusive x NUMA s1..s4, 1518 B, 3 repetitions),
    fixed-n or with the ``adaptive`` section given (its file's replaced)."""
    over = {"latency_load_fractions": [], "paired": None,
            "adaptive": {"max_repetitions": 6, "step": 1, "seconds": None, "give_up_above": None, **adaptive}
            if adaptive else None}
    return P.load_experiment(REPO / "params/quick/experiment_b.yaml", REPO / "params/lab.yaml", over)


def b_config(pinning, numa="s1"):
    return AR.search_config({"model": "ovs-dpdk-vhost", "pinning": pinning, "numa": numa, "noisy_load_pct": 100,
                            "frame_size": 1518}, ("model", "pinning", "numa", "frame_size"))


#: NDR per (pinning, NUMA scenario), 3 repetitions; only s1 and s2 without exclusive realizable (the
#: rest: the testable parts). At s1 shared ~ none (alternating: undecided); at s2 shared far above none
#: (holds); s1 far above s2 for both pinning modes (holds).
B_FIRST = {("shared", "s1"): [52_000.0, 49_000.0, 52_000.0], ("none", "s1"): [50_000.0, 52_000.0, 49_000.0],
           ("shared", "s2"): [30_000.0, 30_100.0, 30_000.0], ("none", "s2"): [20_000.0, 20_100.0, 20_000.0]}


def _b_recorded(extra=None):
    out = {b_config(*k): dict(enumerate(v)) for k, v in B_FIRST.items()}
    for k, reps in (extra or {}).items():
        out[b_config(*k)].update(reps)
    return out


def _b_glue(p, recorded, clock=None):
    """adapt() as the search runner calls it; an added repetition continues its configuration's cycle."""
    calls = []

    def measure_one(added):
        calls.append(added)
        return recorded[added.config][added.repetition % 3]

    return AR.adapt(p, list(recorded), recorded, measure_one, **({"clock": clock} if clock else {})), calls


def test_b_adds_searches_only_to_the_undecided_pair_and_says_why():
    out, calls = _b_glue(b_params(step=1), _b_recorded())
    undecided = {b_config("shared"), b_config("none")}
    assert {a.config for a in out.added} == undecided and calls == out.added
    assert sorted((a.config, a.repetition, a.look) for a in out.added) == sorted(
        (c, r, r - 2) for c in undecided for r in (3, 4, 5))  # looks at 4, 5, 6 repetitions
    assert all(a.reason == f"look {a.look}: {b_config('shared')} > {b_config('none')} undecided" for a in out.added)
    assert out.stopped == "max repetitions" and all(len(out.values[c]) == 6 for c in undecided)
    assert all(len(out.values[b_config(pin, "s2")]) == 3 for pin in ("shared", "none"))


def test_b_stops_as_soon_as_its_claims_are_decided():
    rec = _b_recorded()
    calls = []

    def measure_one(added):  # the added repetitions set shared far above none: decided at the next look
        calls.append(added)
        return 80_000.0 if "pinning=shared" in added.config else 40_000.0

    out = AR.adapt(b_params(step=2, max_repetitions=9), list(rec), rec, measure_one)
    assert out.stopped == "decided" and calls == out.added  # looks at 3, 5, 7, 9: decided before the last
    assert {len(out.values[b_config(pin)]) for pin in ("shared", "none")} == {7}
    assert [v["verdict"] for v in out.verdicts].count("inconclusive") == 0


def test_b_never_exceeds_its_seconds_budget_but_by_one_search():
    t = [0.0]

    def measure_one(added):  # each search takes 17 s of the injected clock
        t[0] += 17.0
        return _b_recorded()[added.config][added.repetition % 3]

    rec = _b_recorded()
    out = AR.adapt(b_params(step=1, seconds=40), list(rec), rec, measure_one, clock=lambda: t[0])
    assert out.stopped == "seconds" and len(out.added) == 2 and out.seconds <= 40  # a third would end at 51 s


def test_a_resumed_b_run_takes_its_recorded_searches_and_measures_only_the_rest():
    p = b_params(step=1)
    first, _ = _b_glue(p, _b_recorded())
    done = first.added[:3]
    have = {}
    for a in done:
        which = next(k for k in B_FIRST if b_config(*k) == a.config)
        have.setdefault(which, {})[a.repetition] = B_FIRST[which][a.repetition % 3]
    resumed, calls = _b_glue(p, _b_recorded(have))
    assert resumed.added == first.added and calls == first.added[3:]


def test_search_values_are_this_runs_ndr_a_failed_search_counts_and_keys_are_the_claims():
    lab = {"model": "ovs-dpdk-vhost", "pinning": "none", "numa": "s1", "noisy_load_pct": 100, "frame_size": 1518}
    res = {"throughput_pps": 50_000.0}
    recs = [{"type": "search", "run_id": "r", "labels": {"goal": "ndr", **lab, "repetition": 0}, "result": res},
            {"type": "search", "run_id": "r", "labels": {"goal": "pdr", **lab, "repetition": 1}, "result": res},
            {"type": "note", "run_id": "r", "labels": {"kind": "search-failed", **lab, "repetition": 1}},
            {"type": "search", "run_id": "r", "labels": {"goal": "ndr", **lab, "repetition": 3, "added_look": 1,
                                                          "added_reason": "x"}, "result": {"throughput_pps": 0}},
            {"type": "search", "run_id": "old", "labels": {"goal": "ndr", **lab, "repetition": 2}, "result": res}]
    names = claimsets.key_labels(claimsets.search_claims_of(b_params()))
    got = AR.search_values(recs, "r", names)
    spec = next(s for s in claimsets.search_claims_of(b_params()) if s.by == "pinning" and s.where["numa"] == "s1")
    assert list(got) == [spec.config("none")] == [b_config("none")]
    v = got[b_config("none")]
    assert v[0] == 50_000.0 and v[1] != v[1] and v[3] == AR.ZERO_RATE and 2 not in v
