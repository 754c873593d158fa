"""Multibody systems of rigid bodies in unit quaternions with translation, spherical joints
and external loads at body points: the Livens EM scheme (72) in the form (86)-(93), batched
over N independent systems.

Paper 002 (Kinon & Betsch), Sect. 5.5, eqs. (122)-(128) (closed loop of four bars).

Model (122)-(126)
-----------------
``nb`` bodies, each with coordinates ``(φ_a, q_a)`` (centre of mass [L], unit quaternion)
in the order (122), so ``n = 7 nb``; kinetic energy (123)
``T = Σ_a ½ m_a |φ̇_a|² + ½ Ω_aᵀ J_a Ω_a`` (``Ω_a = 2 G(q_a) q̇_a``, J_a about the centre
of mass), i.e. the block-diagonal singular mass matrix (124)
``diag(m_a I, 4 G(q_a)ᵀ J_a G(q_a))``. Constraints: the unit length of every quaternion
``½(q_aᵀ q_a - 1)`` (30) and the spherical joints (125)

    g^(a,b) = φ_a + R(q_a) X^(a,b) - φ_b - R(q_b) X^(b,a)            (3 rows per joint)

(``b = -1``: a joint to the ground at the spatial point ``X^(b,a)``). Gravity
``V = -Σ m_a g·φ_a``. External loads (127)-(128): a spatial force ``f_a`` at the body point
``Y_a`` and a spatial torque ``τ_a`` on body a enter (19b) as the generalized force

    F_a = (f_a,  2 E(q_a) Ȳ_a ᵀ f_a + 2 E(q_a)ᵀ τ_a)                  (power f·ẋ + τ·ω)

Scheme
------
(72) with the discrete derivatives of (86)-(93) body by body: translation
``∂̄_v T = m v_{n+½}``, rotation the G-equivariant (87)-(88); every constraint and V are
(at most) quadratic in the coordinates, so their Gonzalez gradients (71) are the
gradients at ``q_{n+½}`` (exact directionality). Loads are evaluated at
``(t_{n+½}, q_{n+½})`` (our choice; the paper does not say), so the discrete energy
balance ``E^{n+1} - E^n = Δq·F_{n+½}`` holds exactly and, without loads, the generalized
energy (74) is conserved exactly (Fig. 16). Unknowns ``(q_{n+1}, p_{n+1}, v_{n+1}, hλ)``:
``21 nb + m`` per system (100 for the closed loop).

Angular momentum (where we differ from the paper's claim)
---------------------------------------------------------
The total angular momentum ``L = Σ_a φ_a × p_φa + ½ E(q_a) p_qa`` is *not* conserved
exactly by this scheme when joints are present. The momentum proof (99)-(100) needs every
discrete constraint gradient to be orthogonal to the symmetry generator at ``q_{n+½}``;
the joint constraint (125) is a vector that rotates with the system, and its midpoint
gradient applies the reaction ``λ`` at the two midpoint joint positions
``φ̄_a + R(q̄_a) X_a`` and ``φ̄_b + R(q̄_b) X_b``, which differ by ``g(q̄)``. Because
``R(q) X`` is quadratic in q, ``g(q̄) = -¼ (R(Δq_a) X_a - R(Δq_b) X_b) ≠ 0`` although
``g(q_n) = g(q_{n+1}) = 0``, and one step changes L by exactly

    L^{n+1} - L^n = -Σ_joints g(q̄) × h λ        (= O(h³) per step, O(h²) over a run)

(:meth:`MultibodyEML.joint_torque_defect`; checked to round-off in the tests). In a
director formulation the joint constraints are linear, ``g(q̄) = 0`` and L is exact; with
quaternions a different, non-midpoint discrete gradient of the joint constraints would be
needed, which the paper does not give. Measured on the closed loop after the load:
relative variation of L ≈ 1e-3 at the paper's h = 0.1, 5e-6 at h/2, 1e-6 at h/4.

Parasitic node velocities (measured, not discussed in the paper)
----------------------------------------------------------------
(72a) only fixes ``v_{n+½}``; a node-to-node alternating component ``(-1)^n w`` of the
node velocities is invisible in the trajectory ``q_n``. In the closed loop such a mode
appears in the spin of bars 2 and 4 about their long axes (physically exactly 0: no torque
about the axis, ``J2 = J3``): seeded at O(h²) during the load, it alternates in sign from
step to step and grows by a factor of about 3 per second of simulated time, nearly
independently of h. The generalized energy (74) stays exact while the node kinetic energy
(123) grows (+27 % by t = 10 at h = 0.1) and Newton fails at t ≈ 10.9 (h = 0.1) or
t ≈ 15 (h = 0.025). The paper's horizon T = 10 ends just before.

Why this scheme stays array-based
---------------------------------
The single-body schemes run as per-body kernels (one GPU thread per body,
:mod:`kernels.bodies_livens`). One closed loop is one Newton system of ``3n + m`` unknowns
(four bars: n = 28 coordinates, m = 16 joint and unity constraints, 100 unknowns): a
dense LU per thread would need a 100 × 101 matrix (80 kB) of thread-local memory and about
3·10⁵ flops per iteration, far beyond the registers and local memory that keep one thread
per system fast, and the Jacobian's joint blocks are better assembled as whole arrays.
It therefore keeps the batched (N, k, k) assembly and :func:`granular.bodies.newton.solve`
(one batched dense solve per iteration); a kernel for it would need one block of threads
per system with a shared-memory LU.

Paper text notes: (127) says the load acts "in the center of mass of the first bar, i.e.
at X = l/2 e1"; ``(l/2) e1`` is the spatial position of bar 1's centre of mass, so both
the force and the torque act at the centre of mass (as in the authors' code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ... import rotations as rot
from ...backend import resolve_backend
from .rigid import (
    point_hessian,
    point_jacobian,
    point_position,
    quat_bar,
    quat_E,
    quat_ebar,
    quat_G,
    quat_mass_matrix,
    spatial_angular_momentum,
    velocity_from_spatial_rate,
)
from .schemes import ImplicitScheme, LivensState, as_rows

__all__ = ["SphericalJoint", "BodyLoads", "MultibodyEML", "closed_loop_ramp", "closed_loop"]


@dataclass(frozen=True)
class SphericalJoint:
    """A spherical joint (125): body ``a`` at body point ``point_a`` [L] coincides with body
    ``b`` at ``point_b`` [L] (body vectors from the centres of mass), or, for ``b = -1``,
    with the fixed spatial point ``point_b``."""

    a: int
    point_a: tuple
    b: int
    point_b: tuple


@dataclass
class BodyLoads:
    """External loads (127)-(128) on every body, evaluated at ``t_{n+½}``.

    force: ``t -> (N, nb, 3)`` spatial forces [M L/T²] at the body points ``points``, or None.
    torque: ``t -> (N, nb, 3)`` spatial torques [M L²/T²], or None.
    points: (nb, 3) body vectors from the centres of mass to the force points [L]
        (default: the centres of mass).
    """

    force: Callable | None = None
    torque: Callable | None = None
    points: object = None


class MultibodyEML(ImplicitScheme):
    """Livens EM scheme for N independent multibody systems of ``nb`` rigid bodies.

    Parameters
    ----------
    mass: (nb,) or (N, nb) float64 [M], > 0.
    inertia: (nb, 3, 3) or (N, nb, 3, 3) float64, J about each centre of mass, body frame
        [M L²], symmetric positive definite.
    joints: sequence of :class:`SphericalJoint`.
    n: number of systems N (needed when the parameters are not per system).
    gravity: (3,) spatial acceleration of gravity [L/T²] (default 0).
    loads: :class:`BodyLoads` or None.
    backend, rtol, max_iter: as for the other schemes.
    """

    scheme_name = "multibody EML"
    name = "livens multibody"

    def __init__(self, mass, inertia, joints=(), *, n=None, gravity=(0.0, 0.0, 0.0), loads=None, backend="cpu",
                 rtol=1e-10, max_iter=25):  # fmt: skip
        self._init_solver(backend, rtol, max_iter)
        xp = self.xp
        m_arr = xp.asarray(mass, dtype=xp.float64)
        if m_arr.ndim not in (1, 2):
            raise ValueError(f"mass must have shape (nb,) or (N, nb), got {tuple(m_arr.shape)}")
        nb = int(m_arr.shape[-1])
        if m_arr.ndim == 2:
            n = m_arr.shape[0] if n is None else n
        if n is None or isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n: the number of systems must be a positive integer, got {n!r}")
        self.n = n = int(n)
        self.nb = nb
        self.mass = as_rows(xp, m_arr, n, "mass", (nb,))
        if not bool((self.mass > 0.0).all()):
            raise ValueError("mass must be > 0 for every body")
        J = as_rows(xp, inertia, n, "inertia", (nb, 3, 3))
        if not bool((abs(J - J.swapaxes(-1, -2)) <= 1e-12 * float(abs(J).max())).all()):
            raise ValueError("inertia must be symmetric (to 1e-12 relative)")
        self.J = 0.5 * (J + J.swapaxes(-1, -2))
        if not bool((xp.linalg.eigvalsh(self.J) > 0.0).all()):
            raise ValueError("inertia must be positive definite for every body")
        self.gravity = as_rows(xp, gravity, 1, "gravity", (3,))[0]
        self._setup_joints(list(joints))
        if loads is not None and not isinstance(loads, BodyLoads):
            raise ValueError("loads must be a BodyLoads or None")
        self.loads = loads
        pts = np.zeros((nb, 3)) if loads is None or loads.points is None else np.asarray(loads.points, dtype=float)
        if pts.shape != (nb, 3):
            raise ValueError(f"loads.points must have shape ({nb}, 3), got {pts.shape}")
        self._Y = xp.asarray(pts)
        self.n_dof = 7 * nb
        self.n_constraints = nb + 3 * self.nj
        self._alloc(3 * self.n_dof + self.n_constraints)
        self._index()

    # ------------------------------------------------------------------ setup
    def _setup_joints(self, joints):
        xp, nb = self.xp, self.nb
        for j, jt in enumerate(joints):
            if not isinstance(jt, SphericalJoint):
                raise ValueError(f"joints[{j}] must be a SphericalJoint")
            if not (0 <= jt.a < nb) or not (-1 <= jt.b < nb) or jt.a == jt.b:
                raise ValueError(f"joints[{j}]: bodies must be distinct indices in [0, {nb}) (b = -1: ground)")
        self.nj = nj = len(joints)
        self.joints = joints
        ja = np.array([jt.a for jt in joints], dtype=np.int64)
        jb = np.array([jt.b for jt in joints], dtype=np.int64)
        Xa = np.array([jt.point_a for jt in joints], dtype=float).reshape(nj, 3)
        Xb = np.array([jt.point_b for jt in joints], dtype=float).reshape(nj, 3)
        Ca, Cb = np.zeros((nb, nj)), np.zeros((nb, nj))
        Ca[ja, np.arange(nj)] = 1.0
        real = jb >= 0
        Cb[jb[real], np.arange(nj)[real]] = 1.0
        self._ja, self._jb_np, self._real = xp.asarray(ja), jb, real
        self._jb = xp.asarray(np.where(real, jb, nb))  # the ground is a padded body with index nb
        self._Xa, self._Xb = xp.asarray(Xa), xp.asarray(Xb)
        self._Ca, self._Cb = xp.asarray(Ca), xp.asarray(Cb)

    def _index(self):
        """Index arrays scattering per-body and per-joint blocks into the Jacobian."""
        xp, nb, nj, D = self.xp, self.nb, self.nj, self.n_dof
        base = 7 * np.arange(nb)
        self._iphi = base[:, None] + np.arange(3)
        self._iq = base[:, None] + 3 + np.arange(4)
        self._iu = 3 * D + np.arange(nb)
        self._ij = 3 * D + nb + 3 * np.arange(nj)[:, None] + np.arange(3)
        iq, ij = self._iq, self._ij
        self._blk = lambda r0, c0: (xp.asarray(r0 + iq[:, :, None]), xp.asarray(c0 + iq[:, None, :]))
        ja, jb, real = np.array([jt.a for jt in self.joints], dtype=np.int64), self._jb_np, self._real
        self._jq_a = (xp.asarray(ij[:, :, None]), xp.asarray(iq[ja][:, None, :]))
        self._jphi_a = (xp.asarray(ij[:, :, None]), xp.asarray(self._iphi[ja][:, None, :]))
        self._jq_b = (xp.asarray(ij[real][:, :, None]), xp.asarray(iq[jb[real]][:, None, :]))
        self._jphi_b = (xp.asarray(ij[real][:, :, None]), xp.asarray(self._iphi[jb[real]][:, None, :]))
        self._cq_a = (xp.asarray(D + iq[ja][:, :, None]), xp.asarray(ij[:, None, :]))
        self._cq_b = (xp.asarray(D + iq[jb[real]][:, :, None]), xp.asarray(ij[real][:, None, :]))

    # ------------------------------------------------------------------- state
    def state(self, phi, quat, *, velocity=0.0, omega=0.0, t=0.0, tol=1e-10) -> LivensState:
        """Initial state of every system.

        phi: (nb, 3) or (N, nb, 3) centres of mass [L]; quat: (nb, 4) or (N, nb, 4) unit
        quaternions; velocity: centre-of-mass velocities (nb, 3)/(N, nb, 3) [L/T] (default 0);
        omega: spatial angular velocities (nb, 3)/(N, nb, 3) [1/T] (default 0).
        The joints (125) and their time derivatives must hold to ``tol`` (relative to the
        system's size), else ``ValueError``. ``p_0 = M(q_0) v_0``, ``λ = 0``.
        """
        xp, n, nb = self.xp, self.n, self.nb
        phi = as_rows(xp, phi, n, "phi", (nb, 3))
        quat = as_rows(xp, quat, n, "quat", (nb, 4))
        dev = abs(xp.sqrt((quat * quat).sum(-1)) - 1.0)
        if not bool((dev <= tol).all()):
            raise ValueError(f"quat: not unit quaternions, max ||q| - 1| = {float(dev.max()):.3e} > tol {tol:g}")
        vel = self._per_body(velocity, "velocity")
        om = self._per_body(omega, "omega")
        q = xp.concatenate([phi, quat], axis=-1).reshape(n, -1)
        v = xp.concatenate([vel, velocity_from_spatial_rate(quat, om)], axis=-1).reshape(n, -1)
        size = 1.0 + float(abs(phi).max()) + (float(abs(self._Xa).max()) if self.nj else 0.0)
        g = abs(self.constraints(q)).max(axis=1) if self.n_constraints else xp.zeros(n)
        if not bool((g <= tol * size).all()):
            b = int(xp.nonzero(g > tol * size)[0][0])
            raise ValueError(f"phi/quat: system {b} violates the joints (125), max |g| = {float(g[b]):.3e}")
        gv = abs(self.constraint_velocity(q, v)).reshape(n, -1).max(axis=1) if self.nj else xp.zeros(n)
        vtol = tol * size * (1.0 + float(abs(v).max()))
        if not bool((gv <= vtol).all()):
            b = int(xp.nonzero(gv > vtol)[0][0])
            raise ValueError(f"velocity/omega: system {b} violates the joint velocities, max = {float(gv[b]):.3e}")
        p = self._mass_times(q, v)
        s = self._new_state(q, v, p, self.n_constraints)
        s.t = float(t)
        s.extra["work"] = xp.zeros(n)
        return s

    def _per_body(self, a, name):
        """A scalar, (3,), (nb, 3) or (N, nb, 3) value as (N, nb, 3)."""
        xp = self.xp
        arr = xp.asarray(a, dtype=xp.float64)
        if arr.ndim < 2:
            arr = xp.broadcast_to(arr, (self.nb, 3))
        return as_rows(xp, arr, self.n, name, (self.nb, 3))

    def _split(self, a):
        """(N, 7 nb) → (N, nb, 3), (N, nb, 4) views."""
        b = a.reshape(a.shape[0], self.nb, 7)
        return b[..., :3], b[..., 3:]

    def _mass_times(self, q, v):
        _, r = self._split(q)
        vphi, vr = self._split(v)
        pr = rot.matvec(quat_mass_matrix(r, self.J), vr)
        return self.xp.concatenate([self.mass[..., None] * vphi, pr], axis=-1).reshape(q.shape)

    # ------------------------------------------------------------ constraints
    def _pad(self, phi, r):
        xp = self.xp
        n = phi.shape[0]
        gphi = xp.zeros((n, 1, 3))
        gr = xp.zeros((n, 1, 4))
        gr[..., 0] = 1.0
        return xp.concatenate([phi, gphi], axis=1), xp.concatenate([r, gr], axis=1)

    def _joint_gap(self, phi, r):
        """(125) for every joint: (N, nj, 3) [L] (ground: ``φ_a + R X_a - X_g``)."""
        P, Rq = self._pad(phi, r)
        return (P[:, self._ja] + point_position(Rq[:, self._ja], self._Xa)
                - P[:, self._jb] - point_position(Rq[:, self._jb], self._Xb))  # fmt: skip

    def constraints(self, q):
        """All m constraints: unit lengths (30) then joints (125): (N, nb + 3 nj)."""
        phi, r = self._split(q)
        unit = 0.5 * ((r * r).sum(-1) - 1.0)
        return self.xp.concatenate([unit, self._joint_gap(phi, r).reshape(q.shape[0], -1)], axis=1)

    def constraint_velocity(self, q, v):
        """Time derivative of the joint constraints ``∇g(q) v``: (N, nj, 3) [L/T]."""
        phi, r = self._split(q)
        vphi, vr = self._split(v)
        Vp, Vr = self._pad(vphi, vr)
        Vr[:, -1] = 0.0
        _, Rp = self._pad(phi, r)
        ja, jb = self._ja, self._jb
        return (Vp[:, ja] + rot.matvec(point_jacobian(Rp[:, ja], self._Xa), Vr[:, ja]) - Vp[:, jb]
                - rot.matvec(point_jacobian(Rp[:, jb], self._Xb), Vr[:, jb]))  # fmt: skip

    # --------------------------------------------------------------- loads
    def _load_values(self, t):
        xp, n, nb = self.xp, self.n, self.nb
        f = tau = None
        if self.loads is not None:
            if self.loads.force is not None:
                f = xp.asarray(self.loads.force(t), dtype=xp.float64)
                if tuple(f.shape) != (n, nb, 3):
                    raise ValueError(f"loads.force(t) must return shape ({n}, {nb}, 3), got {tuple(f.shape)}")
            if self.loads.torque is not None:
                tau = xp.asarray(self.loads.torque(t), dtype=xp.float64)
                if tuple(tau.shape) != (n, nb, 3):
                    raise ValueError(f"loads.torque(t) must return shape ({n}, {nb}, 3), got {tuple(tau.shape)}")
        return f, tau

    def _generalized_load(self, rm):
        """``(F_φ (N, nb, 3), F_q (N, nb, 4), ∂F_q/∂q1 (N, nb, 4, 4))`` at ``q̄`` (128)."""
        xp = self.xp
        f, tau = self._load
        Fphi = xp.zeros(rm.shape[:-1] + (3,))
        Fq = xp.zeros_like(rm)
        dF = xp.zeros(rm.shape + (4,))
        if f is not None:
            Fphi = Fphi + f
            Fq = Fq + rot.matvec_t(point_jacobian(rm, self._Y), f)
            dF = dF + 0.5 * point_hessian(f, self._Y)
        if tau is not None:
            Fq = Fq + 2.0 * rot.matvec_t(quat_E(rm), tau)
            dF = dF + quat_ebar(tau)  # ½ ∂(2 E(q)ᵀτ)/∂q = ½ · 2 ebar(τ)
        return Fphi, Fq, dF

    # ------------------------------------------------------------- assembly
    def _prepare(self, state, h):
        xp, D = self.xp, self.n_dof
        self._q0, self._v0, self._p0 = state.q, state.v, state.p
        _, r0 = self._split(state.q)
        _, vr0 = self._split(state.v)
        self._Gv0 = rot.matvec(quat_G(r0), vr0)
        self._load = self._load_values(state.t + 0.5 * h)
        x0 = self._x0
        vh = self._midpoint_velocity(state)
        x0[:, :D] = state.q + h * vh
        x0[:, D : 2 * D] = state.p
        x0[:, 2 * D : 3 * D] = 2.0 * vh - state.v
        x0[:, 3 * D :] = h * state.lam
        # constant part of the Jacobian
        t = xp.zeros((self.k, self.k))
        eye = xp.eye(D)
        t[:D, :D] = eye
        t[:D, 2 * D : 3 * D] = -0.5 * h * eye
        t[D : 2 * D, D : 2 * D] = eye
        t[2 * D : 3 * D, D : 2 * D] = 0.5 * eye
        self._jac_const = t
        idx = xp.asarray(self._iphi.reshape(-1))
        self._mdiag = (2 * D + idx, 2 * D + idx, -0.5 * xp.repeat(self.mass, 3, axis=1))

    def _residual(self, x):
        xp, h, n, nb, nj, D = self.xp, self._h, self.n, self.nb, self.nj, self.n_dof
        r, jac = self._r, self._jac
        q1, p1, v1 = x[:, :D], x[:, D : 2 * D], x[:, 2 * D : 3 * D]
        lu, lj = x[:, 3 * D : 3 * D + nb], x[:, 3 * D + nb :].reshape(n, nj, 3)
        phi1, r1 = self._split(q1)
        qm, vm, pm = 0.5 * (self._q0 + q1), 0.5 * (self._v0 + v1), 0.5 * (self._p0 + p1)
        phim, rm = self._split(qm)
        vphim, vrm = self._split(vm)
        _, vr1 = self._split(v1)
        # rotational kinetic terms (87)-(88), body by body
        Gr1 = quat_G(r1)
        Om = self._Gv0 + rot.matvec(Gr1, vr1)
        Lw = rot.matvec(self.J, Om)
        GvJ = 2.0 * quat_G(vrm).swapaxes(-1, -2) @ self.J
        GqJ = 2.0 * quat_G(rm).swapaxes(-1, -2) @ self.J
        bar = quat_bar(Lw)
        Tb, Tc = rot.matvec(GvJ, Om), rot.matvec(GqJ, Om)
        DOq, DOv = -quat_G(vr1), Gr1
        # joint forces with the midpoint gradients (exact discrete gradients, quadratic g)
        _, Rpm = self._pad(phim, rm)
        Pa = point_jacobian(Rpm[:, self._ja], self._Xa)
        Pb = point_jacobian(Rpm[:, self._jb], self._Xb)
        Fj_phi = xp.einsum("aj,bjk->bak", self._Ca - self._Cb, lj)
        Fj_q = xp.einsum("aj,bjk->bak", self._Ca, rot.matvec_t(Pa, lj)) - xp.einsum("aj,bjk->bak", self._Cb, rot.matvec_t(Pb, lj))
        Fphi, Fq, dF = self._generalized_load(rm)
        _, pr0 = self._split(self._p0)
        pphi0, _ = self._split(self._p0)
        pphi1, pr1 = self._split(p1)
        pphim, prm = self._split(pm)
        m = self.mass[..., None]
        rb_phi = pphi1 - pphi0 - h * m * self.gravity + Fj_phi - h * Fphi
        rb_q = pr1 - pr0 + h * Tb + lu[..., None] * rm + Fj_q - h * Fq
        rc_phi = pphim - m * vphim
        rc_q = prm - Tc
        r[:, :D] = q1 - self._q0 - h * vm
        r[:, D : 2 * D] = xp.concatenate([rb_phi, rb_q], axis=-1).reshape(n, D)
        r[:, 2 * D : 3 * D] = xp.concatenate([rc_phi, rc_q], axis=-1).reshape(n, D)
        r[:, 3 * D : 3 * D + nb] = 0.5 * ((r1 * r1).sum(-1) - 1.0)
        r[:, 3 * D + nb :] = self._joint_gap(phi1, r1).reshape(n, -1)
        # Jacobian
        jac[:] = self._jac_const
        a, b, c = self._mdiag
        jac[:, a, b] = c
        eye4 = xp.eye(4)
        Hj = 0.5 * (xp.einsum("aj,bjkl->bakl", self._Ca, point_hessian(lj, self._Xa))
                    - xp.einsum("aj,bjkl->bakl", self._Cb, point_hessian(lj, self._Xb)))  # fmt: skip
        jac[(slice(None),) + self._blk(D, 0)] = (h * (GvJ @ DOq) + 0.5 * lu[..., None, None] * eye4 + Hj - h * dF)
        jac[(slice(None),) + self._blk(D, 2 * D)] = h * (bar + GvJ @ DOv)
        jac[(slice(None),) + self._blk(2 * D, 0)] = -(bar + GqJ @ DOq)
        jac[(slice(None),) + self._blk(2 * D, 2 * D)] = -(GqJ @ DOv)
        # unit constraints: column (∂/∂λ̃_u) and row (∂g/∂q1)
        iu, iq = self._iu, self._iq
        jac[:, xp.asarray(D + iq), xp.asarray(np.repeat(iu[:, None], 4, axis=1))] = rm
        jac[:, xp.asarray(np.repeat(iu[:, None], 4, axis=1)), xp.asarray(iq)] = r1
        if nj:
            eye3 = xp.eye(3)
            Pa1 = point_jacobian(self._pad(phi1, r1)[1][:, self._ja], self._Xa)
            Pb1 = point_jacobian(self._pad(phi1, r1)[1][:, self._jb], self._Xb)
            real = xp.asarray(self._real)
            jac[(slice(None),) + self._jphi_a] = eye3
            jac[(slice(None),) + self._jq_a] = Pa1
            jac[(slice(None),) + self._jphi_b] = -eye3
            jac[(slice(None),) + self._jq_b] = -Pb1[:, real]
            # columns ∂(constraint forces)/∂λ̃_j: φ rows ±I, q rows ±Pᵀ(q̄)
            cphi_a = (xp.asarray(D + self._iphi[np.array([jt.a for jt in self.joints])][:, :, None]),
                      xp.asarray(self._ij[:, None, :]))  # fmt: skip
            jac[(slice(None),) + cphi_a] = eye3
            jac[(slice(None),) + self._cq_a] = Pa.swapaxes(-1, -2)
            if bool(real.any()):
                cphi_b = (xp.asarray(D + self._iphi[self._jb_np[self._real]][:, :, None]),
                          xp.asarray(self._ij[self._real][:, None, :]))  # fmt: skip
                jac[(slice(None),) + cphi_b] = -eye3
                jac[(slice(None),) + self._cq_b] = -Pb[:, real].swapaxes(-1, -2)
        return r, jac

    def _finish(self, state, x, h):
        D = self.n_dof
        q1 = x[:, :D].copy()
        qm = 0.5 * (state.q + q1)
        _, rm = self._split(qm)
        Fphi, Fq, _ = self._generalized_load(rm)
        dq = (q1 - state.q).reshape(self.n, self.nb, 7)
        state.extra["work"] = state.extra["work"] + (dq[..., :3] * Fphi).sum((-1, -2)) + (dq[..., 3:] * Fq).sum((-1, -2))
        state.q = q1
        state.p = x[:, D : 2 * D].copy()
        state.v = x[:, 2 * D : 3 * D].copy()
        state.lam = x[:, 3 * D :] / h

    # ---------------------------------------------------------- diagnostics
    def kinetic_energy(self, state):
        """``T = Σ ½ m |φ̇|² + ½ Ωᵀ J Ω`` (123): (N,) [M L²/T²]."""
        _, r = self._split(state.q)
        vphi, vr = self._split(state.v)
        W = 2.0 * rot.matvec(quat_G(r), vr)
        return (0.5 * self.mass * (vphi * vphi).sum(-1) + 0.5 * (W * rot.matvec(self.J, W)).sum(-1)).sum(-1)

    def potential(self, state):
        """``V = -Σ m g·φ``: (N,) [M L²/T²]."""
        phi, _ = self._split(state.q)
        return -(self.mass * (phi * self.gravity).sum(-1)).sum(-1)

    def generalized_energy(self, state):
        """(74) ``E = p·v - T + V``: (N,) [M L²/T²]."""
        return (state.p * state.v).sum(-1) - self.kinetic_energy(state) + self.potential(state)

    def total_energy(self, state):
        """(80) ``T + V``: (N,) [M L²/T²]."""
        return self.kinetic_energy(state) + self.potential(state)

    def angular_momentum(self, state):
        """Total spatial angular momentum about the origin ``Σ φ × p_φ + ½ E(q) p_q``: (N, 3)."""
        phi, r = self._split(state.q)
        pphi, pr = self._split(state.p)
        xp = self.xp
        c = xp.stack([phi[..., 1] * pphi[..., 2] - phi[..., 2] * pphi[..., 1],
                      phi[..., 2] * pphi[..., 0] - phi[..., 0] * pphi[..., 2],
                      phi[..., 0] * pphi[..., 1] - phi[..., 1] * pphi[..., 0]], axis=-1)  # fmt: skip
        return (c + spatial_angular_momentum(r, pr)).sum(axis=1)

    def linear_momentum(self, state):
        """``Σ p_φ``: (N, 3) [M L/T]."""
        return self._split(state.p)[0].sum(axis=1)

    def constraint_residual(self, state):
        """``max |g|`` over the m constraints: (N,)."""
        return abs(self.constraints(state.q)).max(axis=1)

    def joint_torque_defect(self, q_prev, state, h):
        """``-Σ_j g^(j)(q_{n+½}) × h λ_j``: (N, 3) [M L²/T], the change of the total angular
        momentum over the last step caused by the joint forces (without loads). It is not
        zero: the joint constraints are quadratic in the quaternions, so their midpoint
        value ``g(q_{n+½}) = -¼ (R(Δq_a) X_a - R(Δq_b) X_b)`` is ``O(Δq²)`` (see the module
        docstring). ``q_prev``: (N, 7 nb) coordinates before the last step of size ``h``."""
        xp, n = self.xp, self.n
        phim, rm = self._split(0.5 * (q_prev + state.q))
        gm = self._joint_gap(phim, rm)
        lt = h * state.lam[:, self.nb :].reshape(n, self.nj, 3)
        c = xp.stack([gm[..., 1] * lt[..., 2] - gm[..., 2] * lt[..., 1],
                      gm[..., 2] * lt[..., 0] - gm[..., 0] * lt[..., 2],
                      gm[..., 0] * lt[..., 1] - gm[..., 1] * lt[..., 0]], axis=-1)  # fmt: skip
        return -c.sum(axis=1)

    def points(self, state, X):
        """Spatial positions ``φ_a + R(q_a) X_a`` of body points X (nb, 3): (N, nb, 3) [L]."""
        phi, r = self._split(state.q)
        return phi + point_position(r, self.xp.asarray(X, dtype=self.xp.float64))


# ---------------------------------------------------------- the closed loop (5.5)


def closed_loop_ramp(t, f_m=100.0):
    """``f(t)`` of (127): ``2 f_m t`` on [0, 0.5], ``2 f_m (1 - t)`` on (0.5, 1], 0 after."""
    if t <= 0.5:
        return 2.0 * f_m * t
    if t <= 1.0:
        return 2.0 * f_m * (1.0 - t)
    return 0.0


def closed_loop(n=1, *, length=10.0, density=1.0, f_m=100.0, backend="cpu", rtol=1e-10, max_iter=25):
    """The closed loop of Sect. 5.5, (122)-(128): four bars, spherical joints at the corners.

    Bars of length ``length`` and unit square cross-section (``m = ρ l``), centres at
    ``(l/2, 0, 0)``, ``(0, l/2, 0)``, ``(-l/2, 0, 0)``, ``(0, -l/2, 0)``; bars 1 and 3 lie
    along e2, bars 2 and 4 along e1; joints (1,2), (2,3), (3,4), (4,1) at the square's
    corners (4 unit + 12 joint constraints). At rest at t = 0; load (127) on bar 1 at its
    centre of mass: ``f = 8 f(t) e1``, ``τ = 6 f(t) e1``. ``f_m`` may be a scalar or (n,).
    Returns ``(scheme, state)``.
    """
    l = float(length)
    m = density * l
    Js, Jl = m / 12.0 * (l * l + 1.0), m / 12.0 * 2.0
    inertia = np.array([np.diag([Js, Jl, Js]), np.diag([Jl, Js, Js]), np.diag([Js, Jl, Js]), np.diag([Jl, Js, Js])])
    h2 = l / 2.0
    e = lambda i, s: tuple(s * h2 * np.eye(3)[i])  # noqa: E731
    joints = [SphericalJoint(0, e(1, 1), 1, e(0, 1)), SphericalJoint(1, e(0, -1), 2, e(1, 1)),
              SphericalJoint(2, e(1, -1), 3, e(0, -1)), SphericalJoint(3, e(0, 1), 0, e(1, -1))]  # fmt: skip

    be = resolve_backend(backend)
    xp = be.xp
    fm = as_rows(xp, f_m, int(n), "f_m")
    sel = xp.zeros((1, 4, 3))
    sel[0, 0, 0] = 1.0

    loads = BodyLoads(force=lambda t: 8.0 * closed_loop_ramp(t, 1.0) * fm[:, None, None] * sel,
                      torque=lambda t: 6.0 * closed_loop_ramp(t, 1.0) * fm[:, None, None] * sel)  # fmt: skip
    sch = MultibodyEML(np.full(4, m), inertia, joints, n=n, loads=loads, backend=be, rtol=rtol, max_iter=max_iter)
    phi = np.array([[h2, 0, 0], [0, h2, 0], [-h2, 0, 0], [0, -h2, 0]])
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (4, 1))
    return sch, sch.state(phi, quat)
