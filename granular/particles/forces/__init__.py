"""Interaction families.

Each family has

* ``kind``: a short name (``"gravity"``, ``"pendulum"``, ``"bonds"``, ``"contacts"``,
  ``"walls"``);
* ``accumulate(model, cfg)``: add its force and spatial moment at configuration ``cfg``
  (an object with ``x``, ``q``, ``F``, ``RM``, ``broken``: a :class:`~granular.particles.state.State`
  or a namespace) to ``cfg.F`` and ``cfg.RM``, calling :mod:`kernels`;
* ``energies(model, cfg)``: its potential energies as ``{"U_<name>": float}``.

Forces are minus the gradients of the energies; moments are minus the derivative on the
rotation, ``RM = -∂U/∂θ`` for ``R → exp(S(θ)) R`` (paper 003, (46)).

The time step does not call the families one by one: one fused kernel sums all of them
per particle (:mod:`kernels.interactions`), adding the same partial sums in the same
order, so ``evaluate_forces`` equals the forces a step computes bit for bit.
"""

from types import SimpleNamespace

from .bonds import Bonds
from .contacts import ParticleContacts, Walls
from .fields import PendulumPotential, UniformGravity

__all__ = [
    "Bonds",
    "ParticleContacts",
    "PendulumPotential",
    "UniformGravity",
    "Walls",
    "evaluate_forces",
    "forces_at",
]


def evaluate_forces(model, cfg) -> None:
    """Total force and spatial moment at configuration ``cfg`` into ``cfg.F``, ``cfg.RM``
    (no bond breaks here; a step applies breakage)."""
    cfg.F.fill(0.0)
    cfg.RM.fill(0.0)
    for family in model.forces:
        family.accumulate(model, cfg)


def forces_at(model, x, q, broken=None):
    """Force, spatial moment and potential energies at an arbitrary configuration.

    ``x`` (N, 3), ``q`` (N, 4) backend arrays; ``broken`` (B,) int8 (default: all bonds
    intact; no breakage is applied). Returns new arrays ``F``, ``RM`` and a dict of
    energies ``{"U_<name>": float}``. Meant for analysis and tests, not the step loop.
    """
    xp = model.backend.xp
    if broken is None:
        broken = xp.zeros(model.n_bonds, dtype=xp.int8)
    cfg = SimpleNamespace(x=x, q=q, F=xp.zeros_like(x), RM=xp.zeros_like(x), broken=broken)
    evaluate_forces(model, cfg)
    return cfg.F, cfg.RM, model.potential_energies(cfg)
