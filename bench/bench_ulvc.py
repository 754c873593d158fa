"""Throughput of the RK4 Lie-group scheme in unified local velocity coordinates (paper 001,
(79)-(87)) and of the Newton-Euler reference: body-steps/s of the per-body kernels beside
the whole-array implementation they replaced, per backend and number of bodies N.

    python bench/bench_ulvc.py [--backend cpu|gpu|all] [--sizes 1e3,1e4,1e5,1e6]
                               [--scheme ulvc,newton_euler|all] [--impl old,new] [--block 100]
                               [--shared] [--min-time 1] [--json out.json]

Bodies: the unstable-rotation example's inertia and mass with random initial angular and
translational velocities, per-body parameters (one row per body) unless ``--shared``; no
loads, as in the paper's example; h = 1e-4. See bench/_bodies.py for the timing rules.
"""

from __future__ import annotations

import sys

import numpy as np
from _bodies import parser, run

from granular.bodies.ulvc import schemes as ulvc
from tests.reference_bodies import ulvc_array as ref

J_DIAG = (5.2988, 1.1775, 4.3568)
H = 1e-4
SCHEMES = ("ulvc", "newton_euler")
GOALS = {"ulvc": (3.7e6, 1e9)}  # body-steps/s: 2 CPU cores; one GPU at 10^6 bodies
SHARED = False


def make(backend, n, scheme, impl):
    rng = np.random.default_rng(0)
    if SHARED:
        bodies = ulvc.ULVCBodies(1.0, J_DIAG, n=n, backend=backend)
    else:
        bodies = ulvc.ULVCBodies(np.ones(n), np.tile(J_DIAG, (n, 1)), l=np.ones((n, 3)), backend=backend)
    state = bodies.state(U=rng.normal(size=(n, 3)), Omega=rng.normal(size=(n, 3)) * 10)
    if scheme == "newton_euler":
        state = ulvc.to_newton_euler(bodies, state)
    if impl == "new":
        sch = ulvc.LieGroupRK4(bodies) if scheme == "ulvc" else ulvc.NewtonEulerRK4(bodies)
        return lambda k: sch.advance(state, H, k)
    integ = ref.LieGroupRK4() if scheme == "ulvc" else ref.NewtonEulerRK4()

    def advance(k):
        for _ in range(k):
            integ.step(bodies, state, H)

    return advance


def main(argv=None):
    global SHARED
    p = parser(__doc__, SCHEMES, "ulvc")
    p.add_argument("--shared", action="store_true", help="one parameter row shared by all bodies")
    args = p.parse_args(argv)
    SHARED = args.shared
    run(args, SCHEMES, make, GOALS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
