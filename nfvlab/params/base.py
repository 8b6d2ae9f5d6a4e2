"""What every params model shares: the strict base model, the one-line error, shared field types.

:class:`ParamsError` is the one error a bad params file raises; :func:`validate` turns a pydantic
``ValidationError`` into it (:func:`format_error`: ``source: key.path: message``).
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from nfvlab import linerate
from nfvlab.scenario.catalogue import MODEL_NAMES


class ParamsError(ValueError):
    """Invalid parameters; ``str(err)`` is the one-line message for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_frame_size(v: Any) -> Union[int, str]:
    """A frame size (64..9018 B, or "IMIX") from YAML or CLI text; ``ValueError`` otherwise."""
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a frame size (use 64..9018 or \"IMIX\")")
    if isinstance(v, str):
        if v.strip().upper() == "IMIX":
            return "IMIX"
        if not v.strip().isdigit():
            raise ValueError(f"{v!r} is not a frame size (use 64..9018 or \"IMIX\")")
        v = int(v)
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(f"{v} is not a whole number of bytes")
        v = int(v)
    if not isinstance(v, int):
        raise ValueError(f"{v!r} is not a frame size (use 64..9018 or \"IMIX\")")
    if not linerate.MIN_FRAME_BYTES <= v <= linerate.MAX_FRAME_BYTES:
        raise ValueError(
            f"{v} is outside {linerate.MIN_FRAME_BYTES}..{linerate.MAX_FRAME_BYTES} (or \"IMIX\")"
        )
    return v


def _check_model(v: Any) -> str:
    if v not in MODEL_NAMES:
        raise ValueError(f"unknown model {v!r} (allowed: {', '.join(MODEL_NAMES)})")
    return v


FrameSize = Annotated[Union[int, str], BeforeValidator(parse_frame_size)]
"""A frame size in bytes incl. FCS (64..9018) or ``"IMIX"``."""
ModelName = Annotated[str, BeforeValidator(_check_model)]
"""A model name from :mod:`nfvlab.scenario.catalogue`."""
PositiveFloat = Annotated[float, Field(gt=0)]

_MAC = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
"""A MAC address ``aa:bb:cc:dd:ee:ff`` (TRex's L2 destinations, a Kubernetes lab's generator ports)."""


def format_error(err: ValidationError, source: str) -> str:
    """One line: ``source: key.path: message[; more ...]``."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key missing"
        elif "input" in e and e["type"] not in ("value_error",) and not isinstance(e["input"], (dict, list)):
            msg = f"{msg} (got {e['input']!r})"
        parts.append(f"{loc}: {msg}")
    return f"{source}: " + "; ".join(parts)


def validate(model: type[BaseModel], data: Any, source: str = "params") -> Any:
    """Validate ``data`` as ``model``; raise :class:`ParamsError` with a one-line message."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ParamsError(format_error(err, source)) from None
