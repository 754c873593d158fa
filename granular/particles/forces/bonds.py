"""Particle-binder-particle bonds (paper 003, Sect. 4): U^m (44)-(50), U^a (51)-(52) and
U^s (53)-(55), with optional breakage.

Reference data come from the initial configuration (``R(0)`` need not be ``I``):

* rest length ``r0 = |x_a(0) - x_b(0)|``;
* reference bond direction ``n(0) = (x_a(0) - x_b(0))/r0`` stored in each end's body
  frame, ``n0_a = R_a(0)ᵀ n(0)``, ``n0_b = R_b(0)ᵀ n(0)``;
* reference relative rotation ``B = R_b(0)ᵀ R_a(0)`` (as the quaternion
  ``q_b(0)* ⊗ q_a(0)``).

Energies (per bond, canonical orientation; see :mod:`kernels.laws`,
:mod:`kernels.interactions`):

* bending and torsion U^m = ½ K^m |θ|², ``θ`` the rotation vector of ``R_b B R_aᵀ``
  (the relative rotation measured from its initial value; taken by ``atan2`` so small
  angles are exact);
* axial U^a = ½ K^a (r/r0 - 1)²;
* shear U^s = ½ K^s [(1 - (R_a n0_a)·n)² + (1 - (R_b n0_b)·n)²], ``n`` the current bond
  direction: how far the bond has turned away from the direction each end carries. The
  printed (53)-(55) are garbled and not invariant under rigid rotations; this is the
  reading ``docs/physics.md`` explains, and it conserves linear and angular momentum.

Parallel bonds (:meth:`~granular.particles.builder.ModelBuilder.add_parallel_bonds`):
stiffnesses ``k_n``, ``k_s``, ``k_b``, ``k_t`` of a binder cylinder of given moduli and
radius, the energy of :func:`kernels.laws.parallel_bond`, and breakage on the parallel
bond's stresses (Potyondy & Cundall) or LAMMPS ``bond bpm/rotational``'s combined
force-moment criterion; ``docs/physics.md``, "Parallel bonds".

Breakage: a bond breaks for good when ``|r/r0 - 1| > strain_max`` or ``|θ| > angle_max``
(per bond; infinite by default, i.e. no breakage as in the paper). It is checked at
every force evaluation of a step, before the forces, so a broken bond never acts again;
its energy at the breaking configuration is booked as released (``U_released``), so
that the total energy plus the released energy is what the scheme conserves.
"""

from __future__ import annotations

import numpy as np

from kernels.layout import FAMILY_BONDS
from kernels.layout import Bonds as BondArgs

from ... import rotations
from ...hashing import splitmix64
from ..neighbors import min_image, period_rows

MEASURES = ("U_a", "U_s", "U_m", "strain", "angle")


class Bonds:
    """All bonds of a model, on the backend. Arrays as in :mod:`kernels.layout`."""

    kind = "bonds"
    family = FAMILY_BONDS
    energy_keys = ("U_m", "U_a", "U_s")

    def __init__(self, backend, n_particles, a, b, x0, q0, ka, ks, km, strain_max, angle_max, dtype=np.float64,
                 form=None, kt=None, crit=None, radius=None, period=None):  # fmt: skip
        xp = backend.xp
        dtype = np.dtype(dtype)
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        # a periodic box (host rows (lo, L, 1/L)): a bond is measured by the minimum image
        self.period = period_rows(xp, period, dtype)
        d = min_image(x0[a] - x0[b], period)
        r0 = np.linalg.norm(d, axis=1)
        n = d / r0[:, None]
        qa, qb = q0[a], q0[b]
        n0a = rotations.quat_rotate(rotations.quat_conjugate(qa), n)
        n0b = rotations.quat_rotate(rotations.quat_conjugate(qb), n)
        qref = rotations.quat_multiply(rotations.quat_conjugate(qb), qa)
        # CSR: for each particle the ids of its bonds, in a canonical order fixed by the
        # reference geometry (direction to the partner, then rest length), which does not
        # depend on how particles or bonds are numbered; the force sums run in this order.
        ends = np.concatenate([a, b])
        partner = np.concatenate([b, a])
        ids = np.concatenate([np.arange(len(a)), np.arange(len(a))])
        to_partner = min_image(x0[partner] - x0[ends], period)
        order = np.lexsort((np.concatenate([r0, r0]), to_partner[:, 2], to_partner[:, 1], to_partner[:, 0], ends))
        offsets = np.zeros(n_particles + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n_particles), out=offsets[1:])
        self.backend = backend
        self.count = len(a)
        self.host = {"a": a, "b": b, "rest_length": r0}
        self.a, self.b = xp.asarray(a), xp.asarray(b)
        self.offsets = xp.asarray(offsets)
        self.incident = xp.asarray(ids[order])
        self.rest_length = xp.asarray(r0, dtype=dtype)
        self.n0a, self.n0b = xp.asarray(n0a, dtype=dtype), xp.asarray(n0b, dtype=dtype)
        self.qref = xp.asarray(qref, dtype=dtype)
        self.ka, self.ks, self.km = (xp.asarray(np.asarray(k), dtype=dtype) for k in (ka, ks, km))
        strain_max = np.asarray(strain_max, dtype=np.float64)
        angle_max = np.asarray(angle_max, dtype=np.float64)
        form = np.zeros(len(a), dtype=np.int8) if form is None else np.asarray(form, dtype=np.int8)
        parallel = bool((form != 0).any())
        crit = np.zeros((len(a), 4)) if crit is None else np.asarray(crit, dtype=np.float64).reshape(len(a), 4)
        self.can_break = bool(np.isfinite(strain_max).any() or np.isfinite(angle_max).any()
                              or (crit[form != 0] > 0).any())  # fmt: skip
        self.parallel = parallel
        if parallel:  # the arms from each centre to the middle section, in proportion to the radii
            ra, rb = radius[a], radius[b]
            arm = np.stack([r0 * ra / (ra + rb), r0 * rb / (ra + rb)], axis=1)
            kt = np.zeros(len(a)) if kt is None else np.asarray(kt, dtype=np.float64)
        else:
            form, kt, arm, crit = np.zeros(0, np.int8), np.zeros(0), np.zeros((0, 2)), np.zeros((0, 4))
        self.host.update(form=form, kt=kt, arm=arm, crit=crit)
        self.form = xp.asarray(form)
        self.kt, self.arm, self.crit = (xp.asarray(v, dtype=dtype) for v in (kt, arm, crit))
        self.strain_max, self.angle_max = xp.asarray(strain_max, dtype=dtype), xp.asarray(angle_max, dtype=dtype)
        self.skip_contacts = False  # set by the contact family (bonded pairs left out)
        self._measures = xp.zeros((len(a), len(MEASURES)), dtype=dtype)
        per_bond = backend.kernels.PER_BOND_PASS
        self._terms = xp.zeros((len(a) if per_bond else 0, 9), dtype=dtype)
        # the table is read only by the lanes of paper 003's bonds outside a periodic box
        # (kernels.bonds.build, bond_range)
        lanes = per_bond and not parallel and self.period.shape[0] == 0
        row, table = bond_table(n0a, n0b, qref, r0, ka, ks, km, dtype) if lanes else _no_table(dtype)
        self.row, self.table = xp.asarray(row), xp.asarray(table)

    def kernel_args(self) -> BondArgs:
        """The ``Bonds`` argument bundle (device views). The backend's kernel module
        says whether bonds are evaluated in a per-bond pass into a (B, 9) buffer
        (``PER_BOND_PASS``) or by each end (an empty buffer)."""
        dev = self.backend.kernels.to_device
        return BondArgs(
            dev(self.offsets), dev(self.incident), dev(self.a), dev(self.b), dev(self.rest_length), dev(self.n0a),
            dev(self.n0b), dev(self.qref), dev(self.ka), dev(self.ks), dev(self.km), dev(self.strain_max),
            dev(self.angle_max), self.can_break, self.skip_contacts, dev(self._terms), dev(self.form), dev(self.kt),
            dev(self.arm), dev(self.crit), dev(self.period), dev(self.row), dev(self.table),
        )  # fmt: skip

    def accumulate(self, model, cfg) -> None:
        model.accumulate_family(self.family, cfg)

    def measures(self, model, cfg) -> np.ndarray:
        """Per bond (host, (B, 5)): U^a, U^s, U^m (zero once broken), axial strain
        ``r/r0 - 1``, relative rotation angle ``|θ|``."""
        if self.count:
            kern = model.kernels
            kern.set_stream(0)
            kern.bond_measures(model.dynamics(cfg), model.kernel_args(cfg)["bonds"], kern.to_device(self._measures))
        return model.backend.to_host(self._measures).astype(np.float64)

    def energies(self, model, cfg) -> dict:
        return model.family_energies(self.energy_keys, cfg)


def empty_bond_args(backend, n_particles, dtype, period=None) -> BondArgs:
    """A ``Bonds`` bundle with no bonds (every particle's CSR range is empty); ``period``
    the model's periodic box (host rows, or ``None``)."""
    xp, dev = backend.xp, backend.kernels.to_device
    z = dev(xp.zeros(0, dtype=dtype))
    zi = dev(xp.zeros(0, dtype=np.int64))
    z3 = dev(xp.zeros((0, 3), dtype=dtype))
    z4 = dev(xp.zeros((0, 4), dtype=dtype))
    return BondArgs(dev(xp.zeros(n_particles + 1, dtype=np.int64)), zi, zi, zi, z, z3, z3, z4, z, z, z, z, z, False,
                    False, dev(xp.zeros((0, 9), dtype=dtype)), dev(xp.zeros(0, dtype=np.int8)), z,
                    dev(xp.zeros((0, 2), dtype=dtype)), z4, dev(period_rows(xp, period, dtype)),
                    *(dev(xp.asarray(v)) for v in _no_table(dtype)))  # fmt: skip


#: The columns of a bond's row in :func:`bond_table`: ``B`` (``qref``) 4, ``n0_a`` 3,
#: ``n0_b`` 3, rest length, ``ka``, ``ks``, ``km``.
TABLE_COLUMNS = 14


def bond_table(n0a, n0b, qref, rest_length, ka, ks, km, dtype):
    """The bonds' reference data and stiffnesses as rows of a table of distinct rows:
    ``row`` (B,) int32, ``table`` (K, :data:`TABLE_COLUMNS`), bond ``k``'s row
    ``table[row[k]]`` is ``(qref, n0_a, n0_b, rest length, ka, ks, km)`` in ``dtype``,
    bit for bit (rows are told apart by their bits, so ``-0.0`` and ``0.0`` stay apart).

    The CPU's per-bond pass reads these rows in place of the seven per-bond arrays. A solid
    built on a lattice has a handful of distinct rows (one or a few per bond direction:
    rest lengths that differ in their last bits are rows apart), which sit in the first
    level of cache, so a bond's data read in a step falls from 112 bytes to 4; a random
    packing has as many rows as bonds, and reads what it read before."""
    b = len(rest_length)
    if b == 0:
        return _no_table(dtype)
    rows = np.empty((b, TABLE_COLUMNS), dtype=dtype)
    rows[:, 0:4] = qref
    rows[:, 4:7] = n0a
    rows[:, 7:10] = n0b
    rows[:, 10] = rest_length
    rows[:, 11], rows[:, 12], rows[:, 13] = (np.broadcast_to(np.asarray(k, dtype=dtype), (b,)) for k in (ka, ks, km))
    bits = np.ascontiguousarray(rows).view(np.dtype(f"u{rows.itemsize}"))
    # Equal rows by a 64-bit hash of their bits, then checked bit for bit: sorting the
    # hashes takes a fraction of a second for the 3e6 bonds of a 10^6-particle block,
    # where np.unique over whole rows (a lexicographic sort of 112-byte rows) took 7.6 s.
    _, first, inverse = np.unique(_row_hash(bits), return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not np.array_equal(bits[first][inverse], bits):  # two distinct rows share a hash
        _, first, inverse = np.unique(bits, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    # the rows in the order of their first bond: a packing with a row a bond reads its
    # table in the bonds' order
    rank = np.argsort(first, kind="stable")
    new = np.empty_like(rank)
    new[rank] = np.arange(len(rank))
    return new[inverse].astype(np.int32), np.ascontiguousarray(rows[first[rank]])


def _row_hash(bits):
    """A 64-bit hash of each row of the unsigned integers ``bits`` (B, C): each column
    mixed in by :func:`granular.hashing.splitmix64`, so that rows that
    differ in any bit get different hashes but by chance."""
    h = np.full(bits.shape[0], 0x9E3779B97F4A7C15, dtype=np.uint64)
    for c in range(bits.shape[1]):
        h = splitmix64(h ^ bits[:, c].astype(np.uint64))
    return h


def _no_table(dtype):
    """An empty :func:`bond_table` (no bonds, or a backend without the per-bond pass)."""
    return np.zeros(0, dtype=np.int32), np.zeros((0, TABLE_COLUMNS), dtype=dtype)
