"""Throughput of the batched rolling ball with internal masses (paper 004): ms/step and
ball-steps/s of the RK4 integrator per backend and number of balls N.

    python bench/bench_rolling_ball.py [--backend cpu|gpu|all] [--sizes 1,10,100,1e3,1e4,1e5,1e6]
                                       [--masses 2] [--shared] [--work] [--min-time 1] [--json out.json]

Balls: the orthogonal-rail scene (``granular.validation.rollingball``): ``--masses``
point masses (default 2) on circular rails with sinusoidal actuations, per-ball
parameters (one row per ball: radius, masses, rail radii, actuation amplitudes) unless
``--shared``, random initial angular velocities; ``--work`` also integrates the two work
columns. One RK4 step (four right-hand sides) is one ball-step. A warm-up step is
excluded; the device is synchronised inside the timed region; each size runs at least
``--min-time`` seconds (and at least one step). Printed as a table, optionally saved as
JSON with the hardware description.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time

import numpy as np

import granular as gr
from granular.backend import BackendError, get_backend
from granular.bodies import rails as R
from granular.bodies.rolling_ball import RollingBall
from granular.bodies.rolling_ball_integrators import RK4

H = 1e-3


def make(backend, n, masses=2, shared=False, work=False):
    rng = np.random.default_rng(0)
    planes = [((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)), ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
    rails, acts = [], []
    for k in range(masses):
        u, v = planes[k % 2]
        rho = 0.75 if shared else rng.uniform(0.6, 0.8, n)
        amp = 1.0 if shared else rng.uniform(0.5, 1.2, n)
        rails.append(R.CircleRail(rho, u=u, v=v))
        acts.append(R.Sinusoidal(amp, 1.0 + 0.3 * k, 0.0, -math.pi / 2))
    m = np.full(masses, 0.2) if shared else rng.uniform(0.1, 0.3, (n, masses))
    radius = 1.0 if shared else rng.uniform(0.9, 1.1, n)
    ball = RollingBall(radius, 1.0, (0.62, 0.66, 0.70), (0.0, 0.0, -0.05), m, rails, acts, gravity=1.0, n=n,
                       backend=backend)  # fmt: skip
    state = ball.state(Omega=rng.normal(size=(n, 3)) * 0.5, track_work=work)
    return ball, state


def bench_one(backend, n, masses=2, shared=False, work=False, min_time=1.0):
    ball, state = make(backend, n, masses, shared, work)
    integ = RK4()
    integ.step(ball, state, H)  # warm-up
    be = ball.backend
    steps, elapsed, chunk = 0, 0.0, 1
    while elapsed < min_time:
        be.synchronize()
        t0 = time.perf_counter()
        for _ in range(chunk):
            integ.step(ball, state, H)
        be.synchronize()
        elapsed += time.perf_counter() - t0
        steps += chunk
        chunk *= 2
    return {"backend": be.name, "device": be.device, "simulated": be.simulated, "n": n, "masses": masses,
            "shared_parameters": shared, "work_columns": work, "steps": steps, "ms_per_step": 1e3 * elapsed / steps,
            "ball_steps_per_s": n * steps / elapsed}  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--sizes", default="1,10,100,1e3,1e4,1e5,1e6")
    p.add_argument("--masses", type=int, default=2)
    p.add_argument("--shared", action="store_true", help="one parameter row shared by all balls")
    p.add_argument("--work", action="store_true", help="also integrate the work columns")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds per size (default 1)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    print(f"{'backend':<8} {'N':>9} {'ms/step':>11} {'ball-steps/s':>14}  device")
    for name in names:
        try:
            be = get_backend(name)
        except BackendError as exc:
            print(f"{name:<8} skipped: {exc}", file=sys.stderr)
            continue
        for n in sizes:
            r = bench_one(be, n, args.masses, args.shared, args.work, args.min_time)
            rows.append(r)
            sim = " (simulated)" if r["simulated"] else ""
            print(f"{r['backend']:<8} {n:>9} {r['ms_per_step']:>11.4g} {r['ball_steps_per_s']:>14.4g}  "
                  f"{r['device']}{sim}", flush=True)  # fmt: skip
    if args.json:
        meta = {"granular": gr.__version__, "python": platform.python_version(), "numpy": np.__version__,
                "machine": platform.machine(), "processor": platform.processor(), "h": H}  # fmt: skip
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
