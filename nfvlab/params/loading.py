"""Reading params files: safe YAML (size, depth, no tags or aliases) -> a validated model.

:func:`load` reads any params file into its model; :func:`load_experiment` an experiment's,
with the lab profile as its ``lab:``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

import yaml
from pydantic import BaseModel

from nfvlab.params.base import ParamsError, validate
from nfvlab.params.experiment import ExperimentParams
from nfvlab.params.lab import LabParams


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


#: Largest params file read, bytes (ours are a few kB).
MAX_PARAMS_BYTES = 1 << 20
#: Deepest nesting of mappings/sequences in a params file (ours: 4).
MAX_PARAMS_DEPTH = 32


def _read_text(path: Path) -> str:
    """The text of a params file: a regular file, at most :data:`MAX_PARAMS_BYTES`, UTF-8, no NUL."""
    try:
        if path.exists() and not path.is_file():
            raise ParamsError(f"{path}: not a regular file (give a YAML params file)")
        with open(path, "rb") as f:
            raw = f.read(MAX_PARAMS_BYTES + 1)
    except OSError as err:
        raise ParamsError(f"{path}: cannot read ({err.strerror or err})") from None
    if len(raw) > MAX_PARAMS_BYTES:
        raise ParamsError(f"{path}: larger than {MAX_PARAMS_BYTES} bytes; a params file is a few kB of YAML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text (byte {err.start}); a params file is YAML") from None
    if "\0" in text:
        raise ParamsError(f"{path}: contains NUL bytes; a params file is YAML text")
    return text


def _check_yaml_shape(text: str) -> None:
    """Nesting depth, tags and aliases, from the event stream (iterative: no recursion on deep input)."""
    depth = 0
    for ev in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_PARAMS_DEPTH:
                raise ValueError(f"nested deeper than {MAX_PARAMS_DEPTH} levels",
                                 ev.start_mark.line)
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None):
            raise ValueError("anchors and aliases (&, *) are not allowed", ev.start_mark.line)
        tag = getattr(ev, "tag", None)
        # Only an explicit tag in the text sets it (plain scalars leave it None).
        if tag is not None and not (isinstance(ev, yaml.ScalarEvent) and ev.implicit[0]):
            raise ValueError(f"YAML tags ({tag}) are not allowed", ev.start_mark.line)


def _read_mapping(path: Path) -> dict:
    """A params file's top-level mapping; one-line ParamsError if it cannot be read or is not one.

    Read safely: a regular file of at most :data:`MAX_PARAMS_BYTES`, UTF-8, nested
    at most :data:`MAX_PARAMS_DEPTH` deep, without YAML tags, anchors or aliases.
    """
    text = _read_text(path)
    try:
        _check_yaml_shape(text)
    except ValueError as err:
        raise ParamsError(f"{path}: line {err.args[1] + 1}: {err.args[0]}") from None
    except yaml.YAMLError:
        pass  # safe_load below reports it with its line
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ParamsError(f"{path}:{where} not valid YAML ({getattr(err, 'problem', err)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: top level must be a mapping of keys, got {type(data).__name__}")
    return data


def load(path: Union[str, Path], model: type[BaseModel] = ExperimentParams,
         overrides: Optional[dict] = None) -> Any:
    """Read a YAML params file into ``model``; one-line :class:`ParamsError` on any problem.

    ``overrides`` (nested dict, e.g. papermill parameters) is merged into the
    file's data before validation, so errors still name the file and key.
    """
    path = Path(path)
    data = _read_mapping(path)
    if overrides:
        data = _merge(data, overrides)
    return validate(model, data, str(path) + (" (with overrides)" if overrides else ""))


def load_experiment(path: Union[str, Path], lab_profile: Optional[Union[str, Path]] = "params/lab.yaml",
                    overrides: Optional[dict] = None) -> ExperimentParams:
    """An experiment's params file with the lab profile as its ``lab:``.

    Precedence: ``overrides`` (papermill parameters) > the experiment file's own
    ``lab:`` keys > the lab profile. A key the experiment file and the profile
    both set to *different* values is an error naming both files (the profile
    says where experiments run; an experiment that disagrees must say so
    explicitly, through ``overrides``). Every error is one line naming the file and key.
    """
    merged: dict = {}
    if lab_profile is not None:
        lab = load(lab_profile, LabParams)
        profile = lab.model_dump(exclude_unset=True)
        own = _read_mapping(Path(path)).get("lab") or {}
        if isinstance(own, dict):
            clash = [k for k in own if k in profile and own[k] != profile[k]]
            if clash:
                k = clash[0]
                raise ParamsError(f"{path}: lab.{k}: {own[k]!r} disagrees with the lab profile "
                                  f"{lab_profile} ({profile[k]!r}): remove it from one of them")
        merged = {"lab": _merge(profile, own) if isinstance(own, dict) else profile}
    return load(path, ExperimentParams, overrides=_merge(merged, overrides or {}) or None)
