"""Per-body laws of paper 002 (Kinon & Betsch): the rigid body in unit quaternions with
Livens' principle, EML (86)-(93), its size reductions REML (101)-(103) and Null-EML
(104)-(105), and the comparators of Table 1, MPL, EMH and MPH; one body per call, a block
of ``steps`` steps per call, Newton with a dense LU of the body's own Jacobian.

:func:`build` compiles them on the helpers of :mod:`kernels.bodies_algebra`; the host side
is :mod:`granular.bodies.livens.rigid` and :mod:`granular.bodies.livens.comparators`,
whose docstrings give the equations. Quaternion matrices (35) for ``a = (a0, a⃗)``:
``G(a) = [-a⃗, a0 I - â]``, ``E(a) = [-a⃗, a0 I + â]`` (3×4, 12-tuples row-major);
``w̄`` with ``G(a)ᵀ w = w̄ a`` (4×4, 16-tuples).

Arrays (``N`` bodies, ``B`` = 1 or N rows): ``J`` (B, 3, 3), ``HV`` (B, 4, 4) (gravity
potential ``V = ½ qᵀ H_V q``), ``W`` (B, 4, 4) (the Hamiltonian comparators'
``diag(1/(2 tr J), ¼ J⁻¹)``); state ``q, v, p, v_half`` (N, 4), ``lam`` (N, 1),
``iterations`` (N,) int64 (last step), ``iter_total`` (N,) int64, and their outputs
(suffix ``1``); scratch ``A`` (k, k + 1) and ``X`` (k,) per body (k unknowns);
``status`` (N, 4) int32 (kind, step, 0, iterations), ``value`` (N,) float64 (residual).

Newton, per body: ``r, J = F(x)``; ``Δx = -J⁻¹ r`` (partial pivoting); ``x += Δx``;
converged when ``‖Δx‖∞ <= rtol ‖x‖∞``; a non-finite residual, a singular Jacobian or
``max_iter`` iterations without convergence stop the body with a status. The predictor
is the reference's: ``q_n + h v̄``, ``p_n``, ``2 v̄ - v_n``, ``h λ_n`` with ``v̄`` the last
step's midpoint velocity.
"""

from types import SimpleNamespace

from . import bodies_quaternion

NOT_CONVERGED, SINGULAR, NOT_FINITE = 1, 2, 3
SMALL_ANGLE = 0.05  # below it the Null-EML exponential's Jacobian uses its series


def build(jit, H):
    """Compile the Livens laws with ``jit`` on the helpers ``H``."""
    sqrt, sin, cos, finite, lu_solve = H.sqrt, H.sin, H.cos, H.finite, H.lu_solve
    qmul, quat_from_rotvec, sinc = H.qmul, H.quat_from_rotvec, H.sinc
    Q = bodies_quaternion.build(jit)
    zeros16, delta, qG, qE, qbar, qQ = Q.zeros16, Q.delta, Q.qG, Q.qE, Q.qbar, Q.qQ
    m34v, m34tv, m44v, m44tv, arr44, arr33 = Q.m34v, Q.m34tv, Q.m44v, Q.m44tv, Q.arr44, Q.arr33
    j_cols, m43_m34, m44m44, tuple_neg, tuple_add = Q.j_cols, Q.m43_m34, Q.m44m44, Q.tuple_neg, Q.tuple_add

    @jit
    def row(a, i):
        if a.shape[0] > 1:
            return i
        return i - i

    @jit
    def kinetic(T, J, q0, v0, Gv0, q1, v1, midpoint, jac):
        """EML (87)-(88) (``midpoint = False``) or MPL (``True``): ``Tb = 2 G(v̄)ᵀ J Ω̄`` (=
        ``-∂̄_q T``), ``Tc = 2 G(q̄)ᵀ J Ω̄`` (= ``∂̄_v T``) with ``Ω̄ = G(q_n) v_n + G(q_{n+1})
        v_{n+1}`` (EML) or ``2 G(q̄) v̄`` (MPL); with ``jac`` their derivatives in q1, v1
        (16-tuples ``Tb_q, Tb_v, Tc_q, Tc_v``)."""
        half = T(0.5)
        qm = (half * (q0[0] + q1[0]), half * (q0[1] + q1[1]), half * (q0[2] + q1[2]), half * (q0[3] + q1[3]))
        vm = (half * (v0[0] + v1[0]), half * (v0[1] + v1[1]), half * (v0[2] + v1[2]), half * (v0[3] + v1[3]))
        Gqm = qG(qm)
        if midpoint:
            g = m34v(Gqm, vm)
            Om = (T(2.0) * g[0], T(2.0) * g[1], T(2.0) * g[2])
            DOq = qG(vm)
            DOv = Gqm
        else:
            Gq1 = qG(q1)
            g = m34v(Gq1, v1)
            Om = (Gv0[0] + g[0], Gv0[1] + g[1], Gv0[2] + g[2])
            DOq = qG(v1)
            DOv = Gq1
        Lw = (J[0] * Om[0] + J[1] * Om[1] + J[2] * Om[2], J[3] * Om[0] + J[4] * Om[1] + J[5] * Om[2],
              J[6] * Om[0] + J[7] * Om[1] + J[8] * Om[2])  # fmt: skip
        Gvm = qG(vm)
        tb = m34tv(Gvm, Lw)
        tc = m34tv(Gqm, Lw)
        Tb = (T(2.0) * tb[0], T(2.0) * tb[1], T(2.0) * tb[2], T(2.0) * tb[3])
        Tc = (T(2.0) * tc[0], T(2.0) * tc[1], T(2.0) * tc[2], T(2.0) * tc[3])
        if not jac:
            z = zeros16(T)
            return qm, vm, Tb, Tc, z, z, z, z
        GvJ = j_cols(T, J, Gvm)
        GqJ = j_cols(T, J, Gqm)
        bar = qbar(Lw)
        # ∂Ω̄/∂q1 = -G(v1) (EML) or -G(v̄) (MPL): the minus sign is applied here
        Tb_q = m43_m34(GvJ, DOq)
        Tb_v = m43_m34(GvJ, DOv)
        Tc_q = m43_m34(GqJ, DOq)
        Tc_v = m43_m34(GqJ, DOv)
        Tb_q = tuple_neg(Tb_q)
        Tc_q = tuple_add(bar, tuple_neg(Tc_q))
        Tb_v = tuple_add(bar, Tb_v)
        return qm, vm, Tb, Tc, Tb_q, Tb_v, Tc_q, Tc_v

    @jit
    def newton_update(T, A, X, k):
        """Solve ``A[:, :k] Δx = A[:, k]`` (the right-hand side ``-r``), ``X += Δx``; returns
        ``(ok, ‖Δx‖∞, ‖X‖∞)`` (``ok`` False for a singular or non-finite solve)."""
        if not lu_solve(T, A, k):
            return False, T(0.0), T(0.0)
        dn = T(0.0)
        xn = T(0.0)
        for c in range(k):
            d = A[c, k]
            X[c] += d
            dn = max(dn, abs(d))
            xn = max(xn, abs(X[c]))
        return finite(dn), dn, xn

    @jit
    def fail(status, value, i, kind, j, it, res):
        status[i, 0] = kind
        status[i, 1] = j + 1
        status[i, 3] = it
        value[i] = res

    @jit
    def load_state(i, q, v, p, v_half):
        return ((q[i, 0], q[i, 1], q[i, 2], q[i, 3]), (v[i, 0], v[i, 1], v[i, 2], v[i, 3]),
                (p[i, 0], p[i, 1], p[i, 2], p[i, 3]), (v_half[i, 0], v_half[i, 1], v_half[i, 2], v_half[i, 3]))  # fmt: skip

    @jit
    def store_state(i, q1, v1, p1, vh1, lam1, qn, vn, pn, vhn, lamn):
        for c in range(4):
            q1[i, c] = qn[c]
            v1[i, c] = vn[c]
            p1[i, c] = pn[c]
            vh1[i, c] = vhn[c]
        lam1[i, 0] = lamn

    @jit
    def residual_norm(T, A, k):
        rn = T(0.0)
        for r in range(k):
            rn = max(rn, abs(A[r, k]))
        return rn

    @jit
    def eml_newton_update(T, A, X, h, lt, qa, qm, Hv, Tb_q, Tb_v, Tc_q, Tc_v, r_n):
        """One Newton update of EML's 13 unknowns ``x = (q, p, v, hλ)`` by block elimination.

        The Jacobian's rows (residuals ``b = -r`` in ``A[5:8, :4]`` and ``r_n``):
        ``Δq - (h/2) Δv = b_q``; ``M Δq + Δp + h Tb_v Δv + q̄ Δ(hλ) = b_p`` with
        ``M = h Tb_q + (h/2) H_V + (hλ/2) 1``; ``½ Δp - Tc_q Δq - Tc_v Δv = b_c``;
        ``qᵀ Δq = b_n``. The first and third give ``Δq`` and ``Δp`` in ``Δv``; the second and
        fourth then leave 5 unknowns ``(Δv, Δ(hλ))``:
        ``((h/2) P + h Tb_v + 2 Tc_v) Δv + q̄ Δ(hλ) = b_p - 2 b_c - P b_q`` with
        ``P = M + 2 Tc_q``, and ``(h/2) qᵀ Δv = b_n - qᵀ b_q``, solved by :func:`lu_solve`
        with partial pivoting. The same Newton step as the dense 13 × 13 solve (the
        eliminated blocks are identities), in about a fifth of the time. Returns
        ``(ok, ‖Δx‖∞, ‖x‖∞)``; ``ok`` False when the reduced matrix (and so the Jacobian) is
        singular or the update not finite.
        """
        half = T(0.5)
        two = T(2.0)
        hh = half * h
        for a in range(4):
            rhs = A[6, a] - two * A[7, a]
            for b in range(4):
                P = h * Tb_q[4 * a + b] + hh * Hv[4 * a + b] + two * Tc_q[4 * a + b]
                if a == b:
                    P += half * lt
                rhs -= P * A[5, b]
                A[a, b] = hh * P + h * Tb_v[4 * a + b] + two * Tc_v[4 * a + b]
            A[a, 4] = qm[a]
            A[a, 5] = rhs
        rhs = r_n
        for b in range(4):
            A[4, b] = hh * qa[b]
            rhs -= qa[b] * A[5, b]
        A[4, 4] = T(0.0)
        A[4, 5] = rhs
        if not lu_solve(T, A, 5):
            return False, T(0.0), T(0.0)
        dv = (A[0, 5], A[1, 5], A[2, 5], A[3, 5])
        dq = (A[5, 0] + hh * dv[0], A[5, 1] + hh * dv[1], A[5, 2] + hh * dv[2], A[5, 3] + hh * dv[3])
        dn = abs(A[4, 5])
        X[12] += A[4, 5]
        xn = abs(X[12])
        for a in range(4):
            dp = A[7, a]
            for b in range(4):
                dp += Tc_q[4 * a + b] * dq[b] + Tc_v[4 * a + b] * dv[b]
            dp = two * dp
            X[a] += dq[a]
            X[4 + a] += dp
            X[8 + a] += dv[a]
            dn = max(dn, max(abs(dq[a]), max(abs(dp), abs(dv[a]))))
            xn = max(xn, max(abs(X[a]), max(abs(X[4 + a]), abs(X[8 + a]))))
        return finite(dn), dn, xn

    @jit
    def eml_body(i, midpoint, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                 iters1, it_total1, A, X, status, value):  # fmt: skip
        """EML (86)-(93) (``midpoint = 0``) or MPL (``1``): 13 unknowns
        ``(q_{n+1}, p_{n+1}, v_{n+1}, hλ)``; rows ``q1 - q0 - h v̄``,
        ``p1 - p0 + h Tb + h H_V q̄ + λ̃ q̄``, ``p̄ - Tc``, ``½(q1·q1 - 1)``."""
        T = q.dtype.type
        half = T(0.5)
        Jm = arr33(J, row(J, i))
        Hv = arr44(HV, row(HV, i))
        q0, v0, p0, vh = load_state(i, q, v, p, v_half)
        lam_out = lam[i, 0]
        lt0 = h * lam_out
        total = it_total[i]
        status[i, 0], status[i, 1], status[i, 2], status[i, 3] = 0, 0, 0, 0
        value[i] = 0.0
        n_it = 0
        for j in range(steps):
            Gv0 = m34v(qG(q0), v0)
            for c in range(4):
                X[c] = q0[c] + h * vh[c]
                X[4 + c] = p0[c]
                X[8 + c] = T(2.0) * vh[c] - v0[c]
            X[12] = lt0
            converged = False
            n_it = 0
            rn = T(0.0)
            for _ in range(max_iter):
                qa = (X[0], X[1], X[2], X[3])
                pa = (X[4], X[5], X[6], X[7])
                va = (X[8], X[9], X[10], X[11])
                lt = X[12]
                qm, vm, Tb, Tc, Tb_q, Tb_v, Tc_q, Tc_v = kinetic(T, Jm, q0, v0, Gv0, qa, va, midpoint != 0, True)
                HVqm = m44v(Hv, qm)
                # residual columns of the rows q, p, c (A[5:8, :4]) and the norm row
                rn = T(0.0)
                for a in range(4):
                    A[5, a] = -(qa[a] - q0[a] - h * vm[a])
                    A[6, a] = -(pa[a] - p0[a] + h * Tb[a] + h * HVqm[a] + lt * qm[a])
                    A[7, a] = -(half * (p0[a] + pa[a]) - Tc[a])
                    rn = max(rn, max(abs(A[5, a]), max(abs(A[6, a]), abs(A[7, a]))))
                r_n = -(half * (qa[0] * qa[0] + qa[1] * qa[1] + qa[2] * qa[2] + qa[3] * qa[3] - T(1.0)))
                rn = max(rn, abs(r_n))
                if not finite(rn):
                    fail(status, value, i, NOT_FINITE, j, n_it, rn)
                    return
                ok, dn, xn = eml_newton_update(T, A, X, h, lt, qa, qm, Hv, Tb_q, Tb_v, Tc_q, Tc_v, r_n)
                n_it += 1
                if not ok:
                    fail(status, value, i, SINGULAR, j, n_it, rn)
                    return
                if dn <= rtol * xn:
                    converged = True
                    break
            if not converged:
                fail(status, value, i, NOT_CONVERGED, j, n_it, rn)
                return
            qn = (X[0], X[1], X[2], X[3])
            vh = ((qn[0] - q0[0]) / h, (qn[1] - q0[1]) / h, (qn[2] - q0[2]) / h, (qn[3] - q0[3]) / h)
            q0, p0, v0 = qn, (X[4], X[5], X[6], X[7]), (X[8], X[9], X[10], X[11])
            lam_out = X[12] / h
            lt0 = h * lam_out  # as stored (λ) and read back: blocks equal single steps
            total += n_it
        store_state(i, q1, v1, p1, vh1, lam1, q0, v0, p0, vh, lam_out)
        iters1[i] = n_it
        it_total1[i] = total

    @jit
    def reduced(T, h, Jm, Hv, q0, v0, p0, Gv0, q1, jac):
        """REML (101)-(102): ``v1 = (2/h)(q1 - q0) - v0``, ``p1 = 2 Tc - p0`` and the λ-free
        residual ``res = p1 - p0 + h Tb + h H_V q̄`` of (86b), with its q1-derivative
        ``2 (Tc_q + (2/h) Tc_v) + h Tb_q + 2 Tb_v + ½ h H_V``."""
        two = T(2.0)
        v1 = (two / h * (q1[0] - q0[0]) - v0[0], two / h * (q1[1] - q0[1]) - v0[1],
              two / h * (q1[2] - q0[2]) - v0[2], two / h * (q1[3] - q0[3]) - v0[3])  # fmt: skip
        qm, vm, Tb, Tc, Tb_q, Tb_v, Tc_q, Tc_v = kinetic(T, Jm, q0, v0, Gv0, q1, v1, False, jac)
        p1 = (two * Tc[0] - p0[0], two * Tc[1] - p0[1], two * Tc[2] - p0[2], two * Tc[3] - p0[3])
        HVqm = m44v(Hv, qm)
        res = (p1[0] - p0[0] + h * Tb[0] + h * HVqm[0], p1[1] - p0[1] + h * Tb[1] + h * HVqm[1],
               p1[2] - p0[2] + h * Tb[2] + h * HVqm[2], p1[3] - p0[3] + h * Tb[3] + h * HVqm[3])  # fmt: skip
        d = zeros16(T)
        if jac:
            c = two / h
            half = T(0.5)
            d = (two * (Tc_q[0] + c * Tc_v[0]) + h * Tb_q[0] + two * Tb_v[0] + half * h * Hv[0],
                 two * (Tc_q[1] + c * Tc_v[1]) + h * Tb_q[1] + two * Tb_v[1] + half * h * Hv[1],
                 two * (Tc_q[2] + c * Tc_v[2]) + h * Tb_q[2] + two * Tb_v[2] + half * h * Hv[2],
                 two * (Tc_q[3] + c * Tc_v[3]) + h * Tb_q[3] + two * Tb_v[3] + half * h * Hv[3],
                 two * (Tc_q[4] + c * Tc_v[4]) + h * Tb_q[4] + two * Tb_v[4] + half * h * Hv[4],
                 two * (Tc_q[5] + c * Tc_v[5]) + h * Tb_q[5] + two * Tb_v[5] + half * h * Hv[5],
                 two * (Tc_q[6] + c * Tc_v[6]) + h * Tb_q[6] + two * Tb_v[6] + half * h * Hv[6],
                 two * (Tc_q[7] + c * Tc_v[7]) + h * Tb_q[7] + two * Tb_v[7] + half * h * Hv[7],
                 two * (Tc_q[8] + c * Tc_v[8]) + h * Tb_q[8] + two * Tb_v[8] + half * h * Hv[8],
                 two * (Tc_q[9] + c * Tc_v[9]) + h * Tb_q[9] + two * Tb_v[9] + half * h * Hv[9],
                 two * (Tc_q[10] + c * Tc_v[10]) + h * Tb_q[10] + two * Tb_v[10] + half * h * Hv[10],
                 two * (Tc_q[11] + c * Tc_v[11]) + h * Tb_q[11] + two * Tb_v[11] + half * h * Hv[11],
                 two * (Tc_q[12] + c * Tc_v[12]) + h * Tb_q[12] + two * Tb_v[12] + half * h * Hv[12],
                 two * (Tc_q[13] + c * Tc_v[13]) + h * Tb_q[13] + two * Tb_v[13] + half * h * Hv[13],
                 two * (Tc_q[14] + c * Tc_v[14]) + h * Tb_q[14] + two * Tb_v[14] + half * h * Hv[14],
                 two * (Tc_q[15] + c * Tc_v[15]) + h * Tb_q[15] + two * Tb_v[15] + half * h * Hv[15])  # fmt: skip
        return v1, p1, qm, res, d

    @jit
    def reml_body(i, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1, iters1,
                  it_total1, A, X, status, value):  # fmt: skip
        """REML (101)-(103): 5 unknowns ``(q_{n+1}, hλ)``, rows ``res + λ̃ q̄``, ``½(q1·q1 - 1)``."""
        T = q.dtype.type
        half = T(0.5)
        Jm = arr33(J, row(J, i))
        Hv = arr44(HV, row(HV, i))
        q0, v0, p0, vh = load_state(i, q, v, p, v_half)
        lam_out = lam[i, 0]
        lt0 = h * lam_out
        total = it_total[i]
        status[i, 0], status[i, 1], status[i, 2], status[i, 3] = 0, 0, 0, 0
        value[i] = 0.0
        n_it = 0
        for j in range(steps):
            Gv0 = m34v(qG(q0), v0)
            for c in range(4):
                X[c] = q0[c] + h * vh[c]
            X[4] = lt0
            converged = False
            n_it = 0
            rn = T(0.0)
            for _ in range(max_iter):
                qa = (X[0], X[1], X[2], X[3])
                lt = X[4]
                _, _, qm, res, d = reduced(T, h, Jm, Hv, q0, v0, p0, Gv0, qa, True)
                for a in range(4):
                    A[a, 5] = -(res[a] + lt * qm[a])
                    for b in range(4):
                        A[a, b] = d[4 * a + b]
                    A[a, a] += half * lt
                    A[a, 4] = qm[a]
                    A[4, a] = qa[a]
                A[4, 4] = T(0.0)
                A[4, 5] = -(half * (qa[0] * qa[0] + qa[1] * qa[1] + qa[2] * qa[2] + qa[3] * qa[3] - T(1.0)))
                rn = residual_norm(T, A, 5)
                if not finite(rn):
                    fail(status, value, i, NOT_FINITE, j, n_it, rn)
                    return
                ok, dn, xn = newton_update(T, A, X, 5)
                n_it += 1
                if not ok:
                    fail(status, value, i, SINGULAR, j, n_it, rn)
                    return
                if dn <= rtol * xn:
                    converged = True
                    break
            if not converged:
                fail(status, value, i, NOT_CONVERGED, j, n_it, rn)
                return
            qn = (X[0], X[1], X[2], X[3])
            vn, pn, _, _, _ = reduced(T, h, Jm, Hv, q0, v0, p0, Gv0, qn, False)
            vh = ((qn[0] - q0[0]) / h, (qn[1] - q0[1]) / h, (qn[2] - q0[2]) / h, (qn[3] - q0[3]) / h)
            q0, v0, p0 = qn, vn, pn
            lam_out = X[4] / h
            lt0 = h * lam_out
            total += n_it
        store_state(i, q1, v1, p1, vh1, lam1, q0, v0, p0, vh, lam_out)
        iters1[i] = n_it
        it_total1[i] = total

    @jit
    def exp_jacobian_cols(T, th, q0):
        """``Q_r(q0) ∂exp_{S³}(½ϑ)/∂ϑ`` (4×3, 12-tuple row-major): column ``j`` is
        ``(∂exp/∂ϑ_j) ⊗ q0`` with ``∂exp/∂ϑ = [-½ s ϑᵀ; s I + c ϑϑᵀ]``, ``s = sin(a/2)/a``,
        ``c = (½ a cos(a/2) - sin(a/2))/a³`` (series below 0.05 rad), ``a = |ϑ|``."""
        a2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2]
        a = sqrt(a2)
        half = T(0.5)
        s = sinc(T, half * a) * half
        if a < T(SMALL_ANGLE):
            c = T(-1.0 / 24.0) + a2 / T(960.0) - a2 * a2 / T(107520.0)
        else:
            c = (half * a * cos(half * a) - sin(half * a)) / (a2 * a)
        c0 = qmul((-half * s * th[0], s + c * th[0] * th[0], c * th[1] * th[0], c * th[2] * th[0]), q0)
        c1 = qmul((-half * s * th[1], c * th[0] * th[1], s + c * th[1] * th[1], c * th[2] * th[1]), q0)
        c2 = qmul((-half * s * th[2], c * th[0] * th[2], c * th[1] * th[2], s + c * th[2] * th[2]), q0)
        return (c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2], c0[3], c1[3], c2[3])

    @jit
    def null_eml_body(i, steps, h, rtol, max_iter, J, HV, q, v, p, lam, v_half, it_total, q1, v1, p1, lam1, vh1,
                      iters1, it_total1, A, X, status, value):  # fmt: skip
        """Null-EML (104)-(105): 3 unknowns ``ϑ``, ``q_{n+1} = exp_{S³}((0, ½ϑ)) ⊗ q_n``,
        rows ``G(q̄) res`` (the null-space projection removes λ); afterwards
        ``λ = -q̄·res/(h q̄·q̄)``."""
        T = q.dtype.type
        half = T(0.5)
        Jm = arr33(J, row(J, i))
        Hv = arr44(HV, row(HV, i))
        q0, v0, p0, vh = load_state(i, q, v, p, v_half)
        lamn = lam[i, 0]
        total = it_total[i]
        status[i, 0], status[i, 1], status[i, 2], status[i, 3] = 0, 0, 0, 0
        value[i] = 0.0
        n_it = 0
        for j in range(steps):
            Gv0 = m34v(qG(q0), v0)
            w = m34v(qE(q0), vh)  # ω = 2 E(q) v̄, ϑ = h ω
            X[0], X[1], X[2] = T(2.0) * h * w[0], T(2.0) * h * w[1], T(2.0) * h * w[2]
            converged = False
            n_it = 0
            rn = T(0.0)
            for _ in range(max_iter):
                th = (X[0], X[1], X[2])
                qa = qmul(quat_from_rotvec(T, th), q0)
                _, _, qm, res, d = reduced(T, h, Jm, Hv, q0, v0, p0, Gv0, qa, True)
                Gqm = qG(qm)
                F = m34v(Gqm, res)
                # ∂(G(q̄) res)/∂q1 = -½ G(res) + G(q̄) dres  (G(q̄) res = -G(res) q̄)
                Gr = qG(res)
                Cq = exp_jacobian_cols(T, th, q0)
                for a in range(3):
                    A[a, 3] = -F[a]
                    dF = (-half * Gr[4 * a] + Gqm[4 * a] * d[0] + Gqm[4 * a + 1] * d[4] + Gqm[4 * a + 2] * d[8]
                          + Gqm[4 * a + 3] * d[12],
                          -half * Gr[4 * a + 1] + Gqm[4 * a] * d[1] + Gqm[4 * a + 1] * d[5] + Gqm[4 * a + 2] * d[9]
                          + Gqm[4 * a + 3] * d[13],
                          -half * Gr[4 * a + 2] + Gqm[4 * a] * d[2] + Gqm[4 * a + 1] * d[6] + Gqm[4 * a + 2] * d[10]
                          + Gqm[4 * a + 3] * d[14],
                          -half * Gr[4 * a + 3] + Gqm[4 * a] * d[3] + Gqm[4 * a + 1] * d[7] + Gqm[4 * a + 2] * d[11]
                          + Gqm[4 * a + 3] * d[15])  # fmt: skip
                    for b in range(3):
                        A[a, b] = dF[0] * Cq[b] + dF[1] * Cq[3 + b] + dF[2] * Cq[6 + b] + dF[3] * Cq[9 + b]
                rn = residual_norm(T, A, 3)
                if not finite(rn):
                    fail(status, value, i, NOT_FINITE, j, n_it, rn)
                    return
                ok, dn, xn = newton_update(T, A, X, 3)
                n_it += 1
                if not ok:
                    fail(status, value, i, SINGULAR, j, n_it, rn)
                    return
                if dn <= rtol * xn:
                    converged = True
                    break
            if not converged:
                fail(status, value, i, NOT_CONVERGED, j, n_it, rn)
                return
            qn = qmul(quat_from_rotvec(T, (X[0], X[1], X[2])), q0)
            vn, pn, qm, res, _ = reduced(T, h, Jm, Hv, q0, v0, p0, Gv0, qn, False)
            lt = -(qm[0] * res[0] + qm[1] * res[1] + qm[2] * res[2] + qm[3] * res[3]) / (
                qm[0] * qm[0] + qm[1] * qm[1] + qm[2] * qm[2] + qm[3] * qm[3]
            )
            lamn = lt / h
            vh = ((qn[0] - q0[0]) / h, (qn[1] - q0[1]) / h, (qn[2] - q0[2]) / h, (qn[3] - q0[3]) / h)
            q0, v0, p0 = qn, vn, pn
            total += n_it
        store_state(i, q1, v1, p1, vh1, lam1, q0, v0, p0, vh, lamn)
        iters1[i] = n_it
        it_total1[i] = total

    @jit
    def qB(pp):
        """``∂ω̃/∂q = [pᵀ; -G(p)]`` (4×4)."""
        g = qG(pp)
        return (pp[0], pp[1], pp[2], pp[3], -g[0], -g[1], -g[2], -g[3], -g[4], -g[5], -g[6], -g[7], -g[8], -g[9],
                -g[10], -g[11])  # fmt: skip

    @jit
    def transpose44(M):
        return (M[0], M[4], M[8], M[12], M[1], M[5], M[9], M[13], M[2], M[6], M[10], M[14], M[3], M[7], M[11], M[15])

    @jit
    def hamiltonian_body(i, equivariant, steps, h, rtol, max_iter, HV, W, q, v, p, lam, v_half, it_total, q1, v1, p1,
                         lam1, vh1, iters1, it_total1, A, X, status, value):  # fmt: skip
        """EMH (``equivariant = 1``) and MPH (``0``) of Table 1: 9 unknowns
        ``(q_{n+1}, p_{n+1}, hλ)``; rows ``q1 - q0 - h Q(q̄) z``,
        ``p1 - p0 + h B(p̄)ᵀ z + h H_V q̄ + λ̃ q̄``, ``½(q1·q1 - 1)``, ``z = W ω̃`` with
        ``ω̃ = ½(ω̃_n + ω̃_{n+1})`` (EMH) or ``ω̃(q̄, p̄)`` (MPH); the node velocity is
        ``∂_p H = Q(q) W Q(q)ᵀ p``."""
        T = q.dtype.type
        half = T(0.5)
        Hv = arr44(HV, row(HV, i))
        Wm = arr44(W, row(W, i))
        q0, v0, p0, vh = load_state(i, q, v, p, v_half)
        lam_out = lam[i, 0]
        lt0 = h * lam_out
        total = it_total[i]
        status[i, 0], status[i, 1], status[i, 2], status[i, 3] = 0, 0, 0, 0
        value[i] = 0.0
        n_it = 0
        for j in range(steps):
            w0 = m44tv(qQ(q0), p0)
            for c in range(4):
                X[c] = q0[c] + h * vh[c]
                X[4 + c] = p0[c]
            X[8] = lt0
            converged = False
            n_it = 0
            rn = T(0.0)
            for _ in range(max_iter):
                qa = (X[0], X[1], X[2], X[3])
                pa = (X[4], X[5], X[6], X[7])
                lt = X[8]
                qm = (half * (q0[0] + qa[0]), half * (q0[1] + qa[1]), half * (q0[2] + qa[2]), half * (q0[3] + qa[3]))
                pm = (half * (p0[0] + pa[0]), half * (p0[1] + pa[1]), half * (p0[2] + pa[2]), half * (p0[3] + pa[3]))
                Qm = qQ(qm)
                BmT = transpose44(qB(pm))
                if equivariant:
                    w1 = m44tv(qQ(qa), pa)
                    wt = (
                        half * (w0[0] + w1[0]),
                        half * (w0[1] + w1[1]),
                        half * (w0[2] + w1[2]),
                        half * (w0[3] + w1[3]),
                    )
                    Dq = m44m44(Wm, qB(pa))
                    Dp = m44m44(Wm, transpose44(qQ(qa)))
                else:
                    wt = m44tv(Qm, pm)
                    Dq = m44m44(Wm, qB(pm))
                    Dp = m44m44(Wm, transpose44(Qm))
                z = m44v(Wm, wt)
                zb = qbar((z[1], z[2], z[3]))
                Qz = m44v(Qm, z)
                Bz = m44v(BmT, z)
                HVqm = m44v(Hv, qm)
                QDq = m44m44(Qm, Dq)
                QDp = m44m44(Qm, Dp)
                BDq = m44m44(BmT, Dq)
                BDp = m44m44(BmT, Dp)
                for a in range(9):
                    for b in range(9):
                        A[a, b] = T(0.0)
                for a in range(4):
                    A[a, 9] = -(qa[a] - q0[a] - h * Qz[a])
                    A[4 + a, 9] = -(pa[a] - p0[a] + h * Bz[a] + h * HVqm[a] + lt * qm[a])
                    for b in range(4):
                        e = delta(T, a, b)
                        zz = half * (z[0] * e + zb[4 * a + b])
                        zm = half * (z[0] * e - zb[4 * a + b])
                        # dz/dq1 = ½ W B, dz/dp1 = ½ W Qᵀ: the ½ multiplies Dq, Dp here
                        A[a, b] = e - h * (zz + half * QDq[4 * a + b])
                        A[a, 4 + b] = -h * (half * QDp[4 * a + b])
                        A[4 + a, b] = h * (half * BDq[4 * a + b]) + half * h * Hv[4 * a + b]
                        A[4 + a, 4 + b] = e + h * (zm + half * BDp[4 * a + b])
                    A[4 + a, a] += half * lt
                    A[4 + a, 8] = qm[a]
                    A[8, a] = qa[a]
                A[8, 9] = -(half * (qa[0] * qa[0] + qa[1] * qa[1] + qa[2] * qa[2] + qa[3] * qa[3] - T(1.0)))
                rn = residual_norm(T, A, 9)
                if not finite(rn):
                    fail(status, value, i, NOT_FINITE, j, n_it, rn)
                    return
                ok, dn, xn = newton_update(T, A, X, 9)
                n_it += 1
                if not ok:
                    fail(status, value, i, SINGULAR, j, n_it, rn)
                    return
                if dn <= rtol * xn:
                    converged = True
                    break
            if not converged:
                fail(status, value, i, NOT_CONVERGED, j, n_it, rn)
                return
            qn = (X[0], X[1], X[2], X[3])
            pn = (X[4], X[5], X[6], X[7])
            Qn = qQ(qn)
            vn = m44v(Qn, m44v(Wm, m44tv(Qn, pn)))
            vh = ((qn[0] - q0[0]) / h, (qn[1] - q0[1]) / h, (qn[2] - q0[2]) / h, (qn[3] - q0[3]) / h)
            q0, v0, p0 = qn, vn, pn
            lam_out = X[8] / h
            lt0 = h * lam_out
            total += n_it
        store_state(i, q1, v1, p1, vh1, lam1, q0, v0, p0, vh, lam_out)
        iters1[i] = n_it
        it_total1[i] = total

    return SimpleNamespace(eml_body=eml_body, reml_body=reml_body, null_eml_body=null_eml_body,
                           hamiltonian_body=hamiltonian_body)  # fmt: skip
