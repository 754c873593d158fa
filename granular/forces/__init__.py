"""Interaction families. Each has ``accumulate(model, x, q, F, RM)`` (adds its force and
spatial moment, calling :mod:`kernels`) and ``energy(model, x, q)`` (its potential energy,
a host float). Forces are minus the gradients of the energies; moments are minus the
derivative on the rotation, ``RM = -∂U/∂θ`` for ``R → exp(S(θ)) R``.
"""

from .fields import PendulumPotential, UniformGravity

__all__ = ["UniformGravity", "PendulumPotential", "evaluate_forces"]


def evaluate_forces(model, x, q, F, RM) -> None:
    """Total force and spatial moment at configuration ``(x, q)`` into ``F``, ``RM``."""
    F.fill(0.0)
    RM.fill(0.0)
    for family in model.forces:
        family.accumulate(model, x, q, F, RM)
