"""Where the report finds its inputs: each experiment's records file, its tables and figures folders."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import pandas as pd

from nfvlab import experiments

PathLike = Union[str, Path]


def kubernetes_stem(letter: str) -> str:
    """Records, tables and figures of experiment ``letter`` on the Kubernetes lab (the
    ``experiment_kubernetes`` and ``analysis_kubernetes`` stages): ``experiment_<x>_kubernetes``."""
    return f"experiment_{letter}_kubernetes"


def records_names() -> dict[str, str]:
    """The records of each experiment (and of those also run on the Kubernetes lab):
    ``<records_dir>/<name>.jsonl``."""
    out = {}
    for letter, exp in experiments.REGISTRY.items():
        out[letter] = f"experiment_{letter}"
        if exp.kubernetes_table:
            out[f"{letter} (Kubernetes)"] = kubernetes_stem(letter)
    return out


def read_table(path: Path) -> pd.DataFrame:
    """An analysis table (CSV) as written."""
    return pd.read_csv(path, keep_default_na=True)


def own_dir(base: Path, letter: str) -> Path:
    """Experiment ``letter``'s folder under ``base`` (``experiment_<x>/``, as the pipeline writes), else ``base``."""
    own = base / f"experiment_{letter}"
    return own if own.is_dir() else base


def records_dir_for(tables_dir: PathLike, records_dir: Optional[PathLike]) -> Path:
    """``records_dir``, or by default ``<tables_dir>/../raw``."""
    # The pipeline keeps records in data/raw beside data/tables.
    return Path(records_dir) if records_dir is not None else Path(tables_dir).parent / "raw"
