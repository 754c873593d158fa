"""What an ensemble is: the fields it varies and their distributions, counter-based
sampling, and the ``[bodies]`` table of a chunk of bodies (see :mod:`granular.ensemble`
for the whole contract)."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

from ..bodies.scenes.config import _COMMON_ARRAYS, ARRAY_KEYS, parse_bodies
from ..errors import EnsembleSpecError
from ..hashing import splitmix64
from ..run.scene import load_scene

__all__ = ["Distribution", "EnsembleSpec", "EnsembleSpecError", "chunk_bounds", "chunk_table", "make_spec", "parse_vary", "sample"]

_FORMS = "uniform(a,b), normal(mu,sigma), grid(a,b), file(path.npy)"
_DEFAULT_ZERO = {"omega": (3,), "omega_body": (3,), "position": (3,), "velocity": (3,), "xy": (2,), "rotvec": (3,)}
_MASS_DEFAULT = {"ulvc": 1.0, "livens": 0.0}
_POSITION_KEYS = {"ulvc": "position", "livens": "position", "rolling_ball": "xy"}


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


def vary_items(vary) -> list[tuple]:
    """``vary`` (a dict ``field -> spec`` or a list of ``"FIELD=SPEC"`` strings) as a list of
    ``(field, spec)`` in the given order; :class:`EnsembleSpecError` for a string without ``=``."""
    if isinstance(vary, dict):
        return list(vary.items())
    items = []
    for text in vary or []:
        if "=" not in str(text):
            raise EnsembleSpecError(f"--vary {text!r}: expected FIELD=DISTRIBUTION; allowed forms: {_FORMS}")
        f, s = str(text).split("=", 1)
        items.append((f.strip(), s.strip()))
    return items


def parse_vary(vary) -> list[Vary]:
    """``vary``: dict ``field -> spec`` (a string or a :class:`Distribution`) or a list of
    ``"FIELD=SPEC"`` strings -> list of :class:`Vary` in the given order."""
    items = vary_items(vary)
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


def _uniform01(seed: int, stream: int, bodies: np.ndarray) -> np.ndarray:
    """(len(bodies),) float64 in [0, 1): hash of (seed, stream, body index)."""
    with np.errstate(over="ignore"):
        key = splitmix64(np.array([(seed & 0xFFFFFFFFFFFFFFFF)], dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        key = splitmix64(key ^ np.uint64(stream * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF))
        h = splitmix64(key ^ splitmix64(bodies.astype(np.uint64) + np.uint64(0x632BE59BD9B4E019)))
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
