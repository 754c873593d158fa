"""Throughput of the Livens schemes of paper 002: body-steps/s of N independent heavy tops
(EML, REML, Null-EML and the comparators MPL, EMH, MPH) with the per-body kernels beside
the whole-array implementation they replaced; and of N closed loops of four bars
(multibody EML, array-based in both columns; restarted every 50 steps).

    python bench/bench_livens.py [--backend cpu|gpu|all] [--sizes 1e3,1e4,1e5]
                                 [--scheme eml,reml,null,mpl,emh,mph,loop|all] [--impl old,new]
                                 [--block 100] [--min-time 1] [--threads 1] [--json out.json]

Heavy tops: random SPD inertia (~1e-3 kg m²), mass, centre of mass, orientation and
ω with 20 rad/s per component and |ω| capped at 30 rad/s, with gravity, h = 0.004 s, Newton rtol 1e-10; closed loops: the paper's 5.5
during the load, h = 0.1 s (one system counts as 4 bodies). ``--threads`` sets the BLAS
threads before NumPy is imported (default 1: the old batched solve is a loop of small
LAPACK calls that multithreaded BLAS only slows down). See bench/_bodies.py.
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

import numpy as np  # noqa: E402
from _bodies import parser, run  # noqa: E402

from granular.bodies.livens import comparators as lc  # noqa: E402
from granular.bodies.livens import rigid as lr  # noqa: E402
from granular.bodies.livens.multibody import closed_loop  # noqa: E402
from tests.reference_bodies import livens_array as ref  # noqa: E402

NEW = {"eml": lr.EML, "reml": lr.REML, "null": lr.NullEML, "mpl": lc.MPL, "emh": lc.EMH, "mph": lc.MPH}
OLD = {"eml": ref.EML, "reml": ref.REML, "null": ref.NullEML, "mpl": ref.MPL, "emh": ref.EMH, "mph": ref.MPH}
SCHEMES = tuple(NEW) + ("loop",)
GOALS = {"eml": (4.9e5, 1e8)}


def random_tops(n, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, 3, 3))
    J = (A @ A.swapaxes(1, 2) + 0.5 * np.eye(3)) * 1e-3
    w = rng.normal(size=(n, 3)) * 20.0
    # The normal draw's tail holds tops too fast for h = 0.004 (at 10^6 tops, one with
    # |w| = 74 rad/s and an inertia ratio of 31 fails Newton at step 105, on the CPU as on
    # the GPU; capped at 50, another fails at step 256): speeds are capped at 30 rad/s.
    speed = np.linalg.norm(w, axis=1, keepdims=True)
    w *= np.minimum(1.0, 30.0 / speed)
    return J, rng.uniform(0.2, 1.5, n), rng.normal(size=(n, 3)) * 0.05, _unit(rng, n), w


def _unit(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def make(be, n, scheme, impl):
    if scheme == "loop":
        box = {}

        def restart():
            box["sch"], box["s"] = closed_loop(n, backend=be)

        restart()

        def advance_loop(k):
            for _ in range(k):
                if box["s"].step >= 50:  # later the loop's parasitic mode slows Newton down
                    restart()
                box["sch"].step(box["s"], 0.1)

        return advance_loop
    J, m, X, q, w = (be.asarray(a) for a in random_tops(n))
    cls = (NEW if impl == "new" else OLD)[scheme]
    sch = cls(J, mass=m, center_of_mass=X, gravity=[0.0, 0.0, -9.81], backend=be)
    box = {"s": sch.state(q, omega=w)}

    def advance(k):
        # Some of the random fast tops are chaotic: past about 500 steps of h = 0.004 their
        # Newton iterations climb and, after a few thousand, one of them fails. A rate is
        # measured on the first 400 steps of the tops, restarted from their initial state.
        if box["s"].step + k > 400:
            box["s"] = sch.state(q, omega=w)
        sch.advance(box["s"], 0.004, k)

    return advance


def main(argv=None):
    p = parser(__doc__, SCHEMES, "eml,reml,null")
    p.add_argument("--threads", default=_THREADS, help="BLAS threads (set before NumPy is imported)")
    args = p.parse_args(argv)
    run(args, SCHEMES, make, GOALS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
