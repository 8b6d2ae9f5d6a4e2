"""Core-count formulas of the density note, checked against its published views."""
from __future__ import annotations

import math
from fractions import Fraction

import pytest

from nfvlab.scenario import density as d
from nfvlab import reference as ref


@pytest.mark.parametrize(
    "text, value",
    [("(1:1)", 1.0), ("(2:1)", 2.0), ("(4:1)", 4.0), ("(1:2)", 0.5), ("(1:4)", 0.25),
     ("(1:8)", 0.125), ("2:1", 2.0), (" ( 1 : 2 ) ", 0.5), (0.25, 0.25), (2, 2.0)],
)
def test_parse_ratio(text, value):
    assert d.parse_ratio(text) == Fraction(value)


@pytest.mark.parametrize("bad", ["", "1", "(0:1)", "(1:0)", "(a:b)", "1:2:3", -1, 0, float("nan"), True, None])
def test_parse_ratio_rejects(bad):
    with pytest.raises(ValueError):
        d.parse_ratio(bad)


def test_physical_cores_formula():
    # switch: one dataplane and one main thread set
    assert d.physical_cores("(1:1)", "(1:1)", 1, 1) == 2.0
    assert d.physical_cores("(2:1)", "(1:1)", 1, 1) == 3.0
    assert d.physical_cores("(4:1)", "(1:2)", 1, 1) == 4.5
    # NFs: one set of each per NF
    assert d.physical_cores("(1:1)", "(1:2)", 1, 1) == 1.5
    assert d.physical_cores("(1:2)", "(1:8)", 8, 8) == 5.0
    assert d.physical_cores(1.0, 0.5, 3, 3) == 4.5
    assert d.switch_cores() == 2.0 and d.switch_cores("(2:1)") == 3.0
    assert d.nf_cores(4) == 6.0
    with pytest.raises(ValueError):
        d.physical_cores("(1:1)", "(1:1)", -1, 1)


def test_nf_view_is_instances_times_nfs():
    for r in ref.density_nf_view().itertuples():
        assert r.total_nfs == r.instances * r.nfs_per_instance


def test_core_usage_view_is_ceil_of_nf_cores_only():
    """The published Core Usage View = ceil(1.5 * total NFs): NF cores only.

    It lists pcdr4sw=(1:1), pcmr4sw=(1:1) but does not add the switch's 2 cores,
    and it rounds the node total up once (not per NF, not per instance).
    """
    cv = ref.density_core_view()
    r0 = cv.iloc[0]
    sw = d.switch_cores(r0["pcdr4sw"], r0["pcmr4sw"])
    assert sw == 2.0
    per_nf = per_instance = with_switch = 0
    for r in cv.itertuples():
        n = r.instances * r.nfs_per_instance
        assert r.physical_cores == math.ceil(1.5 * n)
        assert r.physical_cores == math.ceil(d.nf_cores(n, r.pcdr4nf, r.pcmr4nf))
        assert r.physical_cores == d.core_usage_view(r.instances, r.nfs_per_instance, r.pcdr4nf, r.pcmr4nf)
        assert r.physical_cores == d.core_plan(r.instances, r.nfs_per_instance).nf_cores
        # alternatives the view does NOT follow
        with_switch += r.physical_cores != math.ceil(sw + d.nf_cores(n))
        per_nf += r.physical_cores != n * math.ceil(d.nf_cores(1))
        per_instance += r.physical_cores != r.instances * math.ceil(d.nf_cores(r.nfs_per_instance))
    assert with_switch == 36  # switch cores never included
    assert per_nf > 0 and per_instance > 0
    # the only rounding effect: a single NF (1.5 cores) shows as 2
    assert cv.loc[(cv.instances == 1) & (cv.nfs_per_instance == 1), "physical_cores"].item() == 2


def test_core_plan():
    p = d.core_plan(2, 4)
    assert (p.switch_cores, p.nf_cores, p.total_cores, p.total_nfs) == (2, 12, 14, 8)
    assert p.fits(14) and not p.fits(13)
    assert d.core_plan(1, 1, pcdr4sw="(2:1)").total_cores == 5
    assert d.core_plan(1, 1, pcmr4sw="(1:2)").switch_cores == 2  # ceil(1.5)
    with pytest.raises(ValueError):
        d.core_plan(0, 1)


def implied_core_capacity(mrr):
    """Bounds on the usable cores implied by the "---" (impossible) cells, per (testbed, pcdr4sw).

    The largest core count among possible cells is a lower bound on the cores the note had, the
    smallest among impossible cells, minus one, an upper bound (docs/reference-data.md).
    """
    import pandas as pd

    out = []
    for (tb, sw), g in mrr.groupby(["testbed_id", "pcdr4sw"], sort=True):
        cores = [d.core_plan(int(i), int(n), sw, r_msw, r_dnf, r_mnf).total_cores
                 for i, n, r_msw, r_dnf, r_mnf in zip(g["instances"], g["nfs_per_instance"], g["pcmr4sw"],
                                                      g["pcdr4nf"], g["pcmr4nf"])]
        g = g.assign(_cores=cores)
        imp = g["status"] == "impossible"
        lo = int(g.loc[~imp, "_cores"].max())
        hi = int(g.loc[imp, "_cores"].min()) - 1 if imp.any() else None
        out.append({"testbed_id": tb, "pcdr4sw": sw,
                    "max_possible_nfs": int(g.loc[~imp, "total_nfs"].max()),
                    "min_impossible_nfs": int(g.loc[imp, "total_nfs"].min()) if imp.any() else None,
                    "min_cores": lo, "max_cores": hi, "consistent": hi is None or lo <= hi})
    return pd.DataFrame(out)


def test_impossible_cells_follow_a_core_threshold():
    """'---' marks exactly the cells whose switch + NF cores exceed one budget per testbed."""
    mrr = ref.density_mrr()
    cap = implied_core_capacity(mrr).set_index(["testbed_id", "pcdr4sw"])
    assert cap["consistent"].all()
    # same budget for both pcdr4sw settings of a testbed
    csit = cap.loc["csit-2n-skx-t22"]
    eqx = cap.loc["equinix-2n-skx"]
    assert list(csit["max_possible_nfs"]) == [16, 16] and list(csit["min_impossible_nfs"]) == [20, 20]
    assert list(eqx["max_possible_nfs"]) == [8, 6] and list(eqx["min_impossible_nfs"]) == [10, 8]
    lo = max(csit["min_cores"]), min(csit["max_cores"])
    assert lo == (27, 31)  # Xeon Platinum 8180: 28 cores per socket
    assert (max(eqx["min_cores"]), min(eqx["max_cores"])) == (14, 14)  # Xeon Gold 6150: 18 per socket
    # and within each matrix "---" depends on total NFs only
    for _, g in mrr.groupby(["testbed_id", "pcdr4sw"]):
        imp = g.groupby("total_nfs")["status"].agg(lambda s: set(s == "impossible"))
        assert all(len(v) == 1 for v in imp)
