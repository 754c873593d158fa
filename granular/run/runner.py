"""One run loop for every system: particles, batched bodies, ensemble chunks.

A :class:`Runner` advances a :class:`System` by ``dt`` to an end step and calls its
writers when their triggers are due, as HOOMD-blue's writers are attached to its
simulation. Between two due events the system advances in blocks (one call of
:meth:`System.advance`, which on a GPU is one device-resident block of launches), about
half a second of work each, so progress and signals are looked at that often.

At each event where a *checked* writer is due (series rows, frames, checkpoints) the
runner asks the system for its series row and its health verdict (:meth:`System.check`)
before anything is written; a state that passes is kept (:meth:`System.keep`). When a
check or a step fails, the kept state is put back (:meth:`System.rewind`), the writers'
``end`` hooks run on it (the final checkpoint, ``run.json``), and the error is raised.
Signals (SIGINT, SIGTERM) stop the run after the current block with the same ``end``
hooks, so a stopped run is a resumable run; a signal while the ``end`` hooks write the
last files waits for them (the run has finished its steps: it ends as a finished run).

Writers are small objects with a ``trigger`` and up to four hooks, each optional:

``begin(runner, resumed)``
    before the first step (open files, write the initial row and frame);
``before(runner)``
    when due, before any writer writes: an edit of the system (particles that enter or
    leave); the state is checked before it and kept after it;
``write(runner, row)``
    when ``trigger.due(step, end)``; ``row`` is the series row when the writer is
    ``checked`` (the default), else None;
``sync()``
    make what was written durable (the checkpoint writer calls it on the others first);
``end(runner)``
    after the loop, on the last good state, in the order the writers were attached.

Triggers: :class:`Periodic` (every k steps, and the end step), :class:`AtStep`. Writers
that only measure (:class:`Callback`) are unchecked; a run with no checked writer makes no
health check at all.
"""

from __future__ import annotations

import math
import numbers
import signal
import threading
import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..compiling import compile_seconds
from ..errors import HealthError, IntegrationError
from .progress import Chunker

__all__ = ["AtStep", "Callback", "Periodic", "Runner", "System", "Trigger", "end_step"]


def end_step(step: int, time: float, dt: float, steps=None, until=None, dtype=np.float64) -> int:
    """The step a run from ``(step, time)`` with steps of ``dt`` stops at: ``steps`` more
    steps (relative; a whole number >= 1), or the first step at or after the time
    ``until`` (absolute; a step within round-off of it, in the precision ``dtype`` the
    system steps in, counts as on it: in float32, ``dt = 7e-4`` is ``6.99999975e-4`` and
    step 2000 is ``until = 1.4``). Exactly one of the two; ``ValueError`` naming the
    argument."""
    if (steps is None) == (until is None):
        raise ValueError("run: give steps (how many from here) or until (the time to reach), not both"
                         if steps is not None else "run: give steps (how many from here) or until (the time to reach)")  # fmt: skip
    if steps is not None:
        if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, numbers.Integral) or steps < 1:
            raise ValueError(f"steps: must be a whole number >= 1, got {steps!r}")
        return int(step) + int(steps)
    if isinstance(until, (bool, np.bool_)) or not isinstance(until, numbers.Real) or not math.isfinite(until):
        raise ValueError(f"until: must be a finite time, got {until!r}")
    k = (float(until) - time) / dt
    if not math.isfinite(k) or k > 2.0**62:
        raise ValueError(f"until: t = {until!r} is more steps of dt = {dt:g} away than a run can take")
    n = round(k)
    if abs(k - n) > 64 * np.finfo(dtype).eps * max(1.0, abs(k)):  # off a step by more than round-off
        n = math.ceil(k)  # the first step at or after until
    if n < 1:
        raise ValueError(f"until: t = {until!r} is not after the current time {time!r} by a step (dt = {dt:g}); "
                         "give a later time")  # fmt: skip
    return int(step) + int(n)


@runtime_checkable
class System(Protocol):
    """What the runner needs from a system (:class:`granular.particles.system.ParticleSystem`,
    the body adapters of :mod:`granular.bodies.scenes.base`).

    Attributes: ``backend``, ``n`` (particles or bodies), ``label`` (the scheme),
    ``time``, ``step_count``. Methods: ``prepare(dt)``, ``advance(dt, k)`` (``k`` steps,
    raising :class:`~granular.errors.IntegrationError` with the state of the last good
    step), ``series_row()`` (a dict with ``time`` and ``step`` first), ``frame()``
    (points, point data, lines, cell data: host copies), ``check(row)`` (None or the
    problem), ``keep()``, ``rewind()``, ``state_arrays()``, ``restore(arrays)``,
    ``checkpoint_meta()``, ``describe()`` (``run.json`` fields), ``start_fields()``
    (fields of the start event)."""

    backend: object
    n: int
    label: str

    @property
    def time(self) -> float: ...

    @property
    def step_count(self) -> int: ...

    def advance(self, dt: float, k: int) -> None: ...

    def series_row(self) -> dict: ...


class Trigger:
    """When a writer is due. ``next(step, end)``: the first step after ``step`` at which it
    is due (``end`` or beyond when never); ``due(step, end)``: whether it is due at ``step``."""

    def next(self, step: int, end: int) -> int:
        return end

    def due(self, step: int, end: int) -> bool:
        return False


@dataclass(frozen=True)
class Periodic(Trigger):
    """Every ``every`` steps (steps ``phase + k every``) and at the end step; ``every = 0``:
    never (only at the end when ``at_end``)."""

    every: int
    at_end: bool = True
    phase: int = 0

    def next(self, step, end):
        if not self.every:
            return end
        return min(end, self.phase + ((step - self.phase) // self.every + 1) * self.every)

    def due(self, step, end):
        return bool(self.every and (step - self.phase) % self.every == 0) or (self.at_end and step == end)


@dataclass(frozen=True)
class AtStep(Trigger):
    """Once, at step ``step``."""

    step: int

    def next(self, step, end):
        return self.step if step < self.step <= end else end

    def due(self, step, end):
        return step == self.step


class Callback:
    """A writer that calls ``fn(runner)`` when ``trigger`` is due (an int ``k``: every
    ``k`` steps from step 0, not at the end). It is unchecked: no series row and no health
    check is made for it (measurements inside a run: studies, ensemble chunks)."""

    checked = False

    def __init__(self, trigger, fn):
        self.trigger = Periodic(int(trigger), at_end=False) if isinstance(trigger, numbers.Integral) else trigger
        self.fn = fn

    def write(self, runner, row):
        self.fn(runner)


def next_event(step, total, *everies) -> int:
    """The first step after ``step`` at which an output with one of the cadences
    ``everies`` (0: none) is due, or ``total`` (what :class:`Periodic` triggers give)."""
    return min([total] + [Periodic(e).next(step, total) for e in everies if e])


class Runner:
    """Advances ``system`` by ``dt`` with ``writers`` attached (see the module docstring).

    ``progress``: a :class:`~granular.run.progress.Progress` (bar, JSON events) or None
    for none; ``handle_signals``: stop cleanly on SIGINT/SIGTERM (main thread only; off
    for work inside a larger command, such as an ensemble chunk, where Ctrl-C must
    propagate)."""

    def __init__(self, system, dt: float, writers=(), progress=None, handle_signals=True):
        self.system = system
        self.dt = float(dt)
        self.writers = list(writers)
        self.progress = progress
        self.handle_signals = handle_signals
        self.stop_requested = False
        self.end_step = None
        self.first_step = None
        self.wall_time = 0.0
        self.compile_time = 0.0
        self._loop_compile = 0.0
        self.interrupted = False
        self.failure = None
        self._chunk = Chunker()
        self._kept = None

    # ----------------------------------------------------------------- helpers for writers

    def event(self, kind: str, **fields) -> None:
        """A JSON event (``--log-json``), when the runner has a progress reporter."""
        if self.progress is not None:
            self.progress.event(kind, **fields)

    def sync(self, but=None) -> None:
        """Make every writer's output durable (before a checkpoint that follows it)."""
        for w in self.writers:
            if w is not but and hasattr(w, "sync"):
                w.sync()

    @property
    def finished(self) -> bool:
        return self.system.step_count >= self.end_step

    @property
    def steps_per_s(self):
        """Steps per second of stepping: the wall time less the kernels' compilation
        (:mod:`granular.compiling`) in it."""
        done = self.system.step_count - self.first_step
        stepping = self.wall_time - self._loop_compile
        return done / stepping if stepping > 0 and done > 0 else None

    # ----------------------------------------------------------------- the loop

    def _advance(self, n: int) -> None:
        """``n`` steps (fewer when a stop is requested) in blocks of about half a second."""
        s = self.system
        while n > 0:
            k = self._chunk.steps(n)
            self._chunk.start()
            s.advance(self.dt, k)
            self._chunk.done(k)
            n -= k
            if self.progress is not None:
                self.progress.update(s.step_count, s.time, self.first_step)
            if self.stop_requested:
                return

    def _check(self) -> dict:
        """The series row of the current state after the health check; raises
        :class:`~granular.errors.IntegrationError` (:class:`~granular.errors.HealthError`) on a
        problem and keeps the state otherwise."""
        s = self.system
        row = s.series_row()
        problem = s.check(row)
        if problem is not None:
            raise HealthError(
                f"health check failed at step {s.step_count} (t = {s.time:.6g}): {problem}", step=s.step_count
            )
        s.keep()
        self._kept = s.step_count
        return row

    def run(self, end=None, resumed: bool = False, *, steps=None, until=None) -> "Runner":
        """Advance by ``steps`` steps (relative), up to the time ``until`` (absolute: the
        first step at or after it), or to the absolute step ``end``: exactly one.
        ``resumed``: the writers write on into what is there. Raises the step's or the
        check's :class:`~granular.errors.IntegrationError` after the writers' ``end``
        hooks ran on the last good state. Returns the runner (``interrupted``,
        ``finished``, ``wall_time``, ``steps_per_s``)."""
        s = self.system
        if end is None:  # the step the system actually takes (e.g. dt in float32) sets the count
            h = s.step_size(self.dt) if hasattr(s, "step_size") else self.dt
            end = end_step(s.step_count, s.time, h, steps, until, getattr(s, "dtype", np.float64))
        elif steps is not None or until is not None:
            raise ValueError("run: give one of end (an absolute step), steps or until")
        elif isinstance(end, (bool, np.bool_)) or not isinstance(end, numbers.Integral):
            raise ValueError(f"end: the absolute step to stop at, a whole number; got {end!r}")
        self.end_step = int(end)
        self.first_step = s.step_count
        self.stop_requested = self.interrupted = False
        self.failure = None
        checked = any(getattr(w, "checked", True) for w in self.writers)
        timed = [w for w in self.writers if getattr(w, "trigger", None) is not None]
        previous, begun = {}, []
        started = time.perf_counter()
        compiled = loop_compiled = compile_seconds()
        settled = False  # the loop ended, or ended in an IntegrationError: no other exception in flight
        try:
            s.prepare(self.dt)
            self._kept = s.step_count
            for w in self.writers:
                if hasattr(w, "begin"):
                    w.begin(self, resumed)
                begun.append(w)
            if self.handle_signals and threading.current_thread() is threading.main_thread():

                def on_signal(signum, frame):
                    self.stop_requested = True

                for sig in (signal.SIGINT, signal.SIGTERM):
                    previous[sig] = signal.getsignal(sig)
                    signal.signal(sig, on_signal)
            started = time.perf_counter()
            loop_compiled = compile_seconds()
            # a blow-up is caught by the health check or the step's own checks; NumPy's
            # overflow warnings on the way there are only noise
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                while s.step_count < self.end_step and not self.stop_requested:
                    k, end = s.step_count, self.end_step
                    target = min([end] + [w.trigger.next(k, end) for w in timed])
                    self._advance(target - k)
                    k = s.step_count
                    due = [w for w in timed if w.trigger.due(k, end)]
                    if not due:
                        continue  # stopped between events by a signal
                    edits = [w for w in due if hasattr(w, "before")]
                    if edits:  # edits of the system (particles entering, leaving): on a state that passed
                        if checked:
                            self._check()
                        for w in edits:
                            w.before(self)
                        if checked:
                            s.keep()
                            self._kept = s.step_count
                        if self.end_step != end:  # an edit ended the run here: what is due at an end is due now
                            due = [w for w in timed if w.trigger.due(k, self.end_step)]
                    row = self._check() if any(getattr(w, "checked", True) for w in due) else None
                    for w in due:
                        w.write(self, row if getattr(w, "checked", True) else None)
                self.interrupted = self.stop_requested and s.step_count < self.end_step
                if checked and s.step_count != self._kept:  # stopped between events: check before keeping it
                    self._check()
            settled = True
        except IntegrationError as exc:
            self.failure = exc
            if checked:  # put back the last state that passed; without checks, the state of the failed step's start
                s.rewind()
            settled = True
        finally:
            if not settled:  # an error in flight: the default handlers are back for it
                self._restore_signals(previous)
            if self.progress is not None:
                self.progress.close()
            error = None
            for w in begun:
                if hasattr(w, "close"):
                    try:
                        w.close()
                    except Exception as exc:  # noqa: BLE001 - the first error is raised once all are closed
                        error = error or exc
            if error is not None and settled and self.failure is None:  # never hide an error in flight
                self._restore_signals(previous)
                raise error
        try:  # a signal while the last files are written stops nothing: they are finished
            s.backend.synchronize()
            self.wall_time = time.perf_counter() - started
            self.compile_time = compile_seconds() - compiled
            self._loop_compile = compile_seconds() - loop_compiled
            for w in self.writers:
                if hasattr(w, "end"):
                    w.end(self)
        finally:
            self._restore_signals(previous)
        if self.failure is not None:
            raise self.failure
        return self

    @staticmethod
    def _restore_signals(previous) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        previous.clear()
