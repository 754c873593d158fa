"""The first part of a particle's step in vector lanes against the scalar body: bits and time.

    python bench/particle_lanes.py [--workload spheres-friction] [--n 22] [--spacing 1]
                                   [--scheme verlet] [--warm 60] [--batch 0,256,64]
                                   [--reps 20] [--windows 7]

A particle's end of a step and first part of the next, its forces stored
(:func:`kernels.particles.build` ``kick_body``: the second half kick and the row's
finiteness test; ``advance_with``: the half kick with the stored forces, the drift, the
rotation of map (23b) or (25b) with the quaternion's normalisation, the velocities the
dashpots and springs see, the skin test) is written twice: for one row, inlined where a
row is finished, and for a range of rows (``advance_rows``), over one-dimensional views
of the rows (``x[3 i + c]``, a constant stride), which LLVM evaluates eight rows to an
AVX-512 register once its limits on a loop's run-time checks are raised
(``kernels.cpu``). The direct pass finishes each :data:`kernels.cpu.LANE_ROWS` rows so
(``_advance_lanes``). This script:

- checks that one pass of each, from the same state (the run's, with seeded orientations,
  angular velocities, moments and extra forces, since the workloads' head-on impacts
  barely turn the spheres), with and without the second half kick, leaves the same bits
  in ``x``, ``v``, ``omega``, ``q``, ``vp``, ``wp`` and the status flags
  (``np.array_equal``; each lane rounds as the scalar operation, and no multiply-add is
  fused without fast-math), two rows made not finite (an infinite force, a NaN in an
  orientation) included, which both must flag; exit status 1 if not;
- says whether the lanes loop holds packed arithmetic (AVX-512 ``zmm`` or AVX ``ymm``
  multiplies in its assembly);
- times both over every particle, one thread, ns per particle (fastest of ``--windows``
  windows of ``--reps`` passes, ``h = 1e-9`` so the state barely moves), the lanes over
  all rows in one call (``--batch 0``) and called on batches of rows from a compiled loop,
  as the direct pass calls them.

A periodic box (whose wrap and image counters only the scalar body makes) is refused.
``docs/engine.md``, "The particles' advance in vector lanes", has its figures.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings

import numba
import numpy as np
from numba import njit

from granular.backend import get_backend
from granular.benchmark import workload_builder
from granular.particles.integrators import ExplicitIntegrator
from granular.particles.integrators.schemes import SCHEMES
from kernels import cpu, particles
from kernels.laws import SCHEME_CAMPELLO
from kernels.layout import BIT_NOT_FINITE

WORKLOADS = ("spheres-friction", "block-friction", "block", "spheres")
_K = {"nogil": True, "_nrt": False, "error_model": "numpy"}
#: The arrays a pass writes (compared bit for bit).
WRITTEN = ("x", "v", "omega", "q", "vp", "wp")


def _scalar(law):
    """The engine's scalar body over every row, its forces stored (as the direct pass
    without lanes, ``direct_chunk``, finishes a row): ``kick_body`` (with ``kick`` the
    second half kick; the finiteness test), then ``advance_with`` with its factors."""
    P = particles.build(cpu._jit, law)
    kick_factors, advance_with, kick_body = P.kick_factors, P.advance_with, P.kick_body

    @njit(**_K)
    def scalar(reps, kick, scheme, h, dyn, par, contacts, status):
        F, RM = dyn.F, dyn.RM
        for _ in range(reps):
            for i in range(dyn.x.shape[0]):
                a, b = kick_body(i, kick, scheme, h, dyn, par, status, F[i, 0], F[i, 1], F[i, 2], RM[i, 0], RM[i, 1],
                                 RM[i, 2])  # fmt: skip
                if not (kick and scheme != SCHEME_CAMPELLO):
                    a, b = kick_factors(i, scheme, h, par)
                advance_with(i, scheme, h, a, b, dyn, par, contacts, status)

    return scalar


def _batches(lanes):
    """A compiled loop calling ``lanes`` (``kernels.cpu`` ``_advance_lanes``) on
    batches of ``batch`` rows (0: all rows in one call), as the direct pass calls it."""

    @njit(**_K)
    def batches(reps, batch, kick, scheme, h, dyn, par, contacts, status):
        n = dyn.x.shape[0]
        step = n if batch <= 0 else batch
        for _ in range(reps):
            for lo in range(0, n, step):
                lanes(lo, min(lo + step, n), kick, scheme, h, dyn, par, contacts, status)

    return batches


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="spheres-friction", choices=WORKLOADS)
    p.add_argument("--n", type=int, default=22, help="block edge (N = n^3); the spheres: n^3 of them")
    p.add_argument("--spacing", type=float, default=1.0, help="spheres-friction only: centre distance (3: no pair)")
    p.add_argument(
        "--scheme", default="verlet", choices=sorted(SCHEMES), help="the explicit map (as granular bench: verlet)"
    )
    p.add_argument("--warm", type=int, default=60, help="steps of h = 1e-3 before the timing")
    p.add_argument("--batch", default="0,256,64", help="comma-separated rows per call of the lanes loop (0: all)")
    p.add_argument("--reps", type=int, default=20, help="passes over the particles in a timed window")
    p.add_argument("--windows", type=int, default=7, help="timed windows per loop (the fastest is printed)")
    args = p.parse_args(argv)
    try:
        batches = [int(s) for s in args.batch.split(",") if s]
    except ValueError:
        p.error(f"--batch: comma-separated whole numbers of rows (0: all), not {args.batch!r}")
    if not batches or min(batches) < 0:
        p.error(f"--batch: comma-separated whole numbers of rows >= 0 (0: all), not {args.batch!r}")
    if args.spacing != 1.0 and args.workload != "spheres-friction":
        p.error(f"--spacing applies to the spheres-friction workload only, not {args.workload!r}")
    if args.n < 2 or args.reps < 1 or args.windows < 1 or args.warm < 0:
        p.error("--n must be >= 2, --reps and --windows >= 1, --warm >= 0")
    numba.set_num_threads(1)
    model = workload_builder(args.workload, args.n, args.spacing).finalize(get_backend("cpu"))
    state = model.state()
    ExplicitIntegrator(args.scheme).advance(model, state, 1e-3, args.warm)
    b = state._engine.program.b
    dyn, par, contacts, status = b["dyn"], b["par"], b["contacts"], b["flags"].status
    if contacts.period.shape[0] > 0:
        p.error("a periodic box: the lanes loop leaves out the wrap and the image counters")
    law = model.kernels.law
    scheme = SCHEMES[args.scheme]
    n = model.n
    scalar = _scalar(law)
    lanes = model.kernels.dispatchers["_advance_lanes"]
    lanes_batches = _batches(lanes)
    bundles = (dyn, par, contacts, status)
    # the workloads' impacts are head-on, so their spheres barely turn: seeded
    # orientations, angular velocities and moments, and forces beside the run's, so that
    # every term counts
    rng = np.random.default_rng(2026)
    q = rng.normal(size=dyn.q.shape)
    dyn.q[:] = q / np.linalg.norm(q, axis=1)[:, None]
    dyn.omega[:] = rng.uniform(-20.0, 20.0, dyn.omega.shape)
    dyn.RM[:] = rng.uniform(-1.0, 1.0, dyn.RM.shape) * par.inertia[:, None] * 1e3
    dyn.F[:] += rng.uniform(-1.0, 1.0, dyn.F.shape) * par.mass[:, None] * 1e2
    # and two rows that are not finite (a force, an orientation), which both must flag
    bad_f, bad_q = n // 2, n // 3
    good_f, good_q = dyn.F[bad_f, 1], dyn.q[bad_q, 3]
    dyn.F[bad_f, 1] = np.inf
    dyn.q[bad_q, 3] = np.nan
    kept = {k: getattr(dyn, k).copy() for k in WRITTEN}
    kept_status = status.copy()

    def restore():
        for k, a in kept.items():
            getattr(dyn, k)[:] = a
        status[:] = kept_status

    h = 1e-3  # one pass at the run's step for the comparison of bits, with and without the kick
    differ = []
    flagged = []  # rows the lanes flagged not finite, with and without the kick
    for kick in (True, False):
        scalar(1, kick, scheme, h, dyn, par, contacts, status)
        after = {k: getattr(dyn, k).copy() for k in WRITTEN}
        after_status = status.copy()
        restore()
        lanes_batches(1, 0, kick, scheme, h, *bundles)
        tag = "" if kick else " (no kick)"
        differ += [k + tag for k in WRITTEN if not np.array_equal(getattr(dyn, k), after[k], equal_nan=True)]
        if not np.array_equal(status, after_status):
            differ.append("status" + tag)
        flagged.append(int(np.count_nonzero(status & BIT_NOT_FINITE)))
        restore()
    dyn.F[bad_f, 1] = good_f  # the timings on finite rows
    kept["q"][bad_q, 3] = good_q
    restore()
    with warnings.catch_warnings(record=True) as caught:  # Numba warns for cached code
        warnings.simplefilter("always")
        asm = lanes.inspect_asm(lanes.signatures[0])
    cached = any("cached code" in str(w.message) for w in caught)
    packed = len(re.findall(r"vmulpd\s+%[yz]mm", asm))
    print(f"{args.workload}, N = {n}" + (f", spacing {args.spacing:g}" if args.workload == "spheres-friction" else "")
          + f", scheme {args.scheme}, after {args.warm} steps; one thread")  # fmt: skip
    print(
        f"  same bits after one pass: {'NO (' + ', '.join(differ) + ' differ)' if differ else 'yes (all arrays equal)'}"
    )
    print(f"  rows flagged not finite by the lanes: {' and '.join(map(str, sorted(set(flagged))))} (2 made so)")
    if not cached:
        print(f"  packed multiplies in the lanes loop: {packed} ({'vectorised' if packed else 'not vectorised'})")
    else:  # a function loaded from the kernel cache keeps its machine code, not its assembly
        print("  packed multiplies in the lanes loop: unknown (loaded from the kernel cache, no assembly;"
              " GRANULAR_KERNEL_CACHE=<an empty folder> compiles it afresh)")  # fmt: skip
    print(f"  ns per particle (fastest of {args.windows} windows):")
    hh = 1e-9
    loops = [("engine (scalar)", lambda r: scalar(r, True, scheme, hh, dyn, par, contacts, status))]
    for bt in batches:
        name = "lanes, all rows" if bt == 0 else f"lanes, {bt} rows a call"
        loops.append((name, lambda r, bt=bt: lanes_batches(r, bt, True, scheme, hh, *bundles)))
    for name, f in loops:
        f(1)
        restore()
        best = np.inf
        for _ in range(args.windows):
            t0 = time.perf_counter()
            f(args.reps)
            best = min(best, time.perf_counter() - t0)
            restore()
        print(f"    {name:22s} {1e9 * best / args.reps / n:7.2f}", flush=True)
    return 1 if differ or flagged != [2, 2] else 0


if __name__ == "__main__":
    sys.exit(main())
