"""Shared driver of the body-scheme benchmarks (bench_ulvc, bench_rolling_ball,
bench_livens, bench_nontwisting): each measures, per backend, scheme and number of bodies
N, the rate of the per-body kernels (``new``: ``scheme.advance`` in blocks of ``--block``
steps per launch) beside the whole-array implementation they replaced (``old``: the
references kept in ``tests/reference_bodies``, one step per call), in body-steps/s.

The first call (JIT compilation, first touch) is excluded; the device is synchronised
inside the timed region; each row runs at least ``--min-time`` seconds. Goals (body-steps/s
on 2 CPU cores; on one GPU at 10^6 bodies; at most 0.1 ms per step at 10^3 bodies on a
GPU) are printed beside the rates, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # the old implementations live in tests/reference_bodies
    sys.path.insert(0, ROOT)


import granular as gr  # noqa: E402
from granular.backend import BackendError  # noqa: E402
from granular.timing import machine, time_blocks, write_json  # noqa: E402


def parser(doc, schemes, default_scheme, sizes="1e3,1e4,1e5"):
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--sizes", default=sizes, help="numbers of bodies, comma separated (default %(default)s)")
    p.add_argument("--scheme", default=default_scheme, help=f"comma list of {', '.join(schemes)}, or 'all'")
    p.add_argument("--impl", default="old,new", help="old (array reference), new (per-body kernels), or both")
    p.add_argument("--block", type=int, default=100, help="steps per kernel launch for 'new' (default 100)")
    p.add_argument("--old-max", type=float, default=1e5, help="largest N timed for 'old' (default 1e5)")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds timed per row (default 1)")
    p.add_argument("--json", metavar="PATH")
    return p


def measure(advance, block, n, be, min_time):
    """``advance(k)`` takes k steps of n bodies; returns (steps, seconds, body-steps/s)."""
    steps, elapsed = time_blocks(advance, be.synchronize, block, min_time)
    return steps, elapsed, n * steps / elapsed


def run(args, schemes, make, goals, unit="body-steps/s", per_system=1):
    """The benchmark loop. ``make(be, n, scheme, impl) -> advance(k)``; ``goals``:
    ``{scheme: (cpu goal, gpu goal)}``. Prints a table; returns the rows."""
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    chosen = list(schemes) if args.scheme == "all" else args.scheme.split(",")
    for sc in chosen:
        if sc not in schemes:
            raise SystemExit(f"--scheme: unknown scheme {sc!r}; choose from {', '.join(schemes)}")
    impls = args.impl.split(",")
    sizes = [int(float(x)) for x in args.sizes.split(",")]
    rows = []
    print(f"threads: numba {machine()['numba_threads']}; block: {args.block} steps per launch (new)")
    print(f"{'backend':<8} {'scheme':<14} {'N':>9} {'old ' + unit:>20} {'new ' + unit:>20} {'speedup':>8} "
          f"{'new ms/step':>12} {'goal':>9}  device")  # fmt: skip
    for name in names:
        try:
            be = gr.get_backend(name)
        except BackendError as exc:
            print(f"{name:<8} skipped: {exc}")
            continue
        if be.simulated:
            print(f"{name:<8} skipped: CUDA simulator (not a throughput measurement)")
            continue
        for sc in chosen:
            for n in sizes:
                rates = {}
                for impl in impls:
                    if impl == "old" and n > args.old_max:
                        continue
                    block = args.block if impl == "new" else max(1, min(args.block, 10))
                    advance = make(be, n, sc, impl)
                    steps, secs, rate = measure(advance, block, n * per_system, be, args.min_time)
                    rates[impl] = (rate, 1e3 * secs / steps)
                    rows.append({"backend": be.name, "device": be.device, "scheme": sc, "n": n, "impl": impl,
                                 "steps": steps, "ms_per_step": 1e3 * secs / steps, "rate": rate,
                                 "block": block})  # fmt: skip
                old = rates.get("old", (float("nan"), 0))[0]
                new, ms = rates.get("new", (float("nan"), float("nan")))
                goal = goals.get(sc, (None, None))[0 if be.name == "cpu" else 1]
                print(f"{be.name:<8} {sc:<14} {n:>9} {old:>20.3e} {new:>20.3e} {new / old:>8.1f} {ms:>12.4f} "
                      f"{'' if goal is None else f'{goal:.1e}':>9}  {be.device}", flush=True)  # fmt: skip
    if args.json:
        write_json(args.json, rows)
    return rows
