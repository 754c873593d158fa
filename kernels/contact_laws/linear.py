"""Linear spring-dashpot with Cundall-Strack friction: the classic ``hooke/history`` law.

Normal: ``F_n = k_n δ - η_n v_n`` with ``η_n = β(e) sqrt(m* k_n)``,
``β(e) = -2 ln e / sqrt(π² + ln² e)`` (the table holds β:
:func:`granular.particles.forces.laws.restitution_factor`), so a normal impact rebounds with restitution ``e``
at every speed and lasts ``t_c = π / ω_d``, ``ω_d = sqrt(k_n/m* - (η_n/2m*)²)`` (LAMMPS
``pair granular hooke k_n e damping coeff_restitution``). As in LAMMPS and in the classic
law, ``F_n`` is not clipped: the dashpot pulls at the end of a damped impact.

Tangential (Cundall and Strack 1979; LAMMPS ``tangential linear_history k_t x_γt μ``): a
spring ``ξ`` turned into the tangent plane each step with its length kept, stretched by
``h v_t`` (the drift's relative velocity of the contact points), and a dashpot
``η_t = x_γt η_n``: ``F_t = -k_t ξ - η_t v_t``, limited to ``μ |F_n|``. When the limit is
exceeded the force and the spring are scaled by the same factor ``c = μ|F_n|/|F_t|``
(``docs/contacts.md``): the contact then stores no energy the step did not put into it,
so the energy dissipated by friction never decreases. (LAMMPS resets the spring to
``ξ = -(F_t + η_t v_t)/k_t`` instead, which adds ``η_t²|v_t|²/2k_t`` to the spring when
``η_t > 0``; with ``x_γt = 0`` the two agree.)

Dissipated by friction in a step: the dashpot's ``c h η_t |v_t|²`` and the slider's, the
work of the spring's force over the stretch ``q = h v_t`` (trapezoidal, from ``k_t ξ_0``
before it to ``c k_t ξ`` after, ``ξ = ξ_0 + q`` the trial spring) less the change of the
spring's energy: ``k_t (1 - c)(ξ_0·ξ + c |ξ|²)/2``, 0 while the contact sticks
(``c = 1``) or has no friction (``c = 0``), and exact for a slider whose limit changes
linearly over a step. It is negative only where the stretch reverses a spring already
above a limit that fell since the last step; it is booked as 0 there.

Geometry as LAMMPS ``pair granular``: the contact point's velocity uses the full radii,
``v_t - (r_a ω_a + r_b ω_b) × n``; the tangential force acts with the arms
``r_a - δ/2``, ``r_b - δ/2`` between particles (they add up to the centre distance, so
angular momentum is conserved) and ``r`` against a wall. A wall is a body of infinite
radius and mass at rest (``m* = m``).

History per contact: ``ξ`` (3) and a flag (1 while in contact).
"""

import math

from .interface import EVALUATE, NONE, RELEASE, in_wall_frame

NAME = "linear"
HISTORY = 4
VELOCITIES = True
MOMENTS = True
DISSIPATES = True
ODD = False
#: Leading floats of the history that change sign with the pair's orientation: the
#: tangential spring ``ξ``, a displacement of ``a`` relative to ``b``.
ORIENTED = 3
#: Columns per pair of materials: normal stiffness k_n [M/T²], β(e) [-], tangential
#: stiffness k_t [M/T²], tangential damping ratio x_γt [-], friction μ [-].
PARAMS = ("kn", "beta", "kt", "xgt", "mu")


def linear_contact(T, geometry, velocities, drift, params, hist, h):
    """The law for one contact. ``geometry = (n1, n2, n3, δ, r_a, r_b, l_a, l_b, m*)``:
    the unit normal from ``b`` to ``a``, the overlap, the radii that move the contact
    point (full radii; 0 for a wall) and the torque arms; ``velocities`` and ``drift`` as
    in :func:`kernels.contact_laws.hertz_mindlin.contact_law` (relative velocity, ``ω_a``,
    ``ω_b``): the dashpots see the first, the spring is stretched by the second;
    ``params = (k_n, β, k_t, x_γt, μ)``; ``hist = (ξ, flag)``; ``h`` the step (0: no
    update). Returns ``(F_a, M_a, M_b, history (4), U, D_n, D_f, D_r, D_t)``."""
    n1, n2, n3, delta, ra, rb, la, lb, mstar = geometry
    dv1, dv2, dv3, wa1, wa2, wa3, wb1, wb2, wb3 = velocities
    ev1, ev2, ev3, ea1, ea2, ea3, eb1, eb2, eb3 = drift
    kn, beta, kt, xgt, mu = params
    s1, s2, s3, flag = hist
    eta = beta * math.sqrt(mstar * kn)
    vn = dv1 * n1 + dv2 * n2 + dv3 * n3
    fel = kn * delta
    fn = fel - eta * vn
    d_normal = h * eta * vn * vn
    # velocity of a's contact point relative to b's, tangential part
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
    r1, r2, r3 = s1, s2, s3  # the spring before the step's stretch
    if h > T(0.0):  # the spring turned into the tangent plane, its length kept, then stretched
        ss = s1 * s1 + s2 * s2 + s3 * s3
        sn = s1 * n1 + s2 * n2 + s3 * n3
        p1 = s1 - sn * n1
        p2 = s2 - sn * n2
        p3 = s3 - sn * n3
        pp = p1 * p1 + p2 * p2 + p3 * p3
        c = math.sqrt(ss / pp) if pp > T(0.0) else T(0.0)
        r1 = c * p1
        r2 = c * p2
        r3 = c * p3
        s1 = r1 + h * et1
        s2 = r2 + h * et2
        s3 = r3 + h * et3
    etat = xgt * eta
    ft1 = -kt * s1 - etat * vt1
    ft2 = -kt * s2 - etat * vt2
    ft3 = -kt * s3 - etat * vt3
    limit = mu * abs(fn)
    ff = ft1 * ft1 + ft2 * ft2 + ft3 * ft3
    c = T(1.0)
    if ff > limit * limit:  # sliding: force and spring scaled onto the Coulomb limit
        c = limit / math.sqrt(ff)
    u_trial = T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3)
    d_friction = T(0.0)
    if h > T(0.0):  # the dashpot's work and the slider's (module docstring)
        slide = T(0.5) * kt * (T(1.0) - c) * (r1 * s1 + r2 * s2 + r3 * s3 + c * (s1 * s1 + s2 * s2 + s3 * s3))
        d_friction = c * h * etat * (vt1 * vt1 + vt2 * vt2 + vt3 * vt3) + max(T(0.0), slide)
    ft1 = c * ft1
    ft2 = c * ft2
    ft3 = c * ft3
    s1 = c * s1
    s2 = c * s2
    s3 = c * s3
    u = T(0.5) * kn * delta * delta + c * c * u_trial
    # the tangential force at the contact point: moments -l n × F_t
    q1 = n2 * ft3 - n3 * ft2
    q2 = n3 * ft1 - n1 * ft3
    q3 = n1 * ft2 - n2 * ft1
    z = T(0.0)
    return (
        fn * n1 + ft1, fn * n2 + ft2, fn * n3 + ft3,
        -la * q1, -la * q2, -la * q3,
        -lb * q1, -lb * q2, -lb * q3,
        s1, s2, s3, T(1.0),
        u, d_normal, d_friction, z, z,
    )  # fmt: skip


def build(jit):
    law = jit(linear_contact)

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
        if dist2 >= reach * reach:
            return RELEASE if held else NONE
        return EVALUATE

    @jit
    def pair(T, d1, d2, d3, dist2, reach, lo, hi, p, hist, h):
        dist = dist2 ** T(0.5)
        delta = reach - dist
        half = T(0.5) * delta
        geometry = (d1 / dist, d2 / dist, d3 / dist, delta, lo[3], hi[3], lo[3] - half, hi[3] - half,
                    lo[4] * hi[4] / (lo[4] + hi[4]))  # fmt: skip
        velocities = (lo[5] - hi[5], lo[6] - hi[6], lo[7] - hi[7], lo[8], lo[9], lo[10], hi[8], hi[9], hi[10])
        drift = (lo[11] - hi[11], lo[12] - hi[12], lo[13] - hi[13], lo[14], lo[15], lo[16], hi[14], hi[15], hi[16])
        return law(T, geometry, velocities, drift, p, hist, h)

    @jit
    def release(T, ra, rb, p, hist):
        return T(0.0), T(0.5) * p[2] * (hist[0] * hist[0] + hist[1] * hist[1] + hist[2] * hist[2]), T(0.0), T(0.0)

    @jit
    def energy(T, d1, d2, d3, dist2, reach, lo, hi, p, hist):
        delta = reach - dist2 ** T(0.5)
        return T(0.5) * p[0] * delta * delta + T(0.5) * p[2] * (
            hist[0] * hist[0] + hist[1] * hist[1] + hist[2] * hist[2]
        )

    @jit
    def wall_contact(T, dist, r, held):
        if not (r - dist > T(0.0)):
            return RELEASE if held else NONE
        return EVALUATE

    @jit
    def wall(T, n1, n2, n3, dist, me, p, hist, h):
        z = T(0.0)
        return law(T, (n1, n2, n3, me[3] - dist, me[3], z, me[3], z, me[4]),
                   (me[5], me[6], me[7], me[8], me[9], me[10], z, z, z),
                   (me[11], me[12], me[13], me[14], me[15], me[16], z, z, z), p, hist, h)  # fmt: skip

    @jit
    def wall_release(T, r, p, hist):
        return T(0.0), T(0.5) * p[2] * (hist[0] * hist[0] + hist[1] * hist[1] + hist[2] * hist[2]), T(0.0), T(0.0)

    @jit
    def wall_energy(T, n1, n2, n3, dist, me, p, hist):
        delta = me[3] - dist
        return T(0.5) * p[0] * delta * delta + T(0.5) * p[2] * (
            hist[0] * hist[0] + hist[1] * hist[1] + hist[2] * hist[2]
        )

    from types import SimpleNamespace

    moving = jit(in_wall_frame)

    return SimpleNamespace(moving=moving, body=body, params=params, load=load, orient=orient, store=store, contact=contact, pair=pair,
                           release=release, energy=energy, wall_contact=wall_contact, wall=wall,
                           wall_release=wall_release, wall_energy=wall_energy)  # fmt: skip
