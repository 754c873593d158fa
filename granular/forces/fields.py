"""External fields: uniform gravity and the 3D pendulum potential (paper 003, eq. (39))."""

from __future__ import annotations

import numpy as np


class UniformGravity:
    """Uniform acceleration ``g`` (3,) [length/time²]: ``U = -Σ m_i g·x_i``, ``F_i = m_i g``."""

    kind = "gravity"

    def __init__(self, backend, g):
        self.g = tuple(float(c) for c in g)

    def accumulate(self, model, cfg) -> None:
        model.backend.kernels.gravity(model.mass, self.g[0], self.g[1], self.g[2], cfg.F)

    def energies(self, model, cfg) -> dict:
        xp = model.backend.xp
        g = xp.asarray(self.g, dtype=cfg.x.dtype)
        return {"U_gravity": float(-(model.mass[:, None] * cfg.x * g).sum())}


class PendulumPotential:
    """3D pendulum about a fixed pivot, eq. (39): ``U = -m g e·R ρ0`` per attached particle.

    Acts on the rotation only (the particle's position stands for the pivot and feels no
    force); the spatial moment is ``RM = m g (Rρ0) × e`` (the printed (40) is garbled,
    see ``PAPER_NOTES.md``). With scalar inertia ``J`` about the pivot the dynamics
    conserves ``E = ½ J|Ω|² - m g e·Rρ0`` (41a), ``Rρ0·Ω`` (41b) and ``|Rρ0|`` (41c).

    Arrays: ``index`` (K,) int64 particle of each pendulum (each particle at most once);
    ``rho0`` (K, 3) body-frame pivot-to-centre-of-mass vector [length]; ``mg`` (K,)
    ``m_i g`` [mass·length/time²]; ``vertical`` ``e`` (3,) unit vector.
    """

    kind = "pendulum"

    def __init__(self, backend, index, rho0, mg, vertical, dtype=np.float64):
        xp = backend.xp
        self.index_host = np.asarray(index, dtype=np.int64)
        self.rho0_host = np.asarray(rho0, dtype=np.float64)
        self.index = xp.asarray(self.index_host)
        self.rho0 = xp.asarray(self.rho0_host, dtype=dtype)
        self.mg = xp.asarray(np.asarray(mg), dtype=dtype)
        self.vertical = tuple(float(c) for c in vertical)
        self._U = xp.zeros(len(self.index_host), dtype=dtype)  # scratch: energies
        self._RM = None  # scratch for energy-only evaluation, allocated on first use

    def _run(self, model, q, RM) -> None:
        e = self.vertical
        model.backend.kernels.pendulum(self.index, self.rho0, self.mg, e[0], e[1], e[2], q, RM, self._U)

    def accumulate(self, model, cfg) -> None:
        self._run(model, cfg.q, cfg.RM)

    def energies(self, model, cfg) -> dict:
        if self._RM is None:
            self._RM = model.backend.xp.zeros_like(cfg.x)
        self._run(model, cfg.q, self._RM)
        return {"U_pendulum": float(self._U.sum())}
