"""The run loop: stepping, output cadence, checkpoints, progress, health checks.

The output directory is a stable contract (see ``docs/scenes.md``, "Output directory"):

``frames.pvd``, ``frames/*.vtu``
    ParaView time series: particles as vertex cells with point data ``id``, ``radius``,
    ``mass``, ``inertia``, ``velocity``, ``angular_velocity`` (spatial), ``d1``, ``d2``,
    ``d3`` (the columns of ``R``, for glyphs), ``kinetic_energy``; bonds as line cells with
    cell data ``strain``, ``angle`` and ``broken``.
``walls.vtu``
    the walls as squares.
``series.csv``
    one row per series time: ``time``, ``step``, energies by kind, ``total``, ``P_*``,
    ``L_*``, ``broken_bonds``, pendulum invariants, and for fewer than 10 particles each
    particle's state.
``run.json``
    scene, version, backend, precision, dt, the stable-step estimate
    (:mod:`granular.stability`), steps, wall time, steps/s, the health check's start
    values, and the error that stopped the run, if any.
``plots/*.png``
    energies, momenta and invariants over time.
``checkpoints/checkpoint.npz``
    the latest checkpoint (atomic), from which ``--resume`` continues bit-for-bit on the
    same backend.

Every file is written to a temporary name and renamed, so a run killed at any moment
leaves a readable directory; SIGINT (Ctrl-C) and SIGTERM stop after the current step,
write a checkpoint and exit cleanly.

The run advances in blocks of steps between output events (:func:`next_event`); at each
event the state is checked (:mod:`granular.health`) before anything is written, and a
copy of the last state that passed is kept on the backend, so a failed check or step
writes that state, never the exploded one, as the checkpoint.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np

from kernels.layout import DIAG, FAMILY_CONTACTS, FAMILY_WALLS

from . import __version__
from . import diagnostics as diag
from .health import ENERGY_TOLERANCE, HealthCheck, HealthError, Snapshot
from .integrators import ExplicitIntegrator, IntegrationError
from .io import FrameWriter, SeriesWriter, plot_series, read_series, save_checkpoint, write_walls
from .io._atomic import atomic_write_bytes
from .io.vtk import FrameQueue
from .resources import cadence, check_disk, check_writable, output_counts, run_output_bytes

SMALL_SYSTEM = 10  # below this many particles, series.csv carries every particle's state


#: Runs of more steps than this start only with --allow-long-run (or a "y" at a terminal).
LONG_RUN_STEPS = 10**9
#: More steps than the step counter (int64) and the checkpoints hold.
MAX_STEPS = 2**62
#: Steps per second assumed when telling how long a long run would take.
ASSUMED_RATE = 1e5


def format_duration(seconds) -> str:
    """``"01:02:03"`` below a day, ``"3 d 04:05:06"`` below 1000 days, else ``"2.5e+03 years"``."""
    if not math.isfinite(seconds) or seconds < 0:
        return "--:--:--"
    if seconds >= 1000 * 86400:
        return f"{seconds / (365.25 * 86400):.3g} years"
    s = int(round(seconds))
    days, s = divmod(s, 86400)
    hms = f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{days} d {hms}" if days else hms


def long_run_refused(total, dt, args) -> str | None:
    """Why a run of ``total`` steps does not start (None: it does). Above
    :data:`LONG_RUN_STEPS` it starts only with ``--allow-long-run`` or a "y" at a terminal."""
    if total > MAX_STEPS:
        return (f"the run asks for {total:.3g} steps (t = {total * dt:.6g} at dt = {dt:g}); the step counter holds "
                f"at most {MAX_STEPS:.3g}. Give a shorter --time or --steps")  # fmt: skip
    if total <= LONG_RUN_STEPS or getattr(args, "allow_long_run", False):
        return None
    eta = format_duration(total / ASSUMED_RATE)
    text = (f"the run asks for {total:.3g} steps (t = {total * dt:.6g} at dt = {dt:g}); at {ASSUMED_RATE:.0e} "
            f"steps/s, fast for a small system, that takes {eta}")  # fmt: skip
    interactive = sys.stdin.isatty() and sys.stderr.isatty() and not (getattr(args, "quiet", False) or getattr(args, "log_json", False))
    if interactive:
        print(f"granular run: {text}.", file=sys.stderr)
        try:
            answer = input("Start it anyway? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return None
    return f"{text}. Give --allow-long-run to start it anyway, or a shorter --time or --steps"


class Progress:
    """Progress bar on stderr (steps/s and ETA), or JSON lines with ``log_json``.

    ``quiet`` silences the human-readable bar; JSON events are printed whenever
    ``log_json`` is set (``--quiet --log-json`` is the job-script combination)."""

    def __init__(self, total_steps, quiet=False, log_json=False, stream=None, min_seconds=2.0):
        self.total = total_steps
        self.quiet, self.log_json = quiet, log_json
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.last = self.start
        self.min_seconds = min_seconds
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = False
        self.mark = None

    def event(self, kind, **fields):
        if self.log_json:
            print(json.dumps({"event": kind, **fields}), file=sys.stdout, flush=True)

    def update(self, step, t, first_step):
        now = time.perf_counter()
        if self.mark is None:  # rates count from the first finished step (after JIT compilation)
            self.mark = (now, step)
            return
        if now - self.last < 0.5 or now - self.start < self.min_seconds or step - self.mark[1] < 1:
            return
        self.last = now
        rate = (step - self.mark[1]) / (now - self.mark[0])
        left = (self.total - step) / rate if rate > 0 else math.inf
        if self.log_json:
            self.event("progress", step=step, time=t, steps_per_s=rate, eta_s=left if math.isfinite(left) else None)
            return
        if self.quiet:
            return
        frac = step / self.total if self.total else 1.0
        bar = "#" * int(30 * frac)
        line = (f"[{bar:<30}] {100 * frac:5.1f}%  step {step}/{self.total}  t={t:.6g}  {rate:,.0f} steps/s  "
                f"ETA {format_duration(left)}")  # fmt: skip
        if self.tty:
            print("\r" + line, end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)
        self.shown = True

    def close(self):
        if self.shown and self.tty and not self.quiet and not self.log_json:
            print(file=self.stream)


def frame_data(model, state):
    """Points, point data, bond lines and bond cell data of one frame: host arrays of
    their own (copies, never views of the state, which the next steps change while a
    background thread may still be writing the frame)."""
    be = model.backend
    x = np.array(be.to_host(state.x))
    R = be.to_host(state.R)
    v = np.array(be.to_host(state.v))
    w = np.array(be.to_host(state.omega))
    m, J = be.to_host(model.mass), be.to_host(model.inertia)
    point = {
        "id": np.arange(model.n, dtype=np.int64),
        "radius": be.to_host(model.radius),
        "mass": m,
        "inertia": J,
        "velocity": v,
        "angular_velocity": w,
        "d1": R[:, :, 0],
        "d2": R[:, :, 1],
        "d3": R[:, :, 2],
        "kinetic_energy": 0.5 * m * (v * v).sum(axis=1) + 0.5 * J * (w * w).sum(axis=1),
    }
    if model.law is not None:
        point.update(contact_data(model, state))
    lines, cell = None, None
    if model.n_bonds:
        meas = model.bonds.measures(model, state)
        lines = np.stack([model.bonds.host["a"], model.bonds.host["b"]], axis=1)
        cell = {"strain": meas[:, 3], "angle": meas[:, 4], "broken": np.array(be.to_host(state.broken), dtype=np.int8)}
    return x, point, lines, cell


def contact_data(model, state) -> dict:
    """Per-particle point data of the dissipative law: ``contacts`` (touching partners
    and walls), ``contact_force`` and ``contact_moment`` (the sum of the contact and wall
    forces and spatial moments on the particle, the springs as they stand, the damping
    at the current velocities), and ``dissipated`` (the energy its contacts dissipated so
    far, its share)."""


    be, xp = model.backend, model.backend.xp
    rows = be.to_host(model.diagnostics_rows(state))
    count = np.array(rows[:, DIAG["contacts"]], dtype=np.int32)
    cfg = SimpleNamespace(x=state.x, v=state.v, q=state.q, omega=state.omega, F=xp.zeros_like(state.F),
                          RM=xp.zeros_like(state.RM), broken=state.broken, released=state.released,
                          wall_springs=state.wall_springs, dissipated=state.dissipated)  # fmt: skip
    model.accumulate_family(FAMILY_CONTACTS, cfg)
    if model.force("walls") is not None:
        model.accumulate_family(FAMILY_WALLS, cfg)
    return {"contacts": count, "contact_force": np.array(be.to_host(cfg.F)),
            "contact_moment": np.array(be.to_host(cfg.RM)),
            "dissipated": np.array(be.to_host(state.dissipated).sum(axis=1))}  # fmt: skip


#: Columns of ``series.csv`` with the dissipative law: the energy dissipated so far by
#: each mechanism (``total`` plus their sum is what the scheme conserves).
DISSIPATED = ("dissipated_normal", "dissipated_friction", "dissipated_rolling", "dissipated_twisting")


def series_row(model, state) -> dict:
    """One ``series.csv`` row: energies, momenta, invariants and (small systems) states.

    Energies, momenta and bond counts come from one fused diagnostics kernel and one
    read-back. With bonds that can break, ``U_released`` is the energy the broken bonds
    had when they broke (``total + U_released`` is conserved)."""
    totals = model.diagnostics(state)
    row = {"time": state.time, "step": float(state.step)}
    row.update(diag.energies(model, state, totals))
    for a in "xyz":
        row[f"P_{a}"] = totals[f"P_{a}"]
    for a in "xyz":
        row[f"L_{a}"] = totals[f"L_{a}"]
    row["broken_bonds"] = totals["broken_bonds"]
    if model.bonds is not None and model.bonds.can_break:
        row["U_released"] = totals["U_released"]
    if model.law is not None:
        for k in DISSIPATED:
            row[k] = totals[k]
        row["contacts"] = totals["contacts"]
    if model.force("pendulum") is not None:
        dot, norm = diag.pendulum_invariants(model, state)
        for k in range(min(len(dot), SMALL_SYSTEM)):
            row[f"pendulum{k}_Rrho0_dot_Omega"] = float(dot[k])
            row[f"pendulum{k}_norm_Rrho0"] = float(norm[k])
    if model.n < SMALL_SYSTEM:
        be = model.backend
        for name, arr in (("x", state.x), ("v", state.v), ("q", state.q), ("omega", state.omega)):
            a = be.to_host(arr)
            for i in range(model.n):
                for c in range(a.shape[1]):
                    row[f"p{i}_{name}{c}"] = float(a[i, c])
    return row


STATE_ARRAYS = ("x", "v", "q", "omega", "F", "RM", "broken", "released", "wall_springs", "dissipated")


def state_arrays(model, state) -> dict:
    """Host copies of every state array and the clock (for a checkpoint); with the
    dissipative law also the contact springs by pair (``contact_pairs`` (P, 2),
    ``contact_springs`` (P, 8)), which do not depend on the neighbour list's layout."""
    be = model.backend
    out = {k: be.to_host(getattr(state, k)).copy() for k in STATE_ARRAYS}
    if model.law is not None:
        model.bind_springs(state)
        out["contact_pairs"], out["contact_springs"] = model.force("contacts").neighbors.springs()
    c = state.clock
    origin = (state.time, state.step, 0.0) if c is None else c[:3]
    out["clock"] = np.array([state.time, origin[0], origin[2]], dtype=np.float64)
    out["counters"] = np.array([state.step, int(state.forces_valid), origin[1]], dtype=np.int64)
    return out


def restore_state(model, state, arrays) -> None:
    """Put the arrays and clock of :func:`state_arrays` back into ``state``."""
    be = model.backend
    for k in STATE_ARRAYS:
        target = getattr(state, k)
        if k not in arrays and k in ("released", "wall_springs", "dissipated"):  # older checkpoints
            if target.size and k != "released":
                raise ValueError(f"checkpoint: has no {k!r}; it was not written by a run of the dissipative law")
            target[...] = 0
            continue
        if arrays[k].shape != target.shape or arrays[k].dtype != target.dtype:
            raise ValueError(f"checkpoint: array {k!r} has shape {arrays[k].shape} {arrays[k].dtype}, "
                             f"the scene's model needs {target.shape} {target.dtype}")  # fmt: skip
        target[...] = be.asarray(arrays[k])
    # the step loop's knowledge of the old state (neighbour list, displacement budget)
    # does not hold for the restored one
    state._engine = None
    contacts = model.force("contacts")
    if contacts is not None and contacts.neighbors is not None:
        contacts.neighbors.invalidate()
    if model.law is not None:  # the springs go back into the list when the state is next bound
        state._springs = (np.asarray(arrays.get("contact_pairs", np.zeros((0, 2))), dtype=np.int64),
                          np.asarray(arrays.get("contact_springs", np.zeros((0, 8))), dtype=np.float64))  # fmt: skip
        contacts.neighbors.owner = None
    clock, counters = arrays["clock"], arrays["counters"]
    state.time = float(clock[0])
    state.step = int(counters[0])
    state.forces_valid = bool(counters[1])
    state.clock = None
    if len(clock) >= 3 and len(counters) >= 3 and clock[2] > 0:
        state.clock = (float(clock[1]), int(counters[2]), float(clock[2]), (state.time, state.step))


class Chunker:
    """How many steps to advance between looks at the clock: about ``seconds`` of work at
    the rate measured so far (at least one step)."""

    def __init__(self, seconds: float = 0.5):
        self.seconds = seconds
        self.rate = None
        self._t0 = None

    def steps(self, wanted: int) -> int:
        if self.rate is None:
            return min(wanted, 1)
        return max(1, min(wanted, int(self.rate * self.seconds)))

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def done(self, n: int) -> None:
        dt = time.perf_counter() - self._t0
        if dt > 0:
            rate = n / dt
            self.rate = rate if self.rate is None else 0.5 * (self.rate + rate)


def next_event(step, total, *everies) -> int:
    """The first step after ``step`` at which an output with one of the cadences ``everies``
    (0: none) is due, or ``total``; the run advances in blocks up to it."""
    nxt = total
    for every in everies:
        if every:
            nxt = min(nxt, (step // every + 1) * every)
    return nxt


class Simulation:
    """Runs a model from a state to ``total_steps`` and writes the output directory.

    ``stable_step``: the setup's :class:`~granular.stability.StepEstimate`, reported in the
    start event and ``run.json``. The health check's tolerance is ``run.energy_tolerance``.
    After :meth:`execute`, ``info`` holds what ``run.json`` holds."""

    def __init__(self, model, run, out_dir, scene_dict=None, quiet=False, log_json=False, stable_step=None,
                 graphs=None):  # fmt: skip
        self.model = model
        self.run_table = run
        self.out_dir = out_dir
        self.scene_dict = scene_dict or {}
        graphs = getattr(run, "graphs", True) if graphs is None else graphs
        self.integrator = ExplicitIntegrator(run.integrator, graphs=graphs)
        self.quiet, self.log_json = quiet, log_json
        self.stable_step = stable_step
        self.energy_tolerance = getattr(run, "energy_tolerance", None) or ENERGY_TOLERANCE
        self.stop_requested = False
        self.info = None
        self._chunk = Chunker()

    def _every(self, interval, default):
        return cadence(interval, self.run_table.dt, default)

    def cadences(self, total_steps) -> tuple[int, int, int]:
        """Steps between frames, series rows and checkpoints (0: none)."""
        frame_every = self._every(self.run_table.output_every, max(1, total_steps))
        series_every = self._every(self.run_table.series_every, frame_every)
        return frame_every, series_every, self._every(self.run_table.checkpoint_every, 0)

    def preflight(self, total_steps, first_step=0) -> None:
        """Before computing: ``out_dir`` is writable and its file system has room for the
        frames, series and checkpoints of the run (:class:`~granular.resources.ResourceError`)."""
        check_writable(self.out_dir)
        frame_every, series_every, ckpt_every = self.cadences(total_steps)
        frames, rows = output_counts(total_steps, first_step, frame_every, series_every, ckpt_every)
        columns = 20 + (4 * 13 * self.model.n if self.model.n < SMALL_SYSTEM else 0)
        check_disk(self.out_dir, run_output_bytes(self.model.n, self.model.n_bonds, frames, rows, columns),
                   f"the run ({frames} frames of {self.model.n:,} particles)")  # fmt: skip

    def _advance(self, state, n, progress, first) -> None:
        """Take ``n`` steps (fewer when a stop is requested) in device-resident blocks
        (:meth:`ExplicitIntegrator.advance`), looking at the clock about every half second
        for progress and signals."""
        model, dt = self.model, self.run_table.dt
        # a blow-up is caught by the health check or the step's own checks; NumPy's
        # overflow warnings on the way there are only noise
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            while n > 0:
                k = self._chunk.steps(n)
                self._chunk.start()
                self.integrator.advance(model, state, dt, k)
                self._chunk.done(k)
                n -= k
                progress.update(state.step, state.time, first)
                if self.stop_requested:
                    return

    def execute(self, state, total_steps: int, resumed: bool = False, health_start=None) -> dict:
        """Advance ``state`` to ``total_steps`` writing the output directory; ``health_start``:
        a resumed run's checkpoint ``meta["health"]``. Returns the ``run.json`` dict; raises
        the step's :class:`IntegrationError` (or :class:`HealthError`) after writing the last
        state that passed the health check as the checkpoint."""
        model, dt = self.model, self.run_table.dt
        frame_every, series_every, ckpt_every = self.cadences(total_steps)
        ckpt_path = os.path.join(self.out_dir, "checkpoints", "checkpoint.npz")
        os.makedirs(os.path.dirname(ckpt_path), exist_ok=True)
        self.integrator.prepare(model, state)
        row = series_row(model, state)
        health = HealthCheck(model, dt, row, self.energy_tolerance, start=health_start)
        snapshot = Snapshot(state, STATE_ARRAYS, model)
        if resumed:
            frames = FrameQueue(FrameWriter.resume(self.out_dir, after_time=state.time))
            series = SeriesWriter.resume(os.path.join(self.out_dir, "series.csv"), after_time=state.time)
        else:
            frames = FrameQueue(FrameWriter(self.out_dir))
            series = SeriesWriter(os.path.join(self.out_dir, "series.csv"), list(row))
            walls = model.force("walls")
            if walls is not None:
                x = model.backend.to_host(state.x)
                size = 2.0 * float(np.ptp(x, axis=0).max() + 4 * model.backend.to_host(model.radius).max())
                write_walls(self.out_dir, walls.planes_host, x.mean(axis=0), size)
            series.append(row)
            frames.write(state.time, *frame_data(model, state))

        def checkpoint():
            frames.sync()  # what the checkpoint follows is on disk before it
            series.sync()
            meta = {"scene": self.scene_dict, "version": __version__, "backend": model.backend.name,
                    "dt": dt, "integrator": self.integrator.scheme, "step": state.step, "time": state.time,
                    "health": health.start_values()}  # fmt: skip
            save_checkpoint(ckpt_path, state_arrays(model, state), meta)

        progress = Progress(total_steps, self.quiet, self.log_json)
        est = self.stable_step.as_dict() if self.stable_step is not None else None
        progress.event("start", out=self.out_dir, steps=total_steps, first_step=state.step, backend=model.backend.name,
                       dt=dt, stable_step=None if est is None else est["h_max"],
                       stable_step_mode=None if est is None else est["description"])  # fmt: skip
        first = state.step

        def on_signal(signum, frame):
            self.stop_requested = True

        # Ctrl-C and a scheduler's SIGTERM stop after the current step with a checkpoint.
        # Handlers can only be installed from the main thread (not in a worker thread).
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in handled:
                previous[sig] = signal.getsignal(sig)
                signal.signal(sig, on_signal)
        started = time.perf_counter()
        interrupted = False
        failure = None
        try:
            while state.step < total_steps and not self.stop_requested:
                target = next_event(state.step, total_steps, frame_every, series_every, ckpt_every)
                self._advance(state, target - state.step, progress, first)
                k = state.step
                due_series = k % series_every == 0 or k == total_steps
                due_frame = k % frame_every == 0 or k == total_steps
                due_ckpt = bool(ckpt_every) and k % ckpt_every == 0
                if not (due_series or due_frame or due_ckpt):
                    continue  # stopped between outputs by a signal
                row = series_row(model, state)
                problem = health.problem(row, state)
                if problem is not None:
                    raise HealthError(f"health check failed at step {k} (t = {state.time:.6g}): {problem}", step=k)
                snapshot.take(state)
                if due_series:
                    series.append(row)
                if due_frame:
                    frames.write(state.time, *frame_data(model, state))
                    progress.event("frame", step=k, time=state.time)
                if due_ckpt:
                    checkpoint()
                    progress.event("checkpoint", step=k, time=state.time, path=ckpt_path)
            interrupted = self.stop_requested and state.step < total_steps
            if state.step != snapshot.step:  # stopped between outputs: check before keeping it
                problem = health.problem(series_row(model, state), state)
                if problem is not None:
                    raise HealthError(f"health check failed at step {state.step} (t = {state.time:.6g}): {problem}",
                                      step=state.step)  # fmt: skip
        except IntegrationError as exc:  # keep the last state that passed the health check
            failure = exc
            snapshot.restore(state)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            progress.close()
            series.close()
            frames.close()
        wall = time.perf_counter() - started
        checkpoint()
        progress.event("checkpoint", step=state.step, time=state.time, path=ckpt_path, final=True)
        done = state.step - first
        info = {
            "scene": self.scene_dict,
            "version": __version__,
            "backend": model.backend.name,
            "device": model.backend.device,
            "precision": str(model.dtype),
            "integrator": self.integrator.scheme,
            "graphs": self.integrator.graphs and model.backend.name == "gpu" and not model.backend.simulated,
            "dt": dt,
            "stable_step": est,
            "particles": model.n,
            "bonds": model.n_bonds,
            "first_step": first,
            "steps": state.step,
            "time": state.time,
            "wall_time_s": wall,
            "steps_per_s": done / wall if wall > 0 and done > 0 else None,
            "interrupted": interrupted,
            "finished": state.step >= total_steps,
            "health": {"energy_tolerance": health.tolerance, **health.start_values()},
            "error": None if failure is None else str(failure),
        }
        self.info = info
        atomic_write_bytes(os.path.join(self.out_dir, "run.json"), json.dumps(info, indent=2).encode())
        plot_series(read_series(os.path.join(self.out_dir, "series.csv")), self.out_dir)
        progress.event("end", **{k: v for k, v in info.items() if k != "scene"})
        if failure is not None:
            raise failure
        return info
