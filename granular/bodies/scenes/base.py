"""Batched body systems built from a ``[bodies]`` table, behind one small interface.

Each adapter wraps one scheme of :mod:`granular.bodies` (the model, its state and its
stepping) and gives :mod:`granular.bodies.scenes` what the output directory needs:

``scheme``, ``state``
    the :class:`~granular.bodies.core.Scheme` (looked up in the registry
    :data:`granular.bodies.core.REGISTRY` by ``"<scheme> <variant>"``) and its state.
``step(h)``, ``advance(h, k)``
    one step, or ``k`` steps in blocks, of size ``h`` for every body (raises the scheme's
    error on failure, leaving the state at the last good step).
``time``, ``step_count``
    the clock [T] and the number of steps taken.
``frame()``
    ``(points (N, 3), point_data)`` host arrays: one vertex per body at its centre of mass
    (pure rotations are shown at ``offsets``, spaced along x) with ``id``, ``radius``
    (display size), ``mass``, ``inertia`` (the six components xx, yy, zz, xy, yz, xz of the
    spatial tensor ``R J Rᵀ``), ``velocity``, ``angular_velocity`` (spatial), ``d1``,
    ``d2``, ``d3`` (the columns of R) and ``kinetic_energy``.
``series()``
    one ``series.csv`` row without ``time`` and ``step``: energies summed over the bodies,
    momenta, the scheme's invariants (maxima over the bodies for residuals) and, for fewer
    than :data:`SMALL_BATCH` bodies, each body's state and invariants (``b<i>_...``).
``state_arrays()``, ``restore(arrays)``
    the changing arrays (host) for a checkpoint, and back (the state's arrays, for every
    scheme alike).

This module holds the interface (:class:`BodySystem`) and its helpers;
:mod:`granular.bodies.scenes.systems` the adapters of the director schemes (paper 000) and
unified local velocity coordinates (paper 001) and :func:`build_system`;
:mod:`granular.bodies.scenes.more` those of the Livens quaternion schemes (paper 002) and
the rolling ball (paper 004).
"""

from __future__ import annotations

import numpy as np

SMALL_BATCH = 10  # below this many bodies, series.csv carries every body's state
AXES = "xyz"


def inertia_components(R, J):
    """The six components (xx, yy, zz, xy, yz, xz) of ``R J Rᵀ``: (N, 6) host float64."""
    S = R @ J @ R.swapaxes(-1, -2)
    return np.stack([S[:, 0, 0], S[:, 1, 1], S[:, 2, 2], S[:, 0, 1], S[:, 1, 2], S[:, 0, 2]], axis=1)


def det_minus_one(R):
    """``max_b |det R_b - 1|`` over a (N, 3, 3) host stack."""
    return float(np.abs(np.linalg.det(R) - 1.0).max())


class BodySystem:
    """Shared parts of the adapters; subclasses set ``backend``, ``n``, ``config``,
    ``scheme`` and ``state``."""

    label = "bodies"

    def host(self, a):
        return self.backend.to_host(a)

    @property
    def time(self):
        return self.state.t

    @property
    def step_count(self):
        return self.state.step

    def step(self, h):
        self.scheme.step(self.state, h)

    # ------------------------------------------------ the run loop's System protocol

    def prepare(self, dt):
        """Nothing to prepare: a body step needs no forces of the state before it."""

    def advance(self, h, k):
        """``k`` steps of ``h``; a failing step raises with the state of the step before."""
        self.scheme.advance(self.state, h, k)

    def series_row(self):
        row = {"time": float(self.time), "step": float(self.step_count)}
        row.update(self.series())
        return row

    def check(self, row):
        """No health check beyond the step's own (Newton convergence, finite states)."""
        return None

    def keep(self):
        """A failing step leaves the state of the step before: nothing to keep."""

    def rewind(self):
        pass

    def checkpoint_meta(self):
        return {"scheme": self.label, "bodies": self.n}

    def start_fields(self, dt):
        return {"bodies": self.n, "scheme": self.label}

    def describe(self, dt):
        t = self.config.table
        return {"precision": "float64", "scheme": t.scheme, "variant": getattr(t, "variant", None),
                "integrator": self.label, "dt": dt, "bodies": self.n}  # fmt: skip

    def rates(self, steps_per_s):
        return {"body_steps_per_s": None if steps_per_s is None else steps_per_s * self.n}

    def plot_columns(self, data):
        """The batch figures: per-body columns (``b<i>_...``) stay in ``series.csv`` only."""
        return {k: v for k, v in data.items() if k != "step" and not per_body_column(k)}

    def state_arrays(self):
        s = self.state
        out = {k: self.host(a).copy() for k, a in s.arrays().items()}
        out.update({f"extra_{k}": self.host(a).copy() for k, a in getattr(s, "extra", {}).items()})
        c = s.clock if s.clock is not None and s.clock[3] == (s.t, s.step) else (s.t, s.step, 0.0)
        out["clock"] = np.array([s.t, c[0], c[2]])  # t, the clock's origin t0 and step h
        out["counters"] = np.array([s.step, c[1]], dtype=np.int64)  # step, the origin's step0
        return out

    def restore(self, arrays):
        s, be = self.state, self.backend
        for k in s.array_names():
            setattr(s, k, be.asarray(_same(arrays, k, getattr(s, k), be)))
        if hasattr(s, "extra"):
            s.extra = {k[6:]: be.asarray(v) for k, v in arrays.items() if k.startswith("extra_")}
        clock, counters = arrays["clock"], arrays["counters"]
        s.t, s.step = float(clock[0]), int(counters[0])
        s.clock = None
        if len(clock) >= 3 and len(counters) >= 2 and clock[2] > 0:  # older checkpoints hold t and step only
            s.clock = (float(clock[1]), int(counters[1]), float(clock[2]), (s.t, s.step))

    def _frame_data(self, points, R, J, mass, velocity, omega, kinetic, radius):
        n = self.n
        # copies: the frame is written on another thread while the state moves on
        return np.array(points, dtype=np.float64), {
            "id": np.arange(n, dtype=np.int64),
            "radius": np.broadcast_to(np.asarray(radius, dtype=np.float64), (n,)).copy(),
            "mass": np.broadcast_to(np.asarray(mass, dtype=np.float64), (n,)).copy(),
            "inertia": inertia_components(R, J),
            "velocity": np.array(velocity, dtype=np.float64),
            "angular_velocity": np.array(omega, dtype=np.float64),
            "d1": np.array(R[:, :, 0]),
            "d2": np.array(R[:, :, 1]),
            "d3": np.array(R[:, :, 2]),
            "kinetic_energy": np.array(kinetic, dtype=np.float64),
        }

    def _per_body(self, row, name, values, labels=None):
        """``b<i>_<name>[_<label>]`` columns from a host (N,) or (N, k) array (small batches)."""
        if self.n >= SMALL_BATCH:
            return
        a = np.asarray(values, dtype=np.float64)
        for i in range(self.n):
            if a.ndim == 1:
                row[f"b{i}_{name}"] = float(a[i])
            else:
                for c in range(a.shape[1]):
                    lab = labels[c] if labels is not None else str(c)
                    row[f"b{i}_{name}{lab}"] = float(a[i, c])

    @staticmethod
    def _vector(row, prefix, v):
        for c, a in enumerate(AXES):
            row[f"{prefix}_{a}"] = float(v[c])

    def _newton(self, row, iterations):
        it = self.host(iterations)
        row["newton_iterations_mean"] = float(it.mean())
        row["newton_iterations_max"] = float(it.max())


# ----------------------------------------------------------------- directors (000)


def per_body_column(name: str) -> bool:
    """Whether the series column ``name`` is one body's (``b<i>_...``)."""
    head = name.split("_", 1)[0]
    return len(head) > 1 and head[0] == "b" and head[1:].isdigit()


def body_series_columns(names) -> list[str]:
    """The batch-level columns among ``names`` (those without a ``b<i>_`` prefix)."""
    return [n for n in names if not per_body_column(n)]


def _same(arrays, key, like, be):
    """``arrays[key]`` checked against the shape and dtype of the live array ``like``."""
    if key not in arrays:
        raise ValueError(f"checkpoint: array {key!r} is missing")
    a, ref = arrays[key], be.to_host(like)
    if a.shape != ref.shape or a.dtype != ref.dtype:
        raise ValueError(f"checkpoint: array {key!r} has shape {a.shape} {a.dtype}, the scene needs "
                         f"{ref.shape} {ref.dtype}")  # fmt: skip
    return a


# ------------------------------------------------------------------------ ulvc (001)
