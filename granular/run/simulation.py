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

import os
import sys

from pydantic import ValidationError

from .._version import __version__
from ..checks import field_path, schema_message
from ..compiling import CompileNotice
from ..errors import StepSizeError
from ..io import load_checkpoint, save_checkpoint, series_columns
from ..particles.feeds import Ledger, check_stable_step, match, restore_feeds
from ..particles.integrators import ExplicitIntegrator
from ..particles.integrators.engine import check_state
from ..particles.setup import restore_setup
from ..particles.stability import estimate_stable_step
from ..particles.system import CONTACTS_NEEDED, SMALL_SYSTEM, ParticleSystem, restore_state, state_arrays
from ..resources import check_disk, check_writable, output_counts, run_output_bytes
from .folder import clear, plan_out_dir, resume_dir_problem, resume_out_dir
from .progress import Progress
from .runner import Callback, Periodic, Runner, end_step
from .scene import RunTable
from .writers import Feeds, cadences, checkpoint_path, folder_writers

__all__ = ["BodyRun", "Simulation", "load_state", "run_sampled", "save_state"]


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


#: ``[run]`` keys a :class:`Simulation` takes (the rest of the table: ``duration`` and
#: ``steps`` are what :meth:`Simulation.run` does without arguments; ``backend`` and
#: ``precision`` are the model's).
SIMULATION_KEYS = ("integrator", "dt", "output_every", "series_every", "checkpoint_every", "allow_unstable_step",
                   "energy_tolerance", "graphs", "fragments", "feed_every")  # fmt: skip


def _run_table(run, given) -> tuple[RunTable, bool]:
    """``run`` (a :class:`~granular.run.scene.RunTable`, a dict of ``[run]`` keys or None)
    with the keyword arguments ``given`` (None: not given) put over it, validated as a
    scene's ``[run]`` table: ``ValueError`` naming the field. Also whether the table says
    how long to run (``duration`` or ``steps``)."""
    if run is None:
        table = {}
    elif isinstance(run, RunTable):
        table = run.model_dump()
    elif isinstance(run, dict):
        table = dict(run)
    else:
        raise ValueError(f"run: a dict of [run] keys or a RunTable, got {type(run).__name__}")
    table.update({k: v for k, v in given.items() if v is not None})
    if "dt" not in table:
        raise ValueError("dt: the step size is required (Simulation(model, state, out, dt=...))")
    length = table.get("duration") is not None or table.get("steps") is not None
    if not length:
        table["steps"] = 1  # not used: run(steps=...) or run(until=...) says how far
    try:
        return RunTable.model_validate(table), length
    except ValidationError as exc:
        err = exc.errors()[0]
        where = field_path(err["loc"]) or "run"
        raise ValueError(f"{where}: {schema_message(err, 'the [run] table')}") from None


class Simulation:
    """A particle model and its state run into an output folder: ``granular run`` from Python.

    Parameters
    ----------
    model : Model
        The finalized model.
    state : State
        A state of ``model`` (``model.state()``, or one loaded with
        :func:`~granular.load_state`); advanced in place.
    out : str or os.PathLike
        The run folder (``frames.pvd``, ``series.csv``, ``checkpoints/``, ``run.json``,
        ``plots/``; ``docs/scenes.md``). A folder holding a finished run is refused unless
        ``overwrite``; ``resume=True`` writes on into a run that is there.
    run : dict or RunTable, optional
        Keys of a scene's ``[run]`` table (``dt``, ``integrator``, ``output_every``,
        ``series_every``, ``checkpoint_every``, ``duration`` or ``steps``, ...); the
        keyword arguments below are put over it. Checked as a scene's ``[run]`` is: a
        bad value raises ``ValueError`` naming the field.
    dt : float
        Step size [T] (required here or in ``run``); above the stable-step estimate
        (:func:`~granular.particles.stability.estimate_stable_step`) it is refused unless
        ``allow_unstable_step``.
    integrator : {"verlet", "exact", "campello"}
        The explicit map: (25), (23) or (27) of paper 003.
    output_every, series_every, checkpoint_every : float, optional
        Time between frames, series rows and checkpoints [T]. Default: a frame at the
        start and end of each :meth:`run`, rows with the frames, a checkpoint at the end.
    fragments : {"bonds", "contacts"}, optional
        What joins particles into the fragments of ``series.csv`` (``fragments``,
        ``largest_fragment``), the frames' ``fragment`` point data and ``fragments.csv``
        (written where bonds can break): intact bonds (default), or touching contacts
        too (the model needs particle contacts: ``ValueError`` otherwise).
        :func:`granular.particles.fragments.fragments` says more.
    overwrite, resume : bool
        Replace a run in ``out``; write on into it (the state should be the one of its
        checkpoint: :meth:`resume`).
    quiet, log_json : bool
        Progress: a bar on stderr unless ``quiet``; JSON-line events on stdout with
        ``log_json`` (the CLI's ``--quiet --log-json``).
    feeds : list, optional
        Insertions and outlets (:class:`~granular.particles.feeds.Insertion`,
        :class:`~granular.particles.feeds.Outlet`): particles enter and leave the run
        every ``feed_every``. Given (an empty list too), the run is an open system:
        ``series.csv`` has the ledger's columns (``inserted``, ``removed``, their masses,
        ``E_inserted``, ``E_removed``, ``P_inserted_*``, ``P_removed_*``) and the list may
        change between calls of :meth:`run` (stages). ``model`` and ``state`` are edited
        in place when particles enter or leave.
    feed_every : float, optional
        Time between the feeds' edits [T]; default 100 steps.

    Examples
    --------
    >>> import granular as gr, tempfile
    >>> b = gr.ModelBuilder()
    >>> _ = b.add_particle(x=[0, 0, 1], radius=0.5)
    >>> b.set_gravity([0, 0, -1]); _ = b.add_wall([0, 0, 1], 0.0, k=1e3)
    >>> model = b.finalize("cpu")
    >>> sim = gr.Simulation(model, model.state(), tempfile.mkdtemp(), dt=1e-3, overwrite=True)
    >>> sim.run(steps=100)["steps"]            # relative: 100 steps from here
    100
    >>> round(sim.run(until=0.25)["time"], 12)   # absolute: up to t = 0.25
    0.25
    """

    def __init__(self, model, state, out, run=None, *, dt=None, integrator=None, output_every=None,
                 series_every=None, checkpoint_every=None, energy_tolerance=None, allow_unstable_step=None,
                 graphs=None, overwrite=False, resume=False, quiet=True, log_json=False, scene=None,
                 stable_step=None, fragments=None, feeds=None, feed_every=None):  # fmt: skip
        given = dict(dt=dt, integrator=integrator, output_every=output_every, series_every=series_every,
                     checkpoint_every=checkpoint_every, energy_tolerance=energy_tolerance,
                     allow_unstable_step=allow_unstable_step, graphs=graphs, fragments=fragments,
                     feed_every=feed_every)  # fmt: skip
        self.run_table, self._length_given = _run_table(run, given)
        check_state(model, state)
        if self.run_table.fragments == "contacts" and model.force("contacts") is None:
            raise ValueError(CONTACTS_NEEDED)
        if overwrite and resume:
            raise ValueError("overwrite and resume: give one of them (resume writes on into the run in out, "
                             "overwrite replaces it)")  # fmt: skip
        self.model, self.state = model, state
        self.out_dir = os.fspath(out)
        # stored in run.json and the checkpoints; a script's run stores its [run] table,
        # from which resume() takes the cadences
        self.scene_dict = scene or {"run": self.run_table.model_dump(
            mode="json", exclude=None if self._length_given else {"steps"})}  # fmt: skip
        self.integrator = ExplicitIntegrator(self.run_table.integrator, graphs=self.run_table.graphs)
        self.quiet, self.log_json = bool(quiet), bool(log_json)
        self.energy_tolerance = self.run_table.energy_tolerance
        if stable_step is None:
            stable_step = estimate_stable_step(model, state, self.run_table.integrator)
        self.stable_step = stable_step
        dt = self.run_table.dt
        if dt > stable_step.h_max and not self.run_table.allow_unstable_step:
            raise StepSizeError(f"dt = {dt:g} is above the stable-step estimate {stable_step.describe()}. The "
                                f"explicit maps are stable for h ω < 2 only: reduce dt (below "
                                f"{stable_step.h_max:.3g}), or give allow_unstable_step=True")  # fmt: skip
        if resume:
            why = resume_dir_problem(self.out_dir, "give that directory as out, or continue with "
                                     "Simulation.resume(model, checkpoint), which finds it")  # fmt: skip
            if why:
                raise ValueError(f"resume: {why}")
            self._to_clear = []
        else:
            # OutDirError (a ValueError) in the words of this class: overwrite=True, or the
            # Simulation.resume call that continues the run in out
            self._to_clear = plan_out_dir(self.out_dir, overwrite=overwrite, python=True)
        self._written = bool(resume)  # whether out holds this run's folder (then runs append)
        self.info = None
        self.runner = None
        self.feeds = None if feeds is None else list(feeds)
        self.ledger = None if feeds is None else Ledger()
        self.stage = None  # in a staged run: {"index", "start", "name"} (granular.run.stages)
        self.stop_when = None  # a staged run's test that ends the run at an edit of the feeds
        if model.builder is None and feeds is not None:
            raise ValueError("feeds: the model was not made by ModelBuilder.finalize; its particle set cannot change")

    @property
    def feed_steps(self) -> int:
        """Steps between the feeds' edits (0: a closed system)."""
        if self.feeds is None:
            return 0
        every = self.run_table.feed_every
        return 100 if every is None else max(1, int(round(every / self.run_table.dt)))

    @classmethod
    def resume(cls, model, checkpoint, out=None, **kwargs) -> "Simulation":
        """The run whose checkpoint is ``checkpoint`` (a path to ``checkpoint.npz``, or its
        run folder), continued: the checkpoint restored into a new state of ``model``
        (bit for bit on the same backend), with the run's ``[run]`` table (step, map,
        cadences) unless ``run`` or keywords say otherwise, writing on into the run folder
        (``out``: default the checkpoint's)."""
        path = os.fspath(checkpoint)
        if os.path.isdir(path):
            path = checkpoint_path(path)
        state, meta = load_state(path, model, with_meta=True)
        scene = meta.get("scene") or {}
        if kwargs.get("run") is None:
            kwargs["run"] = dict(scene.get("run") or {})
            kwargs["run"].setdefault("dt", meta.get("dt"))
            kwargs["run"].setdefault("integrator", meta.get("integrator"))
        sim_keys = {k: kwargs[k] for k in SIMULATION_KEYS if kwargs.get(k) is not None}
        if sim_keys and scene and "scene" not in kwargs:
            # the run goes on with other [run] values: what it stores (run.json, the next
            # checkpoint, what a later resume compares) says so
            scene = dict(scene, run={**(scene.get("run") or {}), **sim_keys})
        kwargs.setdefault("scene", scene or None)
        saved = meta.get("feeds")
        if saved is not None and kwargs.get("feeds") is None:  # an open run goes on open
            if saved.get("each"):
                raise ValueError(f"resume: the run had {len(saved['each'])} insertions and outlets; give them "
                                 "(feeds=[...]) in the same order")  # fmt: skip
            kwargs["feeds"] = []
        out = resume_out_dir(path) if out is None else out
        sim = cls(model, state, out, resume=True, **kwargs)
        sim._health_start = meta.get("health")
        restore_feeds(sim.feeds, sim.ledger, meta.get("feeds"))
        return sim

    _health_start = None

    @property
    def dt(self) -> float:
        """The step size [T]."""
        return self.run_table.dt

    @property
    def checkpoint(self) -> str:
        """Where the run keeps its checkpoint (``out/checkpoints/checkpoint.npz``)."""
        return checkpoint_path(self.out_dir)

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

    def change(self, add=(), remove=(), motions=None, gravity=None) -> None:
        """Change the set-up now, between calls of :meth:`run`: put back the walls and
        meshes named in ``add`` and take away those in ``remove`` (the names of
        ``ModelBuilder.add_wall(..., name=)`` and ``add_mesh``), give those named in
        ``motions`` (``{name: {"velocity": ..., "angular_velocity": ..., "center": ...}}``,
        as ``add_wall`` takes them, the table's times and the centre counted from now) a
        new motion from now on, and set ``gravity``
        (:mod:`granular.particles.setup`). The run must be an open system (``feeds``
        given, an empty list will do): its ledger books the energy the change brought
        as ``E_setup``, so the health check's balance holds. Checkpoints keep the set-up;
        :meth:`resume` gives the model the one it had."""
        if self.ledger is None:
            raise ValueError("change: the set-up changes in an open system's run: make the Simulation with "
                             "feeds=[] (or insertions and outlets), whose series has the ledger's columns")  # fmt: skip
        system = ParticleSystem(self.model, self.state, self.integrator, feeds=self.feeds, ledger=self.ledger)
        system.change_setup(add=add, remove=remove, motions=motions, gravity=gravity)

    def end_step(self, steps=None, until=None) -> int:
        """The step at which :meth:`run` with these arguments stops (see there)."""
        if steps is None and until is None:
            table = self.run_table
            if not self._length_given:
                raise ValueError("run: give steps (how many from here) or until (the time to reach)")
            # as in a scene file (granular run): the end step counted from step 0, steps or
            # round(duration / dt)
            end = table.steps if table.steps is not None else int(round(table.duration / table.dt))
            if end <= self.state.step:
                raise ValueError(f"run: the run table's end, step {end}, is not after the state's step "
                                 f"{self.state.step}; give steps or until")  # fmt: skip
            return end
        h = float(self.model.dtype.type(self.run_table.dt))  # the step the engine takes
        return end_step(self.state.step, self.state.time, h, steps, until, self.model.dtype)

    def run(self, steps=None, until=None) -> dict:
        """Advance by ``steps`` steps (relative to the state's step) or up to the time
        ``until`` (absolute: the first step at or after it), writing the folder; with
        neither, to the end the ``run`` table gives, as ``granular run`` does: step
        ``steps``, or step ``round(duration / dt)``, counted from step 0. Returns the
        ``run.json`` dict. A failed step or health check raises its
        :class:`~granular.errors.IntegrationError` after the last state that passed was
        put back and written as the checkpoint. Later calls write on into the folder."""
        total = self.end_step(steps, until)
        with CompileNotice(quiet=self.quiet, log_json=self.log_json):
            return self.execute(self.state, total, resumed=self._written, health_start=self._health_start)

    def execute(self, state, total_steps: int, resumed: bool = False, health_start=None) -> dict:
        """Advance ``state`` to the absolute step ``total_steps`` writing the output
        directory (what :meth:`run` does; ``resumed``: write on into the folder;
        ``health_start``: a resumed run's checkpoint ``meta["health"]``). Returns the
        ``run.json`` dict."""
        if total_steps <= state.step:
            raise ValueError(f"total_steps: {total_steps} is not after the state's step {state.step}")
        self.preflight(total_steps, state.step)
        if self.feeds:  # what the insertions bring against the step (each checked once)
            check_stable_step(self.model, state, self.feeds, self.run_table.dt, self.run_table.integrator,
                              allow_unstable_step=self.run_table.allow_unstable_step)  # fmt: skip
        if not resumed:
            clear(self._to_clear)
            self._to_clear = []
        system = ParticleSystem(self.model, state, self.integrator, self.energy_tolerance, health_start,
                                self.stable_step, fragments=self.run_table.fragments, feeds=self.feeds,
                                ledger=self.ledger)  # fmt: skip
        system.stage = self.stage
        writers = folder_writers(self.out_dir, self.run_table, total_steps, self.scene_dict, self.feed_steps)
        for w in writers:
            if isinstance(w, Feeds):
                w.stop_when = self.stop_when
        if resumed and self.ledger is not None and not getattr(self.ledger, "seen", None):
            # the columns the series has (a force a change took away reads zero in them)
            self.ledger.seen = series_columns(os.path.join(self.out_dir, "series.csv"))
        self.runner = Runner(system, self.run_table.dt, writers, Progress(total_steps, self.quiet, self.log_json))
        self._written = True
        try:
            self.runner.run(total_steps, resumed)
        finally:
            self.info = writers[-1].info
            if system.health is not None:
                self._health_start = system.health.start_values()
        return self.info


def save_state(path, model, state, **meta) -> str:
    """Write ``state`` (every array, the clock and, with the dissipative law, the contact
    springs) to the checkpoint file ``path`` (``.npz``, written atomically); ``meta``:
    more JSON-able entries to store. :func:`load_state` puts it back bit for bit."""
    info = {"version": __version__, "backend": model.backend.name, "n": model.n, "dtype": str(model.dtype),
            "step": state.step, "time": state.time}  # fmt: skip
    info.update(meta)
    path = os.fspath(path)
    save_checkpoint(path, state_arrays(model, state), info)
    return path


def load_state(path, model, state=None, with_meta=False):
    """The checkpoint ``path`` (of :func:`save_state` or of a run folder) restored into
    ``state`` (default: a new ``model.state()``; always a new one where the run changed
    its set-up or its particle set, which ``model`` takes); returns the state, and the
    checkpoint's metadata with ``with_meta``. ``ValueError`` when the checkpoint does not fit the
    model (particles, bonds, dtype, contact law). Bit for bit on the backend that wrote
    it; on another backend the arrays are the same, the next steps may differ in the
    last bits."""
    arrays, meta = load_checkpoint(os.fspath(path))
    if meta.get("setup"):  # the run changed its walls, meshes or gravity: the model takes them
        restore_setup(model, meta["setup"])
        state = None
    if "particle_ids" in arrays and (state is None or state.x.shape[0] != len(arrays["particle_ids"])):
        match(model, arrays)  # particles entered or left the run: the model takes its set
    state = model.state() if state is None else state
    restore_state(model, state, arrays)
    return (state, meta) if with_meta else state


class BodyRun:
    """A batch of bodies (an adapter of :mod:`granular.bodies.scenes.systems`) run into a
    folder: what ``granular run`` does for a ``[bodies]`` scene, for scripts. ``run``: the
    scene's ``[run]`` table. After :meth:`execute`, ``info`` holds what ``run.json`` holds."""

    def __init__(self, system, run, out_dir, scene_dict=None, quiet=False, log_json=False):
        self.system, self.run_table, self.out_dir = system, run, out_dir
        self.scene_dict = scene_dict or {}
        self.quiet, self.log_json = quiet, log_json
        self.info = None

    def preflight(self, total_steps, first_step=0) -> None:
        """Before computing: ``out_dir`` is writable and its file system has room for the
        frames, series and checkpoints of the run (:class:`~granular.resources.ResourceError`)."""
        check_writable(self.out_dir)
        frame_every, series_every, ckpt_every = cadences(self.run_table, total_steps)
        frames, rows = output_counts(total_steps, first_step, frame_every, series_every, ckpt_every)
        n = self.system.n
        check_disk(self.out_dir, run_output_bytes(n, 0, frames, rows, 40 + (30 * n if n < SMALL_SYSTEM else 0)),
                   f"the run ({frames} frames of {n:,} bodies)")  # fmt: skip

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
