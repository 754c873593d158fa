"""Ensembles of independent bodies: sampled initial conditions and parameters, run in
batched chunks, in process or as Dask tasks, summarised one row per body.

:func:`run_ensemble` takes a scene with a ``[bodies]`` table (:mod:`granular.bodies.scenes`)
and ``vary``, a mapping ``FIELD -> DISTRIBUTION``:

``FIELD``
    an array-valued key of the ``[bodies]`` table, optionally with component indices:
    ``omega_body[0]``, ``mass``, ``inertia[2]`` (principal moments given as 3 numbers),
    ``inertia[1][1]`` (a 3x3 tensor), ``position``, ``orientation[0]`` ... (the keys of
    :data:`granular.bodies.scene_config.ARRAY_KEYS` for the scheme, plus ``orientation``,
    ``rotvec``, ``omega``, ``omega_body``). Without indices every component is sampled.
    The scene must give the key as one shared value (not a per-body list); ``omega``,
    ``omega_body``, ``position``, ``velocity``, ``xy``, ``rotvec`` default to zeros,
    ``mass`` to the scheme's default. A varied ``orientation`` is normalised per body.
``DISTRIBUTION``
    ``uniform(a, b)`` (on [a, b)), ``normal(mu, sigma)``, ``grid(a, b)`` (body ``i`` of
    ``N`` takes ``a + (b - a) i / (N - 1)``; each grid field is its own 1-D sweep, not a
    tensor product), ``file(path.npy)`` (row ``i`` of the array: shape ``(N,)`` or
    ``(N,) + component shape``, at least ``N`` rows).

Sampling is counter based: the value of component ``c`` of field ``j`` for body ``i`` is
a SplitMix64 hash of ``(seed, j, c, i)`` mapped to a uniform (Box-Muller for the normal),
so a body's sample depends only on the seed, its index and the field order, never on the
chunking or on which worker ran it. Each chunk is one batched system built through the
scene adapters (:func:`granular.bodies.scene_config.parse_bodies`,
:func:`granular.bodies.scene_systems.build_system`) with per-body lists; the Newton
solvers freeze converged bodies, so a body's trajectory does not depend on the rest of
its chunk and the summaries are bitwise identical for any chunk size (on one backend).

The ``[bodies]`` keys ``count`` and ``[bodies.random]`` are ignored (the ensemble sets
the bodies); positions that the scene spaces along x for display (``spacing``) are given
explicitly per body (the scene's shared value, default 0), so that a body's state does
not depend on its place in a chunk.

Summary columns (each an (N,) array; units of the scene):

``body`` (int64), one column per sampled component (``omega_body[0]``, ...), ``time``
(final time [T]), ``x``, ``y``, ``z`` (final centre-of-mass / body position [L]),
``q0..q3`` (final orientation, body -> spatial), ``omega_x..z`` (spatial angular velocity
[1/T]), ``Omega_1..3`` (body angular velocity [1/T]), ``energy0`` and ``energy_error``
(the scheme's conserved energy, see below; absolute drift ``E(t_end) - E(0)``
[M L²/T²]) and ``energy_rel_error`` (drift / max(|E(0)|, tiny)),
``L_error_x..z`` and ``L_error_norm`` (spatial angular momentum drift [M L²/T]; NaN for
the rolling ball and for the components a body does not conserve, e.g. the heavy top's
horizontal ones; the norm is over the conserved components), ``flip_axis`` (the body axis with the largest ``|Omega(0)|``) and
``flip_time`` (first time that body-axis component changes sign, linearly interpolated
between steps [T]; NaN when it never flips: the event of the unstable (intermediate-axis)
rotation; note that :mod:`granular.validation.ulvc` times a flip by the zero crossing of
a body point's ``p_z`` instead, a different event). The energy and momentum columns come
from the scheme's ``invariants(state)`` (:mod:`granular.bodies.core`): directors and the
non-twisting body ``K``; ulvc ``T + U`` of its dead loads; livens the scheme's conserved
energy (the generalized energy (74), the Hamiltonian for EMH and MPH); rolling ball
``E - W``. A chunk whose step fails (Newton not converged, non-finite state) raises a
:class:`~granular.bodies.core.BodyError` naming the body (its index within the chunk) and
the step; there is no per-body failure column. With ``--scheduler``, ``file(...)`` paths
must be readable by the workers.

``granular ensemble`` writes each chunk's rows as the chunk finishes
(:mod:`granular.ensemble_store`), so an interrupted ensemble keeps them and ``--resume``
runs only the missing chunks; an earlier ensemble in ``--out`` is not replaced without
``--overwrite``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import signal
import sys
import threading
import time as _time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .backend import get_backend
from .bodies.scene_config import _COMMON_ARRAYS, ARRAY_KEYS, parse_bodies
from .bodies.scene_systems import build_system
from .ensemble_store import open_store
from .io._atomic import atomic_write, atomic_write_bytes
from .provenance import versions
from .rotations import quat_from_matrix
from .run.command import run_scene
from .run.runner import AtStep, Periodic, Runner
from .scene import SceneError, load_scene

__all__ = ["Distribution", "EnsembleSpecError", "main", "parse_vary", "run_ensemble", "sample", "write_outputs"]

_FORMS = "uniform(a,b), normal(mu,sigma), grid(a,b), file(path.npy)"
_DEFAULT_ZERO = {"omega": (3,), "omega_body": (3,), "position": (3,), "velocity": (3,), "xy": (2,), "rotvec": (3,)}
_MASS_DEFAULT = {"ulvc": 1.0, "livens": 0.0}
_POSITION_KEYS = {"ulvc": "position", "livens": "position", "rolling_ball": "xy"}


class EnsembleSpecError(ValueError):
    """A bad ``--vary`` field or distribution, or a bad ensemble argument."""


@dataclass(frozen=True)
class Distribution:
    """``kind`` in ``uniform``, ``normal``, ``grid``, ``file``; ``a``, ``b`` the two numbers
    (``mu``, ``sigma`` for the normal); ``path`` the ``.npy`` file for ``file``."""

    kind: str
    a: float = 0.0
    b: float = 0.0
    path: str = ""


@dataclass(frozen=True)
class Vary:
    """One sampled field: ``name`` as given, ``key`` of ``[bodies]``, ``index`` (a tuple of
    component indices, possibly empty) and its :class:`Distribution`."""

    name: str
    key: str
    index: tuple
    dist: Distribution


_FIELD_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\s*\d+\s*\])*)$")
_DIST_RE = re.compile(r"^(uniform|normal|grid|file)\s*\((.*)\)$")


def parse_distribution(field_name: str, text: str) -> Distribution:
    """``uniform(a,b)`` etc. -> :class:`Distribution`; :class:`EnsembleSpecError` naming
    ``field_name`` and the allowed forms otherwise."""
    m = _DIST_RE.match(str(text).strip())
    bad = f"--vary {field_name}: bad distribution {str(text)!r}; allowed forms: {_FORMS}"
    if not m:
        raise EnsembleSpecError(bad)
    kind, args = m.group(1), m.group(2).strip()
    if kind == "file":
        path = args.strip("'\" ")
        if not path.endswith(".npy"):
            raise EnsembleSpecError(f"--vary {field_name}: file(...) needs a .npy path (got {path!r}); "
                                    f"allowed forms: {_FORMS}")  # fmt: skip
        return Distribution("file", path=path)
    parts = [p.strip() for p in args.split(",")]
    if len(parts) != 2:
        raise EnsembleSpecError(bad)
    try:
        a, b = float(parts[0]), float(parts[1])
    except ValueError:
        raise EnsembleSpecError(bad) from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise EnsembleSpecError(f"--vary {field_name}: the numbers must be finite (got {text!r})")
    if kind == "normal" and b < 0:
        raise EnsembleSpecError(f"--vary {field_name}: normal(mu, sigma) needs sigma >= 0 (got {b!r})")
    if kind in ("uniform", "grid") and b < a:
        raise EnsembleSpecError(f"--vary {field_name}: {kind}(a, b) needs a <= b (got {a!r}, {b!r})")
    return Distribution(kind, a, b)


def parse_field(name: str) -> tuple[str, tuple]:
    """``omega_body[0]`` -> ``("omega_body", (0,))``; EnsembleSpecError when malformed."""
    m = _FIELD_RE.match(str(name).strip())
    if not m:
        raise EnsembleSpecError(f"--vary {name!r}: bad field; expected KEY or KEY[i] or KEY[i][j] with KEY a "
                                f"[bodies] key, e.g. omega_body[0]")  # fmt: skip
    return m.group(1), tuple(int(x) for x in re.findall(r"\d+", m.group(2)))


def parse_vary(vary) -> list[Vary]:
    """``vary``: dict ``field -> spec`` (a string or a :class:`Distribution`) or a list of
    ``"FIELD=SPEC"`` strings -> list of :class:`Vary` in the given order."""
    items = []
    if isinstance(vary, dict):
        items = list(vary.items())
    else:
        for text in vary or []:
            if "=" not in str(text):
                raise EnsembleSpecError(f"--vary {text!r}: expected FIELD=DISTRIBUTION; allowed forms: {_FORMS}")
            f, s = str(text).split("=", 1)
            items.append((f.strip(), s.strip()))
    out, seen = [], set()
    for name, spec in items:
        key, index = parse_field(name)
        dist = spec if isinstance(spec, Distribution) else parse_distribution(name, spec)
        if (key, index) in seen:
            raise EnsembleSpecError(f"--vary {name}: given twice")
        seen.add((key, index))
        out.append(Vary(str(name).strip(), key, index, dist))
    return out


# ----------------------------------------------------------------- sampling

_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(z):
    """SplitMix64 finaliser on a uint64 array (wrapping arithmetic)."""
    z = z.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def _uniform01(seed: int, stream: int, bodies: np.ndarray) -> np.ndarray:
    """(len(bodies),) float64 in [0, 1): hash of (seed, stream, body index)."""
    with np.errstate(over="ignore"):
        key = _mix(np.array([(seed & 0xFFFFFFFFFFFFFFFF)], dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        key = _mix(key ^ np.uint64(stream * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF))
        h = _mix(key ^ _mix(bodies.astype(np.uint64) + np.uint64(0x632BE59BD9B4E019)))
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def sample(dist: Distribution, seed: int, stream: int, bodies: np.ndarray, n_total: int, comp=None) -> np.ndarray:
    """Values of ``dist`` for the body indices ``bodies`` ((m,) int) of an ensemble of
    ``n_total``: (m,) float64 (for ``file``: (m,) + the file's row shape, or its component
    ``comp``). Depends only on ``(seed, stream, body index)``."""
    bodies = np.asarray(bodies, dtype=np.int64)
    if dist.kind == "uniform":
        return dist.a + (dist.b - dist.a) * _uniform01(seed, 2 * stream, bodies)
    if dist.kind == "normal":
        u1 = 1.0 - _uniform01(seed, 2 * stream, bodies)  # (0, 1]
        u2 = _uniform01(seed, 2 * stream + 1, bodies)
        return dist.a + dist.b * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    if dist.kind == "grid":
        if n_total == 1:
            return np.full(bodies.shape, dist.a)
        return dist.a + (dist.b - dist.a) * (bodies / (n_total - 1))
    arr = np.load(dist.path, mmap_mode="r")
    rows = np.asarray(arr[bodies], dtype=np.float64)
    return rows if comp is None else rows.reshape(len(bodies), -1)[:, comp]


# ----------------------------------------------------------------- the chunk


@dataclass
class EnsembleSpec:
    """Everything a chunk needs (picklable): the ``[bodies]`` table, the sampled fields,
    ``seed``, ``n`` bodies in all, ``dt`` [T], ``steps``, ``backend`` name."""

    bodies: dict
    vary: list
    seed: int
    n: int
    dt: float
    steps: int
    backend: str = "cpu"
    source: str = "scene"
    kill_once_dir: str | None = None  # test hook: each chunk's first attempt kills its process mid-run


def _base_value(table: dict, v: Vary, scheme: str) -> np.ndarray:
    """The scene's shared value of ``v.key`` as an array; EnsembleSpecError when it cannot be varied."""

    allowed = sorted(dict(_COMMON_ARRAYS, **ARRAY_KEYS.get(scheme, {})))
    if v.key not in allowed:
        raise EnsembleSpecError(f"--vary {v.name}: {v.key!r} cannot be varied for scheme {scheme!r}; "
                                f"allowed keys: {', '.join(allowed)}")  # fmt: skip
    other = {"omega": "omega_body", "omega_body": "omega", "orientation": "rotvec", "rotvec": "orientation"}.get(v.key)
    if other and table.get(other) is not None and table.get(v.key) is None:
        raise EnsembleSpecError(f"--vary {v.name}: the scene gives {other!r}, not {v.key!r}; vary {other} instead")
    if table.get(v.key) is not None:
        base = np.asarray(table[v.key], dtype=np.float64)
    elif v.key in _DEFAULT_ZERO:
        base = np.zeros(_DEFAULT_ZERO[v.key])
    elif v.key == "orientation":
        base = np.array([1.0, 0.0, 0.0, 0.0])
    elif v.key == "mass" and scheme in _MASS_DEFAULT:
        base = np.array(_MASS_DEFAULT[scheme])
    else:
        raise EnsembleSpecError(f"--vary {v.name}: the scene does not give bodies.{v.key}; give a base value there")
    shared = {"inertia": [(3,), (3, 3)], "mass": [()]}.get(v.key, [(4,)] if v.key == "orientation" else None)
    if shared is None:
        shared = [(2,)] if v.key == "xy" else [(3,)]
    if base.shape not in shared:
        raise EnsembleSpecError(f"--vary {v.name}: bodies.{v.key} must be one shared value in the scene "
                                f"(shape {' or '.join(map(str, shared))}), got shape {base.shape}")  # fmt: skip
    try:
        if v.index:
            base[v.index]
    except IndexError:
        raise EnsembleSpecError(f"--vary {v.name}: index {list(v.index)} out of range for bodies.{v.key} of "
                                f"shape {base.shape}") from None  # fmt: skip
    return base


def _components(base: np.ndarray, v: Vary) -> list[tuple]:
    """The full index tuples of the components of ``base`` addressed by ``v``."""
    sub = np.empty(base.shape)[v.index] if v.index else np.empty(base.shape)
    return [tuple(v.index) + tuple(ix) for ix in np.ndindex(np.shape(sub))]


def _column_name(v: Vary, full: tuple, base_shape) -> str:
    if full == tuple(v.index):
        return v.name
    return v.key + "".join(f"[{i}]" for i in full)


def chunk_table(spec: EnsembleSpec, start: int, stop: int, idx=None) -> tuple[dict, dict]:
    """The ``[bodies]`` table of bodies ``start..stop-1`` (or of the body indices ``idx``,
    (m,) int) as per-body lists, and the sampled columns ``{name: (m,) array}``."""
    table = {k: v for k, v in spec.bodies.items() if k not in ("count", "random")}
    scheme = table.get("scheme")
    idx = np.arange(start, stop, dtype=np.int64) if idx is None else np.asarray(idx, dtype=np.int64)
    m = len(idx)
    rows, columns = {}, {}
    for j, v in enumerate(spec.vary):
        base = _base_value(spec.bodies, v, scheme)
        if v.key not in rows:
            rows[v.key] = np.broadcast_to(base, (m,) + base.shape).copy()
        comps = _components(base, v)
        if v.dist.kind == "file":
            vals = sample(v.dist, spec.seed, j, idx, spec.n)
            vals = vals.reshape(m, -1)
            if vals.shape[1] != len(comps):
                raise EnsembleSpecError(f"--vary {v.name}: file {v.dist.path!r} rows have {vals.shape[1]} values, "
                                        f"the field has {len(comps)} component(s)")  # fmt: skip
        for c, full in enumerate(comps):
            x = vals[:, c] if v.dist.kind == "file" else sample(v.dist, spec.seed, 64 * j + c, idx, spec.n)
            rows[v.key][(slice(None),) + full] = x
            columns[_column_name(v, full, base.shape)] = x.copy()
    for key, r in rows.items():
        if key == "orientation":
            norm = np.linalg.norm(r, axis=1)
            if np.any(norm == 0):
                raise EnsembleSpecError("--vary orientation: a sampled quaternion is zero")
            r = r / norm[:, None]
        if key == "inertia" and r.ndim == 2:
            r = r[:, :, None] * np.eye(3)[None]
        table[key] = r.tolist()
    pos = _POSITION_KEYS.get(scheme)
    if pos and pos not in rows:
        base = np.asarray(table[pos], dtype=np.float64) if table.get(pos) is not None else \
            np.zeros(_DEFAULT_ZERO[pos])  # fmt: skip
        table[pos] = np.broadcast_to(base, (m,) + base.shape).tolist()
    table["count"] = m
    return table, columns


def _omega_body(system):
    """Body angular velocity (N, 3) on the backend (the scheme's own definition)."""
    return system.scheme.body_angular_velocity(system.state)


def _invariants(system):
    """``(energy (N,), L (N, 3) or None)`` host arrays: the energy the scheme conserves
    (``scheme.energy_key`` of its invariants) and the spatial angular momentum, when the
    scheme has one."""
    inv = system.scheme.invariants(system.state)
    L = inv.get("angular_momentum")
    return system.host(inv[system.scheme.energy_key]), None if L is None else system.host(L)


def _conserved_L(cfg, m) -> np.ndarray:
    """(m, 3) bool: which spatial components of each body's angular momentum its scheme
    conserves. All of them for a free body; under gravity (the heavy top, a falling ULVC
    body) only those along gravity, since the weight's moment is horizontal; none under
    the director schemes' loads or ULVC's torques. The others are reported as NaN."""
    t = cfg.table
    keep = np.ones((m, 3), dtype=bool)
    g = np.asarray(getattr(t, "gravity", None) or (0.0, 0.0, 0.0), dtype=np.float64).reshape(-1)[:3]
    along = np.linalg.norm(np.cross(g, np.eye(3)), axis=1) == 0.0  # e_c parallel to g (all when g = 0)
    if t.scheme == "livens":
        mass = np.broadcast_to(np.asarray(cfg.arrays.get("mass", np.zeros(m))), (m,))
        com = np.broadcast_to(np.asarray(cfg.arrays.get("center_of_mass", np.zeros((m, 3)))), (m, 3))
        heavy = (mass > 0) & (np.linalg.norm(com, axis=1) > 0)
        keep[heavy] = along
    elif t.scheme == "ulvc":
        if t.torque_body is not None or t.torque_spatial is not None:
            keep[:] = False
        elif t.gravity is not None:
            keep[:] = along
    elif t.scheme in ("directors", "nontwisting"):
        loaded = np.array([name not in ("none", "case1") for name in cfg.load] or [False], dtype=bool)
        loaded = np.broadcast_to(loaded | (getattr(t, "moment", None) is not None), (m,))
        keep[loaded] = False
    return keep


class FlipWatch:
    """A writer of every step (unchecked): the first time each body's largest body-frame
    spin component changes sign (``flip``, linearly interpolated between the steps), the
    component being ``axis``."""

    checked = False
    trigger = Periodic(1)

    def __init__(self, system, mb):
        xp = system.backend.xp
        om0 = _omega_body(system)
        self.axis = xp.argmax(xp.abs(om0), axis=1)
        self.rows = xp.arange(mb)
        self.sign0 = xp.sign(om0[self.rows, self.axis])
        self.prev = om0[self.rows, self.axis]
        self.flip = xp.full(mb, xp.nan)
        self.t_prev = system.time

    def write(self, runner, row):
        system, xp = runner.system, runner.system.backend.xp
        cur = _omega_body(system)[self.rows, self.axis]
        new = xp.isnan(self.flip) & (xp.sign(cur) != self.sign0) & (self.sign0 != 0)
        if bool(new.any()):
            frac = self.prev / (self.prev - cur)
            self.flip = xp.where(new, self.t_prev + frac * (system.time - self.t_prev), self.flip)
        self.prev, self.t_prev = cur, system.time


class Callback:
    """A writer that calls ``fn(runner)`` when ``trigger`` (or every ``trigger`` steps) is due."""

    checked = False

    def __init__(self, trigger, fn):
        self.trigger = Periodic(trigger) if isinstance(trigger, int) else trigger
        self.fn = fn

    def write(self, runner, row):
        self.fn(runner)


def run_chunk(spec: EnsembleSpec, start: int, stop: int, progress=None) -> dict:
    """Build bodies ``start..stop-1`` as one batched system, run ``spec.steps`` steps of
    ``spec.dt`` and return the summary columns ``{name: (stop - start,) array}``.
    ``progress(steps_done)`` is called now and then during the run (in-process runs)."""

    # a batch of one body takes other NumPy code paths (size-1 axes broadcast) and differs
    # from the same body in a larger batch in the last bits: run it twice, keep one
    m = stop - start
    idx = np.arange(start, stop, dtype=np.int64) if m > 1 else np.array([start, start], dtype=np.int64)
    table, columns = chunk_table(spec, start, stop, idx)
    cfg = parse_bodies(table, f"{spec.source} (bodies {start}..{stop - 1})")
    backend = get_backend(spec.backend)
    system = build_system(cfg, backend)
    dt = spec.dt
    mb = len(idx)  # bodies in the batch (m, or 2 for one body)
    E0, L0 = _invariants(system)
    watch = FlipWatch(system, mb)
    writers = [watch]
    if progress is not None:
        writers.append(Callback(64, lambda runner: progress(runner.system.step_count)))
    if spec.kill_once_dir is not None:  # test hook: a worker dies mid-run, once per chunk
        marker = os.path.join(spec.kill_once_dir, f"chunk{start}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            writers.append(Callback(AtStep(spec.steps // 2), lambda runner: os._exit(1)))
    Runner(system, dt, writers, handle_signals=False).run(spec.steps)
    axis, flip = watch.axis, watch.flip
    backend.synchronize()
    E1, L1 = _invariants(system)
    points, data = system.frame()
    if cfg.table.scheme in ("directors", "nontwisting"):  # pure rotation: the points are display offsets
        points = points - cfg.offsets
    R = np.stack([data["d1"], data["d2"], data["d3"]], axis=2)
    q = quat_from_matrix(R)
    w = data["angular_velocity"]
    Om = system.host(_omega_body(system))
    out = {"body": idx.copy()}
    out.update(columns)
    out["time"] = np.full(mb, float(system.time))
    for c, a in enumerate("xyz"):
        out[a] = points[:, c].copy()
    for c in range(4):
        out[f"q{c}"] = q[:, c].copy()
    for c, a in enumerate("xyz"):
        out[f"omega_{a}"] = w[:, c].copy()
    for c in range(3):
        out[f"Omega_{c + 1}"] = Om[:, c].copy()
    out["energy0"] = np.asarray(E0, dtype=np.float64)
    out["energy_error"] = np.asarray(E1 - E0, dtype=np.float64)
    out["energy_rel_error"] = out["energy_error"] / np.maximum(np.abs(E0), np.finfo(float).tiny)
    if L0 is None:
        for a in "xyz":
            out[f"L_error_{a}"] = np.full(mb, np.nan)
        out["L_error_norm"] = np.full(mb, np.nan)
    else:
        kept = _conserved_L(cfg, mb)
        dL = np.where(kept, np.asarray(L1 - L0, dtype=np.float64), np.nan)
        for c, a in enumerate("xyz"):
            out[f"L_error_{a}"] = dL[:, c].copy()
        out["L_error_norm"] = np.where(kept.any(axis=1), np.sqrt(np.where(kept, dL, 0.0) ** 2 @ np.ones(3)), np.nan)
    out["flip_axis"] = system.host(axis).astype(np.int64) + 1
    out["flip_time"] = np.asarray(system.host(flip), dtype=np.float64)
    return {k: np.ascontiguousarray(v[:m]) for k, v in out.items()}


# ----------------------------------------------------------------- the driver


def _steps(run, steps, time, dt) -> int:
    if steps is not None and time is not None:
        raise EnsembleSpecError("give steps or time, not both")
    if steps is not None:
        n = int(steps)
    elif time is not None:
        n = round(float(time) / dt)
    elif run.steps is not None:
        n = int(run.steps)
    else:
        n = round(run.duration / dt)
    if n < 0:
        raise EnsembleSpecError(f"steps must be >= 0 (got {n})")
    return n


def make_spec(scene, n, vary, seed, steps=None, time=None, backend="cpu") -> EnsembleSpec:
    """Validate the arguments and the base table; the :class:`EnsembleSpec` of the run."""

    source = "scene"
    if isinstance(scene, (str, os.PathLike)):
        source = str(scene)
        scene = load_scene(scene)
    if getattr(scene, "bodies", None) is None:
        raise EnsembleSpecError(f"{source}: the scene has no [bodies] table; ensembles run the body schemes")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise EnsembleSpecError(f"n must be a positive integer (got {n!r})")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise EnsembleSpecError(f"seed must be a non-negative integer (got {seed!r})")
    if scene.run.precision != "float64":
        raise EnsembleSpecError(f"{source}: ensembles run in float64 only (run.precision = {scene.run.precision!r})")
    vs = parse_vary(vary)
    bodies = dict(scene.bodies)
    scheme = bodies.get("scheme")
    for v in vs:
        base = _base_value(bodies, v, scheme)
        if v.dist.kind == "file":
            if not os.path.exists(v.dist.path):
                raise EnsembleSpecError(f"--vary {v.name}: no such file {v.dist.path!r}")
            arr = np.load(v.dist.path, mmap_mode="r")
            if arr.shape[0] < n:
                raise EnsembleSpecError(f"--vary {v.name}: file {v.dist.path!r} has {arr.shape[0]} rows, "
                                        f"the ensemble needs {n}")  # fmt: skip
            want = len(_components(base, v))
            if int(np.prod(arr.shape[1:], dtype=np.int64)) != want:
                raise EnsembleSpecError(f"--vary {v.name}: file {v.dist.path!r} rows have shape {arr.shape[1:]}, "
                                        f"the field has {want} component(s)")  # fmt: skip
    spec = EnsembleSpec(bodies, vs, int(seed), int(n), float(scene.run.dt), 0, backend, source)
    spec.steps = _steps(scene.run, steps, time, spec.dt)
    # validate one body now (fails loudly before any task is sent)

    table, _ = chunk_table(spec, 0, 1)
    parse_bodies(table, source)
    return spec


def chunk_bounds(n: int, chunk_size: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``0..n-1`` in chunks of ``chunk_size``."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise EnsembleSpecError(f"chunk_size must be a positive integer (got {chunk_size!r})")
    return [(a, min(a + chunk_size, n)) for a in range(0, n, chunk_size)]


def collect(parts, n: int) -> dict:
    """Place chunk tables (an iterable, in any order; each with its ``body`` column, a
    contiguous range) into one table of ``n`` rows in body order. Each part is dropped once
    copied, so the driver holds the table plus one chunk, never all chunks twice."""
    table = None
    filled = 0
    for part in parts:
        if table is None:
            table = {k: np.empty((n,) + v.shape[1:], dtype=v.dtype) for k, v in part.items()}
        a = int(part["body"][0])
        b = a + len(part["body"])
        for k, v in part.items():
            table[k][a:b] = v
        filled += b - a
    if filled != n:
        raise RuntimeError(f"ensemble: {filled} of {n} bodies came back")
    return table


def run_ensemble(scene, n, vary, seed=0, chunk_size=10_000, backend="cpu", client=None, steps=None, time=None,
                 summaries=None, retries=3, _kill_once_dir=None, store=None, progress=None) -> dict:  # fmt: skip
    """Run ``n`` bodies of the ``[bodies]`` scene ``scene`` (a path or a loaded
    :class:`~granular.scene.Scene`) with the fields of ``vary`` (``{FIELD: "uniform(a,b)"
    ...}`` or ``["FIELD=SPEC", ...]``) sampled from ``seed``, in chunks of at most
    ``chunk_size`` bodies (one batched system each, on ``backend``), for ``steps`` steps
    or ``time`` [T] (default: the scene's ``run``).

    ``client``: None runs the chunks one after the other in this process; a
    ``dask.distributed.Client`` runs each chunk as a task (``client.map``, ``retries``
    retries when a worker dies) and gathers them in body order. ``summaries``: the
    column names to keep (default: all, see the module docstring). Returns
    ``{column: (n,) array}`` in body order; identical for any ``chunk_size`` and
    ``client`` on the same backend. Raises :class:`EnsembleSpecError` (bad arguments),
    :class:`~granular.scene.SceneError` (bad scene), and a chunk's step failure.

    ``store``: a :class:`~granular.ensemble_store.ChunkStore`; each chunk's table is saved
    there as it comes back, and chunks already there are not run again (resume).

    ``progress``: a :class:`Progress` told of the steps taken (in-process runs) and of
    every finished chunk."""
    spec = make_spec(scene, n, vary, seed, steps=steps, time=time, backend=backend)
    if _kill_once_dir is not None:
        spec.kill_once_dir = str(_kill_once_dir)
    bounds = chunk_bounds(spec.n, chunk_size)
    if progress is None:
        progress = Progress(spec.n, spec.steps, len(bounds), stream=None)
    if store is not None:
        done = store.done()
        todo = [ab for ab in bounds if ab not in done]
        progress.start([ab for ab in bounds if ab in done])
        parts = _stored_run(spec, todo, store, client, retries, progress)
        table = collect(itertools.chain((store.load(a, b) for a, b in bounds if (a, b) in done), parts), spec.n)
    elif client is None:
        progress.start([])
        table = collect((progress.finished(a, b, run_chunk(spec, a, b, progress.stepper(a, b))) for a, b in bounds),
                        spec.n)  # fmt: skip
    else:
        from dask.distributed import as_completed

        futures = client.map(run_chunk, [spec] * len(bounds), [a for a, _ in bounds], [b for _, b in bounds],
                             retries=retries, pure=False)  # fmt: skip

        def gathered():
            for fut, part in as_completed(futures, with_results=True):
                fut.release()  # the worker may drop the chunk's result once it is here
                yield part

        table = collect(gathered(), spec.n)
        del futures
    if summaries is not None:
        missing = [c for c in summaries if c not in table]
        if missing:
            raise EnsembleSpecError(f"summaries: unknown column(s) {missing}; available: {', '.join(table)}")
        table = {c: table[c] for c in ["body", *[s for s in summaries if s != "body"]]}
    return table


class Progress:
    """Progress lines of an ensemble on ``stream`` (None: silent): the share of
    body-steps done, the rate and the time left, the first after ``first`` seconds and
    then at most every ``every`` seconds, from the steps inside a chunk (in-process runs)
    and from finished chunks (Dask)."""

    def __init__(self, n, steps, chunks, stream=sys.stderr, first=2.0, every=10.0, clock=_time.monotonic):
        self.total, self.steps, self.chunks, self.stream = n * steps, steps, chunks, stream
        self.first, self.every, self.clock = first, every, clock
        self.done = self.chunks_done = 0
        self.resumed = 0
        self.t0 = self.next = None

    def start(self, done_bounds) -> None:
        self.chunks_done = len(done_bounds)
        self.done = self.resumed = sum((b - a) * self.steps for a, b in done_bounds)
        self.t0 = self.clock()
        self.next = self.t0 + self.first

    def stepper(self, a, b):
        """``progress(k)`` for :func:`run_chunk` of bodies ``a..b-1``."""
        base = self.done

        def progress(k):
            self._maybe_print(base + k * (b - a))

        return progress

    def finished(self, a, b, part):
        """Count the chunk ``a..b-1`` as done; returns ``part`` (its table)."""
        self.chunks_done += 1
        self.done += (b - a) * self.steps
        self._maybe_print(self.done)
        return part

    def line(self, done) -> str:
        elapsed = self.clock() - self.t0
        rate = (done - self.resumed) / elapsed if elapsed > 0 else 0.0
        left = f", about {_duration((self.total - done) / rate)} left" if rate > 0 else ""
        return (f"granular ensemble: {100.0 * done / max(self.total, 1):.0f} % ({done:,} of {self.total:,} "
                f"body-steps; {self.chunks_done} of {self.chunks} chunks done), {rate:,.0f} body-steps/s{left}")

    def _maybe_print(self, done) -> None:
        if self.stream is None or self.clock() < self.next or done >= self.total:
            return
        print(self.line(done), file=self.stream, flush=True)
        self.next = self.clock() + self.every


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 172800:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} days"


def _stored_run(spec, bounds, store, client, retries, progress):
    """Run the chunks ``bounds`` (in process or on ``client``) and save each to ``store`` as
    it comes back; yields their tables."""
    if client is None:
        for a, b in bounds:
            yield progress.finished(a, b, store.save(run_chunk(spec, a, b, progress.stepper(a, b))))
        return
    from dask.distributed import as_completed

    futures = client.map(run_chunk, [spec] * len(bounds), [a for a, _ in bounds], [b for _, b in bounds],
                         retries=retries, pure=False)  # fmt: skip
    for fut, part in as_completed(futures, with_results=True):
        fut.release()
        yield progress.finished(int(part["body"][0]), int(part["body"][0]) + len(part["body"]), store.save(part))


# ----------------------------------------------------------------- output


def write_outputs(table: dict, out_dir: str, hist_columns=None, meta=None) -> list[str]:
    """Write ``summaries.npz`` (one array per column; ``summaries.parquet`` too when
    pyarrow is installed), ``histograms.png`` of ``hist_columns`` (default: the sampled
    columns, ``energy_rel_error``, ``L_error_norm``, ``flip_time``; non-finite values left
    out) and ``ensemble.json`` (``meta``) into ``out_dir``, each atomically. Returns the paths."""


    os.makedirs(out_dir, exist_ok=True)
    paths = []

    def npz(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **table)

    paths.append(atomic_write(os.path.join(out_dir, "summaries.npz"), npz))
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pa = None
    if pa is not None:
        paths.append(atomic_write(os.path.join(out_dir, "summaries.parquet"),
                                  lambda tmp: pq.write_table(pa.table(table), tmp)))  # fmt: skip
    if hist_columns is None:
        fixed = {"body", "time", "x", "y", "z", "q0", "q1", "q2", "q3", "omega_x", "omega_y", "omega_z", "Omega_1",
                 "Omega_2", "Omega_3", "energy0", "energy_error", "L_error_x", "L_error_y", "L_error_z",
                 "flip_axis"}  # fmt: skip
        hist_columns = [c for c in table if c not in fixed]
    cols = [c for c in hist_columns if c in table and np.isfinite(table[c]).any()]
    if cols:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        k = len(cols)
        ncol = min(3, k)
        nrow = (k + ncol - 1) // ncol
        fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3 * nrow), squeeze=False)
        for ax, c in zip(axes.flat, cols):
            v = np.asarray(table[c], dtype=np.float64)
            v = v[np.isfinite(v)]
            ax.hist(v, bins=min(50, max(5, int(np.sqrt(v.size)))))
            ax.set_title(f"{c} ({v.size} of {len(table[c])})", fontsize=9)
        for ax in list(axes.flat)[k:]:
            ax.set_visible(False)
        fig.tight_layout()
        paths.append(atomic_write(os.path.join(out_dir, "histograms.png"),
                                  lambda tmp: fig.savefig(tmp, format="png", dpi=90)))  # fmt: skip
        plt.close(fig)
    if meta is not None:
        data = json.dumps(meta, indent=2, default=str).encode()

        paths.append(atomic_write_bytes(os.path.join(out_dir, "ensemble.json"), data))
    return paths


# ----------------------------------------------------------------- command line


def _parser():
    p = argparse.ArgumentParser(prog="granular ensemble", description="Run an ensemble of bodies of a [bodies] "
                                "scene with sampled initial conditions and parameters.")  # fmt: skip
    p.add_argument("scene", help="scene file (TOML) with a [bodies] table")
    p.add_argument("--n", type=int, required=True, help="number of bodies")
    p.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="FIELD=DIST",
        help=f"sampled field, e.g. omega_body[0]=normal(0.01,0.001); DIST: {_FORMS}",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk", type=int, default=10_000, help="bodies per batched system (task)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dask", action="store_true", help="run the chunks on a local Dask cluster (2 workers)")
    g.add_argument("--scheduler", metavar="ADDRESS", help="run the chunks on an existing Dask cluster")
    p.add_argument("--workers", type=int, default=2, help="workers of the --dask local cluster")
    p.add_argument("--retries", type=int, default=3, help="retries of a chunk whose worker dies")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--out", help="output directory (default out/<scene>_ensemble)")
    s = p.add_mutually_exclusive_group()
    s.add_argument("--steps", type=int)
    s.add_argument("--time", type=float)
    p.add_argument("--hist", action="append", default=None, metavar="COLUMN", help="histogram column (repeatable)")
    p.add_argument("--trajectories", type=int, default=0, metavar="K",
                   help="also run K bodies spread over the ensemble with full output (frames, series) in OUT/subsample")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier ensemble in --out")
    p.add_argument("--resume", action="store_true",
                   help="finish an interrupted ensemble in --out (same arguments): only its missing chunks run")
    p.add_argument("--quiet", action="store_true")
    return p


def _sigterm_as_interrupt():
    """Make SIGTERM stop the ensemble like Ctrl-C (finished chunks are kept); returns the
    previous handler (None outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def subsample_indices(n: int, k: int) -> np.ndarray:
    """``k`` body indices spread evenly over ``0..n-1`` (all of them if ``k >= n``)."""
    return np.unique(np.linspace(0, n - 1, min(k, n)).round().astype(np.int64))


def run_subsample(scene, spec: EnsembleSpec, idx, out_dir: str, args) -> int:
    """Run the bodies ``idx`` of the ensemble again as an ordinary ``[bodies]`` scene,
    with the full output of ``granular run`` (ParaView frames with orientations,
    ``series.csv`` trajectories, plots) in ``out_dir``. Their sampled values are the
    same as in the ensemble, so their final states equal the summary rows."""


    table, _ = chunk_table(spec, 0, 0, idx=idx)
    sub = scene.model_copy(update={"bodies": table, "name": f"{scene.name}_subsample"})
    opts = SimpleNamespace(scene=f"{args.scene} (subsample)", out=out_dir, backend=args.backend, precision=None,
                           time=None, steps=spec.steps, resume=None, quiet=True, log_json=False,
                           overwrite=True)  # fmt: skip
    return run_scene(sub, opts)


def main(argv=None) -> int:
    """``granular ensemble SCENE --n N --vary FIELD=DIST ... --seed S [--chunk C]
    [--dask | --scheduler ADDR] [--out DIR] [--steps N | --time T]``. Returns the exit
    status: 0 done, 1 a run failed, 2 bad input."""

    p = _parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        scene = load_scene(args.scene)
        spec = make_spec(scene, args.n, args.vary, args.seed, steps=args.steps, time=args.time, backend=args.backend)
        chunk_bounds(args.n, args.chunk)
    except (EnsembleSpecError, SceneError) as exc:
        print(f"granular ensemble: {exc}", file=sys.stderr)
        return 2
    out = args.out or os.path.join("out", f"{scene.name}_ensemble")
    manifest = {"scene": scene.model_dump(mode="json"), "n": args.n, "vary": args.vary, "seed": args.seed,
                "chunk": args.chunk, "steps": spec.steps, "dt": spec.dt, "backend": args.backend}  # fmt: skip
    try:
        store = open_store(out, manifest, resume=args.resume, overwrite=args.overwrite, n=args.n,
                           columns=32 + len(args.vary) * 3)  # fmt: skip
    except ValueError as exc:  # OutDirError, ResourceError
        print(f"granular ensemble: {exc}", file=sys.stderr)
        return 2
    if store is None:
        if not args.quiet:
            print(f"granular ensemble: the ensemble in {out} is finished; nothing to do", file=sys.stderr)
        return 0
    client = cluster = None
    started = _time.perf_counter()
    previous = _sigterm_as_interrupt()
    try:
        if args.dask or args.scheduler:
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                print("granular ensemble: --dask/--scheduler need dask[distributed] (pip install 'dask[distributed]')",
                      file=sys.stderr)  # fmt: skip
                return 2
            if args.scheduler:
                client = Client(args.scheduler)
            elif args.backend == "gpu":  # one worker per GPU
                try:
                    from dask_cuda import LocalCUDACluster
                except ImportError:
                    print("granular ensemble: --dask with --backend gpu needs dask-cuda (pip install dask-cuda)",
                          file=sys.stderr)  # fmt: skip
                    return 2
                cluster = LocalCUDACluster(threads_per_worker=1, dashboard_address=None)
                client = Client(cluster)
            else:
                cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None)  # fmt: skip
                client = Client(cluster)
        progress = Progress(args.n, spec.steps, len(chunk_bounds(args.n, args.chunk)),
                            stream=None if args.quiet else sys.stderr)  # fmt: skip
        table = run_ensemble(scene, args.n, args.vary, args.seed, chunk_size=args.chunk, backend=args.backend,
                             client=client, steps=args.steps, time=args.time, retries=args.retries,
                             store=store, progress=progress)  # fmt: skip
    except EnsembleSpecError as exc:
        print(f"granular ensemble: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        done, total = len(store.done()), len(chunk_bounds(args.n, args.chunk))
        print(f"granular ensemble: interrupted; {done} of {total} chunks are kept in {store.dir}; run the same "
              "command with --resume to finish it", file=sys.stderr)  # fmt: skip
        return 130
    except Exception as exc:  # noqa: BLE001  a chunk failed (Newton, non-finite state, worker lost for good)
        print(f"granular ensemble: run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    wall = _time.perf_counter() - started
    meta = {"scene": args.scene, "n": args.n, "vary": args.vary, "seed": args.seed, "chunk": args.chunk,
            "steps": spec.steps, "dt": spec.dt, "backend": args.backend,
            "executor": "dask:" + args.scheduler if args.scheduler else "dask-local" if args.dask else "in-process",
            "wall_time_s": wall, "body_steps_per_s": args.n * spec.steps / wall if wall > 0 else None}  # fmt: skip
    if args.trajectories:
        idx = subsample_indices(args.n, args.trajectories)
        meta["subsample_bodies"] = idx.tolist()
    meta["versions"] = versions()
    write_outputs(table, out, args.hist, meta)
    store.remove()
    if args.trajectories:
        status = run_subsample(scene, spec, idx, os.path.join(out, "subsample"), args)
        if status != 0:
            return status
    if not args.quiet:
        print(f"granular ensemble: {scene.name}: {args.n} bodies x {spec.steps} steps in {wall:.3g} s "
              f"({meta['body_steps_per_s']:,.0f} body-steps/s); output in {out}/")  # fmt: skip
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
