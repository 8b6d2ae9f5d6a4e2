"""Latency under load as text: percentiles per model (and configuration), one column per percentile."""
from __future__ import annotations

import pandas as pd

from nfvlab import results
from nfvlab.report.values import KEY_NAMES, interval_text, plain


def latency_text(table: pd.DataFrame) -> pd.DataFrame:
    """Latency percentiles per model (and configuration, frame size, load), one column per percentile.

    Parameters
    ----------
    table : pandas.DataFrame
        ``experiment_<x>_latency.csv`` (:func:`nfvlab.latency.latency_percentiles`):
        one row per point and percentile, values in ns.

    Returns
    -------
    pandas.DataFrame
        Text: the key columns present that vary (``model`` always; configuration
        labels, ``frame size [B]``, ``goal``, ``load [% of rate]``), ``n``, then
        one column per percentile ``"p50 [µs]"`` .. ``"p99.9 [µs]"``: mean over
        repetitions [95 % CI] in microseconds (:func:`interval_text`). Keys with
        one value in every row are left out and named in ``attrs["fixed"]``
        (e.g. ``"goal ndr, pinning plan"``).
    """
    keys = [c for c in ["model", *results.CONFIG_LABELS, "frame_size", "goal", "load_fraction"] if c in table.columns]
    fixed = {k: table[k].iloc[0] for k in keys[1:] if table[k].nunique(dropna=False) == 1 and len(table)}
    keys = [k for k in keys if k not in fixed]
    t = table.assign(load_fraction=table["load_fraction"] * 100) if "load_fraction" in table.columns else table
    t = t.assign(cell=[interval_text(m, lo, hi) for m, lo, hi in zip(t["mean_ns"], t["ci_low_ns"], t["ci_high_ns"])])
    order = list(dict.fromkeys(t["percentile"]))
    wide = t.pivot_table(index=keys, columns="percentile", values="cell", aggfunc="first", sort=False)
    n = t.groupby(keys, sort=False, dropna=False)["n"].max()
    wide = wide.reindex(columns=order).join(n).reset_index()
    out = pd.DataFrame({KEY_NAMES.get(k, k): wide[k].map(plain) for k in keys})
    out["n"] = wide["n"].map(plain)
    for p in order:
        out[f"{p} [µs]"] = wide[p].fillna("—")
    out.attrs["fixed"] = ", ".join(f"{KEY_NAMES.get(k, k)} {plain(v)}" for k, v in fixed.items())
    return out
