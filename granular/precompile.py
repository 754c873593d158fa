"""Compile the engine's kernels before a run, side by side: one process per function.

From the command line::

    granular compile [--backend cpu|gpu|all] [--law hertz,hertz-mindlin] [--precision float64]
                     [--meshes] [--jobs N] [--json PATH]

Numba compiles one function at a time, on one core, when a process first calls it, and
keeps it in the kernel cache (:mod:`kernels.cache`, the GPU kernels included). A law's CPU
kernels took 460-480 s on one core of this project's 2-core machine, most of it in a
dozen functions that each inline the law (the direct pass, the force pass, the
diagnostics, ...), one after the other. Here each of those is compiled in a process of
its own, as many at once as there are cores (``--jobs``), from arguments of the types a
run passes (:func:`arguments`, made from a small model of the law); then the functions
that call them (the blocks of steps, the parallel passes), which load their callees from
the cache. A run started after that loads every kernel it needs.

The GPU kernels (each a compilation of its own) go the same way, one process each, on a
machine with a GPU. A model with triangle meshes runs a variant of its law's kernels of
its own (:func:`kernels.cpu.for_law` with ``meshes``); ``--meshes`` compiles those too.
Each function's row says whether it was compiled or only loaded from the cache
(``loaded``), so a second run of the command shows what the first one left there.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import inspect
import json
import multiprocessing
import os
import sys
import time

import numpy as np
from numba import typeof

from kernels.cache import cache_dir
from kernels.contact_laws import LAWS
from kernels.layout import DIAGNOSTICS, REPORT_SIZE

from .backend import gpu_probe
from .particles.integrators import ExplicitIntegrator
from .particles.shapes import block_impact_builder
from .run.progress import json_event

__all__ = ["arguments", "compile_functions", "main", "precompile", "sample"]

#: The laws :func:`precompile` compiles by default: those of the block workloads, the
#: torus and the scenes with materials.
DEFAULT_LAWS = ("hertz", "hertz-mindlin")


@functools.cache
def sample(law: str, backend: str, precision: str, meshes: bool = False):
    """A bonded 3×3×3 block of ``law`` near a wall on ``backend`` in ``precision``, and
    its engine (not stepped): the source of :func:`arguments`. ``law`` is one of
    :data:`kernels.contact_laws.LAWS`; with ``meshes`` the wall is a mesh of 8 triangles,
    so the model runs the law's mesh variant."""
    b = block_impact_builder(3, gap=0.05, friction=law != "hertz", mesh=2 if meshes else None)
    if law not in ("hertz", "hertz-mindlin"):  # the fields the linear law and JKR read
        b._contact_law = law
        b._materials = {name: (i, dataclasses.replace(mat, stiffness=mat.young * 0.01, surface_energy=0.01))
                        for name, (i, mat) in b._materials.items()}  # fmt: skip
    model = b.finalize(backend, dtype=np.dtype(precision))
    if model.kernels.law.NAME != law:
        raise ValueError(f"law: the sample model has {model.kernels.law.NAME!r}, not {law!r}")
    state = model.state()
    engine = ExplicitIntegrator("verlet").engine(model, state)
    return model, state, engine


def arguments(model, state, engine) -> dict:
    """For each compiled function of ``model``'s kernels (``model.kernels.dispatchers``),
    a tuple of arguments of the types a run passes it, chosen by the parameters' names
    (:mod:`kernels.cpu` and :mod:`kernels.cuda` name them alike)."""
    be = model.backend
    xp, dev = be.xp, be.kernels.to_device
    T = model.dtype.type
    b = engine.program.b
    dyn, contacts = b["dyn"], b["contacts"]
    n = model.n

    def zeros(*shape, dtype=model.dtype):
        return dev(xp.zeros(shape, dtype=dtype))

    report = b["flags"].report
    values = {
        "lo": np.int64(0), "hi": np.int64(n), "nsteps": np.int64(1), "nchunks": np.int64(2), "scheme": np.int64(0),
        "family": np.int64(0), "w": np.int64(0), "c0": np.int64(0), "c1": np.int64(0),
        "h": T(1e-3), "kick": True, "fuse": True, "update": True, "rebuild_first": True,
        "dyn": dyn, "saved": b["saved"], "src": dyn, "dst": b["saved"], "par": b["par"], "bonds": b["bonds"],
        "contacts": contacts, "walls": b["walls"], "fields": b["fields"], "grid": b["grid"], "grid_": b["grid"],
        "status": b["flags"].status, "x": dyn.x, "radius": b["par"].radius, "period": contacts.period,
        "count": contacts.count, "report": report, "out_tri": zeros(n, 4, dtype=np.int32),
    }  # fmt: skip
    outs = {"diagnostics": zeros(n, len(DIAGNOSTICS)), "wall_loads": zeros(n, 6), "bond_measures": zeros(n, 5),
            "mesh_loads": zeros(n, 4, 9)}  # fmt: skip
    assert report.shape == (REPORT_SIZE,)
    found = {}
    for name, fn in model.kernels.dispatchers.items():
        args = []
        for p in inspect.signature(fn.py_func).parameters:
            if p == "out":
                kind = next((k for k in outs if k in name), None)
                args.append(outs[kind] if kind else report)
            elif p in values:
                args.append(values[p])
            else:
                raise KeyError(f"{name}: no sample argument for parameter {p!r}")
        found[name] = tuple(args)
    return found


def _levels(model) -> dict:
    """Each compiled function's level: 0 for one that calls no other compiled function,
    else one more than the highest level among those it calls (compiled after them, so
    that it loads them from the cache)."""
    d = model.kernels.dispatchers
    calls = {}
    for name, fn in d.items():
        code = fn.py_func.__code__
        calls[name] = (set(code.co_names) | set(code.co_freevars)) & (set(d) - {name})
    levels = {}

    def level(name):
        if name not in levels:
            levels[name] = 1 + max((level(c) for c in calls[name]), default=-1)
        return levels[name]

    for name in d:
        level(name)
    return levels


def _hits(fn) -> int:
    """How many times ``fn`` (a Numba or numba-cuda dispatcher) has loaded a signature
    from its cache in this process (0 where it keeps no count)."""
    hits = getattr(fn, "_cache_hits", None)
    return sum(hits.values()) if hits else 0


def compile_functions(law: str, backend: str, precision: str, names, meshes: bool = False) -> list:
    """Compile ``names`` of the kernels of ``law`` on ``backend`` in ``precision`` (the
    mesh variant with ``meshes``), each loaded from the kernel cache where it is there;
    ``[(name, seconds, loaded)]``, ``loaded`` True where the cache held it."""
    model, state, engine = sample(law, backend, precision, meshes)
    args = arguments(model, state, engine)
    done = []
    for name in names:
        fn = model.kernels.dispatchers[name]
        before = _hits(fn)
        t0 = time.perf_counter()
        fn.compile(tuple(typeof(a) for a in args[name]))
        done.append((name, time.perf_counter() - t0, _hits(fn) > before))
    return done


def _task(job):
    law, backend, precision, meshes, name = job
    return job, compile_functions(law, backend, precision, [name], meshes)[0][1:]


def _plan(laws, backends, precisions, meshes=False) -> list:
    """The waves of ``(law, backend, precision, meshes, name)``: level 0 of every case
    first, then level 1, ... (:func:`_levels`); with ``meshes`` each law's mesh variant
    as well."""
    waves = []
    for backend in backends:
        for law in laws:
            for precision in precisions:
                for variant in (False, True) if meshes else (False,):
                    model, _, _ = sample(law, backend, precision, variant)
                    for name, k in _levels(model).items():
                        while len(waves) <= k:
                            waves.append([])
                        waves[k].append((law, backend, precision, variant, name))
    return waves


def precompile(laws=DEFAULT_LAWS, backends=("cpu",), precisions=("float64",), jobs=None, report=None,
               meshes=False) -> list:  # fmt: skip
    """Compile the kernels of ``laws`` on ``backends`` in ``precisions`` into the kernel
    cache, one function per process, callees before their callers.

    Parameters
    ----------
    laws : sequence of str, optional
        Contact laws (:data:`kernels.contact_laws.LAWS`). Default: Hertz and
        Hertz-Mindlin.
    backends : sequence of {"cpu", "gpu"}, optional
        Default: the CPU.
    precisions : sequence of {"float64", "float32"}, optional
        Default: float64.
    jobs : int, optional
        Processes at once. Default: the cores.
    report : callable, optional
        Called with each row as its function is done.
    meshes : bool, optional
        Also the variant of each law for models with triangle meshes. Default False.

    Returns
    -------
    list of dict
        One row a function: ``law``, ``backend``, ``precision``, ``meshes``,
        ``function``, ``seconds`` (its compilation, or its load where it was in the
        cache) and ``loaded`` (True where it was).

    Examples
    --------
    >>> rows = precompile(["hertz"], jobs=2)  # doctest: +SKIP
    """
    jobs = jobs or os.cpu_count() or 1
    waves = _plan(laws, backends, precisions, meshes)
    rows = []
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no Numba state forked
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for wave in waves:
            for (law, backend, precision, variant, name), (seconds, loaded) in pool.map(_task, wave):
                row = {"law": law, "backend": backend, "precision": precision, "meshes": variant, "function": name,
                       "seconds": round(seconds, 2), "loaded": loaded}  # fmt: skip
                rows.append(row)
                if report is not None:
                    report(row)
    return rows


def parser(p=None) -> argparse.ArgumentParser:
    p = p or argparse.ArgumentParser(prog="granular compile", description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("cpu", "gpu", "all"), default="cpu",
                   help="cpu (default), gpu (needs a GPU) or all")  # fmt: skip
    p.add_argument("--law", default=",".join(DEFAULT_LAWS), help="comma list of contact laws")
    p.add_argument("--precision", default="float64", help="comma list of float64, float32")
    p.add_argument("--meshes", action="store_true",
                   help="also each law's variant for models with triangle meshes")  # fmt: skip
    p.add_argument("--jobs", type=int, help="processes at once (default: the cores)")
    p.add_argument("--json", metavar="PATH", help="save each function's seconds")
    p.add_argument("--quiet", action="store_true", help="print nothing (errors still go to stderr)")
    p.add_argument("--log-json", action="store_true",
                   help="JSON-lines events on stdout instead: start, compiled (one a function), end")  # fmt: skip
    return p


def main(args) -> int:
    laws = [s for s in args.law.split(",") if s]
    bad = [s for s in laws if s not in LAWS]
    if bad or not laws:
        raise ValueError(f"--law: must be a comma list of {', '.join(LAWS)}, got {args.law!r}")
    precisions = [s for s in args.precision.split(",") if s]
    if not precisions or any(s not in ("float64", "float32") for s in precisions):
        raise ValueError(f"--precision: must be a comma list of float64, float32, got {args.precision!r}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs: must be >= 1, got {args.jobs}")
    backends = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    if "gpu" in backends:
        ok, why = gpu_probe()
        if not ok:
            raise ValueError(f"--backend: no usable GPU here ({why}); use --backend cpu")
    total = sum(len(w) for w in _plan(laws, backends, precisions, args.meshes))
    jobs = args.jobs or os.cpu_count() or 1
    if args.log_json:
        json_event("start", laws=laws, backends=backends, precisions=precisions, meshes=args.meshes,
                   functions=total, jobs=jobs, cache=cache_dir())  # fmt: skip
    elif not args.quiet:
        variants = " and their mesh variants" if args.meshes else ""
        print(f"granular compile: {total} functions of {', '.join(laws)}{variants} on {', '.join(backends)} in "
              f"{', '.join(precisions)}, {jobs} at once, into {cache_dir()}", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    done = [0]

    def show(row):
        done[0] += 1
        if args.log_json:
            json_event("compiled", **row, done=done[0], total=total)
        elif not args.quiet:
            law = row["law"] + ("+meshes" if row["meshes"] else "")
            print(f"  [{done[0]:>3}/{total}] {row['backend']} {law:21s} {row['precision']} "
                  f"{row['function']:28s} {row['seconds']:7.1f} s{'  (loaded)' if row['loaded'] else ''}",
                  flush=True)  # fmt: skip

    rows = precompile(laws, backends, precisions, jobs, report=show, meshes=args.meshes)
    wall = time.perf_counter() - t0
    spent = sum(r["seconds"] for r in rows)
    loaded = sum(r["loaded"] for r in rows)
    if args.log_json:
        json_event("end", functions=len(rows), loaded=loaded, wall_s=round(wall, 1), compile_s=round(spent, 1))
    elif not args.quiet:
        print(f"granular compile: {len(rows)} functions in {wall:.1f} s ({spent:.1f} s of compiling, one core "
              f"each; {loaded} of them loaded from the cache)")  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"wall_s": round(wall, 1), "functions": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(parser().parse_args()))
