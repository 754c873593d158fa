"""The GPU kernels of the dense packing: the row functions of :mod:`kernels.packing`, one
thread per particle. In a module of their own (the CUDA simulator swaps the module-level
``cuda`` of a kernel's globals); imported on first use by
:mod:`granular.particles.packing` when it packs on a GPU."""

from numba import cuda

from . import packing as P
from .cache import cuda_kernel
from .cuda import TPB

__all__ = ["TPB", "advance", "cells", "forces", "neighbors", "retreat"]

_cell_rows = cuda.jit(device=True)(P.cell_rows)
_neighbor_rows = cuda.jit(device=True)(P.neighbor_rows)
_force_rows = cuda.jit(device=True)(P.force_rows)
_advance_rows = cuda.jit(device=True)(P.advance_rows)
_retreat_rows = cuda.jit(device=True)(P.retreat_rows)


@cuda_kernel()
def cells(x, lo, inv_cell, dims, cid):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _cell_rows(i, i + 1, x, lo, inv_cell, dims, cid)


@cuda_kernel()
def neighbors(x, rad, skin, cid, start, order, dims, nbr_start, nbr, count_only):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _neighbor_rows(i, i + 1, x, rad, skin, cid, start, order, dims, nbr_start, nbr, count_only)


@cuda_kernel()
def forces(x, rad, nbr_start, nbr, code, geom, f, e_i, ov_i):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _force_rows(i, i + 1, x, rad, nbr_start, nbr, code, geom, f, e_i, ov_i)


@cuda_kernel()
def advance(x, v, f, x_ref, dt, mix_a, mix_b, disp2):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _advance_rows(i, i + 1, x, v, f, x_ref, dt, mix_a, mix_b, disp2)


@cuda_kernel()
def retreat(x, v, back):
    i = cuda.grid(1)
    if i < x.shape[0]:
        _retreat_rows(i, i + 1, x, v, back)
