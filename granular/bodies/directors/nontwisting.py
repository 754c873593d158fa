"""Rigid body on the non-twisting (Bishop) frame and its energy-momentum scheme, batched.

Paper 000 (Gebhardt & Romero), Sects. 4.2 and 5.2, eqs. (80)-(84) and (92)-(110).

Model (80)-(84)
---------------
The director body of :mod:`granular.bodies.directors` with the nonholonomic constraint
that the frame does not twist about d3 (18), written with a free parameter ``a ∈ [0, 1]``:

    g = (1 - a) ḋ1·d2 - a ḋ2·d1 = 0                                             (80)

It adds the reaction ``μ G(q)ᵀ = μ ((1 - a) d2, -a d1, 0)`` to the director equations (81)
(a moment ``μ d3`` for any ``a``). Only the part of an external moment perpendicular to
d3 does work (79), (84): ``f^i = ½ m⊥ × d_i`` with ``m⊥ = M1 d1 + M2 d2``; this module
therefore takes material loads with two components (``ExternalMoment.material(t)``
returning (N, 2)); a moment fixed in space is refused. The inertia must split (32): D3 a
principal axis, ``J13 = J23 = 0`` (equivalently ``𝒥^{13} = 𝒥^{23} = 0``). Initial
angular velocities must have no twist, ``ω·d3 = 0`` (82).

Invariants without load (74): the kinetic energy K and the nonholonomic momenta
``Π^1 = d1·π``, ``Π^2 = d2·π`` (π the spatial angular momentum); ``Π^3 = d3·π = 0``.
Consequently ``W = J⁻¹Π`` is constant and the unloaded motion is a uniform rotation about
a fixed axis perpendicular to d3: d3 runs on a great circle.

Specialised energy-momentum scheme (92)-(94)
--------------------------------------------
The scheme (86)-(87) of :class:`~granular.bodies.directors.DirectorEM` plus the
average-vector-field nonholonomic Jacobian ``G_d = ½∫G(q(ξ))dξ = G(q_{n+½})`` (93)
(``G`` is linear in q) and the discrete constraint (94)::

    (2/h²) M (q_{n+1} - q_n - h q̇_n) - Q^ext_{n+½} + H(q_{n+½})ᵀ λ + G(q_{n+½})ᵀ μ = 0
    h(q_{n+1}) = 0,      G(q_{n+½}) (q_{n+1} - q_n) = 0
    q̇_{n+1} = (2/h)(q_{n+1} - q_n) - q̇_n

Unknowns ``q_{n+1}`` (9), ``λ`` (6), ``μ`` (1): one 16 × 16 system per body.

Notes on the paper (our reading, checked numerically by ``tests/test_nontwisting.py``):

* The choice of ``a`` does not change the discrete solution ``q_{n+1}``: on ``Q``,
  ``Δd1·d̄2 = -Δd2·d̄1`` and ``G(a)ᵀμ = G(0)ᵀμ - a μ ∂(d1·d2)/∂q``, so a change of ``a``
  only shifts the multiplier of ``d1·d2``. That is why the paper's proof may use
  ``a = 1`` for Π^1 (98) and ``a = 0`` for Π^2 (110) for one and the same scheme.
* Discrete kinematics: with ``q_{n+1} = R q_n``, (94) says the incremental rotation R has
  its axis perpendicular to d3 — a discrete parallel transport, the discrete Bishop frame.
* The paper's proof of (95b, c) ends with O(h²) remainders ((101)-(108)), so it does not
  show exact conservation of Π^1, Π^2. Measured (``tests/test_nontwisting.py``,
  ``granular validate nontwisting``): K is exact (95a) in all cases. Π^1, Π^2 are exact
  when the nodal velocities satisfy the hidden constraints, as in case 1 (an unloaded
  uniform rotation from a consistent start). After a loaded phase (cases 2, 3) the nodal
  velocities ``q̇_n = 2Δq/h - q̇_{n-1}`` violate the hidden constraints by about h^3.5
  (4e-5 at h = 0.005, 3e-8 at h/8); the nodal Π^1, Π^2 then oscillate, bounded and
  without drift, at a relative amplitude of ~5e-8 at h = 0.005 and ~1e-11 at h/4 (about
  h^6), and the nodal Π^3 = d3·π is of the size of that violation.
* At the midpoints, where (94) is imposed, the discrete velocity is exactly a rigid one
  without twist: ``q_{n+1} = R q_n`` gives ``v̄_i = (q_{n+1} - q_n)_i / h = ω̄ × d̄_i`` with
  ``ω̄ = (2/h) tan(θ/2) e`` (Cayley) and ``e ⊥ d̄3``, so Π^3 evaluated with ``(q̄, v̄)``
  vanishes to round-off in every case.
* Accuracy: the paper's loads (115), (118) spin the body up to |ω| ≈ 440 rad/s (case 2),
  2.2 rad per step of h = 0.005. The scheme stays stable and conservative, but the
  post-load momenta are then ~20 % below the exact ``Π(1) = Π(0) - ½ (M1, M2)`` of the
  continuous model (Π̇⊥ = M⊥ when Π^3 = 0); the error falls as h² (quotient → 4).
"""

from __future__ import annotations

from ... import rotations as rot
from .schemes import DirectorEM

__all__ = ["CASES", "NonTwistingEM", "nonholonomic_momenta", "ramp", "twist_rate"]

#: The load cases of paper 000, Sect. 6 (scene presets and the study): case -> (ω⊥(0) in
#: the material frame = spatial, as Λ(0) = I [1/T]; (M1, M2) of m⊥/(-f) [M L²/T²])
CASES = {
    1: ((6.0, -18.0, 0.0), (0.0, 0.0)),
    2: ((0.0, 0.0, 0.0), (2472.5, 1075.0)),
    3: ((1.5, 4.5, 0.0), (1236.25, 537.5)),
}


def ramp(t: float) -> float:
    """The load factor ``f(t)`` of (116): 2t on [0, 0.5), 2 - 2t on [0.5, 1), 0 after [1]."""
    if t < 0.5:
        return 2.0 * t
    if t < 1.0:
        return 2.0 - 2.0 * t
    return 0.0


def twist_rate(d, v, a=0.0):
    """The nonholonomic constraint (80) at the nodes, ``(1 - a) ḋ1·d2 - a ḋ2·d1``.

    d: (N, 3, 3) directors [1]; v: (N, 3, 3) director velocities [1/s]. → (N,) [1/s].
    """
    return (1.0 - a) * rot.dot(v[:, 0], d[:, 1]) - a * rot.dot(v[:, 1], d[:, 0])


def nonholonomic_momenta(euler, d, v):
    """``(Π^1, Π^2, Π^3)`` with ``Π^i = d_i·π`` (74), (109), e.g. ``Π^1 = d3·π^2 - d2·π^3``.

    euler: (N, 3, 3) Euler coefficients [M L²]; d: (N, 3, 3) [1]; v: (N, 3, 3) [1/s].
    → (N, 3) float64 [M L²/T].
    """
    p = euler @ v
    return (
        rot.dot(d[:, 2], p[:, 1]) - rot.dot(d[:, 1], p[:, 2]),
        rot.dot(d[:, 0], p[:, 2]) - rot.dot(d[:, 2], p[:, 0]),
        rot.dot(d[:, 1], p[:, 0]) - rot.dot(d[:, 0], p[:, 1]),
    )


class NonTwistingChecks:
    """What every scheme of the non-twisting body shares (EM here, DLA in :mod:`.dla`):
    the parameter ``a`` of (80) and the checks of split inertia, a moment with no d3
    component (84) and an initial state without twist."""

    nonholonomic = True

    def __init__(self, inertia=None, *, a=0.0, **kwargs):
        if not (0.0 <= a <= 1.0):
            raise ValueError(f"a must lie in [0, 1] (80), got {a!r}")
        self.a = float(a)
        super().__init__(inertia, **kwargs)

    def _check_inertia(self, scale):
        _check_split_inertia(self, scale)

    def _check_moment(self):
        _check_perpendicular_moment(self.moment)

    def _check_initial(self, d, omega, tol):
        _check_no_twist(self.xp, d, omega, tol)

    def _check_width(self, c):
        _check_material_width(c)

    def invariants(self, state):
        """The director invariants plus ``nonholonomic_momenta`` (N, 3) ``(Π^1, Π^2, Π^3)``
        (74) and ``twist_rate`` (N,) (80) at the nodes."""
        out = super().invariants(state)
        out["nonholonomic_momenta"] = self.xp.stack(nonholonomic_momenta(self.euler, state.d, state.v), axis=-1)
        out["twist_rate"] = twist_rate(state.d, state.v, self.a)
        return out


class NonTwistingEM(NonTwistingChecks, DirectorEM):
    """Specialised energy-momentum scheme (92)-(94) for the body on the non-twisting frame.

    Parameters: those of :class:`~granular.bodies.directors.DirectorScheme` plus
    ``a``: the free parameter of (80), in [0, 1] (default 0; the trajectory does not
    depend on it). The inertia must have D3 as a principal axis (32), moments must be
    material with two components (84), initial ω must satisfy ω·d3 = 0 (82).

    Example (the paper's case 1, (111)-(113))::

        J = [[3, -1/7, 0], [-1/7, 4, 0], [0, 0, 5]]
        em = NonTwistingEM(inertia=J, n=1)
        s = em.state(np.eye(3), [6.0, -18.0, 0.0])
        em.run(s, 0.005, 1000)
    """

    name = "nontwisting em"
    scheme_name = "non-twisting EM"

    def nonholonomic_momenta(self, state):
        """(N, 3) [M L²/T]: Π^1, Π^2 (conserved without load, (95)) and Π^3 (= 0)."""
        return self.xp.stack(nonholonomic_momenta(self.euler, state.d, state.v), axis=-1)

    def twist_rate(self, state):
        """(N,) [1/s], (80) at the nodes (the scheme enforces it at the midpoints, (94))."""
        return twist_rate(state.d, state.v, self.a)

    def midpoint_twist_rate(self, state, h):
        """(N,) [1/s], (94) divided by h for the last step of size ``h`` [T]:
        ``(1 - a) v̄1·d̄2 - a v̄2·d̄1`` with ``v̄ = (q_{n+1} - q_n)/h``, ``d̄ = q_{n+1} - h v̄/2``."""
        dbar = state.d - 0.5 * h * state.v_half
        return twist_rate(dbar, state.v_half, self.a)


# ---------------------------------------------------------------- shared input checks


def _check_split_inertia(scheme, scale):
    e = scheme.euler
    off = abs(e[:, 0, 2]) + abs(e[:, 1, 2])
    bad = off > 1e-12 * scale
    if bool(bad.any()):
        b = int(scheme.xp.nonzero(bad)[0][0])
        raise ValueError(
            f"inertia: the non-twisting body needs D3 as a principal axis (32), J13 = J23 = 0; body {b} has "
            f"|J13| + |J23| = {float(off[b]):.3e}"
        )


def _check_perpendicular_moment(moment):
    if moment is not None and moment.spatial is not None:
        raise ValueError(
            "moment: the non-twisting body takes only the perpendicular material moment m⊥ = M1 d1 + M2 d2 (84); "
            "give ExternalMoment(material=t -> (N, 2) array), not a spatial moment"
        )


def _check_material_width(c):
    if c is not None and c.shape[1] != 2:
        raise ValueError(
            f"moment.material(t) must return (N, 2) components (M1, M2) of m⊥ (84) for the non-twisting body, "
            f"got shape {tuple(c.shape)}"
        )


def _check_no_twist(xp, d, omega, tol):
    tw = abs(rot.dot(omega, d[:, 2]))
    lim = tol * (1.0 + (omega * omega).sum(axis=-1) ** 0.5)
    bad = tw > lim
    if bool(bad.any()):
        b = int(xp.nonzero(bad)[0][0])
        raise ValueError(
            f"omega: body {b} has a twist rate ω·d3 = {float(tw[b]):.3e}; the non-twisting body needs ω·d3 = 0 (82)"
        )
