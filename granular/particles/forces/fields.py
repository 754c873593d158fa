"""External fields: uniform gravity and the 3D pendulum potential (paper 003, eq. (39))."""

from __future__ import annotations

import numpy as np

from kernels.layout import FAMILY_GRAVITY, FAMILY_PENDULUM
from kernels.layout import Fields as FieldArgs


class UniformGravity:
    """Uniform acceleration ``g`` (3,) [length/time²]: ``U = -Σ m_i g·x_i``, ``F_i = m_i g``.

    In a model of replicas each replica may have its own: ``g`` (R, 3) and ``replica``
    (N,) each particle's replica; ``rows`` is then (R, 3), else (1, 3), and ``g`` the
    largest row (the one a bound on the step needs)."""

    kind = "gravity"
    family = FAMILY_GRAVITY
    energy_keys = ("U_gravity",)

    def __init__(self, backend, g, replica=None):
        self.rows = np.asarray(g, dtype=np.float64).reshape(-1, 3)
        if len(self.rows) > 1 and replica is None:
            raise ValueError(f"gravity: {len(self.rows)} rows (one per replica) need each particle's replica")
        self.replica = None if replica is None or len(self.rows) == 1 else np.asarray(replica, dtype=np.int32)
        self.g = tuple(float(c) for c in self.rows[int(np.argmax(np.linalg.norm(self.rows, axis=1)))])

    def accumulate(self, model, cfg) -> None:
        model.accumulate_family(self.family, cfg)

    def energies(self, model, cfg) -> dict:
        return model.family_energies(self.energy_keys, cfg)


class PendulumPotential:
    """3D pendula about fixed pivots, eq. (39): ``U = -m g e·R ρ0`` per attached particle.

    Acts on the rotation only (the particle's position stands for the pivot and feels no
    force); the spatial moment is ``RM = m g (Rρ0) × e`` (the printed (40) is garbled,
    see ``docs/physics.md``). With scalar inertia ``J`` about the pivot the dynamics
    conserves ``E = ½ J|Ω|² - m g e·Rρ0`` (41a), ``Rρ0·Ω`` (41b) and ``|Rρ0|`` (41c).

    Arrays (``P`` pendula, in the order they were added): ``index`` (P,) int64 particle
    of each pendulum (each particle at most once); ``rho0`` (P, 3) body-frame
    pivot-to-centre-of-mass vector [L]; ``mg`` (P,) ``m_i g`` [M L/T²];
    ``vertical`` (P, 3) unit vectors ``e``.
    """

    kind = "pendulum"
    family = FAMILY_PENDULUM
    energy_keys = ("U_pendulum",)

    def __init__(self, backend, n_particles, index, rho0, mg, vertical, dtype=np.float64):
        xp = backend.xp
        self.index_host = np.asarray(index, dtype=np.int64)
        self.rho0_host = np.asarray(rho0, dtype=np.float64)
        self.vertical_host = np.asarray(vertical, dtype=np.float64).reshape(-1, 3)
        slot = np.full(n_particles, -1, dtype=np.int32)
        slot[self.index_host] = np.arange(len(self.index_host), dtype=np.int32)
        self.index = xp.asarray(self.index_host)
        self.slot = xp.asarray(slot)
        self.rho0 = xp.asarray(self.rho0_host, dtype=dtype)
        self.mg = xp.asarray(np.asarray(mg), dtype=dtype)
        self.vertical = xp.asarray(self.vertical_host, dtype=dtype)

    def accumulate(self, model, cfg) -> None:
        model.accumulate_family(self.family, cfg)

    def energies(self, model, cfg) -> dict:
        return model.family_energies(self.energy_keys, cfg)


def field_args(backend, n_particles, gravity, pendulum, dtype) -> FieldArgs:
    """The ``Fields`` bundle for a gravity family (or ``None``) and a pendulum family (or
    ``None``)."""
    xp, dev = backend.xp, backend.kernels.to_device
    g = xp.asarray(gravity.rows.ravel() if gravity is not None else np.zeros(0), dtype=dtype)
    per = gravity.replica if gravity is not None and gravity.replica is not None else np.zeros(0, np.int32)
    replica = dev(xp.asarray(per))
    if pendulum is None:
        return FieldArgs(dev(g), dev(xp.zeros(0, dtype=np.int32)), dev(xp.zeros((0, 3), dtype=dtype)),
                         dev(xp.zeros(0, dtype=dtype)), dev(xp.zeros((0, 3), dtype=dtype)), replica)  # fmt: skip
    return FieldArgs(dev(g), dev(pendulum.slot), dev(pendulum.rho0), dev(pendulum.mg), dev(pendulum.vertical), replica)
