"""Typed, validated parameters: YAML params files -> pydantic models.

Every params file (``params/*.yaml``) and every CLI invocation goes through these
models, so bad input is rejected in one place, before any lab resource exists,
with a one-line message naming the file, the key and what is allowed::

    params/a.yaml: traffic.frame_sizes.2: 63 is outside 64..9018 (or "IMIX")

Unknown keys, wrong types and out-of-range values are all errors.

One concept per module; every public name is re-exported here (``nfvlab.params.X``):

* :mod:`~nfvlab.params.base` -- :class:`ParamsError`, :func:`validate`, :func:`format_error`,
  the strict base model and shared field types (frame size, model name);
* :mod:`~nfvlab.params.measurement` -- :class:`TrafficParams`, :class:`TrialParams`, :class:`SearchParams`;
* :mod:`~nfvlab.params.generator` -- :class:`GeneratorParams` (embedded), :class:`TrexParams`;
* :mod:`~nfvlab.params.lab` -- the lab profile: :class:`LabParams`, :class:`KubernetesParams`,
  :class:`K8sPlacement`;
* :mod:`~nfvlab.params.experiment` -- :class:`ExperimentParams`, :class:`ResourceParams`,
  :class:`DensityParams`, :class:`SearchControl`, and the pipeline's :class:`CalibrationParams`, :class:`ProfileParams`,
  :class:`ReferenceParams`;
* :mod:`~nfvlab.params.cni` -- experiment E's :class:`CniExperimentParams`;
* :mod:`~nfvlab.params.adaptive` -- :class:`AdaptiveParams`, an experiment's ``adaptive:`` section;
* :mod:`~nfvlab.params.paired` -- :class:`PairedParams`, an experiment's ``paired:`` section;
* :mod:`~nfvlab.params.loading` -- safe YAML reading: :func:`load`, :func:`load_experiment`.
"""
from nfvlab.params.adaptive import AdaptiveParams
from nfvlab.params.base import (
    FrameSize,
    ModelName,
    ParamsError,
    PositiveFloat,
    format_error,
    parse_frame_size,
    validate,
)
from nfvlab.params.cni import CniExperimentParams
from nfvlab.params.experiment import (
    CalibrationParams,
    DensityParams,
    ExperimentParams,
    NumaScenario,
    ProfileParams,
    Ratio,
    ReferenceParams,
    ResourceParams,
    SearchControl,
)
from nfvlab.params.generator import AnyGenerator, GeneratorParams, TrexParams
from nfvlab.params.lab import K8sPlacement, KubernetesParams, LabParams
from nfvlab.params.loading import MAX_PARAMS_BYTES, MAX_PARAMS_DEPTH, load, load_experiment
from nfvlab.params.measurement import SearchParams, TrafficParams, TrialParams
from nfvlab.params.paired import PairedParams

__all__ = [
    "MAX_PARAMS_BYTES",
    "MAX_PARAMS_DEPTH",
    "AdaptiveParams",
    "AnyGenerator",
    "CalibrationParams",
    "CniExperimentParams",
    "DensityParams",
    "ExperimentParams",
    "FrameSize",
    "GeneratorParams",
    "PairedParams",
    "K8sPlacement",
    "KubernetesParams",
    "LabParams",
    "ModelName",
    "NumaScenario",
    "ParamsError",
    "PositiveFloat",
    "ProfileParams",
    "Ratio",
    "ReferenceParams",
    "ResourceParams",
    "SearchControl",
    "SearchParams",
    "TrafficParams",
    "TrexParams",
    "TrialParams",
    "format_error",
    "load",
    "load_experiment",
    "parse_frame_size",
    "validate",
]
