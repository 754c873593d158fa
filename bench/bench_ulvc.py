"""Throughput of the batched RK4 Lie-group scheme in unified local velocity coordinates
(paper 001, (79)-(87)) and of the Newton-Euler reference: ms/step and body-steps/s per
backend and number of bodies N.

    python bench/bench_ulvc.py [--backend cpu|gpu|all] [--sizes 1,10,100,1e3,1e4,1e5,1e6]
                               [--scheme ulvc|newton_euler|both] [--shared] [--json out.json]

Bodies: the unstable-rotation example's inertia and mass with random initial angular
velocities and translational velocities, per-body parameters (one row per body) unless
``--shared``; no loads, as in the paper's example. One warm-up step is excluded; the
device is synchronised inside the timed region; each size runs at least ``--min-time``
seconds (and at least one step). Results are printed as a table and optionally saved as
JSON with the hardware description.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

import granular as gr
from granular.backend import BackendError
from granular.bodies import ulvc

J_DIAG = (5.2988, 1.1775, 4.3568)
H = 1e-4


def make(backend, n, shared, scheme):
    rng = np.random.default_rng(0)
    if shared:
        bodies = ulvc.ULVCBodies(1.0, J_DIAG, n=n, backend=backend)
    else:
        bodies = ulvc.ULVCBodies(np.ones(n), np.tile(J_DIAG, (n, 1)), l=np.ones((n, 3)), backend=backend)
    state = bodies.state(U=rng.normal(size=(n, 3)), Omega=rng.normal(size=(n, 3)) * 10)
    if scheme == "ulvc":
        return bodies, state, ulvc.LieGroupRK4()
    return bodies, ulvc.to_newton_euler(bodies, state), ulvc.NewtonEulerRK4()


def bench_one(backend, n, scheme, shared=False, min_time=1.0):
    bodies, state, integ = make(backend, n, shared, scheme)
    integ.step(bodies, state, H)  # warm-up
    be = bodies.backend
    steps, elapsed, chunk = 0, 0.0, 1
    while elapsed < min_time:
        be.synchronize()
        t0 = time.perf_counter()
        for _ in range(chunk):
            integ.step(bodies, state, H)
        be.synchronize()
        elapsed += time.perf_counter() - t0
        steps += chunk
        chunk *= 2
    return {"backend": be.name, "device": be.device, "simulated": be.simulated, "n": n, "scheme": scheme,
            "shared_parameters": shared, "steps": steps, "ms_per_step": 1e3 * elapsed / steps,
            "body_steps_per_s": n * steps / elapsed}  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--sizes", default="1,10,100,1e3,1e4,1e5,1e6")
    p.add_argument("--scheme", default="ulvc", choices=("ulvc", "newton_euler", "both"))
    p.add_argument("--shared", action="store_true", help="one parameter row shared by all bodies")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds per size (default 1)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    schemes = ["ulvc", "newton_euler"] if args.scheme == "both" else [args.scheme]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    print(f"{'backend':<8} {'scheme':<13} {'N':>9} {'ms/step':>11} {'body-steps/s':>14}  device")
    for name in names:
        try:
            be = gr.get_backend(name)
        except BackendError as exc:
            print(f"{name:<8} skipped: {exc}")
            continue
        if be.simulated:
            print(f"{name:<8} skipped: CUDA simulator (not a throughput measurement)")
            continue
        for scheme in schemes:
            for n in sizes:
                try:
                    r = bench_one(be, n, scheme, args.shared, args.min_time)
                except MemoryError:
                    print(f"{name:<8} {scheme:<13} {n:>9} skipped: out of memory")
                    break
                rows.append(r)
                print(f"{name:<8} {scheme:<13} {n:>9} {r['ms_per_step']:>11.4f} {r['body_steps_per_s']:>14.3e}  "
                      f"{r['device']}", flush=True)  # fmt: skip
    if args.json:
        meta = {"python": sys.version.split()[0], "platform": platform.platform(), "granular": gr.__version__,
                "numpy": np.__version__, "h": H}  # fmt: skip
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
