"""Particle-binder-particle bonds (paper 003, Sect. 4): U^m (44)-(50), U^a (51)-(52) and
U^s (53)-(55), with optional breakage.

Reference data come from the initial configuration (``R(0)`` need not be ``I``):

* rest length ``r0 = |x_a(0) - x_b(0)|``;
* reference bond direction ``n(0) = (x_a(0) - x_b(0))/r0`` stored in each end's body
  frame, ``n0_a = R_a(0)ᵀ n(0)``, ``n0_b = R_b(0)ᵀ n(0)``;
* reference relative rotation ``B = R_b(0)ᵀ R_a(0)`` (as the quaternion
  ``q_b(0)* ⊗ q_a(0)``).

Energies (per bond, canonical ``a < b``; see :mod:`kernels.laws`,
:mod:`kernels.interactions`):

* bending and torsion U^m = ½ K^m |θ|², ``θ`` the rotation vector of ``R_b B R_aᵀ``
  (the relative rotation measured from its initial value; taken by ``atan2`` so small
  angles are exact);
* axial U^a = ½ K^a (r/r0 - 1)²;
* shear U^s = ½ K^s [(1 - (R_a n0_a)·n)² + (1 - (R_b n0_b)·n)²], ``n`` the current bond
  direction: how far the bond has turned away from the direction each end carries. The
  printed (53)-(55) are garbled and not invariant under rigid rotations; this is the
  reading recommended in PAPER_NOTES.md, and it conserves linear and angular momentum.

Breakage: a bond breaks for good when ``|r/r0 - 1| > strain_max`` or ``|θ| > angle_max``
(per bond; infinite by default, i.e. no breakage as in the paper). It is checked at
every force evaluation, before the forces, so a broken bond never acts again and its
energy leaves the total.
"""

from __future__ import annotations

import numpy as np

from .. import rotations

MEASURES = ("U_a", "U_s", "U_m", "strain", "angle")


class Bonds:
    """All bonds of a model, on the backend. Arrays as in :mod:`kernels.interactions`."""

    kind = "bonds"

    def __init__(self, backend, n_particles, a, b, x0, q0, ka, ks, km, strain_max, angle_max, dtype=np.float64):
        xp = backend.xp
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        d = x0[a] - x0[b]
        r0 = np.linalg.norm(d, axis=1)
        n = d / r0[:, None]
        qa, qb = q0[a], q0[b]
        n0a = rotations.quat_rotate(rotations.quat_conjugate(qa), n)
        n0b = rotations.quat_rotate(rotations.quat_conjugate(qb), n)
        qref = rotations.quat_multiply(rotations.quat_conjugate(qb), qa)
        # CSR: for each particle the ids of its bonds, in a canonical order fixed by the
        # reference geometry (direction to the partner, then rest length), which does not
        # depend on how particles or bonds are numbered; the force gather sums in this order.
        ends = np.concatenate([a, b])
        partner = np.concatenate([b, a])
        ids = np.concatenate([np.arange(len(a)), np.arange(len(a))])
        to_partner = x0[partner] - x0[ends]
        order = np.lexsort((np.concatenate([r0, r0]), to_partner[:, 2], to_partner[:, 1], to_partner[:, 0], ends))
        offsets = np.zeros(n_particles + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n_particles), out=offsets[1:])
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
        self.can_break = bool(np.isfinite(strain_max).any() or np.isfinite(angle_max).any())
        self.strain_max, self.angle_max = xp.asarray(strain_max, dtype=dtype), xp.asarray(angle_max, dtype=dtype)
        self._measures = xp.zeros((len(a), len(MEASURES)), dtype=np.float64)
        self._terms = xp.zeros((len(a), 9), dtype=dtype)  # per-bond F_a, RM_a, RM_b

    def accumulate(self, model, cfg) -> None:
        model.backend.kernels.bond_forces(
            cfg.x, cfg.q, self.offsets, self.incident, self.a, self.b, self.rest_length, self.n0a, self.n0b,
            self.qref, self.ka, self.ks, self.km, cfg.broken, self._terms, cfg.F, cfg.RM,
        )  # fmt: skip

    def update_breakage(self, model, cfg, broken_before) -> None:
        if self.can_break:
            model.backend.kernels.bond_break(
                cfg.x, cfg.q, self.a, self.b, self.rest_length, self.qref, self.strain_max, self.angle_max,
                broken_before, cfg.broken,
            )  # fmt: skip
        elif cfg.broken is not broken_before:
            cfg.broken[...] = broken_before

    def measures(self, model, cfg) -> np.ndarray:
        """Per bond (host, (B, 5)): U^a, U^s, U^m (zero once broken), axial strain
        ``r/r0 - 1``, relative rotation angle ``|θ|``."""
        if self.count:
            model.backend.kernels.bond_energies(
                cfg.x, cfg.q, self.a, self.b, self.rest_length, self.n0a, self.n0b, self.qref,
                self.ka, self.ks, self.km, cfg.broken, self._measures,
            )  # fmt: skip
        return model.backend.to_host(self._measures)

    def energies(self, model, cfg) -> dict:
        m = self.measures(model, cfg).sum(axis=0)
        return {"U_m": float(m[2]), "U_a": float(m[0]), "U_s": float(m[1])}
