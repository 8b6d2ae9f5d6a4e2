"""The analysis core every experiment's tables, claims and figures are built on (deterministic).

:func:`config_table` (statistics over repetitions per configuration), :func:`claim_rows`
(a claim's verdict from tests between configurations), the latency table and figures, the
figure and metric helpers. Each experiment's own tables, claims and figures live in its
module of :mod:`nfvlab.experiments`, which also writes what the DVC analysis stages publish.
Configurations this host cannot realize appear as rows whose ``status`` says why, with no
value; a claim needing one is "not testable on this host", never guessed. Local values
describe this host only; published values stand beside them for comparison of *shape*, not
of magnitude.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from nfvlab import analysis_paired, claims, claimsets, latency, linerate, results, stats
from nfvlab.plots.bars import grouped_bars
from nfvlab.plots.latency import spectrum_figure
from nfvlab.plots.output import figure_style, new_figure, save_png
from nfvlab.plots.throughput import throughput_vs_frame_size
from nfvlab.scenario.cni import TWIN as TWIN_ARM

PathLike = Union[str, Path]


#: Columns of :func:`config_table` after the configuration columns.
STAT_COLUMNS = ["status", "n", "mean_pps", "ci_low_pps", "ci_high_pps", "cv", "gbps_l1", "generator_limited",
                "n_irregular"]
#: How :func:`config_table` states the uncertainty of a throughput (figures say the same).
THROUGHPUT_INTERVAL = "95 % Student-t interval of the mean over repetitions"
CLAIM_COLUMNS = ["claim", "condition", "verdict", "reason", "pair", "test", "p_adjusted", "effect_size",
                 "effect_size_kind", "n", "mde", "n_needed", "detail"]
"""Columns of a claims table (:mod:`nfvlab.claims`): one row per claim and condition; ``verdict`` is one
of :data:`nfvlab.claims.VERDICTS` and ``reason`` says why in one sentence; ``pair``/``test``/``p_adjusted``
(Holm over the claim's tests)/``effect_size`` (ratio of geometric means - 1, positive: the claimed
larger level is larger)/``n`` describe the pair that decided the verdict; for an inconclusive claim
``mde`` (the smallest ratio - 1 detectable at this n, 80 % power) and ``n_needed`` (repetitions per
configuration that would likely decide it; empty: more than the design's ``n_max``); ``detail`` lists
every pair."""


def _key(value):
    """Level normalized for lookups: missing -> None, integral floats -> int."""
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return int(value)
    return value


def levels(*columns: Iterable, order: Sequence = (), default: Sequence = ()) -> list:
    """Distinct non-missing levels of ``columns``: ``order``'s first, the rest sorted."""
    seen = {_key(v) for col in columns for v in col} - {None}
    first = [v for v in order if v in seen]
    rest = sorted(seen - set(first), key=stats.level_sort_key)
    return (first + rest) or list(default)


#: Table ``status`` of a configuration a note explains, by the note's kind.
NOTE_STATUS = {"not-realizable": "not realizable", "search-failed": "search failed",
               "frame-too-large": "frame too large"}


def _status(notes: pd.DataFrame, config: dict) -> str:
    """Why ``config`` has no value: the matching note's reason, else "not measured"."""
    for _, n in notes.iterrows():
        if all(_key(n[c]) == _key(v) or (c == "frame_size" and _key(n[c]) is None) for c, v in config.items()):
            return f"{NOTE_STATUS.get(n['kind'], 'search failed')}: {n['reason']}"
    return "not measured"


def _any_known(flags: pd.Series) -> Optional[bool]:
    """True if any flag is True, False if all are known False, else None (unknown)."""
    if flags.eq(True).any():
        return True
    return False if flags.notna().all() else None


def config_table(searches: pd.DataFrame, notes: pd.DataFrame, grid: dict[str, Sequence],
                 goal: str) -> pd.DataFrame:
    """Statistics over repetitions for every configuration of ``grid``.

    Parameters
    ----------
    searches : pandas.DataFrame
        :func:`nfvlab.results.searches_frame` rows (filter them first, e.g. to a NUMA scenario).
    notes : pandas.DataFrame
        :func:`nfvlab.results.not_realizable_frame` rows, for the reasons.
    grid : dict
        Column -> levels; one row per combination, in this order.
    goal : str
        Search goal (``ndr`` / ``mrr``).

    Returns
    -------
    pandas.DataFrame
        The grid columns, then ``status`` (``measured``, ``not realizable: <why>``,
        ``search failed: <why>`` or ``not measured``), ``n`` (repetitions),
        ``mean_pps`` (mean over repetitions of ``throughput_pps``, packets/s per
        direction), ``ci_low_pps`` / ``ci_high_pps`` (packets/s per direction: the
        :data:`THROUGHPUT_INTERVAL`, ``mean -+ t(0.975, n-1) * sd / sqrt(n)``,
        :func:`nfvlab.stats.summarize`; NaN for n < 2), ``cv`` (sd / mean),
        ``gbps_l1`` (mean at L1, Gbit/s per direction; NaN without a
        ``frame_size`` column), ``generator_limited`` (True if any repetition
        was; False only if every repetition is known not to be; else None =
        unknown, e.g. a generator without a calibrated ceiling) and
        ``n_irregular`` (repetitions whose RFC 9971 goal result is irregular,
        e.g. the maximum rate was a lower bound, so the value is a floor; 0 for
        MRR and for records without the field).

    Notes
    -----
    Why a t interval and not a bootstrap: the profiles run 2-3 (quick) or 10
    (full) repetitions. At such n a percentile bootstrap cannot reach outside
    the sample's range and covers the mean far less often than it claims (about
    77 % instead of 95 % for three normal repetitions, 88 % for ten,
    ``tests/test_stats.py``), while the t interval is exact for normal
    repetitions; repeated searches of one configuration scatter narrowly
    around a mean (CV well under 1 % on this host), for which a t interval is
    the textbook choice.
    """
    by = list(grid)
    s = searches[searches["goal"] == goal]
    summ = stats.summarize(s, by, "throughput_pps") if len(s) else pd.DataFrame(columns=[*by, "n"])
    found = {tuple(_key(r[c]) for c in by): r for _, r in summ.iterrows()}
    lim = {tuple(_key(v) for v in (k if isinstance(k, tuple) else (k,))): _any_known(g)
           for k, g in s.groupby(by, dropna=False)["generator_limited"]} if len(s) else {}
    irregular = ({tuple(_key(v) for v in (k if isinstance(k, tuple) else (k,))): int((g == False).sum())
                  for k, g in s.groupby(by, dropna=False)["regular"]}
                 if len(s) and "regular" in s.columns else {})
    rows = []
    for combo in itertools.product(*grid.values()):
        config, key = dict(zip(by, combo)), tuple(_key(v) for v in combo)
        h = found.get(key)
        if h is None or not h["n"] > 0:
            rows.append({**config, "status": _status(notes, config), "n": 0})
            continue
        fs = config.get("frame_size")
        rows.append({**config, "status": "measured", "n": int(h["n"]), "mean_pps": h["mean"],
                     "ci_low_pps": h["ci_low"], "ci_high_pps": h["ci_high"], "cv": h["cv"],
                     "gbps_l1": linerate.pps_to_gbps(h["mean"], fs, 1) if fs is not None else np.nan,
                     "generator_limited": lim.get(key), "n_irregular": irregular.get(key, 0)})
    return pd.DataFrame(rows, columns=[*by, *STAT_COLUMNS])


def status_kind(status: str) -> str:
    """``measured`` | ``search failed`` | ``not realizable`` | ``not measured`` of a table's ``status``."""
    return str(status).split(":")[0]


def beside(table: pd.DataFrame, published: pd.DataFrame, on: dict[str, str], value: str,
            name: str) -> pd.DataFrame:
    """``table`` with ``published[value]`` as column ``name``, matched on ``on`` (table -> published column)."""
    lookup = {tuple(_key(r[c]) for c in on.values()): r[value] for _, r in published.iterrows()}
    out = table.copy()
    out[name] = [lookup.get(tuple(_key(r[c]) for c in on), np.nan) for _, r in table.iterrows()]
    return out


def measured_rates(searches: pd.DataFrame) -> pd.DataFrame:
    """Search rows ready for the claims: a ``resolution`` column, and no rate of 0.

    ``resolution`` is the relative width within which the value is known
    (:class:`nfvlab.claims.Sample`): the search's goal width ``goal_relative_width`` (RFC 9971
    ``relative_width``) for NDR/PDR searches; for a measured rate without one (MRR) one packet
    per trial, ``1 / (throughput_pps * trial_seconds)``, at most 0.5. A rate of 0 (nothing
    forwarded) is set to the detection limit, one packet per trial (``1 / trial_seconds``; 1 pps
    when the duration is not recorded), with resolution 0.5: the claims compare ratios, and
    "below one packet per trial" is what a 0 measured. Frames that already have ``resolution``
    are returned unchanged. Tables show the recorded values; only the claims use these.
    """
    if "resolution" in searches.columns:
        return searches
    out = searches.copy()
    pps = pd.to_numeric(out["throughput_pps"], errors="coerce").to_numpy(float)
    secs = (pd.to_numeric(out["trial_seconds"], errors="coerce").to_numpy(float) if "trial_seconds" in out.columns
            else np.full(len(out), np.nan))
    secs = np.where(np.isfinite(secs) & (secs > 0), secs, 1.0)
    width = (pd.to_numeric(out["goal_relative_width"], errors="coerce").to_numpy(float)
             if "goal_relative_width" in out.columns else np.full(len(out), np.nan))
    zero = pps <= 0
    pps = np.where(zero, 1.0 / secs, pps)
    with np.errstate(divide="ignore"):
        count = np.minimum(0.5, 1.0 / (pps * secs))
    out["throughput_pps"] = pps
    out["resolution"] = np.where(zero, 0.5, np.where(np.isfinite(width), width, count))
    return out


def samples(data: pd.DataFrame, by: str, levels: Sequence, value: str = "throughput_pps") -> dict:
    """Level -> :class:`nfvlab.claims.Sample` of ``value``, with its ``resolution`` (the largest of
    the level's rows; 0 without the column, e.g. tool runs). A rate of 0 left (a tool run that
    moved nothing; searches went through :func:`measured_rates`) is read as below a thousandth of
    the smallest rate of ``data``, with resolution 0.5: far below, which is what it says. Each value's
    key (:attr:`nfvlab.claims.Sample.keys`) is its ``repetition`` when ``data`` has that column."""
    if "repetition" in data.columns:  # measurement order: a sequential look takes the first n
        data = data.sort_values("repetition", kind="stable")
    keys = np.array([_key(v) for v in data[by]], dtype=object)
    vals = pd.to_numeric(data[value], errors="coerce").to_numpy(float)
    res = data["resolution"].to_numpy(float) if "resolution" in data.columns else np.zeros(len(data))
    reps = data["repetition"].to_numpy(object) if "repetition" in data.columns else None
    low = vals <= 0  # a tool rate of 0 (nothing got through): a thousandth of the smallest rate seen
    if low.any():
        vals = np.where(low, np.nanmin(vals[vals > 0], initial=1.0) / 1e3, vals)
        res = np.where(low, 0.5, res)
    out = {}
    for lv in levels:
        hit = keys == _key(lv)
        w = float(np.nanmax(res[hit], initial=0.0))
        out[lv] = claims.Sample(vals[hit], w, None if reps is None else reps[hit])
    return out


def claim_rows(claim: str, condition: str, chains: Sequence[Sequence], searches: pd.DataFrame, by: str,
               status: dict, design: Optional[claims.Design] = None, kind: str = "order",
               value: str = "throughput_pps", plan: Optional[claims.Plan] = None,
               paired: Optional[dict] = None, noise: str = "", by_repetition: bool = False) -> list[dict]:
    """Rows of the claims table for one claim under one condition.

    Parameters
    ----------
    claim : str
        The draft's claim, as shown.
    condition : str
        The fixed factors, e.g. ``"numa=s1, 1518 B"``.
    chains : list of level lists
        ``kind="order"``: orders the claim asserts, each from the expected largest to the
        smallest (``[["exclusive", "shared", "none"]]``; ``[["s1", "s2"], ["s1", "s4"]]``).
        ``kind="equality"``: the ``(a, b)`` pairs claimed about equal.
    searches : pandas.DataFrame
        Rows under ``condition`` (goal already chosen): search rows, or any rows with ``value``.
    by : str
        The factor column the levels belong to.
    status : dict
        Level -> ``status`` of the table (``measured`` or why not).
    design : nfvlab.claims.Design, optional
        Alpha, margins and power (default :func:`nfvlab.claims.current_design`: ``params/claims.yaml``'s
        values, or the design ``nfvlab analyze --claims`` put in force).
    kind : {"order", "equality"}
        :func:`nfvlab.claims.order_claim` or :func:`nfvlab.claims.equality_claim`.
    value : str
        The measured rate column (positive).
    plan : nfvlab.claims.Plan, optional
        The planned looks of an adaptive run (:func:`nfvlab.claims.sequential_verdict`: the looks
        replayed on the repetitions in ``repetition`` order); None: a fixed-n run, one look at
        the full alpha.
    paired : dict, optional
        ``(a, b)`` levels -> the paired phase's note of that pair (:func:`nfvlab.analysis_paired.paired_notes`):
        an order claim whose every pair was measured in paired blocks is decided from them
        (:func:`nfvlab.analysis_paired.paired_claim`); otherwise from the searches, as without.
    noise : str
        The run's host noise, shown beside a paired verdict (:func:`nfvlab.analysis_paired.host_noise`).
    by_repetition : bool
        The levels were measured side by side in each repetition (one lab, one right after the other):
        the pairs are judged on per-repetition log-ratios (``paired`` of :func:`nfvlab.claims.order_claim`).

    Returns
    -------
    list of dict
        :data:`CLAIM_COLUMNS` rows. When a level is not measured: one row with
        verdict ``not testable`` ("on this host: <level>: <why>; ...") and,
        if at least two levels of a chain were measured, one row for the
        testable part of the claim (the chains restricted to measured levels),
        judged like a full claim.
    """
    levels = list(dict.fromkeys(v for c in chains for v in c))
    missing = [v for v in levels if status.get(v) != "measured"]
    rows = []
    if missing:
        why = "; ".join(f"{v}: {status.get(v, 'not in the experiment')}" for v in missing)
        rows.append({"claim": claim, "condition": condition, "verdict": "not testable", "n": 0,
                     "reason": "a configuration it needs was not measured", "detail": f"on this host: {why}"})
        chains = claimsets.testable_part(chains, missing)
        if not chains:
            return rows
        sep = " > " if kind == "order" else " ~ "
        claim = f"{claim} -- testable part: {'; '.join(sep.join(map(str, c)) for c in chains)}"
    data = measured_rates(searches) if value == "throughput_pps" else searches
    if paired and kind == "order":
        got = samples(data, by, levels, value)
        row = analysis_paired.paired_claim(claim, condition, chains, paired, {k: s.values for k, s in got.items()},
                                           noise)
        if row is not None:
            return rows + [row]
    v = claims.sequential_verdict(kind, samples(data, by, levels, value), chains, plan or claims.Plan.fixed(),
                                  design or claims.current_design(), paired=by_repetition)
    if kind == "order":
        v = respect_lower_bounds(v, chains, lower_bounds(data, by, levels))
    rows.append({"claim": claim, "condition": condition, **{k: v[k] for k in CLAIM_COLUMNS if k in v}})
    return rows


def lower_bounds(data: pd.DataFrame, by: str, levels: Sequence) -> list:
    """The levels of ``data`` with a generator-limited result (``generator_limited``): their rates
    are lower bounds of the DUT's (the generator, not the DUT, set them), in ``levels``' order."""
    if "generator_limited" not in data.columns:
        return []
    flagged = {_key(v) for v, g in zip(data[by], data["generator_limited"]) if g is True or g == 1.0}
    return [lv for lv in levels if _key(lv) in flagged]


def respect_lower_bounds(verdict: dict, chains: Sequence[Sequence], bounds: Sequence) -> dict:
    """An order claim's ``verdict`` (:func:`nfvlab.claims.sequential_verdict`) read with ``bounds``, levels
    whose rates are only lower bounds (:func:`lower_bounds`): "holds" needs every claimed-smaller level a
    value (a bound below may truly be above), "contradicted" every claimed-larger one (a bound found equal
    or below may truly be above); else inconclusive, saying which. Seen: two OVS models whose searches
    both stopped at a top set by a low generator ceiling read "no practical difference" (-0.5 %)."""
    side = {"holds": {c[i + 1] for c in chains for i in range(len(c) - 1)},
            "contradicted": {c[i] for c in chains for i in range(len(c) - 1)}}.get(verdict.get("verdict"), set())
    hit = [b for b in bounds if b in side]
    if not hit:
        return verdict
    what = "above" if verdict["verdict"] == "holds" else "equal to or below"
    return {**verdict, "verdict": "inconclusive",
            "reason": (f"{', '.join(map(str, hit))}: a lower bound (generator-limited), so not shown {what} "
                       f"the other; as values: {verdict['verdict']}, {verdict.get('reason', '')}")}


def plan_of(records: Union[PathLike, Iterable[PathLike]], run: str = "latest") -> Optional[claims.Plan]:
    """The planned looks of the run the tables read (``run`` as :func:`nfvlab.results.selected_runs`): from
    its run record's params, ``Plan(first=repetitions, step, max_repetitions)`` when they have an
    ``adaptive`` section (adaptive repetitions, docs/methodology.md "Claims"); None for a fixed-n run
    (one look at the full alpha, as before adaptive runs existed)."""
    for _path, recs in results.selected_runs(records, run):
        params = next((r.get("params") or {} for r in recs if r["type"] == "run"), {})
        ad = params.get("adaptive")
        if ad:
            return claims.Plan(int(params["repetitions"]), int(ad.get("step") or 1), int(ad["max_repetitions"]))
    return None


def select(df: pd.DataFrame, **conditions) -> pd.DataFrame:
    """Rows whose columns equal ``conditions`` (normalized; a list value: any of them)."""
    mask = np.ones(len(df), dtype=bool)
    for col, want in conditions.items():
        want = {_key(w) for w in want} if isinstance(want, (list, tuple, set)) else {_key(want)}
        mask &= np.array([_key(v) in want for v in df[col]], dtype=bool)
    return df[mask]


def inputs(records: PathLike, goal: Optional[str], models: Optional[list[str]]):
    """Search rows of ``goal`` (None: the first recorded, :func:`first_goal`) and ``models``
    (None: every model in the records), the notes of those models, and the models. An A/A
    control's twin searches (``arm: twin``) are not among them: they enter its claims row only
    (:func:`control_searches`)."""
    s = results.searches_frame(records)
    s = s[s["arm"] != TWIN_ARM]
    notes = results.not_realizable_frame(records)
    if models is None:
        models = levels(s["model"], notes["model"])
    goal = goal or first_goal(s)
    return (select(s, goal=goal, model=list(models)), select(notes, model=list(models)),
            list(models))


#: How an A/A control's claims rows name the measurement its twin repeats (it has no ``arm`` label).
ORIGINAL_ARM = "original"


def control_searches(records: PathLike, goal: str) -> pd.DataFrame:
    """The A/A control's searches of ``goal``: every search of a cell that has twins (``arm: twin``),
    the originals' ``arm`` set to :data:`ORIGINAL_ARM`; empty when the records have no control."""
    s = select(results.searches_frame(records), goal=goal)
    twins = s[s["arm"] == TWIN_ARM]
    if twins.empty:
        return s.iloc[0:0]

    def cells(d: pd.DataFrame) -> list:
        return [(m, None if pd.isna(u) else int(u), str(f))
                for m, u, f in zip(d["model"], d["mtu_bytes"], d["frame_size"])]

    twin_cells = set(cells(twins))
    out = s[[c in twin_cells for c in cells(s)]].copy()
    out["arm"] = out["arm"].fillna(ORIGINAL_ARM)
    return out


def first_goal(searches: pd.DataFrame) -> str:
    """The goal of an experiment whose params choose it (F: ``mrr`` quick, ``ndr`` full): the first recorded."""
    goals = [g for g in searches["goal"] if isinstance(g, str)]
    return goals[0] if goals else "ndr"


def status_of(table: pd.DataFrame, by: str, **conditions) -> dict:
    sub = select(table, **conditions)
    return {_key(k): v for k, v in zip(sub[by], sub["status"])}


# ---------------------------------------------------------------------------
# figures and metrics
# ---------------------------------------------------------------------------
HOST_ONLY = "measured on this host only, not the draft's testbed"


def kpps(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    for c in ("mean", "ci_low", "ci_high"):
        out[f"{c}_kpps"] = out[f"{c}_pps"] / 1e3
    return out


def irregular_note(table: pd.DataFrame, keys: Sequence[str]) -> Optional[str]:
    """One line naming the configurations with irregular RFC 9971 results, or None.

    RFC 9971 asks that values coming from irregular goal results be marked; the
    figures show this line under the plot. ``keys`` name a configuration (e.g.
    ``["model", "frame_size"]``); a row counts when ``n_irregular > 0``.
    """
    if "n_irregular" not in table.columns:
        return None
    rows = table[table["n_irregular"].fillna(0) > 0]
    if rows.empty:
        return None
    cells = [f"{' '.join(str(r[k]) for k in keys)} ({int(r['n_irregular'])} of {int(r['n'])})"
             for _, r in rows.iterrows()]
    return "irregular (RFC 9971; e.g. the maximum rate met the goal, so a floor): " + ", ".join(cells)


def bar_figure(table: pd.DataFrame, x: str, hue: str, title: str, path: Path, dpi: int) -> Path:
    with figure_style(dpi):
        fig = new_figure((7.0, 4.4))
        ax = fig.subplots()
        grouped_bars(kpps(table), x=x, y="mean_kpps", hue=hue, ci_low="ci_low_kpps", ci_high="ci_high_kpps",
                     missing="status", ax=ax, title=title, ylabel="NDR [kpps per direction]")
        note = irregular_note(table, [hue, x])
        if note:
            ax.set_xlabel(f"{ax.get_xlabel()}\n{note}", fontsize=8)
        return save_png(fig, path)


def file_part(value) -> str:
    return str(value).replace("/", "-").replace(" ", "")


def metric_values(table: pd.DataFrame, keys: list[str], unit: str, prefix: str = "") -> dict:
    return {prefix + "/".join(str(getattr(r, k)) for k in keys) + f"/{unit}": round(r.mean_pps / 1e3, 3)
            for r in table.itertuples() if r.status == "measured" and not np.isnan(r.mean_pps)}


def claim_counts(table: pd.DataFrame) -> dict:
    """DVC metrics ``claims/<verdict>``: how many rows of a claims table have each verdict."""
    v = table["verdict"]
    return {f"claims/{name.replace(' ', '_').replace('-', '_')}": int((v == name).sum()) for name in claims.VERDICTS}


def throughput_figure(table: pd.DataFrame, title: str, path: Path, dpi: int = 110) -> Path:
    """NDR (kpps per direction) vs frame size, one line per model, CI error bars, of a table's measured rows.

    Configurations without a value are listed under the plot by kind (not
    realizable, search failed, not measured), so each stays visible; those with
    irregular RFC 9971 results too (:func:`irregular_note`).
    """
    data = table[table["status"] == "measured"]
    missing = table[table["status"] != "measured"]
    with figure_style(dpi):
        fig = new_figure((7.0, 4.4))
        ax = fig.subplots()
        if data.empty:
            ax.text(0.5, 0.5, "no configuration measured", ha="center", va="center")
        else:
            throughput_vs_frame_size(kpps(data), y="mean_kpps", hue="model", ax=ax, x_scale="log2",
                                     ci_low="ci_low_kpps", ci_high="ci_high_kpps", title=title,
                                     ylabel="NDR [kpps per direction]")
        if not missing.empty:
            lines = []
            for kind, g in missing.groupby(missing["status"].map(status_kind), sort=True):
                cells = sorted({f"{m} ({fs} B)" if g["model"].eq(m).sum() < len(set(table["frame_size"])) else m
                                for m, fs in zip(g["model"], g["frame_size"])})
                lines.append(f"{kind}: {', '.join(cells)}")
            # In the x label, so the layout engine makes room for it.
            ax.set_xlabel("\n".join([ax.get_xlabel() or "frame size [B]", *lines]), fontsize=8)
        note = irregular_note(data, ["model", "frame_size"])
        if note:
            ax.set_xlabel(f"{ax.get_xlabel() or 'frame size [B]'}\n{note}", fontsize=8)
        return save_png(fig, Path(path))


def latency_table(records: PathLike, models: Optional[list[str]] = None) -> pd.DataFrame:
    """Latency under load: :func:`nfvlab.latency.latency_percentiles` of the records' latest run.

    Rows of the ``models`` given (default: all), configuration columns without a
    value in any row dropped (e.g. experiment A's resources); columns as
    :func:`nfvlab.latency.latency_percentiles` returns them.
    """
    lat = results.latency_frame(records)
    if models is not None:
        lat = lat[lat["model"].isin(models)]
    table = latency.latency_percentiles(lat)
    return table.drop(columns=[c for c in results.CONFIG_LABELS if table[c].isna().all()])


def latency_figures(letter: str, table: pd.DataFrame, out: Path, dpi: int = 110) -> list[Path]:
    """``experiment_<x>_latency_<model>[_<config>].png``: percentile spectra per load fraction.

    One figure per model and resource configuration, one panel per frame size
    (:func:`nfvlab.plots.latency.spectrum_figure`); none for a configuration without a
    latency value (no latency trial, or probes off).
    """
    configs = [c for c in ["model", *results.CONFIG_LABELS] if c in table.columns]
    paths = []
    for key, g in table.groupby(configs, sort=False, dropna=False):
        if g["mean_ns"].isna().all():  # e.g. probes off: nothing to draw
            continue
        key = key if isinstance(key, tuple) else (key,)
        parts = [str(v) for v in key if pd.notna(v)]
        knobs = ", ".join(f"{c} {v}" for c, v in zip(configs[1:], key[1:]) if pd.notna(v))
        goal = "/".join(str(x).upper() for x in dict.fromkeys(g["goal"]))
        with figure_style(dpi):
            fig = spectrum_figure(g, f"Experiment {letter.upper()}: {key[0]}{f' ({knobs})' if knobs else ''}\n"
                                     f"one-way latency at fractions of the {goal}, mean over repetitions, "
                                     f"95 % CI\n{HOST_ONLY}")
            paths.append(save_png(fig, out / f"experiment_{letter}_latency_{'_'.join(map(file_part, parts))}.png"))
    return paths


