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
    granular_contact = jit(laws.granular_contact)
    granular_energy = jit(laws.granular_energy)
    granular_release = jit(laws.granular_release)
    HISTORY = laws.HISTORY
    PAIR_ESTAR, PAIR_GSTAR = laws.PAIR_ESTAR, laws.PAIR_GSTAR
    PAIR_DAMP_N, PAIR_DAMP_T = laws.PAIR_DAMP_N, laws.PAIR_DAMP_T
    PAIR_MU, PAIR_MU_ROLL, PAIR_MU_TWIST = laws.PAIR_MU, laws.PAIR_MU_ROLL, laws.PAIR_MU_TWIST

    CONTACTS_LIST = laws.CONTACTS_LIST
    CONTACTS_ALL_PAIRS = laws.CONTACTS_ALL_PAIRS
    KT, KR, UG, UP = DIAG["kinetic_translational"], DIAG["kinetic_rotational"], DIAG["U_gravity"], DIAG["U_pendulum"]
    UA, US, UM, UPP, UPW = DIAG["U_a"], DIAG["U_s"], DIAG["U_m"], DIAG["U_pp"], DIAG["U_pw"]
    PX, LX, NB, UR = DIAG["P_x"], DIAG["L_x"], DIAG["broken_bonds"], DIAG["U_released"]
    DN, NCONT = DIAG["dissipated_normal"], DIAG["contacts"]

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
        are left out when ``bonds.skip_contacts``; zero terms are not added. (The bond test
        comes after the distance test: most listed partners do not touch, and the scan of
        ``i``'s bonds costs more than the distance.)"""
        g1, g2, g3, e = contact_pair(T, i, j, x, radius, kpp)
        if e > T(0.0) or g1 != T(0.0) or g2 != T(0.0) or g3 != T(0.0):
            if bonds.skip_contacts and bonded(i, j, bonds):
                return acc
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
        kpp = contacts.kpp if contacts.kpps.shape[0] == 0 else contacts.kpps[contacts.replica[i]]
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

    # ------------------------------------------------------- dissipative contact law

    @jit
    def pair_row(ma, mb, nmat):
        """Row of the pair table for materials ``ma``, ``mb``. In a model of replicas with
        their own materials a material index is ``r * nmat + m`` and replica ``r``'s
        block of ``nmat²`` rows starts at ``r * nmat²``; for one system (``mb < nmat``)
        this is ``ma * nmat + mb`` (no integer division on that path)."""
        if mb >= nmat:
            mb = mb % nmat
        return ma * nmat + mb

    @jit
    def load_springs(a, i, p):
        """The HISTORY-tuple of springs ``a[i, p]`` (``ξ, ψ, φ, δ_old``)."""
        return (a[i, p, 0], a[i, p, 1], a[i, p, 2], a[i, p, 3], a[i, p, 4], a[i, p, 5], a[i, p, 6],
                a[i, p, 7])  # fmt: skip

    @jit
    def store_springs(a, i, p, r):
        """Store the updated springs of a law's result ``r`` (its entries 9-16) in ``a[i, p]``."""
        a[i, p, 0] = r[9]
        a[i, p, 1] = r[10]
        a[i, p, 2] = r[11]
        a[i, p, 3] = r[12]
        a[i, p, 4] = r[13]
        a[i, p, 5] = r[14]
        a[i, p, 6] = r[15]
        a[i, p, 7] = r[16]

    @jit
    def body_values(k, dyn, par, contacts):
        """What the dissipative law reads of particle ``k``: position, radius, mass, the
        velocities ``vp``, ``wp`` the force pass sees (the dashpots', then the drift
        velocity: columns 3-5 in a step, the same columns 0-2 outside one)."""
        x, vp, wp = dyn.x, dyn.vp, dyn.wp
        d = 3 if vp.shape[1] > 3 else 0
        return (x[k, 0], x[k, 1], x[k, 2], par.radius[k], par.mass[k],
                vp[k, 0], vp[k, 1], vp[k, 2], wp[k, 0], wp[k, 1], wp[k, 2],
                vp[k, d], vp[k, d + 1], vp[k, d + 2], wp[k, d], wp[k, d + 1], wp[k, d + 2])  # fmt: skip

    @jit
    def granular_pair(T, lo, hi, mlo, mhi, s, contacts, h):
        """The dissipative law of the pair with body values ``lo`` < ``hi`` (tuples of
        :func:`body_values`), materials ``mlo``, ``mhi`` and springs ``s`` (a HISTORY-tuple),
        in the canonical orientation ``n = (x_lo - x_hi)/|x_lo - x_hi|``: both ends of the
        pair call it with the same values, so they get the same bits. ``None``-free: an
        untouched pair returns ``touching = False`` and zeros."""
        d1 = lo[0] - hi[0]
        d2 = lo[1] - hi[1]
        d3 = lo[2] - hi[2]
        reach = lo[3] + hi[3]
        dist2 = d1 * d1 + d2 * d2 + d3 * d3
        z = T(0.0)
        if dist2 >= reach * reach:
            return False, (z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z)
        dist = dist2 ** T(0.5)
        delta = reach - dist
        half = T(0.5) * delta
        par = contacts.pair
        row = pair_row(mlo, mhi, contacts.nmat)
        geometry = (d1 / dist, d2 / dist, d3 / dist, delta, lo[3] - half, hi[3] - half, lo[3] * hi[3] / reach,
                    lo[4] * hi[4] / (lo[4] + hi[4]))  # fmt: skip
        velocities = (lo[5] - hi[5], lo[6] - hi[6], lo[7] - hi[7], lo[8], lo[9], lo[10], hi[8], hi[9], hi[10])
        drift = (lo[11] - hi[11], lo[12] - hi[12], lo[13] - hi[13], lo[14], lo[15], lo[16], hi[14], hi[15], hi[16])
        params = (par[row, PAIR_ESTAR], par[row, PAIR_GSTAR], par[row, PAIR_DAMP_N], par[row, PAIR_DAMP_T],
                  par[row, PAIR_MU], par[row, PAIR_MU_ROLL], par[row, PAIR_MU_TWIST])  # fmt: skip
        return True, granular_contact(T, geometry, velocities, drift, params, s, h)

    @jit
    def granular_sum(i, update, h, dyn, par, bonds, contacts):
        """Dissipative contact force and spatial moment on ``i`` from its listed partners
        (compensated sums in row order), half of each pair's elastic energy, the energy
        each part dissipated in this step in the pairs of which ``i`` is the lower index
        (so each pair's is booked once), and the number of touching partners.
        With ``update`` (a step) the springs in ``i``'s row are replaced by the updated
        ones, and those of pairs that no longer touch are released (zeroed)."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        hist, live = contacts.hist, contacts.live
        a = (z, z, z, z, z, z, z, z, z, z, z, z)
        u = dn = df = dr = dt = z
        touching = 0
        radius = par.radius
        me = body_values(i, dyn, par, contacts)
        mat_i = contacts.mat[i]
        for p in range(min(contacts.count[i], contacts.nbr.shape[1])):
            j = contacts.nbr[i, p]
            # Most listed partners do not touch: decide on positions and radii alone (the
            # test of granular_pair, in its orientation, so the same bits decide) before
            # scanning i's bonds and reading the partner's velocities and the springs.
            # (A bonded pair left out never holds springs.)
            if i < j:
                dx = x[i, 0] - x[j, 0]
                dy = x[i, 1] - x[j, 1]
                dz = x[i, 2] - x[j, 2]
            else:
                dx = x[j, 0] - x[i, 0]
                dy = x[j, 1] - x[i, 1]
                dz = x[j, 2] - x[i, 2]
            reach = radius[i] + radius[j]
            apart = dx * dx + dy * dy + dz * dz >= reach * reach
            if apart and not (update and live[i, p] != 0):
                continue
            if bonds.skip_contacts and bonded(i, j, bonds):
                continue
            s = load_springs(hist, i, p)
            if apart:  # the contact opened in this step: its springs' energy is dissipated
                row = pair_row(mat_i, contacts.mat[j], contacts.nmat)
                rel = granular_release(T, me[3] * radius[j] / (me[3] + radius[j]), contacts.pair[row, PAIR_GSTAR], s)
                if i < j:
                    df += rel[0]
                    dr += rel[1]
                    dt += rel[2]
                for c in range(HISTORY):
                    hist[i, p, c] = z
                live[i, p] = 0
                continue
            other = body_values(j, dyn, par, contacts)
            if i < j:
                r = granular_pair(T, me, other, mat_i, contacts.mat[j], s, contacts, h)[1]
            else:
                r = granular_pair(T, other, me, contacts.mat[j], mat_i, s, contacts, h)[1]
            touching += 1
            if i < j:
                g = (r[0], r[1], r[2], r[3], r[4], r[5])
            else:
                g = (-r[0], -r[1], -r[2], r[6], r[7], r[8])
            f1, c1 = cadd(a[0], a[1], g[0])
            f2, c2 = cadd(a[2], a[3], g[1])
            f3, c3 = cadd(a[4], a[5], g[2])
            m1, e1 = cadd(a[6], a[7], g[3])
            m2, e2 = cadd(a[8], a[9], g[4])
            m3, e3 = cadd(a[10], a[11], g[5])
            a = (f1, c1, f2, c2, f3, c3, m1, e1, m2, e2, m3, e3)
            u += T(0.5) * r[17]
            if i < j:
                dn += r[18]
                df += r[19]
                dr += r[20]
                dt += r[21]
            if update:
                store_springs(hist, i, p, r)
                live[i, p] = 1 if r[16] != z else 0
        return (a[0] + a[1], a[2] + a[3], a[4] + a[5], a[6] + a[7], a[8] + a[9], a[10] + a[11],
                u, dn, df, dr, dt, touching)  # fmt: skip

    @jit
    def granular_pair_body(i, h, dyn, par, bonds, contacts):
        """Per-pair pass of a step (the CPU's way, ``contacts.res`` not empty): ``i``
        evaluates the dissipative law once for each listed partner ``j > i``, with the
        same inputs and operations as :func:`granular_sum`, and writes both ends' terms
        (force, moment) into their slots ``res[i, p]`` and ``res[j, p']``
        (``nbr[j, p'] = i``) with ``got = 1``, the updated springs into both ends'
        copies, and the pair's dissipated energy into ``i``'s ledger (a pair's energy is
        booked to its lower index, as :func:`granular_sum` does). Only ``i`` writes the
        slots of a pair ``(i, j > i)``, so threads never write the same slot.
        :func:`granular_gather` then adds the slots in row order: the terms and the order
        of :func:`granular_sum`, hence the same bits."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        hist, live, res, got = contacts.hist, contacts.live, contacts.res, contacts.got
        nbr = contacts.nbr
        cap = nbr.shape[1]
        radius = par.radius
        me = body_values(i, dyn, par, contacts)
        mat_i = contacts.mat[i]
        dn = df = dr = dt = z
        for p in range(min(contacts.count[i], cap)):
            j = nbr[i, p]
            if j < i:
                continue
            dx = x[i, 0] - x[j, 0]
            dy = x[i, 1] - x[j, 1]
            dz = x[i, 2] - x[j, 2]
            reach = radius[i] + radius[j]
            apart = dx * dx + dy * dy + dz * dz >= reach * reach
            if apart and live[i, p] == 0:
                continue
            if bonds.skip_contacts and bonded(i, j, bonds):
                continue
            # j's slot of the pair: rows are sorted and i < j, so i is among the first
            # entries of j's row (absent only from a row that overflowed, whose block is
            # redone after the regrow)
            q = -1
            for k in range(min(contacts.count[j], cap)):
                m = nbr[j, k]
                if m >= i:
                    if m == i:
                        q = k
                    break
            s = load_springs(hist, i, p)
            if apart:  # the contact opened in this step: its springs' energy is dissipated
                row = pair_row(mat_i, contacts.mat[j], contacts.nmat)
                rel = granular_release(T, me[3] * radius[j] / (me[3] + radius[j]), contacts.pair[row, PAIR_GSTAR], s)
                df += rel[0]
                dr += rel[1]
                dt += rel[2]
                for c in range(HISTORY):
                    hist[i, p, c] = z
                live[i, p] = 0
                if q >= 0:
                    for c in range(HISTORY):
                        hist[j, q, c] = z
                    live[j, q] = 0
                continue
            other = body_values(j, dyn, par, contacts)
            r = granular_pair(T, me, other, mat_i, contacts.mat[j], s, contacts, h)[1]
            dn += r[18]
            df += r[19]
            dr += r[20]
            dt += r[21]
            held = 1 if r[16] != z else 0
            store_springs(hist, i, p, r)
            live[i, p] = held
            res[i, p, 0] = r[0]
            res[i, p, 1] = r[1]
            res[i, p, 2] = r[2]
            res[i, p, 3] = r[3]
            res[i, p, 4] = r[4]
            res[i, p, 5] = r[5]
            got[i, p] = 1
            if q >= 0:
                store_springs(hist, j, q, r)
                live[j, q] = held
                res[j, q, 0] = -r[0]
                res[j, q, 1] = -r[1]
                res[j, q, 2] = -r[2]
                res[j, q, 3] = r[6]
                res[j, q, 4] = r[7]
                res[j, q, 5] = r[8]
                got[j, q] = 1
        dyn.dissip[i, 0] += dn
        dyn.dissip[i, 1] += df
        dyn.dissip[i, 2] += dr
        dyn.dissip[i, 3] += dt

    @jit
    def granular_gather(i, contacts):
        """The force and moment :func:`granular_sum` returns in a step, from the slots the
        per-pair pass (:func:`granular_pair_body`) filled, added in row order; the slots
        are cleared for the next step."""
        res, got = contacts.res, contacts.got
        T = res.dtype.type
        z = T(0.0)
        a = (z, z, z, z, z, z, z, z, z, z, z, z)
        for p in range(min(contacts.count[i], contacts.nbr.shape[1])):
            if got[i, p] == 0:
                continue
            got[i, p] = 0
            f1, c1 = cadd(a[0], a[1], res[i, p, 0])
            f2, c2 = cadd(a[2], a[3], res[i, p, 1])
            f3, c3 = cadd(a[4], a[5], res[i, p, 2])
            m1, e1 = cadd(a[6], a[7], res[i, p, 3])
            m2, e2 = cadd(a[8], a[9], res[i, p, 4])
            m3, e3 = cadd(a[10], a[11], res[i, p, 5])
            a = (f1, c1, f2, c2, f3, c3, m1, e1, m2, e2, m3, e3)
        return a[0] + a[1], a[2] + a[3], a[4] + a[5], a[6] + a[7], a[8] + a[9], a[10] + a[11]

    @jit
    def wall_range(i, walls):
        """The walls particle ``i`` meets: ``first[r]:first[r+1]`` of its replica ``r``,
        or all of them for a single system."""
        if walls.first.shape[0] > 0:
            r = walls.replica[i]
            return walls.first[r], walls.first[r + 1]
        return 0, walls.planes.shape[0]

    @jit
    def granular_wall_sum(i, update, h, dyn, par, walls, contacts):
        """The dissipative law between ``i`` and each planar wall (``b`` is the wall: at
        rest, ``l_b = 0``, ``R* = r_i``, ``m* = m_i``); springs in ``dyn.whist[i, w]``.
        Returns what :func:`granular_sum` returns."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        whist = dyn.whist
        planes = walls.planes
        me = body_values(i, dyn, par, contacts)
        par_ = contacts.pair
        f1 = f2 = f3 = m1 = m2 = m3 = z
        c1 = c2 = c3 = e1 = e2 = e3 = z
        u = dn = df = dr = dt = z
        touching = 0
        lo, hi = wall_range(i, walls)
        for w in range(lo, hi):
            k = w - lo  # the wall's springs: its place within the replica
            n1 = planes[w, 0]
            n2 = planes[w, 1]
            n3 = planes[w, 2]
            dist = n1 * me[0] + n2 * me[1] + n3 * me[2] - planes[w, 3]
            delta = me[3] - dist
            if not (delta > z):
                if update and whist[i, k, 7] != z:  # the contact opened: its springs' energy is dissipated
                    row = pair_row(contacts.mat[i], walls.mat[w], contacts.nmat)
                    rel = granular_release(T, me[3], par_[row, PAIR_GSTAR], load_springs(whist, i, k))
                    df += rel[0]
                    dr += rel[1]
                    dt += rel[2]
                    for c in range(HISTORY):
                        whist[i, k, c] = z
                continue
            touching += 1
            row = pair_row(contacts.mat[i], walls.mat[w], contacts.nmat)
            params = (par_[row, PAIR_ESTAR], par_[row, PAIR_GSTAR], par_[row, PAIR_DAMP_N], par_[row, PAIR_DAMP_T],
                      par_[row, PAIR_MU], par_[row, PAIR_MU_ROLL], par_[row, PAIR_MU_TWIST])  # fmt: skip
            springs = load_springs(whist, i, k)
            r = granular_contact(T, (n1, n2, n3, delta, dist, z, me[3], me[4]),
                                 (me[5], me[6], me[7], me[8], me[9], me[10], z, z, z),
                                 (me[11], me[12], me[13], me[14], me[15], me[16], z, z, z), params, springs, h)
            f1, c1 = cadd(f1, c1, r[0])
            f2, c2 = cadd(f2, c2, r[1])
            f3, c3 = cadd(f3, c3, r[2])
            m1, e1 = cadd(m1, e1, r[3])
            m2, e2 = cadd(m2, e2, r[4])
            m3, e3 = cadd(m3, e3, r[5])
            u += r[17]
            dn += r[18]
            df += r[19]
            dr += r[20]
            dt += r[21]
            if update:
                store_springs(whist, i, k, r)
        return f1 + c1, f2 + c2, f3 + c3, m1 + e1, m2 + e2, m3 + e3, u, dn, df, dr, dt, touching

    @jit
    def granular_energies(i, dyn, par, bonds, contacts, walls):
        """Elastic energy of ``i``'s dissipative contacts with its stored springs (half
        of each pair's, all of each wall's) and the number of touching partners and
        walls: ``(U_pp, U_pw, count)``. No update."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        upp = upw = z
        touching = 0
        hist, whist = contacts.hist, dyn.whist
        if contacts.mode != 0:
            for p in range(min(contacts.count[i], contacts.nbr.shape[1])):
                j = contacts.nbr[i, p]
                if bonds.skip_contacts and bonded(i, j, bonds):
                    continue
                d1 = x[i, 0] - x[j, 0]
                d2 = x[i, 1] - x[j, 1]
                d3 = x[i, 2] - x[j, 2]
                reach = par.radius[i] + par.radius[j]
                dist2 = d1 * d1 + d2 * d2 + d3 * d3
                if dist2 >= reach * reach:
                    continue
                touching += 1
                if i < j:
                    row = pair_row(contacts.mat[i], contacts.mat[j], contacts.nmat)
                else:
                    row = pair_row(contacts.mat[j], contacts.mat[i], contacts.nmat)
                upp += T(0.5) * granular_energy(
                    T, reach - dist2 ** T(0.5), par.radius[i] * par.radius[j] / reach, contacts.pair[row, PAIR_ESTAR],
                    contacts.pair[row, PAIR_GSTAR], hist[i, p, 0], hist[i, p, 1], hist[i, p, 2], hist[i, p, 3],
                    hist[i, p, 4], hist[i, p, 5], hist[i, p, 6],
                )  # fmt: skip
        planes = walls.planes
        lo, hi = wall_range(i, walls)
        for w in range(lo, hi):
            k = w - lo
            dist = planes[w, 0] * x[i, 0] + planes[w, 1] * x[i, 1] + planes[w, 2] * x[i, 2] - planes[w, 3]
            delta = par.radius[i] - dist
            if not (delta > z):
                continue
            touching += 1
            row = pair_row(contacts.mat[i], walls.mat[w], contacts.nmat)
            upw += granular_energy(T, delta, par.radius[i], contacts.pair[row, PAIR_ESTAR], contacts.pair[row, PAIR_GSTAR],
                                   whist[i, k, 0], whist[i, k, 1], whist[i, k, 2], whist[i, k, 3], whist[i, k, 4],
                                   whist[i, k, 5], whist[i, k, 6])  # fmt: skip
        return upp, upw, touching

    @jit
    def wall_sum(i, x, par, walls):
        """Planar walls ``n·x = c``: U^pw = (2/5) K [1 - (n·x_i - c)/r_i]_+^{5/2} per wall,
        force along ``n``; compensated sums of the force and the energy."""
        T = x.dtype.type
        f1 = f2 = f3 = u = T(0.0)
        c1 = c2 = c3 = cu = T(0.0)
        planes = walls.planes
        lo, hi = wall_range(i, walls)
        for w in range(lo, hi):
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
    def gravity_row(i, fields):
        """Where particle ``i``'s gravity starts in ``fields.gravity``: ``(3,)`` for one
        system, or ``(3R,)`` with each replica's row (``fields.replica[i]``); -1: none."""
        if fields.gravity.shape[0] == 0:
            return -1
        if fields.replica.shape[0] > 0:
            return 3 * fields.replica[i]
        return 0

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
        k = gravity_row(i, fields)
        if k >= 0:
            mi = par.mass[i]
            f1 = f1 + mi * g[k]
            f2 = f2 + mi * g[k + 1]
            f3 = f3 + mi * g[k + 2]
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
        if contacts.law:
            # the dissipative law: contacts and walls with their springs (docs/contacts.md)
            if contacts.res.shape[0] > 0:  # the per-pair pass filled the slots and booked the energy
                g1, g2, g3, g4, g5, g6 = granular_gather(i, contacts)
            else:
                d = granular_sum(i, True, h, dyn, par, bonds, contacts)
                g1, g2, g3, g4, g5, g6 = d[0], d[1], d[2], d[3], d[4], d[5]
                dyn.dissip[i, 0] += d[7]
                dyn.dissip[i, 1] += d[8]
                dyn.dissip[i, 2] += d[9]
                dyn.dissip[i, 3] += d[10]
            f1 = f1 + g1
            f2 = f2 + g2
            f3 = f3 + g3
            m1 = m1 + g4
            m2 = m2 + g5
            m3 = m3 + g6
            w = granular_wall_sum(i, True, h, dyn, par, walls, contacts)
            f1 = f1 + w[0]
            f2 = f2 + w[1]
            f3 = f3 + w[2]
            m1 = m1 + w[3]
            m2 = m2 + w[4]
            m3 = m3 + w[5]
            dyn.dissip[i, 0] += w[7]
            dyn.dissip[i, 1] += w[8]
            dyn.dissip[i, 2] += w[9]
            dyn.dissip[i, 3] += w[10]
        else:
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
            k = gravity_row(i, fields)
            if k >= 0:
                for c in range(3):
                    F[i, c] += par.mass[i] * g[k + c]
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
        elif family == FAMILY_CONTACTS and contacts.law:
            T = x.dtype.type
            d = granular_sum(i, False, T(0.0), dyn, par, bonds, contacts)
            F[i, 0] += d[0]
            F[i, 1] += d[1]
            F[i, 2] += d[2]
            RM[i, 0] += d[3]
            RM[i, 1] += d[4]
            RM[i, 2] += d[5]
        elif family == FAMILY_WALLS and contacts.law:
            T = x.dtype.type
            d = granular_wall_sum(i, False, T(0.0), dyn, par, walls, contacts)
            F[i, 0] += d[0]
            F[i, 1] += d[1]
            F[i, 2] += d[2]
            RM[i, 0] += d[3]
            RM[i, 1] += d[4]
            RM[i, 2] += d[5]
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
        k = gravity_row(i, fields)
        if k >= 0:
            out[i, UG] = -m * (g[k] * x[i, 0] + g[k + 1] * x[i, 1] + g[k + 2] * x[i, 2])
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
        if contacts.law:
            upp, upw, touching = granular_energies(i, dyn, par, bonds, contacts, walls)
            out[i, UPP] = upp
            out[i, UPW] = upw
            out[i, NCONT] = touching
            for c in range(4):
                out[i, DN + c] = dyn.dissip[i, c]
        else:
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
        granular_contact=granular_contact,
        granular_sum=granular_sum,
        granular_wall_sum=granular_wall_sum,
        wall_range=wall_range,
        granular_pair_body=granular_pair_body,
        granular_gather=granular_gather,
        pendulum_term=pendulum_term,
        forces_body=forces_body,
        family_forces_body=family_forces_body,
        diagnostics_body=diagnostics_body,
        bond_measures_body=bond_measures_body,
    )
