"""Time to make a dense specimen: :func:`granular.particles.packing.dense_packing` of N
grains (log-normal radii in [0.4, 0.6], a sphere fitted to the jammed packing, seed 0)
on each backend, with the solid fraction, coordination and FIRE steps it took.

    python bench/bench_packing.py [--backend cpu|gpu|all] [--counts 1e4,1e5] [--json FILE]

A first small packing compiles the kernels before anything is timed. The rate printed is
grains x FIRE steps per second (the work of the relaxation), beside the wall time.
"""

from __future__ import annotations

import argparse
import sys
import time

from granular.backend import get_backend
from granular.particles.packing import dense_packing


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu", "all"))
    p.add_argument("--counts", default="1e4,1e5", help="numbers of grains, comma-separated")
    p.add_argument("--json")
    args = p.parse_args(argv)
    counts = [int(float(c)) for c in args.counts.split(",")]
    backends = ("cpu", "gpu") if args.backend == "all" else (args.backend,)
    rows = []
    for name in backends:
        be = get_backend(name)
        dense_packing(50, radius=(0.4, 0.6), distribution="lognormal", backend=be)  # compile
        for n in counts:
            be.synchronize()
            t0 = time.perf_counter()
            spec = dense_packing(n, radius=(0.4, 0.6), distribution="lognormal", backend=be)
            be.synchronize()
            wall = time.perf_counter() - t0
            row = {"backend": name, "device": be.device, "grains": n, "wall_s": wall, "fire_steps": spec.iterations,
                   "rate": n * spec.iterations / wall, "solid_fraction": spec.solid_fraction,
                   "coordination": spec.coordination, "max_overlap": spec.max_overlap}  # fmt: skip
            rows.append(row)
            print(f"{name:4s} N = {n:>9,d}: {wall:8.2f} s, {spec.iterations:6d} FIRE steps, "
                  f"{row['rate']:.3g} grain-steps/s, solid fraction {spec.solid_fraction:.3f}, "
                  f"coordination {spec.coordination:.2f}", flush=True)  # fmt: skip
    if args.json:
        from granular.timing import write_json

        write_json(args.json, rows, devices=list(backends))
    return 0


if __name__ == "__main__":
    sys.exit(main())
