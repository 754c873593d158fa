"""Command line: ``granular run | validate | ensemble | bench | info``.

Exit status: 0 on success; 1 when a validation figure misses its threshold or a run
stops on an integration error or a failed health check (the last state that passed the
check is in the checkpoint); 2 for bad usage or input, refused before anything is
written (an earlier run in ``--out`` without ``--overwrite``, an unwritable or full
``--out``, too little memory, a step above the stable-step estimate without
``--allow-unstable-step``, a run of more than 1e9 steps without ``--allow-long-run``, a
checkpoint that cannot continue this scene); 130 when a run was interrupted (after
writing a checkpoint).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import sys

from .backend import BackendError, cuda_simulator_enabled, get_backend, gpu_probe, numba_cuda_compiles
from .benchmark import build_parser as bench_parser
from .benchmark import run_bench
from .bodies.scenes import run_bodies
from .ensemble import main as ensemble_main
from .integrators import IntegrationError
from .io import load_checkpoint
from .outdir import clear, plan_out_dir, scene_differences
from .provenance import versions
from .resources import check_writable
from .scene import SceneError, build_model, load_scene
from .simulation import LONG_RUN_STEPS, Simulation, long_run_refused, restore_state
from .stability import estimate_stable_step
from .validation import STUDIES, get_study


def cmd_info(args) -> int:
    found, what = gpu_probe()
    info = {
        "versions": versions(),
        "platform": platform.platform(),
        "cpu_cores": os.cpu_count(),
        "gpu_found": found,
        "gpu": what,
        "cuda_simulator": cuda_simulator_enabled(),
        "auto_backend": get_backend("auto").name,
    }
    why = None
    if not info["cuda_simulator"]:
        info["gpu_kernels_compile"], why = numba_cuda_compiles()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print("granular", info["versions"]["granular"])
    print("  python     ", info["versions"]["python"], "on", info["platform"], f"({info['cpu_cores']} cores)")
    for k, v in info["versions"].items():
        if k not in ("granular", "python"):
            print(f"  {k:<11} {v if v is not None else 'not installed'}")
    print("  GPU        ", ("found: " if found else "none: ") + what)
    if why is not None:
        ok = info["gpu_kernels_compile"]
        print("  GPU kernels", "compile (numba-cuda and NumPy work together)" if ok else f"do not compile: {why}")
    print("  CUDA sim   ", "on (NUMBA_ENABLE_CUDASIM=1)" if info["cuda_simulator"] else "off")
    print("  'auto' ->  ", info["auto_backend"])
    return 0


def cmd_validate(args) -> int:
    if args.name not in STUDIES:
        print(f"granular validate: unknown study {args.name!r}; available: {', '.join(sorted(STUDIES))}", file=sys.stderr)
        return 2

    study = get_study(args.name)
    kwargs = {"quick": args.quick, "backend": args.backend}
    if args.long:
        if "long" not in inspect.signature(study.run).parameters:
            print(f"granular validate: study {args.name!r} has no --long mode", file=sys.stderr)
            return 2
        kwargs["long"] = True
    report = study.run(**kwargs)
    written = report.write(args.out) if args.out else []
    if args.json:
        d = report.as_dict()
        d["files"] = written
        print(json.dumps(d, indent=2))
    else:
        print(report.text())
        for path in written:
            print("  wrote", path)
    return 0 if report.passed else 1


def _positive_finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be finite and > 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def total_steps(args, run) -> int:
    """Steps of the whole run (from step 0): ``--steps``, ``--time``, or the scene's ``[run]``."""
    if getattr(args, "steps", None) is not None:
        return args.steps
    if getattr(args, "time", None) is not None:
        return int(round(args.time / run.dt))
    if run.steps is not None:
        return run.steps
    return int(round(run.duration / run.dt))


def _resume_problem(meta, scene_dict, path, total) -> str | None:
    """Why the checkpoint ``meta`` cannot continue this scene to ``total`` steps."""
    if meta.get("scene") != scene_dict:
        diffs = scene_differences(meta.get("scene") or {}, scene_dict)
        return (f"checkpoint {path!r} was written for a different scene: " + "; ".join(diffs)
                + ". Resume with the scene that wrote it, or start a new run")  # fmt: skip
    step, t = int(meta.get("step", 0)), float(meta.get("time", 0.0))
    if total < step:
        return (f"the checkpoint is at step {step} (t = {t:.6g}); the requested end, step {total} "
                f"(t = {total * float(meta.get('dt', 0.0)):.6g}), is before it. Give a later --time or more --steps")  # fmt: skip
    return None


def _resume_dir_problem(out) -> str | None:
    missing = [n for n in ("frames.pvd", "series.csv") if not os.path.isfile(os.path.join(out, n))]
    if missing:
        return (f"{out} holds no run to continue (no {' or '.join(missing)}); a resumed run writes into the run "
                "directory of its checkpoint: leave out --out, or give that directory")  # fmt: skip
    return None


def cmd_run(args) -> int:
    def refuse(text) -> int:
        print(f"granular run: {text}", file=sys.stderr)
        return 2

    try:
        scene = load_scene(args.scene)
    except SceneError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.resume is not None and args.overwrite:
        return refuse("--resume continues the run in its directory and --overwrite replaces a run; give one of them")
    if scene.bodies is not None:

        return run_bodies(scene, args)
    total = total_steps(args, scene.run)
    if total < 1:
        return refuse(f"the run is shorter than one step (dt = {scene.run.dt})")
    why = long_run_refused(total, scene.run.dt, args)
    if why:
        return refuse(why)
    scene_dict = scene.model_dump(mode="json")
    resumed = args.resume is not None
    to_clear, meta = [], {}
    if resumed:
        arrays, meta = load_checkpoint(args.resume)
        why = _resume_problem(meta, scene_dict, args.resume, total)
        if why:
            return refuse(f"--resume: {why}")
        out = args.out or os.path.dirname(os.path.dirname(os.path.abspath(args.resume)))
        if total == int(meta.get("step", 0)):
            if not args.quiet:
                print(f"granular run: the checkpoint is already at step {total} (t = {meta.get('time'):.6g}), the end "
                      f"of the run; nothing to do (give a later --time or more --steps to go on)", file=sys.stderr)  # fmt: skip
            return 0
        why = _resume_dir_problem(out)
        if why:
            return refuse(f"--resume: {why}")
    else:
        out = args.out or os.path.join("out", scene.name)
        to_clear = plan_out_dir(out, overwrite=args.overwrite)
    check_writable(out)
    try:
        model, run = build_model(scene, backend=args.backend, source=args.scene, precision=args.precision)
    except SceneError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    state = model.state()
    estimate = estimate_stable_step(model, state, run.integrator)
    if run.dt > estimate.h_max and not (run.allow_unstable_step or args.allow_unstable_step):
        return refuse(f"run.dt = {run.dt:g} is above the stable-step estimate {estimate.describe()}. The explicit "
                      f"maps are stable for h ω < 2 only: reduce run.dt (below {estimate.h_max:.3g}), or give "
                      "--allow-unstable-step (or [run] allow_unstable_step = true) to run it anyway")  # fmt: skip
    if resumed:
        if meta.get("backend") != model.backend.name:
            return refuse(f"--resume: checkpoint is from backend {meta.get('backend')!r}, this run uses "
                          f"{model.backend.name!r} (bit-for-bit restarts need the same backend)")  # fmt: skip
        restore_state(model, state, arrays)
    sim = Simulation(model, run, out, scene_dict, quiet=args.quiet, log_json=args.log_json, stable_step=estimate,
                     graphs=run.graphs and not args.eager)  # fmt: skip
    sim.preflight(total, state.step)
    clear(to_clear)
    if not args.quiet and not args.log_json:
        unstable = " (above it: allowed by request)" if run.dt > estimate.h_max else ""
        print(f"granular run: {scene.name}: {model.n:,} particles, {model.n_bonds:,} bonds on {model.backend.name}; "
              f"steps {state.step} to {total} of dt = {run.dt:g} (t = {total * run.dt:.6g}); stable-step estimate "
              f"{estimate.describe()}{unstable}", file=sys.stderr)  # fmt: skip
    ckpt = os.path.join(out, "checkpoints", "checkpoint.npz")
    try:
        info = sim.execute(state, total, resumed=resumed, health_start=meta.get("health"))
    except IntegrationError as exc:
        good = sim.info or {}
        print(f"granular run: {exc}\n  the last good state (step {good.get('steps')}, t = {good.get('time', 0):.6g}, "
              f"the last that passed the health check) is in {ckpt}", file=sys.stderr)  # fmt: skip
        return 1
    if not args.quiet and not args.log_json:
        rate = info["steps_per_s"]
        print(f"granular run: {scene.name}: {info['steps']} steps to t = {info['time']:.6g} on {info['backend']}"
              f"{'' if rate is None else f' ({rate:,.0f} steps/s)'}; output in {out}/ (open frames.pvd in ParaView)")  # fmt: skip
    return 130 if info["interrupted"] else 0


def cmd_bench(args) -> int:
    return run_bench(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="granular", description="Particle and rigid-body dynamics with rotations.")
    sub = p.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="versions, backends, GPU found or not")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.set_defaults(func=cmd_info)

    run = sub.add_parser("run", help="run a scene file and write ParaView output")
    run.add_argument("scene", help="TOML scene file (see docs/scenes.md and scenes/)")
    run.add_argument("--out", metavar="DIR", help="output directory (default out/<scene name>)")
    run.add_argument("--backend", choices=("auto", "cpu", "gpu"), help="override the scene's run.backend")
    run.add_argument("--precision", choices=("float64", "float32"), help="override the scene's run.precision")
    length = run.add_mutually_exclusive_group()
    length.add_argument("--time", type=_positive_finite, metavar="T", help="run to time T instead of run.duration")
    length.add_argument("--steps", type=_positive_int, metavar="N", help="run N steps in all")
    run.add_argument("--resume", metavar="CHECKPOINT", help="continue from a checkpoint of this scene")
    run.add_argument("--overwrite", action="store_true", help="replace an earlier run in --out (refused without it)")
    run.add_argument("--allow-unstable-step", action="store_true",
                     help="run even when run.dt is above the stable-step estimate")
    run.add_argument("--allow-long-run", action="store_true",
                     help=f"start a run of more than {LONG_RUN_STEPS:.0e} steps without asking")
    run.add_argument("--eager", action="store_true",
                     help="on a GPU, launch every kernel from the host instead of replaying CUDA graphs "
                          "(same results; for debugging and comparison)")  # fmt: skip
    run.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    run.add_argument("--log-json", action="store_true",
                     help="JSON-lines events on stdout, for scripts (also with --quiet)")
    run.set_defaults(func=cmd_run)

    # dispatched in main() before this parser; listed here for `granular -h`
    sub.add_parser("ensemble", help="a [bodies] scene over N sampled bodies (granular ensemble -h)", add_help=False)

    bench = sub.add_parser("bench", help="throughput of the particle engine (block impact, Hertz spheres, torus)")

    bench_parser(bench)
    bench.set_defaults(func=cmd_bench)


    val = sub.add_parser("validate", help="run a paper reproduction and check its figures")
    val.add_argument("name", help=f"study: {', '.join(sorted(STUDIES))}")
    val.add_argument("--out", metavar="DIR", help="write <name>.json and <name>.png here")
    val.add_argument("--json", action="store_true", help="print the figures as JSON")
    val.add_argument("--quick", action="store_true", help="reduced study (under a minute)")
    val.add_argument("--long", action="store_true", help="the long version of a study (e.g. torus to t = 500)")
    val.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "auto"), help="default: cpu")
    val.set_defaults(func=cmd_validate)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "ensemble":  # its own parser, options included (-h, --vary, ...)

        return ensemble_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (e.g. `granular ... | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (ValueError, BackendError, IntegrationError) as exc:  # bad input, no backend: one clear line
        print(f"granular {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # the estimate of granular.resources missed: still one line
        print(f"granular {args.command}: error: out of memory ({type(exc).__name__}: {exc}); use fewer "
              "particles or a larger machine", file=sys.stderr)  # fmt: skip
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
