"""Interaction families.

Each family has

* ``kind``: a short name (``"gravity"``, ``"pendulum"``, ``"bonds"``, ``"contacts"``,
  ``"walls"``);
* ``accumulate(model, cfg)``: add its force and spatial moment at configuration ``cfg``
  (an object with ``x``, ``q``, ``F``, ``RM``, ``broken``: a :class:`~granular.state.State`
  or its back buffers) to ``cfg.F`` and ``cfg.RM``, calling :mod:`kernels`;
* ``energies(model, cfg)``: its potential energies as ``{"U_<name>": float}``.

Forces are minus the gradients of the energies; moments are minus the derivative on the
rotation, ``RM = -∂U/∂θ`` for ``R → exp(S(θ)) R`` (paper 003, (46)).
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
    "update_breakage",
]


def evaluate_forces(model, cfg) -> None:
    """Total force and spatial moment at configuration ``cfg`` into ``cfg.F``, ``cfg.RM``."""
    cfg.F.fill(0.0)
    cfg.RM.fill(0.0)
    for family in model.forces:
        family.accumulate(model, cfg)


def update_breakage(model, cfg, broken_before) -> None:
    """``cfg.broken`` := ``broken_before`` plus the bonds that exceed their thresholds at
    ``cfg`` (a no-op without bonds)."""
    if model.bonds is not None:
        model.bonds.update_breakage(model, cfg, broken_before)


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
    energies = {}
    for family in model.forces:
        for key, value in family.energies(model, cfg).items():
            energies[key] = energies.get(key, 0.0) + value
    return cfg.F, cfg.RM, energies
