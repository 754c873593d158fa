"""The device-resident step loop of the particle engine: blocks of steps, checked once.

A block of ``K`` steps runs without the host looking at the device in between
(:class:`kernels.program.Program`: save, optional neighbour rebuild, ``K`` steps,
report; on a real GPU replayed from CUDA graphs). Every failure condition is a status bit
or a report slot on the device, read once at the end of the block:

* an incremental rotation outside the map's domain, or a NaN/infinity (status bits);
* a particle that moved more than skin/2 since the neighbour list was built (status bit);
* a neighbour row or hash bucket that outgrew its array in a rebuild (report slots).

When the block is clean it is committed as it stands. Otherwise the state saved at the
block's start is restored on the device; an overflow grows the arrays and runs the block
again; anything else re-runs the block one checked step at a time
(:meth:`ParticleEngine.step`), which rebuilds the neighbour list where a particle crossed
skin/2 and raises the same :class:`~granular.errors.IntegrationError`, at the same
step, for the same particle, as a step-by-step loop would, leaving the state as it was
before that step. Neighbour rows are kept sorted, so forces do not depend on when the
list was rebuilt, and a trajectory is the same bit for bit for every block length.

Kernels that rebuild the neighbour list inside a block (the CPU's: after each advance,
wherever a particle crossed skin/2, as LAMMPS checks every step) run blocks of the
largest length that fits the request (at most :data:`MAX_BLOCK`); a rebuild inside a
block that outgrows the arrays stops the block, which is restored and run again after
the regrow. Elsewhere (the GPU) the block length is the largest that fits, unless the
particles would likely cross skin/2 before its end: from the largest displacement since
the last build and the largest speed measured at the end of the previous block, with a
safety factor that doubles after every skin failure. When the remaining budget cannot
cover the block, the block starts with a rebuild.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from kernels.layout import (
    BIT_NOT_FINITE,
    BIT_ROTATION,
    REPORT_ACCEL2,
    REPORT_DISPLACEMENT2,
    REPORT_NOT_FINITE,
    REPORT_REBUILDS,
    REPORT_ROTATION,
    REPORT_SIZE,
    REPORT_SKIN,
    REPORT_SPEED2,
    Dynamics,
    Flags,
)
from kernels.program import Program

from ...compiling import compile_seconds
from ...errors import NonFiniteError, StepSizeError
from .schemes import EQUATION, SCHEME_NAMES, rotation_measure
from .threads import ThreadTuner, tuning_enabled

#: Longest block of steps between two reports.
MAX_BLOCK = 256

#: Factor on the largest speed when predicting displacements (doubles after a skin
#: failure, decays back after clean blocks).
SAFETY = 1.5


def check_state(model, state) -> None:
    """``ValueError`` naming the first array of ``state`` whose backend, shape or dtype
    is not the model's (a state of another model, or an array replaced by hand)."""
    xp, n = model.backend.xp, model.n
    for name, width in (("x", 3), ("v", 3), ("q", 4), ("omega", 3), ("F", 3), ("RM", 3)):
        a = getattr(state, name)
        if not isinstance(a, xp.ndarray):
            raise ValueError(f"state.{name}: is a {type(a).__module__}.{type(a).__name__}; the model's backend "
                             f"({model.backend.name}) needs {xp.__name__}.ndarray (make the state with model.state())")  # fmt: skip
        if name == "x" and a.shape[0] != n:
            raise ValueError(f"state: has {a.shape[0]} particles, the model {n}")
        if a.shape != (n, width):
            raise ValueError(f"state.{name}: has shape {a.shape}; the model needs ({n}, {width})")
        if np.dtype(a.dtype) != model.dtype:
            raise ValueError(f"state: dtype {a.dtype} (state.{name}) differs from the model's {model.dtype}")


class ParticleEngine:
    """Runs the step kernels of one ``(model, state)`` pair; see the module docstring.

    ``graphs``: capture blocks as CUDA graphs on a real GPU (ignored elsewhere).
    Counters: ``steps`` committed, ``blocks`` run, ``block_rebuilds`` (neighbour
    rebuilds inside blocks), ``redone`` (blocks re-run step by step), ``regrows``.
    """

    def __init__(self, model, state, graphs=True, max_block=MAX_BLOCK):
        check_state(model, state)
        self.model, self.state = model, state
        self.graphs = bool(graphs)
        be = model.backend
        xp = be.xp
        self.max_block = max(1, int(max_block))
        self.neighbors = model.neighbors_of(state)
        self.report = xp.zeros(REPORT_SIZE, dtype=np.float64)
        self._saved = [xp.zeros_like(a) for a in (state.x, state.v, state.q, state.omega, state.F, state.RM,
                                                  state.broken, state.released)]  # fmt: skip
        self._saved_peak = None  # a copy of the wall contact peak (Model.wall_peak_of), made for its shape
        self._saved_work = None  # a copy of the moving walls' work (Model.wall_work_of), made for its shape
        self._saved_image = None  # a copy of the image counters (Model.image_of), made for its shape
        self._saved_law = None  # copies of the law's arrays (Model.law_arrays), made for their shapes
        stream = None
        if be.name == "gpu" and not be.simulated:
            stream = xp.cuda.Stream(non_blocking=True)
        self.program = Program(model.kernels, self._bundles(), self.report, stream, graphs)
        self._bound = self._arrays()
        self._generation = self._nl("generation")
        self._version = self._nl("version")
        self._d2 = None  # largest squared displacement since the last build (None: unknown)
        self._v2 = 0.0
        self._a2 = 0.0
        self.safety = SAFETY
        self.steps = self.blocks = self.block_rebuilds = self.redone = self.regrows = 0

        # the CPU's parallel blocks: the thread count measured block by block (threads.py)
        parallel = be.name == "cpu" and model.n >= getattr(be.kernels, "SERIAL_BELOW", math.inf)
        self.threads = ThreadTuner(numba.get_num_threads()) if parallel and tuning_enabled() else None

    # ------------------------------------------------------------------ binding

    def _nl(self, attr):
        return getattr(self.neighbors, attr) if self.neighbors is not None else 0

    def _arrays(self):
        s = self.state
        return (s.x, s.v, s.q, s.omega, s.F, s.RM, s.broken, s.released, s.status, s.wall_springs, s.dissipated,
                s.wall_contact_peak, s.wall_work, s.image)  # fmt: skip

    def _bundles(self) -> dict:
        dev = self.model.backend.kernels.to_device
        b = self.model.kernel_args(self.state)
        b["dyn"] = self.model.dynamics(self.state, step=True)
        law = self.model.law_arrays(self.state)
        names = ("hist", "live", "whist", "dissip", "nbr", "count", "x_ref")
        if self._saved_law is None or any(self._saved_law[k].shape != law[k].shape for k in names):
            self._saved_law = {k: law[k].copy() for k in names}
        sl = self._saved_law
        peak = self.model.wall_peak_of(self.state)
        if self._saved_peak is None or self._saved_peak.shape != peak.shape:
            self._saved_peak = peak.copy()
        work = self.model.wall_work_of(self.state)
        if self._saved_work is None or self._saved_work.shape != work.shape:
            self._saved_work = work.copy()
        image = self.model.image_of(self.state)
        if self._saved_image is None or self._saved_image.shape != image.shape:
            self._saved_image = image.copy()
        b["saved"] = Dynamics(*(dev(a) for a in self._saved), dev(law["none3"]), dev(law["none3"]),
                              *(dev(sl[k]) for k in names), dev(self._saved_peak), dev(self._saved_work),
                              dev(self._saved_image))  # fmt: skip
        b["flags"] = Flags(dev(self.state.status), dev(self.report))
        return b

    def _check_binding(self) -> None:
        """Rebind the kernels if the state's arrays were replaced or the neighbour list
        regrew; forget the displacement budget if the list was rebuilt elsewhere. The
        program's stream then waits for what the host queued on the default stream (a
        host build, a regrow's allocations and copies): on a real GPU the two streams
        are not ordered otherwise."""
        nl = self.model.neighbors_of(self.state)
        if nl is not self.neighbors:  # the state was given another list (a restore)
            self.neighbors = nl
            self._generation = self._version = -1
        arrays = self._arrays()
        if any(a is not b for a, b in zip(arrays, self._bound)):
            check_state(self.model, self.state)
        if any(a is not b for a, b in zip(arrays, self._bound)) or self._nl("generation") != self._generation:
            self.program.rebind(self._bundles())
            self._bound = arrays
            self._generation = self._nl("generation")
        if self._nl("version") != self._version:
            self._version = self._nl("version")
            self._d2 = None
        self.program.wait_for_host_work()

    # ------------------------------------------------------------------- stepping

    def check_edits(self) -> None:
        """At a public entry (:class:`~granular.particles.integrators.ExplicitIntegrator`):
        if the state was changed by hand since its forces were evaluated, evaluate them
        again (and rebuild the neighbour list) before the next step."""
        st = self.state
        if st.forces_valid and st.edited():
            st.forces_valid = False
            if self.neighbors is not None:
                self.neighbors.invalidate()
            self._d2 = None

    def prepare(self) -> None:
        """Evaluate the forces at the current configuration if they are not current
        (bonds past their thresholds break here)."""
        st = self.state
        self._check_binding()
        if st.forces_valid:
            return
        if self.neighbors is not None and not self.neighbors.valid:
            self.neighbors.build(st.x)
            self._check_binding()
        self._wall_clock(None)
        self.program.head(False)
        if self.model.law is not None and self.model.law.vp is not None:  # the first evaluation sees v and Ω
            self.program.velocities()
        self.program.forces(False, 0, st.x.dtype.type(0.0))
        self.program.tail()
        rep = self.program.read_report()
        st.forces_valid = True
        st.remember_forces()
        self._d2 = rep[REPORT_DISPLACEMENT2]
        self._v2, self._a2 = rep[REPORT_SPEED2], rep[REPORT_ACCEL2]

    def advance(self, scheme: int, h, steps: int) -> None:
        """Take ``steps`` steps of size ``h`` (a float of the model's dtype) in blocks."""
        self.prepare()
        left = int(steps)
        while left > 0:
            if self._d2 is None:
                self._measure()
            count, rebuild = self._plan(min(left, self.max_block), float(h))
            compiled = compile_seconds()
            rep, threads, seconds = self._block(count, scheme, h, rebuild)
            compiled = compile_seconds() != compiled
            self.blocks += 1
            inner = int(rep[REPORT_REBUILDS])  # rebuilds inside the block's steps
            if (rebuild or inner) and self.neighbors is not None and self.neighbors.outgrown(rep):
                self._undo()  # the block runs again from its start, with the rows as they were there
                self.neighbors.overflowed(rep, restored=True)
                self.regrows += 1
                self._check_binding()
                continue
            if self.threads is not None:  # a block that rebuilt, failed or compiled says nothing of the threads
                clean = not (rebuild or rep[REPORT_ROTATION] or rep[REPORT_NOT_FINITE] or rep[REPORT_SKIN]
                             or compiled)  # fmt: skip
                self.threads.record(threads, count, seconds, comparable=clean and count >= 4)
            if rep[REPORT_ROTATION] or rep[REPORT_NOT_FINITE] or rep[REPORT_SKIN]:
                self._undo()
                self.redone += 1
                if rep[REPORT_SKIN]:
                    self.safety = min(16.0 * SAFETY, 2.0 * self.safety)
                for _ in range(count):
                    self.step(scheme, h)
            else:
                if rebuild or inner:
                    self.neighbors.builds += int(rebuild) + inner
                    self.block_rebuilds += int(rebuild) + inner
                self._d2 = rep[REPORT_DISPLACEMENT2]
                self._v2, self._a2 = rep[REPORT_SPEED2], rep[REPORT_ACCEL2]
                self.safety = max(SAFETY, 0.95 * self.safety)
                self._commit(count, h)
            left -= count

    def _undo(self) -> None:
        """Restore the state saved at the start of the last block or step and wait for
        it. The saved rows of the neighbour list hold their listed slots only, so springs
        that a rebuild since held past a row's restored end are cleared
        (:meth:`~granular.particles.neighbors.NeighborList.clear_past_ends`)."""
        self.program.restore()
        self.program.read_report()  # the restore done before any host work on the rows
        if self.neighbors is not None:
            self.neighbors.clear_past_ends()
            self.program.wait_for_host_work()  # on a GPU: queued on the default stream

    def _block(self, count, scheme, h, rebuild):
        """Run one block (on the thread count :class:`ThreadTuner` picks, on the CPU);
        returns the report, the threads and the seconds it took."""
        tuner = self.threads
        self._wall_clock(h)
        if tuner is None:
            self.program.block(count, scheme, h, rebuild)
            return self.program.read_report(), None, 0.0
        threads, before = tuner.choose(), numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            t0 = time.perf_counter()
            self.program.block(count, scheme, h, rebuild)
            rep = self.program.read_report()
            return rep, threads, time.perf_counter() - t0
        finally:
            numba.set_num_threads(before)

    def step(self, scheme: int, h) -> None:
        """One checked step (see the module docstring); raises on failure with the state
        as it was before the step."""
        self.prepare()
        p = self.program
        self._wall_clock(h)
        p.head(False)
        p.advance(scheme, h)
        p.tail()
        rep = p.read_report()
        if rep[REPORT_ROTATION] or rep[REPORT_NOT_FINITE]:
            raise self._failure(scheme, h)
        if self.neighbors is not None and (rep[REPORT_SKIN] or not self.neighbors.valid):
            self.neighbors.build(self.state.x)  # at the new positions; waits for the device
            self._check_binding()
        p.forces(True, scheme, h)
        p.tail()
        rep = p.read_report()
        if rep[REPORT_NOT_FINITE]:
            raise self._failure(scheme, h)
        self._d2 = rep[REPORT_DISPLACEMENT2]
        self._v2, self._a2 = rep[REPORT_SPEED2], rep[REPORT_ACCEL2]
        self._commit(1, h)

    @property
    def rebuilds_in_block(self) -> bool:
        """Whether the program's blocks rebuild the neighbour list inside their steps
        wherever a particle crossed skin/2 (the CPU's one-call blocks): then blocks are not
        cut short to stay within the skin."""
        k = self.program.k
        return bool(getattr(k, "REBUILDS_IN_BLOCK", False)) and getattr(k, "block", None) is not None

    def _measure(self) -> None:
        """Displacement since the last build and speed of the current state."""
        if self.neighbors is not None and not self.neighbors.valid:
            self.neighbors.build(self.state.x)
            self._check_binding()
        self._wall_clock(None)
        self.program.head(False)
        self.program.tail()
        rep = self.program.read_report()
        self._d2, self._v2, self._a2 = rep[REPORT_DISPLACEMENT2], rep[REPORT_SPEED2], rep[REPORT_ACCEL2]

    def _plan(self, wanted: int, h: float) -> tuple[int, bool]:
        """Block length and whether to rebuild the neighbour list first.

        The fastest particle moves at most ``d(k) = k h v + (k h)² a / 2`` in ``k`` steps
        (``v``, ``a``: the largest speed and acceleration at the end of the last block),
        times the safety factor. The block runs without a rebuild while the unused part
        of the skin/2 budget covers it, or covers at least half of what a fresh list
        would; otherwise it starts with a rebuild.
        """
        if self.neighbors is None or self.rebuilds_in_block:
            return wanted, False
        budget = 0.5 * self.neighbors.skin
        used = math.sqrt(self._d2)
        v, a = self.safety * h * math.sqrt(self._v2), 0.5 * self.safety * h * h * math.sqrt(self._a2)

        def steps_within(room):
            """Largest k with v k + a k² <= room."""
            if room <= 0.0:
                return 0
            if a == 0.0:
                return wanted if v == 0.0 else int(room / v)
            return int((math.sqrt(v * v + 4.0 * a * room) - v) / (2.0 * a))

        fresh = max(1, min(wanted, steps_within(budget)))
        free = min(wanted, steps_within(budget - used))
        if free >= min(wanted, (fresh + 1) // 2) and free >= 1:
            return free, False
        return fresh, True

    def _wall_clock(self, h) -> None:
        """The moving walls' clock before a head: the state's time as :meth:`_commit`
        counts it, ``t_0 + k h`` with the origin the next step will use (``h = None``:
        no step follows, the walls go to the state's time)."""
        st = self.state
        if h is None:
            self.program.set_wall_clock(st.time, 0, 0.0)
            return
        h = float(h)
        clock = st.clock
        if clock is None or clock[2] != h or clock[3] != (st.time, st.step):
            self.program.set_wall_clock(st.time, 0, h)
        else:
            self.program.set_wall_clock(clock[0], st.step - clock[1], h)

    def _commit(self, count: int, h) -> None:
        """Advance the clock: ``time = t0 + (step - step0) h`` with ``(t0, step0, h)`` in
        ``state.clock`` since the last change of ``h`` or of the clock by hand (no
        accumulated round-off; saved in checkpoints, so a resumed run has the same times)."""
        st = self.state
        h = float(h)
        clock = st.clock
        if clock is None or clock[2] != h or clock[3] != (st.time, st.step):
            clock = (st.time, st.step, h)
        st.step += count
        st.time = clock[0] + (st.step - clock[1]) * h
        st.clock = clock[:3] + ((st.time, st.step),)
        self.steps += count

    # -------------------------------------------------------------------- failure

    def _failure(self, scheme, h):
        """Restore the state saved before the step and describe what failed."""
        model, st = self.model, self.state
        bits = model.backend.to_host(st.status)
        bad = np.flatnonzero(bits & BIT_NOT_FINITE)
        culprit = self._non_finite_entry(int(bad[0])) if bad.size else None  # before the restore
        self._undo()  # the status bits are not part of the saved state
        name = SCHEME_NAMES[scheme]
        h = float(h)
        where = f"step {st.step + 1} (t = {st.time:.17g} -> {st.time + h:.17g})"
        domain = np.flatnonzero(bits & BIT_ROTATION)
        if domain.size:
            rho = rotation_measure(model, st, name, h)
            i = int(domain[np.argmax(rho[domain])])
            what = {
                "exact": "h|Ω + h RM/2J|",
                "verlet": "|Δα|/2 = h|Ω + h RM/2J|/2",
                "campello": "|Δα|/2 = h|Ω + h RM/J|/2",
            }[name]
            return StepSizeError(
                f"{where}: map {EQUATION[name]} needs {what} < 1 (incremental rotation "
                f"below pi/2); particle {i} has {rho[i]:.6g} with h = {h:.6g} "
                f"({domain.size} particle(s) affected). The state is unchanged; reduce h.",
                step=st.step + 1, particle=i, value=float(rho[i]),
            )  # fmt: skip
        i = int(bad[0]) if bad.size else -1
        field, row, value = culprit if culprit is not None else ("state", None, math.nan)
        seen = f": {field} = {np.array2string(row, precision=6)}" if row is not None else ""
        return NonFiniteError(
            f"{where}: a NaN or infinity appeared in the state or forces of particle {i}{seen} "
            f"({bad.size} particle(s) affected). The state is unchanged.",
            step=st.step + 1, particle=i, value=value,
        )  # fmt: skip

    def _non_finite_entry(self, i: int):
        """``(name, row, value)``: the first of particle ``i``'s position, velocity,
        orientation, angular velocity, force and moment that is not finite, as the failed
        step left it, and its first non-finite component; ``None`` if all are finite."""
        st, be = self.state, self.model.backend
        for name in ("x", "v", "q", "omega", "F", "RM"):
            row = be.to_host(getattr(st, name)[i])
            off = np.flatnonzero(~np.isfinite(row))
            if off.size:
                return name, row, float(row[off[0]])
        return None
