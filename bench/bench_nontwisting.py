"""Throughput of the batched implicit body schemes of paper 000 (directors, non-twisting
frame): body-steps/s of one step of N independent bodies, for N = 1 .. 10^6.

    python bench/bench_nontwisting.py [--backend cpu|gpu|all] [--sizes 1,10,100,1e3,1e4,1e5,1e6]
                                      [--scheme em|dla|all] [--min-time 1.0] [--json out.json]

Bodies: random split inertia (J13 = J23 = 0), random orientation, random twist-free ω
(|ω| ~ 5 rad/s), a time-varying material moment; h = 0.005 s, Newton rtol 1e-10. One
warm-up step (allocation, first-touch) is excluded; the device is synchronised inside the
timed region. Each row reports the mean Newton iterations per step (every body's Jacobian
is assembled and solved at each iteration until the slowest body converges).
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
from granular.backend import BackendError
from granular.bodies import directors as dirs
from granular.bodies.directors import ExternalMoment
from granular.bodies.dla import NonTwistingDLA
from granular.bodies.nontwisting import NonTwistingEM

SCHEMES = {"em": NonTwistingEM, "dla": NonTwistingDLA}


def random_bodies(n, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, 2, 2))
    E = np.zeros((n, 3, 3))
    E[:, :2, :2] = A @ A.swapaxes(1, 2) + 0.5 * np.eye(2)
    E[:, 2, 2] = rng.uniform(0.2, 2.0, n)
    q = rng.normal(size=(n, 4))
    d = dirs.directors_from_quaternion(q / np.linalg.norm(q, axis=1, keepdims=True))
    w = rng.normal(size=(n, 3)) * 3.0
    w -= (w * d[:, 2]).sum(-1, keepdims=True) * d[:, 2]
    return E, d, w, rng.normal(size=(n, 2)) * 5.0


def bench_one(be, n, scheme, h=0.005, min_time=1.0):
    E, d, w, c = (be.asarray(a) for a in random_bodies(n))
    sch = SCHEMES[scheme](euler=E, backend=be, moment=ExternalMoment(material=lambda t: math.cos(2.0 * t) * c))
    s = sch.state(d, w)
    sch.step(s, h)  # warm-up
    be.synchronize()
    steps, iters, elapsed = 0, 0.0, 0.0
    while elapsed < min_time:
        t0 = time.perf_counter()
        sch.step(s, h)
        be.synchronize()
        elapsed += time.perf_counter() - t0
        steps += 1
        iters += float(be.to_host(s.iterations).max())
    return {"backend": be.name, "device": be.device, "simulated": be.simulated, "n": n, "scheme": scheme,
            "steps": steps, "ms_per_step": 1e3 * elapsed / steps, "body_steps_per_s": n * steps / elapsed,
            "newton_iterations_per_step": iters / steps}  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--sizes", default="1,10,100,1e3,1e4,1e5,1e6")
    p.add_argument("--scheme", default="em", choices=("em", "dla", "all"))
    p.add_argument("--min-time", type=float, default=1.0, help="seconds timed per row (at least one step)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    schemes = list(SCHEMES) if args.scheme == "all" else [args.scheme]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    print(f"{'backend':<8} {'scheme':<6} {'N':>9} {'ms/step':>12} {'body-steps/s':>14} {'Newton it/step':>15}  device")
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
                r = bench_one(be, n, scheme, min_time=args.min_time)
                rows.append(r)
                print(f"{name:<8} {scheme:<6} {n:>9} {r['ms_per_step']:>12.3f} {r['body_steps_per_s']:>14.4g} "
                      f"{r['newton_iterations_per_step']:>15.2f}  {r['device']}", flush=True)  # fmt: skip
    if args.json:
        meta = {"python": sys.version.split()[0], "platform": platform.platform(), "granular": gr.__version__,
                "numpy": np.__version__}  # fmt: skip
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
