"""The comparators of Table 1 of paper 002 for rigid-body rotation in unit quaternions:
MPL (midpoint rule on Livens' equations), EMH (Hamiltonian energy-momentum scheme with the
regularised mass matrix, after Betsch & Siebert [7]) and MPH (midpoint rule on the
Hamiltonian equations), batched over N bodies.

Paper 002 (Kinon & Betsch), Sect. 5 (Table 1, lost in our copy; methods recovered from the
authors' public code; ``docs/physics.md``), Appendix D (missing). Same model, state and
diagnostics as :class:`granular.bodies.livens.rigid.QuaternionBodies`.

MPL
---
(86) with every derivative at the midpoint and the continuous fiber derivative::

    q_{n+1} - q_n = h v̄,   p_{n+1} - p_n = h ∂_q T(q̄, v̄) - h ∇V(q̄) - h λ q̄,
    p̄ = M4(q̄) v̄,   g(q_{n+1}) = 0

i.e. :class:`~granular.bodies.livens.rigid.EML` with ``Ω̄`` of (88) replaced by
``Ω(q̄, v̄) = 2 G(q̄) v̄``. Second order; conserves neither (74) nor, in general, the energy.

Hamiltonian formulation (regularised mass matrix)
-------------------------------------------------
``M̄(q) = M4(q) + 2 tr(J) q qᵀ = 4 Q(q) J̃ Q(q)ᵀ`` with ``Q(q) = [q, G(q)ᵀ]`` (= Q_l(q),
4 × 4, ``Q Qᵀ = |q|² I``) and ``J̃ = diag(½ tr J, J)``. On ``S³`` its inverse gives the
kinetic co-energy (as in the authors' code, without the ``|q|⁻⁴`` factor that the exact
inverse carries off the sphere)::

    T*(q, p) = ½ ω̃ᵀ W ω̃,   ω̃ = Q(q)ᵀ p = (q·p, G(q) p),   W = ¼ J̃⁻¹

``ω̃`` is bilinear in ``(q, p)``; ``∂ω̃/∂q = B(p) = [pᵀ; -G(p)]``, ``∂ω̃/∂p = Q(q)ᵀ``.
``H = T* + V``; with ``p = M̄ v`` and ``q·v = 0``: ``ω̃ = (0, 2 J Ω)`` and ``T* = ½ Ωᵀ J Ω``.

EMH (G-equivariant discrete gradient of T*, midpoint gradients of the quadratic V and g)::

    q_{n+1} - q_n = h Q(q̄) W ω̃_{n+½},   p_{n+1} - p_n = -h B(p̄)ᵀ W ω̃_{n+½} - h ∇V(q̄) - h λ q̄,
    g(q_{n+1}) = 0,     ω̃_{n+½} = ½ (ω̃(q_n, p_n) + ω̃(q_{n+1}, p_{n+1}))

conserves H and ``L = ½ E(q) p``. MPH: the same with ``ω̃_{n+½}`` replaced by
``ω̃(q̄, p̄)`` (the implicit midpoint rule on Hamilton's equations with the constraint at
the end point). Unknowns ``(q_{n+1}, p_{n+1}, hλ)`` (9 per body). The state's ``v`` is
the Hamiltonian velocity ``∂_p H = Q(q) W ω̃`` at the nodes.

Each scheme's step is a per-body law of :mod:`kernels.bodies_livens` (``eml_body`` with
the midpoint flag for MPL, ``hamiltonian_body`` for EMH and MPH).
"""

from __future__ import annotations

import numpy as np

from ... import rotations as rot
from ...rotations import array_module
from .rigid import EML, QuaternionBodies, _t, quat_ebar, quat_G

__all__ = ["MPL", "EMH", "MPH", "quat_Q", "omega_tilde"]


def quat_Q(a):
    """``Q(a) = [a, G(a)ᵀ] = Q_l(a)`` (33a): (..., 4) → (..., 4, 4)."""
    return a[..., 0, None, None] * _t(a)["eye4"] + quat_ebar(a[..., 1:])


def omega_tilde(q, p):
    """``ω̃ = Q(q)ᵀ p = (q·p, G(q) p)``: (..., 4), (..., 4) → (..., 4) [M L²/T]."""
    return rot.matvec_t(quat_Q(q), p)


def _B(p):
    """``∂ω̃/∂q = [pᵀ; -G(p)]``: (..., 4) → (..., 4, 4)."""
    xp = array_module(p)
    return xp.concatenate([p[..., None, :], -quat_G(p)], axis=-2)


class MPL(EML):
    """Midpoint rule on Livens' equations (Table 1), 13 unknowns per body: :class:`EML` with
    ``Ω̄ = 2 G(q̄) v̄``."""

    name = "livens mpl"
    scheme_name = "MPL"
    _midpoint = 1


class _Hamiltonian(QuaternionBodies):
    """Shared parts of EMH and MPH (unknowns ``(q_{n+1}, p_{n+1}, hλ)``)."""

    equivariant = True
    energy_key = "hamiltonian"
    k = 9

    def __init__(self, inertia, **kwargs):
        super().__init__(inertia, **kwargs)
        J = self._J_host  # on the host, per matrix, as the base class's parameters
        W = np.zeros((self.n, 4, 4))
        W[:, 0, 0] = 1.0 / (2.0 * (J[:, 0, 0] + J[:, 1, 1] + J[:, 2, 2]))
        W[:, 1:, 1:] = 0.25 * np.linalg.inv(J)
        self.W = self.backend.asarray(W)

    def _launch(self, state, out, h, k, status, value):
        self.kernels.livens_hamiltonian(int(self.equivariant), k, h, self.rtol, self.max_iter, self.H_V, self.W,
                                        *self._state_args(state, out), status, value)  # fmt: skip

    def hamiltonian_velocity(self, q, p):
        """``∂_p H = Q(q) W Q(q)ᵀ p``: (N, 4) [1/s]."""
        return rot.matvec(quat_Q(q), rot.matvec(self.W, omega_tilde(q, p)))

    def hamiltonian(self, state):
        """``H = ½ ω̃ᵀ W ω̃ + V(q)``: (N,) [M L²/T²]; conserved by EMH."""
        w = omega_tilde(state.q, state.p)
        return 0.5 * (w * rot.matvec(self.W, w)).sum(axis=-1) + self.potential(state.q)

    def scheme_energy(self, state):
        """The energy function of this scheme (Table 1): the Hamiltonian H."""
        return self.hamiltonian(state)


class EMH(_Hamiltonian):
    """Hamiltonian energy-momentum scheme with the regularised mass matrix (Table 1, [7])."""

    name = "livens emh"
    scheme_name = "EMH"
    equivariant = True


class MPH(_Hamiltonian):
    """Implicit midpoint rule on the Hamiltonian equations (Table 1)."""

    name = "livens mph"
    scheme_name = "MPH"
    equivariant = False
