"""One line per bad field of a scene, from pydantic's errors.

pydantic reports an error inside a union with parts of its own in the location: the tag
of a discriminated union (a group's or bond set's ``kind``), and for any other union one
error per member it tried, each under the member's label (``constrained-float``,
``list[constrained-float]``). :func:`schema_errors` names the field only: the tags are
left out, and a union's errors become those of the member the value's type fits (or one
line saying what the field allows, the field's ``description``).
"""

from __future__ import annotations

import numbers
import types
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..checks import field_path, schema_message, shown


def _alternatives(tp) -> list:
    """The types a value of annotation ``tp`` may have: ``Annotated`` unwrapped, a union
    split into its members, ``None`` left out."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        return [a for m in get_args(tp) if m is not type(None) for a in _alternatives(m)]
    return [tp]


def _is_model(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _inner(alternatives, part):
    """One level down from ``alternatives`` at location part ``part`` (a field of a model,
    an index of a list, a key of a dict): ``(slot, alternatives)``, ``slot`` the
    annotation there and its description (a model field's ``description``, else
    ``None``); ``(None, None)`` where the schema has nothing there."""
    for tp in alternatives:
        origin = get_origin(tp)
        if _is_model(tp) and isinstance(part, str) and part in tp.model_fields:
            field = tp.model_fields[part]
            return (field.annotation, field.description), _alternatives(field.annotation)
        if origin is list and isinstance(part, int):
            return (get_args(tp)[0], None), _alternatives(get_args(tp)[0])
        if origin is dict and isinstance(part, str):
            return (get_args(tp)[1], None), _alternatives(get_args(tp)[1])
    return None, None


def _locate(loc, root):
    """Read a pydantic location against the schema of the model ``root``.

    Returns ``(parts, union)``: the location without the parts pydantic inserts, and for
    an error inside a (non-discriminated) union, ``(length, slot)``: the first ``length``
    parts lead to the union, ``slot`` is its annotation and description; else ``None``.
    A part the schema does not know (an unknown key) ends the walk; later parts are kept
    as they are.
    """
    parts, alts, slot = [], [root], None
    for k, part in enumerate(loc):
        if alts is None:
            parts.extend(loc[k:])
            break
        if len(alts) > 1 and all(_is_model(a) for a in alts):  # a discriminated union: the tag
            chosen = [a for a in alts if part in get_args(a.model_fields["kind"].annotation)]
            if chosen:
                alts = chosen
                continue
        elif len(alts) > 1 and slot is not None:  # a member's label: the errors of one member
            return parts, (len(parts), slot)
        parts.append(part)
        slot, alts = _inner(alts, part)
    return parts, None


def _raw(data, parts):
    """The value at ``parts`` (keys and indices) of the scene as given."""
    for part in parts:
        data = data[part]
    return data


def _fits(tp, value) -> bool:
    """Whether ``value`` is of the kind of ``tp`` (a number, a list, a string, a table),
    whatever its entries: the union member whose errors describe it."""
    origin = get_origin(tp) or tp
    if origin is list:
        return isinstance(value, (list, tuple))
    if origin in (float, int):
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if origin is str:
        return isinstance(value, str)
    return isinstance(value, dict) and (origin is dict or _is_model(origin))


def _union_errors(path, slot, value) -> list:
    """One error per bad entry of the union member ``value`` fits, else one line saying
    what the union allows (its description)."""
    annotation, description = slot
    for tp in _alternatives(annotation):
        if _fits(tp, value):
            member = next(m for m in get_args(annotation) if tp in _alternatives(m))
            try:
                TypeAdapter(member).validate_python(value)
            except ValidationError as exc:
                return [(field_path(e["loc"], root=path), schema_message(e)) for e in exc.errors()]
    allowed = description or " or ".join(getattr(a, "__name__", str(a)) for a in _alternatives(annotation))
    return [(path, f"must be {allowed} (got {shown(value)})")]


def schema_errors(exc: ValidationError, data: dict, root) -> list:
    """``(path, message)`` per bad field of the scene ``data`` validated as the model
    ``root``: one line each, in the order pydantic found them."""
    out, unions = [], set()
    for e in exc.errors():
        parts, union = _locate(e["loc"], root)
        if union is None:
            out.append((field_path(parts), schema_message(e)))
            continue
        length, slot = union
        where = tuple(parts[:length])
        if where in unions:  # every member's error of this value: reported once
            continue
        unions.add(where)
        try:
            value = _raw(data, where)
        except (KeyError, IndexError, TypeError):  # not reached by a dict as parsed from TOML
            value = e.get("input")
        out.extend(_union_errors(field_path(where), slot, value))
    return out
