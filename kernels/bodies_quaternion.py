"""Quaternion matrices and small fixed-size products for the Livens laws
(:mod:`kernels.bodies_livens`), on tuples: ``G(a) = [-a⃗, a0 I - â]``,
``E(a) = [-a⃗, a0 I + â]`` (paper 002, (35); 3×4, 12-tuples row-major), ``w̄`` with
``G(a)ᵀ w = w̄ a`` (137) and ``Q(a) = [a, G(a)ᵀ]`` (33a) (4×4, 16-tuples), matrix-vector and
matrix-matrix products of those shapes. Compiled by :func:`build` with a backend's
decorator, like :mod:`kernels.bodies_algebra`.
"""

from types import SimpleNamespace


def build(jit):
    """Compile the helpers with ``jit``; returns a namespace of them."""

    @jit
    def zeros16(T):
        z = T(0.0)
        return (z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z)

    @jit
    def delta(T, a, b):
        if a == b:
            return T(1.0)
        return T(0.0)

    @jit
    def qG(a):
        return (-a[1], a[0], a[3], -a[2], -a[2], -a[3], a[0], a[1], -a[3], a[2], -a[1], a[0])

    @jit
    def qE(a):
        return (-a[1], a[0], -a[3], a[2], -a[2], a[3], a[0], -a[1], -a[3], -a[2], a[1], a[0])

    @jit
    def qbar(w):
        """``w̄`` with ``G(a)ᵀ w = w̄ a`` (137)."""
        z = w[0] - w[0]
        return (z, -w[0], -w[1], -w[2], w[0], z, w[2], -w[1], w[1], -w[2], z, w[0], w[2], w[1], -w[0], z)

    @jit
    def qQ(a):
        """``Q(a) = [a, G(a)ᵀ]`` (33a), 4×4."""
        return (a[0], -a[1], -a[2], -a[3], a[1], a[0], -a[3], a[2], a[2], a[3], a[0], -a[1], a[3], -a[2], a[1], a[0])

    @jit
    def m34v(M, v):
        """``M v`` for a 3×4 ``M``."""
        return (M[0] * v[0] + M[1] * v[1] + M[2] * v[2] + M[3] * v[3],
                M[4] * v[0] + M[5] * v[1] + M[6] * v[2] + M[7] * v[3],
                M[8] * v[0] + M[9] * v[1] + M[10] * v[2] + M[11] * v[3])  # fmt: skip

    @jit
    def m34tv(M, w):
        """``Mᵀ w`` for a 3×4 ``M``."""
        return (M[0] * w[0] + M[4] * w[1] + M[8] * w[2], M[1] * w[0] + M[5] * w[1] + M[9] * w[2],
                M[2] * w[0] + M[6] * w[1] + M[10] * w[2], M[3] * w[0] + M[7] * w[1] + M[11] * w[2])  # fmt: skip

    @jit
    def m44v(M, v):
        return (M[0] * v[0] + M[1] * v[1] + M[2] * v[2] + M[3] * v[3],
                M[4] * v[0] + M[5] * v[1] + M[6] * v[2] + M[7] * v[3],
                M[8] * v[0] + M[9] * v[1] + M[10] * v[2] + M[11] * v[3],
                M[12] * v[0] + M[13] * v[1] + M[14] * v[2] + M[15] * v[3])  # fmt: skip

    @jit
    def m44tv(M, v):
        return (M[0] * v[0] + M[4] * v[1] + M[8] * v[2] + M[12] * v[3],
                M[1] * v[0] + M[5] * v[1] + M[9] * v[2] + M[13] * v[3],
                M[2] * v[0] + M[6] * v[1] + M[10] * v[2] + M[14] * v[3],
                M[3] * v[0] + M[7] * v[1] + M[11] * v[2] + M[15] * v[3])  # fmt: skip

    @jit
    def arr44(A, b):
        return (A[b, 0, 0], A[b, 0, 1], A[b, 0, 2], A[b, 0, 3], A[b, 1, 0], A[b, 1, 1], A[b, 1, 2], A[b, 1, 3],
                A[b, 2, 0], A[b, 2, 1], A[b, 2, 2], A[b, 2, 3], A[b, 3, 0], A[b, 3, 1], A[b, 3, 2], A[b, 3, 3])  # fmt: skip

    @jit
    def arr33(A, b):
        return (A[b, 0, 0], A[b, 0, 1], A[b, 0, 2], A[b, 1, 0], A[b, 1, 1], A[b, 1, 2], A[b, 2, 0], A[b, 2, 1],
                A[b, 2, 2])  # fmt: skip

    @jit
    def j_cols(T, Jm, Gt):
        """``2 Gᵀ J`` (4×3, 12-tuple) for the 3×4 ``Gt`` (= G) and the 3×3 ``Jm``."""
        two = T(2.0)
        out0 = two * (Gt[0] * Jm[0] + Gt[4] * Jm[3] + Gt[8] * Jm[6])
        out1 = two * (Gt[0] * Jm[1] + Gt[4] * Jm[4] + Gt[8] * Jm[7])
        out2 = two * (Gt[0] * Jm[2] + Gt[4] * Jm[5] + Gt[8] * Jm[8])
        out3 = two * (Gt[1] * Jm[0] + Gt[5] * Jm[3] + Gt[9] * Jm[6])
        out4 = two * (Gt[1] * Jm[1] + Gt[5] * Jm[4] + Gt[9] * Jm[7])
        out5 = two * (Gt[1] * Jm[2] + Gt[5] * Jm[5] + Gt[9] * Jm[8])
        out6 = two * (Gt[2] * Jm[0] + Gt[6] * Jm[3] + Gt[10] * Jm[6])
        out7 = two * (Gt[2] * Jm[1] + Gt[6] * Jm[4] + Gt[10] * Jm[7])
        out8 = two * (Gt[2] * Jm[2] + Gt[6] * Jm[5] + Gt[10] * Jm[8])
        out9 = two * (Gt[3] * Jm[0] + Gt[7] * Jm[3] + Gt[11] * Jm[6])
        out10 = two * (Gt[3] * Jm[1] + Gt[7] * Jm[4] + Gt[11] * Jm[7])
        out11 = two * (Gt[3] * Jm[2] + Gt[7] * Jm[5] + Gt[11] * Jm[8])
        return (out0, out1, out2, out3, out4, out5, out6, out7, out8, out9, out10, out11)

    @jit
    def m43_m34(A, B):
        """``A B`` (4×3 times 3×4) as a 16-tuple."""
        return (A[0] * B[0] + A[1] * B[4] + A[2] * B[8], A[0] * B[1] + A[1] * B[5] + A[2] * B[9],
                A[0] * B[2] + A[1] * B[6] + A[2] * B[10], A[0] * B[3] + A[1] * B[7] + A[2] * B[11],
                A[3] * B[0] + A[4] * B[4] + A[5] * B[8], A[3] * B[1] + A[4] * B[5] + A[5] * B[9],
                A[3] * B[2] + A[4] * B[6] + A[5] * B[10], A[3] * B[3] + A[4] * B[7] + A[5] * B[11],
                A[6] * B[0] + A[7] * B[4] + A[8] * B[8], A[6] * B[1] + A[7] * B[5] + A[8] * B[9],
                A[6] * B[2] + A[7] * B[6] + A[8] * B[10], A[6] * B[3] + A[7] * B[7] + A[8] * B[11],
                A[9] * B[0] + A[10] * B[4] + A[11] * B[8], A[9] * B[1] + A[10] * B[5] + A[11] * B[9],
                A[9] * B[2] + A[10] * B[6] + A[11] * B[10], A[9] * B[3] + A[10] * B[7] + A[11] * B[11])  # fmt: skip

    @jit
    def m44m44(A, B):
        """``A B`` for 4×4 16-tuples."""
        return (A[0] * B[0] + A[1] * B[4] + A[2] * B[8] + A[3] * B[12],
                A[0] * B[1] + A[1] * B[5] + A[2] * B[9] + A[3] * B[13],
                A[0] * B[2] + A[1] * B[6] + A[2] * B[10] + A[3] * B[14],
                A[0] * B[3] + A[1] * B[7] + A[2] * B[11] + A[3] * B[15],
                A[4] * B[0] + A[5] * B[4] + A[6] * B[8] + A[7] * B[12],
                A[4] * B[1] + A[5] * B[5] + A[6] * B[9] + A[7] * B[13],
                A[4] * B[2] + A[5] * B[6] + A[6] * B[10] + A[7] * B[14],
                A[4] * B[3] + A[5] * B[7] + A[6] * B[11] + A[7] * B[15],
                A[8] * B[0] + A[9] * B[4] + A[10] * B[8] + A[11] * B[12],
                A[8] * B[1] + A[9] * B[5] + A[10] * B[9] + A[11] * B[13],
                A[8] * B[2] + A[9] * B[6] + A[10] * B[10] + A[11] * B[14],
                A[8] * B[3] + A[9] * B[7] + A[10] * B[11] + A[11] * B[15],
                A[12] * B[0] + A[13] * B[4] + A[14] * B[8] + A[15] * B[12],
                A[12] * B[1] + A[13] * B[5] + A[14] * B[9] + A[15] * B[13],
                A[12] * B[2] + A[13] * B[6] + A[14] * B[10] + A[15] * B[14],
                A[12] * B[3] + A[13] * B[7] + A[14] * B[11] + A[15] * B[15])  # fmt: skip

    @jit
    def tuple_neg(a):
        return (-a[0], -a[1], -a[2], -a[3], -a[4], -a[5], -a[6], -a[7], -a[8], -a[9], -a[10], -a[11], -a[12], -a[13],
                -a[14], -a[15])  # fmt: skip

    @jit
    def tuple_add(a, b):
        return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6],
                a[7] + b[7], a[8] + b[8], a[9] + b[9], a[10] + b[10], a[11] + b[11], a[12] + b[12], a[13] + b[13],
                a[14] + b[14], a[15] + b[15])  # fmt: skip

    return SimpleNamespace(**{k: v for k, v in locals().items() if k != "jit"})
