"""Command line: ``granular info`` and ``granular validate NAME``.

Exit status: 0 on success, 1 when a validation figure misses its threshold, 2 for bad
usage or input.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys


def _versions() -> dict:
    out = {"granular": None, "python": platform.python_version()}
    import granular

    out["granular"] = granular.__version__
    for mod in ("numpy", "numba", "numba_cuda", "cupy", "meshio", "scipy", "matplotlib"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "?")
        except Exception:
            out[mod] = None
    return out


def cmd_info(args) -> int:
    from .backend import cuda_simulator_enabled, get_backend, gpu_probe

    found, what = gpu_probe()
    info = {
        "versions": _versions(),
        "platform": platform.platform(),
        "cpu_cores": os.cpu_count(),
        "gpu_found": found,
        "gpu": what,
        "cuda_simulator": cuda_simulator_enabled(),
        "auto_backend": get_backend("auto").name,
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print("granular", info["versions"]["granular"])
    print("  python     ", info["versions"]["python"], "on", info["platform"], f"({info['cpu_cores']} cores)")
    for k, v in info["versions"].items():
        if k not in ("granular", "python"):
            print(f"  {k:<11} {v if v is not None else 'not installed'}")
    print("  GPU        ", ("found: " if found else "none: ") + what)
    print("  CUDA sim   ", "on (NUMBA_ENABLE_CUDASIM=1)" if info["cuda_simulator"] else "off")
    print("  'auto' ->  ", info["auto_backend"])
    return 0


def cmd_validate(args) -> int:
    from .validation import STUDIES, get_study

    if args.name not in STUDIES:
        print(f"granular validate: unknown study {args.name!r}; available: {', '.join(sorted(STUDIES))}", file=sys.stderr)
        return 2
    report = get_study(args.name).run(quick=args.quick, backend=args.backend)
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="granular", description="Particle and rigid-body dynamics with rotations.")
    sub = p.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="versions, backends, GPU found or not")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.set_defaults(func=cmd_info)

    from .validation import STUDIES

    val = sub.add_parser("validate", help="run a paper reproduction and check its figures")
    val.add_argument("name", help=f"study: {', '.join(sorted(STUDIES))}")
    val.add_argument("--out", metavar="DIR", help="write <name>.json and <name>.png here")
    val.add_argument("--json", action="store_true", help="print the figures as JSON")
    val.add_argument("--quick", action="store_true", help="reduced study (under a minute)")
    val.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "auto"), help="default: cpu")
    val.set_defaults(func=cmd_validate)
    return p


def main(argv=None) -> int:
    from .backend import BackendError
    from .integrators import IntegrationError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, BackendError, IntegrationError) as exc:  # bad input, no backend: one clear line
        print(f"granular {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
