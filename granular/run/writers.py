"""The run folder's writers, attached to a :class:`~granular.run.runner.Runner`.

The folder is a stable contract (``docs/scenes.md``, "Output directory"):

``frames.pvd``, ``frames/*.vtu``
    ParaView time series (:class:`Frames`), one file per frame, written by a background
    thread (:class:`~granular.io.vtk.FrameQueue`) from host copies;
``walls.pvd``, ``walls/*.vtu``
    with moving walls, the walls at each frame's time (:class:`Frames`);
``walls.csv``
    with walls, the force and moment on each wall at the series' times (:class:`WallLoads`);
``series.csv``
    one row per series time (:class:`Series`): ``time``, ``step`` and the system's columns;
``checkpoints/checkpoint.npz``
    the latest checkpoint (:class:`Checkpoints`), written atomically after the frames and
    rows it follows are on disk, and once more at the end (the last good state), from
    which ``--resume`` continues bit-for-bit on the same backend;
``fragments.csv``
    with bonds that can break, the fragments of the last state (:class:`Record`);
``run.json``, ``plots/*.png``
    what the run was and how it went, and the series plotted (:class:`Record`), at the end;
    standard JSON (:mod:`granular.io.jsonio`: an infinite ``strain_max`` is ``"Infinity"``).

:func:`folder_writers` attaches all four with the cadences of a ``[run]`` table.
"""

from __future__ import annotations

import os

from .._version import __version__
from ..io import FrameWriter, SeriesWriter, plot_series, read_series, save_checkpoint
from ..io._atomic import atomic_write_bytes
from ..io.jsonio import dumps, encode
from ..io.vtk import FrameQueue, MeshFrameWriter, WallFrameWriter
from ..resources import cadence
from .runner import Periodic

__all__ = ["Checkpoints", "Feeds", "Frames", "Record", "Series", "WallLoads", "cadences", "checkpoint_path", "folder_writers"]


def checkpoint_path(out_dir) -> str:
    """Where a run in ``out_dir`` keeps its checkpoint."""
    return os.path.join(out_dir, "checkpoints", "checkpoint.npz")


def cadences(run, total_steps) -> tuple[int, int, int]:
    """Steps between frames, series rows and checkpoints (0: none) of the ``[run]`` table
    ``run`` (``output_every``, ``series_every``, ``checkpoint_every`` as times; frames
    default to the first and last state, rows to the frames)."""
    frame_every = cadence(run.output_every, run.dt, max(1, total_steps))
    series_every = cadence(run.series_every, run.dt, frame_every)
    return frame_every, series_every, cadence(run.checkpoint_every, run.dt, 0)


class Series:
    """``series.csv``: the initial row, one row each ``every`` steps and one at the end."""

    def __init__(self, out_dir, every):
        self.path = os.path.join(out_dir, "series.csv")
        self.trigger = Periodic(every)
        self.writer = None

    def begin(self, runner, resumed):
        s = runner.system
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        if resumed:
            self.writer = SeriesWriter.resume(self.path, after_time=s.time)
        else:
            row = s.series_row()
            self.writer = SeriesWriter(self.path, list(row))
            self.writer.append(row)

    def write(self, runner, row):
        self.writer.append(row)

    def sync(self):
        self.writer.sync()

    def close(self):
        if self.writer is not None:
            self.writer.close()


class WallLoads:
    """``walls.csv``: the particles' load on each wall at the series' times: ``time``,
    ``step`` and, for wall ``k``, ``wall{k}_Fx..Fz`` (the force on it) and
    ``wall{k}_Mx..Mz`` (its moment about the wall's centre); only for systems with walls."""

    def __init__(self, out_dir, every):
        self.path = os.path.join(out_dir, "walls.csv")
        self.trigger = Periodic(every)
        self.writer = None

    def begin(self, runner, resumed):
        s = runner.system
        if getattr(s, "wall_loads_row", None) is None or s.wall_loads_row() is None:
            self.trigger = Periodic(0)
            return
        if resumed:
            self.writer = SeriesWriter.resume(self.path, after_time=s.time)
        else:
            row = s.wall_loads_row()
            self.writer = SeriesWriter(self.path, list(row))
            self.writer.append(row)

    def write(self, runner, row):
        if self.writer is not None:
            self.writer.append(runner.system.wall_loads_row())

    def sync(self):
        if self.writer is not None:
            self.writer.sync()

    def close(self):
        if self.writer is not None:
            self.writer.close()


class Frames:
    """``frames.pvd`` and ``frames/*.vtu``: the initial frame, one each ``every`` steps and
    one at the end; a new run also gets the system's static geometry (walls at rest), and
    a system with moving walls ``walls.pvd`` and ``walls/*.vtu``, the walls at each
    frame's time."""

    def __init__(self, out_dir, every):
        self.out_dir = out_dir
        self.trigger = Periodic(every)
        self.queue = None
        self.walls = None  # the moving walls' collection
        self.meshes = None  # the triangle meshes' collection

    def begin(self, runner, resumed):
        s = runner.system
        moving = getattr(s, "walls_frame", None) is not None and s.walls_frame() is not None
        meshes = getattr(s, "meshes_frame", None) is not None and s.meshes_frame() is not None
        if resumed:
            self.queue = FrameQueue(FrameWriter.resume(self.out_dir, after_time=s.time))
            # walls or meshes that a change of the set-up brought in: their collection begins now
            if moving:
                self.walls = (WallFrameWriter.resume(self.out_dir, after_time=s.time)
                              if os.path.exists(os.path.join(self.out_dir, WallFrameWriter.pvd_name))
                              else WallFrameWriter(self.out_dir))  # fmt: skip
            if meshes:
                self.meshes = (MeshFrameWriter.resume(self.out_dir, after_time=s.time)
                               if os.path.exists(os.path.join(self.out_dir, MeshFrameWriter.pvd_name))
                               else MeshFrameWriter(self.out_dir))  # fmt: skip
            return
        self.queue = FrameQueue(FrameWriter(self.out_dir))
        if moving:
            self.walls = WallFrameWriter(self.out_dir)
        if meshes:
            self.meshes = MeshFrameWriter(self.out_dir)
        if hasattr(s, "write_static"):
            s.write_static(self.out_dir)
        self._write(s)

    def _write(self, s):
        self.queue.write(s.time, *s.frame())
        if self.walls is not None:
            self.walls.write_walls(s.time, *s.walls_frame())
        if self.meshes is not None:
            self.meshes.write_meshes(s.time, *s.meshes_frame())

    def write(self, runner, row):
        s = runner.system
        self._write(s)
        runner.event("frame", step=s.step_count, time=s.time)

    def sync(self):
        self.queue.sync()
        for extra in (self.walls, self.meshes):
            if extra is not None:
                extra.sync()

    def close(self):
        if self.queue is not None:
            self.queue.close()


class Feeds:
    """The run's insertions and outlets (:mod:`granular.particles.feeds`), applied every
    ``every`` steps from step 0 (not at the end), before the event's row, frame and
    checkpoint are written, so that each of them shows the edited set and a run
    resumed from the checkpoint goes on from it."""

    checked = False

    def __init__(self, every):
        self.trigger = Periodic(every, at_end=False)
        #: a callable of the system, true when the run should end after this edit (a
        #: stage's count of particles reached: granular.run.stages); None for none
        self.stop_when = None

    def before(self, runner):
        runner.system.apply_feeds()
        if self.stop_when is not None and self.stop_when(runner.system):
            runner.end_step = runner.system.step_count  # the run ends here, its last row and checkpoint now

    def write(self, runner, row):
        pass


class Checkpoints:
    """``checkpoints/checkpoint.npz`` every ``every`` steps (0: only at the end) and at the
    end; ``scene``: the scene dictionary stored with it (what ``--resume`` compares)."""

    def __init__(self, out_dir, every, scene=None):
        self.path = checkpoint_path(out_dir)
        self.trigger = Periodic(every, at_end=False)
        self.scene = scene or {}

    def begin(self, runner, resumed):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)

    def save(self, runner):
        s = runner.system
        runner.sync(but=self)  # what the checkpoint follows is on disk before it
        meta = {"scene": self.scene, "version": __version__, "backend": s.backend.name, "dt": runner.dt}
        meta.update(s.checkpoint_meta())
        meta.update(step=s.step_count, time=s.time)
        save_checkpoint(self.path, s.state_arrays(), meta)

    def write(self, runner, row):
        self.save(runner)
        runner.event("checkpoint", step=runner.system.step_count, time=runner.system.time, path=self.path)

    def end(self, runner):
        self.save(runner)
        runner.event("checkpoint", step=runner.system.step_count, time=runner.system.time, path=self.path, final=True)


class Record:
    """``run.json``, ``plots/*.png`` and the system's final files (``fragments.csv``) at
    the end; the start and end events. ``info``:
    what ``run.json`` holds, once written."""

    def __init__(self, out_dir, scene=None):
        self.out_dir = out_dir
        self.scene = scene or {}
        self.info = None

    def begin(self, runner, resumed):
        s = runner.system
        runner.event("start", out=self.out_dir, steps=runner.end_step, first_step=s.step_count,
                     backend=s.backend.name, **encode(s.start_fields(runner.dt)))  # fmt: skip

    def end(self, runner):
        s = runner.system
        rate = runner.steps_per_s
        info = {"scene": self.scene, "version": __version__, "backend": s.backend.name, "device": s.backend.device}
        info.update(s.describe(runner.dt))
        info.update(first_step=runner.first_step, steps=s.step_count, time=s.time, wall_time_s=runner.wall_time,
                    compile_time_s=runner.compile_time, steps_per_s=rate)  # fmt: skip
        info.update(s.rates(rate) if hasattr(s, "rates") else {})
        info.update(interrupted=runner.interrupted, finished=runner.finished)
        info.update(s.health_info() if hasattr(s, "health_info") else {})
        info["error"] = None if runner.failure is None else str(runner.failure)
        self.info = info
        if hasattr(s, "write_final"):
            s.write_final(self.out_dir)
        atomic_write_bytes(os.path.join(self.out_dir, "run.json"), dumps(info, indent=2).encode())
        data = read_series(os.path.join(self.out_dir, "series.csv"))
        if hasattr(s, "plot_columns"):
            data = s.plot_columns(data)
        plot_series(data, self.out_dir)
        runner.event("end", **encode({k: v for k, v in info.items() if k != "scene"}))


def folder_writers(out_dir, run, total_steps, scene=None, feed_every=0) -> list:
    """The writers of a run folder for the ``[run]`` table ``run``: series, frames,
    checkpoints, record (in that order: the end's checkpoint precedes ``run.json``);
    ``feed_every``: the steps between the feeds' edits (0: none)."""
    frame_every, series_every, ckpt_every = cadences(run, total_steps)
    feeds = [Feeds(feed_every)] if feed_every else []
    return feeds + [Series(out_dir, series_every), WallLoads(out_dir, series_every), Frames(out_dir, frame_every),
            Checkpoints(out_dir, ckpt_every, scene), Record(out_dir, scene)]  # fmt: skip
