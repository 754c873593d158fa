"""Per-body laws of paper 000 (Gebhardt & Romero): the director body and the body on the
non-twisting frame, each with its energy-momentum scheme (86)-(94) and the discrete
Lagrange-d'Alembert (DLA) comparator; one body per call, a block of ``steps`` steps per
call. EM's Newton solves its saddle-point Jacobian by a Schur complement on the 6 (7)
constraint rows (:func:`em_iteration`); DLA's uses a dense LU of the whole Jacobian.

:func:`build` compiles them on the helpers of :mod:`kernels.bodies_algebra`; the host side
(equations, choices, scaling) is :mod:`granular.bodies.directors` (EM) and
:mod:`granular.bodies.directors.dla`. Directors are stored row-wise, ``d[b, i]`` = d_{i+1}; the
unknowns are ``x = (q_{n+1} (9), λ̃ = (h²/2) λ (6)[, μ̃ (1)])``; the six constraints (63)
are the pairs :data:`PAIRS`.

Arrays (``N`` bodies, ``B`` = 1 or N rows): ``E``, ``Einv`` (B, 3, 3) Euler coefficients
𝒥 (66) and their inverse; loads ``flags`` (bit 0 a spatial moment ``ms``, bit 1 material
components ``mc`` along d1, d2, d3), ``ms``, ``mc`` (S, B, 3) (S = 1: one shape scaled by
``prof``; S = 2: DLA's values at ``t_n`` and ``t_{n+1}`` of a single step), ``prof``
(steps, S) the load factors; state ``d, v, v_half`` (N, 3, 3), ``lam``, ``lam_end`` (N, 6),
``mu``, ``mu_end`` (N,), ``it_total`` (N,) int64 and their outputs (suffix ``1``),
``iters1`` (N,) int64; scratch ``A`` (16, 17), ``X`` (16,), ``Wk`` (4, 9) per body.
"""

from types import SimpleNamespace

NOT_CONVERGED, SINGULAR, NOT_FINITE = 1, 2, 3
SPATIAL, MATERIAL = 1, 2
# constraint rows of h (63): d_i·d_j (i ≠ j) or ½(d_i·d_i - 1)
PAIRS_I = (1, 0, 0, 0, 1, 2)
PAIRS_J = (2, 2, 1, 0, 1, 2)


def build(jit, H):
    """Compile the director laws with ``jit`` on the helpers ``H``."""
    finite, lu_solve, lu_solve6, lu_solve7 = H.finite, H.lu_solve, H.lu_solve6, H.lu_solve7
    dot3, sub3, m3v, m3m, m3sub, inv3 = H.dot3, H.sub3, H.m3v, H.m3m, H.m3sub, H.inv3

    @jit
    def row(a, i):
        if a.shape[0] > 1:
            return i
        return i - i

    @jit
    def pair(k):
        """The director pair ``(i, j)`` of constraint row ``k`` (:data:`PAIRS_I`, ``PAIRS_J``)."""
        if k == 0:
            return 1, 2
        if k == 1:
            return 0, 2
        if k == 2:
            return 0, 1
        return k - 3, k - 3

    @jit
    def moment(T, i, j, slot, flags, ms, mc, prof, Wk, r):
        """``m = f ms + f Σ_k mc_k d_k`` (68) with the directors in ``Wk[r]`` and the factor
        ``f = prof[j, slot]``."""
        f = prof[j, slot]
        m0, m1, m2 = T(0.0), T(0.0), T(0.0)
        if flags & SPATIAL:
            s = min(slot, ms.shape[0] - 1)
            b = row(ms[s], i)
            m0, m1, m2 = f * ms[s, b, 0], f * ms[s, b, 1], f * ms[s, b, 2]
        if flags & MATERIAL:
            s = min(slot, mc.shape[0] - 1)
            b = row(mc[s], i)
            for k in range(3):
                c = f * mc[s, b, k]
                m0 += c * Wk[r, 3 * k]
                m1 += c * Wk[r, 3 * k + 1]
                m2 += c * Wk[r, 3 * k + 2]
        return m0, m1, m2

    @jit
    def moment_parts(T, i, j, slot, flags, ms, mc, prof):
        """``(f ms, (f mc_1, f mc_2, f mc_3))``: :func:`moment` is ``f ms + Σ_k f mc_k d_k``."""
        f = prof[j, slot]
        m0 = (T(0.0), T(0.0), T(0.0))
        cm = (T(0.0), T(0.0), T(0.0))
        if flags & SPATIAL:
            s = min(slot, ms.shape[0] - 1)
            b = row(ms[s], i)
            m0 = (f * ms[s, b, 0], f * ms[s, b, 1], f * ms[s, b, 2])
        if flags & MATERIAL:
            s = min(slot, mc.shape[0] - 1)
            b = row(mc[s], i)
            cm = (f * mc[s, b, 0], f * mc[s, b, 1], f * mc[s, b, 2])
        return m0, cm

    @jit
    def newton_update(T, A, X, k):
        if not lu_solve(T, A, k):
            return False, T(0.0), T(0.0)
        dn = T(0.0)
        xn = T(0.0)
        for c in range(k):
            dd = A[c, k]
            X[c] += dd
            dn = max(dn, abs(dd))
            xn = max(xn, abs(X[c]))
        return finite(dn), dn, xn

    @jit
    def fail(status, value, i, kind, j, it, res):
        status[i, 0] = kind
        status[i, 1] = j + 1
        status[i, 3] = it
        value[i] = res

    @jit
    def assemble(T, nonholonomic, a, h, Em, flags, A, X, Wk, k):
        """``A = [J | -r]`` of the scaled residual of the DLA first half at ``X`` (module
        docstring of :mod:`granular.bodies.directors.dla`; EM goes through :func:`em_iteration`).
        ``Wk[0]``: ``q_n``, ``Wk[1]``: ``q̇_n``, ``Wk[2]``: the midpoint (filled here),
        ``Wk[3]``: the node moment term ``½h² Q^ext(t_n, q_n)``."""
        half = T(0.5)
        for r in range(9):
            Wk[2, r] = half * (Wk[0, r] + X[r])
        for r in range(k):
            for c in range(k):
                A[r, c] = T(0.0)
        # L(λ̃): H(q)ᵀλ̃ for director i is Σ_j L_ij d_j
        L00, L11, L22 = X[12], X[13], X[14]
        L12, L02, L01 = X[9], X[10], X[11]
        L = (L00, L01, L02, L01, L11, L12, L02, L12, L22)
        mu = X[15] if nonholonomic else T(0.0)
        for ii in range(3):
            for c in range(3):
                acc = T(0.0)
                for jj in range(3):
                    acc += Em[3 * ii + jj] * (X[3 * jj + c] - Wk[0, 3 * jj + c] - h * Wk[1, 3 * jj + c])
                    acc += L[3 * ii + jj] * Wk[0, 3 * jj + c]
                A[3 * ii + c, k] = -acc
        # Jacobian block ∂/∂q_{n+1}: 𝒥 ⊗ I
        for ii in range(3):
            for jj in range(3):
                for c in range(3):
                    A[3 * ii + c, 3 * jj + c] = Em[3 * ii + jj]
        if nonholonomic:
            # G(q_n)ᵀμ = μ ((1 - a) d2, -a d1, 0)
            for c in range(3):
                g0 = (T(1.0) - a) * Wk[0, 3 + c]
                g1 = -a * Wk[0, c]
                A[c, k] -= mu * g0
                A[3 + c, k] -= mu * g1
                A[c, 15] = g0
                A[3 + c, 15] = g1
        if flags:
            for r in range(9):
                A[r, k] += Wk[3, r]
        # constraints h(q_{n+1}) (rows 9..14) and their columns H(q_n)ᵀ
        for kk in range(6):
            pi, pj = pair(kk)
            cc = T(0.0)
            for c in range(3):
                cc += X[3 * pi + c] * X[3 * pj + c]
                A[3 * pi + c, 9 + kk] = Wk[0, 3 * pj + c]
                A[3 * pj + c, 9 + kk] = Wk[0, 3 * pi + c]
                A[9 + kk, 3 * pi + c] = X[3 * pj + c]
                A[9 + kk, 3 * pj + c] = X[3 * pi + c]
            A[9 + kk, k] = -(half * (cc - T(1.0)) if pi == pj else cc)
        if nonholonomic:
            # (94): (1 - a) Δd1·d̄2 - a Δd2·d̄1
            r15 = T(0.0)
            for c in range(3):
                dq0 = X[c] - Wk[0, c]
                dq1 = X[3 + c] - Wk[0, 3 + c]
                r15 += (T(1.0) - a) * dq0 * Wk[2, 3 + c] - a * dq1 * Wk[2, c]
                A[15, c] = -half * a * dq1 + (T(1.0) - a) * Wk[2, 3 + c]
                A[15, 3 + c] = half * (T(1.0) - a) * dq0 - a * Wk[2, c]
            A[15, k] = -r15

    @jit
    def block(beta, u):
        """``β I + S(u)`` (row-major 9-tuple)."""
        return beta, -u[2], u[1], u[2], beta, -u[0], -u[1], u[0], beta

    @jit
    def kfactor(T, K00, K01, K02, K10, K11, K12, K20, K21, K22):
        """Block LU of the 9×9 matrix ``K = [K_ab]`` (3×3 blocks, no pivoting across
        blocks: ``K ≈ 𝒥 ⊗ I₃`` is positive definite to O(h²)); returns the factors for
        :func:`ksolve` and ``ok`` (every pivot block's determinant finite and nonzero)."""
        i00, d0 = inv3(T, K00)
        L10 = m3m(K10, i00)
        L20 = m3m(K20, i00)
        K11p = m3sub(K11, m3m(L10, K01))
        K12p = m3sub(K12, m3m(L10, K02))
        K21p = m3sub(K21, m3m(L20, K01))
        K22p = m3sub(K22, m3m(L20, K02))
        i11, d1 = inv3(T, K11p)
        L21 = m3m(K21p, i11)
        i22, d2 = inv3(T, m3sub(K22p, m3m(L21, K12p)))
        ok = d0 != T(0.0) and d1 != T(0.0) and d2 != T(0.0) and finite(d0 * d1 * d2)
        return (i00, L10, L20, i11, L21, i22, K01, K02, K12p), ok

    @jit
    def ksolve(F, y0, y1, y2):
        """``K⁻¹ y`` with the factors of :func:`kfactor`; ``y`` and the result as three 3-vectors."""
        i00, L10, L20, i11, L21, i22, K01, K02, K12p = F
        y1 = sub3(y1, m3v(L10, y0))
        y2 = sub3(sub3(y2, m3v(L20, y0)), m3v(L21, y1))
        x2 = m3v(i22, y2)
        x1 = m3v(i11, sub3(y1, m3v(K12p, x2)))
        x0 = m3v(i00, sub3(sub3(y0, m3v(K01, x1)), m3v(K02, x2)))
        return x0, x1, x2

    @jit
    def kron_solve(Bi, y0, y1, y2):
        """``(B⁻¹ ⊗ I₃) y``: three 3-vectors."""
        return (
            (Bi[0] * y0[0] + Bi[1] * y1[0] + Bi[2] * y2[0], Bi[0] * y0[1] + Bi[1] * y1[1] + Bi[2] * y2[1],
             Bi[0] * y0[2] + Bi[1] * y1[2] + Bi[2] * y2[2]),
            (Bi[3] * y0[0] + Bi[4] * y1[0] + Bi[5] * y2[0], Bi[3] * y0[1] + Bi[4] * y1[1] + Bi[5] * y2[1],
             Bi[3] * y0[2] + Bi[4] * y1[2] + Bi[5] * y2[2]),
            (Bi[6] * y0[0] + Bi[7] * y1[0] + Bi[8] * y2[0], Bi[6] * y0[1] + Bi[7] * y1[1] + Bi[8] * y2[1],
             Bi[6] * y0[2] + Bi[7] * y1[2] + Bi[8] * y2[2]),
        )  # fmt: skip

    @jit
    def hdot(X0, X1, X2, Z):
        """``H(q) z`` (63) for the directors ``X`` and a 9-vector ``z`` (three 3-vectors): the six rows."""
        Z0, Z1, Z2 = Z
        return (dot3(X2, Z1) + dot3(X1, Z2), dot3(X2, Z0) + dot3(X0, Z2), dot3(X1, Z0) + dot3(X0, Z1),
                dot3(X0, Z0), dot3(X1, Z1), dot3(X2, Z2))  # fmt: skip

    @jit
    def schur_row(T, A, s, Hz, gz, nonholonomic, r2):
        """Column ``s`` of the Schur complement (or, ``s = nr``, its right-hand side with
        ``r2`` subtracted) into ``A``."""
        for t in range(6):
            A[t, s] = Hz[t] - r2[t]
        if nonholonomic:
            A[6, s] = gz - r2[6]

    @jit
    def em_iteration(T, nonholonomic, loaded, a, h, Em, m0, cm, X, Wk, A):
        """One Newton iteration of EM (86)/(92)-(94) at ``X`` by a Schur complement. The
        Jacobian is ``[[K, Hᵀ(q̄)], [C(q_{n+1}), 0]]``: the 9×9 block
        ``K = B ⊗ I₃ + α (I₃ ⊗ S(m) - [c_b S(d̄_a)]_ab)``, ``B = 𝒥 + ½L`` (plus the μ terms
        of (92), scaled identities in blocks (1, 2) and (2, 1)), ``α = -h²/8``, the moment's
        Jacobian being present only under load (``loaded``); the constraint columns
        ``Hᵀ(q̄)`` (and ``G(q̄)ᵀ``); the rows ``C`` of ``h(q_{n+1})`` (and of (94)).
        Without load ``K⁻¹ = B⁻¹ ⊗ I₃``; under load ``K`` is factored in 3×3 blocks
        (:func:`kfactor`). The 6×6 (7×7) complement ``C K⁻¹ Hᵀ`` is solved by the dense LU
        with partial pivoting (in ``A``), then ``Δq = K⁻¹(r_q - Hᵀ Δλ)``. The moment at
        ``q̄`` (68) is ``m = m0 + Σ_k cm_k d̄_k`` (:func:`moment_parts`). Updates ``X``;
        returns ``(code, ‖r‖∞, ‖Δx‖∞, ‖x‖∞)`` with code 0, :data:`NOT_FINITE` (residual)
        or :data:`SINGULAR`."""
        half = T(0.5)
        one = T(1.0)
        zero = (T(0.0), T(0.0), T(0.0))
        Q0 = (Wk[0, 0], Wk[0, 1], Wk[0, 2])
        Q1 = (Wk[0, 3], Wk[0, 4], Wk[0, 5])
        Q2 = (Wk[0, 6], Wk[0, 7], Wk[0, 8])
        X0 = (X[0], X[1], X[2])
        X1 = (X[3], X[4], X[5])
        X2 = (X[6], X[7], X[8])
        D0 = (half * (Q0[0] + X0[0]), half * (Q0[1] + X0[1]), half * (Q0[2] + X0[2]))
        D1 = (half * (Q1[0] + X1[0]), half * (Q1[1] + X1[1]), half * (Q1[2] + X1[2]))
        D2 = (half * (Q2[0] + X2[0]), half * (Q2[1] + X2[1]), half * (Q2[2] + X2[2]))
        L00, L11, L22 = X[12], X[13], X[14]
        L12, L02, L01 = X[9], X[10], X[11]
        mu = X[15] if nonholonomic else T(0.0)
        m = (m0[0] + cm[0] * D0[0] + cm[1] * D1[0] + cm[2] * D2[0], m0[1] + cm[0] * D0[1] + cm[1] * D1[1] + cm[2] * D2[1],
             m0[2] + cm[0] * D0[2] + cm[1] * D1[2] + cm[2] * D2[2])  # fmt: skip
        # residual rows 0..8: -(𝒥 (q - q_n - h q̇_n) + L q̄ + μ Gᵀ - (h²/2) Q^ext)
        P0 = (X0[0] - Q0[0] - h * Wk[1, 0], X0[1] - Q0[1] - h * Wk[1, 1], X0[2] - Q0[2] - h * Wk[1, 2])
        P1 = (X1[0] - Q1[0] - h * Wk[1, 3], X1[1] - Q1[1] - h * Wk[1, 4], X1[2] - Q1[2] - h * Wk[1, 5])
        P2 = (X2[0] - Q2[0] - h * Wk[1, 6], X2[1] - Q2[1] - h * Wk[1, 7], X2[2] - Q2[2] - h * Wk[1, 8])
        fq = T(-0.25) * h * h
        r0 = (-(Em[0] * P0[0] + Em[1] * P1[0] + Em[2] * P2[0] + L00 * D0[0] + L01 * D1[0] + L02 * D2[0]),
              -(Em[0] * P0[1] + Em[1] * P1[1] + Em[2] * P2[1] + L00 * D0[1] + L01 * D1[1] + L02 * D2[1]),
              -(Em[0] * P0[2] + Em[1] * P1[2] + Em[2] * P2[2] + L00 * D0[2] + L01 * D1[2] + L02 * D2[2]))  # fmt: skip
        r1 = (-(Em[3] * P0[0] + Em[4] * P1[0] + Em[5] * P2[0] + L01 * D0[0] + L11 * D1[0] + L12 * D2[0]),
              -(Em[3] * P0[1] + Em[4] * P1[1] + Em[5] * P2[1] + L01 * D0[1] + L11 * D1[1] + L12 * D2[1]),
              -(Em[3] * P0[2] + Em[4] * P1[2] + Em[5] * P2[2] + L01 * D0[2] + L11 * D1[2] + L12 * D2[2]))  # fmt: skip
        r2 = (-(Em[6] * P0[0] + Em[7] * P1[0] + Em[8] * P2[0] + L02 * D0[0] + L12 * D1[0] + L22 * D2[0]),
              -(Em[6] * P0[1] + Em[7] * P1[1] + Em[8] * P2[1] + L02 * D0[1] + L12 * D1[1] + L22 * D2[1]),
              -(Em[6] * P0[2] + Em[7] * P1[2] + Em[8] * P2[2] + L02 * D0[2] + L12 * D1[2] + L22 * D2[2]))  # fmt: skip
        g0 = ((one - a) * D1[0], (one - a) * D1[1], (one - a) * D1[2])
        g1 = (-a * D0[0], -a * D0[1], -a * D0[2])
        if nonholonomic:
            r0 = (r0[0] - mu * g0[0], r0[1] - mu * g0[1], r0[2] - mu * g0[2])
            r1 = (r1[0] - mu * g1[0], r1[1] - mu * g1[1], r1[2] - mu * g1[2])
        # -(h²/2) Q^ext(t_{n+½}, q̄), Q_i = ½ m × d̄_i (68)
        r0 = (r0[0] - fq * (m[1] * D0[2] - m[2] * D0[1]), r0[1] - fq * (m[2] * D0[0] - m[0] * D0[2]),
              r0[2] - fq * (m[0] * D0[1] - m[1] * D0[0]))  # fmt: skip
        r1 = (r1[0] - fq * (m[1] * D1[2] - m[2] * D1[1]), r1[1] - fq * (m[2] * D1[0] - m[0] * D1[2]),
              r1[2] - fq * (m[0] * D1[1] - m[1] * D1[0]))  # fmt: skip
        r2 = (r2[0] - fq * (m[1] * D2[2] - m[2] * D2[1]), r2[1] - fq * (m[2] * D2[0] - m[0] * D2[2]),
              r2[2] - fq * (m[0] * D2[1] - m[1] * D2[0]))  # fmt: skip
        # constraint residuals h(q_{n+1}) (rows 9..14) and (94)
        c12, c02, c01 = dot3(X1, X2), dot3(X0, X2), dot3(X0, X1)
        rc = (-c12, -c02, -c01, -(half * (dot3(X0, X0) - one)), -(half * (dot3(X1, X1) - one)),
              -(half * (dot3(X2, X2) - one)), T(0.0))  # fmt: skip
        dq0 = sub3(X0, Q0)
        dq1 = sub3(X1, Q1)
        if nonholonomic:
            r15 = T(0.0)
            for c in range(3):
                r15 += (one - a) * dq0[c] * D1[c] - a * dq1[c] * D0[c]
            rc = (rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], -r15)
        rn = T(0.0)
        for c in range(3):
            rn = max(rn, abs(r0[c]), abs(r1[c]), abs(r2[c]))
        for t in range(7):
            rn = max(rn, abs(rc[t]))
        if not finite(rn):
            return NOT_FINITE, rn, T(0.0), T(0.0)
        # K = B ⊗ I₃ + blocks α S(u_ab), u_ab = δ_ab m - c_b d̄_a
        B01 = Em[1] + half * L01
        B10 = Em[3] + half * L01
        if nonholonomic:
            B01 += half * (one - a) * mu
            B10 -= half * a * mu
        Bk = (Em[0] + half * L00, B01, Em[2] + half * L02, B10, Em[4] + half * L11, Em[5] + half * L12,
              Em[6] + half * L02, Em[7] + half * L12, Em[8] + half * L22)  # fmt: skip
        # K⁻¹ of the residual and of the constraint columns Hᵀ(q̄) (pairs of PAIRS) and G(q̄)ᵀ
        if loaded:
            al = half * fq
            am = (al * m[0], al * m[1], al * m[2])
            F, ok = kfactor(
                T,
                block(Bk[0], sub3(am, (al * cm[0] * D0[0], al * cm[0] * D0[1], al * cm[0] * D0[2]))),
                block(Bk[1], (-al * cm[1] * D0[0], -al * cm[1] * D0[1], -al * cm[1] * D0[2])),
                block(Bk[2], (-al * cm[2] * D0[0], -al * cm[2] * D0[1], -al * cm[2] * D0[2])),
                block(Bk[3], (-al * cm[0] * D1[0], -al * cm[0] * D1[1], -al * cm[0] * D1[2])),
                block(Bk[4], sub3(am, (al * cm[1] * D1[0], al * cm[1] * D1[1], al * cm[1] * D1[2]))),
                block(Bk[5], (-al * cm[2] * D1[0], -al * cm[2] * D1[1], -al * cm[2] * D1[2])),
                block(Bk[6], (-al * cm[0] * D2[0], -al * cm[0] * D2[1], -al * cm[0] * D2[2])),
                block(Bk[7], (-al * cm[1] * D2[0], -al * cm[1] * D2[1], -al * cm[1] * D2[2])),
                block(Bk[8], sub3(am, (al * cm[2] * D2[0], al * cm[2] * D2[1], al * cm[2] * D2[2]))),
            )
            if not ok:
                return SINGULAR, rn, T(0.0), T(0.0)
            zr = ksolve(F, r0, r1, r2)
            Z0 = ksolve(F, zero, D2, D1)
            Z1 = ksolve(F, D2, zero, D0)
            Z2 = ksolve(F, D1, D0, zero)
            Z3 = ksolve(F, D0, zero, zero)
            Z4 = ksolve(F, zero, D1, zero)
            Z5 = ksolve(F, zero, zero, D2)
            Zg = ksolve(F, g0, g1, zero)
        else:  # K = B ⊗ I₃: K⁻¹ = B⁻¹ ⊗ I₃
            Bi, det = inv3(T, Bk)
            if not (det != T(0.0) and finite(det)):
                return SINGULAR, rn, T(0.0), T(0.0)
            zr = kron_solve(Bi, r0, r1, r2)
            Z0 = kron_solve(Bi, zero, D2, D1)
            Z1 = kron_solve(Bi, D2, zero, D0)
            Z2 = kron_solve(Bi, D1, D0, zero)
            Z3 = kron_solve(Bi, D0, zero, zero)
            Z4 = kron_solve(Bi, zero, D1, zero)
            Z5 = kron_solve(Bi, zero, zero, D2)
            Zg = kron_solve(Bi, g0, g1, zero)
        # rows C: H(q_{n+1}) and, nonholonomic, the Jacobian row of (94)
        n0 = (g0[0] - half * a * dq1[0], g0[1] - half * a * dq1[1], g0[2] - half * a * dq1[2])
        n1 = (g1[0] + half * (one - a) * dq0[0], g1[1] + half * (one - a) * dq0[1], g1[2] + half * (one - a) * dq0[2])
        nr = 7 if nonholonomic else 6
        nz = (T(0.0), T(0.0), T(0.0), T(0.0), T(0.0), T(0.0), T(0.0))
        schur_row(T, A, 0, hdot(X0, X1, X2, Z0), dot3(n0, Z0[0]) + dot3(n1, Z0[1]), nonholonomic, nz)
        schur_row(T, A, 1, hdot(X0, X1, X2, Z1), dot3(n0, Z1[0]) + dot3(n1, Z1[1]), nonholonomic, nz)
        schur_row(T, A, 2, hdot(X0, X1, X2, Z2), dot3(n0, Z2[0]) + dot3(n1, Z2[1]), nonholonomic, nz)
        schur_row(T, A, 3, hdot(X0, X1, X2, Z3), dot3(n0, Z3[0]) + dot3(n1, Z3[1]), nonholonomic, nz)
        schur_row(T, A, 4, hdot(X0, X1, X2, Z4), dot3(n0, Z4[0]) + dot3(n1, Z4[1]), nonholonomic, nz)
        schur_row(T, A, 5, hdot(X0, X1, X2, Z5), dot3(n0, Z5[0]) + dot3(n1, Z5[1]), nonholonomic, nz)
        if nonholonomic:
            schur_row(T, A, 6, hdot(X0, X1, X2, Zg), dot3(n0, Zg[0]) + dot3(n1, Zg[1]), nonholonomic, nz)
        schur_row(T, A, nr, hdot(X0, X1, X2, zr), dot3(n0, zr[0]) + dot3(n1, zr[1]), nonholonomic, rc)
        if not (lu_solve7(T, A) if nonholonomic else lu_solve6(T, A)):
            return SINGULAR, rn, T(0.0), T(0.0)
        l0, l1, l2, l3, l4, l5 = A[0, nr], A[1, nr], A[2, nr], A[3, nr], A[4, nr], A[5, nr]
        l6 = A[6, nr] if nonholonomic else T(0.0)
        dn = T(0.0)
        xn = T(0.0)
        for b in range(3):
            for c in range(3):
                dd = zr[b][c] - (Z0[b][c] * l0 + Z1[b][c] * l1 + Z2[b][c] * l2 + Z3[b][c] * l3 + Z4[b][c] * l4
                                 + Z5[b][c] * l5 + Zg[b][c] * l6)  # fmt: skip
                X[3 * b + c] += dd
                dn = max(dn, abs(dd))
                xn = max(xn, abs(X[3 * b + c]))
        for t in range(nr):
            dd = A[t, nr]
            X[9 + t] += dd
            dn = max(dn, abs(dd))
            xn = max(xn, abs(X[9 + t]))
        if not finite(dn):
            return SINGULAR, rn, dn, xn
        return 0, rn, dn, xn

    @jit
    def node_moment_term(T, i, j, slot, flags, ms, mc, prof, Wk, r, out_row, scale):
        """``Wk[out_row] = scale Q^ext``, ``Q_i = ½ m × d_i`` (68) with the directors of ``Wk[r]``."""
        m = moment(T, i, j, slot, flags, ms, mc, prof, Wk, r)
        for ii in range(3):
            d0, d1, d2 = Wk[r, 3 * ii], Wk[r, 3 * ii + 1], Wk[r, 3 * ii + 2]
            Wk[out_row, 3 * ii] = scale * T(0.5) * (m[1] * d2 - m[2] * d1)
            Wk[out_row, 3 * ii + 1] = scale * T(0.5) * (m[2] * d0 - m[0] * d2)
            Wk[out_row, 3 * ii + 2] = scale * T(0.5) * (m[0] * d1 - m[1] * d0)

    @jit
    def project(T, i, j, nonholonomic, a, h, Em, Einv, flags, ms, mc, prof, A, X, Wk):
        """DLA second half: ``u = v̄ + (h/2) M⁻¹ Q^ext(t_{n+1}, q_{n+1})``; with the rows
        ``C = [H(q_{n+1}); G(q_{n+1})]`` solve ``(C M⁻¹ Cᵀ) ν = C u`` and set
        ``q̇_{n+1} = u - M⁻¹ Cᵀ ν`` (into ``Wk[1]``; ``ν`` into ``X[:r]``). ``Wk[2]`` holds
        ``q_{n+1}``, ``Wk[0]`` still ``q_n``. Returns False when the solve fails."""
        nr = 7 if nonholonomic else 6
        # u into Wk[3]
        if flags:
            node_moment_term(T, i, j, 1, flags, ms, mc, prof, Wk, 2, 3, T(1.0))
            for ii in range(3):
                for c in range(3):
                    acc = T(0.0)
                    for jj in range(3):
                        acc += Einv[3 * ii + jj] * Wk[3, 3 * jj + c]
                    X[3 * ii + c] = acc  # M⁻¹ Q, scratch in X[0:9]
            for r in range(9):
                Wk[3, r] = (Wk[2, r] - Wk[0, r]) / h + T(0.5) * h * X[r]
        else:
            for r in range(9):
                Wk[3, r] = (Wk[2, r] - Wk[0, r]) / h
        # A[r, s] = C_r M⁻¹ C_sᵀ, rhs C_r u: rows C_r as 3×3 blocks over the directors
        for r in range(nr):
            for s in range(nr):
                acc = T(0.0)
                for ii in range(3):
                    for jj in range(3):
                        e = Einv[3 * ii + jj]
                        if e != T(0.0):
                            for c in range(3):
                                acc += crow(T, r, ii, c, nonholonomic, a, Wk) * e * crow(T, s, jj, c, nonholonomic, a,
                                                                                      Wk)  # fmt: skip
                A[r, s] = acc
            acc = T(0.0)
            for ii in range(3):
                for c in range(3):
                    acc += crow(T, r, ii, c, nonholonomic, a, Wk) * Wk[3, 3 * ii + c]
            A[r, nr] = acc
        if not lu_solve(T, A, nr):
            return False
        for r in range(nr):
            X[r] = A[r, nr]
        for ii in range(3):
            for c in range(3):
                acc = T(0.0)
                for s in range(nr):
                    for jj in range(3):
                        acc += X[s] * Einv[3 * ii + jj] * crow(T, s, jj, c, nonholonomic, a, Wk)
                Wk[1, 3 * ii + c] = Wk[3, 3 * ii + c] - acc
        return True

    @jit
    def crow(T, r, blk, c, nonholonomic, a, Wk):
        """Entry ``(blk, c)`` of constraint row ``r`` at ``q_{n+1}`` (in ``Wk[2]``):
        ``∂h_r/∂d_blk`` (63) or, for ``r = 6``, ``G`` (83)."""
        if r < 6:
            pi, pj = pair(r)
            out = T(0.0)
            if blk == pi:
                out = Wk[2, 3 * pj + c]
            if blk == pj:
                out = Wk[2, 3 * pi + c]
            return out
        if blk == 0:
            return (T(1.0) - a) * Wk[2, 3 + c]
        if blk == 1:
            return -a * Wk[2, c]
        return T(0.0)

    @jit
    def director_body(i, dla, nonholonomic, steps, h, rtol, max_iter, a, E, Einv, flags, ms, mc, prof, d, v, lam, mu,
                      v_half, lam_end, mu_end, it_total, d1, v1, lam1, mu1, vh1, lam_end1, mu_end1, iters1, it_total1,
                      A, X, Wk, status, value):  # fmt: skip
        """``steps`` steps of the EM scheme (``dla = 0``) or the DLA comparator (``1``) of the
        director body (``nonholonomic = 0``) or of the body on the non-twisting frame (``1``)."""
        T = d.dtype.type
        half = T(0.5)
        k = 16 if nonholonomic else 15
        b = row(E, i)
        Em = (E[b, 0, 0], E[b, 0, 1], E[b, 0, 2], E[b, 1, 0], E[b, 1, 1], E[b, 1, 2], E[b, 2, 0], E[b, 2, 1],
              E[b, 2, 2])  # fmt: skip
        bi = row(Einv, i)
        Ei = (Einv[bi, 0, 0], Einv[bi, 0, 1], Einv[bi, 0, 2], Einv[bi, 1, 0], Einv[bi, 1, 1], Einv[bi, 1, 2],
              Einv[bi, 2, 0], Einv[bi, 2, 1], Einv[bi, 2, 2])  # fmt: skip
        for ii in range(3):
            for c in range(3):
                Wk[0, 3 * ii + c] = d[i, ii, c]
                Wk[1, 3 * ii + c] = v[i, ii, c]
                vh1[i, ii, c] = v_half[i, ii, c]
        lt = (lam[i, 0], lam[i, 1], lam[i, 2], lam[i, 3], lam[i, 4], lam[i, 5])
        mut = mu[i]
        le = (lam_end[i, 0], lam_end[i, 1], lam_end[i, 2], lam_end[i, 3], lam_end[i, 4], lam_end[i, 5])
        me = mu_end[i]
        total = it_total[i]
        status[i, 0], status[i, 1], status[i, 2], status[i, 3] = 0, 0, 0, 0
        value[i] = 0.0
        n_it = 0
        c2 = half * h * h
        for j in range(steps):
            for r in range(9):
                X[r] = Wk[0, r] + h * Wk[1, r]
            for r in range(6):
                X[9 + r] = c2 * lt[r]
            if nonholonomic:
                X[15] = c2 * mut
            if dla and flags:  # -(h²/2) Q^ext(t_n, q_n) enters the residual as a constant
                node_moment_term(T, i, j, 0, flags, ms, mc, prof, Wk, 0, 3, c2)
            m0, cm = moment_parts(T, i, j, 0, flags, ms, mc, prof)
            converged = False
            n_it = 0
            rn = T(0.0)
            for _ in range(max_iter):
                if dla:
                    assemble(T, nonholonomic, a, h, Em, flags, A, X, Wk, k)
                    rn = T(0.0)
                    for r in range(k):
                        rn = max(rn, abs(A[r, k]))
                    if not finite(rn):
                        fail(status, value, i, NOT_FINITE, j, n_it, rn)
                        return
                    ok, dn, xn = newton_update(T, A, X, k)
                    n_it += 1
                    if not ok:
                        fail(status, value, i, SINGULAR, j, n_it, rn)
                        return
                else:
                    code, rn, dn, xn = em_iteration(T, nonholonomic, flags != 0, a, h, Em, m0, cm, X, Wk, A)
                    if code == NOT_FINITE:
                        fail(status, value, i, NOT_FINITE, j, n_it, rn)
                        return
                    n_it += 1
                    if code == SINGULAR:
                        fail(status, value, i, SINGULAR, j, n_it, rn)
                        return
                if dn <= rtol * xn:
                    converged = True
                    break
            if not converged:
                fail(status, value, i, NOT_CONVERGED, j, n_it, rn)
                return
            lt = (X[9] / c2, X[10] / c2, X[11] / c2, X[12] / c2, X[13] / c2, X[14] / c2)
            if nonholonomic:
                mut = X[15] / c2
            if dla:
                for r in range(9):
                    Wk[2, r] = X[r]
                if not project(T, i, j, nonholonomic, a, h, Em, Ei, flags, ms, mc, prof, A, X, Wk):
                    fail(status, value, i, SINGULAR, j, n_it, T(0.0))
                    return
                two_h = T(2.0) / h
                le = (two_h * X[0], two_h * X[1], two_h * X[2], two_h * X[3], two_h * X[4], two_h * X[5])
                if nonholonomic:
                    me = two_h * X[6]
                for r in range(9):
                    vh1[i, r // 3, r % 3] = (Wk[2, r] - Wk[0, r]) / h
                    Wk[0, r] = Wk[2, r]
            else:
                for r in range(9):
                    vh = (X[r] - Wk[0, r]) / h
                    vh1[i, r // 3, r % 3] = vh
                    Wk[1, r] = T(2.0) * vh - Wk[1, r]
                    Wk[0, r] = X[r]
            total += n_it
        for ii in range(3):
            for c in range(3):
                d1[i, ii, c] = Wk[0, 3 * ii + c]
                v1[i, ii, c] = Wk[1, 3 * ii + c]
        for r in range(6):
            lam1[i, r] = lt[r]
            lam_end1[i, r] = le[r]
        mu1[i] = mut
        mu_end1[i] = me
        iters1[i] = n_it
        it_total1[i] = total

    return SimpleNamespace(director_body=director_body)
