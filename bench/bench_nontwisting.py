"""Throughput of the implicit body schemes of paper 000 (directors, non-twisting frame):
body-steps/s of the per-body kernels beside the whole-array implementation they replaced,
for N bodies.

    python bench/bench_nontwisting.py [--backend cpu|gpu|all] [--sizes 1e3,1e4,1e5]
                                      [--scheme em,dla|all] [--impl old,new] [--block 100]
                                      [--min-time 1] [--json out.json]

Bodies: random split inertia (J13 = J23 = 0), random orientation, random twist-free ω
(|ω| ~ 5 rad/s), a material moment ``cos(2t) (c1 d1 + c2 d2)``; h = 0.005 s, Newton rtol
1e-10. See bench/_bodies.py for the timing rules.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from _bodies import parser, run

from granular.bodies.directors import schemes as dirs
from granular.bodies.directors.dla import NonTwistingDLA
from granular.bodies.directors.nontwisting import NonTwistingEM
from granular.bodies.directors.schemes import ExternalMoment
from tests.reference_bodies import directors_array as ref

NEW = {"em": NonTwistingEM, "dla": NonTwistingDLA}
OLD = {"em": ref.NonTwistingEM, "dla": ref.NonTwistingDLA}
SCHEMES = tuple(NEW)
GOALS = {"em": (6.9e5, 1e8)}


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


def make(be, n, scheme, impl):
    E, d, w, c = (be.asarray(a) for a in random_bodies(n))
    moment = ExternalMoment(material=c, profile=lambda t: math.cos(2.0 * t))
    sch = (NEW if impl == "new" else OLD)[scheme](euler=E, backend=be, moment=moment)
    s = sch.state(d, w)
    return lambda k: sch.advance(s, 0.005, k) if impl == "new" else sch.run(s, 0.005, k)


def main(argv=None):
    args = parser(__doc__, SCHEMES, "em").parse_args(argv)
    run(args, SCHEMES, make, GOALS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
