"""Command line: ``granular run | validate | ensemble | bench | compile | export-lammps | info``.

Exit status: 0 on success; 1 when a validation figure misses its threshold or a run
stops on an integration error or a failed health check (the last state that passed the
check is in the checkpoint); 2 for bad usage or input, refused before anything is
written (an earlier run in ``--out`` without ``--overwrite``, an unwritable or full
``--out``, too little memory, a step above the stable-step estimate without
``--allow-unstable-step``, a run of more than 1e9 steps without ``--allow-long-run``, a
checkpoint that cannot continue this scene, a scene the LAMMPS export cannot express);
130 when a run was interrupted (after writing a checkpoint).
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import platform
import shlex
import sys

from ._version import __version__
from .backend import BackendError, cuda_simulator_enabled, get_backend, gpu_probe, numba_cuda_compiles
from .benchmark import build_parser as bench_parser
from .benchmark import run_bench
from .compiling import CompileNotice
from .ensemble import main as ensemble_main
from .ensemble.command import build_parser as ensemble_parser
from .errors import IntegrationError, SceneError
from .io.jsonio import dumps
from .precompile import main as precompile_main
from .precompile import parser as precompile_parser
from .provenance import versions
from .run.command import cmd_run
from .run.lammps import LAMMPS_FILES, export_lammps
from .run.progress import LONG_RUN_STEPS, json_event
from .run.scene import load_scene
from .validation import STUDIES, get_study
from .validation.live import LiveChecks


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
        print(dumps(info, indent=2))
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
    mode = "long" if args.long else ("quick" if args.quick else "full")
    quiet = getattr(args, "quiet", False)
    log_json = getattr(args, "log_json", False)
    with CompileNotice(quiet=quiet, log_json=log_json, what="the kernels for this study"), \
            LiveChecks(args.name, mode, args.backend, quiet=quiet, log_json=log_json):  # fmt: skip
        report = study.run(**kwargs)
    written = report.write(args.out) if args.out else []
    if log_json:  # stdout holds JSON lines only: the report is the end event
        json_event("end", **report.as_dict(), files=written)
    elif args.json:
        d = report.as_dict()
        d["files"] = written
        print(dumps(d, indent=2))
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


def cmd_bench(args) -> int:
    with CompileNotice(what="the kernels for these workloads"):
        return run_bench(args)


def cmd_compile(args) -> int:
    """``granular compile``: the kernels compiled into the kernel cache on every core
    (:mod:`granular.precompile`)."""
    return precompile_main(args)


def cmd_export_lammps(args) -> int:
    """``granular export-lammps SCENE --out DIR``: the LAMMPS data file and input deck of
    the scene (:func:`granular.run.lammps.export_lammps`). Everything that can refuse the
    export (the scene's errors, an occupied ``--out``, what LAMMPS's BPM package cannot
    express) refuses it with status 2 before any file is written."""
    try:
        load_scene(args.scene)  # the scene's own errors first, as granular run gives them
    except SceneError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    out = args.out
    if os.path.exists(out) and not os.path.isdir(out):
        print(f"granular export-lammps: --out {out}: is a file, not a directory", file=sys.stderr)
        return 2
    if os.path.isdir(out) and os.listdir(out) and not args.overwrite:
        print(f"granular export-lammps: --out {out}: exists and is not empty; give --overwrite to write "
              f"{', '.join(LAMMPS_FILES)} over the files there, or choose another directory", file=sys.stderr)  # fmt: skip
        return 2
    try:
        info = export_lammps(args.scene, out)
    except SceneError as exc:  # problems only visible once the particles exist (the packing, the bonds)
        print(str(exc), file=sys.stderr)
        return 2
    except ValueError as exc:  # what the export cannot express, named by its field
        print(f"granular export-lammps: {args.scene}: {exc}", file=sys.stderr)
        return 2
    print(f"granular export-lammps: {info['atoms']:,} grains, {info['bonds']:,} parallel bonds, {info['steps']:,} "
          f"steps of dt = {info['dt']:g}")  # fmt: skip
    for path in info["files"].values():
        print("  wrote", path)
    print("  run it with:", shlex.join(["cd", out]), "&&", "lmp -in in.impact")
    return 0


#: ``granular validate --quick``: what it takes, measured on 2 cores (the README's table).
QUICK_HELP = ("reduced study: 2-25 s on 2 cores once the kernels are compiled; a study's first run on a "
              "machine compiles them too (20 s to 2.5 min)")

#: Sub-commands that parse their own arguments: ``name: (main, build_parser)``. :func:`main`
#: hands them everything after the name; :func:`build_parser` lists them for ``granular -h``.
OWN_COMMANDS = {"ensemble": (ensemble_main, ensemble_parser)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="granular", description="Particle and rigid-body dynamics with rotations.")
    p.add_argument("--version", action="version", version=f"granular {__version__}",
                   help="print the version of granular and exit")
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
    sub.add_parser("ensemble", help="a scene over N sampled bodies or particle-scene replicas (granular ensemble -h)",
                   add_help=False)

    bench = sub.add_parser("bench", help="throughput of the particle engine (block impact, Hertz spheres, torus)")

    bench_parser(bench)
    bench.set_defaults(func=cmd_bench)

    comp = sub.add_parser("compile", help="compile the kernels before a first run, on every core at once")
    precompile_parser(comp)
    comp.set_defaults(func=cmd_compile)

    lmp = sub.add_parser("export-lammps", help="write a bonded-agglomerate scene as LAMMPS BPM input (data file, deck)")
    lmp.add_argument("scene", help="TOML particle scene with parallel bonds (see docs/agglomerates.md)")
    lmp.add_argument("--out", metavar="DIR", required=True,
                     help=f"output directory ({', '.join(LAMMPS_FILES)}; made if missing)")  # fmt: skip
    lmp.add_argument("--overwrite", action="store_true",
                     help="write over the files of a directory that is not empty (refused without it)")  # fmt: skip
    lmp.set_defaults(func=cmd_export_lammps)

    val = sub.add_parser("validate", help="run a paper reproduction and check its figures")
    val.add_argument("name", help=f"study: {', '.join(sorted(STUDIES))}")
    val.add_argument("--out", metavar="DIR", help="write <name>.json and <name>.png here")
    val.add_argument("--json", action="store_true", help="print the figures as JSON")
    val.add_argument("--quick", action="store_true", help=QUICK_HELP)
    val.add_argument("--long", action="store_true", help="the long version of a study (e.g. torus to t = 500)")
    val.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "auto"), help="default: cpu")
    val.add_argument("--quiet", action="store_true", help="no progress lines while the study runs (stderr)")
    val.add_argument("--log-json", action="store_true",
                     help="JSON-lines events on stdout while the study runs (start, figure, progress, compile)")
    val.set_defaults(func=cmd_validate)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in OWN_COMMANDS:  # its own parser, options included (-h, --vary, ...)
        return OWN_COMMANDS[argv[0]][0](argv[1:])
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
