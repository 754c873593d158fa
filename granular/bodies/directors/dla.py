"""Discrete Lagrange-d'Alembert (DLA) comparator for the director bodies, batched.

Paper 000, Sect. 6.4 compares the specialised energy-momentum scheme with "a
well-established nonholonomic integrator (Cortés and Martínez 2001)" whose formulas are in
an Appendix B that is not in our copy of the text. As ``docs/physics.md`` records, we
implement the standard discrete Lagrange-d'Alembert scheme for the same constrained
director system: midpoint discrete Lagrangian, holonomic constraints at the nodes, the
nonholonomic constraint imposed on the discrete velocity.

Discrete Lagrangian (no potential, constant mass matrix ``M = 𝒥 ⊗ I₃``)::

    L_d(q_k, q_{k+1}) = h L(q_{k+½}, (q_{k+1} - q_k)/h) = (1/2h) (q_{k+1} - q_k)ᵀ M (q_{k+1} - q_k)

Discrete Lagrange-d'Alembert principle (Cortés & Martínez 2001): with the reaction at node
``k`` in the annihilator of the constraint distribution at ``q_k`` and the discrete
constraint on the discrete velocity at the midpoint,

    D2 L_d(q_{k-1}, q_k) + D1 L_d(q_k, q_{k+1}) + f_d^+(k-1) + f_d^-(k)
        = h H(q_k)ᵀ λ_k + h G(q_k)ᵀ μ_k
    h(q_{k+1}) = 0,        G(q_{k+½}) (q_{k+1} - q_k)/h = 0

with the forced-variational-integrator loads ``f_d^± = (h/2) Q^ext(t, q)`` at the nodes.
We use its position-momentum (RATTLE-like) form, which splits the node reaction in two
halves so that the node momentum ``p_k`` satisfies the velocity constraints (a consistent
discrete Legendre transform); the trajectory ``q_k`` is that of the two-step scheme::

    p_{k+½}  = p_k + (h/2) Q_k - (h/2)(H(q_k)ᵀ λ + G(q_k)ᵀ μ)        (Newton: q_{k+1}, λ, μ)
    q_{k+1}  = q_k + h M⁻¹ p_{k+½},   h(q_{k+1}) = 0,   G(q_{k+½})(q_{k+1} - q_k) = 0
    p_{k+1}  = p_{k+½} + (h/2) Q_{k+1} - (h/2)(H(q_{k+1})ᵀ λ' + G(q_{k+1})ᵀ μ')
    H(q_{k+1}) M⁻¹ p_{k+1} = 0,   G(q_{k+1}) M⁻¹ p_{k+1} = 0               (linear: λ', μ')

The first line is one 16 × 16 (15 × 15 for the holonomic body) Newton system per body;
the projection is one 7 × 7 (6 × 6) linear solve; both run inside the per-body law
``director_body`` of :mod:`kernels.bodies_directors` (``dla = 1``). Stored state: ``q_k`` and ``q̇_k = M⁻¹ p_k`` (consistent with all constraints).
Two energies are reported, as in Sect. 6.4: the Hamiltonian at the nodes
``H_k = ½ q̇_kᵀ M q̇_k`` (:meth:`DirectorDLA.kinetic_energy`) and the energy at the
midpoints ``E_{k+½} = ½ v̄ᵀ M v̄``, ``v̄ = (q_{k+1} - q_k)/h``
(:meth:`DirectorDLA.midpoint_energy`); without load they differ by
``(h²/8) |H_kᵀλ + G_kᵀμ|²_{M⁻¹}`` (``p_k`` is M⁻¹-orthogonal to the reactions).

Limitation: with the constraints at the nodes, the tangential part of a director
increment is at most ``sin θ <= 1``, so the first half has no solution when ``h |ω|``
exceeds about 1 (rad per step); the Newton solve then fails loudly with a
:class:`~granular.bodies.newton.NewtonError` naming the body. The paper's cases 2 and 3
reach ``h |ω| ≈ 2.2`` and ``1.1`` at ``h = 0.005``; the comparator runs them at ``h/4``.
Without the nonholonomic constraint the scheme is RATTLE for the director body.

Measured on the paper's cases (``tests/test_nontwisting.py``): after the load the
Hamiltonian and Π^1, Π^2 stay constant and Π^3 = 0 to round-off, and the post-load
momenta equal the exact ``Π(0) - ½ (M1, M2)`` to round-off (the trapezoidal node loads
integrate ``Π̇⊥ = M⊥`` exactly for the piecewise-linear ramp (116)).
"""

from __future__ import annotations

from . import schemes as dirs
from .nontwisting import NonTwistingChecks, nonholonomic_momenta, twist_rate
from .schemes import DirectorScheme

__all__ = ["DirectorDLA", "NonTwistingDLA"]


class DirectorDLA(DirectorScheme):
    """Discrete Lagrange-d'Alembert / RATTLE scheme for the standard director body.

    Constructor parameters: :class:`~granular.bodies.directors.DirectorScheme`. See the
    module docstring for the equations. The state's ``lam_end``, ``mu_end`` hold the
    projection's end-of-step multipliers ``(2/h) ν``.
    """

    name = "directors dla"
    scheme_name = "director DLA"
    _dla = 1

    def _load_times(self):
        """The node loads at ``t_n`` and ``t_{n+1}``."""
        return (0.0, 1.0)

    def midpoint_energy(self, state):
        """(N,) [M L²/T²], ``E_{k+½} = ½ v̄ᵀ M v̄`` of the last step (Sect. 6.4)."""
        return dirs.kinetic_energy(self.euler, state.v_half)


class NonTwistingDLA(NonTwistingChecks, DirectorDLA):
    """Discrete Lagrange-d'Alembert comparator for the body on the non-twisting frame
    (Sect. 6.4). Parameters as :class:`~granular.bodies.directors.nontwisting.NonTwistingEM`."""

    name = "nontwisting dla"
    scheme_name = "non-twisting DLA"

    def nonholonomic_momenta(self, state):
        """(N, 3) [M L²/T]: Π^1, Π^2, Π^3 at the nodes (74)."""
        return self.xp.stack(nonholonomic_momenta(self.euler, state.d, state.v), axis=-1)

    def twist_rate(self, state):
        """(N,) [1/s], (80) at the nodes (enforced there by the projection)."""
        return twist_rate(state.d, state.v, self.a)
