"""One chunk of an ensemble: bodies ``start..stop-1`` as one batched system, run in the run
loop (:class:`~granular.run.runner.Runner`) with a writer that times the spin flips, and
summarised one row per body."""

from __future__ import annotations

import os

import numpy as np

from ..backend import get_backend
from ..bodies.scenes.config import parse_bodies
from ..bodies.scenes.systems import build_system
from ..rotations import quat_from_matrix
from ..run.runner import AtStep, Callback, Periodic, Runner
from .spec import (
    EnsembleSpec,
    chunk_table,
)

__all__ = ["FlipWatch", "run_chunk"]

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


def _conserved_L(config, m) -> np.ndarray:
    """(m, 3) bool: which spatial components of each body's angular momentum its scheme
    conserves. All of them for a free body; under gravity (the heavy top, a falling ULVC
    body) only those along gravity, since the weight's moment is horizontal; none under
    the director schemes' loads or ULVC's torques. The others are reported as NaN."""
    t = config.table
    keep = np.ones((m, 3), dtype=bool)
    g = np.asarray(getattr(t, "gravity", None) or (0.0, 0.0, 0.0), dtype=np.float64).reshape(-1)[:3]
    along = np.linalg.norm(np.cross(g, np.eye(3)), axis=1) == 0.0  # e_c parallel to g (all when g = 0)
    if t.scheme == "livens":
        mass = np.broadcast_to(np.asarray(config.arrays.get("mass", np.zeros(m))), (m,))
        com = np.broadcast_to(np.asarray(config.arrays.get("center_of_mass", np.zeros((m, 3)))), (m, 3))
        heavy = (mass > 0) & (np.linalg.norm(com, axis=1) > 0)
        keep[heavy] = along
    elif t.scheme == "ulvc":
        if t.torque_body is not None or t.torque_spatial is not None:
            keep[:] = False
        elif t.gravity is not None:
            keep[:] = along
    elif t.scheme in ("directors", "nontwisting"):
        loaded = np.array([name not in ("none", "case1") for name in config.load] or [False], dtype=bool)
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


def run_chunk(spec: EnsembleSpec, start: int, stop: int, progress=None) -> dict:
    """Build bodies ``start..stop-1`` as one batched system, run ``spec.steps`` steps of
    ``spec.dt`` and return the summary columns ``{name: (stop - start,) array}``.
    ``progress(steps_done)`` is called now and then during the run (in-process runs)."""

    # a batch of one body takes other NumPy code paths (size-1 axes broadcast) and differs
    # from the same body in a larger batch in the last bits: run it twice, keep one
    m = stop - start
    idx = np.arange(start, stop, dtype=np.int64) if m > 1 else np.array([start, start], dtype=np.int64)
    table, columns = chunk_table(spec, start, stop, idx)
    config = parse_bodies(table, f"{spec.source} (bodies {start}..{stop - 1})")
    backend = get_backend(spec.backend)
    system = build_system(config, backend)
    dt = spec.dt
    mb = len(idx)  # bodies in the batch (m, or 2 for one body)
    E0, L0 = _invariants(system)
    watch = FlipWatch(system, mb)
    writers = [watch]
    if progress is not None:
        progress(0)
        writers.append(Callback(64, lambda runner: progress(runner.system.step_count)))
    if spec.kill_once_dir is not None:  # test hook: a worker dies mid-run, once per chunk
        marker = os.path.join(spec.kill_once_dir, f"chunk{start}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            if spec.steps // 2 == 0:
                os._exit(1)
            writers.append(Callback(AtStep(spec.steps // 2), lambda runner: os._exit(1)))
    Runner(system, dt, writers, handle_signals=False).run(spec.steps)
    axis, flip = watch.axis, watch.flip
    backend.synchronize()
    E1, L1 = _invariants(system)
    points, data = system.frame()
    if config.table.scheme in ("directors", "nontwisting"):  # pure rotation: the points are display offsets
        points = points - config.offsets
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
        kept = _conserved_L(config, mb)
        dL = np.where(kept, np.asarray(L1 - L0, dtype=np.float64), np.nan)
        for c, a in enumerate("xyz"):
            out[f"L_error_{a}"] = dL[:, c].copy()
        out["L_error_norm"] = np.where(kept.any(axis=1), np.sqrt(np.where(kept, dL, 0.0) ** 2 @ np.ones(3)), np.nan)
    out["flip_axis"] = system.host(axis).astype(np.int64) + 1
    out["flip_time"] = np.asarray(system.host(flip), dtype=np.float64)
    return {k: np.ascontiguousarray(v[:m]) for k, v in out.items()}
