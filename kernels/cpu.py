"""CPU kernels: the bodies of :mod:`kernels.particles` compiled by ``numba.njit`` and run
in ``prange`` loops over particles (parallel, deterministic: each iteration writes only
its own entries).

Every launcher has the same signature as its twin in :mod:`kernels.cuda`.
"""

from numba import njit, prange

from . import particles

_jit = njit(cache=True)
B = particles.build(_jit)

_advance_body = B.advance_body
_finish_body = B.finish_body
_gravity_body = B.gravity_body
_pendulum_body = B.pendulum_body

name = "cpu"


@njit(parallel=True, cache=True)
def advance(scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status):
    for i in prange(x.shape[0]):
        _advance_body(i, scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status)


@njit(parallel=True, cache=True)
def finish(scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status):
    for i in prange(x1.shape[0]):
        _finish_body(i, scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status)


@njit(parallel=True, cache=True)
def gravity(m, g1, g2, g3, F):
    for i in prange(F.shape[0]):
        _gravity_body(i, m, g1, g2, g3, F)


@njit(parallel=True, cache=True)
def pendulum(index, rho0, mg, e1, e2, e3, q, RM, U):
    for k in prange(index.shape[0]):
        _pendulum_body(k, index, rho0, mg, e1, e2, e3, q, RM, U)
