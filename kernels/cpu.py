"""CPU kernels: the bodies of :mod:`kernels.particles` and :mod:`kernels.interactions`
compiled by ``numba.njit(parallel=True)`` and run in ``prange`` loops over particles
(deterministic: each iteration writes only its own entries). The parallel pipeline also
optimises these loop bodies about 4x better than a plain ``njit`` compile, and costs
nothing measurable at small N, so there is no serial variant.

Every launcher has the same signature as its twin in :mod:`kernels.cuda`.
"""

from numba import njit, prange

from . import interactions, particles
from .cache import keyed_cache

# Every function compiled below is cached under a directory keyed by the kernel sources.
_cache = keyed_cache().__enter__()

# Laws and bodies are inlined at Numba IR level into each loop: LLVM does not inline
# across separately compiled functions returning tuples, and the calls cost ~4x on the
# bond kernel.
_jit = njit(inline="always")
B = particles.build(_jit)
I = interactions.build(_jit, B)

_advance_body = B.advance_body
_finish_body = B.finish_body
_gravity_body = B.gravity_body
_pendulum_body = B.pendulum_body
_bond_eval_body = I.bond_eval_body
_bond_gather_body = I.bond_gather_body
_bond_energy_body = I.bond_energy_body
_bond_break_body = I.bond_break_body
_contact_allpairs_body = I.contact_allpairs_body
_wall_body = I.wall_body
_contact_list_body = I.contact_list_body
_neighbor_build_body = I.neighbor_build_body

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


@njit(parallel=True, cache=True)
def _bond_eval(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    for k in prange(bond_a.shape[0]):
        _bond_eval_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)


@njit(parallel=True, cache=True)
def _bond_gather(offsets, incident, bond_a, out, F, RM):
    for i in prange(F.shape[0]):
        _bond_gather_body(i, offsets, incident, bond_a, out, F, RM)


def bond_forces(x, q, offsets, incident, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out, F, RM):
    """Both passes: evaluate every bond into ``out`` (B, 9), then gather per particle."""
    _bond_eval(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)
    _bond_gather(offsets, incident, bond_a, out, F, RM)


@njit(parallel=True, cache=True)
def bond_energies(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    for k in prange(bond_a.shape[0]):
        _bond_energy_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)


@njit(parallel=True, cache=True)
def bond_break(x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out):
    for k in prange(bond_a.shape[0]):
        _bond_break_body(k, x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out)


@njit(parallel=True, cache=True)
def contacts_allpairs(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U):
    for i in prange(x.shape[0]):
        _contact_allpairs_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U)


@njit(parallel=True, cache=True)
def walls(x, radius, wall_planes, kw, F, U):
    for i in prange(x.shape[0]):
        _wall_body(i, x, radius, wall_planes, kw, F, U)


@njit(parallel=True, cache=True)
def contacts_list(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U):
    for i in prange(x.shape[0]):
        _contact_list_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U)


@njit(parallel=True, cache=True)
def neighbor_build(x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count):
    for i in prange(x.shape[0]):
        _neighbor_build_body(i, x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count)


_cache.__exit__(None, None, None)
