"""CPU kernels: the bodies of :mod:`kernels.particles` and :mod:`kernels.interactions`
compiled by ``numba.njit`` and run in ``prange`` loops over particles. Each loop is
compiled twice, parallel and serial, and the launcher picks by size (``PARALLEL_MIN``);
both are deterministic, since each iteration writes only its own entries.

Every launcher has the same signature as its twin in :mod:`kernels.cuda`.
"""

from numba import njit, prange

from . import interactions, particles
from .cache import keyed_cache

# Every function compiled below is cached under a directory keyed by the kernel sources.
_cache = keyed_cache().__enter__()

_jit = njit(cache=True)
B = particles.build(_jit)
I = interactions.build(_jit, B)

_advance_body = B.advance_body
_finish_body = B.finish_body
_gravity_body = B.gravity_body
_pendulum_body = B.pendulum_body
_bond_force_body = I.bond_force_body
_bond_energy_body = I.bond_energy_body
_bond_break_body = I.bond_break_body
_contact_allpairs_body = I.contact_allpairs_body
_wall_body = I.wall_body
_contact_list_body = I.contact_list_body
_neighbor_build_body = I.neighbor_build_body

name = "cpu"

#: Below this many iterations a loop runs serially: a parallel launch costs a few
#: microseconds of thread synchronisation, more than small loops take.
PARALLEL_MIN = 4096


def _advance_loop(scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status):
    for i in prange(x.shape[0]):
        _advance_body(i, scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status)


_advance_par = njit(parallel=True, cache=True)(_advance_loop)
_advance_ser = njit(cache=True)(_advance_loop)


def advance(scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status):
    loop = _advance_par if x.shape[0] >= PARALLEL_MIN else _advance_ser
    loop(scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status)


def _finish_loop(scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status):
    for i in prange(x1.shape[0]):
        _finish_body(i, scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status)


_finish_par = njit(parallel=True, cache=True)(_finish_loop)
_finish_ser = njit(cache=True)(_finish_loop)


def finish(scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status):
    loop = _finish_par if x1.shape[0] >= PARALLEL_MIN else _finish_ser
    loop(scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status)


def _gravity_loop(m, g1, g2, g3, F):
    for i in prange(F.shape[0]):
        _gravity_body(i, m, g1, g2, g3, F)


_gravity_par = njit(parallel=True, cache=True)(_gravity_loop)
_gravity_ser = njit(cache=True)(_gravity_loop)


def gravity(m, g1, g2, g3, F):
    loop = _gravity_par if F.shape[0] >= PARALLEL_MIN else _gravity_ser
    loop(m, g1, g2, g3, F)


def _pendulum_loop(index, rho0, mg, e1, e2, e3, q, RM, U):
    for k in prange(index.shape[0]):
        _pendulum_body(k, index, rho0, mg, e1, e2, e3, q, RM, U)


_pendulum_par = njit(parallel=True, cache=True)(_pendulum_loop)
_pendulum_ser = njit(cache=True)(_pendulum_loop)


def pendulum(index, rho0, mg, e1, e2, e3, q, RM, U):
    loop = _pendulum_par if index.shape[0] >= PARALLEL_MIN else _pendulum_ser
    loop(index, rho0, mg, e1, e2, e3, q, RM, U)


def _bond_forces_loop(x, q, offsets, incident, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, F, RM):
    for i in prange(x.shape[0]):
        _bond_force_body(i, x, q, offsets, incident, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km,
                         broken, F, RM)  # fmt: skip


_bond_forces_par = njit(parallel=True, cache=True)(_bond_forces_loop)
_bond_forces_ser = njit(cache=True)(_bond_forces_loop)


def bond_forces(x, q, offsets, incident, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, F, RM):
    loop = _bond_forces_par if x.shape[0] >= PARALLEL_MIN else _bond_forces_ser
    loop(x, q, offsets, incident, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, F, RM)


def _bond_energies_loop(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    for k in prange(bond_a.shape[0]):
        _bond_energy_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)


_bond_energies_par = njit(parallel=True, cache=True)(_bond_energies_loop)
_bond_energies_ser = njit(cache=True)(_bond_energies_loop)


def bond_energies(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    loop = _bond_energies_par if bond_a.shape[0] >= PARALLEL_MIN else _bond_energies_ser
    loop(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)


def _bond_break_loop(x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out):
    for k in prange(bond_a.shape[0]):
        _bond_break_body(k, x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out)


_bond_break_par = njit(parallel=True, cache=True)(_bond_break_loop)
_bond_break_ser = njit(cache=True)(_bond_break_loop)


def bond_break(x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out):
    loop = _bond_break_par if bond_a.shape[0] >= PARALLEL_MIN else _bond_break_ser
    loop(x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out)


def _contacts_allpairs_loop(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U):
    for i in prange(x.shape[0]):
        _contact_allpairs_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U)


_contacts_allpairs_par = njit(parallel=True, cache=True)(_contacts_allpairs_loop)
_contacts_allpairs_ser = njit(cache=True)(_contacts_allpairs_loop)


def contacts_allpairs(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U):
    loop = _contacts_allpairs_par if x.shape[0] * x.shape[0] // 64 >= PARALLEL_MIN else _contacts_allpairs_ser
    loop(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U)


def _walls_loop(x, radius, wall_planes, kw, F, U):
    for i in prange(x.shape[0]):
        _wall_body(i, x, radius, wall_planes, kw, F, U)


_walls_par = njit(parallel=True, cache=True)(_walls_loop)
_walls_ser = njit(cache=True)(_walls_loop)


def walls(x, radius, wall_planes, kw, F, U):
    loop = _walls_par if x.shape[0] >= PARALLEL_MIN else _walls_ser
    loop(x, radius, wall_planes, kw, F, U)


def _contacts_list_loop(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U):
    for i in prange(x.shape[0]):
        _contact_list_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U)


_contacts_list_par = njit(parallel=True, cache=True)(_contacts_list_loop)
_contacts_list_ser = njit(cache=True)(_contacts_list_loop)


def contacts_list(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U):
    loop = _contacts_list_par if x.shape[0] >= PARALLEL_MIN else _contacts_list_ser
    loop(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U)


def _neighbor_build_loop(x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count):
    for i in prange(x.shape[0]):
        _neighbor_build_body(i, x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count)


_neighbor_build_par = njit(parallel=True, cache=True)(_neighbor_build_loop)
_neighbor_build_ser = njit(cache=True)(_neighbor_build_loop)


def neighbor_build(x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count):
    loop = _neighbor_build_par if x.shape[0] >= PARALLEL_MIN else _neighbor_build_ser
    loop(x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count)


_cache.__exit__(None, None, None)
