"""The dissipative contact law: Hertz with Tsuji damping, Mindlin tangential springs with
the Coulomb limit, rolling and twisting resistance (``docs/contacts.md``).

Parameters per pair of materials (:data:`PARAMS`, mixed from the materials' Young's
moduli, Poisson's ratios, restitution and friction coefficients by
:mod:`granular.particles.forces.materials`); history per contact: the tangential spring
``ξ`` (3), the rolling spring ``ψ`` (3), the twisting angle ``φ`` and the overlap at the
last step, which is non-zero exactly while the contact holds springs. A wall is a body of
infinite radius and mass at rest (``l_b = 0``, ``R* = r``, ``m* = m``).
"""

import math

from .interface import EVALUATE, NONE, RELEASE, in_wall_frame

NAME = "hertz-mindlin"
#: Floats kept per contact: tangential spring ``ξ`` (3), rolling spring ``ψ`` (3),
#: twisting angle ``φ`` (1) and the overlap at the last step (1).
HISTORY = 8
VELOCITIES = True
MOMENTS = True
DISSIPATES = True
ODD = False
#: Leading floats of the history that change sign with the pair's orientation: the
#: tangential spring ``ξ``, a displacement of ``a`` relative to ``b`` (the rolling
#: spring and the twisting angle do not: ``(ω_a - ω_b) × n`` and ``(ω_a - ω_b)·n`` keep
#: their sign when ``a`` and ``b`` trade places).
ORIENTED = 3
PARAMS = ("estar", "gstar", "alpha", "mu", "mu_roll", "mu_twist", "damp_n", "damp_t")

#: Columns of a material pair's parameters in the pair table.
PAIR_ESTAR = 0  # effective Young's modulus E* [pressure]
PAIR_GSTAR = 1  # effective shear modulus G* [pressure]
PAIR_ALPHA = 2  # Tsuji damping factor α(e) [-]
PAIR_MU = 3  # sliding friction μ [-]
PAIR_MU_ROLL = 4  # rolling friction μ_r [-]
PAIR_MU_TWIST = 5  # twisting friction μ_t [-]
PAIR_DAMP_N = 6  # α sqrt(4 E*/3): the normal dashpot is PAIR_DAMP_N sqrt(m* a) [sqrt(pressure)]
PAIR_DAMP_T = 7  # α sqrt(8 G*): the tangential one, η_t = PAIR_DAMP_T sqrt(m* a) [sqrt(pressure)]
PAIR_WIDTH = 8
#: The columns :func:`contact_law` takes as ``params``, in its order.
PAIR_LAW = (PAIR_ESTAR, PAIR_GSTAR, PAIR_DAMP_N, PAIR_DAMP_T, PAIR_MU, PAIR_MU_ROLL, PAIR_MU_TWIST)


def contact_law(T, geometry, velocities, drift, params, springs, h):
    """Dissipative contact of body ``a`` with body ``b`` (a particle or a wall), in the
    canonical orientation. Arguments come as tuples (a call of more than 30 arguments is
    compiled by Python as ``f(*args)``, which Numba cannot inline):
    ``geometry = (n1, n2, n3, delta, la, lb, R*, m*)``, ``velocities = (dv, w_a, w_b)``
    (9 numbers: the velocities the dashpots see, ``docs/contacts.md``), ``drift`` the same
    for the velocities of the step's drift (``v_{k+1/2}``: they stretch the springs by the
    step's actual relative displacement), ``params = (E*, G*, d_n, d_t, μ, μ_r, μ_t)``
    (``d_n = α sqrt(4E*/3)``, ``d_t = α sqrt(8G*)``: :data:`PAIR_DAMP_N`,
    :data:`PAIR_DAMP_T`), ``springs = (ξ, ψ, φ, δ_old)`` (8 numbers): ``n`` the unit normal from ``b`` to ``a``, ``delta > 0`` the
    overlap, ``la``, ``lb`` the distances from the centres to the contact point
    (``la + lb`` = centre distance), ``R*``, ``m*`` the effective radius and mass,
    ``dv = v_a - v_b``, ``w`` the spatial angular velocities, ``h`` the step (0: no
    update of the springs, no dissipation). Laws (``docs/contacts.md``):

    * normal, Hertz with Tsuji damping: ``F_n = max(0, k_n δ^{3/2} - α sqrt(m* k_n) δ^{1/4} v_n)``,
      ``k_n = (4/3) E* sqrt(R*)`` (``α sqrt(m* k_n) δ^{1/4} = d_n sqrt(m* a)``); the restitution depends on ``α`` only, not on the speed;
    * tangential, Mindlin no-slip spring with damping and the Coulomb limit: spring ``ξ``
      turned into the tangent plane (its length kept), ``ξ += h v_t`` (``v_t`` of ``drift``);
      ``F_t = -k_t ξ - η_t v_t``, ``k_t = 8 G* a``, ``a = sqrt(R* δ)``,
      ``η_t = α sqrt(m* k_t) = d_t sqrt(m* a)``; when ``|F_t| > μ F_n`` it slides:
      ``F_t`` and the spring are scaled by the same factor onto ``μ F_n``; as ``k_t``
      follows ``a``, the spring is scaled by ``sqrt(k_t,old/k_t)`` over each step (half
      before the stretch, half after, ``k_t`` of the mean overlap in between), so that
      its energy changes only by the work done on it;
    * rolling (spring-dashpot-slider): ``v_r = R* (ω_a - ω_b) × n``, spring ``ψ``,
      ``F_r = -k_t ψ - η_t v_r``, ``|F_r| ≤ μ_r F_n``, couple ``±R* n × F_r``;
    * twisting (Marshall): ``ω_n = (ω_a - ω_b)·n``, angle ``φ``,
      ``M_t = -k_t a²/2 φ - η_t a²/2 ω_n``, ``|M_t| ≤ μ_t a F_n``, couple ``±M_t n``.

    The moments are ``M_a = -l_a n × F_t + R* n × F_r + M_t n``,
    ``M_b = -l_b n × F_t - R* n × F_r - M_t n``: with ``l_a + l_b`` the centre distance
    they conserve angular momentum. Returns ``(F_a[3], M_a[3], M_b[3], history[8], U,
    D_normal, D_friction, D_rolling, D_twisting)``: the updated springs and overlap, the
    elastic energy after the step (normal and springs) and the energy each part
    dissipated in the step: the normal dashpot's work, and for each spring-dashpot-slider
    its dashpot's work plus the spring energy the slider let go, so each is ≥ 0 and
    total plus dissipated energy balances to the scheme's accuracy (``docs/contacts.md``).
    One flat law (a law calls no other): the three springs repeat the same slider code.
    """
    n1, n2, n3, delta, la, lb, rstar, mstar = geometry
    dv1, dv2, dv3, wa1, wa2, wa3, wb1, wb2, wb3 = velocities
    ev1, ev2, ev3, ea1, ea2, ea3, eb1, eb2, eb3 = drift
    estar, gstar, damp_n, damp_t, mu, mu_roll, mu_twist = params
    s1, s2, s3, r1, r2, r3, tw, delta_old = springs
    a = math.sqrt(rstar * delta)  # contact radius; k_n sqrt(δ) = (4/3) E* a
    fel = T(4.0) / T(3.0) * estar * a * delta
    un = T(0.4) * fel * delta
    # sqrt(m* k_n sqrt(δ)) and sqrt(m* k_t) share sqrt(m* a)
    sma = math.sqrt(mstar * a)
    # velocity of a's contact point relative to b's: dv + ω_a × (-l_a n) - ω_b × (l_b n)
    c1 = dv1 - la * (wa2 * n3 - wa3 * n2) - lb * (wb2 * n3 - wb3 * n2)
    c2 = dv2 - la * (wa3 * n1 - wa1 * n3) - lb * (wb3 * n1 - wb1 * n3)
    c3 = dv3 - la * (wa1 * n2 - wa2 * n1) - lb * (wb1 * n2 - wb2 * n1)
    vn = c1 * n1 + c2 * n2 + c3 * n3
    # the same with the drift velocities (the springs' stretch in the step)
    e1 = ev1 - la * (ea2 * n3 - ea3 * n2) - lb * (eb2 * n3 - eb3 * n2)
    e2 = ev2 - la * (ea3 * n1 - ea1 * n3) - lb * (eb3 * n1 - eb1 * n3)
    e3 = ev3 - la * (ea1 * n2 - ea2 * n1) - lb * (eb1 * n2 - eb2 * n1)
    en = e1 * n1 + e2 * n2 + e3 * n3
    fn = fel - damp_n * sma * vn
    if fn < T(0.0):  # no pull: a damped contact releases instead of holding on
        fn = T(0.0)
    d_normal = -h * (fn - fel) * vn
    kt = T(8.0) * gstar * a
    eta = damp_t * sma
    kt_old = T(8.0) * gstar * math.sqrt(rstar * delta_old)
    # the springs' energy kept through the change of stiffness since the last step
    # (k_t follows the contact radius): a spring scaled by sqrt(k_t,old / k_t)
    # half before the step's stretch, half after (k_t at the mean overlap in between)
    kt_mid = T(8.0) * gstar * math.sqrt(rstar * T(0.5) * (delta_old + delta))
    keep = math.sqrt(kt_old / kt_mid) if kt_mid > T(0.0) else T(0.0)
    post = math.sqrt(kt_mid / kt) if kt > T(0.0) else T(0.0)
    # tangential spring: turned into the tangent plane, energy kept, then stretched
    vt1 = c1 - vn * n1
    vt2 = c2 - vn * n2
    vt3 = c3 - vn * n3
    ss = s1 * s1 + s2 * s2 + s3 * s3
    # The spring's energy before the stretch (wa), the stretch's work against it (wb) and
    # its own (wc), at k_t of the mean overlap: with c the Coulomb factor below, the
    # energy the bodies give the spring over the step's displacement (the mean of the
    # spring's force at the step's two ends) less the change of its energy is
    # (1 - c²) wa + (1/2 + c/2 - c²) wb + (c - c²) wc: zero while it sticks, the slider's
    # loss while it slides (booked >= 0: a spring unloaded past zero within one sliding
    # step would give a negative value, taken as 0); the dashpot dissipates c h η |v_t|².
    wa = wb = wc = T(0.0)
    if h > T(0.0):
        sn = s1 * n1 + s2 * n2 + s3 * n3
        p1 = s1 - sn * n1
        p2 = s2 - sn * n2
        p3 = s3 - sn * n3
        pp = p1 * p1 + p2 * p2 + p3 * p3
        c = keep * math.sqrt(ss / pp) if pp > T(0.0) else T(0.0)
        p1 = c * p1
        p2 = c * p2
        p3 = c * p3
        q1 = h * (e1 - en * n1)
        q2 = h * (e2 - en * n2)
        q3 = h * (e3 - en * n3)
        wa = T(0.5) * kt_mid * (p1 * p1 + p2 * p2 + p3 * p3)
        wb = kt_mid * (p1 * q1 + p2 * q2 + p3 * q3)
        wc = T(0.5) * kt_mid * (q1 * q1 + q2 * q2 + q3 * q3)
        s1 = post * (p1 + q1)
        s2 = post * (p2 + q2)
        s3 = post * (p3 + q3)
    ft1 = -kt * s1 - eta * vt1
    ft2 = -kt * s2 - eta * vt2
    ft3 = -kt * s3 - eta * vt3
    limit = mu * fn
    ff = ft1 * ft1 + ft2 * ft2 + ft3 * ft3
    c = T(1.0)
    if ff > limit * limit:  # sliding: force and spring scaled onto the Coulomb limit
        c = limit / math.sqrt(ff)
    u_trial = T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3)
    ft1 = c * ft1
    ft2 = c * ft2
    ft3 = c * ft3
    s1 = c * s1
    s2 = c * s2
    s3 = c * s3
    ut = c * c * u_trial
    d_friction = T(0.0)
    if h > T(0.0):
        d_friction = max(T(0.0), (T(1.0) - c * c) * wa + (T(0.5) + T(0.5) * c - c * c) * wb + (c - c * c) * wc) + c * h * eta * (vt1 * vt1 + vt2 * vt2 + vt3 * vt3)
    # rolling resistance: the same spring-dashpot-slider on v_r = R* (ω_a - ω_b) × n
    o1 = wa1 - wb1
    o2 = wa2 - wb2
    o3 = wa3 - wb3
    g1 = ea1 - eb1
    g2 = ea2 - eb2
    g3 = ea3 - eb3
    ss = r1 * r1 + r2 * r2 + r3 * r3
    d_rolling = T(0.0)
    if mu_roll > T(0.0):
        vr1 = rstar * (o2 * n3 - o3 * n2)
        vr2 = rstar * (o3 * n1 - o1 * n3)
        vr3 = rstar * (o1 * n2 - o2 * n1)
        wa = wb = wc = T(0.0)
        if h > T(0.0):
            sn = r1 * n1 + r2 * n2 + r3 * n3
            p1 = r1 - sn * n1
            p2 = r2 - sn * n2
            p3 = r3 - sn * n3
            pp = p1 * p1 + p2 * p2 + p3 * p3
            c = keep * math.sqrt(ss / pp) if pp > T(0.0) else T(0.0)
            p1 = c * p1
            p2 = c * p2
            p3 = c * p3
            q1 = h * rstar * (g2 * n3 - g3 * n2)
            q2 = h * rstar * (g3 * n1 - g1 * n3)
            q3 = h * rstar * (g1 * n2 - g2 * n1)
            wa = T(0.5) * kt_mid * (p1 * p1 + p2 * p2 + p3 * p3)
            wb = kt_mid * (p1 * q1 + p2 * q2 + p3 * q3)
            wc = T(0.5) * kt_mid * (q1 * q1 + q2 * q2 + q3 * q3)
            r1 = post * (p1 + q1)
            r2 = post * (p2 + q2)
            r3 = post * (p3 + q3)
        fr1 = -kt * r1 - eta * vr1
        fr2 = -kt * r2 - eta * vr2
        fr3 = -kt * r3 - eta * vr3
        limit = mu_roll * fn
        ff = fr1 * fr1 + fr2 * fr2 + fr3 * fr3
        c = T(1.0)
        if ff > limit * limit:
            c = limit / math.sqrt(ff)
        u_trial = T(0.5) * kt * (r1 * r1 + r2 * r2 + r3 * r3)
        fr1 = c * fr1
        fr2 = c * fr2
        fr3 = c * fr3
        r1 = c * r1
        r2 = c * r2
        r3 = c * r3
        ur = c * c * u_trial
        if h > T(0.0):
            d_rolling = max(T(0.0), (T(1.0) - c * c) * wa + (T(0.5) + T(0.5) * c - c * c) * wb + (c - c * c) * wc) + c * h * eta * (vr1 * vr1 + vr2 * vr2 + vr3 * vr3)
    else:  # no rolling resistance: no spring (one left by a checkpoint is released)
        fr1 = fr2 = fr3 = r1 = r2 = r3 = ur = T(0.0)
        d_rolling = T(0.5) * kt_old * ss
    # twisting resistance
    u_old = T(0.25) * kt_old * rstar * delta_old * tw * tw
    d_twisting = T(0.0)
    if mu_twist > T(0.0):
        wn = o1 * n1 + o2 * n2 + o3 * n3
        ktw = T(0.5) * kt * a * a
        etw = T(0.5) * eta * a * a
        wa = wb = wc = T(0.0)
        if h > T(0.0):  # k_tw = k_t a²/2: its energy kept through the change of a, then turned
            dmid = T(0.5) * (delta_old + delta)
            kmid = T(0.5) * kt_mid * rstar * dmid
            # sqrt(k_t,old δ_old / (k_t,mid δ_mid)) = (δ_old/δ_mid)^(3/4) = keep³ (and the
            # factor after the stretch post³): no square root or division of their own
            p1 = tw * (keep * keep * keep)
            q1 = h * (g1 * n1 + g2 * n2 + g3 * n3)
            wa = T(0.5) * kmid * p1 * p1
            wb = kmid * p1 * q1
            wc = T(0.5) * kmid * q1 * q1
            tw = (post * post * post) * (p1 + q1)
        mt = -ktw * tw - etw * wn
        limit = mu_twist * a * fn
        c = T(1.0)
        if abs(mt) > limit:
            c = limit / abs(mt)
        u_trial = T(0.5) * ktw * tw * tw
        mt = c * mt
        tw = c * tw
        utw = c * c * u_trial
        if h > T(0.0):
            d_twisting = max(T(0.0), (T(1.0) - c * c) * wa + (T(0.5) + T(0.5) * c - c * c) * wb + (c - c * c) * wc) + c * h * etw * wn * wn
    else:  # no twisting resistance
        mt = tw = utw = T(0.0)
        d_twisting = u_old
    # moments: the tangential force at the contact point, the rolling and twisting couples
    q1 = n2 * ft3 - n3 * ft2
    q2 = n3 * ft1 - n1 * ft3
    q3 = n1 * ft2 - n2 * ft1
    g1 = rstar * (n2 * fr3 - n3 * fr2) + mt * n1
    g2 = rstar * (n3 * fr1 - n1 * fr3) + mt * n2
    g3 = rstar * (n1 * fr2 - n2 * fr1) + mt * n3
    return (
        fn * n1 + ft1, fn * n2 + ft2, fn * n3 + ft3,
        g1 - la * q1, g2 - la * q2, g3 - la * q3,
        -g1 - lb * q1, -g2 - lb * q2, -g3 - lb * q3,
        s1, s2, s3, r1, r2, r3, tw, delta,
        un + ut + ur + utw,
        d_normal, d_friction, d_rolling, d_twisting,
    )  # fmt: skip


def stored_energy(T, delta, rstar, estar, gstar, s1, s2, s3, r1, r2, r3, tw):
    """Elastic energy of a dissipative contact with springs ``ξ, ψ, φ`` at overlap
    ``delta`` (no update): ``(8/15) E* sqrt(R*) δ^{5/2} + k_t/2 (|ξ|² + |ψ|²) + k_t a²/4 φ²``."""
    root = math.sqrt(delta)
    sr = math.sqrt(rstar)
    kt = T(8.0) * gstar * sr * root
    un = T(0.4) * T(4.0) / T(3.0) * estar * sr * delta * delta * root
    return un + T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3 + r1 * r1 + r2 * r2 + r3 * r3
                              + T(0.5) * rstar * delta * tw * tw)  # fmt: skip


def released_energy(T, rstar, gstar, springs):
    """Energies ``(U_ξ, U_ψ, U_φ)`` the tangential, rolling and twisting springs
    ``springs = (ξ, ψ, φ, δ_old)`` (a :data:`HISTORY`-tuple) held at the last step (overlap
    ``δ_old``) of a contact that has opened: the springs are
    released, so this energy is booked as dissipated by friction, rolling and twisting
    (after a slip the spring balances the dashpot as well as the slider, and keeps
    ``η_t² |v_t|² / 2 k_t`` however small the overlap: it does not vanish by itself)."""
    s1, s2, s3, r1, r2, r3, tw, delta_old = springs
    kt = T(8.0) * gstar * math.sqrt(rstar * delta_old)
    return (T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3), T(0.5) * kt * (r1 * r1 + r2 * r2 + r3 * r3),
            T(0.25) * kt * rstar * delta_old * tw * tw)  # fmt: skip


def build(jit):
    law = jit(contact_law)
    stored = jit(stored_energy)
    released = jit(released_energy)

    @jit
    def body(T, k, dyn, par):
        """Position, radius, mass, the velocities ``vp``, ``wp`` the force pass sees (the
        dashpots', then the drift velocity: columns 3-5 in a step, the same columns 0-2
        outside one)."""
        x, vp, wp = dyn.x, dyn.vp, dyn.wp
        d = 3 if vp.shape[1] > 3 else 0
        return (x[k, 0], x[k, 1], x[k, 2], par.radius[k], par.mass[k],
                vp[k, 0], vp[k, 1], vp[k, 2], wp[k, 0], wp[k, 1], wp[k, 2],
                vp[k, d], vp[k, d + 1], vp[k, d + 2], wp[k, d], wp[k, d + 1], wp[k, d + 2])  # fmt: skip

    @jit
    def params(table, row):
        return (table[row, PAIR_ESTAR], table[row, PAIR_GSTAR], table[row, PAIR_DAMP_N], table[row, PAIR_DAMP_T],
                table[row, PAIR_MU], table[row, PAIR_MU_ROLL], table[row, PAIR_MU_TWIST])  # fmt: skip

    @jit
    def load(a, i, s):
        return (a[i, s, 0], a[i, s, 1], a[i, s, 2], a[i, s, 3], a[i, s, 4], a[i, s, 5], a[i, s, 6],
                a[i, s, 7])  # fmt: skip

    @jit
    def orient(h, sign):
        return sign * h[0], sign * h[1], sign * h[2], h[3], h[4], h[5], h[6], h[7]

    @jit
    def store(a, i, s, r):
        a[i, s, 0] = r[9]
        a[i, s, 1] = r[10]
        a[i, s, 2] = r[11]
        a[i, s, 3] = r[12]
        a[i, s, 4] = r[13]
        a[i, s, 5] = r[14]
        a[i, s, 6] = r[15]
        a[i, s, 7] = r[16]

    @jit
    def contact(T, dist2, reach, held):
        if dist2 >= reach * reach:
            return RELEASE if held else NONE
        return EVALUATE

    @jit
    def pair(T, d1, d2, d3, dist2, reach, lo, hi, p, hist, h):
        dist = dist2 ** T(0.5)
        delta = reach - dist
        half = T(0.5) * delta
        inv = T(1.0) / dist  # one division for the three components of the normal
        geometry = (d1 * inv, d2 * inv, d3 * inv, delta, lo[3] - half, hi[3] - half, lo[3] * hi[3] / reach,
                    lo[4] * hi[4] / (lo[4] + hi[4]))  # fmt: skip
        velocities = (lo[5] - hi[5], lo[6] - hi[6], lo[7] - hi[7], lo[8], lo[9], lo[10], hi[8], hi[9], hi[10])
        drift = (lo[11] - hi[11], lo[12] - hi[12], lo[13] - hi[13], lo[14], lo[15], lo[16], hi[14], hi[15], hi[16])
        return law(T, geometry, velocities, drift, p, hist, h)

    @jit
    def release(T, ra, rb, p, hist):
        r = released(T, ra * rb / (ra + rb), p[1], hist)
        return T(0.0), r[0], r[1], r[2]

    @jit
    def energy(T, d1, d2, d3, dist2, reach, lo, hi, p, hist):
        return stored(T, reach - dist2 ** T(0.5), lo[3] * hi[3] / reach, p[0], p[1], hist[0], hist[1], hist[2],
                      hist[3], hist[4], hist[5], hist[6])  # fmt: skip

    @jit
    def wall_contact(T, dist, r, held):
        if not (r - dist > T(0.0)):
            return RELEASE if held else NONE
        return EVALUATE

    @jit
    def wall(T, n1, n2, n3, dist, me, p, hist, h):
        z = T(0.0)
        return law(T, (n1, n2, n3, me[3] - dist, dist, z, me[3], me[4]), (me[5], me[6], me[7], me[8], me[9], me[10], z, z, z),
                   (me[11], me[12], me[13], me[14], me[15], me[16], z, z, z), p, hist, h)  # fmt: skip

    @jit
    def wall_release(T, r, p, hist):
        rel = released(T, r, p[1], hist)
        return T(0.0), rel[0], rel[1], rel[2]

    @jit
    def wall_energy(T, n1, n2, n3, dist, me, p, hist):
        return stored(T, me[3] - dist, me[3], p[0], p[1], hist[0], hist[1], hist[2], hist[3], hist[4], hist[5],
                      hist[6])  # fmt: skip

    from types import SimpleNamespace

    moving = jit(in_wall_frame)

    return SimpleNamespace(moving=moving, body=body, params=params, load=load, orient=orient, store=store, contact=contact, pair=pair,
                           release=release, energy=energy, wall_contact=wall_contact, wall=wall,
                           wall_release=wall_release, wall_energy=wall_energy)  # fmt: skip
