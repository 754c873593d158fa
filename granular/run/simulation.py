"""A particle run written to an output folder: :class:`Simulation`.

It joins a model and state (:class:`~granular.particles.system.ParticleSystem`), the
run loop (:class:`~granular.run.runner.Runner`) and the run folder's writers
(:mod:`granular.run.writers`, whose docstring lists the files). The run advances in
blocks of steps between output events; at each event the state is checked
(:mod:`granular.particles.health`) before anything is written, and a copy of the last state that
passed is kept on the backend, so a failed check or step writes that state, never the
exploded one, as the checkpoint. SIGINT (Ctrl-C) and SIGTERM stop after the current
block, write a checkpoint and return with ``interrupted`` set.
"""

from __future__ import annotations

import sys

from ..particles.integrators import ExplicitIntegrator
from ..particles.system import SMALL_SYSTEM, ParticleSystem
from ..resources import check_disk, check_writable, output_counts, run_output_bytes
from .progress import Progress
from .runner import Callback, Periodic, Runner
from .writers import cadences, folder_writers

__all__ = ["BodyRun", "Simulation", "run_sampled"]


def run_sampled(model, state, integrator, h, steps, every=0, sample=None, label=None):
    """Advance ``state`` by ``steps`` steps of ``h`` in the run loop, calling
    ``sample(state)`` after every ``every``-th step (at least 1; counted from the state's
    step; not after the last unless it falls on one). A failing step raises with the state
    of the step before it, as :meth:`~granular.particles.integrators.ExplicitIntegrator.run`
    does: the run of a study, which measures along the
    way and writes no folder. ``label``: show a progress bar on stderr under this name
    when stderr is a terminal (nothing in scripts and logs)."""
    system = ParticleSystem(model, state, integrator, health=False)
    writers = []
    if sample is not None:
        every = max(1, int(every))
        writers.append(Callback(Periodic(every, at_end=False, phase=state.step), lambda r: sample(state)))
    end = state.step + int(steps)
    progress = None
    if label is not None and sys.stderr.isatty():
        progress = Progress(end, quiet=False, log_json=False)
    Runner(system, h, writers, progress, handle_signals=False).run(end)


class Simulation:
    """Runs a model from a state to ``total_steps`` and writes the output directory.

    ``run``: the scene's ``[run]`` table (``dt``, ``integrator``, cadences,
    ``energy_tolerance``); ``stable_step``: the setup's
    :class:`~granular.particles.stability.StepEstimate`. After :meth:`execute`, ``info`` holds what
    ``run.json`` holds."""

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
        self.energy_tolerance = getattr(run, "energy_tolerance", None)
        self.info = None
        self.runner = None

    def cadences(self, total_steps) -> tuple[int, int, int]:
        """Steps between frames, series rows and checkpoints (0: none)."""
        return cadences(self.run_table, total_steps)

    def preflight(self, total_steps, first_step=0) -> None:
        """Before computing: ``out_dir`` is writable and its file system has room for the
        frames, series and checkpoints of the run (:class:`~granular.resources.ResourceError`)."""
        check_writable(self.out_dir)
        frame_every, series_every, ckpt_every = self.cadences(total_steps)
        frames, rows = output_counts(total_steps, first_step, frame_every, series_every, ckpt_every)
        columns = 20 + (4 * 13 * self.model.n if self.model.n < SMALL_SYSTEM else 0)
        check_disk(self.out_dir, run_output_bytes(self.model.n, self.model.n_bonds, frames, rows, columns),
                   f"the run ({frames} frames of {self.model.n:,} particles)")  # fmt: skip

    def execute(self, state, total_steps: int, resumed: bool = False, health_start=None) -> dict:
        """Advance ``state`` to step ``total_steps`` writing the output directory;
        ``health_start``: a resumed run's checkpoint ``meta["health"]``. Returns the
        ``run.json`` dict; raises the step's :class:`~granular.errors.IntegrationError`
        (or :class:`~granular.errors.HealthError`) after writing the last state that
        passed the health check as the checkpoint."""
        system = ParticleSystem(self.model, state, self.integrator, self.energy_tolerance, health_start,
                                self.stable_step)  # fmt: skip
        writers = folder_writers(self.out_dir, self.run_table, total_steps, self.scene_dict)
        self.runner = Runner(system, self.run_table.dt, writers, Progress(total_steps, self.quiet, self.log_json))
        try:
            self.runner.run(total_steps, resumed)
        finally:
            self.info = writers[-1].info
        return self.info


class BodyRun:
    """A batch of bodies (an adapter of :mod:`granular.bodies.scenes.systems`) run into a
    folder: what ``granular run`` does for a ``[bodies]`` scene, for scripts. ``run``: the
    scene's ``[run]`` table. After :meth:`execute`, ``info`` holds what ``run.json`` holds."""

    def __init__(self, system, run, out_dir, scene_dict=None, quiet=False, log_json=False):
        self.system, self.run_table, self.out_dir = system, run, out_dir
        self.scene_dict = scene_dict or {}
        self.quiet, self.log_json = quiet, log_json
        self.info = None

    def execute(self, total_steps: int, resumed: bool = False) -> dict:
        """Advance to step ``total_steps`` writing the folder; returns the ``run.json``
        dict. A failing step raises after the state before it was written as the checkpoint."""
        writers = folder_writers(self.out_dir, self.run_table, total_steps, self.scene_dict)
        runner = Runner(self.system, self.run_table.dt, writers, Progress(total_steps, self.quiet, self.log_json))
        try:
            runner.run(total_steps, resumed)
        finally:
            self.info = writers[-1].info
        return self.info
