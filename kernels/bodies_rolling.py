"""Per-ball laws of paper 004 (Putkaradze & Rogers): the rolling ball with internal masses
on rails, classical RK4 and the per-ball adaptive Dormand-Prince 5(4), and the planar
rolling disk with RK4; one ball per call, a block of steps per call.

:func:`build` compiles them on the helpers of :mod:`kernels.bodies_algebra`. The host
side is :mod:`granular.bodies.rolling_ball.integrators` (equations in
:mod:`granular.bodies.rolling_ball` and :mod:`granular.bodies.rolling_ball.disk`).

Arrays (``N`` balls, ``B`` = 1 or N rows, ``K`` masses):

* ball: ``radius`` (B,), ``inertia`` (B, 3, 3), ``shell_com`` (B, 3), ``m_all`` (B, K+1)
  (shell first), ``gravity`` (scalar);
* rails: ``rail_info`` (K, 2) int32 ``[kind, terms]`` with kinds :data:`CIRCLE`,
  :data:`ELLIPSE`, :data:`FIGURE_EIGHT`, :data:`LINE`, :data:`FOURIER`; ``rail_par``
  (B, K, P): ``[center(3), u(3), v(3), a, b]`` for the planar rails (``a = ρ`` for the
  circle), ``[center(3), direction(3)]`` for the line, ``[center(3), A_1(3), B_1(3), ...]``
  for the Fourier rail ``ζ = c + Σ_k A_k cos kθ + B_k sin kθ``;
* actuations: ``act_par`` (B, K, 5) ``[c, w, A, ν, φ]``, ``θ = c + w t + A sin(ν t + φ)``;
* external force at the centre: ``force_mode`` 0 none, 1 ``force_par`` (B, 3, 4) rows
  ``[F0, A, ν, φ]``: ``F_j = F0_j + A_j cos(ν_j t + φ_j)``, 2 ``force_tab`` (steps·3, B, 3)
  values at the RK4 stage times ``t, t + h/2, t + h`` (evaluated on the host);
* state ``y`` (N, 13) or (N, 15) (layout of :mod:`granular.bodies.rolling_ball`), out ``y1``;
* scratch ``S`` (9, 15) per ball (rows: state, stage state, stage slopes) and ``C``
  (K, 10) (each mass's ``χ, χ̇, χ̈`` at the current stage time and its mass);
* ``status`` (N, 4) int32, ``value`` (N,) float64: failure kind, step, quantity (a state
  column, 15 the step size, 16 the attempt count), 0.
"""

from types import SimpleNamespace

NOT_FINITE, STEP_UNDERFLOW, TOO_MANY_STEPS = 3, 4, 5
# failure quantities beyond the 15 state columns (granular.bodies.rolling_ball.integrators)
QUANTITY_H, QUANTITY_MAX_STEPS = 15, 16
CIRCLE, ELLIPSE, FIGURE_EIGHT, LINE, FOURIER = 0, 1, 2, 3, 4

# Dormand & Prince (1980), RK5(4)7FM (the table of granular.bodies.rolling_ball.integrators)
A21 = 1 / 5
A31, A32 = 3 / 40, 9 / 40
A41, A42, A43 = 44 / 45, -56 / 15, 32 / 9
A51, A52, A53, A54 = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
A61, A62, A63, A64, A65 = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
A71, A73, A74, A75, A76 = 35 / 384, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84
C2, C3, C4, C5 = 1 / 5, 3 / 10, 4 / 5, 8 / 9
E1, E3, E4, E5, E6, E7 = 71 / 57600, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40


def build(jit, H):
    """Compile the rolling-ball and rolling-disk laws with ``jit`` on the helpers ``H``."""
    add3, sub3, scale3, axpy3, dot3, cross3 = H.add3, H.sub3, H.scale3, H.axpy3, H.dot3, H.cross3
    qrot, qrot_inv, sym3_solve, finite = H.qrot, H.qrot_inv, H.sym3_solve, H.finite
    sqrt, sin, cos = H.sqrt, H.sin, H.cos

    @jit
    def row(a, i):
        """Parameter row of ball ``i`` (``i - i`` keeps an unsigned prange index's type)."""
        if a.shape[0] > 1:
            return i
        return i - i

    @jit
    def vec(a, b, k, o):
        return a[b, k, o], a[b, k, o + 1], a[b, k, o + 2]

    @jit
    def rail(T, i, k, th, rail_info, rail_par):
        """``(ζ, ζ', ζ'')`` of rail ``k`` at ``θ`` (body frame)."""
        b = row(rail_par, i)
        kind = rail_info[k, 0]
        c = vec(rail_par, b, k, 0)
        zero = T(0.0)
        if kind == LINE:
            d = vec(rail_par, b, k, 3)
            return axpy3(th, d, c), d, (zero, zero, zero)
        if kind == FOURIER:
            z, d1, d2 = c, (zero, zero, zero), (zero, zero, zero)
            for m in range(rail_info[k, 1]):
                f = T(m + 1)
                cm, sm = cos(f * th), sin(f * th)
                A = vec(rail_par, b, k, 3 + 6 * m)
                Bv = vec(rail_par, b, k, 6 + 6 * m)
                z = add3(z, add3(scale3(cm, A), scale3(sm, Bv)))
                d1 = add3(d1, add3(scale3(-sm * f, A), scale3(cm * f, Bv)))
                d2 = add3(d2, add3(scale3(-cm * f * f, A), scale3(-sm * f * f, Bv)))
            return z, d1, d2
        u = vec(rail_par, b, k, 3)
        v = vec(rail_par, b, k, 6)
        a = rail_par[b, k, 9]
        bb = rail_par[b, k, 10]
        if kind == CIRCLE:
            cu, cv = a * cos(th), a * sin(th)
            du, dv, ddu, ddv = -cv, cu, -cu, -cv
        elif kind == ELLIPSE:
            cu, cv = a * cos(th), bb * sin(th)
            du, dv, ddu, ddv = -(a * sin(th)), bb * cos(th), -cu, -cv
        else:  # FIGURE_EIGHT: ζ = c + a sin θ u + b sin θ cos θ v
            s, co = sin(th), cos(th)
            s2, c2 = sin(T(2.0) * th), cos(T(2.0) * th)
            cu, cv, du, dv, ddu, ddv = a * s, T(0.5) * bb * s2, a * co, bb * c2, -a * s, T(-2.0) * bb * s2
        z = add3(add3(c, scale3(cu, u)), scale3(cv, v))
        return z, add3(scale3(du, u), scale3(dv, v)), add3(scale3(ddu, u), scale3(ddv, v))

    @jit
    def actuation(T, i, k, t, act_par):
        """``(θ, θ̇, θ̈)`` of ``θ = c + w t + A sin(ν t + φ)``."""
        b = row(act_par, i)
        c, w, A, nu, ph = act_par[b, k, 0], act_par[b, k, 1], act_par[b, k, 2], act_par[b, k, 3], act_par[b, k, 4]
        arg = nu * t + ph
        s = sin(arg)
        return c + w * t + A * s, w + A * nu * cos(arg), -A * nu * nu * s

    @jit
    def mass_point(T, i, k, t, rail_info, rail_par, act_par):
        """Body-frame ``χ = ζ(θ)``, ``χ̇ = ζ' θ̇``, ``χ̈ = ζ'' θ̇² + ζ' θ̈`` of mass ``k``."""
        th, w, a = actuation(T, i, k, t, act_par)
        z, d1, d2 = rail(T, i, k, th, rail_info, rail_par)
        return z, scale3(w, d1), add3(scale3(w * w, d2), scale3(a, d1))

    @jit
    def fill_kinematics(T, i, t, C, n_masses, rail_info, rail_par, act_par):
        """``C[k] = (χ, χ̇, χ̈)`` of every mass at ``t`` (the kinematics depend on ``t`` only,
        so RK4's two stages at ``t + h/2`` share them)."""
        for k in range(n_masses):
            chi, dchi, ddchi = mass_point(T, i, k, t, rail_info, rail_par, act_par)
            C[k, 0], C[k, 1], C[k, 2] = chi[0], chi[1], chi[2]
            C[k, 3], C[k, 4], C[k, 5] = dchi[0], dchi[1], dchi[2]
            C[k, 6], C[k, 7], C[k, 8] = ddchi[0], ddchi[1], ddchi[2]

    @jit
    def force(T, i, t, mode, force_par, force_tab, ftab_row):
        """Spatial external force at the centre at ``t``."""
        zero = T(0.0)
        if mode == 1:
            b = row(force_par, i)
            return (force_par[b, 0, 0] + force_par[b, 0, 1] * cos(force_par[b, 0, 2] * t + force_par[b, 0, 3]),
                    force_par[b, 1, 0] + force_par[b, 1, 1] * cos(force_par[b, 1, 2] * t + force_par[b, 1, 3]),
                    force_par[b, 2, 0] + force_par[b, 2, 1] * cos(force_par[b, 2, 2] * t + force_par[b, 2, 3]))  # fmt: skip
        if mode == 2:
            b = row(force_tab[ftab_row], i)
            return force_tab[ftab_row, b, 0], force_tab[ftab_row, b, 1], force_tab[ftab_row, b, 2]
        return zero, zero, zero

    @jit
    def ball_params(T, i, radius, inertia, shell_com, m_all, C):
        """The ball's constant parameters as scalars and tuples (the right-hand side then
        takes no parameter arrays): ``r``, ``𝕀`` (9-tuple), ``χ0``, ``m0``; the masses
        ``m_k`` go to ``C[k, 9]``."""
        r = radius[row(radius, i)]
        b = row(inertia, i)
        I9 = (inertia[b, 0, 0], inertia[b, 0, 1], inertia[b, 0, 2], inertia[b, 1, 0], inertia[b, 1, 1],
              inertia[b, 1, 2], inertia[b, 2, 0], inertia[b, 2, 1], inertia[b, 2, 2])  # fmt: skip
        bc = row(shell_com, i)
        com = (shell_com[bc, 0], shell_com[bc, 1], shell_com[bc, 2])
        bm = row(m_all, i)
        for k in range(m_all.shape[1] - 1):
            C[k, 9] = m_all[bm, k + 1]
        return r, I9, com, m_all[bm, 0]

    @jit
    def ball_rhs(T, t, S, yr, kr, ncol, C, K, r, I9, com, m0, gravity, F, has_force):
        """``S[kr] = dy/dt`` at ``(t, S[yr])``: (B.8) solved for Ω̇ as in (B.9)-(B.10),
        ``Γ̇ = Γ × Ω`` (A.13), ``q̇ = ½ q Ω^♯`` (D.21), ``ż = r ω × e3``; with work columns
        the rail actuation power ``Σ F_i·χ̇_i`` and the external power ``F_e·ż``. The
        masses' kinematics ``(χ, χ̇, χ̈, m)`` are the rows of ``C`` (``K`` masses), ``F`` the
        spatial force at the centre.

        ``s_i = rΓ + χ_i``; ``(𝕀 + Σ m_i (|s_i|² 1 - s_i s_iᵀ)) Ω̇ = 𝕀Ω × Ω - rΓ̃ × Γ
        - Σ m_i s_i × [gΓ + Ω × (Ω × χ_i + 2χ̇_i) + χ̈_i]`` (i = 0 the shell).
        """
        Om = (S[yr, 0], S[yr, 1], S[yr, 2])
        Gam = (S[yr, 3], S[yr, 4], S[yr, 5])
        q = (S[yr, 6], S[yr, 7], S[yr, 8], S[yr, 9])
        inq = T(1.0) / sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
        qn = (q[0] * inq, q[1] * inq, q[2] * inq, q[3] * inq)
        IOm = (I9[0] * Om[0] + I9[1] * Om[1] + I9[2] * Om[2], I9[3] * Om[0] + I9[4] * Om[1] + I9[5] * Om[2],
               I9[6] * Om[0] + I9[7] * Om[1] + I9[8] * Om[2])  # fmt: skip
        rhs = cross3(IOm, Om)
        zero = T(0.0)
        rG = scale3(r, Gam)
        gG = scale3(gravity, Gam)
        # the shell (i = 0: χ0 fixed in the body, at rest)
        s = add3(rG, com)
        inner = add3(gG, cross3(Om, cross3(Om, com)))
        rhs = axpy3(-m0, cross3(s, inner), rhs)
        ms = scale3(m0, s)
        sxx, syy, szz = ms[0] * s[0], ms[1] * s[1], ms[2] * s[2]
        sxy, sxz, syz = ms[0] * s[1], ms[0] * s[2], ms[1] * s[2]
        for k in range(K):
            m = C[k, 9]
            chi = (C[k, 0], C[k, 1], C[k, 2])
            dchi = (C[k, 3], C[k, 4], C[k, 5])
            ddchi = (C[k, 6], C[k, 7], C[k, 8])
            s = add3(rG, chi)
            inner = add3(add3(gG, cross3(Om, axpy3(T(2.0), dchi, cross3(Om, chi)))), ddchi)
            rhs = axpy3(-m, cross3(s, inner), rhs)
            ms = scale3(m, s)
            sxx += ms[0] * s[0]
            syy += ms[1] * s[1]
            szz += ms[2] * s[2]
            sxy += ms[0] * s[1]
            sxz += ms[0] * s[2]
            syz += ms[1] * s[2]
        Gt = (zero, zero, zero)
        if has_force:
            Gt = qrot_inv(T, qn, F)
            rhs = sub3(rhs, scale3(r, cross3(Gt, Gam)))
        Omd = sym3_solve(T, I9[0] + syy + szz, I9[1] - sxy, I9[2] - sxz, I9[4] + sxx + szz, I9[5] - syz,
                         I9[8] + sxx + syy, rhs)  # fmt: skip
        om = qrot(T, qn, Om)
        half = T(0.5)
        S[kr, 0], S[kr, 1], S[kr, 2] = Omd[0], Omd[1], Omd[2]
        dG = cross3(Gam, Om)
        S[kr, 3], S[kr, 4], S[kr, 5] = dG[0], dG[1], dG[2]
        # q̇ = ½ q ⊗ (0, Ω)
        S[kr, 6] = half * (-q[1] * Om[0] - q[2] * Om[1] - q[3] * Om[2])
        S[kr, 7] = half * (q[0] * Om[0] + q[2] * Om[2] - q[3] * Om[1])
        S[kr, 8] = half * (q[0] * Om[1] - q[1] * Om[2] + q[3] * Om[0])
        S[kr, 9] = half * (q[0] * Om[2] + q[1] * Om[1] - q[2] * Om[0])
        S[kr, 10], S[kr, 11], S[kr, 12] = r * om[1], -(r * om[0]), zero
        if ncol > 13:
            # rail forces F_i = m_i (A_i + gΓ), A_i = Ω̇ × s_i + Ω × ṡ_i + χ̈_i + Ω × u_i,
            # u_i = Ω × s_i + χ̇_i, ṡ_i = r Γ × Ω + χ̇_i; power Σ_i F_i·χ̇_i (masses only)
            power = zero
            rGO = scale3(r, dG)
            for k in range(K):
                chi = (C[k, 0], C[k, 1], C[k, 2])
                dchi = (C[k, 3], C[k, 4], C[k, 5])
                ddchi = (C[k, 6], C[k, 7], C[k, 8])
                s = add3(rG, chi)
                u = add3(cross3(Om, s), dchi)
                sd = add3(rGO, dchi)
                A = add3(add3(add3(cross3(Omd, s), cross3(Om, sd)), ddchi), cross3(Om, u))
                Fk = scale3(C[k, 9], axpy3(gravity, Gam, A))
                power += dot3(Fk, dchi)
            S[kr, 13] = power
            p_ext = zero
            if has_force:
                p_ext = dot3(Gt, scale3(r, cross3(Om, Gam)))
            S[kr, 14] = p_ext

    @jit
    def ball_rhs_at(T, i, t, S, yr, kr, ncol, C, fill, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                    force_mode, force_par, force_tab):  # fmt: skip
        """:func:`ball_rhs` at ``t``, filling the kinematics first when ``fill``."""
        if fill:
            fill_kinematics(T, i, t, C, K, rail_info, rail_par, act_par)
        F = force(T, i, t, force_mode, force_par, force_tab, 0)
        ball_rhs(T, t, S, yr, kr, ncol, C, K, r, I9, com, m0, gravity, F, force_mode != 0)

    @jit
    def project_and_check(T, S, yr, ncol):
        """``q ← q/|q|`` in row ``yr``; the first non-finite column, or -1."""
        q0, q1, q2, q3 = S[yr, 6], S[yr, 7], S[yr, 8], S[yr, 9]
        nq = sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3)
        S[yr, 6], S[yr, 7], S[yr, 8], S[yr, 9] = q0 / nq, q1 / nq, q2 / nq, q3 / nq
        for c in range(ncol):
            if not finite(S[yr, c]):
                return c
        return -1

    @jit
    def clear_status(T, i, status, value):
        status[i, 0] = 0
        status[i, 1] = 0
        status[i, 2] = 0
        status[i, 3] = 0
        value[i] = T(0.0)

    @jit
    def rolling_ball_rk4_body(i, steps, h, t0, first, y, y1, S, C, radius, inertia, shell_com, m_all, gravity,
                              rail_info, rail_par, act_par, force_mode, force_par, force_tab, status, value):  # fmt: skip
        """``steps`` RK4 steps of ball ``i``; ``q`` renormalised after each step. Step ``j``
        starts at ``t0 + (first + j) h`` (the clock's origin ``t0`` and the steps taken since
        it: no time accumulated by repeated addition, the same times for every block length)."""
        T = y.dtype.type
        ncol = y.shape[1]
        K = m_all.shape[1] - 1
        clear_status(T, i, status, value)
        r, I9, com, m0 = ball_params(T, i, radius, inertia, shell_com, m_all, C)
        has_force = force_mode != 0
        for c in range(ncol):
            S[0, c] = y[i, c]
        half = T(0.5)
        t1 = t0 + T(first) * h
        for j in range(steps):
            t = t1
            t1 = t0 + T(first + j + 1) * h
            th = t + half * h
            # the masses' kinematics and the force depend on t only: the two stages at
            # t + h/2 share them, and a step's first stage reuses the previous step's last
            # (the same time t1, bitwise)
            if j == 0:
                fill_kinematics(T, i, t, C, K, rail_info, rail_par, act_par)
            F = force(T, i, t, force_mode, force_par, force_tab, 3 * j)
            ball_rhs(T, t, S, 0, 2, ncol, C, K, r, I9, com, m0, gravity, F, has_force)
            for c in range(ncol):
                S[1, c] = S[0, c] + (half * h) * S[2, c]
            fill_kinematics(T, i, th, C, K, rail_info, rail_par, act_par)
            F = force(T, i, th, force_mode, force_par, force_tab, 3 * j + 1)
            ball_rhs(T, th, S, 1, 3, ncol, C, K, r, I9, com, m0, gravity, F, has_force)
            for c in range(ncol):
                S[1, c] = S[0, c] + (half * h) * S[3, c]
            ball_rhs(T, th, S, 1, 4, ncol, C, K, r, I9, com, m0, gravity, F, has_force)
            for c in range(ncol):
                S[1, c] = S[0, c] + h * S[4, c]
            fill_kinematics(T, i, t1, C, K, rail_info, rail_par, act_par)
            F = force(T, i, t1, force_mode, force_par, force_tab, 3 * j + 2)
            ball_rhs(T, t1, S, 1, 5, ncol, C, K, r, I9, com, m0, gravity, F, has_force)
            sixth = h / T(6.0)
            for c in range(ncol):
                S[1, c] = S[0, c] + sixth * (S[2, c] + T(2.0) * (S[3, c] + S[4, c]) + S[5, c])
            bad = project_and_check(T, S, 1, ncol)
            if bad >= 0:
                status[i, 0] = NOT_FINITE
                status[i, 1] = j + 1
                status[i, 2] = bad
                value[i] = S[1, bad]
                return
            for c in range(ncol):
                S[0, c] = S[1, c]
        for c in range(ncol):
            y1[i, c] = S[0, c]

    @jit
    def rms_scaled(T, S, er, ar, br, ncol, rtol, atol, use_b):
        """``sqrt(mean((S[er]/sc)²))``, ``sc = atol + rtol max(|S[ar]|, |S[br]|)`` (or
        ``rtol |S[ar]|`` without ``use_b``)."""
        acc = T(0.0)
        for c in range(ncol):
            m = abs(S[ar, c])
            if use_b:
                m = max(m, abs(S[br, c]))
            e = S[er, c] / (atol + rtol * m)
            acc += e * e
        return sqrt(acc / T(ncol))

    @jit
    def rolling_ball_dopri_body(i, H, t0, y, y1, dt, dt1, acc, acc1, rej, rej1, jr, jr1, S, C, radius, inertia, shell_com,
                                m_all, gravity, rail_info, rail_par, act_par, force_mode, force_par, force_tab, rtol, atol, h0,
                                h_max, max_steps, safety, fac_min, fac_max, status, value):  # fmt: skip
        """Ball ``i`` from ``t0`` to ``t0 + H`` by Dormand-Prince 5(4) with its own step.

        Each attempt from ``t`` with ``hs = min(h, target - t)``: the seven stages (FSAL),
        the 5th-order solution projected (``q/|q|``), the error norm
        ``‖e‖ = rms(e / (atol + rtol max(|y|, |ŷ|)))``; accepted when ``‖e‖ <= 1``; then
        ``h ← hs min(fac_max, max(fac_min, safety ‖e‖^(-1/5)))`` (``fac_max = 1`` right after a
        rejection; ``h`` kept after a clipped last step that needed no reduction). ``dt``
        carries each ball's step between calls (0: start with Hairer's heuristic or ``h0``),
        ``jr`` whether its last attempt was rejected.
        """
        T = y.dtype.type
        ncol = y.shape[1]
        K = m_all.shape[1] - 1
        clear_status(T, i, status, value)
        r, I9, com, m0 = ball_params(T, i, radius, inertia, shell_com, m_all, C)
        target = t0 + H
        t = t0
        for c in range(ncol):
            S[0, c] = y[i, c]
        # rows: 0 y, 1 stage / new y, 2..8 k1..k7
        ball_rhs_at(T, i, t, S, 0, 2, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                    force_mode, force_par, force_tab)  # fmt: skip
        h = dt[i]
        if not (h > T(0.0)):
            if h0 > T(0.0):
                h = h0
            else:  # Hairer's starting step, per ball
                for c in range(ncol):
                    S[8, c] = S[0, c]
                d0 = rms_scaled(T, S, 8, 0, 0, ncol, rtol, atol, False)
                d1 = rms_scaled(T, S, 2, 0, 0, ncol, rtol, atol, False)
                if d0 < T(1e-5) or d1 < T(1e-5):
                    hh = T(1e-6)
                else:
                    hh = T(0.01) * d0 / max(d1, T(1e-300))
                for c in range(ncol):
                    S[1, c] = S[0, c] + hh * S[2, c]
                ball_rhs_at(T, i, t + hh, S, 1, 3, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
                for c in range(ncol):
                    S[8, c] = S[3, c] - S[2, c]
                d2 = rms_scaled(T, S, 8, 0, 0, ncol, rtol, atol, False) / hh
                dm = max(d1, d2)
                if dm <= T(1e-15):
                    h1 = max(T(1e-6), hh * T(1e-3))
                else:
                    h1 = (T(0.01) / max(dm, T(1e-300))) ** T(0.2)
                h = min(min(T(100.0) * hh, h1), h_max)
        n_acc, n_rej, attempts = acc[i], rej[i], 0
        just_rejected = jr[i] != 0
        while True:
            remaining = target - t
            if not (remaining > T(0.0)):
                break
            attempts += 1
            if attempts > max_steps:
                status[i, 0] = TOO_MANY_STEPS
                status[i, 1] = 1
                status[i, 2] = QUANTITY_MAX_STEPS
                value[i] = T(max_steps)
                return
            last = h >= remaining
            hs = min(h, remaining)
            if hs <= T(16.0 * 2.2e-16) * max(abs(t), T(1.0)) and not last:
                status[i, 0] = STEP_UNDERFLOW
                status[i, 1] = 1
                status[i, 2] = QUANTITY_H
                value[i] = hs
                return
            for c in range(ncol):
                S[1, c] = S[0, c] + hs * (T(A21) * S[2, c])
            ball_rhs_at(T, i, t + T(C2) * hs, S, 1, 3, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
            for c in range(ncol):
                S[1, c] = S[0, c] + hs * (T(A31) * S[2, c] + T(A32) * S[3, c])
            ball_rhs_at(T, i, t + T(C3) * hs, S, 1, 4, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
            for c in range(ncol):
                S[1, c] = S[0, c] + hs * (T(A41) * S[2, c] + T(A42) * S[3, c] + T(A43) * S[4, c])
            ball_rhs_at(T, i, t + T(C4) * hs, S, 1, 5, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
            for c in range(ncol):
                S[1, c] = S[0, c] + hs * (T(A51) * S[2, c] + T(A52) * S[3, c] + T(A53) * S[4, c] + T(A54) * S[5, c])
            ball_rhs_at(T, i, t + T(C5) * hs, S, 1, 6, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
            for c in range(ncol):
                S[1, c] = S[0, c] + hs * (T(A61) * S[2, c] + T(A62) * S[3, c] + T(A63) * S[4, c] + T(A64) * S[5, c]
                                          + T(A65) * S[6, c])  # fmt: skip
            ball_rhs_at(T, i, t + hs, S, 1, 7, ncol, C, True, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
            for c in range(ncol):
                S[1, c] = S[0, c] + hs * (T(A71) * S[2, c] + T(A73) * S[4, c] + T(A74) * S[5, c] + T(A75) * S[6, c]
                                          + T(A76) * S[7, c])  # fmt: skip
            bad = project_and_check(T, S, 1, ncol)  # the 5th-order solution, projected before the FSAL stage
            ball_rhs_at(T, i, t + hs, S, 1, 8, ncol, C, False, K, r, I9, com, m0, gravity, rail_info, rail_par, act_par,
                        force_mode, force_par, force_tab)  # fmt: skip
            err = T(0.0)
            for c in range(ncol):
                e = hs * (T(E1) * S[2, c] + T(E3) * S[4, c] + T(E4) * S[5, c] + T(E5) * S[6, c] + T(E6) * S[7, c]
                          + T(E7) * S[8, c])  # fmt: skip
                sc = atol + rtol * max(abs(S[0, c]), abs(S[1, c]))
                err += (e / sc) * (e / sc)
            err = sqrt(err / T(ncol))
            if bad >= 0 or not finite(err):
                status[i, 0] = NOT_FINITE
                status[i, 1] = 1
                status[i, 2] = bad if bad >= 0 else 0
                value[i] = S[1, bad] if bad >= 0 else err
                return
            ok = err <= T(1.0)
            if ok:
                for c in range(ncol):
                    S[0, c] = S[1, c]
                    S[2, c] = S[8, c]
                if last:
                    t = target
                else:
                    t = t + hs
            fac = min(fac_max, max(fac_min, safety * max(err, T(1e-10)) ** T(-0.2)))
            if ok and just_rejected:
                fac = min(fac, T(1.0))
            if ok and last and fac >= T(1.0):
                h_new = h
            else:
                h_new = hs * fac
            h = min(h_new, h_max)
            just_rejected = not ok
            if ok:
                n_acc += 1
            else:
                n_rej += 1
        for c in range(ncol):
            y1[i, c] = S[0, c]
        dt1[i] = h
        acc1[i] = n_acc
        rej1[i] = n_rej
        jr1[i] = 1 if just_rejected else 0

    @jit
    def disk_psi_ddot(T, i, t, psi, w, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par, act_par,
                      force_mode, force_x, force_tab, ftab_row):  # fmt: skip
        """``ψ̈ = [r F_1 - Σ m_i (s_i3 a_i1 - s_i1 a_i3)] / [d2 + Σ m_i (s_i1² + s_i3²)]`` with
        ``s_i = (ζ_i1 - r sin ψ, ζ_i3 + r cos ψ)``, ``a_i1 = -g sin ψ - ψ̇² ζ_i1 + 2ψ̇ ζ̇_i3 + ζ̈_i1``,
        ``a_i3 = g cos ψ - ψ̇² ζ_i3 - 2ψ̇ ζ̇_i1 + ζ̈_i3`` (App. C, :mod:`granular.bodies.rolling_ball.disk`)."""
        sn, cs = sin(psi), cos(psi)
        r = radius[row(radius, i)]
        bm = row(m_all, i)
        zero = T(0.0)
        num = zero
        den = zero
        for k in range(m_all.shape[1]):
            m = m_all[bm, k]
            if k == 0:
                bc = row(shell_com, i)
                z1, z3 = shell_com[bc, 0], shell_com[bc, 1]
                dz1, dz3, ddz1, ddz3 = zero, zero, zero, zero
            else:
                chi, dchi, ddchi = mass_point(T, i, k - 1, t, rail_info, rail_par, act_par)
                z1, z3, dz1, dz3, ddz1, ddz3 = chi[0], chi[2], dchi[0], dchi[2], ddchi[0], ddchi[2]
            s1 = z1 - r * sn
            s3 = z3 + r * cs
            a1 = -gravity * sn - w * w * z1 + T(2.0) * w * dz3 + ddz1
            a3 = gravity * cs - w * w * z3 - T(2.0) * w * dz1 + ddz3
            num -= m * (s3 * a1 - s1 * a3)
            den += m * (s1 * s1 + s3 * s3)
        if force_mode == 1:
            num += r * force_x[row(force_x, i)]
        elif force_mode == 2:
            num += r * force_tab[ftab_row, row(force_tab[ftab_row], i)]
        return num / (inertia_y[row(inertia_y, i)] + den)

    @jit
    def rolling_disk_rk4_body(i, steps, h, t0, first, y, y1, radius, inertia_y, shell_com, m_all, gravity,
                              rail_info, rail_par, act_par, force_mode, force_x, force_tab, status, value):  # fmt: skip
        """``steps`` RK4 steps of ``y = (ψ, ψ̇, x)``, ``ẏ = (ψ̇, ψ̈, r ψ̇)``; step ``j`` starts at
        ``t0 + (first + j) h``, as for the ball."""
        T = y.dtype.type
        clear_status(T, i, status, value)
        psi, w, x = y[i, 0], y[i, 1], y[i, 2]
        r = radius[row(radius, i)]
        half = T(0.5)
        for j in range(steps):
            t = t0 + T(first + j) * h
            t1 = t0 + T(first + j + 1) * h
            th = t + half * h
            a1 = disk_psi_ddot(T, i, t, psi, w, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par,
                               act_par, force_mode, force_x, force_tab, 3 * j)  # fmt: skip
            p2, w2 = psi + half * h * w, w + half * h * a1
            a2 = disk_psi_ddot(T, i, th, p2, w2, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par,
                               act_par, force_mode, force_x, force_tab, 3 * j + 1)  # fmt: skip
            p3, w3 = psi + half * h * w2, w + half * h * a2
            a3 = disk_psi_ddot(T, i, th, p3, w3, radius, inertia_y, shell_com, m_all, gravity, rail_info, rail_par,
                               act_par, force_mode, force_x, force_tab, 3 * j + 1)  # fmt: skip
            p4, w4 = psi + h * w3, w + h * a3
            a4 = disk_psi_ddot(T, i, t1, p4, w4, radius, inertia_y, shell_com, m_all, gravity, rail_info,
                               rail_par, act_par, force_mode, force_x, force_tab, 3 * j + 2)  # fmt: skip
            sixth = h / T(6.0)
            two = T(2.0)
            psi_n = psi + sixth * (w + two * (w2 + w3) + w4)
            w_n = w + sixth * (a1 + two * (a2 + a3) + a4)
            x_n = x + sixth * (r * w + two * (r * w2 + r * w3) + r * w4)
            bad = -1
            if not finite(psi_n):
                bad = 0
            elif not finite(w_n):
                bad = 1
            elif not finite(x_n):
                bad = 2
            if bad >= 0:
                status[i, 0] = NOT_FINITE
                status[i, 1] = j + 1
                status[i, 2] = bad
                value[i] = psi_n if bad == 0 else (w_n if bad == 1 else x_n)
                return
            psi, w, x = psi_n, w_n, x_n
        y1[i, 0], y1[i, 1], y1[i, 2] = psi, w, x

    return SimpleNamespace(rolling_ball_rk4_body=rolling_ball_rk4_body, rolling_ball_dopri_body=rolling_ball_dopri_body,
                           rolling_disk_rk4_body=rolling_disk_rk4_body)  # fmt: skip
