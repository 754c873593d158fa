"""Scalar laws: plain Python functions on floats, no arrays, no allocation.

Each function here is compiled twice, by ``numba.njit`` for the CPU loops
(:mod:`kernels.cpu`) and by ``numba.cuda.jit(device=True)`` for the GPU kernels
(:mod:`kernels.cuda`), through the factories in :mod:`kernels.particles`,
:mod:`kernels.interactions` and :mod:`kernels.grid`. Vectors travel as separate
components and come back as tuples. Only ``math`` is used, so a law also runs as plain
Python (the CUDA simulator relies on that). A law calls no other law (plain functions
cannot be called from compiled code); the bodies compose them.

Precision: the first argument ``T`` of every law that needs a constant is the float type
of the run (``numpy.float64`` or ``numpy.float32``, taken from an array with
``arr.dtype.type``), and every floating-point constant is written ``T(c)``. Numba then
types the whole law in that precision: a float32 run is single precision throughout (no
silent promotion to double by a Python float literal). ``tests/test_kernel_sources.py``
checks that no bare float literal is left in the kernel sources.

Conventions: quaternions ``(q0, q1, q2, q3)`` scalar first, Hamilton product; RRP as in
paper 003, eqs. (3)-(5).
"""

import math

# Integrator identifiers shared by the host code and the kernels.
SCHEME_EXACT = 0  # map (23): closed-form RRP increment
SCHEME_VERLET = 1  # map (25): velocity-Verlet ("explicit Newmark") increment
SCHEME_CAMPELLO = 2  # map (27): Campello's symplectic Euler

# Status codes written per particle by the step kernels (0 = fine). A particle keeps the
# code of its first failure in a block of steps; the block's report takes the largest.
STATUS_OK = 0
STATUS_ROTATION_DOMAIN = 1  # incremental rotation >= pi/2 (outside the closed form)
STATUS_NOT_FINITE = 2  # a NaN or infinity in the new state or forces
STATUS_SKIN = 3  # moved more than skin/2 since the neighbour list was built

# Contact search modes.
CONTACTS_NONE = 0
CONTACTS_LIST = 1  # Verlet neighbour list
CONTACTS_ALL_PAIRS = 2  # brute force over every other particle


def quat_multiply(p0, p1, p2, p3, q0, q1, q2, q3):
    """Hamilton product ``p ⊗ q`` (so ``R(p ⊗ q) = R(p) R(q)``)."""
    return (
        p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
        p0 * q1 + q0 * p1 + p2 * q3 - p3 * q2,
        p0 * q2 + q0 * p2 + p3 * q1 - p1 * q3,
        p0 * q3 + q0 * p3 + p1 * q2 - p2 * q1,
    )


def quat_from_rrp(T, a1, a2, a3):
    """Unit quaternion ``(2, α)/sqrt(4 + |α|²)`` of RRP ``α`` (inverse of ``α = 2 q_vec/q0``)."""
    inv = T(1.0) / math.sqrt(T(4.0) + a1 * a1 + a2 * a2 + a3 * a3)
    return T(2.0) * inv, a1 * inv, a2 * inv, a3 * inv


def quat_rotate(T, q0, q1, q2, q3, v1, v2, v3):
    """``R(q) v`` for a unit quaternion: ``v + q0 t + q_vec × t`` with ``t = 2 q_vec × v``."""
    t1 = T(2.0) * (q2 * v3 - q3 * v2)
    t2 = T(2.0) * (q3 * v1 - q1 * v3)
    t3 = T(2.0) * (q1 * v2 - q2 * v1)
    return (
        v1 + q0 * t1 + (q2 * t3 - q3 * t2),
        v2 + q0 * t2 + (q3 * t1 - q1 * t3),
        v3 + q0 * t3 + (q1 * t2 - q2 * t1),
    )


def rrp_increment(T, scheme, h, w1, w2, w3):
    """RRP increment ``Δα`` of one step and the step-size measure ``ρ`` (must be < 1).

    ``w`` is the spatial angular velocity the increment integrates:
    ``w = Ω_k + h RM_k / 2J`` for maps (23) and (25), ``w = Ω_{k+1}`` for map (27).

    * (23b) exact:  ``Δα = 2h / (1 + sqrt(1 - h²|w|²)) w``, real only for ``ρ = h|w| < 1``.
    * (25b), (27b): ``Δα = h w``, ``ρ = |Δα|/2``.

    In all three cases ``ρ < 1`` is the same condition, an incremental rotation
    ``2 atan(|Δα|/2)`` below π/2; at ``ρ ≥ 1`` (or a non-finite ``ρ``) the returned
    increment is meaningless and the caller flags the particle.
    """
    ww = w1 * w1 + w2 * w2 + w3 * w3
    if scheme == SCHEME_EXACT:
        rho = h * math.sqrt(ww)
        disc = T(1.0) - rho * rho
        if disc > T(0.0):
            c = T(2.0) * h / (T(1.0) + math.sqrt(disc))
        else:
            c = T(0.0)
    else:
        c = h
        rho = T(0.5) * h * math.sqrt(ww)
    return c * w1, c * w2, c * w3, rho


def pendulum_moment(p1, p2, p3, mg, e1, e2, e3):
    """3D pendulum, eq. (39): ``U = -m g e·p`` with ``p = Rρ0``; spatial moment ``RM = m g p × e``.

    ``ρ0`` is the body-frame vector from the pivot to the centre of mass, ``e`` the unit
    vertical of (39) and ``mg = m g``. Returns ``(RM1, RM2, RM3, U)``. The printed (40)
    is garbled; this moment is ``-∂U/∂θ`` for ``R → exp(S(θ)) R`` (see ``docs/physics.md``).
    """
    U = -mg * (e1 * p1 + e2 * p2 + e3 * p3)
    return (
        mg * (p2 * e3 - p3 * e2),
        mg * (p3 * e1 - p1 * e3),
        mg * (p1 * e2 - p2 * e1),
        U,
    )


def is_finite(a):
    """``True`` unless ``a`` is NaN or infinite (``a - a`` is NaN unless ``a`` is finite)."""
    d = a - a
    return d == d


def quat_log(T, q0, q1, q2, q3):
    """Rotation vector (angle in ``[0, π]``) of a unit quaternion, by ``atan2``.

    ``θ = 2 atan2(|q_vec|, |q0|) sign(q0) q_vec / |q_vec|``; the factor tends to
    ``2/|q0|`` as ``q_vec → 0``, so small angles are exact (no ``arccos``).
    """
    n = math.sqrt(q1 * q1 + q2 * q2 + q3 * q3)
    s = T(1.0)
    if q0 < T(0.0):
        s = T(-1.0)
    a0 = s * q0
    if n > T(0.0):
        c = s * T(2.0) * math.atan2(n, a0) / n
    else:
        c = s * T(2.0) / a0
    return c * q1, c * q2, c * q3


def axial_bond(T, d1, d2, d3, rest_length, ka):
    """Binder axial load (51)-(52): ``U^a = ½ K^a (r/r0 - 1)²``, ``r = |d|``, ``d = x_a - x_b``.

    Returns the force on end ``a``, ``F_a = -K^a (r/r0 - 1)/r0 · d/r`` (``F_b = -F_a``),
    the energy and the axial strain ``r/r0 - 1``.
    """
    r = math.sqrt(d1 * d1 + d2 * d2 + d3 * d3)
    strain = r / rest_length - T(1.0)
    c = -ka * strain / (rest_length * r)
    return c * d1, c * d2, c * d3, T(0.5) * ka * strain * strain, strain


def shear_bond(T, d1, d2, d3, ua1, ua2, ua3, ub1, ub2, ub3, ks):
    """Binder shear load, the rigid-motion-invariant reading of (53)-(55) (``docs/physics.md``).

    ``n = d/|d|`` is the current bond direction (``d = x_a - x_b``); ``u_a = R_a n0_a``,
    ``u_b = R_b n0_b`` are the bond directions carried by the two ends (both equal to
    ``n`` in the reference configuration). With ``c_a = u_a·n``, ``c_b = u_b·n``:

    ``U^s = ½ K^s [(1 - c_a)² + (1 - c_b)²]``,
    ``F_a = -∂U/∂x_a = K^s/r (I - n nᵀ)((1 - c_a) u_a + (1 - c_b) u_b)``, ``F_b = -F_a``,
    ``RM_a = K^s (1 - c_a) u_a × n``, ``RM_b = K^s (1 - c_b) u_b × n``.

    Invariant under a rigid rotation of the whole system, so linear and angular momentum
    are conserved (``(x_a - x_b) × F_a + RM_a + RM_b = 0``).
    Returns ``(F_a[3], RM_a[3], RM_b[3], U)``.
    """
    r = math.sqrt(d1 * d1 + d2 * d2 + d3 * d3)
    n1, n2, n3 = d1 / r, d2 / r, d3 / r
    ta = T(1.0) - (ua1 * n1 + ua2 * n2 + ua3 * n3)
    tb = T(1.0) - (ub1 * n1 + ub2 * n2 + ub3 * n3)
    g1 = ta * ua1 + tb * ub1
    g2 = ta * ua2 + tb * ub2
    g3 = ta * ua3 + tb * ub3
    gn = g1 * n1 + g2 * n2 + g3 * n3
    c = ks / r
    ca = ks * ta
    cb = ks * tb
    return (
        c * (g1 - gn * n1),
        c * (g2 - gn * n2),
        c * (g3 - gn * n3),
        ca * (ua2 * n3 - ua3 * n2),
        ca * (ua3 * n1 - ua1 * n3),
        ca * (ua1 * n2 - ua2 * n1),
        cb * (ub2 * n3 - ub3 * n2),
        cb * (ub3 * n1 - ub1 * n3),
        cb * (ub1 * n2 - ub2 * n1),
        T(0.5) * ks * (ta * ta + tb * tb),
    )


def hertz_contact(T, distance, reach, k):
    """Particle-particle (56)-(57) and particle-wall contact.

    ``U = (2/5) K [1 - s/ρ]_+^{5/2}`` with the centre distance (or signed wall distance)
    ``s`` and the reach ``ρ = D_a/2 + D_b/2`` (``D_a/2`` for a wall). The printed factor
    5/2 of (56) contradicts (57); 2/5 makes ``-dU/ds`` equal (57) (``docs/physics.md``).
    Returns the repulsive force magnitude ``f = K/ρ [1 - s/ρ]_+^{3/2}`` (along the
    separation direction) and ``U``.
    """
    overlap = T(1.0) - distance / reach
    if overlap > T(0.0):
        root = math.sqrt(overlap)
        return k / reach * overlap * root, T(0.4) * k * overlap * overlap * root
    return T(0.0), T(0.0)


def compensated_add(s, c, x):
    """Neumaier's compensated summation: add ``x`` to the running sum ``s`` with
    correction ``c``; the total is ``s + c``. For the few terms of a particle's contacts
    this is the correctly rounded sum in practice, so it does not depend on the order of
    the terms (contrived cancellations aside)."""
    t = s + x
    if abs(s) >= abs(x):
        c += (s - t) + x
    else:
        c += (x - t) + s
    return t, c


def cell_of(T, x, inv_cell):
    """Integer cell coordinate ``floor(x / cell)`` of one position component, clamped to
    ±1e12 cells (a NaN goes to the low edge), so integer arithmetic on it cannot overflow."""
    c = x * inv_cell
    if not (c > T(-1.0e12)):
        c = T(-1.0e12)
    elif c > T(1.0e12):
        c = T(1.0e12)
    return int(math.floor(c))


def cell_hash(cx, cy, cz, r, mask):
    """Bucket of cell ``(cx, cy, cz)`` of replica ``r`` (0 for a single system) in a hash
    table of ``mask + 1`` (a power of two) buckets. Each coordinate keeps its low 21 bits,
    so the products stay below 2^48 and the hash is the same in Python, on the CPU and on
    the GPU (no integer overflow; ``r``, an int32 array element, is widened first)."""
    m21 = 2097151
    return (((cx & m21) * 73856093) ^ ((cy & m21) * 19349663) ^ ((cz & m21) * 83492791)
            ^ ((int(r) & m21) * 50331653)) & mask  # fmt: skip


#: Floats kept per contact of the dissipative law: tangential spring ``ξ`` (3), rolling
#: spring ``ψ`` (3), twisting angle ``φ`` (1) and the overlap at the last step (1).
HISTORY = 8
#: Numbers of a pair's slot in the per-pair pass: force (3) and moment (3) on the slot's
#: end, and two of padding, so that a float64 slot is one 64-byte cache line.
CONTACT_SLOT = 8
#: Columns of the per-particle dissipated-energy ledger: normal damping, friction slip,
#: rolling resistance, twisting resistance.
DISSIPATION = 4
#: Columns of a material pair's parameters (``kernels.layout.ContactLaw.pair``).
PAIR_ESTAR = 0  # effective Young's modulus E* [pressure]
PAIR_GSTAR = 1  # effective shear modulus G* [pressure]
PAIR_ALPHA = 2  # Tsuji damping factor α(e) [-]
PAIR_MU = 3  # sliding friction μ [-]
PAIR_MU_ROLL = 4  # rolling friction μ_r [-]
PAIR_MU_TWIST = 5  # twisting friction μ_t [-]
PAIR_DAMP_N = 6  # α sqrt(4 E*/3): the normal dashpot is PAIR_DAMP_N sqrt(m* a) [sqrt(pressure)]
PAIR_DAMP_T = 7  # α sqrt(8 G*): the tangential one, η_t = PAIR_DAMP_T sqrt(m* a) [sqrt(pressure)]
PAIR_WIDTH = 8
#: The columns :func:`granular_contact` takes as ``params``, in its order.
PAIR_LAW = (PAIR_ESTAR, PAIR_GSTAR, PAIR_DAMP_N, PAIR_DAMP_T, PAIR_MU, PAIR_MU_ROLL, PAIR_MU_TWIST)
#: Which velocity the dissipative forces see in maps (23) and (25).
VELOCITY_HALF = 0  # v_{k+1/2}, the half-kicked velocity of the drift
VELOCITY_PREDICTED = 1  # v_{k+1/2} + h F_k / 2m, a prediction of v_{k+1}


def granular_contact(T, geometry, velocities, drift, params, springs, h):
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
      ``F_t`` is scaled onto ``μ F_n`` and the spring reset to ``ξ = -(F_t + η_t v_t)/k_t``;
    * rolling (spring-dashpot-slider): ``v_r = R* (ω_a - ω_b) × n``, spring ``ψ``,
      ``F_r = -k_t ψ - η_t v_r``, ``|F_r| ≤ μ_r F_n``, couple ``±R* n × F_r``;
    * twisting (Marshall): ``ω_n = (ω_a - ω_b)·n``, angle ``φ``,
      ``M_t = -k_t a²/2 φ - η_t a²/2 ω_n``, ``|M_t| ≤ μ_t a F_n``, couple ``±M_t n``.

    The moments are ``M_a = -l_a n × F_t + R* n × F_r + M_t n``,
    ``M_b = -l_b n × F_t - R* n × F_r - M_t n``: with ``l_a + l_b`` the centre distance
    they conserve angular momentum. Returns ``(F_a[3], M_a[3], M_b[3], history[8], U,
    D_normal, D_friction, D_rolling, D_twisting)``: the updated springs and overlap, the
    elastic energy after the step (normal and springs) and the energy each part
    dissipated in the step (the work it did on the relative motion less the change of
    its spring energy, so that total plus dissipated energy balances). One flat law (a
    law calls no other): the two springs repeat the same slider code.
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
    # tangential spring: turned into the tangent plane, length kept, then stretched
    vt1 = c1 - vn * n1
    vt2 = c2 - vn * n2
    vt3 = c3 - vn * n3
    ss = s1 * s1 + s2 * s2 + s3 * s3
    u_old = T(0.5) * kt_old * ss
    sn = s1 * n1 + s2 * n2 + s3 * n3
    p1 = s1 - sn * n1
    p2 = s2 - sn * n2
    p3 = s3 - sn * n3
    pp = p1 * p1 + p2 * p2 + p3 * p3
    c = math.sqrt(ss / pp) if pp > T(0.0) else T(0.0)
    s1 = c * p1 + h * (e1 - en * n1)
    s2 = c * p2 + h * (e2 - en * n2)
    s3 = c * p3 + h * (e3 - en * n3)
    ft1 = -kt * s1 - eta * vt1
    ft2 = -kt * s2 - eta * vt2
    ft3 = -kt * s3 - eta * vt3
    limit = mu * fn
    ff = ft1 * ft1 + ft2 * ft2 + ft3 * ft3
    if ff > limit * limit:  # sliding
        c = limit / math.sqrt(ff)
        ft1 = c * ft1
        ft2 = c * ft2
        ft3 = c * ft3
        if kt > T(0.0):
            inv = T(1.0) / kt
            s1 = -(ft1 + eta * vt1) * inv
            s2 = -(ft2 + eta * vt2) * inv
            s3 = -(ft3 + eta * vt3) * inv
    ut = T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3)
    d_friction = -h * (ft1 * vt1 + ft2 * vt2 + ft3 * vt3) - (ut - u_old)
    # rolling resistance: the same spring-dashpot-slider on v_r = R* (ω_a - ω_b) × n
    o1 = wa1 - wb1
    o2 = wa2 - wb2
    o3 = wa3 - wb3
    g1 = ea1 - eb1
    g2 = ea2 - eb2
    g3 = ea3 - eb3
    ss = r1 * r1 + r2 * r2 + r3 * r3
    if mu_roll > T(0.0):
        vr1 = rstar * (o2 * n3 - o3 * n2)
        vr2 = rstar * (o3 * n1 - o1 * n3)
        vr3 = rstar * (o1 * n2 - o2 * n1)
        u_old = T(0.5) * kt_old * ss
        sn = r1 * n1 + r2 * n2 + r3 * n3
        p1 = r1 - sn * n1
        p2 = r2 - sn * n2
        p3 = r3 - sn * n3
        pp = p1 * p1 + p2 * p2 + p3 * p3
        c = math.sqrt(ss / pp) if pp > T(0.0) else T(0.0)
        r1 = c * p1 + h * rstar * (g2 * n3 - g3 * n2)
        r2 = c * p2 + h * rstar * (g3 * n1 - g1 * n3)
        r3 = c * p3 + h * rstar * (g1 * n2 - g2 * n1)
        fr1 = -kt * r1 - eta * vr1
        fr2 = -kt * r2 - eta * vr2
        fr3 = -kt * r3 - eta * vr3
        limit = mu_roll * fn
        ff = fr1 * fr1 + fr2 * fr2 + fr3 * fr3
        if ff > limit * limit:
            c = limit / math.sqrt(ff)
            fr1 = c * fr1
            fr2 = c * fr2
            fr3 = c * fr3
            if kt > T(0.0):
                inv = T(1.0) / kt
                r1 = -(fr1 + eta * vr1) * inv
                r2 = -(fr2 + eta * vr2) * inv
                r3 = -(fr3 + eta * vr3) * inv
        ur = T(0.5) * kt * (r1 * r1 + r2 * r2 + r3 * r3)
        d_rolling = -h * (fr1 * vr1 + fr2 * vr2 + fr3 * vr3) - (ur - u_old)
    else:  # no rolling resistance: no spring (one left by a checkpoint is released)
        fr1 = fr2 = fr3 = r1 = r2 = r3 = ur = T(0.0)
        d_rolling = T(0.5) * kt_old * ss
    # twisting resistance
    u_old = T(0.25) * kt_old * rstar * delta_old * tw * tw
    if mu_twist > T(0.0):
        wn = o1 * n1 + o2 * n2 + o3 * n3
        ktw = T(0.5) * kt * a * a
        etw = T(0.5) * eta * a * a
        tw = tw + h * (g1 * n1 + g2 * n2 + g3 * n3)
        mt = -ktw * tw - etw * wn
        limit = mu_twist * a * fn
        if abs(mt) > limit:
            mt = limit if mt > T(0.0) else -limit
            if ktw > T(0.0):
                tw = -(mt + etw * wn) / ktw
        utw = T(0.5) * ktw * tw * tw
        d_twisting = -h * mt * wn - (utw - u_old)
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


def granular_energy(T, delta, rstar, estar, gstar, s1, s2, s3, r1, r2, r3, tw):
    """Elastic energy of a dissipative contact with springs ``ξ, ψ, φ`` at overlap
    ``delta`` (no update): ``(8/15) E* sqrt(R*) δ^{5/2} + k_t/2 (|ξ|² + |ψ|²) + k_t a²/4 φ²``."""
    root = math.sqrt(delta)
    sr = math.sqrt(rstar)
    kt = T(8.0) * gstar * sr * root
    un = T(0.4) * T(4.0) / T(3.0) * estar * sr * delta * delta * root
    return un + T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3 + r1 * r1 + r2 * r2 + r3 * r3
                              + T(0.5) * rstar * delta * tw * tw)  # fmt: skip


def granular_release(T, rstar, gstar, springs):
    """Energies ``(U_ξ, U_ψ, U_φ)`` the tangential, rolling and twisting springs
    ``springs = (ξ, ψ, φ, δ_old)`` (a HISTORY-tuple) held at the last step (overlap
    ``δ_old``) of a contact that has opened: the springs are
    released, so this energy is booked as dissipated by friction, rolling and twisting
    (after a slip the spring balances the dashpot as well as the slider, and keeps
    ``η_t² |v_t|² / 2 k_t`` however small the overlap: it does not vanish by itself)."""
    s1, s2, s3, r1, r2, r3, tw, delta_old = springs
    kt = T(8.0) * gstar * math.sqrt(rstar * delta_old)
    return (T(0.5) * kt * (s1 * s1 + s2 * s2 + s3 * s3), T(0.5) * kt * (r1 * r1 + r2 * r2 + r3 * r3),
            T(0.25) * kt * rstar * delta_old * tw * tw)  # fmt: skip
