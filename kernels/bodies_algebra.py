"""Scalar algebra for the per-body laws: 3-vectors, 3×3 matrices, quaternions, the SO(3)
and SE(3) maps of paper 001, and a dense LU solve. Plain Python on floats and tuples.

Every function here is compiled by :func:`build` with the decorator of a backend
(``numba.njit(inline="always")`` for the CPU loops of :mod:`kernels.bodies_cpu`,
``numba.cuda.jit(device=True, inline="always")`` for :mod:`kernels.bodies_cuda`) and
runs unchanged as plain Python under the CUDA simulator. Conventions:

* 3-vectors are 3-tuples, 3×3 matrices 9-tuples in row-major order, quaternions
  ``(q0, q1, q2, q3)`` scalar first with the Hamilton product.
* ``T`` (first argument where a constant appears) is the float type of the arrays,
  ``arr.dtype.type``; constants are written ``T(c)`` so that a float32 build stays in
  single precision.
* The only arrays are the scratch matrices of :func:`lu_solve` (given by the caller).

The SO(3)/SE(3) coefficients follow :mod:`granular.rotations` (paper 001, (13)-(17),
(76), (77)): Taylor polynomials in ``θ²`` below 0.5 rad, closed forms above.
"""

import math
from types import SimpleNamespace

# Taylor coefficients in powers of θ² (as in granular.rotations), 8 terms.
SERIES_B = (1 / 6, -1 / 120, 1 / 5040, -1 / 362880, 1 / 39916800, -1 / 6227020800, 1 / 1307674368000,
            -1 / 355687428096000)  # fmt: skip
SERIES_K1 = (1 / 12, 1 / 720, 1 / 30240, 1 / 1209600, 1 / 47900160, 691 / 1307674368000, 1 / 74724249600,
             3617 / 10670622842880000)  # fmt: skip
SERIES_DK1 = (1 / 360, 1 / 7560, 1 / 201600, 1 / 5987520, 691 / 130767436800, 1 / 6227020800,
              3617 / 762187345920000, 43867 / 319318388573184000)  # fmt: skip
SERIES_THRESHOLD = 0.5

B0, B1, B2, B3, B4, B5, B6, B7 = SERIES_B
K0, K1, K2, K3, K4, K5, K6, K7 = SERIES_K1
D0, D1, D2, D3, D4, D5, D6, D7 = SERIES_DK1


NAMES = (
    "add3 sub3 scale3 axpy3 dot3 cross3 finite m3v m3tv m3m m3sub inv3 sym3_solve qmul qrot qrot_inv qnormalize "
    "quat_from_rotvec sinc skew_sq_apply so3_exp coef_a coef_b coef_k1 coef_dk1 so3_tinv_apply "
    "se3_exp_translation se3_tinv_apply lu_solve lu_solve6 lu_solve7 clear sqrt sin cos atan2"
).split()


def _safe(f):
    """``f`` returning NaN where Python's ``math`` raises (an infinite or negative
    argument), as the compiled ``math`` functions do: for the CUDA simulator, which runs
    the laws as Python."""

    def g(x):
        try:
            return f(x)
        except (ValueError, OverflowError):
            return math.nan

    return g


def math_functions(simulated):
    """``(sqrt, sin, cos, atan2)`` for the laws: ``math``'s (typed by Numba) or, for the
    simulator, versions that return NaN instead of raising."""
    if not simulated:
        return math.sqrt, math.sin, math.cos, math.atan2
    return _safe(math.sqrt), _safe(math.sin), _safe(math.cos), math.atan2


def build(jit, simulated=False):
    """Compile every helper with ``jit`` (each sees the compiled versions of those it
    calls); returns a namespace of them, with the math functions the laws must use
    (``sqrt``, ``sin``, ``cos``, ``atan2``; see :func:`math_functions`)."""
    sqrt, sin, cos, atan2 = math_functions(simulated)

    # ------------------------------------------------------------------- vectors
    @jit
    def add3(a, b):
        return a[0] + b[0], a[1] + b[1], a[2] + b[2]

    @jit
    def sub3(a, b):
        return a[0] - b[0], a[1] - b[1], a[2] - b[2]

    @jit
    def scale3(s, a):
        return s * a[0], s * a[1], s * a[2]

    @jit
    def axpy3(s, a, b):
        """``s a + b``."""
        return s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2]

    @jit
    def dot3(a, b):
        return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

    @jit
    def cross3(a, b):
        return a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]

    @jit
    def finite(x):
        """``True`` unless ``x`` is NaN or infinite."""
        return x - x == x - x

    # --------------------------------------------------------------------- matrices

    @jit
    def m3v(A, x):
        """``A x`` for a row-major 9-tuple ``A``."""
        return (
            A[0] * x[0] + A[1] * x[1] + A[2] * x[2],
            A[3] * x[0] + A[4] * x[1] + A[5] * x[2],
            A[6] * x[0] + A[7] * x[1] + A[8] * x[2],
        )

    @jit
    def m3tv(A, x):
        """``Aᵀ x``."""
        return (
            A[0] * x[0] + A[3] * x[1] + A[6] * x[2],
            A[1] * x[0] + A[4] * x[1] + A[7] * x[2],
            A[2] * x[0] + A[5] * x[1] + A[8] * x[2],
        )

    @jit
    def m3m(A, B):
        """``A B``."""
        return (
            A[0] * B[0] + A[1] * B[3] + A[2] * B[6],
            A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
            A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6],
            A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8],
        )

    @jit
    def m3sub(A, B):
        """``A - B``."""
        return (A[0] - B[0], A[1] - B[1], A[2] - B[2], A[3] - B[3], A[4] - B[4], A[5] - B[5], A[6] - B[6],
                A[7] - B[7], A[8] - B[8])  # fmt: skip

    @jit
    def inv3(T, A):
        """``(A⁻¹, det A)`` of a general 3×3 matrix by the adjugate; the inverse is not
        finite when ``det A`` is 0 (the caller checks ``det``)."""
        c00 = A[4] * A[8] - A[5] * A[7]
        c01 = A[5] * A[6] - A[3] * A[8]
        c02 = A[3] * A[7] - A[4] * A[6]
        det = A[0] * c00 + A[1] * c01 + A[2] * c02
        r = T(1.0) / det
        return (
            r * c00, r * (A[2] * A[7] - A[1] * A[8]), r * (A[1] * A[5] - A[2] * A[4]),
            r * c01, r * (A[0] * A[8] - A[2] * A[6]), r * (A[2] * A[3] - A[0] * A[5]),
            r * c02, r * (A[1] * A[6] - A[0] * A[7]), r * (A[0] * A[4] - A[1] * A[3]),
        ), det  # fmt: skip

    @jit
    def sym3_solve(T, a00, a01, a02, a11, a12, a22, b):
        """Solve the symmetric 3×3 system ``A x = b`` by the adjugate (the reference's
        ``_sym3_solve`` of :mod:`granular.bodies.rolling_ball`)."""
        c00 = a11 * a22 - a12 * a12
        c01 = a02 * a12 - a01 * a22
        c02 = a01 * a12 - a02 * a11
        c11 = a00 * a22 - a02 * a02
        c12 = a01 * a02 - a00 * a12
        c22 = a00 * a11 - a01 * a01
        inv = T(1.0) / (a00 * c00 + a01 * c01 + a02 * c02)  # one division, three products
        return (
            (c00 * b[0] + c01 * b[1] + c02 * b[2]) * inv,
            (c01 * b[0] + c11 * b[1] + c12 * b[2]) * inv,
            (c02 * b[0] + c12 * b[1] + c22 * b[2]) * inv,
        )

    # ------------------------------------------------------------------- quaternions

    @jit
    def qmul(p, q):
        """Hamilton product ``p ⊗ q``."""
        return (
            p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3],
            p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2],
            p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
            p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0],
        )

    @jit
    def qrot(T, q, v):
        """``R(q) v`` for a unit quaternion: ``v + q0 t + q_vec × t``, ``t = 2 q_vec × v``."""
        u = (q[1], q[2], q[3])
        t = scale3(T(2.0), cross3(u, v))
        c = cross3(u, t)
        return v[0] + q[0] * t[0] + c[0], v[1] + q[0] * t[1] + c[1], v[2] + q[0] * t[2] + c[2]

    @jit
    def qrot_inv(T, q, v):
        """``R(q)ᵀ v``."""
        return qrot(T, (q[0], -q[1], -q[2], -q[3]), v)

    @jit
    def qnormalize(q):
        n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
        return q[0] / n, q[1] / n, q[2] / n, q[3] / n

    @jit
    def quat_from_rotvec(T, th):
        """``(cos(|θ|/2), sin(|θ|/2) θ/|θ|)``, exact at 0."""
        a = sqrt(dot3(th, th))
        half = T(0.5) * a
        k = T(0.5) * sinc(T, half)
        return cos(half), k * th[0], k * th[1], k * th[2]

    # --------------------------------------------------------------------- SO(3), SE(3)

    @jit
    def sinc(T, x):
        """``sin x / x``, 1 at 0."""
        if x == T(0.0):
            return T(1.0)
        return sin(x) / x

    @jit
    def skew_sq_apply(u, v):
        """``S(u)² v = u × (u × v)``."""
        return cross3(u, cross3(u, v))

    @jit
    def so3_exp(T, th):
        """``exp(S(θ)) = I + a S + b S²``, ``a = sin θ/θ``, ``b = (1 - cos θ)/θ²`` (9-tuple)."""
        x, y, z = th
        angle = sqrt(x * x + y * y + z * z)
        a = sinc(T, angle)
        s = sinc(T, T(0.5) * angle)
        b = T(0.5) * s * s
        xx, yy, zz, xy, xz, yz = x * x, y * y, z * z, x * y, x * z, y * z
        return (
            T(1.0) - b * (yy + zz), -a * z + b * xy, a * y + b * xz,
            a * z + b * xy, T(1.0) - b * (xx + zz), -a * x + b * yz,
            -a * y + b * xz, a * x + b * yz, T(1.0) - b * (xx + yy),
        )  # fmt: skip

    @jit
    def coef_a(T, t):
        """``(1 - cos θ)/θ² = ½ sinc²(θ/2)``."""
        s = sinc(T, T(0.5) * t)
        return T(0.5) * s * s

    @jit
    def coef_b(T, t, t2):
        """``(θ - sin θ)/θ³``."""
        if t < T(SERIES_THRESHOLD):
            return T(B0) + t2 * (
                T(B1) + t2 * (T(B2) + t2 * (T(B3) + t2 * (T(B4) + t2 * (T(B5) + t2 * (T(B6) + t2 * T(B7))))))
            )
        return (t - sin(t)) / (t2 * t)

    @jit
    def coef_k1(T, t, t2):
        """``k1 = (1 - (θ/2) cot(θ/2))/θ²`` (76)."""
        if t < T(SERIES_THRESHOLD):
            return T(K0) + t2 * (
                T(K1) + t2 * (T(K2) + t2 * (T(K3) + t2 * (T(K4) + t2 * (T(K5) + t2 * (T(K6) + t2 * T(K7))))))
            )
        half = T(0.5) * t
        tcot = t * cos(half) / sin(half)
        return (T(1.0) - T(0.5) * tcot) / t2

    @jit
    def coef_dk1(T, t, t2):
        """``k1'(θ)/θ = (θ²/(1 - cos θ) + θ cot(θ/2) - 4)/(2θ⁴)`` (77)."""
        if t < T(SERIES_THRESHOLD):
            return T(D0) + t2 * (
                T(D1) + t2 * (T(D2) + t2 * (T(D3) + t2 * (T(D4) + t2 * (T(D5) + t2 * (T(D6) + t2 * T(D7))))))
            )
        half = T(0.5) * t
        sh = sin(half)
        tcot = t * cos(half) / sh
        return (T(0.5) * t2 / (sh * sh) + tcot - T(4.0)) / (T(2.0) * t2 * t2)

    @jit
    def so3_tinv_apply(T, th, v):
        """``T_SO3⁻¹(θ) v = v + ½ θ × v + k1 θ × (θ × v)`` (16), (76)."""
        t2 = dot3(th, th)
        k1 = coef_k1(T, sqrt(t2), t2)
        c = cross3(th, v)
        cc = cross3(th, c)
        return v[0] + T(0.5) * c[0] + k1 * cc[0], v[1] + T(0.5) * c[1] + k1 * cc[1], v[2] + T(0.5) * c[2] + k1 * cc[2]

    @jit
    def se3_exp_translation(T, nT, nR):
        """Translation part of (13): ``T_SO3ᵀ(n_R) n_T = n_T + a n_R × n_T + b n_R × (n_R × n_T)``."""
        t2 = dot3(nR, nR)
        t = sqrt(t2)
        a = coef_a(T, t)
        b = coef_b(T, t, t2)
        c = cross3(nR, nT)
        cc = cross3(nR, c)
        return nT[0] + a * c[0] + b * cc[0], nT[1] + a * c[1] + b * cc[1], nT[2] + a * c[2] + b * cc[2]

    @jit
    def se3_tinv_apply(T, nT, nR, U, Om):
        """``T_SE3⁻¹(n) [U, Ω]`` (13), (16), (17): returns ``(ṅ_T, ṅ_R)``.

        ``ṅ_R = Ω + ½ n_R × Ω + k1 n_R × (n_R × Ω)``,
        ``ṅ_T = U + ½ (n_R × U + n_T × Ω) + k1 (n_R × (n_R × U) + n_T × (n_R × Ω) + n_R × (n_T × Ω))
        + k2 n_R × (n_R × Ω)``, ``k2 = (n_R·n_T) k1'/θ``.
        """
        t2 = dot3(nR, nR)
        t = sqrt(t2)
        k1 = coef_k1(T, t, t2)
        k2 = dot3(nR, nT) * coef_dk1(T, t, t2)
        rO = cross3(nR, Om)
        rU = cross3(nR, U)
        tO = cross3(nT, Om)
        rrO = cross3(nR, rO)
        rrU = cross3(nR, rU)
        trO = cross3(nT, rO)
        rtO = cross3(nR, tO)
        half = T(0.5)
        dR = (
            Om[0] + half * rO[0] + k1 * rrO[0],
            Om[1] + half * rO[1] + k1 * rrO[1],
            Om[2] + half * rO[2] + k1 * rrO[2],
        )
        dT = (
            U[0] + half * (rU[0] + tO[0]) + k1 * (rrU[0] + trO[0] + rtO[0]) + k2 * rrO[0],
            U[1] + half * (rU[1] + tO[1]) + k1 * (rrU[1] + trO[1] + rtO[1]) + k2 * rrO[1],
            U[2] + half * (rU[2] + tO[2]) + k1 * (rrU[2] + trO[2] + rtO[2]) + k2 * rrO[2],
        )
        return dT, dR

    # ------------------------------------------------------------------- dense solve

    @jit
    def lu_solve(T, A, n):
        """Solve ``A[:n, :n] x = A[:n, n]`` in place by Gaussian elimination with partial
        pivoting (the solution is left in column ``n``). ``A``: (≥ n, ≥ n + 1) scratch array.

        Returns ``False`` when a pivot is zero or not a number (singular or non-finite
        matrix); the column then holds no solution.
        """
        for k in range(n):
            p = k
            amax = abs(A[k, k])
            for r in range(k + 1, n):
                v = abs(A[r, k])
                if v > amax:
                    amax = v
                    p = r
            if not (amax > T(0.0)):
                return False
            if p != k:
                for c in range(k, n + 1):
                    tmp = A[k, c]
                    A[k, c] = A[p, c]
                    A[p, c] = tmp
            inv = T(1.0) / A[k, k]
            for r in range(k + 1, n):
                f = A[r, k] * inv
                if f != T(0.0):
                    for c in range(k + 1, n + 1):
                        A[r, c] -= f * A[k, c]
        for k in range(n - 1, -1, -1):
            s = A[k, n]
            for c in range(k + 1, n):
                s -= A[k, c] * A[c, n]
            A[k, n] = s / A[k, k]
        return True

    def fixed_lu(n):
        """:func:`lu_solve` for a size ``n`` known when compiling (its loops unroll) and
        without the skip of zero multipliers (a branch that costs more than it saves on
        full matrices)."""

        @jit
        def lu_fixed(T, A):
            for k in range(n):
                p = k
                amax = abs(A[k, k])
                for r in range(k + 1, n):
                    v = abs(A[r, k])
                    if v > amax:
                        amax = v
                        p = r
                if not (amax > T(0.0)):
                    return False
                if p != k:
                    for c in range(k, n + 1):
                        tmp = A[k, c]
                        A[k, c] = A[p, c]
                        A[p, c] = tmp
                inv = T(1.0) / A[k, k]
                for r in range(k + 1, n):
                    f = A[r, k] * inv
                    for c in range(k + 1, n + 1):
                        A[r, c] -= f * A[k, c]
            for k in range(n - 1, -1, -1):
                s = A[k, n]
                for c in range(k + 1, n):
                    s -= A[k, c] * A[c, n]
                A[k, n] = s / A[k, k]
            return True

        return lu_fixed

    lu_solve6 = fixed_lu(6)
    lu_solve7 = fixed_lu(7)

    @jit
    def clear(T, A, n, m):
        """``A[:n, :m] = 0``."""
        for r in range(n):
            for c in range(m):
                A[r, c] = T(0.0)

    return SimpleNamespace(**{k: v for k, v in locals().items() if k in NAMES})
