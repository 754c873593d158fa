"""Compile every GPU kernel of kernels/bodies_cuda.py to PTX without a GPU (run by
tests/test_body_kernels_ptx.py in a subprocess without the CUDA simulator, which would
not check the typing).

Each scheme is built on the CPU backend with a recorder in place of its kernel module,
so the argument types are exactly those a launch passes; each ``cuda.jit`` kernel behind
the launcher is then compiled for compute capability 9.0. Prints one line per kernel and
exits non-zero on the first failure.
"""

import math
import sys
import time
from types import SimpleNamespace

import numba
import numba.cuda.dispatcher as dispatcher
import numpy as np
from numba import cuda

from granular.bodies.directors import dla, nontwisting
from granular.bodies.directors import schemes as dirs
from granular.bodies.livens import comparators as livens_comparators
from granular.bodies.livens import rigid as livens_rigid
from granular.bodies.rolling_ball.ball import HarmonicForce, RollingBall
from granular.bodies.rolling_ball.disk import RollingDisk, RollingDiskRK4
from granular.bodies.rolling_ball.integrators import RK4, DormandPrince
from granular.bodies.rolling_ball.rails import CircleRail, ConstantSpeed, FourierRail, Harmonic, LineRail
from granular.bodies.ulvc import schemes as ulvc

# numba-cuda asks the (absent) device for its compute capability while compiling
dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))


class Recorder:
    """Stands in for a kernel module: records the arguments of each launcher call."""

    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        def record(*args):
            self.calls.append((name, args))

        return record


def launches():
    """``(launcher name, args)`` of one block of every scheme, free and loaded variants."""
    calls = []
    n = 4
    rng = np.random.default_rng(0)

    def go(scheme, state, h=0.01):
        scheme.kernels = Recorder(calls)
        out, (status, value) = scheme._buffers(state)
        scheme._launch(state, out, h, 2, status, value)

    bodies = ulvc.ULVCBodies(np.ones(n), rng.uniform(1, 2, (n, 3)))
    loads = ulvc.PointLoads(points=np.zeros((1, 1, 3)), force_spatial=np.ones((1, 1, 3)), torque_body=np.ones(3))
    for lo in (None, loads):
        go(ulvc.LieGroupRK4(bodies, lo), bodies.state())
        ne = ulvc.NewtonEulerRK4(bodies, lo)
        go(ne, ne.state())
    rails = [CircleRail(0.5), LineRail((0.0, 1.0, 0.0)), FourierRail((0.0, 0.0, 0.0), np.ones((2, 3)), np.ones((2, 3)))]
    acts = [ConstantSpeed(0.0, 1.0), Harmonic(0.0, 1.0, 0.5, 2.0), ConstantSpeed(0.2, -1.0)]
    for force in (None, (0.1, 0.0, 0.0), HarmonicForce(amplitude=(0.1, 0.0, 0.0), frequency=(1.0, 0.0, 0.0)),
                  lambda t: np.array([math.cos(t), 0.0, 0.0])):  # fmt: skip
        ball = RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), masses=[0.1, 0.1, 0.1], rails=rails, actuations=acts,
                           external_force=force, n=n)  # fmt: skip
        go(RK4(ball), ball.state(track_work=True))
        if not callable(force) or isinstance(force, HarmonicForce):
            dp = DormandPrince(ball)
            go(dp, dp.state())
    disk = RollingDisk(1.0, 1.0, 0.5, masses=[0.1], rails=[CircleRail(0.5)], actuations=[ConstantSpeed(0.0, 1.0)])
    go(RollingDiskRK4(disk), disk.state())
    J = np.diag([6.0, 8.0, 3.0])
    for cls in (livens_rigid.EML, livens_rigid.REML, livens_rigid.NullEML, livens_comparators.MPL,
                livens_comparators.EMH, livens_comparators.MPH):  # fmt: skip
        sch = cls(J, n=n, mass=1.0, center_of_mass=(0.0, 0.0, 0.1), gravity=(0.0, 0.0, -9.81))
        go(sch, sch.state(np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)), Omega=(1.0, 2.0, 0.0)))
    E = np.diag([3.0, 2.0, 1.0])
    moment = dirs.ExternalMoment(material=np.ones((n, 2)), profile=math.cos)
    for cls in (dirs.DirectorEM, nontwisting.NonTwistingEM, dla.DirectorDLA, dla.NonTwistingDLA):
        sch = cls(euler=E, n=n, moment=moment)
        go(sch, sch.state(np.eye(3), (1.0, 2.0, 0.0)))
    return calls


SKIP = 3  # exit status: NVVM (the CUDA compiler library) is not installed


def main():
    from numba.cuda.cudadrv import nvvm

    if not nvvm.is_available():
        print("NVVM is not available: cannot compile to PTX")
        return SKIP
    import kernels.bodies_cuda as kc

    seen = set()
    failures = 0
    for name, args in launches():
        types = tuple(numba.typeof(a) for a in args)
        for kernel in kc.KERNELS[name]:
            key = (kernel.py_func.__name__, types)
            if key in seen:
                continue
            seen.add(key)
            t0 = time.perf_counter()
            try:
                ptx, _ = cuda.compile_ptx(kernel.py_func, types, cc=(9, 0))
            except Exception as exc:  # noqa: BLE001  report every kernel that does not compile
                failures += 1
                print(f"FAIL {kernel.py_func.__name__}: {type(exc).__name__}: {str(exc)[:2000]}", flush=True)
                continue
            print(f"ok {kernel.py_func.__name__} ({len(ptx)} chars of PTX, {time.perf_counter() - t0:.1f} s)",
                  flush=True)  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
