"""Per-body laws of paper 001 (Holzinger, Gerstmayr & Schöberl): the RK4 Lie-group
scheme (79)-(87) in unified local velocity coordinates and the Newton-Euler RK4
reference, one body per call, a block of ``steps`` steps per call.

:func:`build` compiles them with a backend's decorator on top of the helpers of
:mod:`kernels.bodies_algebra`; :mod:`kernels.bodies_cpu` and :mod:`kernels.bodies_cuda`
loop or launch them over bodies. The host side is :mod:`granular.bodies.ulvc`.

Arrays (``N`` bodies; ``B`` = 1 or N rows of a parameter; float64 or float32):

* parameters: ``D``, ``Dinv`` (B, 6, 6) of (54); ``mass`` (B,); ``J``, ``Jinv`` (B, 3, 3);
* loads: ``flags`` bit 0 body-frame point forces ``fbody`` (B, K, 3), bit 1 spatial
  point forces ``fspat`` (B, K, 3) at ``points`` (B, K, 3) (body frame, from the centre
  of mass), bit 2 body torque ``tbody`` (B, 3), bit 3 spatial torque ``tspat`` (B, 3);
  ``scales`` (steps, 3): the load factor at ``t``, ``t + h/2``, ``t + h`` of each step;
* state in: ``R`` (N, 3, 3), ``x`` (N, 3), ``w`` (N, 6) [ULVC] or ``v``, ``Om`` (N, 3)
  [Newton-Euler]; state out: the same names with suffix ``1``;
* ``status`` (N, 4) int32: failure kind, step of the block (1-based), quantity, 0;
  ``value`` (N,) float64: the failing value (NaN for a non-finite state).

Quantities: ULVC 0 ``w``, 1 ``R``, 2 ``x``; Newton-Euler 0 ``Omega``, 1 ``v``, 2 ``R``,
3 ``x``.
"""

import math
from types import SimpleNamespace

NOT_FINITE = 3
FORCE_BODY, FORCE_SPATIAL, TORQUE_BODY, TORQUE_SPATIAL = 1, 2, 4, 8


def build(jit, H, law_jit=None):
    """Compile the ULVC laws on the helpers ``H`` (:mod:`kernels.bodies_algebra`):
    helpers with ``jit``, the per-body laws with ``law_jit`` (default ``jit``)."""
    law = jit if law_jit is None else law_jit
    add3, scale3, axpy3, cross3 = H.add3, H.scale3, H.axpy3, H.cross3
    m3v, m3tv, m3m, finite = H.m3v, H.m3tv, H.m3m, H.finite
    so3_exp, so3_tinv_apply = H.so3_exp, H.so3_tinv_apply
    se3_exp_translation, se3_tinv_apply = H.se3_exp_translation, H.se3_tinv_apply

    @jit
    def row(a, i):
        """Row of a parameter for body ``i``: ``i`` (one row per body) or 0 (shared). ``i - i``
        keeps the index type (a prange index is unsigned; mixing it with a signed literal
        would give a float)."""
        if a.shape[0] > 1:
            return i
        return i - i

    @jit
    def mat3(A, b):
        return (A[b, 0, 0], A[b, 0, 1], A[b, 0, 2], A[b, 1, 0], A[b, 1, 1], A[b, 1, 2], A[b, 2, 0], A[b, 2, 1],
                A[b, 2, 2])  # fmt: skip

    @jit
    def vec3(a, b):
        return a[b, 0], a[b, 1], a[b, 2]

    @jit
    def mv6(A, b, u, o):
        """``A[b] [u, o]`` (6×6 times 6) as two 3-tuples."""
        r0 = (
            A[b, 0, 0] * u[0]
            + A[b, 0, 1] * u[1]
            + A[b, 0, 2] * u[2]
            + A[b, 0, 3] * o[0]
            + A[b, 0, 4] * o[1]
            + A[b, 0, 5] * o[2]
        )
        r1 = (
            A[b, 1, 0] * u[0]
            + A[b, 1, 1] * u[1]
            + A[b, 1, 2] * u[2]
            + A[b, 1, 3] * o[0]
            + A[b, 1, 4] * o[1]
            + A[b, 1, 5] * o[2]
        )
        r2 = (
            A[b, 2, 0] * u[0]
            + A[b, 2, 1] * u[1]
            + A[b, 2, 2] * u[2]
            + A[b, 2, 3] * o[0]
            + A[b, 2, 4] * o[1]
            + A[b, 2, 5] * o[2]
        )
        r3 = (
            A[b, 3, 0] * u[0]
            + A[b, 3, 1] * u[1]
            + A[b, 3, 2] * u[2]
            + A[b, 3, 3] * o[0]
            + A[b, 3, 4] * o[1]
            + A[b, 3, 5] * o[2]
        )
        r4 = (
            A[b, 4, 0] * u[0]
            + A[b, 4, 1] * u[1]
            + A[b, 4, 2] * u[2]
            + A[b, 4, 3] * o[0]
            + A[b, 4, 4] * o[1]
            + A[b, 4, 5] * o[2]
        )
        r5 = (
            A[b, 5, 0] * u[0]
            + A[b, 5, 1] * u[1]
            + A[b, 5, 2] * u[2]
            + A[b, 5, 3] * o[0]
            + A[b, 5, 4] * o[1]
            + A[b, 5, 5] * o[2]
        )
        return (r0, r1, r2), (r3, r4, r5)

    @jit
    def comb3(T, a, b, c, d):
        """``(a + 2b + 2c + d)/6`` (86), (87)."""
        two, six = T(2.0), T(6.0)
        return ((a[0] + two * b[0] + two * c[0] + d[0]) / six, (a[1] + two * b[1] + two * c[1] + d[1]) / six,
                (a[2] + two * b[2] + two * c[2] + d[2]) / six)  # fmt: skip

    @law  # not inlined on the CPU: four copies per law only cost compile time
    def loads(T, i, s, Rs, flags, points, fbody, fspat, tbody, tspat):
        """Body-frame resultant force ``F = Σ f_k`` and moment ``τ = Σ y_k × f_k + τ_pure``
        of the loads at factor ``s`` for the orientation ``Rs`` (follower forces fixed in
        the body, dead forces ``Rsᵀ f``)."""
        zero = T(0.0)
        F = (zero, zero, zero)
        tau = (zero, zero, zero)
        if flags & (FORCE_BODY | FORCE_SPATIAL):
            bp = row(points, i)
            for k in range(points.shape[1]):
                f = (zero, zero, zero)
                if flags & FORCE_BODY:
                    b = row(fbody, i)
                    f = (s * fbody[b, k, 0], s * fbody[b, k, 1], s * fbody[b, k, 2])
                if flags & FORCE_SPATIAL:
                    b = row(fspat, i)
                    f = add3(f, m3tv(Rs, (s * fspat[b, k, 0], s * fspat[b, k, 1], s * fspat[b, k, 2])))
                F = add3(F, f)
                tau = add3(tau, cross3((points[bp, k, 0], points[bp, k, 1], points[bp, k, 2]), f))
        if flags & TORQUE_BODY:
            tau = axpy3(s, vec3(tbody, row(tbody, i)), tau)
        if flags & TORQUE_SPATIAL:
            tau = add3(tau, m3tv(Rs, scale3(s, vec3(tspat, row(tspat, i)))))
        return F, tau

    def variants(LOADS):
        """The two laws, compiled with the load code (``LOADS``) or without it: a free
        body's law stays small, which LLVM optimises better."""

        @jit
        def ulvc_accel(T, i, s, Rs, U, Om, flags, D, mass, J, Jinv, points, fbody, fspat, tbody, tspat):
            """(79): ``ẇ̄ = M̄⁻¹ (Q̄ - Γ̄ w̄) = D̄ [g_F/m; J̄⁻¹ g_τ]`` with
            ``[g_F, g_τ] = [F - m Ω × U, τ - Ω × J̄Ω]`` (51), (53), (56), since
            ``M̄⁻¹ = D̄ diag(I/m, J̄⁻¹) D̄ᵀ`` and ``Q̄ - Γ̄w̄ = D̄⁻ᵀ [g_F, g_τ]``; ``[U, Ω] = D̄⁻¹ w̄``
            (71) is computed once per stage by the caller."""
            m = mass[row(mass, i)]
            gF = scale3(-m, cross3(Om, U))
            gt = scale3(T(-1.0), cross3(Om, m3v(mat3(J, row(J, i)), Om)))
            if LOADS and flags:
                F, tau = loads(T, i, s, Rs, flags, points, fbody, fspat, tbody, tspat)
                gF = add3(F, gF)
                gt = add3(tau, gt)
            aT, aR = mv6(D, row(D, i), scale3(T(1.0) / m, gF), m3v(mat3(Jinv, row(Jinv, i)), gt))
            return aT[0], aT[1], aT[2], aR[0], aR[1], aR[2]

        @law
        def ulvc_rk4_body(i, steps, h, paper_stages, flags, scales, D, Dinv, mass, J, Jinv, points, fbody, fspat,
                          tbody, tspat, R, x, w, R1, x1, w1, status, value):  # fmt: skip
            """``steps`` steps of the RK4 Lie-group scheme (82)-(87) for body ``i``.

            With ``f`` the acceleration above and ``T̄⁻¹(n) = T⁻¹_SE3(n) D̄⁻¹`` (72):
            ``K1 = h D̄⁻¹w̄``, ``K2 = h T⁻¹_SE3(½K1) D̄⁻¹(w̄ + ½k1)``, ... (82)-(85);
            ``w̄ ← w̄ + (k1 + 2k2 + 2k3 + k4)/6`` (86); ``H ← H exp_SE3((K1 + 2K2 + 2K3 + K4)/6)``
            (87). Dead loads are evaluated at the Munthe-Kaas stage orientations
            ``R exp(½K1)``, ``R exp(½K2)``, ``R exp(K3)`` (``paper_stages = 0``) or at ``R`` in
            every stage as printed (``paper_stages = 1``).
            """
            T = w.dtype.type
            half = T(0.5)
            Rb = (R[i, 0, 0], R[i, 0, 1], R[i, 0, 2], R[i, 1, 0], R[i, 1, 1], R[i, 1, 2], R[i, 2, 0], R[i, 2, 1],
                  R[i, 2, 2])  # fmt: skip
            xb = (x[i, 0], x[i, 1], x[i, 2])
            wb = (w[i, 0], w[i, 1], w[i, 2], w[i, 3], w[i, 4], w[i, 5])
            bi = row(Dinv, i)
            moving = LOADS and (flags & (FORCE_SPATIAL | TORQUE_SPATIAL)) != 0 and paper_stages == 0
            status[i, 0] = 0
            status[i, 1] = 0
            status[i, 2] = 0
            status[i, 3] = 0
            value[i] = T(0.0)
            for j in range(steps):
                s1, s2, s4 = scales[j, 0], scales[j, 1], scales[j, 2]
                U1, O1 = mv6(Dinv, bi, (wb[0], wb[1], wb[2]), (wb[3], wb[4], wb[5]))
                k1 = ulvc_accel(T, i, s1, Rb, U1, O1, flags, D, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                KT1, KR1 = scale3(h, U1), scale3(h, O1)
                w2 = (wb[0] + half * h * k1[0], wb[1] + half * h * k1[1], wb[2] + half * h * k1[2],
                      wb[3] + half * h * k1[3], wb[4] + half * h * k1[4], wb[5] + half * h * k1[5])  # fmt: skip
                U2, O2 = mv6(Dinv, bi, (w2[0], w2[1], w2[2]), (w2[3], w2[4], w2[5]))
                dT, dR = se3_tinv_apply(T, scale3(half, KT1), scale3(half, KR1), U2, O2)
                KT2, KR2 = scale3(h, dT), scale3(h, dR)
                R2 = Rb
                if moving:
                    R2 = m3m(Rb, so3_exp(T, scale3(half, KR1)))
                k2 = ulvc_accel(T, i, s2, R2, U2, O2, flags, D, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                w3 = (wb[0] + half * h * k2[0], wb[1] + half * h * k2[1], wb[2] + half * h * k2[2],
                      wb[3] + half * h * k2[3], wb[4] + half * h * k2[4], wb[5] + half * h * k2[5])  # fmt: skip
                U3, O3 = mv6(Dinv, bi, (w3[0], w3[1], w3[2]), (w3[3], w3[4], w3[5]))
                dT, dR = se3_tinv_apply(T, scale3(half, KT2), scale3(half, KR2), U3, O3)
                KT3, KR3 = scale3(h, dT), scale3(h, dR)
                R3 = Rb
                if moving:
                    R3 = m3m(Rb, so3_exp(T, scale3(half, KR2)))
                k3 = ulvc_accel(T, i, s2, R3, U3, O3, flags, D, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                w4 = (wb[0] + h * k3[0], wb[1] + h * k3[1], wb[2] + h * k3[2], wb[3] + h * k3[3], wb[4] + h * k3[4],
                      wb[5] + h * k3[5])  # fmt: skip
                U4, O4 = mv6(Dinv, bi, (w4[0], w4[1], w4[2]), (w4[3], w4[4], w4[5]))
                dT, dR = se3_tinv_apply(T, KT3, KR3, U4, O4)
                KT4, KR4 = scale3(h, dT), scale3(h, dR)
                R4 = Rb
                if moving:
                    R4 = m3m(Rb, so3_exp(T, KR3))
                k4 = ulvc_accel(T, i, s4, R4, U4, O4, flags, D, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                sixth = h / T(6.0)
                two = T(2.0)
                wn = (wb[0] + sixth * (k1[0] + two * k2[0] + two * k3[0] + k4[0]),
                      wb[1] + sixth * (k1[1] + two * k2[1] + two * k3[1] + k4[1]),
                      wb[2] + sixth * (k1[2] + two * k2[2] + two * k3[2] + k4[2]),
                      wb[3] + sixth * (k1[3] + two * k2[3] + two * k3[3] + k4[3]),
                      wb[4] + sixth * (k1[4] + two * k2[4] + two * k3[4] + k4[4]),
                      wb[5] + sixth * (k1[5] + two * k2[5] + two * k3[5] + k4[5]))  # fmt: skip
                nT = comb3(T, KT1, KT2, KT3, KT4)
                nR = comb3(T, KR1, KR2, KR3, KR4)
                Rn = m3m(Rb, so3_exp(T, nR))
                xn = add3(xb, m3v(Rb, se3_exp_translation(T, nT, nR)))
                bad = -1
                ok = True
                for c in range(6):
                    ok = ok and finite(wn[c])
                if not ok:
                    bad = 0
                else:
                    for c in range(9):
                        ok = ok and finite(Rn[c])
                    if not ok:
                        bad = 1
                    elif not (finite(xn[0]) and finite(xn[1]) and finite(xn[2])):
                        bad = 2
                if bad >= 0:
                    status[i, 0] = NOT_FINITE
                    status[i, 1] = j + 1
                    status[i, 2] = bad
                    value[i] = math.nan
                    return
                Rb, xb, wb = Rn, xn, wn
            for r in range(3):
                for c in range(3):
                    R1[i, r, c] = Rb[3 * r + c]
                x1[i, r] = xb[r]
            for c in range(6):
                w1[i, c] = wb[c]

        @jit
        def ne_rates(T, i, s, Rs, Om, flags, mass, J, Jinv, points, fbody, fspat, tbody, tspat):
            """Newton-Euler (66)-(67): ``v̇ = R F/m``, ``Ω̇ = J̄⁻¹(τ - Ω × J̄Ω)``."""
            zero = T(0.0)
            torque = scale3(T(-1.0), cross3(Om, m3v(mat3(J, row(J, i)), Om)))
            acc = (zero, zero, zero)
            if LOADS and flags:
                F, tau = loads(T, i, s, Rs, flags, points, fbody, fspat, tbody, tspat)
                if flags & (FORCE_BODY | FORCE_SPATIAL):
                    acc = scale3(T(1.0) / mass[row(mass, i)], m3v(Rs, F))
                torque = add3(torque, tau)
            return acc, m3v(mat3(Jinv, row(Jinv, i)), torque)

        @law
        def newton_euler_rk4_body(i, steps, h, flags, scales, mass, J, Jinv, points, fbody, fspat, tbody, tspat, R,
                                  x, v, Om, R1, x1, v1, Om1, status, value):  # fmt: skip
            """``steps`` steps of classical RK4 on ``(θ, x, v, Ω)`` with ``θ̇ = T⁻¹_SO3(θ) Ω``,
            ``R = R_i exp(θ)`` (the reference of :class:`granular.bodies.ulvc.NewtonEulerRK4`)."""
            T = v.dtype.type
            half = T(0.5)
            Rb = (R[i, 0, 0], R[i, 0, 1], R[i, 0, 2], R[i, 1, 0], R[i, 1, 1], R[i, 1, 2], R[i, 2, 0], R[i, 2, 1],
                  R[i, 2, 2])  # fmt: skip
            xb = (x[i, 0], x[i, 1], x[i, 2])
            vb = (v[i, 0], v[i, 1], v[i, 2])
            Ob = (Om[i, 0], Om[i, 1], Om[i, 2])
            status[i, 0] = 0
            status[i, 1] = 0
            status[i, 2] = 0
            status[i, 3] = 0
            value[i] = T(0.0)
            for j in range(steps):
                s1, s2, s4 = scales[j, 0], scales[j, 1], scales[j, 2]
                a1, b1 = ne_rates(T, i, s1, Rb, Ob, flags, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                th1, dx1, dv1, do1 = scale3(h, Ob), scale3(h, vb), scale3(h, a1), scale3(h, b1)
                R2 = Rb
                if LOADS and flags:
                    R2 = m3m(Rb, so3_exp(T, scale3(half, th1)))
                O2 = axpy3(half, do1, Ob)
                a2, b2 = ne_rates(T, i, s2, R2, O2, flags, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                th2 = scale3(h, so3_tinv_apply(T, scale3(half, th1), O2))
                dx2, dv2, do2 = scale3(h, axpy3(half, dv1, vb)), scale3(h, a2), scale3(h, b2)
                R3 = Rb
                if LOADS and flags:
                    R3 = m3m(Rb, so3_exp(T, scale3(half, th2)))
                O3 = axpy3(half, do2, Ob)
                a3, b3 = ne_rates(T, i, s2, R3, O3, flags, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                th3 = scale3(h, so3_tinv_apply(T, scale3(half, th2), O3))
                dx3, dv3, do3 = scale3(h, axpy3(half, dv2, vb)), scale3(h, a3), scale3(h, b3)
                R4 = Rb
                if LOADS and flags:
                    R4 = m3m(Rb, so3_exp(T, th3))
                O4 = add3(Ob, do3)
                a4, b4 = ne_rates(T, i, s4, R4, O4, flags, mass, J, Jinv, points, fbody, fspat, tbody, tspat)
                th4 = scale3(h, so3_tinv_apply(T, th3, O4))
                dx4, dv4, do4 = scale3(h, add3(vb, dv3)), scale3(h, a4), scale3(h, b4)
                On = add3(Ob, comb3(T, do1, do2, do3, do4))
                vn = add3(vb, comb3(T, dv1, dv2, dv3, dv4))
                xn = add3(xb, comb3(T, dx1, dx2, dx3, dx4))
                Rn = m3m(Rb, so3_exp(T, comb3(T, th1, th2, th3, th4)))
                bad = -1
                if not (finite(On[0]) and finite(On[1]) and finite(On[2])):
                    bad = 0
                elif not (finite(vn[0]) and finite(vn[1]) and finite(vn[2])):
                    bad = 1
                else:
                    ok = True
                    for c in range(9):
                        ok = ok and finite(Rn[c])
                    if not ok:
                        bad = 2
                    elif not (finite(xn[0]) and finite(xn[1]) and finite(xn[2])):
                        bad = 3
                if bad >= 0:
                    status[i, 0] = NOT_FINITE
                    status[i, 1] = j + 1
                    status[i, 2] = bad
                    value[i] = math.nan
                    return
                Rb, xb, vb, Ob = Rn, xn, vn, On
            for r in range(3):
                for c in range(3):
                    R1[i, r, c] = Rb[3 * r + c]
                x1[i, r] = xb[r]
                v1[i, r] = vb[r]
                Om1[i, r] = Ob[r]

        return ulvc_rk4_body, newton_euler_rk4_body

    free = variants(False)
    loaded = variants(True)
    return SimpleNamespace(
        ulvc_rk4_free_body=free[0],
        newton_euler_rk4_free_body=free[1],
        ulvc_rk4_body=loaded[0],
        newton_euler_rk4_body=loaded[1],
    )
