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

from . import laws


def build(jit, base):
    """Compile with ``jit``; ``base`` is the namespace of :func:`kernels.particles.build`."""
    quat_multiply = base.quat_multiply
    quat_rotate = base.quat_rotate
    quat_log = jit(laws.quat_log)
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
        return quat_log(T, d0, d1, d2, d3)

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
        fa1, fa2, fa3, ua, strain = axial_bond(T, d1, d2, d3, bonds.rest_length[k], bonds.ka[k])
        n0a, n0b = bonds.n0a, bonds.n0b
        pa1, pa2, pa3 = quat_rotate(T, q[a, 0], q[a, 1], q[a, 2], q[a, 3], n0a[k, 0], n0a[k, 1], n0a[k, 2])
        pb1, pb2, pb3 = quat_rotate(T, q[b, 0], q[b, 1], q[b, 2], q[b, 3], n0b[k, 0], n0b[k, 1], n0b[k, 2])
        fs1, fs2, fs3, ma1, ma2, ma3, mb1, mb2, mb3, us = shear_bond(
            T, d1, d2, d3, pa1, pa2, pa3, pb1, pb2, pb3, bonds.ks[k]
        )
        th1, th2, th3 = bending_rotation(T, k, q, bonds)
        kk = bonds.km[k]
        th2sum = th1 * th1 + th2 * th2 + th3 * th3
        um = T(0.5) * kk * th2sum
        angle = th2sum ** T(0.5)
        return (
            fa1 + fs1, fa2 + fs2, fa3 + fs3,
            ma1 + kk * th1, ma2 + kk * th2, ma3 + kk * th3,
            mb1 - kk * th1, mb2 - kk * th2, mb3 - kk * th3,
            ua, us, um, strain, angle, T(0.0),
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
        terms = bonds.terms
        live = dyn.broken[k] == 0
        if live:
            t = bond_terms(T, k, dyn.x, dyn.q, bonds)
            if bond_breaks(T, k, update, bonds, t):
                dyn.broken[k] = 1
                dyn.released[k] = t[9] + t[10] + t[11]
                live = False
            else:
                for c in range(9):
                    terms[k, c] = t[c]
        if not live:
            for c in range(9):
                terms[k, c] = T(0.0)

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
                           parallel_terms=parallel_terms,
                           bond_breaks=bond_breaks, bond_eval_body=bond_eval_body, bond_sum=bond_sum,
                           bond_measures_body=bond_measures_body)  # fmt: skip
