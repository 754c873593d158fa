"""Array reference of paper 002's quaternion rigid-body schemes (the package's
implementation before the per-body kernels): EML, REML, Null-EML and the comparators MPL,
EMH, MPH, assembling every body's residual and Jacobian as (N, k) and (N, k, k) arrays for
:func:`granular.bodies.newton.solve`. Same constructor and state as the package's classes;
``newton_system(state, h)`` exposes the residual for finite-difference checks."""

from __future__ import annotations

from granular.bodies.livens.comparators import _B, omega_tilde, quat_Q
from granular.bodies.livens.rigid import (
    _t,
    body_angular_velocity,
    exp_increment,
    exp_increment_jacobian,
    point_hessian,
    point_position,
    quat_bar,
    quat_G,
    quat_mass_matrix,
    quat_right,
    rotation_matrix,
    spatial_angular_momentum,
    spatial_angular_velocity,
    velocity_from_body_rate,
    velocity_from_spatial_rate,
)
from granular.bodies.livens.schemes import ImplicitScheme, LivensState, as_rows


def _mv(A, x):
    """``A x`` over the last two axes: (..., a, b) × (..., b) → (..., a)."""
    return (A @ x[..., None])[..., 0]


def _tmv(A, x):
    """``Aᵀ x``: (..., a, b) × (..., a) → (..., b)."""
    return (x[..., None, :] @ A)[..., 0, :]

# --------------------------------------------------------------------- the model


class QuaternionBodies(ImplicitScheme):
    """N rigid bodies rotating about a fixed point, in unit quaternions; base of the schemes.

    Parameters
    ----------
    inertia: (3, 3) or (N, 3, 3) float64, convected inertia tensor J about the fixed point
        (body frame) [kg m²], symmetric positive definite.
    n: number of bodies N; needed when ``inertia`` is a single tensor.
    mass: scalar or (N,) float64 [kg], for the gravity potential (default 0: no potential).
    center_of_mass: (3,) or (N, 3) float64, body vector from the fixed point to the centre of
        mass ``X_c`` [m] (default 0).
    gravity: (3,) or (N, 3) float64, spatial acceleration of gravity [m/s²] (default 0).
    backend: ``"cpu"``, ``"gpu"``, ``"auto"`` or a :class:`~granular.backend.Backend`.
    rtol: Newton relative tolerance, > 0. max_iter: Newton iteration cap.
    """

    scheme_name = "quaternion body"
    n_dof = 4
    n_constraints = 1

    def __init__(self, inertia, *, n=None, mass=0.0, center_of_mass=(0.0, 0.0, 0.0), gravity=(0.0, 0.0, 0.0),
                 backend="cpu", rtol=1e-10, max_iter=25):  # fmt: skip
        self._init_solver(backend, rtol, max_iter)
        xp = self.xp
        arr = xp.asarray(inertia, dtype=xp.float64)
        if arr.ndim not in (2, 3) or tuple(arr.shape[-2:]) != (3, 3):
            raise ValueError(f"inertia must have shape (3, 3) or (N, 3, 3), got {tuple(arr.shape)}")
        if arr.ndim == 3:
            n = arr.shape[0] if n is None else n
        if n is None or isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n: the number of bodies must be a positive integer, got {n!r}")
        self.n = n = int(n)
        J = as_rows(xp, arr, n, "inertia", (3, 3))
        scale = float(abs(J).max())
        if not bool((abs(J - J.swapaxes(1, 2)) <= 1e-12 * scale).all()):
            raise ValueError("inertia must be symmetric (to 1e-12 relative)")
        self.J = 0.5 * (J + J.swapaxes(1, 2))
        eig = xp.linalg.eigvalsh(self.J)
        if not bool((eig > 0.0).all()):
            b = int(xp.nonzero((eig <= 0.0).any(axis=1))[0][0])
            raise ValueError(f"inertia must be positive definite; body {b} has eigenvalues {self.backend.to_host(eig[b])}")
        self.mass = as_rows(xp, mass, n, "mass")
        if not bool((self.mass >= 0.0).all()):
            raise ValueError("mass must be >= 0")
        self.center_of_mass = as_rows(xp, center_of_mass, n, "center_of_mass", (3,))
        self.gravity = as_rows(xp, gravity, n, "gravity", (3,))
        # V = -m g·R(q) X_c = ½ qᵀ H_V q (115)
        self.H_V = point_hessian(-self.mass[:, None] * self.gravity, self.center_of_mass)
        self._alloc(self._unknowns())

    def _unknowns(self):
        return 13

    # ---------------------------------------------------------------- state
    def state(self, q, *, Omega=None, omega=None, t=0.0, tol=1e-10) -> LivensState:
        """Initial state from unit quaternions and one of the angular velocities.

        q: (4,) or (N, 4) float64, unit quaternions (|q| = 1 to ``tol``) [1].
        Omega: (3,) or (N, 3) float64, body angular velocity Ω [rad/s]; or
        omega: (3,) or (N, 3) float64, spatial angular velocity ω [rad/s].
        ``v_0 = ½ G(q)ᵀ Ω`` (44), ``p_0 = M4(q_0) v_0``, ``λ = 0``.
        """
        xp, n = self.xp, self.n
        q = as_rows(xp, q, n, "q", (4,))
        dev = abs(xp.sqrt((q * q).sum(axis=1)) - 1.0)
        if not bool((dev <= tol).all()):
            b = int(xp.nonzero(dev > tol)[0][0])
            raise ValueError(f"q: body {b} is not a unit quaternion, ||q| - 1| = {float(dev[b]):.3e} > tol {tol:g}")
        if (Omega is None) == (omega is None):
            raise ValueError("give exactly one of Omega (body angular velocity) and omega (spatial)")
        if Omega is not None:
            v = velocity_from_body_rate(q, as_rows(xp, Omega, n, "Omega", (3,)))
        else:
            v = velocity_from_spatial_rate(q, as_rows(xp, omega, n, "omega", (3,)))
        p = _mv(quat_mass_matrix(q, self.J), v)
        s = self._new_state(q.copy(), v, p, 1)
        s.t = float(t)
        return s

    # ---------------------------------------------------------- diagnostics
    def potential(self, q):
        """``V = ½ qᵀ H_V q = -m g·R(q) X_c`` (115): (N,) [J]."""
        return 0.5 * (q * _mv(self.H_V, q)).sum(axis=-1)

    def kinetic_energy(self, state):
        """``T = ½ Ωᵀ J Ω`` with ``Ω = 2 G(q) v`` (38), (45): (N,) [J]."""
        W = body_angular_velocity(state.q, state.v)
        return 0.5 * (W * _mv(self.J, W)).sum(axis=-1)

    def generalized_energy(self, state):
        """``E = p·v - ½ vᵀ M4(q) v + V(q)`` (74): (N,) [J]; conserved by EML (96)."""
        return (state.p * state.v).sum(axis=-1) - self.kinetic_energy(state) + self.potential(state.q)

    def total_energy(self, state):
        """``E_tot = ½ vᵀ M4(q) v + V(q)`` (80): (N,) [J]; not conserved by EML (Fig. 7)."""
        return self.kinetic_energy(state) + self.potential(state.q)

    def scheme_energy(self, state):
        """The energy function of this scheme (Table 1): (74) for the Livens schemes."""
        return self.generalized_energy(state)

    def angular_momentum(self, state):
        """Spatial angular momentum ``L = ½ E(q) p`` (64): (N, 3) [kg m²/s]."""
        return spatial_angular_momentum(state.q, state.p)

    def unity_residual(self, state):
        """``|q| - 1`` (30): (N,) [1]."""
        return self.xp.sqrt((state.q * state.q).sum(axis=-1)) - 1.0

    def hidden_constraint_residual(self, state):
        """``q·v`` (41) at the nodes: (N,) [1/s]; EML enforces it only at the midpoints (94)."""
        return (state.q * state.v).sum(axis=-1)

    def rotation(self, state):
        """``R(q)`` (50): (N, 3, 3)."""
        return rotation_matrix(state.q)

    def center_of_mass_position(self, state):
        """``φ = R(q) X_c`` [m]: (N, 3) (the heavy top's (120))."""
        return point_position(state.q, self.center_of_mass)

    def body_angular_velocity(self, state):
        """``Ω = 2 G(q) v`` (43): (N, 3) [rad/s]."""
        return body_angular_velocity(state.q, state.v)

    # --------------------------------------------------------- shared assembly
    def _prepare_common(self, state, h):
        self._q0, self._v0, self._p0 = state.q, state.v, state.p
        self._Gv0 = _mv(quat_G(state.q), state.v)  # ½ Ω_n

    def _omega_star(self, q1, v1, qm, vm):
        """EML (88): ``Ω̄ = G(q_n) v_n + G(q_{n+1}) v_{n+1}`` and its derivatives in q1, v1."""
        Gq1 = quat_G(q1)
        return self._Gv0 + _mv(Gq1, v1), -quat_G(v1), Gq1

    def _kinetic_terms(self, q1, v1, jacobian=True):
        """``Tb = 2 G(v̄)ᵀ J Ω* = -∂̄_q T``, ``Tc = 2 G(q̄)ᵀ J Ω* = ∂̄_v T`` (87) and (with
        ``jacobian``) their partial derivatives in q1 and v1 (each (N, 4, 4))."""
        q0, v0 = self._q0, self._v0
        qm, vm = 0.5 * (q0 + q1), 0.5 * (v0 + v1)
        Om, DOq, DOv = self._omega_star(q1, v1, qm, vm)
        Lw = _mv(self.J, Om)
        k = {"qm": qm, "vm": vm, "Tb": 2.0 * _tmv(quat_G(vm), Lw), "Tc": 2.0 * _tmv(quat_G(qm), Lw)}
        if jacobian:
            GvJ = 2.0 * quat_G(vm).swapaxes(-1, -2) @ self.J
            GqJ = 2.0 * quat_G(qm).swapaxes(-1, -2) @ self.J
            bar = quat_bar(Lw)
            k["Tb_q"], k["Tb_v"] = GvJ @ DOq, bar + GvJ @ DOv
            k["Tc_q"], k["Tc_v"] = bar + GqJ @ DOq, GqJ @ DOv
        return k


class EML(QuaternionBodies):
    """Livens energy-momentum scheme for rigid-body rotation in quaternions (86)-(93).

    13 unknowns per body ``(q_{n+1}, p_{n+1}, v_{n+1}, hλ)``. Conserves (74), ``|q| = 1`` and
    the spatial angular momentum about symmetry axes of V exactly. Example (Sect. 5.3)::

        em = EML([[6, 0, 0], [0, 8, 0], [0, 0, 3]], n=1)
        s = em.state([1.0, 0, 0, 0], Omega=[10.0, 20.0, 20.0])
        em.run(s, 0.05, 40)
    """

    scheme_name = "EML"

    def _prepare(self, state, h):
        self._prepare_common(state, h)
        x0 = self._x0
        vh = self._midpoint_velocity(state)
        x0[:, :4] = state.q + h * vh
        x0[:, 4:8] = state.p
        x0[:, 8:12] = 2.0 * vh - state.v
        x0[:, 12] = h * state.lam[:, 0]

    def _residual(self, x):
        """Residual of (86a)-(86d) with ``λ̃ = hλ`` and its Jacobian. Rows: ``q1 - q0 - h v̄``;
        ``p1 - p0 + h Tb + h H_V q̄ + λ̃ q̄``; ``p̄ - Tc``; ``½(q1·q1 - 1)``."""
        h, r, jac, t = self._h, self._r, self._jac, _t(x)
        q1, p1, v1, lt = x[:, :4], x[:, 4:8], x[:, 8:12], x[:, 12]
        k = self._kinetic_terms(q1, v1)
        qm = k["qm"]
        eye = t["eye4"]
        r[:, :4] = q1 - self._q0 - h * k["vm"]
        r[:, 4:8] = p1 - self._p0 + h * k["Tb"] + h * _mv(self.H_V, qm) + lt[:, None] * qm
        r[:, 8:12] = 0.5 * (self._p0 + p1) - k["Tc"]
        r[:, 12] = 0.5 * ((q1 * q1).sum(axis=-1) - 1.0)
        jac.fill(0.0)
        jac[:, :4, :4] = eye
        jac[:, :4, 8:12] = -0.5 * h * eye
        jac[:, 4:8, :4] = h * k["Tb_q"] + 0.5 * h * self.H_V + 0.5 * lt[:, None, None] * eye
        jac[:, 4:8, 4:8] = eye
        jac[:, 4:8, 8:12] = h * k["Tb_v"]
        jac[:, 4:8, 12] = qm
        jac[:, 8:12, :4] = -k["Tc_q"]
        jac[:, 8:12, 4:8] = 0.5 * eye
        jac[:, 8:12, 8:12] = -k["Tc_v"]
        jac[:, 12, :4] = q1
        return r, jac

    def _finish(self, state, x, h):
        state.q = x[:, :4].copy()
        state.p = x[:, 4:8].copy()
        state.v = x[:, 8:12].copy()
        state.lam = x[:, 12:13] / h


class REML(QuaternionBodies):
    """EML with ``v_{n+1}``, ``p_{n+1}`` eliminated, (101)-(103): 5 unknowns ``(q_{n+1}, hλ)``
    per body. Same solution as :class:`EML` (to the Newton tolerance)."""

    scheme_name = "REML"

    def _unknowns(self):
        return 5

    def _prepare(self, state, h):
        self._prepare_common(state, h)
        self._x0[:, :4] = state.q + h * self._midpoint_velocity(state)
        self._x0[:, 4] = h * state.lam[:, 0]

    def _reduced(self, q1, jacobian=True):
        """``v1`` (101), ``p1`` (102) and the λ-free residual of (86b) with its q1-derivative."""
        h = self._h
        v1 = (2.0 / h) * (q1 - self._q0) - self._v0
        k = self._kinetic_terms(q1, v1, jacobian)
        qm = k["qm"]
        p1 = 2.0 * k["Tc"] - self._p0
        res = p1 - self._p0 + h * k["Tb"] + h * _mv(self.H_V, qm)
        if not jacobian:
            return v1, p1, qm, res, None
        dres = 2.0 * (k["Tc_q"] + (2.0 / h) * k["Tc_v"]) + h * k["Tb_q"] + 2.0 * k["Tb_v"] + 0.5 * h * self.H_V
        return v1, p1, qm, res, dres

    def _residual(self, x):
        r, jac = self._r, self._jac
        q1, lt = x[:, :4], x[:, 4]
        _, _, qm, res, dres = self._reduced(q1)
        r[:, :4] = res + lt[:, None] * qm
        r[:, 4] = 0.5 * ((q1 * q1).sum(axis=-1) - 1.0)
        jac[:, :4, :4] = dres + 0.5 * lt[:, None, None] * _t(x)["eye4"]
        jac[:, :4, 4] = qm
        jac[:, 4, :4] = q1
        jac[:, 4, 4] = 0.0
        return r, jac

    def _finish(self, state, x, h):
        q1 = x[:, :4].copy()
        v1, p1, _, _, _ = self._reduced(q1, jacobian=False)
        state.q, state.v, state.p = q1, v1, p1
        state.lam = x[:, 4:5] / h


class NullEML(QuaternionBodies):
    """EML by the discrete null-space method (104)-(105): 3 unknowns ``ϑ`` per body,
    ``q_{n+1} = exp_{S³}((0, ½ϑ)) ⊗ q_n``. Same solution as :class:`EML` (to the Newton
    tolerance); ``|q| = 1`` holds by construction (to round-off)."""

    scheme_name = "Null-EML"

    def _unknowns(self):
        return 3

    def _prepare(self, state, h):
        self._prepare_common(state, h)
        self._Qr0 = quat_right(state.q)
        self._x0[:] = h * spatial_angular_velocity(state.q, self._midpoint_velocity(state))

    def _reduced(self, theta, jacobian=True):
        h = self._h
        q1 = _mv(self._Qr0, exp_increment(theta))
        v1 = (2.0 / h) * (q1 - self._q0) - self._v0
        k = self._kinetic_terms(q1, v1, jacobian)
        qm = k["qm"]
        p1 = 2.0 * k["Tc"] - self._p0
        res = p1 - self._p0 + h * k["Tb"] + h * _mv(self.H_V, qm)
        return q1, v1, p1, qm, res, k

    def _residual(self, x):
        h, r, jac = self._h, self._r, self._jac
        q1, _, _, qm, res, k = self._reduced(x)
        Gqm = quat_G(qm)
        r[:] = _mv(Gqm, res)
        dres = 2.0 * (k["Tc_q"] + (2.0 / h) * k["Tc_v"]) + h * k["Tb_q"] + 2.0 * k["Tb_v"] + 0.5 * h * self.H_V
        dF = -0.5 * quat_G(res) + Gqm @ dres  # ∂(G(q̄) res)/∂q1, with G(q̄) res = -G(res) q̄
        jac[:] = dF @ (self._Qr0 @ exp_increment_jacobian(x))
        return r, jac

    def _finish(self, state, x, h):
        q1, v1, p1, qm, res, _ = self._reduced(x.copy(), jacobian=False)
        state.q, state.v, state.p = q1, v1, p1
        lt = -(qm * res).sum(axis=-1) / (qm * qm).sum(axis=-1)
        state.lam = (lt / h)[:, None]


class MPL(EML):
    """Midpoint rule on Livens' equations (Table 1), 13 unknowns per body."""

    scheme_name = "MPL"

    def _omega_star(self, q1, v1, qm, vm):
        """``Ω(q̄, v̄) = 2 G(q̄) v̄`` and its derivatives in q1 (``-G(v̄)``) and v1 (``G(q̄)``)."""
        Gqm = quat_G(qm)
        return 2.0 * _mv(Gqm, vm), -quat_G(vm), Gqm


class _Hamiltonian(QuaternionBodies):
    """Shared assembly of EMH and MPH (unknowns ``(q_{n+1}, p_{n+1}, hλ)``)."""

    equivariant = True

    def __init__(self, inertia, **kwargs):
        super().__init__(inertia, **kwargs)
        xp = self.xp
        W = xp.zeros((self.n, 4, 4))
        W[:, 0, 0] = 1.0 / (2.0 * xp.trace(self.J, axis1=1, axis2=2))
        W[:, 1:, 1:] = 0.25 * xp.linalg.inv(self.J)
        self.W = W

    def _unknowns(self):
        return 9

    def _prepare(self, state, h):
        self._q0, self._p0 = state.q, state.p
        self._w0 = omega_tilde(state.q, state.p)
        self._x0[:, :4] = state.q + h * self._midpoint_velocity(state)
        self._x0[:, 4:8] = state.p
        self._x0[:, 8] = h * state.lam[:, 0]

    def _residual(self, x):
        h, r, jac, t = self._h, self._r, self._jac, _t(x)
        q1, p1, lt = x[:, :4], x[:, 4:8], x[:, 8]
        qm, pm = 0.5 * (self._q0 + q1), 0.5 * (self._p0 + p1)
        eye = t["eye4"]
        Qm = quat_Q(qm)
        Bm_t = _B(pm).swapaxes(-1, -2)
        if self.equivariant:  # EMH: ω̃_{n+½} = ½(ω̃_n + ω̃_{n+1})
            wt = 0.5 * (self._w0 + omega_tilde(q1, p1))
            dz_q, dz_p = 0.5 * self.W @ _B(p1), 0.5 * self.W @ quat_Q(q1).swapaxes(-1, -2)
        else:  # MPH: ω̃(q̄, p̄)
            wt = omega_tilde(qm, pm)
            dz_q, dz_p = 0.5 * self.W @ _B(pm), 0.5 * self.W @ Qm.swapaxes(-1, -2)
        z = _mv(self.W, wt)
        zbar = quat_bar(z[:, 1:])
        z0I = z[:, 0, None, None] * eye
        r[:, :4] = q1 - self._q0 - h * _mv(Qm, z)
        r[:, 4:8] = p1 - self._p0 + h * _mv(Bm_t, z) + h * _mv(self.H_V, qm) + lt[:, None] * qm
        r[:, 8] = 0.5 * ((q1 * q1).sum(axis=-1) - 1.0)
        jac[:, :4, :4] = eye - h * (0.5 * (z0I + zbar) + Qm @ dz_q)
        jac[:, :4, 4:8] = -h * (Qm @ dz_p)
        jac[:, :4, 8] = 0.0
        jac[:, 4:8, :4] = h * (Bm_t @ dz_q) + 0.5 * h * self.H_V + 0.5 * lt[:, None, None] * eye
        jac[:, 4:8, 4:8] = eye + h * (0.5 * (z0I - zbar) + Bm_t @ dz_p)
        jac[:, 4:8, 8] = qm
        jac[:, 8, :4] = q1
        jac[:, 8, 4:] = 0.0
        return r, jac

    def hamiltonian_velocity(self, q, p):
        """``∂_p H = Q(q) W Q(q)ᵀ p``: (N, 4) [1/s]."""
        return _mv(quat_Q(q), _mv(self.W, omega_tilde(q, p)))

    def _finish(self, state, x, h):
        state.q = x[:, :4].copy()
        state.p = x[:, 4:8].copy()
        state.v = self.hamiltonian_velocity(state.q, state.p)
        state.lam = x[:, 8:9] / h

    def hamiltonian(self, state):
        """``H = ½ ω̃ᵀ W ω̃ + V(q)``: (N,) [J]; conserved by EMH."""
        w = omega_tilde(state.q, state.p)
        return 0.5 * (w * _mv(self.W, w)).sum(axis=-1) + self.potential(state.q)

    def scheme_energy(self, state):
        """The energy function of this scheme (Table 1): the Hamiltonian H."""
        return self.hamiltonian(state)


class EMH(_Hamiltonian):
    """Hamiltonian energy-momentum scheme with the regularised mass matrix (Table 1, [7])."""

    scheme_name = "EMH"
    equivariant = True


class MPH(_Hamiltonian):
    """Implicit midpoint rule on the Hamiltonian equations (Table 1)."""

    scheme_name = "MPH"
    equivariant = False
