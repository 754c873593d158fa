"""GPU kernels: the bodies of :mod:`kernels.particles` compiled by
``numba.cuda.jit(device=True)``, one thread per particle, launched on CuPy arrays (through
``__cuda_array_interface__``) or, under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``), on NumPy arrays.

Every launcher has the same signature as its twin in :mod:`kernels.cpu`. Launches go to
the default stream, the one CuPy uses unless told otherwise, so they are ordered with
CuPy's own work without extra synchronisation.
"""

import os

from numba import cuda

from . import interactions, particles

# The simulator runs every thread of a block as a Python thread, padding included, so
# small blocks keep its tests fast; on hardware 256 threads per block.
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
THREADS_PER_BLOCK = 8 if SIMULATED else 256

B = particles.build(cuda.jit(device=True))
I = interactions.build(cuda.jit(device=True), B)

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

name = "cuda"


def _blocks(n):
    return max(1, (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK)


@cuda.jit
def _advance_kernel(scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _advance_body(i, scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status)


@cuda.jit
def _finish_kernel(scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status):
    i = cuda.grid(1)
    if i < x1.shape[0]:
        _finish_body(i, scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status)


@cuda.jit
def _gravity_kernel(m, g1, g2, g3, F):
    i = cuda.grid(1)
    if i < F.shape[0]:
        _gravity_body(i, m, g1, g2, g3, F)


@cuda.jit
def _pendulum_kernel(index, rho0, mg, e1, e2, e3, q, RM, U):
    k = cuda.grid(1)
    if k < index.shape[0]:
        _pendulum_body(k, index, rho0, mg, e1, e2, e3, q, RM, U)


def advance(scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status):
    n = x.shape[0]
    _advance_kernel[_blocks(n), THREADS_PER_BLOCK](scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status)


def finish(scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status):
    n = x1.shape[0]
    _finish_kernel[_blocks(n), THREADS_PER_BLOCK](scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status)


def gravity(m, g1, g2, g3, F):
    n = F.shape[0]
    _gravity_kernel[_blocks(n), THREADS_PER_BLOCK](m, g1, g2, g3, F)


def pendulum(index, rho0, mg, e1, e2, e3, q, RM, U):
    n = index.shape[0]
    if n:
        _pendulum_kernel[_blocks(n), THREADS_PER_BLOCK](index, rho0, mg, e1, e2, e3, q, RM, U)


@cuda.jit
def _bond_eval_kernel(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    k = cuda.grid(1)
    if k < bond_a.shape[0]:
        _bond_eval_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)


@cuda.jit
def _bond_gather_kernel(offsets, incident, bond_a, out, F, RM):
    i = cuda.grid(1)
    if i < F.shape[0]:
        _bond_gather_body(i, offsets, incident, bond_a, out, F, RM)


@cuda.jit
def _bond_energies_kernel(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    k = cuda.grid(1)
    if k < bond_a.shape[0]:
        _bond_energy_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out)


@cuda.jit
def _bond_break_kernel(x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out):
    k = cuda.grid(1)
    if k < bond_a.shape[0]:
        _bond_break_body(k, x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out)


@cuda.jit
def _contacts_allpairs_kernel(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _contact_allpairs_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U)


@cuda.jit
def _walls_kernel(x, radius, wall_planes, kw, F, U):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _wall_body(i, x, radius, wall_planes, kw, F, U)


def bond_forces(x, q, offsets, incident, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out, F, RM):
    """Both passes: evaluate every bond into ``out`` (B, 9), then gather per particle."""
    nb = bond_a.shape[0]
    if nb:
        _bond_eval_kernel[_blocks(nb), THREADS_PER_BLOCK](
            x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out
        )
    _bond_gather_kernel[_blocks(F.shape[0]), THREADS_PER_BLOCK](offsets, incident, bond_a, out, F, RM)


def bond_energies(x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
    if bond_a.shape[0]:
        _bond_energies_kernel[_blocks(bond_a.shape[0]), THREADS_PER_BLOCK](
            x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out
        )


def bond_break(x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out):
    if bond_a.shape[0]:
        _bond_break_kernel[_blocks(bond_a.shape[0]), THREADS_PER_BLOCK](
            x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out
        )


def contacts_allpairs(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U):
    _contacts_allpairs_kernel[_blocks(x.shape[0]), THREADS_PER_BLOCK](
        x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U
    )


def walls(x, radius, wall_planes, kw, F, U):
    _walls_kernel[_blocks(x.shape[0]), THREADS_PER_BLOCK](x, radius, wall_planes, kw, F, U)


@cuda.jit
def _contacts_list_kernel(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _contact_list_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U)


@cuda.jit
def _neighbor_build_kernel(x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _neighbor_build_body(i, x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count)


def contacts_list(x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U):
    _contacts_list_kernel[_blocks(x.shape[0]), THREADS_PER_BLOCK](
        x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U
    )


def neighbor_build(x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count):
    _neighbor_build_kernel[_blocks(x.shape[0]), THREADS_PER_BLOCK](
        x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count
    )
