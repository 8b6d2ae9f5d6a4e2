"""Cell values as text: a rate or latency with its interval, a recorded flag, a plain number,
a column's display name with its unit."""
from __future__ import annotations

import math
from typing import Optional

#: Shown for an interval lower bound below 0 that was clipped (:func:`interval_text`).
CLIPPED_MARK = "*"
CLIPPED_NOTE = (f"{CLIPPED_MARK} the 95 % t-interval reaches below 0 at this small n; a rate or latency "
                "cannot be negative, so the lower bound is shown clipped at 0 (docs/methodology.md).")


def num(v) -> Optional[float]:
    """``v`` as a float; None where it is no number or NaN."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def interval_text(mean, low, high, scale: float = 1e3, digits: int = 1) -> str:
    """``"79.2 [72.0, 86.4]"``: ``mean`` and its interval divided by ``scale``.

    A lower bound below 0 is shown as 0 followed by :data:`CLIPPED_MARK` (a rate or
    latency cannot be negative; the t interval at small n can reach below 0). No
    interval (NaN bounds, n < 2) shows the mean alone; no mean shows "—".
    """
    m, lo, hi = num(mean), num(low), num(high)
    if m is None:
        return "—"
    if lo is None or hi is None:
        return f"{m / scale:.{digits}f}"
    low_text = f"{max(lo, 0.0) / scale:.{digits}f}{CLIPPED_MARK if lo < 0 else ''}"
    return f"{m / scale:.{digits}f} [{low_text}, {hi / scale:.{digits}f}]"


def flag_text(v) -> str:
    """A recorded True/False flag as "yes"/"no"; missing (not recorded, not known) as "unknown"."""
    if isinstance(v, str):
        v = {"true": True, "false": False}.get(v.strip().lower())
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "unknown"
    return "yes" if bool(v) else "no"


def plain(v, digits: int = 4) -> str:
    """A number as text (an integer without decimals, else ``digits`` significant digits), "—" for none."""
    f = num(v)
    if f is None:
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
    return f"{int(f)}" if f == int(f) and abs(f) < 1e15 else f"{f:.{digits}g}"


#: Key columns and their display names (units in brackets).
KEY_NAMES = {"data_path": "data path", "link_mtu_bytes": "link MTU [B]", "direction": "direction",
             "file_bytes": "file [B]", "mtu_bytes": "MTU [B]", "model": "model", "draft_model": "draft model", "section": "draft section", "pinning": "pinning",
             "numa": "NUMA", "noisy_load_pct": "noisy neighbour [% CPU]", "topology": "topology",
             "frame_size": "frame size [B]", "instances": "service instances", "nfs": "NFs per instance",
             "goal": "goal", "load_fraction": "load [% of rate]", "claim": "claim", "condition": "condition"}


def column_name(c: str) -> str:
    """Display name with unit: ``draft11_fig13_gbps`` -> ``draft11 fig13 [Gbps]``."""
    if c in KEY_NAMES:
        return KEY_NAMES[c]
    units = {"_gbps": "[Gbps]", "_mpps": "[Mpps]", "_kpps": "[kpps]", "_pps": "[packets/s]", "_pct": "[%]",
             "_cores": "[cores]", "_cpus": "[CPUs]"}
    for suffix, unit in units.items():
        if c.endswith(suffix):
            return f"{c[:-len(suffix)].replace('_', ' ')} {unit}"
    if c.startswith("published_mrr_mpps_"):
        return f"published MRR {c[len('published_mrr_mpps_'):]} [Mpps]"
    return c.replace("_", " ")
