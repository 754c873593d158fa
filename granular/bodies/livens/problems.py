"""The model problems of paper 002 for the general scheme (72) of
:mod:`granular.bodies.livens.schemes`: the mass-spring system with redundant coordinates
(Sect. 5.1, (106)-(109)) and the spring pendulum (Sect. 5.2)."""

from __future__ import annotations

from .schemes import MechanicalSystem

__all__ = ["RedundantMassSpring", "SpringPendulum"]


class RedundantMassSpring(MechanicalSystem):
    """Mass-spring system with redundant coordinates, Sect. 5.1, (106)-(109).

    ``q = (x1, q2, x2)`` (106); constant singular mass matrix
    ``M = [[m1, 0, 0], [0, m2, m2], [0, m2, m2]]`` (108); potential
    ``V = ¼ k1 (x1² + x1⁴) + ¼ k2 (x2² + x2⁴)`` (109); one constraint
    ``g = ½ ((q2 - x1)² - (l10 + w)²)`` (107). Parameters: scalars or (N,) arrays
    (defaults: the paper's ``m1 = 2, m2 = 1, k1 = 1, k2 = 3, l10 = 1, w = 0.1``).
    """

    n_dof = 3
    n_constraints = 1

    def __init__(self, n_systems=1, *, m1=2.0, m2=1.0, k1=1.0, k2=3.0, l10=1.0, w=0.1, backend="cpu"):
        super().__init__(n_systems, backend)
        self.m1, self.m2 = self._param(m1, "m1"), self._param(m2, "m2")
        self.k1, self.k2 = self._param(k1, "k1"), self._param(k2, "k2")
        self.l10, self.w = self._param(l10, "l10"), self._param(w, "w", positive=False)
        xp, N = self.xp, self.n_systems
        M = xp.zeros((N, 3, 3))
        M[:, 0, 0] = self.m1
        M[:, 1:, 1:] = self.m2[:, None, None]
        self._M = M
        self._c2 = (self.l10 + self.w) ** 2

    def mass_matrix(self, q):
        return self._M

    def mass_matrix_derivative(self, q):
        return self.xp.zeros((q.shape[0], 3, 3, 3))

    def mass_matrix_second_derivative(self, q):
        return self.xp.zeros((q.shape[0], 3, 3, 3, 3))

    def potential(self, q):
        x1, x2 = q[:, 0], q[:, 2]
        return 0.25 * self.k1 * (x1**2 + x1**4) + 0.25 * self.k2 * (x2**2 + x2**4)

    def potential_gradient(self, q):
        g = self.xp.zeros_like(q)
        g[:, 0] = 0.5 * self.k1 * q[:, 0] + self.k1 * q[:, 0] ** 3
        g[:, 2] = 0.5 * self.k2 * q[:, 2] + self.k2 * q[:, 2] ** 3
        return g

    def potential_hessian(self, q):
        H = self.xp.zeros((q.shape[0], 3, 3))
        H[:, 0, 0] = 0.5 * self.k1 + 3.0 * self.k1 * q[:, 0] ** 2
        H[:, 2, 2] = 0.5 * self.k2 + 3.0 * self.k2 * q[:, 2] ** 2
        return H

    def constraints(self, q):
        return 0.5 * ((q[:, 1] - q[:, 0]) ** 2 - self._c2)[:, None]

    def constraint_jacobian(self, q):
        G = self.xp.zeros((q.shape[0], 1, 3))
        s = q[:, 1] - q[:, 0]
        G[:, 0, 0], G[:, 0, 1] = -s, s
        return G

    def constraint_hessian(self, q):
        H = self.xp.zeros((q.shape[0], 1, 3, 3))
        H[:, 0, :2, :2] = self.xp.asarray([[1.0, -1.0], [-1.0, 1.0]])
        return H


class SpringPendulum(MechanicalSystem):
    """Nonlinear spring pendulum in spherical coordinates, Sect. 5.2, (110)-(112).

    ``q = (r, θ, φ)`` (110); configuration-dependent mass matrix
    ``M = m diag(1, r², r² sin²θ)`` (111); potential ``V = ½ EA ε²``,
    ``ε = (r² - l0²)/(2 l0²)`` (112); no gravity, no constraints. Defaults: the paper's
    ``m = 1, EA = 300, l0 = 1``. (Our reading of (111): the ``φ`` entry is
    ``r² sin²θ``, the kinetic energy of a point mass in spherical coordinates.)
    """

    n_dof = 3
    n_constraints = 0

    def __init__(self, n_systems=1, *, m=1.0, EA=300.0, l0=1.0, backend="cpu"):
        super().__init__(n_systems, backend)
        self.m, self.EA, self.l0 = self._param(m, "m"), self._param(EA, "EA"), self._param(l0, "l0")

    def mass_matrix(self, q):
        r, s = q[:, 0], self.xp.sin(q[:, 1])
        M = self.xp.zeros((q.shape[0], 3, 3))
        M[:, 0, 0] = self.m
        M[:, 1, 1] = self.m * r * r
        M[:, 2, 2] = self.m * (r * s) ** 2
        return M

    def mass_matrix_derivative(self, q):
        xp = self.xp
        r, th = q[:, 0], q[:, 1]
        s2 = xp.sin(th) ** 2
        dM = xp.zeros((q.shape[0], 3, 3, 3))
        dM[:, 1, 1, 0] = 2.0 * self.m * r
        dM[:, 2, 2, 0] = 2.0 * self.m * r * s2
        dM[:, 2, 2, 1] = self.m * r * r * xp.sin(2.0 * th)
        return dM

    def mass_matrix_second_derivative(self, q):
        xp = self.xp
        r, th = q[:, 0], q[:, 1]
        d2 = xp.zeros((q.shape[0], 3, 3, 3, 3))
        d2[:, 1, 1, 0, 0] = 2.0 * self.m
        d2[:, 2, 2, 0, 0] = 2.0 * self.m * xp.sin(th) ** 2
        d2[:, 2, 2, 0, 1] = d2[:, 2, 2, 1, 0] = 2.0 * self.m * r * xp.sin(2.0 * th)
        d2[:, 2, 2, 1, 1] = 2.0 * self.m * r * r * xp.cos(2.0 * th)
        return d2

    def strain(self, q):
        """Green-Lagrange strain ``ε = (r² - l0²)/(2 l0²)`` (112): (N,)."""
        return (q[:, 0] ** 2 - self.l0**2) / (2.0 * self.l0**2)

    def potential(self, q):
        return 0.5 * self.EA * self.strain(q) ** 2

    def potential_gradient(self, q):
        g = self.xp.zeros_like(q)
        g[:, 0] = self.EA * self.strain(q) * q[:, 0] / self.l0**2
        return g

    def potential_hessian(self, q):
        H = self.xp.zeros((q.shape[0], 3, 3))
        r = q[:, 0]
        H[:, 0, 0] = self.EA * ((r / self.l0**2) ** 2 + self.strain(q) / self.l0**2)
        return H
