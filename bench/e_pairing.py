"""Does pairing E's tool runs by repetition cancel this host's noise? Figures from recorded runs.

Issue 41's check ("if pairing does not cut the SD of a comparison at least in half against unpaired
trials, say so with the figures"), for experiment E's paired claims (``ClaimSpec.paired``: two
directions of one lab, run side by side in each repetition, ``scenario.cni.paired_order``). Reads
the records' latest completed run; measures nothing.

Printed per compared pair (data path, MTU, file size): the repetitions both directions have, the SD
of the per-repetition log-ratio (paired) and ``sqrt(var log a + var log b)`` (the same runs taken
as unpaired), their quotient (pairing halves the noise at 0.5 or below) and the two directions'
correlation; then the median quotient, and how many of the paired claims' rows the analysis decides
with the paired test and with Welch's on the same values.

    .venv/bin/python bench/e_pairing.py [--records data/raw/experiment_e.jsonl]
"""
from __future__ import annotations

import argparse
import statistics
from unittest import mock

import numpy as np

from nfvlab import analysis, analysis_cni, claimsets


def pair_figures(records: str) -> list[dict]:
    """One dict per paired claim's pair and condition: ``condition``, ``pair``, ``n``, ``paired_sd``,
    ``unpaired_sd``, ``quotient``, ``r``."""
    m, _ = analysis_cni._inputs(records)
    latest = m[m["run_id"] == m["run_id"].iloc[-1]]
    twins = latest[analysis_cni._twin(latest)]
    control = claimsets.cni_control_claims(  # the A/A control's twin against its original, when measured
        list(dict.fromkeys(zip(twins["data_path"], (int(v) for v in twins["link_mtu_bytes"])))),
        None if twins.empty else (twins["protocol"].iloc[0], twins["direction"].iloc[0],
                                  None if twins["protocol"].iloc[0] == "tcp" else int(twins["file_bytes"].iloc[0])))
    out = []
    for spec in [*claimsets.cni_claims(*_levels(latest[~analysis_cni._twin(latest)])), *control]:
        if not spec.paired:
            continue
        rows = analysis_cni._sel(latest[latest["protocol"] == spec.where["protocol"]],
                                 **{k: v for k, v in spec.where.items() if k != "protocol"})
        if spec.by != "arm":
            rows = rows[~analysis_cni._twin(rows)]

        def level(v):  # the rows of level v (None: the rows without the label, as an A/A original)
            col = rows[spec.by] if spec.by in rows.columns else None
            hit = (col.isna() if v is None else col == v) if col is not None else [v is None] * len(rows)
            return rows[hit].set_index("repetition")[spec.value]

        for a, b in (p for c in spec.chains for p in zip(c, c[1:])):
            va, vb = level(a), level(b)
            both = sorted(set(va.index) & set(vb.index))
            if len(both) < 3:
                continue
            la, lb = np.log(va[both].to_numpy(float)), np.log(vb[both].to_numpy(float))
            paired, unpaired = float(np.std(la - lb, ddof=1)), float(np.sqrt(la.var(ddof=1) + lb.var(ddof=1)))
            out.append({"condition": spec.condition, "pair": f"{a or 'original'} / {b}", "n": len(both),
                        "paired_sd": paired,
                        "unpaired_sd": unpaired, "quotient": paired / unpaired,
                        "r": float(np.corrcoef(la, lb)[0, 1])})
    return out


def _levels(m) -> tuple:
    """The levels :func:`nfvlab.claimsets.cni_claims` takes, as the analysis reads them from the tables."""
    tcp, http = m[m["protocol"] == "tcp"], m[m["protocol"] == "http"]
    sizes = sorted({int(x) for x in http["file_bytes"].dropna()})
    return (list(dict.fromkeys(tcp["data_path"])), list(dict.fromkeys(tcp["direction"])),
            list(dict.fromkeys(int(x) for x in tcp["link_mtu_bytes"])), list(dict.fromkeys(http["data_path"])),
            sorted({int(x) for x in http["link_mtu_bytes"]}), sizes)


def decided(records: str, paired: bool) -> tuple[int, int]:
    """(decided, testable) rows of E's paired claims, judged paired or (``paired=False``) with Welch."""
    real = analysis.claim_rows

    def judged(*args, **kw):
        return real(*args, **{**kw, "by_repetition": paired and kw.get("by_repetition", False)})

    with mock.patch.object(analysis_cni, "claim_rows", judged):
        claims = analysis_cni.tables(records)["claims"]
    names = {s.claim for s in claimsets.cni_claims(*_levels(analysis_cni._inputs(records)[0])) if s.paired}
    rows = claims[claims["test"].notna() & claims["claim"].isin(names)]
    return int(rows["verdict"].isin(["holds", "contradicted"]).sum()), len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", default="data/raw/experiment_e.jsonl")
    args = ap.parse_args()
    figs = pair_figures(args.records)
    for f in figs:
        print(f"{f['condition']:45s} {f['pair']:26s} n {f['n']:2d}  paired SD {f['paired_sd']:.3f}  "
              f"unpaired SD {f['unpaired_sd']:.3f}  quotient {f['quotient']:.2f}  r {f['r']:+.2f}")
    if figs:
        q = [f["quotient"] for f in figs]
        print(f"median quotient {statistics.median(q):.2f} (range {min(q):.2f}-{max(q):.2f}); "
              f"{sum(x <= 0.5 for x in q)} of {len(q)} pairs at 0.5 or below")
    for name, paired in (("paired t", True), ("Welch", False)):
        got, n = decided(args.records, paired)
        print(f"paired claims' rows decided with {name}: {got} of {n}")


if __name__ == "__main__":
    main()
