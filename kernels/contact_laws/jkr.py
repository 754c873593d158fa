"""JKR cohesion for fine powders (Johnson, Kendall and Roberts 1971), as LAMMPS
``pair granular jkr`` computes it.

Normal: the contact radius ``a`` follows from the overlap by the JKR relation
``δ = a²/R* - 2 sqrt(π γ a / E*)`` (the larger root, in closed form as LAMMPS inverts
it), and ``F_ne = 4 E* a³/(3 R*) - sqrt(16 π γ E* a³)``; ``γ`` is the surface energy of
one surface (the work of adhesion is ``w = 2γ``), so the pull-off force is
``F_po = 3 π γ R* = (3/2) π w R*``. A contact forms at ``δ > 0`` (the force jumps to
``-(8/9) F_po``) and holds down to ``δ_c = -(3 π² γ² R* / 16 E*²)^{1/3}``, where ``F_ne``
reaches ``-F_po``; then it breaks. Damping: ``F_n = F_ne - η v_n`` with ``η = d m* a``
(LAMMPS ``damping viscoelastic``; ``d`` [1/(L T)]).

Energy: the stored energy of a contact is ``U(δ) = G(a) - G(a_c)``, the work of ``F_ne``
from the break point, with ``G(a) = 8E*a⁵/(15R*²) - (8/3R*) sqrt(π γ E*) a^{7/2} + 2πγa²``
and ``a_c = (9 π γ R*² / 4E*)^{1/3}``; it is 0 when the contact breaks, and when a contact
forms its ``U`` drops from 0 to ``-W``, ``W = G(a_c) - G(a(0))`` the hysteresis of the
JKR cycle, which is booked as dissipated (normal) at that step: total plus dissipated
energy is then conserved up to the time step's error.

Tangential: Mindlin's spring ``k_t = 8 G* a`` with the JKR ``a`` and a dashpot
``η_t = η``, limited to ``μ |F_ne + 2 F_po|`` (LAMMPS, after Thornton); force and spring
scaled together on sliding, and the spring rescaled by ``sqrt(k_t,old / k_t)`` when the
contact radius changes, so that its energy changes only by the work done on it; the
friction's dissipation booked as in :mod:`kernels.contact_laws.linear`. Geometry as
LAMMPS: the contact point moves with the full radii; arms ``r - δ/2`` between particles,
``r`` at a wall.

History per contact: ``ξ`` (3) and the contact radius at the last step (non-zero while in
contact).
"""

import math

from .interface import EVALUATE, NONE, in_wall_frame

NAME = "jkr"
HISTORY = 4
VELOCITIES = True
MOMENTS = True
DISSIPATES = True
ODD = False
#: Leading floats of the history that change sign with the pair's orientation: the
#: tangential spring ``ξ``, a displacement of ``a`` relative to ``b``.
ORIENTED = 3
#: Columns per pair of materials: E* [pressure], G* [pressure], γ [energy/area],
#: d [1/(L T)], μ [-].
PARAMS = ("estar", "gstar", "gamma", "damp", "mu")


def scalars(jit):
    """The law's scalar functions compiled with ``jit`` (they call one another, so they
    are made together): ``cube_root``, ``contact_radius``, ``jkr_energy``, ``contact_law``,
    ``stored_energy``. ``scalars(lambda f: f)`` gives them as plain Python."""

    @jit
    def cube_root(T, x):
        """The real cube root of ``x``."""
        if x >= T(0.0):
            return x ** (T(1.0) / T(3.0))
        return -((-x) ** (T(1.0) / T(3.0)))

    @jit
    def contact_radius(T, delta, rstar, estar, gamma):
        """JKR contact radius at overlap ``delta`` (LAMMPS's closed form of the larger root of
        ``δ = a²/R* - 2 sqrt(π γ a/E*)``)."""
        pi = T(math.pi)
        r2 = rstar * rstar
        dr = delta * rstar
        dr2 = dr * dr
        t0 = gamma * gamma * r2 * r2 * estar
        t1 = T(27.0) * pi * pi * t0
        t2 = T(8.0) * dr * dr2 * estar * estar * estar
        t3 = T(4.0) * dr2 * estar
        s1 = max(T(0.0), t0 * (t1 + T(2.0) * t2))
        t4 = cube_root(T, t1 + t2 + T(3.0) * math.sqrt(T(3.0)) * pi * math.sqrt(s1))
        t5 = t3 / t4 + t4 / estar
        t6 = math.sqrt(max(T(0.0), T(2.0) * dr + t5))
        s3 = max(T(0.0), T(4.0) * dr - t5 + T(6.0) * math.sqrt(T(6.0)) * gamma * pi * r2 / (estar * t6))
        return (t6 + math.sqrt(s3)) / math.sqrt(T(6.0))

    @jit
    def jkr_energy(T, a, rstar, estar, gamma):
        """``G(a)``: the antiderivative of ``F_ne dδ/da`` (module docstring)."""
        pi = T(math.pi)
        return (T(8.0) * estar * a ** T(5.0) / (T(15.0) * rstar * rstar)
                - T(8.0) / (T(3.0) * rstar) * math.sqrt(pi * gamma * estar) * a ** T(3.5) + T(2.0) * pi * gamma * a * a)  # fmt: skip

    @jit
    def contact_law(T, geometry, velocities, drift, params, hist, h):
        """The law for one contact. ``geometry = (n1, n2, n3, δ, r_a, r_b, l_a, l_b, R*, m*)``
        (see :func:`kernels.contact_laws.linear.linear_contact`); ``params = (E*, G*, γ, d,
        μ)``; ``hist = (ξ, a_old)``. A contact held at the last step (``a_old > 0``) beyond
        ``δ_c`` breaks: no force, its spring's energy released. Returns ``(F_a, M_a, M_b,
        history (4), U, D_n, D_f, D_r, D_t)``."""
        n1, n2, n3, delta, ra, rb, la, lb, rstar, mstar = geometry
        dv1, dv2, dv3, wa1, wa2, wa3, wb1, wb2, wb3 = velocities
        ev1, ev2, ev3, ea1, ea2, ea3, eb1, eb2, eb3 = drift
        estar, gstar, gamma, damp, mu = params
        s1, s2, s3, a_old = hist
        z = T(0.0)
        pi = T(math.pi)
        held = a_old > z
        pulloff = (T(3.0) * pi * pi * gamma * gamma * rstar / (T(16.0) * estar * estar)) ** (T(1.0) / T(3.0))
        if delta < -pulloff or (not held and not (delta > z)):  # broken (or not formed): springs released
            u_spring = T(4.0) * gstar * a_old * (s1 * s1 + s2 * s2 + s3 * s3)
            return z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, u_spring if held else z, z, z
        a = contact_radius(T, delta, rstar, estar, gamma)
        a3 = a * a * a
        fne = T(4.0) * estar * a3 / (T(3.0) * rstar) - math.sqrt(T(16.0) * pi * gamma * estar * a3)
        eta = damp * mstar * a
        vn = dv1 * n1 + dv2 * n2 + dv3 * n3
        fn = fne - eta * vn
        a_c = (T(9.0) * pi * gamma * rstar * rstar / (T(4.0) * estar)) ** (T(1.0) / T(3.0))
        g_c = jkr_energy(T, a_c, rstar, estar, gamma)
        d_normal = h * eta * vn * vn
        if not held and h > z:  # the contact forms: the cycle's hysteresis W
            a0 = (T(4.0) * pi * gamma * rstar * rstar / estar) ** (T(1.0) / T(3.0))
            d_normal += g_c - jkr_energy(T, a0, rstar, estar, gamma)
        # velocity of a's contact point relative to b's, tangential part (full radii)
        w1 = ra * wa1 + rb * wb1
        w2 = ra * wa2 + rb * wb2
        w3 = ra * wa3 + rb * wb3
        vt1 = dv1 - vn * n1 - (w2 * n3 - w3 * n2)
        vt2 = dv2 - vn * n2 - (w3 * n1 - w1 * n3)
        vt3 = dv3 - vn * n3 - (w1 * n2 - w2 * n1)
        en = ev1 * n1 + ev2 * n2 + ev3 * n3
        g1 = ra * ea1 + rb * eb1
        g2 = ra * ea2 + rb * eb2
        g3 = ra * ea3 + rb * eb3
        et1 = ev1 - en * n1 - (g2 * n3 - g3 * n2)
        et2 = ev2 - en * n2 - (g3 * n1 - g1 * n3)
        et3 = ev3 - en * n3 - (g1 * n2 - g2 * n1)
        kt = T(8.0) * gstar * a
        r1, r2, r3 = s1, s2, s3  # the spring before the step's stretch
        if h > z:  # turned into the tangent plane, energy kept through the change of k_t, stretched
            ss = s1 * s1 + s2 * s2 + s3 * s3
            sn = s1 * n1 + s2 * n2 + s3 * n3
            p1 = s1 - sn * n1
            p2 = s2 - sn * n2
            p3 = s3 - sn * n3
            pp = p1 * p1 + p2 * p2 + p3 * p3
            c = math.sqrt(ss / pp * a_old / a) if pp > z else z
            r1 = c * p1
            r2 = c * p2
            r3 = c * p3
            s1 = r1 + h * et1
            s2 = r2 + h * et2
            s3 = r3 + h * et3
        ft1 = -kt * s1 - eta * vt1
        ft2 = -kt * s2 - eta * vt2
        ft3 = -kt * s3 - eta * vt3
        limit = mu * abs(fne + T(6.0) * pi * gamma * rstar)
        ff = ft1 * ft1 + ft2 * ft2 + ft3 * ft3
        c = T(1.0)
        if ff > limit * limit:  # sliding: force and spring scaled onto the Coulomb limit
            c = limit / math.sqrt(ff)
        u_trial = T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3)
        d_friction = z
        if h > z:  # the dashpot's work and the slider's (as kernels.contact_laws.linear)
            slide = T(0.5) * kt * (T(1.0) - c) * (r1 * s1 + r2 * s2 + r3 * s3 + c * (s1 * s1 + s2 * s2 + s3 * s3))
            d_friction = c * h * eta * (vt1 * vt1 + vt2 * vt2 + vt3 * vt3) + max(z, slide)
        ft1 = c * ft1
        ft2 = c * ft2
        ft3 = c * ft3
        s1 = c * s1
        s2 = c * s2
        s3 = c * s3
        u = jkr_energy(T, a, rstar, estar, gamma) - g_c + c * c * u_trial
        q1 = n2 * ft3 - n3 * ft2
        q2 = n3 * ft1 - n1 * ft3
        q3 = n1 * ft2 - n2 * ft1
        return (
            fn * n1 + ft1, fn * n2 + ft2, fn * n3 + ft3,
            -la * q1, -la * q2, -la * q3,
            -lb * q1, -lb * q2, -lb * q3,
            s1, s2, s3, a,
            u, d_normal, d_friction, z, z,
        )  # fmt: skip

    @jit
    def stored_energy(T, delta, rstar, estar, gstar, gamma, s1, s2, s3, a_old):
        """The energy a contact holds at overlap ``delta`` with its history, without update
        (0 for a contact that is broken or not formed)."""
        pulloff = (T(3.0) * T(math.pi) ** T(2.0) * gamma * gamma * rstar / (T(16.0) * estar * estar)) ** (
            T(1.0) / T(3.0)
        )
        if delta < -pulloff or (not (a_old > T(0.0)) and not (delta > T(0.0))):
            return T(0.0)
        a = contact_radius(T, delta, rstar, estar, gamma)
        a_c = (T(9.0) * T(math.pi) * gamma * rstar * rstar / (T(4.0) * estar)) ** (T(1.0) / T(3.0))
        return (jkr_energy(T, a, rstar, estar, gamma) - jkr_energy(T, a_c, rstar, estar, gamma)
                + T(4.0) * gstar * a * (s1 * s1 + s2 * s2 + s3 * s3))  # fmt: skip

    from types import SimpleNamespace

    return SimpleNamespace(cube_root=cube_root, contact_radius=contact_radius, jkr_energy=jkr_energy,
                           contact_law=contact_law, stored_energy=stored_energy)  # fmt: skip


def build(jit):
    S = scalars(jit)
    law, stored = S.contact_law, S.stored_energy

    @jit
    def body(T, k, dyn, par):
        """Position, radius, mass, the velocities the dashpots see and the drift's."""
        x, vp, wp = dyn.x, dyn.vp, dyn.wp
        d = 3 if vp.shape[1] > 3 else 0
        return (x[k, 0], x[k, 1], x[k, 2], par.radius[k], par.mass[k],
                vp[k, 0], vp[k, 1], vp[k, 2], wp[k, 0], wp[k, 1], wp[k, 2],
                vp[k, d], vp[k, d + 1], vp[k, d + 2], wp[k, d], wp[k, d + 1], wp[k, d + 2])  # fmt: skip

    @jit
    def params(table, row):
        return table[row, 0], table[row, 1], table[row, 2], table[row, 3], table[row, 4]

    @jit
    def load(a, i, s):
        return a[i, s, 0], a[i, s, 1], a[i, s, 2], a[i, s, 3]

    @jit
    def orient(h, sign):
        return sign * h[0], sign * h[1], sign * h[2], h[3]

    @jit
    def store(a, i, s, r):
        a[i, s, 0] = r[9]
        a[i, s, 1] = r[10]
        a[i, s, 2] = r[11]
        a[i, s, 3] = r[12]

    @jit
    def contact(T, dist2, reach, held):
        """A contact forms at a positive overlap and, once formed, lasts to its pull-off
        separation, which the law itself tests."""
        if dist2 < reach * reach or held:
            return EVALUATE
        return NONE

    @jit
    def pair(T, d1, d2, d3, dist2, reach, lo, hi, p, hist, h):
        dist = dist2 ** T(0.5)
        delta = reach - dist
        half = T(0.5) * delta
        geometry = (d1 / dist, d2 / dist, d3 / dist, delta, lo[3], hi[3], lo[3] - half, hi[3] - half,
                    lo[3] * hi[3] / reach, lo[4] * hi[4] / (lo[4] + hi[4]))  # fmt: skip
        velocities = (lo[5] - hi[5], lo[6] - hi[6], lo[7] - hi[7], lo[8], lo[9], lo[10], hi[8], hi[9], hi[10])
        drift = (lo[11] - hi[11], lo[12] - hi[12], lo[13] - hi[13], lo[14], lo[15], lo[16], hi[14], hi[15], hi[16])
        return law(T, geometry, velocities, drift, p, hist, h)

    @jit
    def release(T, ra, rb, p, hist):
        return (
            T(0.0),
            T(4.0) * p[1] * hist[3] * (hist[0] * hist[0] + hist[1] * hist[1] + hist[2] * hist[2]),
            T(0.0),
            T(0.0),
        )

    @jit
    def energy(T, d1, d2, d3, dist2, reach, lo, hi, p, hist):
        return stored(T, reach - dist2 ** T(0.5), lo[3] * hi[3] / reach, p[0], p[1], p[2], hist[0], hist[1], hist[2],
                      hist[3])  # fmt: skip

    @jit
    def wall_contact(T, dist, r, held):
        if r - dist > T(0.0) or held:
            return EVALUATE
        return NONE

    @jit
    def wall(T, n1, n2, n3, dist, me, p, hist, h):
        z = T(0.0)
        return law(T, (n1, n2, n3, me[3] - dist, me[3], z, me[3], z, me[3], me[4]),
                   (me[5], me[6], me[7], me[8], me[9], me[10], z, z, z),
                   (me[11], me[12], me[13], me[14], me[15], me[16], z, z, z), p, hist, h)  # fmt: skip

    @jit
    def wall_release(T, r, p, hist):
        return (
            T(0.0),
            T(4.0) * p[1] * hist[3] * (hist[0] * hist[0] + hist[1] * hist[1] + hist[2] * hist[2]),
            T(0.0),
            T(0.0),
        )

    @jit
    def wall_energy(T, n1, n2, n3, dist, me, p, hist):
        return stored(T, me[3] - dist, me[3], p[0], p[1], p[2], hist[0], hist[1], hist[2], hist[3])

    from types import SimpleNamespace

    moving = jit(in_wall_frame)

    return SimpleNamespace(moving=moving, body=body, params=params, load=load, orient=orient, store=store, contact=contact, pair=pair,
                           release=release, energy=energy, wall_contact=wall_contact, wall=wall,
                           wall_release=wall_release, wall_energy=wall_energy)  # fmt: skip
