"""Independent reference for the rolling ball: constrained Newton-Euler equations, SciPy.

The same mechanical system as :mod:`granular.bodies.rolling_ball`, written without the
Euler-Poincaré reduction: the shell is a rigid body with Newton's law for its centre of
mass and Euler's law about that centre of mass, in the *spatial* frame; each mass is a
particle slaved to its rail by the constraint ``p_i = z + Λ ζ_i(θ_i(t))`` whose reaction
``F_i`` (force of the shell on mass ``i``) is eliminated through Newton's law
``F_i = m_i (p̈_i + g e3)``; the contact force ``λ`` is a Lagrange multiplier for the
no-slip condition differentiated once, ``z̈ = r ω̇ × e3``. Unknowns per evaluation:
``z̈``, ``ω̇``, ``λ`` (a 9×9 linear system solved by NumPy)::

    m0 c̈0 = -m0 g e3 + λ + F_e - Σ F_i,            c0 = z + ρ0,  ρ0 = Λ χ0
    I_s ω̇ + ω × I_s ω = (-r e3 - ρ0) × λ - ρ0 × F_e - Σ (ρ_i - ρ0) × F_i,   I_s = Λ 𝕀 Λᵀ
    p̈_i = z̈ + ω̇ × ρ_i + ω × (ω × ρ_i) + 2 ω × Λζ̇_i + Λζ̈_i,   ρ_i = Λ ζ_i
    z̈ = r ω̇ × e3

The state ``(q, ω, z, ż, W_act, W_ext)`` is integrated by ``scipy.integrate.solve_ivp``
(DOP853) with the spatial kinematics ``q̇ = ½ ω^♯ q`` (not (D.21)); the actuation work
``W_act = ∫ Σ F_i·Λζ̇_i dt`` (power of the internal rail forces on the relative motion)
and ``W_ext = ∫ F_e·ż dt`` come from the multipliers, not from the reduced equations, and
the energy is recomputed from the spatial velocities. One ball at a time, host NumPy;
only the rails and actuations are shared with the reduced model.
"""

from __future__ import annotations

import numpy as np

from ...rotations import quat_multiply, quat_to_matrix, skew

__all__ = ["newton_euler_reference"]

E3 = np.array([0.0, 0.0, 1.0])


def _row(a, k):
    return a[k] if a.shape[0] > 1 else a[0]


class _Ball:
    """Row ``k`` of a :class:`RollingBall`'s parameters on the host."""

    def __init__(self, model, k):
        be = model.backend
        h = lambda a: np.asarray(be.to_host(a))  # noqa: E731
        self.model, self.k = model, k
        self.r = float(_row(h(model.radius), k))
        self.m0 = float(_row(h(model.shell_mass), k))
        self.chi0 = _row(h(model.shell_com), k)
        self.I = _row(h(model.inertia), k)
        self.m = _row(h(model.masses), k)
        self.M = self.m0 + self.m.sum()
        self.g = model.gravity

    def kinematics(self, t):
        mk = self.model.mass_kinematics(float(t))
        be = self.model.backend
        return tuple(np.asarray(be.to_host(a[self.k])) for a in (mk.chi, mk.dchi, mk.ddchi))

    def force(self, t):
        mdl = self.model
        if mdl._force_fn is not None:
            F = np.asarray(mdl.backend.to_host(mdl.xp.asarray(mdl._force_fn(float(t)))), dtype=float)
            return F if F.shape == (3,) else _row(F.reshape(-1, 3), self.k)
        if mdl.external_force is not None:
            return _row(np.asarray(mdl.backend.to_host(mdl.external_force)), self.k)
        return np.zeros(3)

    def solve(self, t, q, om):
        """``(z̈, ω̇, λ, F_i (K, 3), Λζ̇_i (K, 3), R)`` at time ``t``."""
        R = quat_to_matrix(q / np.linalg.norm(q))
        chi, dchi, ddchi = self.kinematics(t)
        rho0 = R @ self.chi0
        rho = chi @ R.T
        vrel = dchi @ R.T
        arel = ddchi @ R.T
        c0 = np.cross(om, np.cross(om, rho0))
        c = np.cross(om, np.cross(om, rho)) + 2.0 * np.cross(om, vrel) + arel
        Is = R @ self.I @ R.T
        Fe = self.force(t)
        m, r = self.m, self.r
        eye = np.eye(3)
        A = np.zeros((9, 9))
        b = np.zeros(9)
        # Newton for the shell, with F_i substituted
        A[0:3, 0:3] = self.M * eye
        A[0:3, 3:6] = -(self.m0 * skew(rho0) + np.einsum("k,kij->ij", m, skew(rho)))
        A[0:3, 6:9] = -eye
        b[0:3] = -self.M * self.g * E3 + Fe - self.m0 * c0 - (m[:, None] * c).sum(axis=0)
        # Euler about the shell's centre of mass
        d = rho - rho0
        D = skew(d)
        A[3:6, 0:3] = np.einsum("k,kij->ij", m, D)
        A[3:6, 3:6] = Is - np.einsum("k,kij,kjl->il", m, D, skew(rho))
        A[3:6, 6:9] = r * skew(E3) + skew(rho0)
        b[3:6] = (-np.cross(om, Is @ om) - np.cross(rho0, Fe)
                  - (m[:, None] * np.cross(d, c + self.g * E3)).sum(axis=0))  # fmt: skip
        # no-slip at the acceleration level: z̈ + r e3 × ω̇ = 0
        A[6:9, 0:3] = eye
        A[6:9, 3:6] = r * skew(E3)
        x = np.linalg.solve(A, b)
        a, alpha, lam = x[0:3], x[3:6], x[6:9]
        pdd = a + np.cross(alpha, rho) + c
        F = m[:, None] * (pdd + self.g * E3)
        return a, alpha, lam, F, vrel, R, Fe

    def rhs(self, t, Y):
        q, om, v = Y[0:4], Y[4:7], Y[10:13]
        a, alpha, _, F, vrel, _, Fe = self.solve(t, q, om)
        qdot = 0.5 * quat_multiply(np.concatenate([[0.0], om]), q)
        return np.concatenate([qdot, alpha, v, a, [(F * vrel).sum(), Fe @ v]])

    def energy(self, t, Y):
        q, om, z, v = Y[0:4], Y[4:7], Y[7:10], Y[10:13]
        R = quat_to_matrix(q / np.linalg.norm(q))
        chi, dchi, _ = self.kinematics(t)
        rho0, rho, vrel = R @ self.chi0, chi @ R.T, dchi @ R.T
        v0 = v + np.cross(om, rho0)
        vi = v + np.cross(om, rho) + vrel
        kin = 0.5 * self.m0 * v0 @ v0 + 0.5 * om @ (R @ self.I @ R.T) @ om + 0.5 * (self.m * (vi * vi).sum(1)).sum()
        pot = self.g * (self.m0 * (z + rho0)[2] + (self.m * (z[2] + rho[:, 2])).sum())
        return kin + pot


def newton_euler_reference(model, y0, t_eval, ball=0, rtol=1e-12, atol=1e-12):
    """Integrate ball ``ball`` of ``model`` from the reduced state row ``y0`` (13 or 15
    values, at ``t_eval[0]``) with the constrained Newton-Euler equations.

    Returns host arrays at ``t_eval`` (K,): ``t``, ``q`` (K, 4) (unit, same sign
    convention as the input), ``Omega`` (K, 3) body angular velocity ``Λᵀω``,
    ``position`` (K, 3) centre, ``work_actuation``, ``work_external``, ``energy`` (K,)
    (spatial velocities and heights), ``slip`` (K,) ``|ż - r ω × e3|`` (velocity-level
    drift of the constraint imposed at the acceleration level), ``normal_force`` (K,).
    """
    from scipy.integrate import solve_ivp

    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval.ndim != 1 or t_eval.size < 2 or not (np.diff(t_eval) > 0).all():
        raise ValueError("t_eval: expected an increasing 1-D array of at least two times")
    if not isinstance(ball, int) or not 0 <= ball < model.n:
        raise ValueError(f"ball: must be an int in [0, {model.n}), got {ball!r}")
    y0 = np.asarray(model.backend.to_host(model.xp.asarray(y0)), dtype=float)
    if y0.shape not in ((13,), (15,)):
        raise ValueError(f"y0: expected 13 or 15 values (one row of a RollingBallState), got shape {y0.shape}")
    b = _Ball(model, ball)
    q0 = y0[6:10] / np.linalg.norm(y0[6:10])
    R0 = quat_to_matrix(q0)
    om0 = R0 @ y0[0:3]
    z0 = y0[10:13]
    v0 = b.r * np.cross(om0, E3)
    Y0 = np.concatenate([q0, om0, z0, v0, [0.0, 0.0]])
    sol = solve_ivp(b.rhs, (t_eval[0], t_eval[-1]), Y0, method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval)
    if not sol.success:
        raise RuntimeError(f"Newton-Euler reference failed: {sol.message}")
    Y = sol.y.T
    q = Y[:, 0:4] / np.linalg.norm(Y[:, 0:4], axis=1, keepdims=True)
    Rs = quat_to_matrix(q)
    Om = np.einsum("kji,kj->ki", Rs, Y[:, 4:7])
    slip = np.linalg.norm(Y[:, 10:13] - b.r * np.cross(Y[:, 4:7], E3), axis=1)
    normal = np.array([b.solve(t, Y[k, 0:4], Y[k, 4:7])[2][2] for k, t in enumerate(sol.t)])
    energy = np.array([b.energy(t, Y[k]) for k, t in enumerate(sol.t)])
    return {"t": sol.t, "q": q, "Omega": Om, "position": Y[:, 7:10], "work_actuation": Y[:, 13],
            "work_external": Y[:, 14], "energy": energy, "slip": slip, "normal_force": normal,
            "evaluations": int(sol.nfev)}  # fmt: skip
