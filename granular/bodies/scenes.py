"""Scene files with a ``[bodies]`` table: validation and ``granular run`` for the batched
single-body schemes.

``granular.scene.parse_scene`` calls :func:`validate_bodies` for a scene with a
``[bodies]`` table; ``granular run`` calls :func:`run_bodies`. The table (documented in
``docs/scenes.md``, section ``[bodies]``; schema in :mod:`granular.bodies.scene_schema`)
names the scheme and its parameters:

=================  ======================================================  =========
``scheme``         classes                                                 paper
=================  ======================================================  =========
``"directors"``    ``DirectorEM`` (``variant = "em"``), ``DirectorDLA``    000
``"nontwisting"``  ``NonTwistingEM``, ``NonTwistingDLA``                   000
``"ulvc"``         ``LieGroupRK4`` (``"rk4"``), ``NewtonEulerRK4``          001
``"livens"``       ``EML``, ``REML``, ``NullEML``, ``MPL``, ``EMH``, ``MPH``    002
``"rolling_ball"`` ``RollingBall`` with ``RK4``                            004
=================  ======================================================  =========

The class is looked up in the scheme registry (:data:`granular.bodies.core.REGISTRY`)
under ``"<scheme> <variant>"``.

:func:`run_bodies` builds the batch (:mod:`granular.bodies.scene_systems`), steps it with
``run.dt`` and writes the same output directory as a particle run
(:mod:`granular.simulation`): ``frames.pvd`` + ``frames/*.vtu`` (one vertex per body),
``series.csv``, ``run.json``, ``plots/*.png`` and ``checkpoints/checkpoint.npz``, from
which ``--resume`` continues bit-for-bit on the same backend. SIGINT stops after the
current step, writes a checkpoint and exits with status 130; a step that fails (Newton
not converged, a non-finite state) keeps the last good state, writes it and exits with 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np

from .. import __version__
from ..backend import BackendError, get_backend
from ..errors import IntegrationError, SceneError
from ..io import CheckpointError, FrameWriter, SeriesWriter, load_checkpoint, plot_series, read_series, save_checkpoint
from ..io._atomic import atomic_write_bytes
from ..outdir import clear, plan_out_dir, scene_differences
from ..resources import check_writable
from ..simulation import Progress, long_run_refused
from .newton import NewtonError
from .scene_config import parse_bodies
from .scene_systems import build_system

__all__ = ["validate_bodies", "run_bodies", "BodyRun"]


def validate_bodies(table) -> list[tuple[str, str]]:
    """``(path, message)`` for every problem of a ``[bodies]`` table (empty when valid);
    paths start with ``bodies.``."""
    return parse_bodies(table, check_only=True)


def _error(msg: str) -> None:
    print(msg, file=sys.stderr)


def _total_steps(args, run) -> int:
    if getattr(args, "steps", None) is not None:
        return args.steps
    if getattr(args, "time", None) is not None:
        return int(round(args.time / run.dt))
    if run.steps is not None:
        return run.steps
    return int(round(run.duration / run.dt))


def run_bodies(scene, args) -> int:
    """Run the ``[bodies]`` scene ``scene`` with the ``granular run`` options ``args``
    (``scene``, ``out``, ``backend``, ``precision``, ``time``, ``steps``, ``resume``,
    ``quiet``, ``log_json``). Returns the exit status: 0 done, 1 a step failed, 2 bad
    input, 130 interrupted."""
    source = str(getattr(args, "scene", "scene"))
    precision = getattr(args, "precision", None) or scene.run.precision
    if precision != "float64":
        _error(f"granular run: --precision {precision!r} is not available for [bodies] scenes; allowed: float64")
        return 2
    try:
        cfg = parse_bodies(scene.bodies, source)
    except SceneError as exc:
        _error(str(exc))
        return 2
    try:
        backend = get_backend(getattr(args, "backend", None) or scene.run.backend)
    except (BackendError, ValueError) as exc:
        _error(f"granular run: {exc}")
        return 2
    try:
        system = build_system(cfg, backend)
    except ValueError as exc:
        _error(f"{source}: 1 error(s)\n  bodies: {exc}")
        return 2
    total = _total_steps(args, scene.run)
    if total < 1:
        _error(f"granular run: the run is shorter than one step (dt = {scene.run.dt})")
        return 2
    why = long_run_refused(total, scene.run.dt, args)
    if why:
        _error(f"granular run: {why}")
        return 2
    scene_dict = scene.model_dump(mode="json")
    resume = getattr(args, "resume", None)
    to_clear = []
    try:
        if resume is not None:
            problem = _restore(system, resume, scene_dict, backend.name, total)
            if problem:
                _error(f"granular run: --resume: {problem}")
                return 2
            out = args.out or os.path.dirname(os.path.dirname(os.path.abspath(resume)))
            if system.step_count == total:
                if not args.quiet:
                    _error(f"granular run: the checkpoint is already at step {total}, the end of the run; nothing "
                           "to do (give a later --time or more --steps to go on)")  # fmt: skip
                return 0
            missing = [n for n in ("frames.pvd", "series.csv") if not os.path.isfile(os.path.join(out, n))]
            if missing:
                _error(f"granular run: --resume: {out} holds no run to continue (no {' or '.join(missing)}); a "
                       "resumed run writes into the run directory of its checkpoint: leave out --out")  # fmt: skip
                return 2
        else:
            out = args.out or os.path.join("out", scene.name)
            to_clear = plan_out_dir(out, overwrite=getattr(args, "overwrite", False))
        check_writable(out)
    except ValueError as exc:
        _error(f"granular run: {exc}")
        return 2
    clear(to_clear)
    runner = BodyRun(system, scene.run, out, scene_dict, quiet=args.quiet, log_json=args.log_json)
    try:
        info = runner.execute(total, resumed=resume is not None)
    except (NewtonError, IntegrationError) as exc:
        _error(f"granular run: {exc}\n  the last good state is in {os.path.join(out, 'checkpoints', 'checkpoint.npz')}")
        return 1
    if not args.quiet and not args.log_json:
        rate = info["steps_per_s"]
        speed = "" if rate is None else f" ({rate:,.0f} steps/s, {info['body_steps_per_s']:,.0f} body-steps/s)"
        print(f"granular run: {scene.name}: {system.label}, {system.n} bodies, {info['steps']} steps to "
              f"t = {info['time']:.6g} on {info['backend']}{speed}; output in {out}/ "
              "(open frames.pvd in ParaView)")  # fmt: skip
    return 130 if info["interrupted"] else 0


def _restore(system, path, scene_dict, backend_name, total) -> str | None:
    """Load the checkpoint at ``path`` into ``system``; the problem as text, or None."""

    try:
        arrays, meta = load_checkpoint(path)
    except CheckpointError as exc:
        return str(exc)
    if meta.get("scene") != scene_dict:
        diffs = scene_differences(meta.get("scene") or {}, scene_dict)
        return (f"checkpoint {path!r} was written for a different scene: " + "; ".join(diffs)
                + ". Resume with the scene that wrote it, or start a new run")  # fmt: skip
    if meta.get("backend") != backend_name:
        return (f"checkpoint is from backend {meta.get('backend')!r}, this run uses {backend_name!r} "
                "(bit-for-bit restarts need the same backend)")  # fmt: skip
    if total < int(meta.get("step", 0)):
        return (f"the checkpoint is at step {meta.get('step')} (t = {meta.get('time'):.6g}); the requested end, "
                f"step {total}, is before it. Give a later --time or more --steps")  # fmt: skip
    try:
        system.restore(arrays)
    except (ValueError, KeyError) as exc:
        return f"checkpoint {path!r}: {exc}"
    return None


class BodyRun:
    """Steps a body system to ``total_steps`` and writes the output directory (the
    contract of :mod:`granular.simulation`)."""

    def __init__(self, system, run, out_dir, scene_dict=None, quiet=False, log_json=False):
        self.system = system
        self.run_table = run
        self.out_dir = out_dir
        self.scene_dict = scene_dict or {}
        self.quiet, self.log_json = quiet, log_json
        self.stop_requested = False

    def _every(self, interval, default):
        if interval is None:
            return default
        return max(1, int(round(interval / self.run_table.dt)))

    def _row(self):
        s = self.system
        row = {"time": float(s.time), "step": float(s.step_count)}
        row.update(s.series())
        return row

    def _checkpoint(self, path):
        s = self.system
        meta = {"scene": self.scene_dict, "version": __version__, "backend": s.backend.name, "dt": self.run_table.dt,
                "scheme": s.label, "bodies": s.n, "step": s.step_count, "time": s.time}  # fmt: skip
        save_checkpoint(path, s.state_arrays(), meta)

    def execute(self, total_steps: int, resumed: bool = False) -> dict:
        s, dt = self.system, self.run_table.dt
        os.makedirs(self.out_dir, exist_ok=True)
        frame_every = self._every(self.run_table.output_every, max(1, total_steps))
        series_every = self._every(self.run_table.series_every, frame_every)
        ckpt_every = self._every(self.run_table.checkpoint_every, 0)
        ckpt_path = os.path.join(self.out_dir, "checkpoints", "checkpoint.npz")
        os.makedirs(os.path.dirname(ckpt_path), exist_ok=True)
        series_path = os.path.join(self.out_dir, "series.csv")
        if resumed:
            frames = FrameWriter.resume(self.out_dir, after_time=s.time)
            series = SeriesWriter.resume(series_path, after_time=s.time)
        else:
            row = self._row()
            frames = FrameWriter(self.out_dir)
            series = SeriesWriter(series_path, list(row))
            series.append(row)
            frames.write(s.time, *s.frame())

        progress = Progress(total_steps, self.quiet, self.log_json)
        progress.event("start", out=self.out_dir, steps=total_steps, first_step=s.step_count, backend=s.backend.name,
                       bodies=s.n, scheme=s.label)  # fmt: skip
        first = s.step_count
        previous = signal.getsignal(signal.SIGINT)

        def on_sigint(signum, frame):
            self.stop_requested = True

        signal.signal(signal.SIGINT, on_sigint)
        started = time.perf_counter()
        interrupted, failure = False, None
        try:
            while s.step_count < total_steps:
                # blocks of steps up to the next output (one kernel launch per block); a
                # step that overflows raises (NonFiniteBodyError, NewtonError) and keeps the
                # state of the step before; NumPy's warnings on the way are only noise
                k = s.step_count
                nxt = min(total_steps, _next_multiple(k, series_every), _next_multiple(k, frame_every),
                          _next_multiple(k, ckpt_every) if ckpt_every else total_steps, k + PROGRESS_BLOCK)  # fmt: skip
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    s.advance(dt, nxt - k)
                k = s.step_count
                if k % series_every == 0 or k == total_steps:
                    series.append(self._row())
                if k % frame_every == 0 or k == total_steps:
                    frames.write(s.time, *s.frame())
                    progress.event("frame", step=k, time=s.time)
                if ckpt_every and k % ckpt_every == 0:
                    self._checkpoint(ckpt_path)
                    progress.event("checkpoint", step=k, time=s.time, path=ckpt_path)
                progress.update(k, s.time, first)
                if self.stop_requested:
                    interrupted = True
                    break
        except (NewtonError, IntegrationError) as exc:  # the state is the last good one: keep it
            failure = exc
        finally:
            signal.signal(signal.SIGINT, previous)
            progress.close()
            series.close()
        s.backend.synchronize()
        wall = time.perf_counter() - started
        self._checkpoint(ckpt_path)
        progress.event("checkpoint", step=s.step_count, time=s.time, path=ckpt_path, final=True)
        done = s.step_count - first
        rate = done / wall if wall > 0 else None
        t = self.system.cfg.table
        info = {
            "scene": self.scene_dict,
            "version": __version__,
            "backend": s.backend.name,
            "device": s.backend.device,
            "precision": "float64",
            "scheme": t.scheme,
            "variant": getattr(t, "variant", None),
            "integrator": s.label,
            "dt": dt,
            "bodies": s.n,
            "first_step": first,
            "steps": s.step_count,
            "time": s.time,
            "wall_time_s": wall,
            "steps_per_s": rate,
            "body_steps_per_s": None if rate is None else rate * s.n,
            "interrupted": interrupted,
            "finished": s.step_count >= total_steps,
            "error": None if failure is None else str(failure),
        }
        atomic_write_bytes(os.path.join(self.out_dir, "run.json"), json.dumps(info, indent=2).encode())
        data = read_series(series_path)
        # per-body columns (b<i>_...) stay in series.csv; the plots show the batch figures
        plot_series({k: v for k, v in data.items() if k != "step" and not _per_body_column(k)}, self.out_dir)
        progress.event("end", **{k: v for k, v in info.items() if k != "scene"})
        if failure is not None:
            raise failure
        return info


#: most steps between two progress updates (and SIGINT checks) of a body run
PROGRESS_BLOCK = 256


def _next_multiple(k: int, every: int) -> int:
    """The smallest multiple of ``every`` above ``k``."""
    return (k // every + 1) * every


def _per_body_column(name: str) -> bool:
    head = name.split("_", 1)[0]
    return len(head) > 1 and head[0] == "b" and head[1:].isdigit()


def body_series_columns(names) -> list[str]:
    """The batch-level columns among ``names`` (those without a ``b<i>_`` prefix)."""
    return [n for n in names if not _per_body_column(n)]

