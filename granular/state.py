"""``State``: the arrays that change during a run, on the model's backend.

All arrays have ``N`` rows (one per particle) and the model's float dtype (float64 by
default), in consistent units of length, time and mass:

=============  ===========  ==========================================================
``x``          (N, 3)       position of the centre [length]
``v``          (N, 3)       velocity [length/time]
``q``          (N, 4)       orientation, unit quaternion ``(q0, q1, q2, q3)``; ``R(q)``
                            maps body-frame vectors to the spatial frame [-]
``omega``      (N, 3)       spatial angular velocity ``Ω = R ω`` [1/time]
``F``          (N, 3)       total force at the current configuration [mass·length/time²]
``RM``         (N, 3)       total spatial moment at the current configuration
                            [mass·length²/time²]
``status``     (N,) int32   per-particle code of the last step (0 = fine)
``broken``     (B,) int8    1 for each bond that has broken (B bonds; 0 = intact)
=============  ===========  ==========================================================

The total orientation is kept as a unit quaternion, not as RRP, because RRP are
singular at a half turn and a particle in an impact spins through many turns
(``PAPER_NOTES.md``); :attr:`State.alpha` gives the RRP view on demand.

The integrators double-buffer: a step writes the new state into a second set of arrays
and swaps them in only when every particle passed its checks, so a failed step leaves
the state as it was. Hold on to the ``State``, not to its arrays, across steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import rotations

_SWAPPED = ("x", "v", "q", "omega", "F", "RM", "broken")


@dataclass
class _Buffers:
    x: object
    v: object
    q: object
    omega: object
    F: object
    RM: object
    broken: object


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
    time: float = 0.0
    step: int = 0
    forces_valid: bool = False  # F and RM belong to the current x and q
    _back: _Buffers = field(default=None, repr=False)

    @classmethod
    def allocate(cls, xp, n: int, dtype, x, v, q, omega, n_bonds: int = 0) -> "State":
        """A state with copies of the given initial arrays, zero forces, intact bonds."""

        def new(cols):
            return xp.zeros((n, cols), dtype=dtype)

        state = cls(
            x=xp.array(x, dtype=dtype),
            v=xp.array(v, dtype=dtype),
            q=xp.array(q, dtype=dtype),
            omega=xp.array(omega, dtype=dtype),
            F=new(3),
            RM=new(3),
            status=xp.zeros(n, dtype=xp.int32),
            broken=xp.zeros(n_bonds, dtype=xp.int8),
        )
        state._back = _Buffers(new(3), new(3), new(4), new(3), new(3), new(3), xp.zeros(n_bonds, dtype=xp.int8))
        return state

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def back(self) -> _Buffers:
        """The second set of arrays a step writes into."""
        return self._back

    def swap(self) -> None:
        """Exchange the current arrays with the back buffers (the step's commit)."""
        for name in _SWAPPED:
            cur = getattr(self, name)
            setattr(self, name, getattr(self._back, name))
            setattr(self._back, name, cur)

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
        new.F[...] = self.F
        new.RM[...] = self.RM
        new.broken[...] = self.broken
        new.time, new.step, new.forces_valid = self.time, self.step, self.forces_valid
        return new
