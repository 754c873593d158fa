"""Running an ensemble: its chunks in process or as Dask tasks, stored as they finish,
with progress lines; the outputs (summaries, histograms, ``ensemble.json``)."""

from __future__ import annotations

import itertools
import os
import sys
import time as _time

import numpy as np

from ..compiling import compile_seconds
from ..io._atomic import atomic_write, atomic_write_bytes
from ..io.jsonio import dumps
from ..run.progress import json_event
from ..run.scene import load_scene
from .chunk import (
    run_chunk,
)
from .particles import ParticleSpec, make_particle_spec, run_particle_chunk
from .spec import (
    EnsembleSpecError,
    chunk_bounds,
    make_spec,
)

__all__ = ["Progress", "collect", "run_ensemble", "write_outputs"]

def make_any_spec(scene, n, vary, seed, steps=None, time=None, backend="cpu"):
    """The spec of an ensemble of ``scene``: of bodies for a ``[bodies]`` scene
    (:func:`~granular.ensemble.spec.make_spec`), of replicas for a particle scene
    (:func:`~granular.ensemble.particles.make_particle_spec`)."""
    source = "scene"
    if isinstance(scene, (str, os.PathLike)):
        source = str(scene)
        scene = load_scene(scene)
    if getattr(scene, "bodies", None) is None and getattr(scene, "particles", None):
        return make_particle_spec(scene, n, vary, seed, steps=steps, time=time, backend=backend, source=source)
    return make_spec(scene, n, vary, seed, steps=steps, time=time, backend=backend)


def chunk_runner(spec):
    """The function that runs a chunk of ``spec``'s ensemble: ``(spec, start, stop, progress)``."""
    return run_particle_chunk if isinstance(spec, ParticleSpec) else run_chunk


def _index(part) -> np.ndarray:
    return part["body"] if "body" in part else part["replica"]


def collect(parts, n: int) -> dict:
    """Place chunk tables (an iterable, in any order; each with its ``body`` (or
    ``replica``) column, a contiguous range) into one table of ``n`` rows in body order. Each part is dropped once
    copied, so the driver holds the table plus one chunk, never all chunks twice."""
    table = None
    filled = 0
    for part in parts:
        if table is None:
            table = {k: np.empty((n,) + v.shape[1:], dtype=v.dtype) for k, v in part.items()}
        a = int(_index(part)[0])
        b = a + len(_index(part))
        for k, v in part.items():
            table[k][a:b] = v
        filled += b - a
    if filled != n:
        raise RuntimeError(f"ensemble: {filled} of {n} members came back")
    return table


def run_ensemble(scene, n, vary, seed=0, chunk_size=None, backend="cpu", client=None, steps=None, time=None,
                 summaries=None, retries=3, _kill_once_dir=None, store=None, progress=None) -> dict:  # fmt: skip
    """Run ``n`` bodies of the ``[bodies]`` scene ``scene`` (a path or a loaded
    :class:`~granular.run.scene.Scene`) with the fields of ``vary`` (``{FIELD: "uniform(a,b)"
    ...}`` or ``["FIELD=SPEC", ...]``) sampled from ``seed``, in chunks of at most
    ``chunk_size`` bodies (default 10000; one batched system each, on ``backend``), for ``steps`` steps
    or ``time`` [T] (default: the scene's ``run``). A particle scene gives ``n`` replicas
    of it instead, ``chunk_size`` (default 1000) to a model
    (:mod:`granular.ensemble.particles`), with a ``replica`` column in place of ``body``.

    ``client``: None runs the chunks one after the other in this process; a
    ``dask.distributed.Client`` runs each chunk as a task (``client.map``, ``retries``
    retries when a worker dies) and gathers them in body order. ``summaries``: the
    column names to keep (default: all, see the module docstring). Returns
    ``{column: (n,) array}`` in body order; identical for any ``chunk_size`` and
    ``client`` on the same backend. Raises :class:`EnsembleSpecError` (bad arguments),
    :class:`~granular.run.scene.SceneError` (bad scene), and a chunk's step failure.

    ``store``: a :class:`~granular.ensemble.store.ChunkStore`; each chunk's table is saved
    there as it comes back, and chunks already there are not run again (resume).

    ``progress``: a :class:`Progress` told of the steps taken (in-process runs) and of
    every finished chunk."""
    spec = make_any_spec(scene, n, vary, seed, steps=steps, time=time, backend=backend)
    runner = chunk_runner(spec)
    if chunk_size is None:  # bodies per batched system, or replicas per model
        chunk_size = 1000 if isinstance(spec, ParticleSpec) else 10_000
    if _kill_once_dir is not None:
        spec.kill_once_dir = str(_kill_once_dir)
    bounds = chunk_bounds(spec.n, chunk_size)
    if progress is None:
        progress = Progress(spec.n, spec.steps, len(bounds), stream=None)
    if store is not None:
        done = store.done()
        todo = [ab for ab in bounds if ab not in done]
        progress.start([ab for ab in bounds if ab in done])
        parts = _stored_run(spec, todo, store, client, retries, progress, runner)
        table = collect(itertools.chain((store.load(a, b) for a, b in bounds if (a, b) in done), parts), spec.n)
    elif client is None:
        progress.start([])
        table = collect((progress.finished(a, b, runner(spec, a, b, progress.stepper(a, b))) for a, b in bounds),
                        spec.n)  # fmt: skip
    else:
        from dask.distributed import as_completed

        futures = client.map(runner, [spec] * len(bounds), [a for a, _ in bounds], [b for _, b in bounds],
                             retries=retries, pure=False)  # fmt: skip

        def gathered():
            for fut, part in as_completed(futures, with_results=True):
                fut.release()  # the worker may drop the chunk's result once it is here
                yield part

        table = collect(gathered(), spec.n)
        del futures
    if summaries is not None:
        missing = [c for c in summaries if c not in table]
        if missing:
            raise EnsembleSpecError(f"summaries: unknown column(s) {missing}; available: {', '.join(table)}")
        first = "body" if "body" in table else "replica"
        table = {c: table[c] for c in [first, *[s for s in summaries if s != first]]}
    return table


class Progress:
    """Progress lines of an ensemble on ``stream`` (None: silent): the share of
    body-steps done, the rate and the time left, the first after ``first`` seconds and
    then at most every ``every`` seconds, from the steps inside a chunk (in-process runs)
    and from finished chunks (Dask). With ``log_json`` the same as JSON lines on stdout
    (``{"event": "progress", ...}``, as ``granular run --log-json`` prints)."""

    def __init__(self, n, steps, chunks, stream=sys.stderr, first=2.0, every=10.0, clock=_time.monotonic,
                 unit="body", log_json=False):  # fmt: skip
        self.total, self.steps, self.chunks, self.stream = n * steps, steps, chunks, stream
        self.unit = unit
        self.log_json = bool(log_json)
        self.first, self.every, self.clock = first, every, clock
        self.done = self.chunks_done = 0
        self.resumed = 0
        self.t0 = self.next = None

    def start(self, done_bounds) -> None:
        self.chunks_done = len(done_bounds)
        self.done = self.resumed = sum((b - a) * self.steps for a, b in done_bounds)
        self.t0 = self.clock()
        self.compiled0 = compile_seconds()
        self.next = self.t0 + self.first

    def stepper(self, a, b):
        """``progress(k)`` for :func:`run_chunk` of bodies ``a..b-1``."""
        base = self.done

        def progress(k):
            self._maybe_print(base + k * (b - a))

        return progress

    def finished(self, a, b, part):
        """Count the chunk ``a..b-1`` as done; returns ``part`` (its table)."""
        self.chunks_done += 1
        self.done += (b - a) * self.steps
        self._maybe_print(self.done)
        return part

    def _rate(self, done) -> float:
        """Unit-steps per second of stepping: the kernels' compilation in this process
        (the first chunk's, on a cold cache: minutes on 2 cores, for a few steps) is left
        out, or the first estimate of the time left would be off by orders of magnitude."""
        elapsed = self.clock() - self.t0 - (compile_seconds() - self.compiled0)
        return (done - self.resumed) / elapsed if elapsed > 0 else 0.0

    def line(self, done) -> str:
        rate = self._rate(done)
        left = f", about {_duration((self.total - done) / rate)} left" if rate > 0 else ""
        return (f"granular ensemble: {100.0 * done / max(self.total, 1):.0f} % ({done:,} of {self.total:,} "
                f"{self.unit}-steps; {self.chunks_done} of {self.chunks} chunks done), {rate:,.0f} "
                f"{self.unit}-steps/s{left}")  # fmt: skip

    def record(self, done) -> dict:
        """The fields of a progress event: ``done`` and ``total`` in unit-steps, chunks,
        rate, time left."""
        rate = self._rate(done)
        return {"unit": f"{self.unit}-steps", "done": done, "total": self.total,
                "chunks_done": self.chunks_done, "chunks": self.chunks, "rate": rate,
                "eta_s": (self.total - done) / rate if rate > 0 else None}  # fmt: skip

    def _maybe_print(self, done) -> None:
        if (self.stream is None and not self.log_json) or self.clock() < self.next or done >= self.total:
            return
        if self.log_json:
            json_event("progress", **self.record(done))
        else:
            print(self.line(done), file=self.stream, flush=True)
        self.next = self.clock() + self.every


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 172800:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} days"


def _stored_run(spec, bounds, store, client, retries, progress, runner=run_chunk):
    """Run the chunks ``bounds`` (in process or on ``client``) and save each to ``store`` as
    it comes back; yields their tables."""
    if client is None:
        for a, b in bounds:
            yield progress.finished(a, b, store.save(runner(spec, a, b, progress.stepper(a, b))))
        return
    from dask.distributed import as_completed

    futures = client.map(runner, [spec] * len(bounds), [a for a, _ in bounds], [b for _, b in bounds],
                         retries=retries, pure=False)  # fmt: skip
    for fut, part in as_completed(futures, with_results=True):
        fut.release()
        first = int(_index(part)[0])
        yield progress.finished(first, first + len(_index(part)), store.save(part))


# ----------------------------------------------------------------- output


#: Units of the summary columns the engines write (scene units: mass M, length L, time T).
UNITS = {"wall_contact_force_max": "[M L/T²]", "wall_force_sampled_max": "[M L/T²]", "v_cm_x": "[L/T]",
         "v_cm_y": "[L/T]", "v_cm_z": "[L/T]", "energy_rel_error": "[-]", "broken_bonds": "[-]",
         "contacts": "[-]", "energy0": "[M L²/T²]", "energy_error": "[M L²/T²]", "L_error_norm": "[M L²/T]",
         "flip_time": "[T]"}  # fmt: skip


def _unit(column: str) -> str:
    if column in UNITS:
        return UNITS[column]
    if column.startswith(("kinetic_", "U_", "dissipated_")):
        return "[M L²/T²]"
    return ""


def write_outputs(table: dict, out_dir: str, hist_columns=None, meta=None) -> list[str]:
    """Write ``summaries.npz`` (one array per column; ``summaries.parquet`` too when
    pyarrow is installed), ``histograms.png`` of ``hist_columns`` (default: the sampled
    columns, ``energy_rel_error``, ``L_error_norm``, ``flip_time``; non-finite values left
    out; each panel's abscissa the column with its unit where known, its ordinate the
    count of replicas or bodies) and ``ensemble.json`` (``meta``) into ``out_dir``, each
    atomically. Returns the paths."""


    os.makedirs(out_dir, exist_ok=True)
    paths = []

    def npz(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **table)

    paths.append(atomic_write(os.path.join(out_dir, "summaries.npz"), npz))
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pa = None
    if pa is not None:
        paths.append(atomic_write(os.path.join(out_dir, "summaries.parquet"),
                                  lambda tmp: pq.write_table(pa.table(table), tmp)))  # fmt: skip
    if hist_columns is None:
        fixed = {"body", "time", "x", "y", "z", "q0", "q1", "q2", "q3", "omega_x", "omega_y", "omega_z", "Omega_1",
                 "Omega_2", "Omega_3", "energy0", "energy_error", "L_error_x", "L_error_y", "L_error_z",
                 "flip_axis"}  # fmt: skip
        hist_columns = [c for c in table if c not in fixed]
    cols = [c for c in hist_columns if c in table and np.isfinite(table[c]).any()]
    if cols:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        k = len(cols)
        ncol = min(3, k)
        nrow = (k + ncol - 1) // ncol
        from matplotlib.ticker import MaxNLocator

        what = "replicas" if "replica" in table else "bodies"
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.3 * ncol, 3.3 * nrow), squeeze=False, layout="constrained")
        for ax, c in zip(axes.flat, cols):
            v = np.asarray(table[c], dtype=np.float64)
            v = v[np.isfinite(v)]
            ax.hist(v, bins=min(50, max(5, int(np.sqrt(v.size)))))
            ax.set_title(c if v.size == len(table[c]) else f"{c} ({v.size} of {len(table[c])} finite)", fontsize=9)
            ax.set_xlabel(f"{c} {_unit(c)}".rstrip(), fontsize=8)
            ax.set_ylabel(what, fontsize=8)
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4), useMathText=True)
        for ax in list(axes.flat)[k:]:
            ax.set_visible(False)
        paths.append(atomic_write(os.path.join(out_dir, "histograms.png"),
                                  lambda tmp: fig.savefig(tmp, format="png", dpi=90)))  # fmt: skip
        plt.close(fig)
    if meta is not None:
        data = dumps(meta, indent=2, default=str).encode()  # standard JSON: non-finite numbers as strings

        paths.append(atomic_write_bytes(os.path.join(out_dir, "ensemble.json"), data))
    return paths
