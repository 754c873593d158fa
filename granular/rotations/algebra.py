"""Array helpers of the rotation maps: the array module of an input, ``dot``, ``cross``,
``skew`` and matrix-vector products over the last axes (NumPy or CuPy, batched over the
leading axes; see :mod:`granular.rotations`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["array_module", "cross", "dot", "matvec", "matvec_t", "skew"]


def array_module(*arrays):
    """Return ``cupy`` if any argument is a CuPy array, else ``numpy``.

    Parameters
    ----------
    *arrays : object
        Arrays (or anything else; only CuPy arrays count).

    Returns
    -------
    module
        :mod:`cupy` or :mod:`numpy`.
    """
    for a in arrays:
        if type(a).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
    return np


def dot(a, b):
    """``a · b`` over the last axis (NumPy or CuPy arrays, broadcasting the leading axes).

    Parameters
    ----------
    a, b : array, (..., k) float
        Vectors.

    Returns
    -------
    array, (...) float
        The dot products (units: the product of the inputs').
    """
    return (a * b).sum(axis=-1)


def matvec(A, v):
    """``A v`` over the last two axes, broadcasting the leading ones (NumPy or CuPy).

    Each entry is the explicit sum ``(A v)_i = A_i0 v_0 + A_i1 v_1 + ...``, added from the
    left, one elementwise product and sum per column: every row of the result is computed
    with the same operations whatever the stacking of ``A`` and ``v`` (one matrix for all
    rows, one per row, a batch of one or of a million), on NumPy and on CuPy alike. A
    matrix product (BLAS or cuBLAS) may round a row differently depending on the batch
    around it, so a body alone and the same body in a batch would part in the last bit.

    Parameters
    ----------
    A : array, (..., m, k) float
        Matrices.
    v : array, (..., k) float
        Vectors.

    Returns
    -------
    array, (..., m) float
        The products.
    """
    k = A.shape[-1]
    if v.shape[-1:] != (k,):
        raise ValueError(f"matvec: A has {k} columns, v has shape {tuple(v.shape)}")
    if k == 0:
        xp = array_module(A, v)
        shape = np.broadcast_shapes(A.shape[:-1], v.shape[:-1] + (1,))
        return xp.zeros(shape, dtype=xp.result_type(A, v))
    out = A[..., :, 0] * v[..., None, 0]
    for j in range(1, k):
        out = out + A[..., :, j] * v[..., None, j]
    return out


def matvec_t(A, v):
    """``Aᵀ v`` over the last two axes, broadcasting the leading ones: the explicit sum
    ``(Aᵀ v)_j = A_0j v_0 + A_1j v_1 + ...`` from the left, the same operations for every
    row whatever the stacking (see :func:`matvec`).

    Parameters
    ----------
    A : array, (..., m, k) float
        Matrices.
    v : array, (..., m) float
        Vectors.

    Returns
    -------
    array, (..., k) float
        The products.
    """
    m = A.shape[-2]
    if v.shape[-1:] != (m,):
        raise ValueError(f"matvec_t: A has {m} rows, v has shape {tuple(v.shape)}")
    if m == 0:
        xp = array_module(A, v)
        shape = np.broadcast_shapes(A.shape[:-2] + A.shape[-1:], v.shape[:-1] + (1,))
        return xp.zeros(shape, dtype=xp.result_type(A, v))
    out = A[..., 0, :] * v[..., 0, None]
    for i in range(1, m):
        out = out + A[..., i, :] * v[..., i, None]
    return out


def cross(a, b):
    """``a × b`` over the last axis, broadcasting the leading axes (NumPy or CuPy).

    Parameters
    ----------
    a, b : array, (..., 3) float
        Vectors.

    Returns
    -------
    array, (..., 3) float
        The cross products.
    """
    xp = array_module(a, b)
    a, b = xp.broadcast_arrays(a, b)
    return xp.stack(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ],
        axis=-1,
    )


def skew(v):
    """The skew-symmetric matrix ``S(v)`` with ``S(v) w = v × w``.

    Parameters
    ----------
    v : array, (..., 3) float
        Vectors.

    Returns
    -------
    array, (..., 3, 3) float
        ``S(v)``, in the units of ``v``.
    """
    xp = array_module(v)
    z = xp.zeros_like(v[..., 0])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return xp.stack(
        [
            xp.stack([z, -w, y], axis=-1),
            xp.stack([w, z, -x], axis=-1),
            xp.stack([-y, x, z], axis=-1),
        ],
        axis=-2,
    )


def _check_last(arr, k, name):
    if arr.shape[-1:] != (k,):
        raise ValueError(f"{name} must have shape (..., {k}), got {tuple(arr.shape)}")
