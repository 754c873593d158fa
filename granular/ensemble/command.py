"""``granular ensemble``: the command line, with a subsample of bodies rerun as an
ordinary ``[bodies]`` scene for ParaView."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time as _time
from types import SimpleNamespace

import numpy as np

from ..backend import BackendError, get_backend
from ..compiling import CompileNotice
from ..io.jsonio import encode
from ..provenance import versions
from ..resources import ResourceError
from ..run.command import run_scene
from ..run.progress import json_event
from ..run.scene import SceneError, load_scene
from .driver import (
    Progress,
    make_any_spec,
    run_ensemble,
    write_outputs,
)
from .particles import ParticleSpec, check_chunk_memory, replica_scene
from .spec import (
    _FORMS,
    EnsembleSpec,
    EnsembleSpecError,
    chunk_bounds,
    chunk_table,
)
from .store import open_store

__all__ = ["build_parser", "main", "run_subsample", "subsample_indices"]

# ----------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``granular ensemble`` (its own: ``granular.cli`` hands it the arguments)."""
    p = argparse.ArgumentParser(prog="granular ensemble", description="Run an ensemble of a scene with sampled "
                                "initial conditions and parameters: bodies of a [bodies] scene, or replicas of a "
                                "particle scene (each a whole impact) run together in one system.")  # fmt: skip
    p.add_argument("scene", help="scene file (TOML): a [bodies] scene or a particle scene")
    p.add_argument("--n", type=int, required=True, help="number of bodies or replicas")
    p.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="FIELD=DIST",
        help=f"sampled field, e.g. omega_body[0]=normal(0.01,0.001) (bodies) or "
        f"particles[0].velocity[0]=uniform(-2,-0.5) (particle scenes); DIST: {_FORMS}",
    )
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the sampling (default 0): a member's values depend only on it, its index and "
                        "the order of the --vary fields")  # fmt: skip
    p.add_argument("--chunk", type=int, default=None,
                   help="bodies (default 10000) or replicas (default 1000) per batched system (task)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--dask", action="store_true", help="run the chunks on a local Dask cluster (2 workers)")
    g.add_argument("--scheduler", metavar="ADDRESS", help="run the chunks on an existing Dask cluster")
    p.add_argument("--workers", type=int, default=2, help="workers of the --dask local cluster")
    p.add_argument("--retries", type=int, default=3, help="retries of a chunk whose worker dies")
    p.add_argument("--backend", default=None, choices=("auto", "cpu", "gpu"),
                   help="where the chunks run (default: the scene's [run] backend; auto: a GPU if usable)")
    p.add_argument("--out", help="output directory (default out/<scene>_ensemble)")
    s = p.add_mutually_exclusive_group()
    s.add_argument("--steps", type=int, metavar="N", help="steps of each member (default: the scene's [run])")
    s.add_argument("--time", type=float, metavar="T",
                   help="time each member runs, in steps of the scene's run.dt (default: the scene's [run])")
    p.add_argument("--hist", action="append", default=None, metavar="COLUMN", help="histogram column (repeatable)")
    p.add_argument("--trajectories", type=int, default=0, metavar="K",
                   help="also run K members spread over the ensemble with full output (frames, series) in "
                        "OUT/subsample")  # fmt: skip
    p.add_argument("--overwrite", action="store_true", help="replace an earlier ensemble in --out")
    p.add_argument("--resume", action="store_true",
                   help="finish an interrupted ensemble in --out: only its missing chunks run; the arguments must "
                        "be those it was started with (checked for a finished one too)")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress lines or closing summary")
    p.add_argument("--log-json", action="store_true",
                   help="JSON-lines events on stdout (start, progress, end), for scripts (also with --quiet)")
    return p


def _sigterm_as_interrupt():
    """Make SIGTERM stop the ensemble like Ctrl-C (finished chunks are kept); returns the
    previous handler (None outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def subsample_indices(n: int, k: int) -> np.ndarray:
    """``k`` body indices spread evenly over ``0..n-1`` (all of them if ``k >= n``)."""
    return np.unique(np.linspace(0, n - 1, min(k, n)).round().astype(np.int64))


def run_subsample(scene, spec: EnsembleSpec, idx, out_dir: str, args) -> int:
    """Run the bodies ``idx`` of the ensemble again as an ordinary ``[bodies]`` scene,
    with the full output of ``granular run`` (ParaView frames with orientations,
    ``series.csv`` trajectories, plots) in ``out_dir``. Their sampled values are the
    same as in the ensemble, so their final states equal the summary rows."""


    if not (args.quiet or args.log_json):
        print(f"granular ensemble: full output of {len(idx)} bodies in {out_dir}/", file=sys.stderr, flush=True)
    table, _ = chunk_table(spec, 0, 0, idx=idx)
    sub = scene.model_copy(update={"bodies": table, "name": f"{scene.name}_subsample"})
    opts = SimpleNamespace(scene=f"{args.scene} (subsample)", out=out_dir, backend=args.backend, precision=None,
                           time=None, steps=spec.steps, resume=None, quiet=True, log_json=False,
                           overwrite=True)  # fmt: skip
    return run_scene(sub, opts)


def run_replica_subsample(spec: ParticleSpec, idx, out_dir: str, args) -> int:
    """Run the replicas ``idx`` of a particle ensemble again, each as its own scene with
    the full output of ``granular run`` (ParaView frames, ``series.csv``, plots) in
    ``out_dir/replica_<i>``; their trajectories are those of the ensemble, bit for bit."""
    say = not (args.quiet or args.log_json)
    for k, i in enumerate(idx):
        if say:
            print(f"granular ensemble: full output of replica {int(i)} ({k + 1} of {len(idx)}) in "
                  f"{os.path.join(out_dir, f'replica_{int(i)}')}/", file=sys.stderr, flush=True)  # fmt: skip
        scene = replica_scene(spec, int(i))
        scene = scene.model_copy(update={"name": f"{scene.name}_replica_{int(i)}"})
        opts = SimpleNamespace(scene=f"{args.scene} (replica {int(i)})", out=os.path.join(out_dir, f"replica_{int(i)}"),
                               backend=args.backend, precision=None, time=None, steps=spec.steps, resume=None,
                               quiet=True, log_json=False, overwrite=True)  # fmt: skip
        status = run_scene(scene, opts)
        if status != 0:
            return status
    return 0


def _varies(values) -> bool:
    """Whether the finite ``values`` are not all one number."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return bool(v.size) and bool(v.max() > v.min())


def main(argv=None) -> int:
    """The command ``granular ensemble``; returns the exit status: 0 done, 1 a run
    failed, 2 bad input.

    ``granular ensemble SCENE --n N --vary FIELD=DIST ... --seed S [--chunk C]
    [--dask | --scheduler ADDR] [--out DIR] [--steps N | --time T]``."""

    p = build_parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        scene = load_scene(args.scene)
        try:
            args.backend = get_backend(args.backend or scene.run.backend).name
        except BackendError as exc:
            given = "--backend" if args.backend else f"the scene's [run] backend = {scene.run.backend!r}"
            raise BackendError(f"{given}: {exc} (--backend cpu runs the ensemble on the CPU)") from None
        spec = make_any_spec(scene, args.n, args.vary, args.seed, steps=args.steps, time=args.time,
                             backend=args.backend)  # fmt: skip
        particles = isinstance(spec, ParticleSpec)
        if args.chunk is None:
            args.chunk = 1000 if particles else 10_000
        chunk_bounds(args.n, args.chunk)
        if particles:
            check_chunk_memory(spec, min(args.chunk, args.n))
    except ResourceError as exc:
        print(f"granular ensemble: {exc}; use a smaller --chunk", file=sys.stderr)
        return 2
    except (EnsembleSpecError, SceneError, BackendError) as exc:
        print(f"granular ensemble: {exc}", file=sys.stderr)
        return 2
    out = args.out or os.path.join("out", f"{scene.name}_ensemble")
    manifest = {"scene": scene.model_dump(mode="json"), "n": args.n, "vary": args.vary, "seed": args.seed,
                "chunk": args.chunk, "steps": spec.steps, "dt": spec.dt, "backend": args.backend}  # fmt: skip
    try:
        store = open_store(out, manifest, resume=args.resume, overwrite=args.overwrite, n=args.n,
                           columns=32 + len(args.vary) * 3)  # fmt: skip
    except ValueError as exc:  # OutDirError, ResourceError
        print(f"granular ensemble: {exc}", file=sys.stderr)
        return 2
    if store is None:
        if args.log_json:
            json_event("end", out=out, n=args.n, nothing_to_do=True)
        if not args.quiet:
            print(f"granular ensemble: the ensemble in {out} is finished; nothing to do", file=sys.stderr)
        return 0
    client = cluster = None
    started = _time.perf_counter()
    previous = _sigterm_as_interrupt()
    try:
        if args.dask or args.scheduler:
            try:
                from dask.distributed import Client, LocalCluster
            except ImportError:
                print("granular ensemble: --dask/--scheduler need dask[distributed] (pip install 'dask[distributed]')",
                      file=sys.stderr)  # fmt: skip
                return 2
            if args.scheduler:
                client = Client(args.scheduler)
            elif args.backend == "gpu":  # one worker per GPU
                try:
                    from dask_cuda import LocalCUDACluster
                except ImportError:
                    print("granular ensemble: --dask with --backend gpu needs dask-cuda (pip install dask-cuda)",
                          file=sys.stderr)  # fmt: skip
                    return 2
                cluster = LocalCUDACluster(threads_per_worker=1, dashboard_address=None)
                client = Client(cluster)
            else:
                cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None)  # fmt: skip
                client = Client(cluster)
        progress = Progress(args.n, spec.steps, len(chunk_bounds(args.n, args.chunk)),
                            stream=None if (args.quiet or args.log_json) else sys.stderr,
                            unit="replica" if particles else "body", log_json=args.log_json)  # fmt: skip
        if args.log_json:
            json_event("start", out=out, n=args.n, steps=spec.steps, chunks=len(chunk_bounds(args.n, args.chunk)),
                   chunks_done=len(store.done()), kind="particle replicas" if particles else "bodies")  # fmt: skip
        with CompileNotice(quiet=args.quiet, log_json=args.log_json, what="the kernels for this ensemble"):
            table = run_ensemble(scene, args.n, args.vary, args.seed, chunk_size=args.chunk, backend=args.backend,
                                 client=client, steps=args.steps, time=args.time, retries=args.retries,
                                 store=store, progress=progress)  # fmt: skip
    except EnsembleSpecError as exc:
        print(f"granular ensemble: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        done, total = len(store.done()), len(chunk_bounds(args.n, args.chunk))
        print(f"granular ensemble: interrupted; {done} of {total} chunks are kept in {store.dir}; run the same "
              "command with --resume to finish it", file=sys.stderr)  # fmt: skip
        return 130
    except Exception as exc:  # noqa: BLE001  a chunk failed (Newton, non-finite state, worker lost for good)
        print(f"granular ensemble: run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    wall = _time.perf_counter() - started
    meta = {"scene": args.scene, "n": args.n, "vary": args.vary, "seed": args.seed, "chunk": args.chunk,
            "steps": spec.steps, "dt": spec.dt, "backend": args.backend,
            "executor": "dask:" + args.scheduler if args.scheduler else "dask-local" if args.dask else "in-process",
            "wall_time_s": wall, "body_steps_per_s": args.n * spec.steps / wall if wall > 0 else None}  # fmt: skip
    if args.trajectories:
        idx = subsample_indices(args.n, args.trajectories)
        meta["subsample_replicas" if particles else "subsample_bodies"] = idx.tolist()
    meta["versions"] = versions()
    meta["manifest"] = store.manifest  # what a later --resume of the finished ensemble compares
    hist = args.hist
    if particles:
        meta["kind"] = "particle replicas"
        meta["replica_steps_per_s"] = meta.pop("body_steps_per_s")
        meta["sample_every"] = spec.sample_every
        if hist is None:  # wall and bond columns only where there are some (else 0 by construction)
            walled = ("wall_contact_force_max",) if spec.scene.get("walls") else ()
            bonded = ("broken_bonds", "U_released") if spec.bonds else ()
            # a column equal in every replica (a velocity component no replica has) is no histogram
            hist = spec.columns + [c for c in (*walled, *bonded, "v_cm_x", "v_cm_y", "v_cm_z",
                                               "dissipated_normal", "dissipated_friction", "energy_rel_error")
                                   if c in table and _varies(table[c])]  # fmt: skip
    write_outputs(table, out, hist, meta)
    store.remove()
    if args.trajectories:
        sub = os.path.join(out, "subsample")
        if particles:
            status = run_replica_subsample(spec, idx, sub, args)
        else:
            status = run_subsample(scene, spec, idx, sub, args)
        if status != 0:
            return status
    if args.log_json:
        json_event("end", out=out, **encode({k: v for k, v in meta.items() if k not in ("versions", "manifest")}))
    if not (args.quiet or args.log_json):
        what, unit = ("replicas", "replica") if particles else ("bodies", "body")
        rate = meta[f"{unit}_steps_per_s"] or 0.0
        print(f"granular ensemble: {scene.name}: {args.n} {what} x {spec.steps} steps in {wall:.3g} s "
              f"({rate:,.0f} {unit}-steps/s); output in {out}/")  # fmt: skip
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
