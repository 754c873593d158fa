"""Throughput of the explicit integrator step (maps (23), (25), (27)) on free particles
under gravity: ms/step and particle-steps/s per backend and N.

    python bench/bench_integrator.py [--backend cpu|gpu|all] [--sizes 1e3,1e4,1e5,1e6]
                                     [--scheme verlet] [--json out.json]

Timed with :func:`granular.timing.time_steps` (the warm-up step outside the timed region,
the device synchronised inside it). Results are printed as a table and optionally saved as JSON with the
hardware description.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import granular as gr
from granular.backend import BackendError
from granular.timing import time_steps, write_json


def bench_one(backend, n, scheme, min_time=1.0):
    rng = np.random.default_rng(0)
    b = gr.ModelBuilder()
    b.add_particles(rng.uniform(0, 100, (n, 3)), v=rng.normal(size=(n, 3)), omega=rng.normal(size=(n, 3)))
    b.set_gravity([0.0, 0.0, -9.81])
    model = b.finalize(backend)
    state = model.state()
    integ = gr.ExplicitIntegrator(scheme)
    be = model.backend
    steps, elapsed = time_steps(lambda k: integ.advance(model, state, 1e-3, k), be.synchronize, min_time=min_time)
    return {"backend": be.name, "device": be.device, "simulated": be.simulated, "n": n, "scheme": scheme,
            "steps": steps, "ms_per_step": 1e3 * elapsed / steps, "particle_steps_per_s": n * steps / elapsed}  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--sizes", default="1e3,1e4,1e5,1e6")
    p.add_argument("--scheme", default="verlet")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds timed per row (default 1)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    print(f"{'backend':<8} {'N':>9} {'ms/step':>10} {'particle-steps/s':>18}  device")
    for name in names:
        try:
            be = gr.get_backend(name)
        except BackendError as exc:
            print(f"{name:<8} skipped: {exc}")
            continue
        if be.simulated:
            print(f"{name:<8} skipped: CUDA simulator (not a throughput measurement)")
            continue
        for n in sizes:
            r = bench_one(be, n, args.scheme, args.min_time)
            rows.append(r)
            print(f"{name:<8} {n:>9} {r['ms_per_step']:>10.4f} {r['particle_steps_per_s']:>18.3e}  {r['device']}")
    if args.json:
        write_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
