"""Binder and contact bodies (paper 003, Sect. 4), compiled once per backend.

Bonds are evaluated once each into a per-bond buffer, then every particle *gathers* its
bonds' contributions through CSR lists; contacts are gathered per particle directly.
Each particle writes only its own rows, so no atomics are needed and runs repeat bit for
bit on a backend (CPU and GPU differ in the last bits: fused multiply-adds, libdevice).
Every pair quantity is computed in one canonical orientation by both ends from the same
inputs with the same operations, so the two ends get exactly opposite forces.

Bond arrays (``B`` bonds): ``bond_a``, ``bond_b`` (B,) int64, oriented so that ``a`` has the
lexicographically smaller initial position (an orientation independent of numbering);
``rest_length`` (B,) [length]; ``n0a``, ``n0b`` (B, 3) the reference bond direction
``n(0) = (x_a - x_b)/|x_a - x_b|`` at ``t = 0`` in the body frames of ``a`` and ``b``;
``qref`` (B, 4) the reference relative rotation ``q_b(0)* ⊗ q_a(0)``; ``ka``, ``ks``,
``km`` (B,) stiffnesses [energy]; ``broken`` (B,) int8. CSR: ``offsets`` (N+1,),
``incident`` (2B,) bond ids of each particle in a canonical geometric order.
"""

from types import SimpleNamespace

from . import laws


def build(jit, base):
    """Compile with ``jit``; ``base`` is the namespace of :func:`kernels.particles.build`."""
    quat_multiply = base.quat_multiply
    quat_rotate = base.quat_rotate
    quat_log = jit(laws.quat_log)
    axial_bond = jit(laws.axial_bond)
    shear_bond = jit(laws.shear_bond)
    hertz_contact = jit(laws.hertz_contact)
    cadd = jit(laws.compensated_add)

    @jit
    def bending_rotation(k, q, bond_a, bond_b, qref):
        """``θ``: rotation vector of ``D = R_b B R_aᵀ`` with ``B = R_b(0)ᵀ R_a(0)`` (spatial).

        ``D = I`` at ``t = 0`` and ``D → G D Gᵀ`` under a rigid rotation ``G``, so
        ``|θ|`` is invariant. U^m (44) = ½ K^m |θ|²; with ``R_b → exp(S(ε)) R_b`` the
        energy changes by ``K^m θ·ε`` and with ``R_a`` by ``-K^m θ·ε``, hence
        ``RM_a = K^m θ``, ``RM_b = -K^m θ`` (47).
        """
        a = bond_a[k]
        b = bond_b[k]
        t0, t1, t2, t3 = quat_multiply(
            qref[k, 0], qref[k, 1], qref[k, 2], qref[k, 3], q[a, 0], -q[a, 1], -q[a, 2], -q[a, 3]
        )
        d0, d1, d2, d3 = quat_multiply(q[b, 0], q[b, 1], q[b, 2], q[b, 3], t0, t1, t2, t3)
        return quat_log(d0, d1, d2, d3)

    @jit
    def bond_terms(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km):
        """All three binder terms of bond ``k``: ``F_a``, ``RM_a``, ``RM_b`` summed over
        U^a, U^s, U^m, and ``(U^a, U^s, U^m, strain, |θ|)``."""
        a = bond_a[k]
        b = bond_b[k]
        d1 = x[a, 0] - x[b, 0]
        d2 = x[a, 1] - x[b, 1]
        d3 = x[a, 2] - x[b, 2]
        fa1, fa2, fa3, ua, strain = axial_bond(d1, d2, d3, rest_length[k], ka[k])
        pa1, pa2, pa3 = quat_rotate(q[a, 0], q[a, 1], q[a, 2], q[a, 3], n0a[k, 0], n0a[k, 1], n0a[k, 2])
        pb1, pb2, pb3 = quat_rotate(q[b, 0], q[b, 1], q[b, 2], q[b, 3], n0b[k, 0], n0b[k, 1], n0b[k, 2])
        fs1, fs2, fs3, ma1, ma2, ma3, mb1, mb2, mb3, us = shear_bond(d1, d2, d3, pa1, pa2, pa3, pb1, pb2, pb3, ks[k])
        th1, th2, th3 = bending_rotation(k, q, bond_a, bond_b, qref)
        kk = km[k]
        um = 0.5 * kk * (th1 * th1 + th2 * th2 + th3 * th3)
        angle = (th1 * th1 + th2 * th2 + th3 * th3) ** 0.5
        return (
            fa1 + fs1, fa2 + fs2, fa3 + fs3,
            ma1 + kk * th1, ma2 + kk * th2, ma3 + kk * th3,
            mb1 - kk * th1, mb2 - kk * th2, mb3 - kk * th3,
            ua, us, um, strain, angle,
        )  # fmt: skip

    @jit
    def bond_eval_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
        """Pass 1: evaluate bond ``k`` once; ``out[k] = (F_a, RM_a, RM_b)`` (zeros if broken)."""
        if broken[k] != 0:
            for c in range(9):
                out[k, c] = 0.0
            return
        t = bond_terms(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km)
        for c in range(9):
            out[k, c] = t[c]

    @jit
    def bond_gather_body(i, offsets, incident, bond_a, out, F, RM):
        """Pass 2: add particle ``i``'s share of its bonds' forces and moments (``+F_a, RM_a``
        at end ``a``, ``-F_a, RM_b`` at end ``b``) to ``F[i]``, ``RM[i]``. The CSR list is in
        a canonical geometric order (see :class:`granular.forces.Bonds`), so this plain sum
        does not depend on particle or bond numbering."""
        f1 = f2 = f3 = m1 = m2 = m3 = 0.0
        for p in range(offsets[i], offsets[i + 1]):
            k = incident[p]
            if bond_a[k] == i:
                f1 += out[k, 0]
                f2 += out[k, 1]
                f3 += out[k, 2]
                m1 += out[k, 3]
                m2 += out[k, 4]
                m3 += out[k, 5]
            else:
                f1 -= out[k, 0]
                f2 -= out[k, 1]
                f3 -= out[k, 2]
                m1 += out[k, 6]
                m2 += out[k, 7]
                m3 += out[k, 8]
        F[i, 0] += f1
        F[i, 1] += f2
        F[i, 2] += f3
        RM[i, 0] += m1
        RM[i, 1] += m2
        RM[i, 2] += m3

    @jit
    def bond_energy_body(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km, broken, out):
        """Per-bond ``out[k] = (U^a, U^s, U^m, strain, |θ|)``; energies zero if broken."""
        t = bond_terms(k, x, q, bond_a, bond_b, rest_length, n0a, n0b, qref, ka, ks, km)
        live = 1.0
        if broken[k] != 0:
            live = 0.0
        out[k, 0] = live * t[9]
        out[k, 1] = live * t[10]
        out[k, 2] = live * t[11]
        out[k, 3] = t[12]
        out[k, 4] = t[13]

    @jit
    def bond_break_body(k, x, q, bond_a, bond_b, rest_length, qref, strain_max, angle_max, broken_in, broken_out):
        """``broken_out[k] = 1`` if bond ``k`` was broken or its ``|strain|`` or ``|θ|``
        exceeds its threshold now (breakage is for good)."""
        if broken_in[k] != 0:
            broken_out[k] = 1
            return
        a = bond_a[k]
        b = bond_b[k]
        d1 = x[a, 0] - x[b, 0]
        d2 = x[a, 1] - x[b, 1]
        d3 = x[a, 2] - x[b, 2]
        strain = (d1 * d1 + d2 * d2 + d3 * d3) ** 0.5 / rest_length[k] - 1.0
        th1, th2, th3 = bending_rotation(k, q, bond_a, bond_b, qref)
        angle = (th1 * th1 + th2 * th2 + th3 * th3) ** 0.5
        if abs(strain) > strain_max[k] or angle > angle_max[k]:
            broken_out[k] = 1
        else:
            broken_out[k] = 0

    @jit
    def contact_pair(i, j, x, radius, kpp):
        """Hertz pair (56)-(57) in canonical order: force on ``i`` and the pair energy.

        Both ends evaluate ``d = x_lo - x_hi`` (``lo < hi``) with the same operations, so
        the two forces are exact negatives. (The branches do not merge ``i`` and ``j``
        into one variable: Numba's parallel loop index is unsigned.)
        """
        if i < j:
            d1 = x[i, 0] - x[j, 0]
            d2 = x[i, 1] - x[j, 1]
            d3 = x[i, 2] - x[j, 2]
            s = 1.0
        else:
            d1 = x[j, 0] - x[i, 0]
            d2 = x[j, 1] - x[i, 1]
            d3 = x[j, 2] - x[i, 2]
            s = -1.0
        reach = radius[i] + radius[j]
        dist2 = d1 * d1 + d2 * d2 + d3 * d3
        if dist2 >= reach * reach:
            return 0.0, 0.0, 0.0, 0.0
        dist = dist2**0.5
        f, u = hertz_contact(dist, reach, kpp)
        c = s * f / dist
        return c * d1, c * d2, c * d3, u

    @jit
    def bonded(i, j, offsets, incident, bond_a, bond_b):
        """Whether particles ``i`` and ``j`` share a bond (scan of ``i``'s CSR list)."""
        for p in range(offsets[i], offsets[i + 1]):
            k = incident[p]
            if bond_a[k] == j or bond_b[k] == j:
                return True
        return False

    @jit
    def add_partner(i, j, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, f1, c1, f2, c2, f3, c3,
                    u, cu):  # fmt: skip
        """Add partner ``j``'s contact force on ``i`` and half the pair energy to the
        compensated running sums ``(f, c)`` and ``(u, cu)``; bonded pairs are skipped when
        ``skip_bonded``. Shared by the all-pairs and neighbour-list bodies."""
        if skip_bonded and bonded(i, j, offsets, incident, bond_a, bond_b):
            return f1, c1, f2, c2, f3, c3, u, cu
        g1, g2, g3, e = contact_pair(i, j, x, radius, kpp)
        if e > 0.0 or g1 != 0.0 or g2 != 0.0 or g3 != 0.0:
            f1, c1 = cadd(f1, c1, g1)
            f2, c2 = cadd(f2, c2, g2)
            f3, c3 = cadd(f3, c3, g3)
            u, cu = cadd(u, cu, 0.5 * e)
        return f1, c1, f2, c2, f3, c3, u, cu

    @jit
    def contact_allpairs_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, F, U):
        """All-pairs contact (the brute-force reference): ``F[i]`` += Σ_j f_ij (compensated,
        order-independent in practice); ``U[i]`` = half of ``i``'s pair energies (so ``Σ U``
        is U^pp). With ``skip_bonded``, pairs joined by a bond (broken or not) are left out."""
        f1 = f2 = f3 = u = 0.0
        c1 = c2 = c3 = cu = 0.0
        for j in range(x.shape[0]):
            if j != i:
                f1, c1, f2, c2, f3, c3, u, cu = add_partner(i, j, x, radius, kpp, skip_bonded, offsets, incident,
                                                            bond_a, bond_b, f1, c1, f2, c2, f3, c3, u, cu)  # fmt: skip
        F[i, 0] += f1 + c1
        F[i, 1] += f2 + c2
        F[i, 2] += f3 + c3
        U[i] = u + cu

    @jit
    def contact_list_body(i, x, radius, kpp, skip_bonded, offsets, incident, bond_a, bond_b, nbr, count, F, U):
        """Contact through a neighbour list: like :func:`contact_allpairs_body` but over
        ``nbr[i, :count[i]]`` (a superset of ``i``'s overlapping partners)."""
        f1 = f2 = f3 = u = 0.0
        c1 = c2 = c3 = cu = 0.0
        for p in range(count[i]):
            f1, c1, f2, c2, f3, c3, u, cu = add_partner(i, nbr[i, p], x, radius, kpp, skip_bonded, offsets, incident,
                                                        bond_a, bond_b, f1, c1, f2, c2, f3, c3, u, cu)  # fmt: skip
        F[i, 0] += f1 + c1
        F[i, 1] += f2 + c2
        F[i, 2] += f3 + c3
        U[i] = u + cu

    @jit
    def neighbor_build_body(i, x, radius, skin, origin, inv_cell, dims, order, cell_start, cell_end, nbr, count):
        """Verlet list of particle ``i`` from a cell list: every ``j != i`` with
        ``|x_i - x_j| < r_i + r_j + skin``, scanning the 27 cells around ``i``'s cell.

        Cells: ``origin`` (3,), ``inv_cell`` = 1/cell size (cell size >= the largest
        cutoff), ``dims`` (3,) int64; particles sorted by cell in ``order`` with
        ``cell_start``/``cell_end`` (C,) bounds. Writes at most ``nbr.shape[1]`` entries and
        the true number in ``count[i]``; the host regrows ``nbr`` when any count exceeds it.
        """
        cap = nbr.shape[1]
        cx = int((x[i, 0] - origin[0]) * inv_cell)
        cy = int((x[i, 1] - origin[1]) * inv_cell)
        cz = int((x[i, 2] - origin[2]) * inv_cell)
        cx = min(max(cx, 0), dims[0] - 1)
        cy = min(max(cy, 0), dims[1] - 1)
        cz = min(max(cz, 0), dims[2] - 1)
        n = 0
        for dz in range(-1, 2):
            z = cz + dz
            if z < 0 or z >= dims[2]:
                continue
            for dy in range(-1, 2):
                y = cy + dy
                if y < 0 or y >= dims[1]:
                    continue
                for dx in range(-1, 2):
                    xx = cx + dx
                    if xx < 0 or xx >= dims[0]:
                        continue
                    c = (z * dims[1] + y) * dims[0] + xx
                    for p in range(cell_start[c], cell_end[c]):
                        j = order[p]
                        if j == i:
                            continue
                        d1 = x[i, 0] - x[j, 0]
                        d2 = x[i, 1] - x[j, 1]
                        d3 = x[i, 2] - x[j, 2]
                        cut = radius[i] + radius[j] + skin
                        if d1 * d1 + d2 * d2 + d3 * d3 < cut * cut:
                            if n < cap:
                                nbr[i, n] = j
                            n += 1
        count[i] = n

    @jit
    def wall_body(i, x, radius, walls, kw, F, U):
        """Planar walls ``n·x = c`` (``walls[w] = (n1, n2, n3, c)``, unit ``n`` pointing to the
        allowed side): U^pw = (2/5) K [1 - (n·x_i - c)/r_i]_+^{5/2}, force along ``n``."""
        f1 = f2 = f3 = u = 0.0
        c1 = c2 = c3 = cu = 0.0
        for w in range(walls.shape[0]):
            n1 = walls[w, 0]
            n2 = walls[w, 1]
            n3 = walls[w, 2]
            dist = n1 * x[i, 0] + n2 * x[i, 1] + n3 * x[i, 2] - walls[w, 3]
            f, e = hertz_contact(dist, radius[i], kw[w])
            if e > 0.0:
                f1, c1 = cadd(f1, c1, f * n1)
                f2, c2 = cadd(f2, c2, f * n2)
                f3, c3 = cadd(f3, c3, f * n3)
                u, cu = cadd(u, cu, e)
        F[i, 0] += f1 + c1
        F[i, 1] += f2 + c2
        F[i, 2] += f3 + c3
        U[i] = u + cu

    return SimpleNamespace(
        quat_log=quat_log,
        bending_rotation=bending_rotation,
        bond_terms=bond_terms,
        bond_eval_body=bond_eval_body,
        bond_gather_body=bond_gather_body,
        bond_energy_body=bond_energy_body,
        bond_break_body=bond_break_body,
        contact_pair=contact_pair,
        add_partner=add_partner,
        bonded=bonded,
        contact_allpairs_body=contact_allpairs_body,
        contact_list_body=contact_list_body,
        neighbor_build_body=neighbor_build_body,
        wall_body=wall_body,
    )
