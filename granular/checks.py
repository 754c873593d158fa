"""Argument checks shared by the particle integrators and the body schemes: each names the
argument and what is allowed. Imports nothing of the package."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["check_step", "count"]


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
