"""Connected components of a particle graph: the fragments of a bonded solid.

The graph's vertices are the particles; its edges are the intact bonds (``broken[k] ==
0``) and, when asked, the touching pairs of the neighbour list (``|x_i - x_j| < r_i +
r_j``). Every particle gets as label the smallest particle index of its component, a
number that depends on the graph only (not on the order of the edges, the thread count
or the backend), so the CPU and the GPU agree exactly.

CPU (:func:`label_cpu`): one serial union-find pass over the edges; a union links the
root with the larger index under the one with the smaller, so a root is always its
set's smallest index, then every particle takes its root (path halving keeps the trees
shallow).

GPU (:func:`label_cuda`): the same invariant reached by rounds of *hooking* and
*pointer jumping* (the connected-components scheme of Shiloach & Vishkin, J. Algorithms
3 (1982) 57-67, in the form of Soman, Kishore & Narayanan, IPDPSW 2010): each edge whose
ends have different roots hooks the larger root under the smaller with an atomic
minimum, then each particle's parent pointer jumps to its root; the rounds stop when no
edge hooked anything (one flag read back per round, O(log N) rounds in practice). A hook
lost to a concurrent smaller one is found again in the next round. Roots only ever point
to smaller indices, so the final roots are the smallest indices of the components.
"""

from __future__ import annotations

import numpy as np

from . import laws

_CPU = None


def _build_cpu():
    from numba import njit

    @njit(cache=True)
    def find(parent, i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    @njit(cache=True)
    def union(parent, i, j):
        ri = find(parent, i)
        rj = find(parent, j)
        if ri < rj:
            parent[rj] = ri
        elif rj < ri:
            parent[ri] = rj

    min_image = njit(cache=True)(laws.min_image)

    @njit(cache=True)
    def label(a, b, broken, use_contacts, x, radius, nbr, count, period, parent):
        n = parent.shape[0]
        for i in range(n):
            parent[i] = i
        for k in range(a.shape[0]):
            if broken[k] == 0:
                union(parent, a[k], b[k])
        if use_contacts:
            for i in range(n):
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
                        union(parent, i, j)
        for i in range(n):
            parent[i] = find(parent, i)

    return label


def _period(period, dtype):
    """The periodic box as the kernels take it ((3, 3) rows ``(lo, L, 1/L)``), or (0, 3)."""
    return np.zeros((0, 3), dtype) if period is None else np.asarray(period, dtype).reshape(-1, 3)


def label_cpu(a, b, broken, x, radius, nbr=None, count=None, period=None) -> np.ndarray:
    """Component labels (the smallest particle index of each component), (N,) int64.

    ``a``, ``b``, ``broken``: the bonds' ends and flags (B,); ``x`` (N, 3), ``radius``
    (N,); ``nbr`` (N, M) and ``count`` (N,): a neighbour list whose touching pairs join
    components too (``None``: bonds only); ``period``: a periodic box's (3, 3) rows
    ``(lo, L, 1/L)`` (:class:`kernels.layout.Contacts`), where touching is measured by the
    minimum image."""
    global _CPU
    if _CPU is None:
        _CPU = _build_cpu()
    n = radius.shape[0]
    parent = np.empty(n, dtype=np.int64)
    use = nbr is not None
    if not use:
        nbr = np.zeros((n, 0), dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
    _CPU(a, b, broken, use, x, radius, nbr, count, _period(period, x.dtype), parent)
    return parent


def label_cuda(xp, to_device, a, b, broken, x, radius, nbr=None, count=None, threads=None, period=None):
    """:func:`label_cpu` on the GPU: the labels as an ``xp`` array (N,) int64, computed on
    the device; one flag is read back per round. ``to_device`` makes numba views of
    ``xp`` arrays (NumPy arrays under the CUDA simulator)."""
    from .components_cuda import TPB, hook_bonds, hook_contacts, jump, start

    tpb = threads or TPB
    n = radius.shape[0]
    parent = xp.empty(n, dtype=np.int64)
    changed = xp.zeros(1, dtype=np.int32)
    dp, dc = to_device(parent), to_device(changed)
    nb = int(a.shape[0])

    def grid(m):
        return max(1, (m + tpb - 1) // tpb)

    start[grid(n), tpb](dp)
    args_b = (to_device(a), to_device(b), to_device(broken))
    box = to_device(xp.asarray(_period(period, x.dtype)))
    args_c = None if nbr is None else (to_device(x), to_device(radius), to_device(nbr), to_device(count), box)
    for _ in range(n + 1):  # each round joins at least two roots; in practice O(log N) rounds
        changed[0] = 0
        if nb:
            hook_bonds[grid(nb), tpb](*args_b, dp, dc)
        if args_c is not None:
            hook_contacts[grid(n), tpb](*args_c, dp, dc)
        jump[grid(n), tpb](dp)
        if int(changed[0]) == 0:
            break
    return parent
