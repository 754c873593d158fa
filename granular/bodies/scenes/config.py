"""The ``[bodies]`` table of a scene file, second pass: array-valued keys and physics.

Runs the pydantic pass of :mod:`granular.bodies.scenes.schema`, then checks the keys that
take arrays, which may be given once (shared by every body) or as a list with one entry
per body: every entry must be a finite number (error paths down to the element,
``bodies.inertia[1][2]``), the shape must be one of the allowed ones, per-body lists must
agree with ``count`` (or with each other), and the physics must make sense: unit
quaternions, symmetric positive-definite inertia, and each scheme's own restrictions
(positive-definite Euler coefficients for the director formulation (111); the
non-twisting body's split inertia (32) and zero initial twist (82); rails with
orthonormal in-plane axes). Every problem of both passes is reported at once.

:func:`parse_bodies` returns a :class:`BodiesConfig` (the validated model and host arrays
with one row per body) or raises :class:`~granular.errors.SceneError`.

The ``[bodies.random]`` sampler: ``d = rng.normal(0, s, (N, 3))`` (or
``rng.uniform(-s, s, (N, 3))``) with ``rng = numpy.random.default_rng(seed)`` and
``s = omega_scale`` is added to the initial angular velocity of every body, in the frame
of the key the scene gave (``omega``: spatial, the default; ``omega_body``: body); for the
non-twisting body the component along d3 is removed so that (82) holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from ... import rotations as rot
from ...checks import shown
from ...errors import SceneError
from ...resources import ResourceError, check_body_memory
from ..rolling_ball import rails as R
from .schema import (
    _ADAPTER,
    LOAD_PRESETS,
    SCHEMES,
    UNIT_TOL,
    _message,
    _path,
    make_actuation,
    make_rail,
    scheme_unavailable,
)

# kind -> (allowed shared shapes, per-body shape or None, text for the messages)
_KINDS = {
    "vec3": ([(3,)], (3,), "3 numbers [x, y, z] (shared by all bodies) or a list of them, one per body"),
    "vec2": ([(2,)], (2,), "2 numbers [x, y] (shared by all bodies) or a list of them, one per body"),
    "quat": ([(4,)], (4,), "a unit quaternion [q0, q1, q2, q3] (shared) or a list of them, one per body"),
    "scalar": ([()], (), "a number (shared by all bodies) or a list of numbers, one per body"),
    "inertia": ([(3,), (3, 3)], (3, 3), "3 principal moments [J1, J2, J3], a 3x3 tensor, or a list of 3x3 tensors "
                "(one per body)"),  # fmt: skip
}
#: scheme -> {key: kind} of its array-valued keys
ARRAY_KEYS = {
    "directors": {"inertia": "inertia"},
    "nontwisting": {"inertia": "inertia"},
    "ulvc": {"inertia": "inertia", "mass": "scalar", "position": "vec3", "velocity": "vec3"},
    "livens": {"inertia": "inertia", "mass": "scalar", "center_of_mass": "vec3", "position": "vec3"},
    "rolling_ball": {"inertia": "inertia", "xy": "vec2"},
}
_COMMON_ARRAYS = {"orientation": "quat", "rotvec": "vec3", "omega": "vec3", "omega_body": "vec3"}


@dataclass
class BodiesConfig:
    """A validated ``[bodies]`` table, resolved to host arrays with one row per body.

    table: the pydantic model of the scheme. count: number of bodies N.
    inertia: (N, 3, 3) float64 [M L²]. quaternion: (N, 4) unit quaternions, body → spatial.
    R: (N, 3, 3) rotation matrices. omega: (N, 3) spatial angular velocity [1/T] and
    omega_body: (N, 3) body angular velocity [1/T], with ``given`` naming the one the scene
    set (``"omega"``, ``"omega_body"`` or ``None``: both 0); the other is derived from it.
    offsets: (N, 3) where the bodies are shown (and, for schemes that translate, start) [L].
    arrays: other array-valued keys, each (N, ...) float64. load: (N,) preset names.
    """

    table: Any
    count: int
    inertia: np.ndarray
    quaternion: np.ndarray
    R: np.ndarray
    omega: np.ndarray
    omega_body: np.ndarray
    given: str | None
    offsets: np.ndarray
    arrays: dict = field(default_factory=dict)
    load: list = field(default_factory=list)

    @property
    def scheme(self) -> str:
        return self.table.scheme


# ----------------------------------------------------------------------------- arrays


def _numbers(value, path, errors):
    """Nested lists of finite real numbers → float64 array; None (and errors naming each
    bad element) otherwise."""
    bad = []

    def walk(v, p):
        if isinstance(v, bool) or isinstance(v, str) or v is None:
            bad.append((p, f"expected a finite number (got {shown(v)})"))
            return None
        if isinstance(v, (int, float)):
            if not math.isfinite(v):
                bad.append((p, f"expected a finite number (got {v!r})"))
            return float(v)
        if isinstance(v, (list, tuple)):
            return [walk(x, f"{p}[{k}]") for k, x in enumerate(v)]
        bad.append((p, f"expected a number or a list of numbers (got {shown(v)})"))
        return None

    nested = walk(value, path)
    if bad:
        errors.extend(bad[:5])
        if len(bad) > 5:
            errors.append((path, f"... and {len(bad) - 5} more entries that are not finite numbers"))
        return None
    try:
        return np.array(nested, dtype=np.float64)
    except ValueError:
        errors.append((path, "rows have different lengths (a ragged list)"))
        return None


def _shape_text(shape) -> str:
    return "a number" if shape == () else "shape " + "x".join(map(str, shape))


def _check_arrays(table: dict, scheme: str, errors) -> dict:
    """Parse the array-valued keys present in ``table``; returns key -> (array, per_body)."""
    found = {}
    keys = dict(_COMMON_ARRAYS, **ARRAY_KEYS.get(scheme, {}))
    for key, kind in keys.items():
        if key not in table or table[key] is None:
            continue
        path = f"bodies.{key}"
        arr = _numbers(table[key], path, errors)
        if arr is None:
            continue
        shared, per_body, text = _KINDS[kind]
        if arr.shape in shared:
            found[key] = (arr, False)
        elif arr.ndim == len(per_body) + 1 and arr.shape[1:] == per_body and arr.shape[0] >= 1:
            found[key] = (arr, True)
        else:
            errors.append((path, f"expected {text} (got {_shape_text(arr.shape)})"))
    return found


def _check_quaternions(q, path, per_body, errors):
    norms = np.linalg.norm(q, axis=-1)
    bad = np.abs(norms - 1.0) > UNIT_TOL
    if np.any(bad):
        k = int(np.argmax(np.atleast_1d(bad)))
        where = f"{path}[{k}]" if per_body else path
        errors.append((where, f"not a unit quaternion (|q| = {float(np.atleast_1d(norms)[k]):.12g}); "
                              f"give q/|q| (tolerance {UNIT_TOL:g})"))  # fmt: skip
        return None
    return q / norms[..., None]


def _check_inertia(J, path, per_body, scheme, errors):
    """(N or 1, 3, 3) inertia from (3,), (3, 3) or (N, 3, 3); checks by the scheme's rules."""
    if J.shape == (3,):
        J = np.diag(J)
    J = J.reshape(-1, 3, 3)
    for k in range(J.shape[0]):
        where = f"{path}[{k}]" if per_body else path
        A = J[k]
        scale = np.abs(A).max()
        if not np.allclose(A, A.T, rtol=0.0, atol=1e-12 * scale):
            errors.append((where, f"the inertia tensor must be symmetric (got {A.tolist()})"))
            return None
        eig = np.linalg.eigvalsh(A)
        if not eig[0] > 0:
            errors.append((where, f"the inertia tensor must be positive definite (principal moments "
                                  f"{[float(f'{e:.6g}') for e in eig]})"))  # fmt: skip
            return None
        if scheme in ("directors", "nontwisting"):
            if not 0.5 * eig.sum() - eig[-1] > 0:
                errors.append((where, f"the director formulation needs positive-definite Euler coefficients "
                               f"½ tr(J) I - J (111): principal moments {[float(f'{e:.6g}') for e in eig]} must obey "
                               f"the strict triangle inequality J_max < J_a + J_b"))  # fmt: skip
                return None
        if scheme == "nontwisting" and abs(A[0, 2]) + abs(A[1, 2]) > 1e-12 * scale:
            errors.append((where, f"the non-twisting body needs D3 as a principal axis (32): J13 = J23 = 0 "
                                  f"(got J13 = {A[0, 2]:.6g}, J23 = {A[1, 2]:.6g})"))  # fmt: skip
            return None
    if scheme in ("directors", "nontwisting"):
        return 0.5 * (J + J.swapaxes(1, 2))
    return J


def _rows(arr, per_body, n):
    """``arr`` (shared or per-body) as an (n, ...) array (a copy)."""
    if per_body:
        return np.array(arr, dtype=np.float64)
    return np.broadcast_to(arr, (n,) + arr.shape).copy()


def _loads(value, errors):
    """``load``: a preset name or a list of them (one per body) → (list or None, per_body)."""
    allowed = ", ".join(repr(p) for p in LOAD_PRESETS)
    if isinstance(value, str):
        if value not in LOAD_PRESETS:
            errors.append(("bodies.load", f"unknown load {value!r}; allowed: {allowed}"))
            return None, False
        return [value], False
    if isinstance(value, list) and value:
        ok = True
        for k, v in enumerate(value):
            if not isinstance(v, str) or v not in LOAD_PRESETS:
                errors.append((f"bodies.load[{k}]", f"unknown load {shown(v)}; allowed: {allowed}"))
                ok = False
        return (list(value) if ok else None), True
    errors.append(("bodies.load", f"expected a load name or a list of names, one per body; allowed: {allowed} "
                                  f"(got {shown(value)})"))  # fmt: skip
    return None, False


# ----------------------------------------------------------------------------- parsing


def parse_bodies(table, source: str = "scene", check_only: bool = False):
    """Validate a ``[bodies]`` table (a dict, as from TOML).

    Returns a :class:`BodiesConfig`; raises :class:`~granular.errors.SceneError` listing
    every problem. With ``check_only`` returns the list of ``(path, message)`` pairs
    instead (empty when the table is valid).
    """

    count = table.get("count") if isinstance(table, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        try:  # before the table's arrays are made (one row per body)
            check_body_memory(count, what="this table")
        except ResourceError as exc:
            errors = [("bodies.count", str(exc))]
            if check_only:
                return errors
            raise SceneError(errors, source) from None
    errors, config = _parse(table)
    if check_only:
        return errors
    if errors:
        raise SceneError(errors, source)
    return config


def _parse(table):
    errors = []
    if not isinstance(table, dict):
        return [("bodies", f"expected a table (got {shown(table)})")], None
    scheme = table.get("scheme")
    allowed = ", ".join(repr(s) for s in SCHEMES)
    if scheme is None:
        return [("bodies.scheme", f"required field is missing; choose one of {allowed}")], None
    if scheme not in SCHEMES:
        return [("bodies.scheme", f"unknown scheme {shown(scheme)}; allowed: {allowed}")], None
    why = scheme_unavailable(scheme)
    if why is not None:
        return [("bodies.scheme", f"scheme {scheme!r} is not available in this installation: {why}")], None
    model = None
    try:
        model = _ADAPTER.validate_python(table)
    except ValidationError as exc:
        errors.extend((_path(e["loc"]), _message(e)) for e in exc.errors())
    arrays = _check_arrays(table, scheme, errors)
    load, load_per_body = None, False
    if scheme in ("directors", "nontwisting") and "load" in table:
        load, load_per_body = _loads(table["load"], errors)

    # number of bodies: count, or the length of the per-body lists (they must agree)
    lengths = {f"bodies.{k}": a.shape[0] for k, (a, per) in arrays.items() if per}
    if load_per_body and load is not None:
        lengths["bodies.load"] = len(load)
    count = table.get("count")
    count = count if isinstance(count, int) and not isinstance(count, bool) else None
    n = count if count is not None else (next(iter(lengths.values())) if lengths else 1)
    for path, m in lengths.items():
        if m != n:
            what = f"count = {count}" if count is not None else f"{next(iter(lengths))} has {n}"
            errors.append((path, f"has {m} entries, expected one per body ({what})"))
    for a, b in (("orientation", "rotvec"), ("omega", "omega_body")):
        if a in table and b in table and table[a] is not None and table[b] is not None:
            errors.append((f"bodies.{b}", f"give {a} or {b}, not both"))
    if model is not None and getattr(model, "moment", None) is not None and load is not None \
            and any(x not in ("none", "case1") for x in load):  # fmt: skip
        errors.append(("bodies.moment", "give load (a preset) or [bodies.moment], not both"))
    if model is not None and scheme == "nontwisting" and model.moment is not None:
        only = "the non-twisting body takes only the material moment m⊥ = M1 d1 + M2 d2 (84)"
        if model.moment.spatial is not None:
            errors.append(("bodies.moment.spatial", f"{only}; a spatial moment is not allowed"))
        if model.moment.material is not None and len(model.moment.material) != 2:
            errors.append(("bodies.moment.material", f"{only}: give [M1, M2] (got {len(model.moment.material)} "
                                                     "components)"))  # fmt: skip
    quat, J = _check_values(scheme, arrays, n, errors)
    if model is not None and model.scheme == "rolling_ball":
        _check_rails(model, errors)
    if errors or model is None:
        return errors, None
    return _resolve(model, arrays, n, load, quat, J, errors)


def _check_values(scheme, arrays, n, errors):
    """Unit quaternions, valid inertia, positive masses: ``(quaternions (n, 4), J)``."""
    quat, J = None, None
    if "orientation" in arrays:
        q, per = arrays["orientation"]
        q = _check_quaternions(q, "bodies.orientation", per, errors)
        quat = None if q is None else _rows(q, per, n)
    elif "rotvec" in arrays:
        rv, per = arrays["rotvec"]
        quat = rot.quat_from_rotvec(_rows(rv, per, n))
    else:
        quat = np.tile(np.array([1.0, 0.0, 0.0, 0.0]), (n, 1))
    if "inertia" in arrays:
        J, per = arrays["inertia"]
        J = _check_inertia(J, "bodies.inertia", per, scheme, errors)
    if "mass" in arrays:
        m, per = arrays["mass"]
        low_ok = (m >= 0) if scheme == "livens" else (m > 0)
        if not np.all(low_ok):
            k = int(np.argmin(np.atleast_1d(low_ok)))
            where = f"bodies.mass[{k}]" if per else "bodies.mass"
            bound = ">= 0" if scheme == "livens" else "> 0"
            errors.append((where, f"must be {bound} (got {float(np.atleast_1d(m)[k])!r})"))
    return quat, J


def _resolve(model, arrays, n, load, quat, J, errors):
    scheme = model.scheme
    R = rot.quat_to_matrix(quat)
    given = "omega" if "omega" in arrays else "omega_body" if "omega_body" in arrays else None
    base = _rows(*arrays[given], n) if given else np.zeros((n, 3))
    if model.random is not None:
        base = base + _perturbation(model.random, n, scheme, R if given != "omega_body" else None)
    if given == "omega_body":
        omega_body, omega = base, np.einsum("nij,nj->ni", R, base)
    else:
        omega, omega_body = base, np.einsum("nji,nj->ni", R, base)
    if scheme == "nontwisting":
        twist = omega_body[:, 2] if given == "omega_body" else np.einsum("ni,ni->n", omega, R[:, :, 2])
        bad = np.abs(twist) > 1e-10 * (1.0 + np.linalg.norm(omega, axis=1))
        if np.any(bad):
            k = int(np.argmax(bad))
            errors.append((f"bodies.{given or 'omega'}", f"the non-twisting body needs no initial twist, "
                           f"ω·d3 = 0 (82); body {k} has ω·d3 = {twist[k]:.6g}"))  # fmt: skip
            return errors, None
    offsets = np.zeros((n, 3))
    offsets[:, 0] = model.spacing * np.arange(n)
    others = {}
    for key, (a, per) in arrays.items():
        if key in ("inertia", "orientation", "rotvec", "omega", "omega_body"):
            continue
        others[key] = _rows(a, per, n)
        if key in ("position", "xy") and not per:
            others[key] = others[key] + offsets[:, : others[key].shape[1]]
    loads = [] if load is None else (load * n if len(load) == 1 else list(load))
    return errors, BodiesConfig(model, n, np.broadcast_to(J, (n, 3, 3)).copy() if J.shape[0] == 1 else J, quat, R,
                                omega, omega_body, given, offsets, others, loads)  # fmt: skip


def _perturbation(rand, n, scheme, R):
    """Seeded perturbation of the initial angular velocity (N, 3), in the frame of the key
    the scene gave (spatial when ``R`` is given, body otherwise). For the non-twisting body
    the component along d3 is removed so that (82) holds."""
    rng = np.random.default_rng(rand.seed)
    s = rand.omega_scale
    d = rng.uniform(-s, s, (n, 3)) if rand.distribution == "uniform" else rng.normal(0.0, s, (n, 3))
    if scheme == "nontwisting":
        if R is None:
            d[:, 2] = 0.0
        else:
            d3 = R[:, :, 2]
            d = d - np.einsum("ni,ni->n", d, d3)[:, None] * d3
    return d


def _check_rails(model, errors):
    """Build each rail and actuation once (cheap, host only) to report bad geometry."""

    for k, m in enumerate(model.masses):
        r, a = m.rail, m.actuation
        try:
            make_rail(R, r)
        except ValueError as exc:
            errors.append((f"bodies.masses[{k}].rail", str(exc)))
        try:
            make_actuation(R, a)
        except ValueError as exc:
            errors.append((f"bodies.masses[{k}].actuation", str(exc)))

