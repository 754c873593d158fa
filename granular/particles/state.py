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
``wall_springs`` (N, W, H)  history (springs) of each particle's wall contacts, H
                            floats per contact (a contact law that keeps history,
                            else (0, 0, 1)); W the walls a particle meets (its
                            replica's in a model of replicas); see ``docs/contacts.md``
``dissipated`` (N, 4)       energy each particle's contacts dissipated so far: normal
                            damping, friction slip, rolling, twisting (a pair's is
                            booked to its lower index, a wall contact's to its
                            particle) [M L²/T²] (a law that dissipates, else (0, 4))
``wall_contact_peak`` (N,)  the largest magnitude of the force of one wall contact on
                            the particle at any step so far (and at the first force
                            evaluation): a running maximum the force pass keeps on
                            the device, every step [M L/T²] (a model with walls, else
                            (0,))
``wall_work`` (N,)          the work the moving walls did on each particle so far
                            [M L²/T²] (a model with moving walls, else (0,))
``image``     (N, 3) int32  in a periodic box, the periods each particle crossed
                            along each axis (``x`` is kept in the box; ``x + image L``
                            is the unwrapped position), else (0, 3)
``neighbors``               the neighbour list of contact candidates with the pair
                            contacts' history (:class:`~granular.particles.neighbors.
                            NeighborList`), or ``None`` without a list
``status``     (N,) int32   failure bits of each particle in the last block of steps
                            (0 = fine; see :mod:`kernels.layout`)
=============  ===========  ==========================================================

plus the clock: ``time`` and ``step``, and ``forces_valid`` (whether ``F`` and ``RM``
belong to the current arrays).

Editing the state by hand is safe: change ``x``, ``v``, ``q`` or ``omega`` in place (or
assign new arrays of the same shape and dtype) and the next step sees it. The state keeps
a copy of those four arrays as they were when its forces were last evaluated; each call
of :class:`~granular.particles.integrators.ExplicitIntegrator` compares against it at
its start and copies them at its end (two passes over ``13 N`` numbers per call, not per
step: a loop of single ``step`` calls pays them every step, ``advance`` once) and
evaluates the forces again where anything changed, so stale forces never reach a step.
Other arrays (``F``, ``RM``, ``broken``, the springs) are the engine's; a state whose
positions hold a NaN always counts as edited.

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
    """The arrays that change during a run, on the model's backend, plus the clock.

    Make one with :meth:`Model.state() <granular.particles.model.Model.state>`. Arrays
    have ``N`` rows and the model's dtype; units are consistent units of mass ``M``,
    length ``L`` and time ``T``.

    Attributes
    ----------
    x : array, (N, 3)
        Centre positions [L].
    v : array, (N, 3)
        Velocities [L/T].
    q : array, (N, 4)
        Orientations as unit quaternions ``(q0, q1, q2, q3)``; ``R(q)`` maps body-frame
        vectors to the spatial frame.
    omega : array, (N, 3)
        Spatial angular velocities ``Ω = R ω`` [1/T].
    F, RM : array, (N, 3)
        Total force [M L/T²] and spatial moment [M L²/T²] at the current configuration.
    broken : array, (B,) int8
        1 for each bond that has broken.
    released : array, (B,)
        Energy each broken bond had when it broke [M L²/T²].
    wall_springs : array, (N, W, H)
        History of the wall contacts (a contact law that keeps H floats per contact;
        else empty); W is the number of walls a particle meets (in a model of replicas,
        those of its replica).
    dissipated : array, (N, 4)
        Energy each particle's contacts dissipated: normal damping, friction, rolling,
        twisting [M L²/T²] (a contact law that dissipates; else empty).
    wall_contact_peak : array, (N,)
        The largest magnitude of the force of one wall contact on each particle at any
        step so far [M L/T²], kept by the force pass on the device (every step, not only
        at samples); a model with walls, else empty. Set it to 0 to start a new maximum.
    wall_work : array, (N,)
        The work the moving walls did on each particle so far [M L²/T²] (a model with
        moving walls, else empty): ``total + dissipated - work`` is what the scheme
        conserves.
    image : array, (N, 3) int32
        In a periodic box (``ModelBuilder.set_periodic``): the periods each particle
        crossed along each axis; ``x`` stays in the box and ``x + image * L`` is the
        unwrapped position (:meth:`unwrapped`). Empty (0, 3) otherwise.
    neighbors : NeighborList or None
        The Verlet list of contact candidates and, parallel to its rows, the history of
        the pair contacts: part of the state (checkpoints and rewinds keep it).
    status : array, (N,) int32
        Failure bits of the last block of steps (0: fine).
    time : float
        Time [T], ``t0 + (step - step0) h`` (no accumulated round-off).
    step : int
        Steps taken.
    forces_valid : bool
        Whether ``F`` and ``RM`` belong to the current arrays (edits by hand are
        detected: :meth:`edited`).
    """

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
    wall_contact_peak: object = None
    wall_work: object = None
    image: object = None
    neighbors: object = field(default=None, repr=False, compare=False)
    time: float = 0.0
    step: int = 0
    forces_valid: bool = False  # F and RM belong to the current x and q
    #: ``(t0, step0, h, (time, step))``: the integrator sets ``time = t0 + (step - step0) h``
    #: and notes the ``(time, step)`` it wrote; a clock changed by hand starts a new origin.
    clock: tuple = None
    _engine: object = field(default=None, repr=False, compare=False)
    #: copies of the force inputs (x, v, q, omega) as they were when F and RM were evaluated
    _seen: object = field(default=None, repr=False, compare=False)

    @classmethod
    def allocate(cls, xp, n: int, dtype, x, v, q, omega, n_bonds: int = 0, walls: int = 0, history: int = 0,
                 dissipation: bool = False, wall_peak: bool = False, wall_work: bool = False,
                 periodic: bool = False) -> "State":  # fmt: skip
        """A state with copies of the given initial arrays, zero forces, intact bonds;
        with ``history`` floats per contact the wall history of ``walls`` walls per
        particle, with ``dissipation`` the dissipated energies (zero), with ``wall_peak``
        the running maximum of the wall contact force (zero), with ``wall_work`` the
        moving walls' work (zero), with ``periodic`` image counters (zero)."""
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
            wall_springs=xp.zeros((n, walls, history) if history else (0, 0, 1), dtype=dtype),
            dissipated=xp.zeros((n, 4) if dissipation else (0, 4), dtype=dtype),
            wall_contact_peak=xp.zeros(n if wall_peak else 0, dtype=dtype),
            wall_work=xp.zeros(n if wall_work else 0, dtype=dtype),
            image=xp.zeros((n if periodic else 0, 3), dtype=xp.int32),
        )

    @property
    def n(self) -> int:
        """Number of particles ``N``."""
        return self.x.shape[0]

    def unwrapped(self, period):
        """Positions with the periods crossed added back, ``x + image L`` (N, 3), for a
        model's ``period`` (:attr:`Model.period <granular.particles.model.Model.period>`,
        (3, 3) rows ``(lo, L, 1/L)``; empty: ``x`` itself)."""
        if period is None or period.shape[0] == 0 or self.image is None or self.image.shape[0] == 0:
            return self.x
        return self.x + self.image.astype(self.x.dtype) * period[:, 1]

    @property
    def alpha(self):
        """RRP ``α = 2 q_vec / q0`` of the total orientation (infinite at a half turn)."""
        return rotations.rrp_from_quat(self.q)

    @property
    def R(self):
        """Rotation matrices, (N, 3, 3)."""
        return rotations.quat_to_matrix(self.q)

    def _force_inputs(self) -> tuple:
        return (self.x, self.v, self.q, self.omega)

    def remember_forces(self) -> None:
        """Note that ``F`` and ``RM`` belong to the arrays as they are now (the step loop
        and the restores call this; :meth:`edited` compares against it)."""
        arrays = self._force_inputs()
        seen = self._seen
        if seen is None or any(a.shape != b.shape or a.dtype != b.dtype or type(a) is not type(b)
                               for a, b in zip(arrays, seen)):  # fmt: skip
            self._seen = tuple(a.copy() for a in arrays)
        else:
            for a, b in zip(arrays, seen):
                b[...] = a

    def edited(self) -> bool:
        """Whether ``x``, ``v``, ``q`` or ``omega`` changed since the forces were last
        evaluated (False when that is not known: a state assembled by hand)."""
        seen = self._seen
        if seen is None:
            return False
        xp = rotations.array_module(self.x)
        for a, b in zip(self._force_inputs(), seen):
            if a.shape != b.shape or a.dtype != b.dtype or type(a) is not type(b) or not bool(xp.array_equal(a, b)):
                return True
        return False

    def copy(self) -> "State":
        """An independent copy (same backend), including the clock."""
        xp = rotations.array_module(self.x)
        new = State.allocate(xp, self.n, self.x.dtype, self.x, self.v, self.q, self.omega, len(self.broken))
        new.wall_springs = self.wall_springs.copy()
        new.dissipated = self.dissipated.copy()
        if self.wall_contact_peak is not None:
            new.wall_contact_peak = self.wall_contact_peak.copy()
        if self.wall_work is not None:
            new.wall_work = self.wall_work.copy()
        if self.image is not None:
            new.image = self.image.copy()
        new.neighbors = None if self.neighbors is None else self.neighbors.copy()
        new.F[...] = self.F
        new.RM[...] = self.RM
        new.broken[...] = self.broken
        new.released[...] = self.released
        new.time, new.step, new.forces_valid, new.clock = self.time, self.step, self.forces_valid, self.clock
        new._seen = None if self._seen is None else tuple(a.copy() for a in self._seen)
        return new
