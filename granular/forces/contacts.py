"""Contact: particle-particle U^pp (56)-(57) between any two overlapping particles
(bonded or not) and particle-wall U^pw for planar walls (paper 003, Sect. 4).

U^pp = (2/5) K^pp [1 - |x_a - x_b|/(D_a/2 + D_b/2)]_+^{5/2} (the factor 2/5 makes
``-dU/dx`` equal (57); the printed 5/2 contradicts it, PAPER_NOTES.md). A wall is "a
special case of particle-particle": the same law with the signed distance ``n·x - c`` of
the centre from the plane in place of the centre distance and ``D/2`` as the reach.
Frictionless: contacts exert no moment.

Candidate pairs: a Verlet neighbour list from a cell list (:mod:`granular.neighbors`,
O(N), the default ``search="cells"``) or all pairs (``search="all-pairs"``, O(N²), the
brute-force twin). Both give the same forces in practice: the pair law is evaluated in a
canonical order and summed with compensation, and pairs out of reach add exact zeros, so
the result does not depend on which superset of the overlapping pairs is visited nor
(except in contrived cancellations) in which order.
"""

from __future__ import annotations

import numpy as np


class ParticleContacts:
    """Hertz-type contact between all particle pairs with stiffness ``kpp`` [energy].

    ``bonded_contacts``: whether bonded pairs also interact by contact (the paper's
    U^pp acts between any two overlapping particles, bonded or not: the default). Bonded
    neighbours that touch at rest switch this stiff, non-smooth law on and off at every
    vibration, which costs energy accuracy; many bonded-particle codes leave such pairs
    out, which ``bonded_contacts=False`` does (for broken bonds too).
    """

    kind = "contacts"
    SEARCHES = ("cells", "all-pairs")

    def __init__(self, backend, n_particles, kpp, bonds=None, bonded_contacts=True, search="cells", skin=None,
                 radius=None):  # fmt: skip
        if search not in self.SEARCHES:
            raise ValueError(f"search: must be one of {self.SEARCHES}, got {search!r}")
        self.kpp = float(kpp)
        self.search = search
        self.neighbors = None
        if search == "cells":
            from ..neighbors import NeighborList

            rmax = float(radius.max())
            self.skin = 0.4 * rmax if skin is None else float(skin)
            self.neighbors = NeighborList(backend, radius, self.skin)
        self.skip_bonded = bool(bonds is not None and not bonded_contacts)
        xp = backend.xp
        if bonds is None:
            self._csr = (xp.zeros(n_particles + 1, dtype=np.int64),) + tuple(xp.zeros(0, dtype=np.int64) for _ in range(3))
        else:
            self._csr = (bonds.offsets, bonds.incident, bonds.a, bonds.b)
        self._U = xp.zeros(n_particles, dtype=radius.dtype if radius is not None else np.float64)  # half pair energies
        self._F = None

    def _run(self, model, x, F):
        kern = model.backend.kernels
        if self.neighbors is None:
            kern.contacts_allpairs(x, model.radius, self.kpp, self.skip_bonded, *self._csr, F, self._U)
        else:
            self.neighbors.update(x)
            kern.contacts_list(x, model.radius, self.kpp, self.skip_bonded, *self._csr, self.neighbors.nbr,
                               self.neighbors.count, F, self._U)  # fmt: skip

    def accumulate(self, model, cfg) -> None:
        self._run(model, cfg.x, cfg.F)

    def energies(self, model, cfg) -> dict:
        if self._F is None:
            self._F = model.backend.xp.zeros_like(cfg.x)
        self._run(model, cfg.x, self._F)
        return {"U_pp": float(self._U.sum())}


class Walls:
    """Planar walls ``n·x = c``: ``planes`` (W, 4) rows ``(n1, n2, n3, c)`` with unit ``n``
    pointing into the allowed half-space; ``k`` (W,) stiffness [energy]."""

    kind = "walls"

    def __init__(self, backend, n_particles, planes, k, dtype=np.float64):
        xp = backend.xp
        self.planes_host = np.asarray(planes, dtype=np.float64).reshape(-1, 4)
        self.planes = xp.asarray(self.planes_host, dtype=dtype)
        self.k = xp.asarray(np.asarray(k), dtype=dtype)
        self._U = xp.zeros(n_particles, dtype=dtype)
        self._F = None

    def _run(self, model, x, F):
        model.backend.kernels.walls(x, model.radius, self.planes, self.k, F, self._U)

    def accumulate(self, model, cfg) -> None:
        self._run(model, cfg.x, cfg.F)

    def energies(self, model, cfg) -> dict:
        if self._F is None:
            self._F = model.backend.xp.zeros_like(cfg.x)
        self._run(model, cfg.x, self._F)
        return {"U_pw": float(self._U.sum())}
