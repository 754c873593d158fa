"""Argument checks shared by the particle integrators and the body schemes: each names the
argument and what is allowed; and the wording of schema errors shared by the scene
parsers (:func:`shown`, :func:`field_path`, :func:`schema_message`). Imports nothing of
the package."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["check_step", "count", "field_path", "schema_message", "shown"]


def check_step(h) -> float:
    """``h`` as a float; ``ValueError`` unless it is a real number (not a bool or a string),
    finite and > 0."""
    if isinstance(h, (bool, np.bool_)) or not isinstance(h, numbers.Real):
        raise ValueError(f"h: the time step must be a number, got {h!r}")
    hf = float(h)
    if not (math.isfinite(hf) and hf > 0.0):
        raise ValueError(f"h: the time step must be finite and > 0, got {h!r}")
    return hf


def count(k, name, low) -> int:
    """``k`` as an int >= ``low`` (a whole number, not a bool); ``ValueError`` naming ``name``."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise ValueError(f"{name} must be an int >= {low}, got {k!r}")
    if k < low:
        raise ValueError(f"{name} must be an int >= {low}, got {k!r}")
    return int(k)


def shown(value, limit=60) -> str:
    """``repr(value)``, cut to ``limit`` characters (for "(got ...)" in a message)."""
    s = repr(value)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def field_path(loc, root="", skip=None) -> str:
    """``a.b[1].c`` from a pydantic error location, under ``root`` (e.g. ``"bodies"``);
    ``skip(k, loc)`` drops parts pydantic inserts (union tags, validator names)."""
    out = root
    for k, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif skip is not None and skip(k, loc):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def schema_message(err, schema="the schema") -> str:
    """The message of one pydantic error: an unknown key, a missing field, or pydantic's
    own words with the offending value."""
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"unknown key (not part of {schema}; check the spelling)"
    if kind == "missing":
        return "required field is missing"
    return f"{err['msg']} (got {shown(err.get('input'))})"
