"""Throughput of the rolling ball with internal masses (paper 004): RK4 and the per-ball
adaptive Dormand-Prince, body-steps/s of the per-ball kernels beside the whole-array
implementation they replaced, per backend and number of balls N.

    python bench/bench_rolling_ball.py [--backend cpu|gpu|all] [--sizes 1e3,1e4,1e5,1e6]
                                       [--scheme rk4,dopri5|all] [--masses 2] [--work]
                                       [--impl old,new] [--block 100] [--min-time 1] [--json out.json]

Balls: per-ball radius, masses and rail radii, ``--masses`` masses on circular rails in
alternating body planes driven sinusoidally, random initial Ω; h = 1e-3 (RK4) or output
intervals of 1e-3 with rtol 1e-8 (Dormand-Prince; a "step" is one interval). See
bench/_bodies.py for the timing rules.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from _bodies import parser, run

from granular.bodies.rolling_ball import rails as R
from granular.bodies.rolling_ball.ball import RollingBall
from granular.bodies.rolling_ball.integrators import RK4, DormandPrince
from tests.reference_bodies import rolling_array as ref

H = 1e-3
SCHEMES = ("rk4", "dopri5")
GOALS = {"rk4": (2.2e6, 5e8)}
OPTIONS = {"masses": 2, "work": False}


def make_ball(backend, n, masses=2, work=False):
    rng = np.random.default_rng(0)
    planes = [((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)), ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
    rails, acts = [], []
    for k in range(masses):
        u, v = planes[k % 2]
        rails.append(R.CircleRail(rng.uniform(0.6, 0.8, n), u=u, v=v))
        acts.append(R.Sinusoidal(rng.uniform(0.5, 1.2, n), 1.0 + 0.3 * k, 0.0, -math.pi / 2))
    ball = RollingBall(rng.uniform(0.9, 1.1, n), 1.0, (0.62, 0.66, 0.70), (0.0, 0.0, -0.05),
                       rng.uniform(0.1, 0.3, (n, masses)), rails, acts, gravity=1.0, n=n, backend=backend)  # fmt: skip
    return ball, ball.state(Omega=rng.normal(size=(n, 3)) * 0.5, track_work=work)


def make(backend, n, scheme, impl):
    ball, state = make_ball(backend, n, OPTIONS["masses"], OPTIONS["work"])
    if impl == "new":
        sch = RK4(ball) if scheme == "rk4" else DormandPrince(ball, rtol=1e-8, atol=1e-10)
        s = state if scheme == "rk4" else sch.adaptive(state)
        return lambda k: sch.advance(s, H, k)
    if scheme == "rk4":
        integ = ref.RK4()

        def advance(k):
            for _ in range(k):
                integ.step(ball, state, H)

        return advance
    dp = ref.DormandPrince(rtol=1e-8, atol=1e-10)

    def advance_dp(k):
        dp.run(ball, state, state.t + k * H, times=[state.t + (j + 1) * H for j in range(k)])

    return advance_dp


def main(argv=None):
    p = parser(__doc__, SCHEMES, "rk4")
    p.add_argument("--masses", type=int, default=2)
    p.add_argument("--work", action="store_true", help="also integrate the two work columns")
    args = p.parse_args(argv)
    OPTIONS.update(masses=args.masses, work=args.work)
    run(args, SCHEMES, make, GOALS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
