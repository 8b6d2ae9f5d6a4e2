"""What the command families share: the one-line error, output checks, and the lab profile and scenario
the arguments name."""
from __future__ import annotations

from pathlib import Path

from nfvlab import params as P
from nfvlab.scenario.catalogue import DEFAULT_MODEL

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


class CliError(Exception):
    """A one-line user-facing error."""


def _check_outputs(**outputs) -> None:
    """CliError unless each ``flag=(path, "file"|"dir")`` can be written; run before anything is created."""
    from nfvlab.system.paths import output_problem

    for flag, (path, kind) in outputs.items():
        if path is not None:
            problem = output_problem(Path(path), kind)
            if problem:
                raise CliError(f"--{flag.replace('_', '-')} {problem}")


def _lab_params(a) -> P.LabParams:
    return P.load(a.lab_profile, P.LabParams) if getattr(a, "lab_profile", None) else P.LabParams()


def _resources(a):
    """The resource knobs of the command line (validated like a params file)."""
    from nfvlab.scenario import Resources

    knobs = P.validate(P.ResourceParams, {"pinning": [a.pinning], "numa": [a.numa],
                                          "noisy_load_pct": a.noisy_load_pct,
                                          "hugepages": a.hugepages}, "arguments")
    return Resources(pinning=a.pinning, numa=a.numa, noisy_load_pct=knobs.noisy_load_pct,
                     hugepages=a.hugepages)


def _scenario(a):
    from nfvlab.scenario import MODEL_NAMES, Scenario

    if getattr(a, "port", None):
        return Scenario("external", _resources(a))
    model = a.model if a.model is not None else DEFAULT_MODEL
    if model not in MODEL_NAMES:
        raise CliError(f"--model: unknown model {model!r}: use one of {', '.join(MODEL_NAMES)} (see `nfvlab lab models`)")
    return Scenario(model, _resources(a), density=_density(getattr(a, "density", None)))


def _density(text):
    """``--density csp:1x2`` as a density cell (bounds as a params file's ``density:``)."""
    import re

    from nfvlab.scenario import DensityCell

    if text is None:
        return None
    m = re.fullmatch(r"(csc|csp):(\d{1,2})x(\d{1,2})", text)
    if not m or not (1 <= int(m[2]) <= 10 and 1 <= int(m[3]) <= 10):
        raise CliError(f"--density {text!r}: use TOPO:IxN with TOPO csc or csp and I, N in 1..10, e.g. csp:1x2")
    return DensityCell(m[1], int(m[2]), int(m[3]))
