"""The run loop: stepping, output cadence, checkpoints, progress, health checks.

The output directory is a stable contract (see ``docs/output.md``):

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
    scene, version, backend, precision, dt, steps, wall time, steps/s.
``plots/*.png``
    energies, momenta and invariants over time.
``checkpoints/checkpoint.npz``
    the latest checkpoint (atomic), from which ``--resume`` continues bit-for-bit on the
    same backend.

Every file is written to a temporary name and renamed, so a run killed at any moment
leaves a readable directory; SIGINT (Ctrl-C) and SIGTERM stop after the current step,
write a checkpoint and exit cleanly.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time

import numpy as np

from . import __version__, diagnostics as diag
from .integrators import ExplicitIntegrator, IntegrationError

SMALL_SYSTEM = 10  # below this many particles, series.csv carries every particle's state


class Progress:
    """Progress bar on stderr (steps/s and ETA), or JSON lines with ``log_json``."""

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
        if self.log_json and not self.quiet:
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
            self.event("progress", step=step, time=t, steps_per_s=rate, eta_s=left)
            return
        if self.quiet:
            return
        frac = step / self.total if self.total else 1.0
        bar = "#" * int(30 * frac)
        eta = time.strftime("%H:%M:%S", time.gmtime(left)) if math.isfinite(left) else "--:--:--"
        line = f"[{bar:<30}] {100 * frac:5.1f}%  step {step}/{self.total}  t={t:.6g}  {rate:,.0f} steps/s  ETA {eta}"
        if self.tty:
            print("\r" + line, end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)
        self.shown = True

    def close(self):
        if self.shown and self.tty and not self.quiet and not self.log_json:
            print(file=self.stream)


def frame_data(model, state):
    """Points, point data, bond lines and bond cell data of one frame (host arrays)."""
    be = model.backend
    x = be.to_host(state.x)
    R = be.to_host(state.R)
    v = be.to_host(state.v)
    w = be.to_host(state.omega)
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
    lines, cell = None, None
    if model.n_bonds:
        meas = model.bonds.measures(model, state)
        lines = np.stack([model.bonds.host["a"], model.bonds.host["b"]], axis=1)
        cell = {"strain": meas[:, 3], "angle": meas[:, 4], "broken": be.to_host(state.broken).astype(np.int8)}
    return x, point, lines, cell


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


STATE_ARRAYS = ("x", "v", "q", "omega", "F", "RM", "broken", "released")


def state_arrays(model, state) -> dict:
    """Host copies of every state array and the clock (for a checkpoint)."""
    be = model.backend
    out = {k: be.to_host(getattr(state, k)).copy() for k in STATE_ARRAYS}
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
        if k not in arrays and k == "released":  # checkpoints from before released energy was kept
            target[...] = 0
            continue
        if arrays[k].shape != target.shape or arrays[k].dtype != target.dtype:
            raise ValueError(f"checkpoint: array {k!r} has shape {arrays[k].shape} {arrays[k].dtype}, "
                             f"the scene's model needs {target.shape} {target.dtype}")  # fmt: skip
        target[...] = be.asarray(arrays[k])
    clock, counters = arrays["clock"], arrays["counters"]
    state.time = float(clock[0])
    state.step = int(counters[0])
    state.forces_valid = bool(counters[1])
    state.clock = None
    if len(clock) >= 3 and len(counters) >= 3 and clock[2] > 0:
        state.clock = (float(clock[1]), int(counters[2]), float(clock[2]), (state.time, state.step))


def _next_multiple(k: int, every: int) -> int:
    """The smallest multiple of ``every`` greater than ``k``."""
    return (k // every + 1) * every


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


class Simulation:
    """Runs a model from a state to ``total_steps`` and writes the output directory."""

    def __init__(self, model, run, out_dir, scene_dict=None, quiet=False, log_json=False):
        self.model = model
        self.run_table = run
        self.out_dir = out_dir
        self.scene_dict = scene_dict or {}
        self.integrator = ExplicitIntegrator(run.integrator)
        self.quiet, self.log_json = quiet, log_json
        self.stop_requested = False

    # cadence in steps
    def _every(self, interval, default):
        if interval is None:
            return default
        return max(1, int(round(interval / self.run_table.dt)))

    def execute(self, state, total_steps: int, resumed: bool = False) -> dict:
        from .io import FrameWriter, SeriesWriter, plot_series, read_series, save_checkpoint, write_walls

        model, dt = self.model, self.run_table.dt
        os.makedirs(self.out_dir, exist_ok=True)
        frame_every = self._every(self.run_table.output_every, max(1, total_steps))
        series_every = self._every(self.run_table.series_every, frame_every)
        ckpt_every = self._every(self.run_table.checkpoint_every, 0)
        ckpt_path = os.path.join(self.out_dir, "checkpoints", "checkpoint.npz")
        os.makedirs(os.path.dirname(ckpt_path), exist_ok=True)
        self.integrator.prepare(model, state)
        row = series_row(model, state)
        columns = list(row)
        if resumed:
            frames = FrameWriter.resume(self.out_dir, after_time=state.time)
            series = SeriesWriter.resume(os.path.join(self.out_dir, "series.csv"), after_time=state.time)
        else:
            frames = FrameWriter(self.out_dir)
            series = SeriesWriter(os.path.join(self.out_dir, "series.csv"), columns)
            walls = model.force("walls")
            if walls is not None:
                x = model.backend.to_host(state.x)
                size = 2.0 * float(np.ptp(x, axis=0).max() + 4 * model.backend.to_host(model.radius).max())
                write_walls(self.out_dir, walls.planes_host, x.mean(axis=0), size)
            series.append(row)
            frames.write(state.time, *frame_data(model, state))

        def checkpoint():
            meta = {"scene": self.scene_dict, "version": __version__, "backend": model.backend.name,
                    "dt": dt, "integrator": self.integrator.scheme, "step": state.step, "time": state.time}  # fmt: skip
            save_checkpoint(ckpt_path, state_arrays(model, state), meta)

        progress = Progress(total_steps, self.quiet, self.log_json)
        progress.event("start", out=self.out_dir, steps=total_steps, first_step=state.step, backend=model.backend.name)
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
        chunk = Chunker()
        try:
            while state.step < total_steps:
                # Advance in device-resident blocks up to the next output event (or a
                # chunk of about half a second, so progress and signals stay responsive).
                k0 = state.step
                events = [total_steps, _next_multiple(k0, series_every), _next_multiple(k0, frame_every)]
                if ckpt_every:
                    events.append(_next_multiple(k0, ckpt_every))
                n = chunk.steps(min(events) - k0)
                chunk.start()
                self.integrator.advance(model, state, dt, n)
                chunk.done(n)
                k = state.step
                if k % series_every == 0 or k == total_steps:
                    series.append(series_row(model, state))
                if k % frame_every == 0 or k == total_steps:
                    frames.write(state.time, *frame_data(model, state))
                    progress.event("frame", step=k, time=state.time)
                if ckpt_every and k % ckpt_every == 0:
                    checkpoint()
                    progress.event("checkpoint", step=k, time=state.time, path=ckpt_path)
                progress.update(k, state.time, first)
                if self.stop_requested:
                    interrupted = True
                    break
        except IntegrationError as exc:  # the state is the last good one: keep it
            failure = exc
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            progress.close()
            series.close()
        wall = time.perf_counter() - started
        checkpoint()
        done = state.step - first
        info = {
            "scene": self.scene_dict,
            "version": __version__,
            "backend": model.backend.name,
            "device": model.backend.device,
            "precision": str(model.dtype),
            "integrator": self.integrator.scheme,
            "dt": dt,
            "particles": model.n,
            "bonds": model.n_bonds,
            "first_step": first,
            "steps": state.step,
            "time": state.time,
            "wall_time_s": wall,
            "steps_per_s": done / wall if wall > 0 else None,
            "interrupted": interrupted,
            "finished": state.step >= total_steps,
            "error": None if failure is None else str(failure),
        }
        tmp = os.path.join(self.out_dir, ".run.json.part")
        with open(tmp, "w") as fh:
            json.dump(info, fh, indent=2)
        os.replace(tmp, os.path.join(self.out_dir, "run.json"))
        plot_series(read_series(os.path.join(self.out_dir, "series.csv")), self.out_dir)
        progress.event("end", **{k: v for k, v in info.items() if k != "scene"})
        if failure is not None:
            raise failure
        return info
