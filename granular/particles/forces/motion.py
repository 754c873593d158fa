"""Prescribed motion of a planar wall: a tabulated translation and a steady rotation.

The wall's reference pose is where the model puts it (``n·x = c`` at ``t = 0``). Its
translation velocity is a table of rows ``(t, v_x, v_y, v_z)``, linear between rows and held
at the first row's value before it and at the last row's after it (one row: a constant
velocity); its displacement ``D(t)`` is the exact integral of that velocity from ``t = 0``.
It turns at the constant angular velocity ``ω`` about an axis through ``center`` (which
moves with the translation). The kernels place the wall at every step
(:mod:`kernels.walls`); this module checks the input and lays out the table.
"""

from __future__ import annotations

import math

import numpy as np

from kernels.walls import MOTION_END, MOTION_FIRST, MOTION_MOVING, MOTION_OMEGA, MOTION_P0, MOTION_WIDTH, translation


def _vec3(what: str, value) -> np.ndarray:
    try:
        a = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: must be 3 numbers, got {value!r}") from None
    if a.shape != (3,) or not np.isfinite(a).all():
        raise ValueError(f"{what}: must be 3 finite numbers, got {value!r}")
    return a


class WallMotion:
    """A wall's prescribed motion (see the module docstring).

    Parameters
    ----------
    velocity : 3 numbers, or rows ``(t, v_x, v_y, v_z)``, optional
        A constant translation velocity [L/T], or its table: times strictly increasing,
        the velocity linear between rows and held outside them.
    angular_velocity : 3 numbers, optional
        ``ω`` [1/T]: the wall turns by ``|ω| t`` about ``ω`` through ``center``.
    center : 3 numbers, optional
        A point of the rotation axis at ``t = 0`` [L] (default the origin); it moves with
        the translation.
    what : str
        The name errors give (``"wall 2"``).
    """

    def __init__(self, velocity=None, angular_velocity=None, center=None, what: str = "wall"):
        self.what = what
        rows = np.zeros((0, 4))
        if velocity is not None:
            try:
                v = np.asarray(velocity, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{what}: velocity must be 3 numbers or rows [t, vx, vy, vz], got {velocity!r}") from None
            if v.ndim == 1:
                rows = np.concatenate([[0.0], _vec3(f"{what}: velocity", velocity)])[None, :]
            elif v.ndim == 2 and v.shape[1] == 4 and len(v) >= 1:
                if not np.isfinite(v).all():
                    raise ValueError(f"{what}: velocity table must hold finite numbers")
                if np.any(np.diff(v[:, 0]) <= 0.0):
                    bad = int(np.flatnonzero(np.diff(v[:, 0]) <= 0.0)[0]) + 1
                    raise ValueError(f"{what}: velocity table: times must increase strictly; row {bad} has "
                                     f"t = {float(v[bad, 0])!r} after t = {float(v[bad - 1, 0])!r}")  # fmt: skip
                rows = v.copy()
            else:
                raise ValueError(f"{what}: velocity must be 3 numbers or rows [t, vx, vy, vz], got shape {v.shape}")
        self.rows = rows
        self.omega = np.zeros(3) if angular_velocity is None else _vec3(f"{what}: angular_velocity", angular_velocity)
        self.center = np.zeros(3) if center is None else _vec3(f"{what}: center", center)

    @property
    def moves(self) -> bool:
        """Whether the wall moves at all."""
        return bool(np.any(self.rows[:, 1:] != 0.0) or np.any(self.omega != 0.0))

    def table(self) -> np.ndarray:
        """The kernels' rows ``(t_j, v_j, D(t_j))`` (K, 7), ``D(0) = 0``."""
        v = self.rows
        out = np.zeros((len(v), 7))
        out[:, :4] = v
        for j in range(1, len(v)):  # displacement from the first row's time (exact: linear v)
            out[j, 4:] = out[j - 1, 4:] + 0.5 * (v[j, 0] - v[j - 1, 0]) * (v[j - 1, 1:] + v[j, 1:])
        if len(v):
            out[:, 4:] -= np.array(translation(out, 0, len(out), 0.0)[:3])
        return out

    def displacement(self, t: float) -> np.ndarray:
        """``D(t)`` [L] (host)."""
        return np.array(translation(self.table(), 0, len(self.rows), float(t))[:3])

    def velocity_at(self, t: float) -> np.ndarray:
        """``Ḋ(t)`` [L/T] (host)."""
        return np.array(translation(self.table(), 0, len(self.rows), float(t))[3:])

    def plane_at(self, normal, offset, t: float) -> tuple[np.ndarray, float]:
        """The plane ``(n, c)`` at time ``t`` of a wall ``normal·x = offset`` at ``t = 0`` (host)."""
        n0 = np.asarray(normal, dtype=np.float64)
        R = rotation_matrix(self.omega, float(t))
        n = R @ n0
        p = self.center + self.displacement(t)
        q = p + R @ (offset * n0 - self.center)
        return n, float(n @ q)


def rotation_matrix(omega, t: float) -> np.ndarray:
    """``R(ω t)``: the rotation by ``|ω| t`` about ``ω`` (host)."""
    w = np.asarray(omega, dtype=np.float64)
    s = math.sqrt(float(w @ w))
    if s == 0.0:
        return np.eye(3)
    a = w / s
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    th = s * t
    return np.eye(3) + math.sin(th) * K + (1.0 - math.cos(th)) * (K @ K)


def layout(motions, count: int):
    """The kernels' ``motion`` (W, 9) and ``table`` (K, 7) of ``count`` walls with the
    given motions (a list of :class:`WallMotion` or ``None``, or ``None`` for none)."""
    motion = np.zeros((count, MOTION_WIDTH))
    tables = []
    row = 0
    for w in range(count):
        m = None if motions is None else motions[w]
        if m is not None:
            motion[w, MOTION_P0:MOTION_P0 + 3] = m.center
        if m is None or not m.moves:
            continue
        t = m.table()
        tables.append(t)
        motion[w, MOTION_OMEGA:MOTION_OMEGA + 3] = m.omega
        motion[w, MOTION_FIRST] = row
        motion[w, MOTION_END] = row + len(t)
        motion[w, MOTION_MOVING] = 1.0
        row += len(t)
    table = np.concatenate(tables) if tables else np.zeros((0, 7))
    return motion, table
