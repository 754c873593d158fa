"""``State``: the arrays that change during a run, on the model's backend.

All arrays have ``N`` rows (one per particle) and the model's float dtype (float64 by
default), in consistent units of length, time and mass:

=============  ===========  ==========================================================
``x``          (N, 3)       position of the centre [L]
``v``          (N, 3)       velocity [length/time]
``q``          (N, 4)       orientation, unit quaternion ``(q0, q1, q2, q3)``; ``R(q)``
                            maps body-frame vectors to the spatial frame [-]
``omega``      (N, 3)       spatial angular velocity ``Ω = R ω`` [1/time]
``F``          (N, 3)       total force at the current configuration [M L/T²]
``RM``         (N, 3)       total spatial moment at the current configuration
                            [mass·length²/time²]
``broken``     (B,) int8    1 for each bond that has broken (B bonds; 0 = intact)
``released``   (B,)         energy each broken bond had when it broke [M L²/T²]
``wall_springs`` (N, W, 8)  springs of each particle's wall contacts (dissipative
                            contact law only, else (0, 0, 8)); see ``docs/contacts.md``
``dissipated`` (N, 4)       energy each particle's contacts dissipated so far: normal
                            damping, friction slip, rolling, twisting (each end of a
                            pair books half) [M L²/T²] (dissipative law only, else (0, 4))
``status``     (N,) int32   failure bits of each particle in the last block of steps
                            (0 = fine; see :mod:`kernels.layout`)
=============  ===========  ==========================================================

plus the clock: ``time`` and ``step``, and ``forces_valid`` (whether ``F`` and ``RM``
belong to the current ``x`` and ``q``; set it to ``False`` after editing positions or
orientations by hand).

The total orientation is kept as a unit quaternion, not as RRP, because RRP are
singular at a half turn and a particle in an impact spins through many turns;
:attr:`State.alpha` gives the RRP view on demand.

The integrators update the arrays in place. A block of steps saves the state at its
start on the device and restores it if any check fails, so a failed step leaves the state
exactly as it was before that step. Hold on to the ``State``, not to copies of its
attributes, across steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import rotations


@dataclass
class State:
    """Changing per-particle arrays plus the clock; see the module docstring for shapes."""

    x: object
    v: object
    q: object
    omega: object
    F: object
    RM: object
    status: object
    broken: object
    released: object = None
    wall_springs: object = None
    dissipated: object = None
    time: float = 0.0
    step: int = 0
    forces_valid: bool = False  # F and RM belong to the current x and q
    #: ``(t0, step0, h, (time, step))``: the integrator sets ``time = t0 + (step - step0) h``
    #: and notes the ``(time, step)`` it wrote; a clock changed by hand starts a new origin.
    clock: tuple = None
    _engine: object = field(default=None, repr=False, compare=False)
    #: contact springs kept aside while the model's neighbour list serves another state
    _springs: object = field(default=None, repr=False, compare=False)

    @classmethod
    def allocate(cls, xp, n: int, dtype, x, v, q, omega, n_bonds: int = 0, walls: int | None = None) -> "State":
        """A state with copies of the given initial arrays, zero forces, intact bonds;
        ``walls``: the number of walls when the dissipative contact law is on (``None``:
        off), for the wall springs and the dissipated energies."""
        law = walls is not None
        return cls(
            x=xp.array(x, dtype=dtype),
            v=xp.array(v, dtype=dtype),
            q=xp.array(q, dtype=dtype),
            omega=xp.array(omega, dtype=dtype),
            F=xp.zeros((n, 3), dtype=dtype),
            RM=xp.zeros((n, 3), dtype=dtype),
            status=xp.zeros(n, dtype=xp.int32),
            broken=xp.zeros(n_bonds, dtype=xp.int8),
            released=xp.zeros(n_bonds, dtype=dtype),
            wall_springs=xp.zeros((n, walls, 8) if law else (0, 0, 8), dtype=dtype),
            dissipated=xp.zeros((n, 4) if law else (0, 4), dtype=dtype),
        )

    @property
    def n(self) -> int:
        """Number of particles ``N``."""
        return self.x.shape[0]

    @property
    def alpha(self):
        """RRP ``α = 2 q_vec / q0`` of the total orientation (infinite at a half turn)."""
        return rotations.rrp_from_quat(self.q)

    @property
    def R(self):
        """Rotation matrices, (N, 3, 3)."""
        return rotations.quat_to_matrix(self.q)

    def copy(self) -> "State":
        """An independent copy (same backend), including the clock."""
        xp = rotations.array_module(self.x)
        new = State.allocate(xp, self.n, self.x.dtype, self.x, self.v, self.q, self.omega, len(self.broken))
        new.wall_springs = self.wall_springs.copy()
        new.dissipated = self.dissipated.copy()
        new.F[...] = self.F
        new.RM[...] = self.RM
        new.broken[...] = self.broken
        new.released[...] = self.released
        new.time, new.step, new.forces_valid, new.clock = self.time, self.step, self.forces_valid, self.clock
        return new
