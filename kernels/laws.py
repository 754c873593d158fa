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
    increment is meaningless and the caller flags the particle. Returns ``Δα`` and
    ``ρ²`` (``ρ² < 1`` is the condition, with no square root of its own).
    """
    ww = w1 * w1 + w2 * w2 + w3 * w3
    if scheme == SCHEME_EXACT:
        rho2 = h * h * ww
        disc = T(1.0) - rho2
        if disc > T(0.0):
            c = T(2.0) * h / (T(1.0) + math.sqrt(disc))
        else:
            c = T(0.0)
    else:
        c = h
        rho2 = T(0.25) * h * h * ww
    return c * w1, c * w2, c * w3, rho2


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


#: ``|q_vec|²/q0²`` below which the bonds take :func:`quat_log_series`: at ``t² < 10⁻³``
#: the first term it leaves out, ``t¹²/13``, is below 10⁻¹⁹ of the sum.
LOG_SERIES = 1.0e-3


def quat_log_series(T, q0, q1, q2, q3):
    """:func:`quat_log` for small angles, and ``t² = |q_vec|²/q0²``: with ``t`` the
    tangent of half the angle, the factor ``2 atan2(|q_vec|, |q0|)/|q_vec|`` is
    ``(2/|q0|) atan(t)/t``, here by its series ``1 - t²/3 + t⁴/5 - … - t¹⁰/11``: exact to
    round-off where ``t² <`` :data:`LOG_SERIES`, angles below about 3.6° (the caller
    takes :func:`quat_log` elsewhere). No square root, no library call and no branch but
    a select, so a loop of it runs in vector lanes. At ``q_vec = 0`` the factor is ``2/|q0|``, the same number as
    :func:`quat_log`'s (``2 (1/|q0|)`` and ``2/|q0|`` round alike)."""
    nn = q1 * q1 + q2 * q2 + q3 * q3
    s = T(1.0)
    if q0 < T(0.0):
        s = T(-1.0)
    inv = T(1.0) / (s * q0)
    t2 = nn * (inv * inv)
    poly = T(1.0) - t2 * (T(1.0) / T(3.0) - t2 * (T(1.0) / T(5.0) - t2 * (T(1.0) / T(7.0) - t2 * (
        T(1.0) / T(9.0) - t2 * (T(1.0) / T(11.0))))))  # fmt: skip
    c = s * T(2.0) * inv * poly
    return c * q1, c * q2, c * q3, t2


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
    ir = T(1.0) / r
    n1, n2, n3 = d1 * ir, d2 * ir, d3 * ir
    ta = T(1.0) - (ua1 * n1 + ua2 * n2 + ua3 * n3)
    tb = T(1.0) - (ub1 * n1 + ub2 * n2 + ub3 * n3)
    g1 = ta * ua1 + tb * ub1
    g2 = ta * ua2 + tb * ub2
    g3 = ta * ua3 + tb * ub3
    gn = g1 * n1 + g2 * n2 + g3 * n3
    c = ks * ir
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


def parallel_bond(T, d1, d2, d3, ua1, ua2, ua3, ub1, ub2, ub3, th1, th2, th3, half_cos, half_sin, r0, kn, ks, kb,
                  kt, la, lb, c0, c1, c2, c3, summed):  # fmt: skip
    """Parallel bond (the cemented-beam bond of Potyondy & Cundall 2004), as an energy.

    ``d = x_a - x_b``, ``r = |d|``, ``n = d/r``; ``u_a = R_a n0_a``, ``u_b = R_b n0_b`` the
    bond directions the ends carry; ``θ`` the rotation vector of the ends' relative
    rotation (as for U^m), ``half_cos``, ``half_sin`` proportional to the cosine and sine
    of ``|θ|/2`` (the components of its quaternion: no trigonometric call, which
    single-precision GPU code would reduce in double); ``la``, ``lb`` the arms from each centre to the bond's middle
    section (``la + lb = r0``). With ``w = la u_a + lb u_b`` (so that ``d - w`` is the gap
    between the two material points of the middle section, zero at rest) and ``P = I - n nᵀ``:

    ``U = ½ kn (r - r0)² + ½ ks |P w|² + ½ kb |θ|² + ½ (kt - kb) (θ·n)²``,

    axial, shear, bending (``kb |θ - (θ·n) n|²``) and torsion (``kt (θ·n)²``). Exact
    derivatives (``docs/physics.md``, "Parallel bonds"):

    ``F_a = -kn (r - r0) n + ks (w·n) P w / r - (kt - kb)(θ·n) P θ / r``, ``F_b = -F_a``;
    ``RM_a = ks la (P w) × u_a + J⁻¹ h``, ``RM_b = ks lb (P w) × u_b - J⁻ᵀ h``, with
    ``h = kb θ + (kt - kb)(θ·n) n`` and ``J⁻¹ = I - ½ S(θ) + c S(θ)²`` the inverse left
    Jacobian of SO(3), ``c = (1 - (|θ|/2) cot(|θ|/2))/|θ|²`` (its series below 0.1 rad).

    Failure index: the bond-frame loads ``F_n = kn (r - r0)`` (tension positive),
    ``F_s = ks |P w|``, ``M_b = kb |P θ|``, ``M_t = kt |θ·n|`` combine as
    ``s1 = c0 F_n + c2 M_b``, ``s2 = c1 F_s + c3 M_t`` and the index is ``max(s1, s2)``
    (Potyondy & Cundall's tensile and shear stresses over their strengths) or, with
    ``summed``, ``s1 + s2`` (LAMMPS ``bond bpm/rotational``); the bond breaks above 1.

    Returns ``(F_a[3], RM_a[3], RM_b[3], U_axial, U_shear, U_bend+twist, strain, |θ|, index)``.
    """
    r = math.sqrt(d1 * d1 + d2 * d2 + d3 * d3)
    n1, n2, n3 = d1 / r, d2 / r, d3 / r
    stretch = r - r0
    # shear: the middle section's two material points
    w1 = la * ua1 + lb * ub1
    w2 = la * ua2 + lb * ub2
    w3 = la * ua3 + lb * ub3
    wn = w1 * n1 + w2 * n2 + w3 * n3
    p1, p2, p3 = w1 - wn * n1, w2 - wn * n2, w3 - wn * n3
    pw2 = p1 * p1 + p2 * p2 + p3 * p3
    # bending and torsion
    tn = th1 * n1 + th2 * n2 + th3 * n3
    t2 = th1 * th1 + th2 * th2 + th3 * th3
    dk = kt - kb
    h1 = kb * th1 + dk * tn * n1
    h2 = kb * th2 + dk * tn * n2
    h3 = kb * th3 + dk * tn * n3
    if t2 < T(0.01):
        c = T(1.0) / T(12.0) + t2 * (T(1.0) / T(720.0) + t2 * (T(1.0) / T(30240.0) + t2 / T(1209600.0)))
    else:
        c = (T(1.0) - T(0.5) * math.sqrt(t2) * half_cos / half_sin) / t2
    x1 = th2 * h3 - th3 * h2  # θ × h
    x2 = th3 * h1 - th1 * h3
    x3 = th1 * h2 - th2 * h1
    y1 = th2 * x3 - th3 * x2  # θ × (θ × h)
    y2 = th3 * x1 - th1 * x3
    y3 = th1 * x2 - th2 * x1
    # forces on a
    fa = -kn * stretch
    fs = ks * wn / r
    ft = -dk * tn / r
    f1 = fa * n1 + fs * p1 + ft * (th1 - tn * n1)
    f2 = fa * n2 + fs * p2 + ft * (th2 - tn * n2)
    f3 = fa * n3 + fs * p3 + ft * (th3 - tn * n3)
    sa = ks * la
    sb = ks * lb
    half_t = T(0.5)
    ma1 = sa * (p2 * ua3 - p3 * ua2) + h1 - half_t * x1 + c * y1
    ma2 = sa * (p3 * ua1 - p1 * ua3) + h2 - half_t * x2 + c * y2
    ma3 = sa * (p1 * ua2 - p2 * ua1) + h3 - half_t * x3 + c * y3
    mb1 = sb * (p2 * ub3 - p3 * ub2) - (h1 + half_t * x1 + c * y1)
    mb2 = sb * (p3 * ub1 - p1 * ub3) - (h2 + half_t * x2 + c * y2)
    mb3 = sb * (p1 * ub2 - p2 * ub1) - (h3 + half_t * x3 + c * y3)
    u_axial = half_t * kn * stretch * stretch
    u_shear = half_t * ks * pw2
    u_bend = half_t * kb * t2 + half_t * dk * tn * tn
    bend2 = max(t2 - tn * tn, T(0.0))
    s1 = c0 * kn * stretch + c2 * kb * math.sqrt(bend2)
    s2 = c1 * ks * math.sqrt(pw2) + c3 * kt * abs(tn)
    index = s1 + s2
    if not summed:
        index = max(s1, s2)
    return (f1, f2, f3, ma1, ma2, ma3, mb1, mb2, mb3, u_axial, u_shear, u_bend, r / r0 - T(1.0),
            math.sqrt(t2), index)  # fmt: skip


def hertz_overlap(T, distance, reach):
    """The overlap ``1 - s/ρ`` of paper 003's (56)-(57) (positive in contact) and ``1/ρ``,
    for the centre distance (or signed wall distance) ``s`` and the reach
    ``ρ = D_a/2 + D_b/2`` (``D_a/2`` for a wall). ``1/ρ`` is taken once for both of its
    uses (here and in :func:`hertz_force`): one division, which waits on nothing but
    ``ρ``, instead of two, one of them between the distance's square root and the
    overlap's."""
    inv = T(1.0) / reach
    return T(1.0) - distance * inv, inv


def hertz_force(T, overlap, inv, k):
    """Particle-particle (56)-(57) and particle-wall contact at the overlap and ``1/ρ`` of
    :func:`hertz_overlap`: ``U = (2/5) K [1 - s/ρ]_+^{5/2}``. The printed factor 5/2 of
    (56) contradicts (57); 2/5 makes ``-dU/ds`` equal (57) (``docs/physics.md``).
    Returns the repulsive force magnitude ``f = K/ρ [1 - s/ρ]_+^{3/2}`` (along the
    separation direction) and ``U``."""
    if overlap > T(0.0):
        root = math.sqrt(overlap)
        return k * inv * overlap * root, T(0.4) * k * overlap * overlap * root
    return T(0.0), T(0.0)


def compensated_add(s, c, x):
    """Neumaier's compensated summation: add ``x`` to the running sum ``s`` with
    correction ``c``; the total is ``s + c``. For the few terms of a particle's contacts
    this is the correctly rounded sum in practice, so it does not depend on the order of
    the terms (contrived cancellations aside).

    The rounding error of ``t = s + x`` is taken with Knuth's TwoSum, six additions and
    no branch. It is exact for any two finite numbers, as Neumaier's ``(s - t) + x`` with
    ``|s| >= |x|`` (else ``(x - t) + s``) is, so both give the same correction; TwoSum needs no
    comparison of magnitudes and no select, three operations fewer."""
    t = s + x
    z = t - s
    c += (s - (t - z)) + (x - z)
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


def min_image(T, d, length, inv_length):
    """Minimum image of a separation component ``d`` along an axis of period ``length``
    (``inv_length = 1/length``; both 0 for an axis that is not periodic, where ``d`` comes
    back unchanged): ``d - k L`` with ``k`` the integer nearest ``d/L``, halves rounded away
    from zero, so that the image of ``-d`` is exactly minus the image of ``d`` (both ends of
    a pair get the same bits, negated). A NaN or absurd ``d`` comes back unchanged."""
    a = d * inv_length
    b = abs(a)
    if b > T(0.5) and b < T(1.0e15):
        d = d - math.copysign(T(math.floor(b + T(0.5))), a) * length
    return d


def wrap_coordinate(T, v, lo, length, inv_length):
    """A position component put back into the periodic interval ``[lo, lo + length)``
    (``inv_length = 1/length``; 0 for an axis that is not periodic): ``(v - k L, k)`` with
    ``k = floor((v - lo)/L)``, the number of periods crossed (the image counter's change);
    ``(v, 0)`` where ``v`` is inside already, the axis is not periodic or ``v`` is not
    finite."""
    u = (v - lo) * inv_length
    if (u >= T(0.0) and u < T(1.0)) or not (abs(u) < T(1.0e15)):
        return v, 0
    k = int(math.floor(u))
    return v - T(k) * length, k


def periodic_cell(T, v, lo, inv_length, n):
    """Cell ``[0, n)`` of a position component along a periodic axis cut into ``n`` equal
    cells (``inv_length = 1/length``): of its image in ``[lo, lo + length)``, so a position
    outside the box is binned where its image is (a NaN or absurd one: cell 0)."""
    u = (v - lo) * inv_length
    if not (u >= T(0.0) and u < T(1.0)):
        if not (abs(u) < T(1.0e15)):
            return 0
        u = u - T(math.floor(u))
    k = int(u * T(n))
    if k < 0:
        return 0
    if k >= n:
        return n - 1
    return k


def cell_hash(cx, cy, cz, r, mask):
    """Bucket of cell ``(cx, cy, cz)`` of replica ``r`` (0 for a single system) in a hash
    table of ``mask + 1`` (a power of two) buckets. Each coordinate keeps its low 21 bits,
    so the products stay below 2^48 and the hash is the same in Python, on the CPU and on
    the GPU (no integer overflow; ``r``, an int32 array element, is widened first)."""
    m21 = 2097151
    return (((cx & m21) * 73856093) ^ ((cy & m21) * 19349663) ^ ((cz & m21) * 83492791)
            ^ ((int(r) & m21) * 50331653)) & mask  # fmt: skip


#: Numbers of a pair's slot in the per-pair pass: force (3) and moment (3) on the slot's
#: end, and two of padding, so that a float64 slot is one 64-byte cache line.
CONTACT_SLOT = 8
#: Numbers of a particle's running sums in the CPU's direct pass (``Contacts.acc``), for a
#: law with moments: force (3), moment (3) and two zeros, then their compensations
#: (:func:`compensated_add`) in the same order from :data:`ACC_CORRECTION` on, so that one
#: vector operation adds to all of them (``kernels.cpu._acc_add``). A law without moments
#: keeps half of that (:func:`acc_layout`).
ACC_WIDTH = 16
#: The column of the first compensation in ``Contacts.acc`` (a law with moments).
ACC_CORRECTION = 8


def acc_layout(moments):
    """``(width, correction)`` of a row of ``Contacts.acc`` for a law with or without
    moments: 16 numbers, the compensations from column 8, or 8 numbers (force, a zero,
    their compensations from column 4: one 64-byte cache line in float64)."""
    return (ACC_WIDTH, ACC_CORRECTION) if moments else (ACC_WIDTH // 2, ACC_CORRECTION // 2)


#: Columns of the per-particle dissipated-energy ledger: normal damping, friction slip,
#: rolling resistance, twisting resistance.
DISSIPATION = 4
#: Which velocity the velocity-dependent forces of a contact law see in maps (23) and (25).
VELOCITY_HALF = 0  # v_{k+1/2}, the half-kicked velocity of the drift
VELOCITY_PREDICTED = 1  # v_{k+1/2} + h F_k / 2m, a prediction of v_{k+1}
