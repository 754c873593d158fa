"""Standard JSON for every file and JSON line granular writes.

Python's :mod:`json` writes NaN and the infinities as the bare words ``NaN``,
``Infinity`` and ``-Infinity``, which are not JSON (RFC 8259): strict parsers refuse
the whole file (JavaScript's ``JSON.parse``, ``jq``, Go, Rust's serde). Yet such values
are legitimate here: a bond family without a strain limit has ``strain_max = inf``, a
measured error can be NaN.

So a non-finite float is written as the *string* ``"NaN"``, ``"Infinity"`` or
``"-Infinity"`` (the spelling of pydantic's ``ser_json_inf_nan="strings"``; JavaScript's
``Number()`` and Python's ``float()`` turn each back into the number), and everything is
dumped with ``allow_nan=False``, so a value that escaped the conversion raises instead of
writing a file other programs cannot read. :func:`loads` turns those three strings back
into floats, so what granular wrote reads back as it was (an infinite strain limit comes
back infinite; a string that is exactly one of the three comes back as the number too).
Values that mean "none" are written as ``null`` by their writers (the stable-step
estimate's ``h_max`` without a limit, a rate not yet measured).

NumPy scalars and arrays are written as numbers and lists, tuples as lists.
"""

from __future__ import annotations

import json
import math

import numpy as np

__all__ = ["NONFINITE", "decode", "dumps", "encode", "loads"]

#: How non-finite floats are written, and read back.
NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _name(x: float) -> str:
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def encode(obj, default=None):
    """``obj`` as plain JSON values: non-finite floats as the strings of
    :data:`NONFINITE`, NumPy scalars and arrays as numbers and lists, tuples as lists.
    ``default(o)``: what to put for any other object (its result is encoded in turn);
    without it such objects are left for :func:`json.dumps` to refuse."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, float):  # np.float64 too
        return float(obj) if math.isfinite(obj) else _name(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, dict):
        return {(encode(k) if isinstance(k, float) else k): encode(v, default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v, default) for v in obj]
    if isinstance(obj, np.ndarray):
        return encode(obj.tolist(), default)
    if isinstance(obj, np.generic):
        return encode(obj.item(), default)
    if default is not None:
        return encode(default(obj), default)
    return obj


def dumps(obj, default=None, **kwargs) -> str:
    """Standard JSON text of ``obj`` (:func:`encode`, then :func:`json.dumps` with
    ``allow_nan=False`` and ``kwargs``: ``indent``, ``sort_keys``, ...)."""
    return json.dumps(encode(obj, default), allow_nan=False, **kwargs)


def decode(obj):
    """``obj`` (parsed JSON) with the strings of :data:`NONFINITE` back as floats."""
    if isinstance(obj, str):
        return NONFINITE.get(obj, obj)
    if isinstance(obj, dict):
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def loads(text):
    """Parse what :func:`dumps` wrote, with non-finite numbers back as floats. Files of
    earlier versions, with the bare words ``NaN`` and ``Infinity``, read as well."""
    return decode(json.loads(text))
