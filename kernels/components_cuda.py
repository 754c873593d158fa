"""The GPU kernels of :mod:`kernels.components` (hooking and pointer jumping), in a
module of their own: the CUDA simulator swaps the module-level ``cuda`` of a kernel's
globals, so ``cuda`` must be one here. Imported on first use by
:func:`kernels.components.label_cuda`."""

from numba import cuda

from . import laws
from .cache import cuda_kernel
from .cuda import TPB

min_image = cuda.jit(device=True)(laws.min_image)

__all__ = ["TPB", "hook_bonds", "hook_contacts", "jump", "start"]


@cuda.jit(device=True)
def root(parent, i):
    while parent[i] != i:
        i = parent[i]
    return i


@cuda.jit(device=True)
def hook(parent, i, j, changed):
    ri = root(parent, i)
    rj = root(parent, j)
    if ri != rj:
        lo = min(ri, rj)
        hi = max(ri, rj)
        cuda.atomic.min(parent, hi, lo)
        changed[0] = 1


@cuda_kernel()
def start(parent):
    i = cuda.grid(1)
    if i < parent.shape[0]:
        parent[i] = i


@cuda_kernel()
def hook_bonds(a, b, broken, parent, changed):
    k = cuda.grid(1)
    if k < a.shape[0] and broken[k] == 0:
        hook(parent, a[k], b[k], changed)


@cuda_kernel()
def hook_contacts(x, radius, nbr, count, period, parent, changed):
    i = cuda.grid(1)
    if i < parent.shape[0]:
        for s in range(count[i]):
            j = nbr[i, s]
            d0 = x[i, 0] - x[j, 0]
            d1 = x[i, 1] - x[j, 1]
            d2 = x[i, 2] - x[j, 2]
            if period.shape[0] > 0:
                T = x.dtype.type
                d0 = min_image(T, d0, period[0, 1], period[0, 2])
                d1 = min_image(T, d1, period[1, 1], period[1, 2])
                d2 = min_image(T, d2, period[2, 1], period[2, 2])
            reach = radius[i] + radius[j]
            if d0 * d0 + d1 * d1 + d2 * d2 < reach * reach:
                hook(parent, i, j, changed)


@cuda_kernel()
def jump(parent):
    i = cuda.grid(1)
    if i < parent.shape[0]:
        parent[i] = root(parent, i)
