"""Throughput of the batched Livens schemes of paper 002: body-steps/s of one step of N
independent heavy tops (EML, REML, Null-EML and the comparators MPL, EMH, MPH) and of N
closed loops of four bars (multibody EML; restarted every 50 steps), for N = 1 .. 10^6.

    python bench/bench_livens.py [--backend cpu|gpu|all] [--sizes 1,10,100,1e3,1e4,1e5,1e6]
                                 [--scheme eml,reml,null,mpl,emh,mph,loop|all] [--loop-sizes 1,10,100,1e3]
                                 [--min-time 1.0] [--threads 1] [--json out.json]

Heavy tops: random SPD inertia (~1e-3 kg m²), mass, centre of mass, orientation and
|ω| ~ 35 rad/s with gravity, h = 0.004 s; closed loops: the paper's 5.5 during the load,
h = 0.1 s (one system counts as 4 bodies). Newton rtol 1e-10. One warm-up step
(allocation, first touch) is excluded; the device is synchronised inside the timed
region. ``--threads`` sets OPENBLAS/OMP/MKL threads before NumPy is imported (default 1:
the batched solve is a loop of small LAPACK calls that multithreaded BLAS only slows down
on a shared machine); it is recorded in the JSON.
"""

from __future__ import annotations

import os
import sys


def _threads_from_argv(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


_THREADS = _threads_from_argv(sys.argv[1:])
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _THREADS)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import granular as gr  # noqa: E402
from granular.backend import BackendError  # noqa: E402
from granular.bodies.livens_comparators import EMH, MPH, MPL  # noqa: E402
from granular.bodies.livens_multibody import closed_loop  # noqa: E402
from granular.bodies.livens_rigid import EML, REML, NullEML  # noqa: E402

SCHEMES = {"eml": EML, "reml": REML, "null": NullEML, "mpl": MPL, "emh": EMH, "mph": MPH}


def random_tops(n, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, 3, 3))
    J = (A @ A.swapaxes(1, 2) + 0.5 * np.eye(3)) * 1e-3
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return J, rng.uniform(0.2, 1.5, n), rng.normal(size=(n, 3)) * 0.05, q, rng.normal(size=(n, 3)) * 20.0


def _time(be, sch, s, h, min_time, bodies_per_system=1, restart=None):
    """Time steps of ``sch`` from ``s``; ``restart``: ``(steps, make_state)`` to restart from a
    fresh state (outside the timed region) every ``steps`` steps."""
    sch.step(s, h)  # warm-up
    be.synchronize()
    steps, iters, elapsed = 0, 0.0, 0.0
    while elapsed < min_time:
        if restart is not None and s.steps >= restart[0]:
            s = restart[1]()
        t0 = time.perf_counter()
        sch.step(s, h)
        be.synchronize()
        elapsed += time.perf_counter() - t0
        steps += 1
        iters += float(be.to_host(s.iterations).max())
    n = sch.n * bodies_per_system
    return {"steps": steps, "ms_per_step": 1e3 * elapsed / steps, "body_steps_per_s": n * steps / elapsed,
            "newton_iterations_per_step": iters / steps, "unknowns_per_system": sch.k}  # fmt: skip


def bench_one(be, n, scheme, min_time=1.0):
    if scheme == "loop":
        sch, s = closed_loop(n, backend=be)
        # restart every 50 steps (t <= 5 s): later the loop's parasitic node-velocity mode
        # grows (see granular.bodies.livens_multibody) and Newton needs more iterations
        r = _time(be, sch, s, 0.1, min_time, bodies_per_system=4, restart=(50, lambda: closed_loop(n, backend=be)[1]))
    else:
        J, m, X, q, w = (be.asarray(a) for a in random_tops(n))
        sch = SCHEMES[scheme](J, mass=m, center_of_mass=X, gravity=[0.0, 0.0, -9.81], backend=be)
        r = _time(be, sch, sch.state(q, omega=w), 0.004, min_time)
    r.update({"backend": be.name, "device": be.device, "simulated": be.simulated, "n": n, "scheme": scheme})
    return r


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--sizes", default="1,10,100,1e3,1e4,1e5,1e6")
    p.add_argument("--loop-sizes", default="1,10,100,1e3")
    p.add_argument("--scheme", default="eml,reml,null,loop", help="comma list of eml,reml,null,mpl,emh,mph,loop or 'all'")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds timed per row (at least one step)")
    p.add_argument("--threads", default=_THREADS, help="BLAS threads (set before NumPy is imported)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    schemes = list(SCHEMES) + ["loop"] if args.scheme == "all" else args.scheme.split(",")
    for sc in schemes:
        if sc not in SCHEMES and sc != "loop":
            p.error(f"--scheme: unknown scheme {sc!r}; choose from {', '.join(list(SCHEMES) + ['loop'])}")
    sizes = [int(float(x)) for x in args.sizes.split(",")]
    loop_sizes = [int(float(x)) for x in args.loop_sizes.split(",")]
    rows = []
    print(f"BLAS threads: {os.environ.get('OPENBLAS_NUM_THREADS')}")
    print(f"{'backend':<8} {'scheme':<6} {'N':>9} {'k':>4} {'ms/step':>12} {'body-steps/s':>14} {'Newton it/step':>15}  device")
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
            for n in loop_sizes if scheme == "loop" else sizes:
                r = bench_one(be, n, scheme, min_time=args.min_time)
                rows.append(r)
                print(f"{name:<8} {scheme:<6} {n:>9} {r['unknowns_per_system']:>4} {r['ms_per_step']:>12.3f} "
                      f"{r['body_steps_per_s']:>14.4g} {r['newton_iterations_per_step']:>15.2f}  {r['device']}",
                      flush=True)  # fmt: skip
    if args.json:
        meta = {"python": sys.version.split()[0], "platform": platform.platform(), "granular": gr.__version__,
                "numpy": np.__version__, "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                "cpu_count": os.cpu_count()}  # fmt: skip
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
