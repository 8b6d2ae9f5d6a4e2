"""Published reference numbers as pandas DataFrames.

The tables under ``data/reference/`` are hand transcriptions of

* draft-dcn-bmwg-containerized-infra-11, Appendices A-C (Figures 10, 12, 13,
  15, 16, 17; 40GbE XL710 testbed, T-Rex, zero-packet-loss throughput in Gbps),
* the "NFV Service Density Benchmarking" note (``cncf-cnfs-results-summary.md``;
  FD.io CSIT / Equinix Metal 2n-skx, nfvbench MRR in Mpps).

Every table has the provenance columns ``source`` and ``table`` (the figure
or section it comes from). ``docs/reference-data.md`` describes each table and
the transcription quirks. The CSVs are the artifact; nothing here parses the
source documents.

The data directory is ``<repo>/data/reference``; set ``NFVLAB_REFERENCE_DIR``
to read another copy.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from nfvlab import linerate

__all__ = [
    "DRAFT_SOURCE",
    "DENSITY_SOURCE",
    "TABLES",
    "LOADERS",
    "DENSITY_AXIS",
    "DENSITY_STATUSES",
    "PINNING_ORDER",
    "reference_dir",
    "table_names",
    "load",
    "models_throughput",
    "pinning_numa",
    "combination_throughput",
    "multipod_numa",
    "numa_scenarios",
    "density_mrr",
    "density_nf_view",
    "density_core_view",
    "published_pps",
    "with_pps",
]

DRAFT_SOURCE = "draft-dcn-bmwg-containerized-infra-11"
DENSITY_SOURCE = "nfv-service-density-note (cncf-cnfs-results-summary.md)"

#: Density matrix axes (service instances and NFs per instance).
DENSITY_AXIS = (1, 2, 4, 6, 8, 10)
#: Status values of :func:`density_mrr`.
DENSITY_STATUSES = ("measured", "not_measured", "impossible")
#: Pinning modes of :func:`pinning_numa`, in a natural order (not the draft's row order).
PINNING_ORDER = ("none", "shared", "exclusive")

_STR, _INT, _FLOAT, _BOOL, _FRAME = "str", "int", "float", "bool", "frame"

# name -> (file, column schema). Column order here is the CSV's column order.
_SCHEMAS: dict[str, tuple[str, dict[str, str]]] = {
    "models_throughput": (
        "models_throughput.csv",
        {"source": _STR, "table": _STR, "model": _STR, "model_label": _STR,
         "frame_size": _INT, "throughput_gbps": _FLOAT},
    ),
    "pinning_numa": (
        "pinning_numa.csv",
        {"source": _STR, "table": _STR, "pinning": _STR, "pinning_label": _STR,
         "scenario": _STR, "frame_size": _INT, "throughput_gbps": _FLOAT},
    ),
    "combination_throughput": (
        "combination_throughput.csv",
        {"source": _STR, "table": _STR, "model": _STR, "model_label": _STR,
         "frame_size": _INT, "throughput_gbps": _FLOAT},
    ),
    "multipod_numa": (
        "multipod_numa.csv",
        {"source": _STR, "table": _STR, "scenario": _STR, "frame_size": _INT,
         "throughput_gbps": _FLOAT, "note": _STR},
    ),
    "numa_scenarios_single": (
        "numa_scenarios_single.csv",
        {"source": _STR, "table": _STR, "scenario": _STR, "label_in_draft": _STR,
         "nic_numa": _INT, "vswitch_numa": _INT, "pod_numa": _INT, "note": _STR},
    ),
    "numa_scenarios_multi": (
        "numa_scenarios_multi.csv",
        {"source": _STR, "table": _STR, "scenario": _STR, "label_in_draft": _STR,
         "nic_numa": _INT, "vswitch_numa": _INT, "pod1_numa": _INT, "pod2_numa": _INT,
         "note": _STR},
    ),
    "density_mrr": (
        "density_mrr.csv",
        {"source": _STR, "table": _STR, "testbed_id": _STR, "testbed": _STR,
         "testbed_hosts": _STR, "cpu": _STR, "pcdr4sw": _STR, "pcmr4sw": _STR,
         "pcdr4nf": _STR, "pcmr4nf": _STR, "topology": _STR, "frame_size": _FRAME,
         "instances": _INT, "nfs_per_instance": _INT, "total_nfs": _INT,
         "mrr_mpps": _FLOAT, "status": _STR, "warmup_retries": _BOOL, "raw": _STR},
    ),
    "density_nf_view": (
        "density_nf_view.csv",
        {"source": _STR, "table": _STR, "instances": _INT, "nfs_per_instance": _INT,
         "total_nfs": _INT},
    ),
    "density_core_view": (
        "density_core_view.csv",
        {"source": _STR, "table": _STR, "pcdr4sw": _STR, "pcmr4sw": _STR, "pcdr4nf": _STR,
         "pcmr4nf": _STR, "instances": _INT, "nfs_per_instance": _INT,
         "physical_cores": _INT},
    ),
}

#: Table name -> one-line description (``load(name)`` accepts these names).
TABLES: dict[str, str] = {
    "models_throughput": "draft-11 Figure 10: zero-loss throughput [Gbps] of 4 networking models x 7 frame sizes",
    "pinning_numa": "draft-11 Figure 13: zero-loss throughput [Gbps], 3 CPU pinning modes x NUMA s1..s4, 1518 B",
    "combination_throughput": "draft-11 Figure 16: zero-loss throughput [Gbps], VPP vs SRIOV-VPP x 7 frame sizes",
    "multipod_numa": "draft-11 Figure 17: zero-loss throughput [Gbps], multi-pod NUMA s1..s6, 1518 B",
    "numa_scenarios_single": "draft-11 Figure 12: single-pod NUMA placement of NIC, vSwitch, pod (s1..s4)",
    "numa_scenarios_multi": "draft-11 Figure 15: multi-pod NUMA placement of NIC, vSwitch, pod1, pod2 (s1..s6)",
    "density_mrr": "density note: MRR [Mpps] matrices, 2 testbeds x 2 pcdr4sw x VSC/CSC/CSP x 64B/IMIX x 6x6",
    "density_nf_view": "density note: Network Function View (total NFs per matrix cell)",
    "density_core_view": "density note: Core Usage View (physical cores per matrix cell)",
}

_ALIASES = {
    "fig10": "models_throughput", "figure 10": "models_throughput",
    "fig12": "numa_scenarios_single", "figure 12": "numa_scenarios_single",
    "fig13": "pinning_numa", "figure 13": "pinning_numa",
    "fig15": "numa_scenarios_multi", "figure 15": "numa_scenarios_multi",
    "fig16": "combination_throughput", "figure 16": "combination_throughput",
    "fig17": "multipod_numa", "figure 17": "multipod_numa",
}


def reference_dir() -> Path:
    """Directory holding the reference CSVs.

    ``$NFVLAB_REFERENCE_DIR`` if set, else ``<repo>/data/reference`` located
    relative to this file.
    """
    env = os.environ.get("NFVLAB_REFERENCE_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "data" / "reference"


def table_names() -> list[str]:
    """Names accepted by :func:`load`, sorted."""
    return sorted(TABLES)


def _frame(text: str):
    return int(text) if text.isdigit() else text


def _convert(series: pd.Series, kind: str) -> pd.Series:
    if kind == _STR:
        return series.astype(str)
    if kind == _INT:
        return series.astype("int64")
    if kind == _FLOAT:
        return pd.to_numeric(series.replace("", np.nan), errors="raise").astype("float64")
    if kind == _BOOL:
        bad = set(series) - {"true", "false"}
        if bad:
            raise ValueError(f"bad boolean values {sorted(bad)}")
        return series.eq("true").astype(bool)
    if kind == _FRAME:
        return pd.Series([_frame(v) for v in series], index=series.index, dtype=object, name=series.name)
    raise AssertionError(kind)


def load(name: str) -> pd.DataFrame:
    """Load a reference table by name.

    Parameters
    ----------
    name : str
        One of :func:`table_names` (e.g. ``"models_throughput"``), or a figure
        alias such as ``"fig10"`` / ``"Figure 10"``.

    Returns
    -------
    pandas.DataFrame
        The table with typed columns (see the per-table functions), rows in the
        CSV's (stable, published) order and a fresh ``RangeIndex``.

    Raises
    ------
    KeyError
        Unknown table name.
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _SCHEMAS:
        raise KeyError(f"unknown reference table {name!r}; use one of {table_names()}")
    filename, schema = _SCHEMAS[key]
    raw = pd.read_csv(
        reference_dir() / filename, dtype=str, keep_default_na=False, na_values=[], encoding="utf-8"
    )
    if list(raw.columns) != list(schema):
        raise ValueError(f"{filename}: columns {list(raw.columns)} != expected {list(schema)}")
    df = pd.DataFrame({col: _convert(raw[col], kind) for col, kind in schema.items()})
    return df.reset_index(drop=True)


def models_throughput() -> pd.DataFrame:
    """Draft-11 Figure 10: zero-packet-loss throughput of four networking models.

    28 rows (4 models x 7 frame sizes), model-major in the draft's column order.

    Returns
    -------
    pandas.DataFrame
        source : str
            ``"draft-dcn-bmwg-containerized-infra-11"``.
        table : str
            ``"Figure 10"``.
        model : str
            Stable id: ``userspace-vpp``, ``ebpf-ovs-afxdp``, ``ebpf-afxdp-cni``,
            ``smartnic-sriov``.
        model_label : str
            The draft's label, e.g. ``"eBPF (AFXDP CNI)"``.
        frame_size : int
            Ethernet frame size in bytes incl. FCS (RFC 2544): 64 ... 1518.
        throughput_gbps : float
            Published zero-loss throughput, Gbit/s (the draft does not say
            whether L1 or L2; see :func:`published_pps`).
    """
    return load("models_throughput")


def pinning_numa() -> pd.DataFrame:
    """Draft-11 Figure 13: CPU pinning x NUMA alignment, single pod, 1518 B.

    12 rows in the draft's row order (Without CMK, CMK-Exclusive, CMK-shared)
    x s1..s4. Use :data:`PINNING_ORDER` for a none/shared/exclusive ordering.

    Returns
    -------
    pandas.DataFrame
        source, table : str
            Provenance (``table == "Figure 13"``).
        pinning : str
            ``none`` (Without CMK), ``shared`` (CMK-shared Mode),
            ``exclusive`` (CMK-Exclusive Mode).
        pinning_label : str
            The draft's row label, verbatim.
        scenario : str
            NUMA scenario ``s1``..``s4`` (defined by :func:`numa_scenarios` ``"single"``).
        frame_size : int
            1518.
        throughput_gbps : float
            Published zero-loss throughput, Gbit/s.
    """
    return load("pinning_numa")


def combination_throughput() -> pd.DataFrame:
    """Draft-11 Figure 16: Userspace (VPP) vs Combined (SRIOV-VPP), multi-pod.

    14 rows (2 models x 7 frame sizes).

    Returns
    -------
    pandas.DataFrame
        source, table : str
            Provenance (``table == "Figure 16"``).
        model : str
            ``userspace-vpp`` or ``combined-sriov-vpp``.
        model_label : str
            ``"Userspace (VPP)"`` / ``"Combined (SRIOV-VPP)"``.
        frame_size : int
            Frame size in bytes incl. FCS.
        throughput_gbps : float
            Published zero-loss throughput, Gbit/s.
    """
    return load("combination_throughput")


def multipod_numa() -> pd.DataFrame:
    """Draft-11 Figure 17: NUMA alignment in the multi-pod experiment, 1518 B.

    6 rows, s1..s6 (scenarios of :func:`numa_scenarios` ``"multi"``). The
    draft's caption says "single pod scenario"; it is the multi-pod experiment
    of Appendix C.2 (recorded in ``note``).

    Returns
    -------
    pandas.DataFrame
        source, table : str
            Provenance (``table == "Figure 17"``).
        scenario : str
            ``s1``..``s6``.
        frame_size : int
            1518.
        throughput_gbps : float
            Published zero-loss throughput, Gbit/s.
        note : str
            The caption quirk.
    """
    return load("multipod_numa")


def numa_scenarios(kind: str = "single") -> pd.DataFrame:
    """NUMA placement of each scenario: Figure 12 (single pod) or 15 (multi-pod).

    Parameters
    ----------
    kind : {"single", "multi"}
        ``"single"``: Figure 12, s1..s4; ``"multi"``: Figure 15, s1..s6.

    Returns
    -------
    pandas.DataFrame
        source, table : str
            Provenance.
        scenario : str
            Intended scenario id (``s1``...).
        label_in_draft : str
            The label the draft prints; Figure 15 prints ``s4`` for rows 4-6.
        nic_numa, vswitch_numa : int
            NUMA node (0 or 1) of the NIC and of the VPP vSwitch.
        pod_numa : int
            (single) NUMA node of the l2fwd pod.
        pod1_numa, pod2_numa : int
            (multi) NUMA nodes of the two pods.
        note : str
            Transcription quirk of the row, or empty.
    """
    if kind not in ("single", "multi"):
        raise ValueError(f"kind must be 'single' or 'multi', not {kind!r}")
    return load(f"numa_scenarios_{kind}")


def density_mrr() -> pd.DataFrame:
    """Density note: every MRR service-density matrix, one row per cell.

    864 rows = 2 testbeds x 2 ``pcdr4sw`` x 3 topologies x 2 frame sizes x
    6 x 6 cells, in the note's order (testbed section, topology, 64B then IMIX,
    row-major). Non-values never become numbers: ``mrr_mpps`` is NaN and
    ``status`` says why.

    Returns
    -------
    pandas.DataFrame
        source : str
            ``"nfv-service-density-note (cncf-cnfs-results-summary.md)"``.
        table : str
            The section heading, e.g. ``"FD.io CSIT 2n-skx, pcdr4sw = (1:1)"``.
        testbed_id : str
            ``csit-2n-skx-t22`` or ``equinix-2n-skx``.
        testbed : str
            ``"FD.io CSIT 2n-skx"`` / ``"Equinix Metal 2n-skx"``.
        testbed_hosts : str
            ``"t22"`` / ``"tg-quad01, sut-quad02-sut"``.
        cpu : str
            ``"Xeon Platinum 8180"`` / ``"Xeon Gold 6150"`` (from Environments).
        pcdr4sw, pcmr4sw, pcdr4nf, pcmr4nf : str
            Core ratios as published, ``"(1:1)"`` etc. (see :mod:`nfvlab.scenario.density`).
        topology : str
            ``VSC`` (VNF service chain), ``CSC`` (CNF service chain), ``CSP``
            (CNF service pipeline).
        frame_size : int or str (object column)
            ``64`` (bytes incl. FCS) or ``"IMIX"`` -- the values
            :func:`nfvlab.linerate.mean_frame_bytes` accepts.
        instances : int
            Matrix row: service instances (1, 2, 4, 6, 8, 10).
        nfs_per_instance : int
            Matrix column: NFs per service instance (1, 2, 4, 6, 8, 10).
        total_nfs : int
            ``instances * nfs_per_instance``.
        mrr_mpps : float
            Maximum receive rate, Mpps (bi-directional offered load); NaN
            unless ``status == "measured"``.
        status : str
            ``measured``; ``not_measured`` (``???``, "to be measured");
            ``impossible`` (``---``, out of physical cores).
        warmup_retries : bool
            The ``*`` suffix: many retries of nfvbench's warm-up phase.
            ``???*`` is not_measured *and* flagged.
        raw : str
            The cell text as published (``"6.9*"``, ``"???"``, ``"---"``).
    """
    return load("density_mrr")


def density_nf_view() -> pd.DataFrame:
    """Density note: "Service Density Matrix - Network Function View".

    36 rows (instances x NFs per instance).

    Returns
    -------
    pandas.DataFrame
        source, table : str
            Provenance.
        instances, nfs_per_instance : int
            Matrix row and column (1, 2, 4, 6, 8, 10).
        total_nfs : int
            Published value: total NFs on the node.
    """
    return load("density_nf_view")


def density_core_view() -> pd.DataFrame:
    """Density note: "Service Density Matrix - Core Usage View".

    36 rows. The published values equal ``ceil(1.5 * total_nfs)``: NF cores
    only at ``pcdr4nf=(1:1), pcmr4nf=(1:2)``, rounded up on the node total,
    *excluding* the switch's cores even though the view lists the switch ratios
    (see :mod:`nfvlab.scenario.density`).

    Returns
    -------
    pandas.DataFrame
        source, table : str
            Provenance.
        pcdr4sw, pcmr4sw, pcdr4nf, pcmr4nf : str
            The ratios the view states (``(1:1)``, ``(1:1)``, ``(1:1)``, ``(1:2)``).
        instances, nfs_per_instance : int
            Matrix row and column.
        physical_cores : int
            Published value.
    """
    return load("density_core_view")


def published_pps(
    df: pd.DataFrame,
    *,
    layer: int,
    rate: str = "throughput_gbps",
    frame: str = "frame_size",
) -> pd.Series:
    """Packets/s equivalent of published Gbit/s figures.

    The draft does not say whether its Gbps are L1 (frame + 20 B preamble/IFG)
    or L2 (frame incl. FCS), so ``layer`` has no default.

    Parameters
    ----------
    df : pandas.DataFrame
        A table with a rate column in Gbit/s and a frame-size column.
    layer : {1, 2}
        Interpret the rate as L1 or L2 bits (:func:`nfvlab.linerate.gbps_to_pps`).
    rate, frame : str
        Column names.

    Returns
    -------
    pandas.Series
        Frames/s (float; NaN where the rate is NaN), named ``pps_l1`` / ``pps_l2``,
        aligned with ``df``'s index.
    """
    if layer not in (1, 2):
        raise ValueError(f"layer must be 1 or 2, not {layer!r}")
    values = [
        math.nan if pd.isna(r) else linerate.gbps_to_pps(float(r), f if isinstance(f, str) else int(f), layer=layer)
        for r, f in zip(df[rate], df[frame])
    ]
    return pd.Series(values, index=df.index, dtype="float64", name=f"pps_l{layer}")


def with_pps(df: pd.DataFrame, *, layer: int, rate: str = "throughput_gbps", frame: str = "frame_size") -> pd.DataFrame:
    """Copy of ``df`` with a ``throughput_mpps_l{layer}`` column (Mpps) added.

    See :func:`published_pps` for the arguments.
    """
    out = df.copy()
    out[f"throughput_mpps_l{layer}"] = published_pps(df, layer=layer, rate=rate, frame=frame) / 1e6
    return out


#: Name -> loader function, for iteration.
LOADERS: dict[str, Callable[[], pd.DataFrame]] = {name: (lambda n=name: load(n)) for name in TABLES}
