"""Binder bonds (paper 003, Sect. 4), compiled once per backend.

Particle ``i`` evaluates each of its bonds through the CSR list of
:class:`kernels.layout.Bonds`, in a canonical geometric order, and writes only its own
rows. Every bond quantity is computed in one canonical orientation by both ends from the
same inputs with the same operations, so the two ends get exactly opposite forces; a
bond is therefore evaluated twice, once by each end, which costs arithmetic but no
per-bond buffer written and read back (the GPU's way). The CPU's caches prefer a
sequential per-bond pass into a (B, 9) buffer that the particles then gather
(:func:`bond_eval_body`); :func:`bond_sum` reads either, with the same bits.

A bond is paper 003's binder or, where ``bonds.form[k] != 0``, a parallel bond
(:func:`kernels.laws.parallel_bond`, ``docs/physics.md``), whose terms come back in the
same places (its energies in those of U^a, U^s, U^m).

Breakage: in a step (``update``) a bond is evaluated at the new configuration and, when
``|r/r0 - 1| > strain_max`` or ``|θ| > angle_max`` or (parallel bonds) its failure index
exceeds 1, dropped, marked broken and its
energy at that configuration booked as released (per bond). Per end, only end ``a``
writes; both ends read the same flag and compute the same test, so they agree whichever
runs first (the flag only goes from 0 to 1).
"""

import math
from types import SimpleNamespace

import numpy as np

from . import laws


#: Bonds evaluated together in vector lanes by the CPU's per-bond pass (:func:`build`
#: ``bond_lanes``), and the columns of its buffer: the inputs (``d`` 3, the ends'
#: quaternions 8, ``qref`` 4, ``n0_a``, ``n0_b`` 6, rest length and three stiffnesses),
#: then the results (``terms_of``'s 16).
LANES = 32
LANE_IN = 25
LANE_OUT = 16


def build(jit, base):
    """Compile with ``jit``; ``base`` is the namespace of :func:`kernels.particles.build`."""
    quat_multiply = base.quat_multiply
    quat_rotate = base.quat_rotate
    quat_log = jit(laws.quat_log)
    quat_log_series = jit(laws.quat_log_series)
    axial_bond = jit(laws.axial_bond)
    shear_bond = jit(laws.shear_bond)
    parallel_bond = jit(laws.parallel_bond)
    min_image = jit(laws.min_image)

    @jit
    def relative_rotation(T, k, q, bonds):
        """The quaternion of ``D = R_b B R_aᵀ`` with ``B = R_b(0)ᵀ R_a(0)`` (see
        :func:`bending_rotation`)."""
        a = bonds.a[k]
        b = bonds.b[k]
        qref = bonds.qref
        t0, t1, t2, t3 = quat_multiply(
            qref[k, 0], qref[k, 1], qref[k, 2], qref[k, 3], q[a, 0], -q[a, 1], -q[a, 2], -q[a, 3]
        )
        return quat_multiply(q[b, 0], q[b, 1], q[b, 2], q[b, 3], t0, t1, t2, t3)

    @jit
    def bending_rotation(T, k, q, bonds):
        """``θ``: rotation vector of ``D = R_b B R_aᵀ`` with ``B = R_b(0)ᵀ R_a(0)`` (spatial).

        ``D = I`` at ``t = 0`` and ``D → G D Gᵀ`` under a rigid rotation ``G``, so
        ``|θ|`` is invariant. U^m (44) = ½ K^m |θ|²; with ``R_b → exp(S(ε)) R_b`` the
        energy changes by ``K^m θ·ε`` and with ``R_a`` by ``-K^m θ·ε``, hence
        ``RM_a = K^m θ``, ``RM_b = -K^m θ`` (47).
        """
        d0, d1, d2, d3 = relative_rotation(T, k, q, bonds)
        return log_map(T, d0, d1, d2, d3, False)[:3]

    @jit
    def log_map(T, d0, d1, d2, d3, series_only):
        """The rotation vector of the unit quaternion ``d`` and ``t² = |d_vec|²/d0²``: by
        the series (:func:`kernels.laws.quat_log_series`) where it is exact to round-off
        (``t² <`` :data:`kernels.laws.LOG_SERIES`), else by ``atan2``
        (:func:`kernels.laws.quat_log`); with ``series_only`` (a constant of the caller)
        always the series, and the caller redoes the others (:func:`bond_lanes`)."""
        th1, th2, th3, t2 = quat_log_series(T, d0, d1, d2, d3)
        if not series_only and not (t2 < T(laws.LOG_SERIES)):
            th1, th2, th3 = quat_log(T, d0, d1, d2, d3)
        return th1, th2, th3, t2

    @jit
    def bond_vector(T, a, b, x, bonds):
        """``x_a - x_b``, by the minimum image along the periodic axes of a periodic box
        (``bonds.period`` not empty; :func:`kernels.laws.min_image`), so a bond across the
        boundary has the terms of the same bond inside the box."""
        d1 = x[a, 0] - x[b, 0]
        d2 = x[a, 1] - x[b, 1]
        d3 = x[a, 2] - x[b, 2]
        period = bonds.period
        if period.shape[0] > 0:
            d1 = min_image(T, d1, period[0, 1], period[0, 2])
            d2 = min_image(T, d2, period[1, 1], period[1, 2])
            d3 = min_image(T, d3, period[2, 1], period[2, 2])
        return d1, d2, d3

    @jit
    def parallel_terms(T, k, x, q, bonds):
        """:func:`kernels.laws.parallel_bond` of bond ``k``, in the layout of :func:`bond_terms`."""
        a = bonds.a[k]
        b = bonds.b[k]
        n0a, n0b, crit = bonds.n0a, bonds.n0b, bonds.crit
        pa1, pa2, pa3 = quat_rotate(T, q[a, 0], q[a, 1], q[a, 2], q[a, 3], n0a[k, 0], n0a[k, 1], n0a[k, 2])
        pb1, pb2, pb3 = quat_rotate(T, q[b, 0], q[b, 1], q[b, 2], q[b, 3], n0b[k, 0], n0b[k, 1], n0b[k, 2])
        d0, d1, d2, d3 = relative_rotation(T, k, q, bonds)
        th1, th2, th3 = quat_log(T, d0, d1, d2, d3)
        half_cos = abs(d0)  # cos(|θ|/2) and sin(|θ|/2), up to the quaternion's norm
        half_sin = math.sqrt(d1 * d1 + d2 * d2 + d3 * d3)
        d1, d2, d3 = bond_vector(T, a, b, x, bonds)
        return parallel_bond(T, d1, d2, d3, pa1, pa2, pa3, pb1, pb2,
                             pb3, th1, th2, th3, half_cos, half_sin, bonds.rest_length[k], bonds.ka[k], bonds.ks[k], bonds.km[k],
                             bonds.kt[k], bonds.arm[k, 0], bonds.arm[k, 1], crit[k, 0], crit[k, 1], crit[k, 2],
                             crit[k, 3], bonds.form[k] == 2)  # fmt: skip

    @jit
    def bond_terms(T, k, x, q, bonds):
        """All three binder terms of bond ``k``: ``F_a``, ``RM_a``, ``RM_b`` summed over
        U^a, U^s, U^m, and ``(U^a, U^s, U^m, strain, |θ|, failure index)``; a parallel
        bond's terms are :func:`parallel_terms` (its energies in the U^a, U^s, U^m
        places), paper 003's bond has failure index 0."""
        if bonds.form.shape[0] > 0 and bonds.form[k] != 0:
            return parallel_terms(T, k, x, q, bonds)
        a = bonds.a[k]
        b = bonds.b[k]
        d1, d2, d3 = bond_vector(T, a, b, x, bonds)
        n0a, n0b, qref = bonds.n0a, bonds.n0b, bonds.qref
        return terms_of(T, d1, d2, d3, q[a, 0], q[a, 1], q[a, 2], q[a, 3], q[b, 0], q[b, 1], q[b, 2], q[b, 3],
                        qref[k, 0], qref[k, 1], qref[k, 2], qref[k, 3], n0a[k, 0], n0a[k, 1], n0a[k, 2], n0b[k, 0],
                        n0b[k, 1], n0b[k, 2], bonds.rest_length[k], bonds.ka[k], bonds.ks[k], bonds.km[k], False)[:15]  # fmt: skip

    @jit
    def terms_of(T, d1, d2, d3, qa0, qa1, qa2, qa3, qb0, qb1, qb2, qb3, r0, r1, r2, r3, na1, na2, na3, nb1, nb2, nb3,
                 rest, ka, ks, kk, series_only):  # fmt: skip
        """Paper 003's bond from its inputs as numbers (:func:`bond_terms`' layout, then
        ``t²`` of :func:`log_map`): ``d = x_a - x_b``, the ends' quaternions, the bond's
        ``B`` quaternion (``qref``), its directions ``n0_a``, ``n0_b``, rest length and
        stiffnesses. The one body of the scalar pass and of the lanes
        (:func:`bond_lanes`), so both give the same bits."""
        fa1, fa2, fa3, ua, strain = axial_bond(T, d1, d2, d3, rest, ka)
        pa1, pa2, pa3 = quat_rotate(T, qa0, qa1, qa2, qa3, na1, na2, na3)
        pb1, pb2, pb3 = quat_rotate(T, qb0, qb1, qb2, qb3, nb1, nb2, nb3)
        fs1, fs2, fs3, ma1, ma2, ma3, mb1, mb2, mb3, us = shear_bond(T, d1, d2, d3, pa1, pa2, pa3, pb1, pb2, pb3, ks)
        # D = R_b B R_aᵀ (relative_rotation)
        t0, t1, t2, t3 = quat_multiply(r0, r1, r2, r3, qa0, -qa1, -qa2, -qa3)
        e0, e1, e2, e3 = quat_multiply(qb0, qb1, qb2, qb3, t0, t1, t2, t3)
        th1, th2, th3, tt = log_map(T, e0, e1, e2, e3, series_only)
        th2sum = th1 * th1 + th2 * th2 + th3 * th3
        um = T(0.5) * kk * th2sum
        angle = th2sum ** T(0.5)
        return (
            fa1 + fs1, fa2 + fs2, fa3 + fs3,
            ma1 + kk * th1, ma2 + kk * th2, ma3 + kk * th3,
            mb1 - kk * th1, mb2 - kk * th2, mb3 - kk * th3,
            ua, us, um, strain, angle, T(0.0), tt,
        )  # fmt: skip

    @jit
    def bond_breaks(T, k, update, bonds, t):
        """Whether bond ``k`` with terms ``t`` breaks now (only in a step, ``update``): past
        its strain or angle limit, or a failure index above 1 (parallel bonds)."""
        return update and bonds.can_break and (abs(t[12]) > bonds.strain_max[k] or t[13] > bonds.angle_max[k]
                                               or t[14] > T(1.0))  # fmt: skip

    @jit
    def bond_eval_body(k, update, dyn, bonds):
        """Per-bond pass (the CPU's way): evaluate bond ``k`` once into
        ``bonds.terms[k] = (F_a, RM_a, RM_b)`` (zeros once broken); in a step it breaks
        here (flag and released energy are the bond's own entries)."""
        T = dyn.x.dtype.type
        if dyn.broken[k] == 0:
            bond_store(k, update, dyn, bonds, bond_terms(T, k, dyn.x, dyn.q, bonds))
        else:
            for c in range(9):
                bonds.terms[k, c] = T(0.0)

    @jit
    def bond_store(k, update, dyn, bonds, t):
        """Bond ``k`` (intact until now) with terms ``t``: in a step past its limits it
        breaks (flag, released energy, zero terms); else its terms go into the buffer."""
        T = dyn.x.dtype.type
        terms = bonds.terms
        if bond_breaks(T, k, update, bonds, t):
            dyn.broken[k] = 1
            dyn.released[k] = t[9] + t[10] + t[11]
            for c in range(9):
                terms[k, c] = T(0.0)
        else:
            for c in range(9):
                terms[k, c] = t[c]

    @jit
    def lane_ends(buf, l, x, q, a, b):
        """Lane ``l`` of :func:`bond_lanes`'s buffer: the centres' difference ``x_a - x_b``
        and both ends' quaternions, columns 0-10."""
        W = LANES
        buf[l] = x[a, 0] - x[b, 0]
        buf[W + l] = x[a, 1] - x[b, 1]
        buf[2 * W + l] = x[a, 2] - x[b, 2]
        for c in range(4):
            buf[(3 + c) * W + l] = q[a, c]
            buf[(7 + c) * W + l] = q[b, c]

    @jit
    def bond_lanes(base, first, update, dyn, bonds, buf):
        """:func:`bond_eval_body` for the bonds ``base + first`` to ``base + LANES - 1``,
        evaluated in vector lanes: the ``LANES`` bonds from ``base`` (all of which exist)
        have their inputs gathered into the columns of ``buf`` (a flat array of
        ``LANES * (LANE_IN + LANE_OUT)`` floats, column ``c`` at ``c * LANES``), then one
        loop of :func:`terms_of` over the lanes, which the compiler turns into vector
        instructions (the columns lie at constant distances in one array, and the loop has
        no call and no branch it cannot turn into a select), then the terms of lanes
        ``first`` on are stored bond by bond (a group that ends a range starts early, so
        that the lanes always hold consecutive bonds: their indices are vector loads, not
        gathers). The same operations as the scalar pass lane by lane, so the same bits. A
        lane whose angle is past the series (:func:`log_map`, ``t²`` in the last column)
        is evaluated again by the scalar pass. For paper 003's bonds without a periodic
        box (the caller checks).

        A bond's ``B``, ``n0_a``, ``n0_b``, rest length and stiffnesses come from its row
        of ``bonds.table`` (the same numbers as the per-bond arrays). Where most of the
        group shares the first bond's row (a lattice's bonds, in their order), that row
        fills its columns and the other lanes are written over one by one; else each lane
        gathers its own row."""
        T = dyn.x.dtype.type
        U = np.uint64
        x, q = dyn.x, dyn.q
        table, row = bonds.table, bonds.row
        W = LANES
        # the ends' centres and quaternions, columns 0-10. Unsigned indices: no test for a
        # negative index (Python's wraparound), whose selects would make masked gathers of
        # these loads. Where the ends are consecutive particles (a lattice's rows) the
        # loads lie at known strides and compile to scalar moves, faster here than the
        # gathers of the general case
        a0 = U(bonds.a[U(base)])
        b0 = U(bonds.b[U(base)])
        runs = 0
        for l in range(W):
            runs += (U(bonds.a[U(base + l)]) == a0 + U(l)) & (U(bonds.b[U(base + l)]) == b0 + U(l))
        if runs == W:
            for l in range(W):
                lane_ends(buf, l, x, q, a0 + U(l), b0 + U(l))
        else:
            for l in range(W):
                lane_ends(buf, l, x, q, U(bonds.a[U(base + l)]), U(bonds.b[U(base + l)]))
        # B, n0_a, n0_b, rest length, ka, ks, km: columns 11-24, each bond's row
        r0 = row[U(base)]
        others = 0
        for l in range(W):
            others += row[U(base + l)] != r0
        if others <= W // 4:
            for c in range(14):
                v = table[U(r0), c]
                for l in range(W):
                    buf[(11 + c) * W + l] = v
            if others > 0:
                for l in range(W):
                    r = row[U(base + l)]
                    if r != r0:
                        for c in range(14):
                            buf[(11 + c) * W + l] = table[U(r), c]
        else:
            for l in range(W):
                r = U(row[U(base + l)])
                for c in range(14):
                    buf[(11 + c) * W + l] = table[r, c]
        O = LANE_IN * W
        for l in range(W):
            # the results go back as a tuple unpacked into named places: a store per
            # column (a loop over a tuple's items would index it by a variable, which
            # the compiler cannot vectorise)
            (buf[O + l], buf[O + W + l], buf[O + 2 * W + l], buf[O + 3 * W + l], buf[O + 4 * W + l],
             buf[O + 5 * W + l], buf[O + 6 * W + l], buf[O + 7 * W + l], buf[O + 8 * W + l], buf[O + 9 * W + l],
             buf[O + 10 * W + l], buf[O + 11 * W + l], buf[O + 12 * W + l], buf[O + 13 * W + l],
             buf[O + 14 * W + l], buf[O + 15 * W + l]) = terms_of(
                T, buf[l], buf[W + l], buf[2 * W + l], buf[3 * W + l], buf[4 * W + l], buf[5 * W + l],
                buf[6 * W + l], buf[7 * W + l], buf[8 * W + l], buf[9 * W + l], buf[10 * W + l], buf[11 * W + l],
                buf[12 * W + l], buf[13 * W + l], buf[14 * W + l], buf[15 * W + l], buf[16 * W + l],
                buf[17 * W + l], buf[18 * W + l], buf[19 * W + l], buf[20 * W + l], buf[21 * W + l],
                buf[22 * W + l], buf[23 * W + l], buf[24 * W + l], True)  # fmt: skip
        for l in range(first, W):
            k = base + l
            if dyn.broken[k] != 0:
                for c in range(9):
                    bonds.terms[k, c] = T(0.0)
            elif buf[O + 15 * W + l] < T(laws.LOG_SERIES):
                t = (buf[O + l], buf[O + W + l], buf[O + 2 * W + l], buf[O + 3 * W + l], buf[O + 4 * W + l],
                     buf[O + 5 * W + l], buf[O + 6 * W + l], buf[O + 7 * W + l], buf[O + 8 * W + l],
                     buf[O + 9 * W + l], buf[O + 10 * W + l], buf[O + 11 * W + l], buf[O + 12 * W + l],
                     buf[O + 13 * W + l], buf[O + 14 * W + l])  # fmt: skip
                bond_store(k, update, dyn, bonds, t)
            else:
                bond_store(k, update, dyn, bonds, bond_terms(T, k, x, q, bonds))

    @jit
    def bond_range(lo, hi, update, dyn, bonds, buf):
        """The per-bond pass over bonds ``[lo, hi)`` (the CPU's): paper 003's bonds without
        a periodic box in groups of :data:`LANES` (:func:`bond_lanes`, ``buf`` its
        buffer; the last group starts early and stores only the bonds it has not, and a
        range shorter than a group goes bond by bond), others one by one
        (:func:`bond_eval_body`); the same bits either way."""
        if bonds.form.shape[0] == 0 and bonds.period.shape[0] == 0 and hi - lo >= LANES:
            for base in range(lo, hi, LANES):
                if base + LANES <= hi:
                    bond_lanes(base, 0, update, dyn, bonds, buf)
                else:
                    bond_lanes(hi - LANES, base - (hi - LANES), update, dyn, bonds, buf)
        else:
            for k in range(lo, hi):
                bond_eval_body(k, update, dyn, bonds)

    @jit
    def bond_sum(i, update, dyn, bonds):
        """Force and spatial moment on ``i`` from its intact bonds: ``+F_a, RM_a`` at end
        ``a``, ``-F_a, RM_b`` at end ``b``, summed in the CSR order (which does not depend
        on particle or bond numbering).

        Two ways, the same bits: with a ``bonds.terms`` buffer (B, 9) the terms were
        evaluated once per bond by :func:`bond_eval_body` and are gathered here; without
        (an empty buffer) each end evaluates its bonds itself, and in a step (``update``)
        bonds past their thresholds break here (see the module docstring)."""
        x, q, broken = dyn.x, dyn.q, dyn.broken
        T = x.dtype.type
        f1 = f2 = f3 = m1 = m2 = m3 = T(0.0)
        gather = bonds.terms.shape[0] > 0
        for p in range(bonds.offsets[i], bonds.offsets[i + 1]):
            k = bonds.incident[p]
            if gather:
                t0, t1, t2 = bonds.terms[k, 0], bonds.terms[k, 1], bonds.terms[k, 2]
                if bonds.a[k] == i:
                    t3, t4, t5 = bonds.terms[k, 3], bonds.terms[k, 4], bonds.terms[k, 5]
                else:
                    t3, t4, t5 = bonds.terms[k, 6], bonds.terms[k, 7], bonds.terms[k, 8]
            else:
                if broken[k] != 0:
                    continue
                t = bond_terms(T, k, x, q, bonds)
                if bond_breaks(T, k, update, bonds, t):
                    if bonds.a[k] == i:
                        broken[k] = 1
                        dyn.released[k] = t[9] + t[10] + t[11]
                    continue
                t0, t1, t2 = t[0], t[1], t[2]
                if bonds.a[k] == i:
                    t3, t4, t5 = t[3], t[4], t[5]
                else:
                    t3, t4, t5 = t[6], t[7], t[8]
            if bonds.a[k] == i:
                f1 += t0
                f2 += t1
                f3 += t2
            else:
                f1 -= t0
                f2 -= t1
                f3 -= t2
            m1 += t3
            m2 += t4
            m3 += t5
        return f1, f2, f3, m1, m2, m3

    @jit
    def bond_measures_body(k, dyn, bonds, out):
        """Per bond ``out[k] = (U^a, U^s, U^m, strain, |θ|)``; energies zero if broken."""
        T = dyn.x.dtype.type
        t = bond_terms(T, k, dyn.x, dyn.q, bonds)
        live = T(1.0)
        if dyn.broken[k] != 0:
            live = T(0.0)
        out[k, 0] = live * t[9]
        out[k, 1] = live * t[10]
        out[k, 2] = live * t[11]
        out[k, 3] = t[12]
        out[k, 4] = t[13]

    return SimpleNamespace(quat_log=quat_log, bending_rotation=bending_rotation, bond_terms=bond_terms,
                           bond_lanes=bond_lanes, bond_range=bond_range,
                           parallel_terms=parallel_terms,
                           bond_breaks=bond_breaks, bond_eval_body=bond_eval_body, bond_sum=bond_sum,
                           bond_measures_body=bond_measures_body)  # fmt: skip
