"""Provenance of the local numbers: where and how each experiment's latest completed run was
measured, read from its records, and what the local numbers describe (:data:`SCOPE_NOTE`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from nfvlab import results
from nfvlab.provenance import measuring_code_changes
from nfvlab.records import runs_frame
from nfvlab.report.files import PathLike, records_names
from nfvlab.report.section import Section
from nfvlab.report.tables import styled
from nfvlab.report.values import num

#: What the local numbers are, whatever the host (its facts come from the records: :func:`provenance_table`).
SCOPE_NOTE = (
    "**Local numbers describe the host in the provenance table only** (its CPU, cores, links and "
    "generator ceiling), **never** the draft's 40 GbE testbed or the density note's servers. "
    "Published values stand beside them to compare the *shape* of a result (which configuration "
    "is faster), not its magnitude. A configuration this host cannot realize is listed with the "
    "reason, never with a number; a claim that needs one is *not testable on this host*."
)


def _latest_run(path: Path) -> Optional[pd.Series]:
    """The runs_frame row of the run that counts (:func:`nfvlab.results.selected_runs`), None if none."""
    chosen = results.selected_runs(path)
    if not chosen:
        return None
    run_id = chosen[-1][1][0]["run_id"]
    runs = runs_frame(path)
    return runs[runs["run_id"] == run_id].iloc[-1]


def _ceilings_text(gen: dict) -> str:
    if gen.get("tx_paths"):  # tx: auto: a ceiling per TX path
        return " | ".join(f"{tx}: {_ceilings_text(p)}" for tx, p in gen["tx_paths"].items())
    ceil = gen.get("ceilings") or {}
    if not ceil:
        return "unknown (not calibrated)"
    order = sorted(ceil, key=lambda k: (not str(k).isdigit(), int(k) if str(k).isdigit() else 0, str(k)))
    return "; ".join(f"{k}{' B' if str(k).isdigit() else ''}: {ceil[k]['ceiling_pps'] / 1e3:.1f} kpps"
                     for k in order if num(ceil[k].get("ceiling_pps")) is not None) or "unknown"


def provenance_table(records_dir: PathLike = "data/raw") -> pd.DataFrame:
    """Where and how each experiment's latest completed run was measured, from its records.

    Parameters
    ----------
    records_dir : path
        Holds ``experiment_<x>.jsonl`` (:func:`records_names`).

    Returns
    -------
    pandas.DataFrame
        One row per records file with a completed run, columns ``experiment``,
        ``run_id``, ``date`` (UTC start), ``git_revision`` (12 hex digits, ``+dirty`` if the measuring
        code differed from that commit or the record cannot tell, :func:`nfvlab.provenance.measuring_code_changes`:
        the pipeline's own outputs, e.g. ``dvc.lock`` written between stages, do not count), ``host_cpu``, ``cores`` (usable
        CPUs), ``numa_nodes``, ``kernel``, ``links`` (the generator's ports, e.g.
        ``af_packet on veth``; the NIC when it drives one), ``lab_kind``,
        ``profile`` (params file), ``repetitions``, ``generator`` (name, version,
        scheduling; experiment E: its tools' versions) and ``ceiling`` (calibrated
        ceiling per frame size, kpps per direction, or "unknown (not calibrated)";
        E: "not applicable") and ``host_speed`` (:func:`host_speed_text`). Missing facts read "unknown".
        ``attrs["host_speed"]``: each row's probe figures as recorded (:func:`host_stability_note`).
    """
    rows, speeds = [], []
    for name, stem in records_names().items():
        path = Path(records_dir) / f"{stem}.jsonl"
        run = _latest_run(path) if path.exists() else None
        if run is None:
            continue
        prov, params = run["provenance"] or {}, run["params"] or {}
        gen, lab = prov.get("generator") or {}, prov.get("lab") or {}
        ident = gen.get("identity") or {}
        rev = prov.get("git_revision")
        unknown = "unknown"
        rows.append({
            "experiment": name.upper() if len(name) == 1 else name[0].upper() + name[1:],
            "run_id": run["run_id"],
            "date": str(run.get("started_at") or unknown)[:19].replace("T", " ") + " UTC",
            "git_revision": f"{rev[:12]}{'' if measuring_code_changes(prov) == [] else '+dirty'}" if rev else unknown,
            "host_cpu": prov.get("cpu_model") or unknown,
            "cores": prov.get("cpu_affinity_count") or prov.get("cpu_count") or unknown,
            "numa_nodes": prov.get("numa_nodes") or unknown,
            "kernel": prov.get("kernel") or unknown,
            # Experiment E has no packet generator: its tools and its lab's link stand in.
            "links": ident.get("ports") or lab.get("lab") or unknown,
            "lab_kind": lab.get("lab_kind") or (params.get("lab") or {}).get("kind") or unknown,
            "profile": params.get("source") or unknown,
            "repetitions": params.get("repetitions") or unknown,
            "generator": " ".join(str(x) for x in (ident.get("name"), ident.get("version"),
                                                   f"sched={ident['sched']}" if ident.get("sched") else None)
                                  if x) or "; ".join((lab.get("tools") or {}).values()) or unknown,
            "ceiling": _ceilings_text(gen) if gen or not lab.get("tools") else "not applicable (TCP/HTTP tools)",
            "host_speed": host_speed_text(prov.get("host_speed")),
        })
        speeds.append(prov.get("host_speed"))
    cols = ["experiment", "run_id", "date", "git_revision", "host_cpu", "cores", "numa_nodes", "kernel", "links",
            "lab_kind", "profile", "repetitions", "generator", "ceiling", "host_speed"]
    table = pd.DataFrame(rows, columns=cols)
    table.attrs["host_speed"] = speeds  # the probes' figures, for host_stability_note
    return table


def host_speed_text(speed: Optional[dict]) -> str:
    """One line of :func:`nfvlab.system.host.speed_variation`'s figures, or why there are none."""
    cpus = (speed or {}).get("cpus") or {}
    if not cpus:
        return "not measured"

    def one(c: str, v: dict) -> str:
        lag = f", lag-1 r {v['lag1']:.2f}" if v.get("lag1") is not None else ""
        return f"CPU {c} {100 * v['cv']:.1f} % ({v['min_ratio']:.2f}-{v['max_ratio']:.2f}x{lag})"

    per_cpu = ", ".join(one(c, v) for c, v in sorted(cpus.items(), key=lambda kv: int(kv[0])))
    extra = "".join(f"; {name} {fmt.format(speed[key])}" for key, name, fmt in (
        ("cross_cpu_r", "across CPUs r", "{:.2f}"), ("steal_share", "steal", "{:.1%}"))
        if speed.get(key) is not None)
    return (f"CV of a fixed loop's rate per {speed['window_s']:g} s window, {speed['duration_s']:g} s "
            f"before the run: {per_cpu}{extra}")


def host_stability_note(speeds: list[Optional[dict]]) -> str:
    """A terse warning when any run's host probe says the host was unstable (a CPU's CV per
    window at least :data:`nfvlab.system.host.UNSTABLE_CV`, as pyperf warns from 10 %), else ""."""
    from nfvlab.system.host import UNSTABLE_CV

    worst = max((v["cv"] for s in speeds for v in ((s or {}).get("cpus") or {}).values()), default=None)
    if worst is None or worst < UNSTABLE_CV:
        return ""
    return (f"**The host was unstable**: a CPU's own speed varied with a CV of up to {worst:.0%} from "
            f"one window to the next (warned from {UNSTABLE_CV:.0%}). Every rate measured here varies "
            "at least as much from trial to trial, and a comparison of configurations measured "
            "minutes apart carries that noise: read such differences with their intervals, and prefer "
            "a quiet host (isolated cores, fixed frequency) for absolute figures.")


_PROVENANCE_NAMES = {"run_id": "run id", "date": "date (run start)", "git_revision": "git revision",
                     "host_cpu": "host CPU", "cores": "cores (usable)", "numa_nodes": "NUMA nodes",
                     "kernel": "kernel", "links": "generator ports / links", "lab_kind": "lab kind",
                     "profile": "profile (params file)", "repetitions": "repetitions",
                     "generator": "traffic generator", "ceiling": "generator ceiling (calibrated) [kpps per direction]",
                     "host_speed": "host CPU speed variation (a rate's CV cannot be expected below it)"}


def provenance_sections(records_dir: Path) -> list[Section]:
    """The scope note and :func:`provenance_table`, one column per experiment."""
    prov = provenance_table(records_dir)
    if prov.empty:
        return [Section("Provenance of the local numbers",
                        f"{SCOPE_NOTE}\n\n*Unknown*: no completed run in `{records_dir}`.", None, [])]
    note = host_stability_note(list(prov.attrs.get("host_speed", [])))
    # Transposed (one column per experiment) so every field fits the page.
    wide = prov.set_index("experiment").T.rename(index=_PROVENANCE_NAMES)
    wide = wide.rename_axis(None, axis=1).reset_index().rename(columns={"index": "field"}).astype(str)
    return [Section("Provenance of the local numbers", SCOPE_NOTE + (f"\n\n{note}" if note else ""),
                    styled(wide, "provenance"), [])]
