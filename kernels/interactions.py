"""Binder, contact, wall and field bodies (paper 003, Sect. 4), compiled once per backend.

Every interaction is summed *per particle*: particle ``i`` evaluates each of its bonds
(through the CSR list of :class:`kernels.layout.Bonds`, in a canonical geometric order),
each listed contact partner (neighbour rows sorted by index; all particles in index
order for the brute-force search) and each wall, and writes only its own rows. So no
atomics are needed and runs repeat bit for bit on a backend (CPU and GPU differ in the
last bits: fused multiply-adds, libdevice). Every pair quantity is computed in one
canonical orientation by both ends from the same inputs with the same operations, so the
two ends get exactly opposite forces; a bond is therefore evaluated twice, once by each
end, which costs arithmetic but no per-bond buffer written and read back.

The force body adds the families in a fixed order, each as a partial sum added to the
total: gravity, bonds, contacts (compensated), walls (compensated); moments: pendulum,
bonds. The per-family body used for analysis adds the same partial sums, so the total of
the families equals the fused force bit for bit.

Bonds are summed one of two ways with the same bits (:func:`bond_sum`): each end
evaluates its bonds itself (one launch, no buffer: the GPU's way), or a per-bond pass
evaluates every bond once into a (B, 9) buffer that the particles then gather (the
CPU's way: its caches prefer the sequential per-bond pass, 3-4x faster per bond).

Breakage: in a step (``update``) a bond is evaluated at the new configuration and, when
``|r/r0 - 1| > strain_max`` or ``|θ| > angle_max``, dropped, marked broken and its
energy at that configuration booked as released (per bond). Per end, only end ``a``
writes; both ends read the same flag and compute the same test, so they agree whichever
runs first (the flag only goes from 0 to 1).
"""

from types import SimpleNamespace

from . import laws
from .layout import (
    DIAG,
    FAMILY_BONDS,
    FAMILY_CONTACTS,
    FAMILY_GRAVITY,
    FAMILY_PENDULUM,
    FAMILY_WALLS,
)


def build(jit, base):
    """Compile with ``jit``; ``base`` is the namespace of :func:`kernels.particles.build`."""
    quat_multiply = base.quat_multiply
    quat_rotate = base.quat_rotate
    kick_body = base.kick_body
    pendulum_moment = base.pendulum_moment
    quat_log = jit(laws.quat_log)
    axial_bond = jit(laws.axial_bond)
    shear_bond = jit(laws.shear_bond)
    hertz_contact = jit(laws.hertz_contact)
    cadd = jit(laws.compensated_add)

    CONTACTS_LIST = laws.CONTACTS_LIST
    CONTACTS_ALL_PAIRS = laws.CONTACTS_ALL_PAIRS
    KT, KR, UG, UP = DIAG["kinetic_translational"], DIAG["kinetic_rotational"], DIAG["U_gravity"], DIAG["U_pendulum"]
    UA, US, UM, UPP, UPW = DIAG["U_a"], DIAG["U_s"], DIAG["U_m"], DIAG["U_pp"], DIAG["U_pw"]
    PX, LX, NB, UR = DIAG["P_x"], DIAG["L_x"], DIAG["broken_bonds"], DIAG["U_released"]

    @jit
    def bending_rotation(T, k, q, bonds):
        """``θ``: rotation vector of ``D = R_b B R_aᵀ`` with ``B = R_b(0)ᵀ R_a(0)`` (spatial).

        ``D = I`` at ``t = 0`` and ``D → G D Gᵀ`` under a rigid rotation ``G``, so
        ``|θ|`` is invariant. U^m (44) = ½ K^m |θ|²; with ``R_b → exp(S(ε)) R_b`` the
        energy changes by ``K^m θ·ε`` and with ``R_a`` by ``-K^m θ·ε``, hence
        ``RM_a = K^m θ``, ``RM_b = -K^m θ`` (47).
        """
        a = bonds.a[k]
        b = bonds.b[k]
        qref = bonds.qref
        t0, t1, t2, t3 = quat_multiply(
            qref[k, 0], qref[k, 1], qref[k, 2], qref[k, 3], q[a, 0], -q[a, 1], -q[a, 2], -q[a, 3]
        )
        d0, d1, d2, d3 = quat_multiply(q[b, 0], q[b, 1], q[b, 2], q[b, 3], t0, t1, t2, t3)
        return quat_log(T, d0, d1, d2, d3)

    @jit
    def bond_terms(T, k, x, q, bonds):
        """All three binder terms of bond ``k``: ``F_a``, ``RM_a``, ``RM_b`` summed over
        U^a, U^s, U^m, and ``(U^a, U^s, U^m, strain, |θ|)``."""
        a = bonds.a[k]
        b = bonds.b[k]
        d1 = x[a, 0] - x[b, 0]
        d2 = x[a, 1] - x[b, 1]
        d3 = x[a, 2] - x[b, 2]
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
            ua, us, um, strain, angle,
        )  # fmt: skip

    @jit
    def bond_breaks(k, update, bonds, t):
        """Whether bond ``k`` with terms ``t`` breaks now (only in a step, ``update``)."""
        return update and bonds.can_break and (abs(t[12]) > bonds.strain_max[k] or t[13] > bonds.angle_max[k])

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
            if bond_breaks(k, update, bonds, t):
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
                if bond_breaks(k, update, bonds, t):
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
    def contact_pair(T, i, j, x, radius, kpp):
        """Hertz pair (56)-(57) in canonical order: force on ``i`` and the pair energy.

        Both ends evaluate ``d = x_lo - x_hi`` (``lo < hi``) with the same operations, so
        the two forces are exact negatives. (The branches do not merge ``i`` and ``j``
        into one variable: Numba's parallel loop index is unsigned.)
        """
        if i < j:
            d1 = x[i, 0] - x[j, 0]
            d2 = x[i, 1] - x[j, 1]
            d3 = x[i, 2] - x[j, 2]
            s = T(1.0)
        else:
            d1 = x[j, 0] - x[i, 0]
            d2 = x[j, 1] - x[i, 1]
            d3 = x[j, 2] - x[i, 2]
            s = T(-1.0)
        reach = radius[i] + radius[j]
        dist2 = d1 * d1 + d2 * d2 + d3 * d3
        if dist2 >= reach * reach:
            return T(0.0), T(0.0), T(0.0), T(0.0)
        dist = dist2 ** T(0.5)
        f, u = hertz_contact(T, dist, reach, kpp)
        c = s * f / dist
        return c * d1, c * d2, c * d3, u

    @jit
    def bonded(i, j, bonds):
        """Whether particles ``i`` and ``j`` share a bond (scan of ``i``'s CSR list)."""
        for p in range(bonds.offsets[i], bonds.offsets[i + 1]):
            k = bonds.incident[p]
            if bonds.a[k] == j or bonds.b[k] == j:
                return True
        return False

    @jit
    def add_partner(T, i, j, x, radius, bonds, kpp, acc):
        """Add partner ``j``'s contact force on ``i`` and half the pair energy to the
        compensated running sums ``acc = (f1, c1, f2, c2, f3, c3, u, cu)``; bonded pairs
        are left out when ``bonds.skip_contacts``; zero terms are not added."""
        if bonds.skip_contacts and bonded(i, j, bonds):
            return acc
        g1, g2, g3, e = contact_pair(T, i, j, x, radius, kpp)
        if e > T(0.0) or g1 != T(0.0) or g2 != T(0.0) or g3 != T(0.0):
            f1, c1 = cadd(acc[0], acc[1], g1)
            f2, c2 = cadd(acc[2], acc[3], g2)
            f3, c3 = cadd(acc[4], acc[5], g3)
            u, cu = cadd(acc[6], acc[7], T(0.5) * e)
            return f1, c1, f2, c2, f3, c3, u, cu
        return acc

    @jit
    def contact_sum(i, x, par, bonds, contacts):
        """Contact force on ``i`` and half its pair energies (so the sum over particles is
        U^pp), each a compensated sum: over ``nbr[i, :count[i]]`` (a superset of the
        overlapping partners, in index order) or, for the brute-force search, over every
        other particle in index order. Both give the same terms in the same order, and
        non-overlapping partners add nothing, so the two searches agree bit for bit."""
        T = x.dtype.type
        z = T(0.0)
        acc = (z, z, z, z, z, z, z, z)
        radius = par.radius
        kpp = contacts.kpp
        if contacts.mode == CONTACTS_LIST:
            # A row that overflowed in a rebuild of this block holds only the first
            # ``capacity`` entries; the block is redone after the regrow, and until then
            # the row is read within bounds.
            for p in range(min(contacts.count[i], contacts.nbr.shape[1])):
                acc = add_partner(T, i, contacts.nbr[i, p], x, radius, bonds, kpp, acc)
        elif contacts.mode == CONTACTS_ALL_PAIRS:
            for j in range(x.shape[0]):
                if j != i:
                    acc = add_partner(T, i, j, x, radius, bonds, kpp, acc)
        return acc[0] + acc[1], acc[2] + acc[3], acc[4] + acc[5], acc[6] + acc[7]

    @jit
    def wall_sum(i, x, par, walls):
        """Planar walls ``n·x = c``: U^pw = (2/5) K [1 - (n·x_i - c)/r_i]_+^{5/2} per wall,
        force along ``n``; compensated sums of the force and the energy."""
        T = x.dtype.type
        f1 = f2 = f3 = u = T(0.0)
        c1 = c2 = c3 = cu = T(0.0)
        planes = walls.planes
        for w in range(planes.shape[0]):
            n1 = planes[w, 0]
            n2 = planes[w, 1]
            n3 = planes[w, 2]
            dist = n1 * x[i, 0] + n2 * x[i, 1] + n3 * x[i, 2] - planes[w, 3]
            f, e = hertz_contact(T, dist, par.radius[i], walls.k[w])
            if e > T(0.0):
                f1, c1 = cadd(f1, c1, f * n1)
                f2, c2 = cadd(f2, c2, f * n2)
                f3, c3 = cadd(f3, c3, f * n3)
                u, cu = cadd(u, cu, e)
        return f1 + c1, f2 + c2, f3 + c3, u + cu

    @jit
    def pendulum_term(i, q, fields):
        """Pendulum (39) on ``i`` if it is one: spatial moment ``m g (Rρ0) × e`` and ``U``."""
        T = q.dtype.type
        if fields.pendulum_of.shape[0] == 0 or fields.pendulum_of[i] < 0:
            return T(0.0), T(0.0), T(0.0), T(0.0)
        k = fields.pendulum_of[i]
        rho0, e = fields.rho0, fields.vertical
        p1, p2, p3 = quat_rotate(T, q[i, 0], q[i, 1], q[i, 2], q[i, 3], rho0[k, 0], rho0[k, 1], rho0[k, 2])
        return pendulum_moment(p1, p2, p3, fields.mg[k], e[k, 0], e[k, 1], e[k, 2])

    @jit
    def forces_body(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """Total force and spatial moment on ``i`` at the current configuration (bonds
        break here, see the module docstring), stored in ``F``, ``RM``; with ``kick`` the
        second half kick of the step follows (:func:`kernels.particles.build`,
        ``kick_body``)."""
        x = dyn.x
        T = x.dtype.type
        f1 = f2 = f3 = m1 = m2 = m3 = T(0.0)
        g = fields.gravity
        if g.shape[0] == 3:
            mi = par.mass[i]
            f1 = f1 + mi * g[0]
            f2 = f2 + mi * g[1]
            f3 = f3 + mi * g[2]
        r1, r2, r3, up = pendulum_term(i, dyn.q, fields)
        m1 = m1 + r1
        m2 = m2 + r2
        m3 = m3 + r3
        if bonds.a.shape[0] > 0:
            b1, b2, b3, b4, b5, b6 = bond_sum(i, True, dyn, bonds)
            f1 = f1 + b1
            f2 = f2 + b2
            f3 = f3 + b3
            m1 = m1 + b4
            m2 = m2 + b5
            m3 = m3 + b6
        if contacts.mode != 0:
            c1, c2, c3, uc = contact_sum(i, x, par, bonds, contacts)
            f1 = f1 + c1
            f2 = f2 + c2
            f3 = f3 + c3
        if walls.planes.shape[0] > 0:
            w1, w2, w3, uw = wall_sum(i, x, par, walls)
            f1 = f1 + w1
            f2 = f2 + w2
            f3 = f3 + w3
        kick_body(i, kick, scheme, h, dyn, par, status, f1, f2, f3, m1, m2, m3)

    @jit
    def family_forces_body(i, family, dyn, par, bonds, contacts, walls, fields):
        """Add one family's force and moment on ``i`` to ``F[i]``, ``RM[i]`` (no breakage):
        the same partial sums as :func:`forces_body`, for analysis and tests."""
        x, F, RM = dyn.x, dyn.F, dyn.RM
        if family == FAMILY_GRAVITY:
            g = fields.gravity
            if g.shape[0] == 3:
                for c in range(3):
                    F[i, c] += par.mass[i] * g[c]
        elif family == FAMILY_PENDULUM:
            r1, r2, r3, up = pendulum_term(i, dyn.q, fields)
            RM[i, 0] += r1
            RM[i, 1] += r2
            RM[i, 2] += r3
        elif family == FAMILY_BONDS:
            b1, b2, b3, b4, b5, b6 = bond_sum(i, False, dyn, bonds)
            F[i, 0] += b1
            F[i, 1] += b2
            F[i, 2] += b3
            RM[i, 0] += b4
            RM[i, 1] += b5
            RM[i, 2] += b6
        elif family == FAMILY_CONTACTS:
            c1, c2, c3, uc = contact_sum(i, x, par, bonds, contacts)
            F[i, 0] += c1
            F[i, 1] += c2
            F[i, 2] += c3
        elif family == FAMILY_WALLS:
            w1, w2, w3, uw = wall_sum(i, x, par, walls)
            F[i, 0] += w1
            F[i, 1] += w2
            F[i, 2] += w3

    @jit
    def diagnostics_body(i, dyn, par, bonds, contacts, walls, fields, out):
        """Row ``i`` of the per-particle diagnostics (columns
        :data:`kernels.layout.DIAGNOSTICS`): kinetic energies ``½ m|v|²``, ``½ J|Ω|²``;
        ``U_gravity = -m g·x``; the pendulum energy; the energies of the intact bonds of
        which ``i`` is end ``a``; half of ``i``'s pair energies; its wall energy; momentum
        ``m v``; angular momentum about the origin ``x × m v + J Ω``; the broken bonds
        ending at ``a = i``; the energy those released. Sums over particles are the
        totals."""
        x, v, om = dyn.x, dyn.v, dyn.omega
        T = x.dtype.type
        m = par.mass[i]
        J = par.inertia[i]
        for c in range(out.shape[1]):
            out[i, c] = T(0.0)
        out[i, KT] = T(0.5) * m * (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])
        out[i, KR] = T(0.5) * J * (om[i, 0] * om[i, 0] + om[i, 1] * om[i, 1] + om[i, 2] * om[i, 2])
        g = fields.gravity
        if g.shape[0] == 3:
            out[i, UG] = -m * (g[0] * x[i, 0] + g[1] * x[i, 1] + g[2] * x[i, 2])
        r1, r2, r3, up = pendulum_term(i, dyn.q, fields)
        out[i, UP] = up
        ua = us = um = ur = T(0.0)
        nbroken = 0
        for p in range(bonds.offsets[i], bonds.offsets[i + 1]):
            k = bonds.incident[p]
            if bonds.a[k] != i:
                continue
            if dyn.broken[k] != 0:
                nbroken += 1
                ur += dyn.released[k]
                continue
            t = bond_terms(T, k, x, dyn.q, bonds)
            ua += t[9]
            us += t[10]
            um += t[11]
        out[i, UA] = ua
        out[i, US] = us
        out[i, UM] = um
        out[i, NB] = nbroken
        out[i, UR] = ur
        if contacts.mode != 0:
            c1, c2, c3, uc = contact_sum(i, x, par, bonds, contacts)
            out[i, UPP] = uc
        if walls.planes.shape[0] > 0:
            w1, w2, w3, uw = wall_sum(i, x, par, walls)
            out[i, UPW] = uw
        p1 = m * v[i, 0]
        p2 = m * v[i, 1]
        p3 = m * v[i, 2]
        out[i, PX] = p1
        out[i, PX + 1] = p2
        out[i, PX + 2] = p3
        out[i, LX] = x[i, 1] * p3 - x[i, 2] * p2 + J * om[i, 0]
        out[i, LX + 1] = x[i, 2] * p1 - x[i, 0] * p3 + J * om[i, 1]
        out[i, LX + 2] = x[i, 0] * p2 - x[i, 1] * p1 + J * om[i, 2]

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

    return SimpleNamespace(
        quat_log=quat_log,
        bending_rotation=bending_rotation,
        bond_terms=bond_terms,
        bond_sum=bond_sum,
        bond_eval_body=bond_eval_body,
        contact_pair=contact_pair,
        contact_sum=contact_sum,
        wall_sum=wall_sum,
        pendulum_term=pendulum_term,
        forces_body=forces_body,
        family_forces_body=family_forces_body,
        diagnostics_body=diagnostics_body,
        bond_measures_body=bond_measures_body,
    )
