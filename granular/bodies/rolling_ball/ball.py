"""Rolling ball actuated by internal point masses on rails, batched (paper 004).

Putkaradze & Rogers, *On the dynamics of a rolling ball actuated by internal point
masses*: a ball of radius ``r`` rolls without slipping on the horizontal plane ``z = 0``.
Its shell has mass ``m0``, centre of mass ``χ0`` (body frame, from the geometric centre)
and inertia ``𝕀`` about that centre of mass; ``K`` point masses ``m_i`` move on rails
``χ_i = ζ_i(θ_i(t))`` fixed in the ball, with ``θ_i(t)`` prescribed
(:mod:`granular.bodies.rolling_ball.rails`). The derivation (Euler-Poincaré with the rolling
constraint through Lagrange-d'Alembert) is in ``docs/rolling_ball.md``; it reproduces
(B.8), which solved for ``Ω̇`` as in (B.9)-(B.10) reads (``i = 0`` is the shell)::

    s_i = r Γ + χ_i                                     (contact point → mass i, body frame)
    (𝕀 - Σ_i m_i ŝ_i²) Ω̇ = 𝕀Ω × Ω - r Γ̃ × Γ
                           - Σ_i m_i s_i × [g Γ + Ω × (Ω × χ_i + 2 χ̇_i) + χ̈_i]        (B.8)
    Γ̇ = Γ × Ω                                                                    (A.13)
    q̇ = ½ q Ω^♯                                                                  (D.21)
    ż = r ω × e3,   ω = Λ Ω = R(q) Ω                                   (no-slip condition)

``𝕀 - Σ m_i ŝ_i² = 𝕀 + Σ m_i (|s_i|² 1 - s_i s_iᵀ)`` is the inertia about the contact
point, symmetric positive definite; it is inverted in closed form per ball (no Python
loop over balls). Conventions: ``e3`` points up, gravity is ``-g e3``; ``Λ = R(q)`` maps
body to spatial vectors (quaternions scalar-first Hamilton, :mod:`granular.rotations`);
``Ω = (Λ⁻¹Λ̇)^∨`` is the body angular velocity; ``Γ = Λ⁻¹ e3``; ``z`` is the ball's
geometric centre (``z3 = r``). ``Γ̃ = Λ⁻¹ F_e`` are the body components of an external
force ``F_e`` applied at the *geometric centre*: that is what the term ``r Γ̃ × Γ`` of
(B.8) is (its moment about the contact point, ``r Γ × Γ̃``, moved to the left-hand side);
a force at the contact point itself would do no virtual work under the rolling
constraint and drop out (``docs/rolling_ball.md`` §6).

Energy ``E = ½ Ω·𝕀Ω + ½ Σ_i m_i |Ω × s_i + χ̇_i|² + g Σ_i m_i (r + Γ·χ_i)`` is conserved
when the masses are at rest and ``F_e = 0``; otherwise ``dE/dt = Σ_i F_i·Λχ̇_i + F_e·ż``
with ``F_i = m_i (a_i + g e3)`` the force of the rail on mass ``i`` (its acceleration
``a_i`` from Newton's law), the work of the rail actuation forces
(:meth:`RollingBall.actuation_power`). A state can carry both works as integrated
columns (``track_work=True``).

State layout: one row per ball of ``y`` (N, 13) float64 (15 with tracked work)::

    [0:3]  Ω  body angular velocity [1/T]       [3:6]  Γ  advected vertical [-]
    [6:10] q  orientation, unit quaternion [-]  [10:13] z centre of the ball [L]
    [13]   work of the rail actuation forces [M L²/T²]   [14] work of F_e [M L²/T²]

Parameters have a leading axis ``B`` that is ``N`` (one row per ball) or 1 (shared).
Quaternion policy: ``q`` is integrated by (D.21) and renormalised after every (accepted)
step by the integrators; inside a step the right-hand side uses ``q/|q|`` to rotate
vectors. ``Γ`` is advected and *not* renormalised: ``|Γ| - 1`` and ``|Γ - Λᵀe3|`` are
reported by :meth:`RollingBall.invariants` as accuracy measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import rotations as rot
from ...backend import resolve_backend
from ..core import BodyState, inertia_tensors
from .rails import Actuation, Rail, _host_rows, mass_kinematics

__all__ = [
    "RollingBall",
    "HarmonicForce",
    "RollingBallState",
    "COLUMNS",
    "OMEGA",
    "GAMMA",
    "QUAT",
    "POSITION",
    "WORK_ACTUATION",
    "WORK_EXTERNAL",
    "check_inertia",
]

OMEGA, GAMMA, QUAT, POSITION = slice(0, 3), slice(3, 6), slice(6, 10), slice(10, 13)
WORK_ACTUATION, WORK_EXTERNAL = 13, 14
COLUMNS = ("Omega",) * 3 + ("Gamma",) * 3 + ("q",) * 4 + ("position",) * 3 + ("work_actuation", "work_external")


def check_inertia(inertia):
    """Host (B, 3, 3) float64 from the body schemes' convention
    (:func:`~granular.bodies.core.inertia_tensors`): (3,) principal moments, (3, 3),
    (N, 3) or (N, 3, 3) [M L²]; ``ValueError`` unless finite, symmetric (1e-12 relative)
    and positive definite."""
    return inertia_tensors(inertia)[0]


def _sym3_solve(a00, a01, a02, a11, a12, a22, b):
    """Solve the symmetric 3×3 systems ``A x = b`` (b: (N, 3)) by the adjugate."""
    c00 = a11 * a22 - a12 * a12
    c01 = a02 * a12 - a01 * a22
    c02 = a01 * a12 - a02 * a11
    c11 = a00 * a22 - a02 * a02
    c12 = a01 * a02 - a00 * a12
    c22 = a00 * a11 - a01 * a01
    det = a00 * c00 + a01 * c01 + a02 * c02
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    xp = rot.array_module(b)
    return xp.stack([c00 * b0 + c01 * b1 + c02 * b2, c01 * b0 + c11 * b1 + c12 * b2,
                     c02 * b0 + c12 * b1 + c22 * b2], axis=-1) / det[:, None]  # fmt: skip


class HarmonicForce:
    """A spatial force at the ball's centre, ``F_j(t) = F0_j + A_j cos(ν_j t + φ_j)`` per
    component ``j``: ``offset`` F0 [M L/T²], ``amplitude`` A [M L/T²], ``frequency`` ν
    [rad/T], ``phase`` φ [rad], each (3,) or (N, 3). Evaluated inside the per-ball kernels
    (a Python callable can only be evaluated on the host at the RK4 stage times).

    Calling it at ``t`` (a float, or a (N,) array) gives (3,) or (N, 3) (the model's
    diagnostics call it like any force callable).
    """

    def __init__(self, offset=(0.0, 0.0, 0.0), amplitude=(0.0, 0.0, 0.0), frequency=(0.0, 0.0, 0.0),
                 phase=(0.0, 0.0, 0.0)):  # fmt: skip
        arrays = [_host_rows(a, name, (3,)) for a, name in
                  ((offset, "offset"), (amplitude, "amplitude"), (frequency, "frequency"), (phase, "phase"))]  # fmt: skip
        rows = {a.shape[0] for a in arrays} - {1}
        if len(rows) > 1:
            raise ValueError(f"HarmonicForce: offset, amplitude, frequency, phase have different numbers of rows {rows}")
        self.rows = rows.pop() if rows else 1
        self.params = np.ascontiguousarray(np.stack(np.broadcast_arrays(*[np.broadcast_to(a, (self.rows, 3))
                                                                          for a in arrays]), axis=2))  # (B, 3, 4)

    def __call__(self, t):
        xp = np if isinstance(t, (int, float, np.floating)) else rot.array_module(t)
        p = xp.asarray(self.params)
        tt = xp.asarray(t, dtype=xp.float64)
        if tt.ndim == 0:
            F = p[..., 0] + p[..., 1] * xp.cos(p[..., 2] * tt + p[..., 3])
            return F[0] if self.rows == 1 else F
        return p[..., 0] + p[..., 1] * xp.cos(p[..., 2] * tt[:, None] + p[..., 3])


@dataclass
class RollingBallState(BodyState):
    """Changing arrays: ``y`` (N, 13) or (N, 15) float64 (layout in the module
    docstring), clock ``t`` [T] (float) and ``step`` (int)."""

    y: object

    @property
    def Omega(self):
        """(N, 3) body angular velocity [1/T] (view)."""
        return self.y[:, OMEGA]

    @property
    def Gamma(self):
        """(N, 3) advected vertical ``Γ = Λ⁻¹e3`` [-] (view)."""
        return self.y[:, GAMMA]

    @property
    def q(self):
        """(N, 4) orientation quaternion, body → spatial [-] (view)."""
        return self.y[:, QUAT]

    @property
    def position(self):
        """(N, 3) geometric centre of the ball [L] (view); the contact point is
        ``position - r e3``."""
        return self.y[:, POSITION]

    @property
    def work_actuation(self):
        """(N,) work of the rail actuation forces since the start [M L²/T²], or None."""
        return self.y[:, WORK_ACTUATION] if self.y.shape[1] > WORK_ACTUATION else None

    @property
    def work_external(self):
        """(N,) work of the external force ``F_e`` since the start [M L²/T²], or None."""
        return self.y[:, WORK_EXTERNAL] if self.y.shape[1] > WORK_EXTERNAL else None


class RollingBall:
    """Fixed parameters of ``N`` rolling balls with ``K`` internal masses each.

    Parameters
    ----------
    radius: scalar or (N,) float64 [L], > 0.
    shell_mass: scalar or (N,) [M], > 0: ``m0``.
    inertia: (3,), (3, 3), (N, 3) or (N, 3, 3) [M L²]: ``𝕀``, the shell's inertia about
        its own centre of mass, body frame; symmetric positive definite.
    shell_com: (3,) or (N, 3) [L]: ``χ0``, the shell's centre of mass from the geometric
        centre, body frame.
    masses: (K,) or (N, K) [M], > 0: the point masses ``m_i``.
    rails: K :class:`~granular.bodies.rolling_ball.rails.Rail` objects (rail ``i`` carries mass ``i``).
    actuations: K :class:`~granular.bodies.rolling_ball.rails.Actuation` objects, ``θ_i(t)``.
    gravity: ``g`` [L/T²], finite, >= 0.
    external_force: ``None``; a spatial force ``F_e`` at the geometric centre, (3,) or
        (N, 3) [M L/T²]; a :class:`HarmonicForce`; or a callable ``t -> F_e`` returning
        such an array (``t`` a float or a (N,) array; the RK4 scheme evaluates it on the
        host at its stage times, the adaptive scheme needs a constant or harmonic force).
    n: number of balls; needed only when every parameter is shared (default 1).
    backend: a :class:`~granular.backend.Backend` or its name.
    """

    columns = COLUMNS  #: names of the state columns, for error messages

    def __init__(self, radius, shell_mass, inertia, shell_com=(0.0, 0.0, 0.0), masses=(), rails=(), actuations=(),
                 gravity=9.81, external_force=None, n=None, backend="cpu"):  # fmt: skip
        self.backend = resolve_backend(backend)
        xp = self.backend.xp
        rails, actuations = list(rails), list(actuations)
        for k, r_ in enumerate(rails):
            if not isinstance(r_, Rail):
                raise ValueError(f"rails[{k}]: expected a Rail (CircleRail, LineRail, CurveRail, ...), got {r_!r}")
        for k, a_ in enumerate(actuations):
            if not isinstance(a_, Actuation):
                raise ValueError(f"actuations[{k}]: expected an Actuation (ConstantSpeed, ...), got {a_!r}")
        K = len(rails)
        if len(actuations) != K:
            raise ValueError(f"actuations: need one per rail ({K}), got {len(actuations)}")
        m = np.array(masses, dtype=np.float64) if np.size(masses) else np.zeros((0,))
        if m.ndim == 1:
            m = m[None]
        if m.ndim != 2 or m.shape[1] != K:
            raise ValueError(f"masses: expected shape ({K},) or (N, {K}) (one per rail), got {np.shape(masses)}")
        if not (np.isfinite(m).all() and (m > 0).all()):
            raise ValueError(f"masses: must be finite and > 0, got {masses!r}")
        host = {
            "radius": _host_rows(radius, "radius", (), positive=True),
            "shell_mass": _host_rows(shell_mass, "shell_mass", (), positive=True),
            "shell_com": _host_rows(shell_com, "shell_com", (3,)),
            "inertia": check_inertia(inertia),
            "masses": m,
        }
        try:
            g = float(gravity)
        except (TypeError, ValueError):
            raise ValueError(f"gravity: expected a number, got {gravity!r}") from None
        if not (math.isfinite(g) and g >= 0):
            raise ValueError(f"gravity: must be finite and >= 0, got {gravity!r}")
        self._force_fn = None
        if external_force is None:
            force = None
        elif callable(external_force):
            self._force_fn, force = external_force, None
        else:
            force = _host_rows(external_force, "external_force", (3,))
            host["external_force"] = force
        rows = {k: v.shape[0] for k, v in host.items()}
        rows.update({f"rails[{k}]": r_.rows for k, r_ in enumerate(rails)})
        rows.update({f"actuations[{k}]": a_.rows for k, a_ in enumerate(actuations)})
        found = set(rows.values()) - {1}
        if len(found) > 1:
            raise ValueError(f"per-ball parameters have different numbers of rows: {rows}")
        found = found.pop() if found else None
        if n is None:
            n = found if found is not None else 1
        if not isinstance(n, int) or isinstance(n, bool) or n < 1 or (found is not None and n != found):
            raise ValueError(f"n: must be a positive int matching the per-ball parameters ({found}), got {n!r}")
        self.n, self.n_masses, self.gravity = n, K, g
        self.rails, self.actuations = rails, actuations
        self.radius = xp.asarray(host["radius"])
        self.shell_mass = xp.asarray(host["shell_mass"])
        self.shell_com = xp.asarray(host["shell_com"])
        self.inertia = xp.asarray(host["inertia"])
        self.masses = xp.asarray(m)
        B = max(m.shape[0], host["shell_mass"].shape[0])
        self.m_all = xp.concatenate([xp.broadcast_to(self.shell_mass[:, None], (B, 1)),
                                     xp.broadcast_to(self.masses, (B, K))], axis=1)  # fmt: skip
        self.total_mass = self.m_all.sum(axis=1)
        self.external_force = None if force is None else xp.asarray(force)

    @property
    def xp(self):
        return self.backend.xp

    @property
    def has_external_force(self) -> bool:
        return self.external_force is not None or self._force_fn is not None

    # ------------------------------------------------------------------ states

    def state(self, Omega=None, q=None, xy=None, track_work=False):
        """A :class:`RollingBallState` at ``t = 0``.

        ``Omega``: (3,) or (N, 3) body angular velocity [1/T] (default 0); ``q``: (4,) or
        (N, 4) unit quaternion (default identity; ``|q| - 1`` must be below 1e-10);
        ``xy``: (2,) or (N, 2) horizontal position of the centre (= of the contact point)
        [L] (default 0). ``Γ = R(q)ᵀ e3`` and ``z3 = r``. ``track_work`` adds the two
        work columns, starting at 0.
        """
        xp, n = self.xp, self.n

        def rows(a, name, k, default):
            a = xp.asarray(default if a is None else a, dtype=xp.float64)
            if a.shape not in ((k,), (n, k)) or not bool(xp.isfinite(a).all()):
                raise ValueError(f"{name}: must be finite with shape ({k},) or ({n}, {k}), got {tuple(a.shape)}")
            return xp.broadcast_to(a, (n, k))

        Om = rows(Omega, "Omega", 3, (0.0, 0.0, 0.0))
        qq = rows(q, "q", 4, (1.0, 0.0, 0.0, 0.0))
        norm_err = xp.abs(xp.sqrt((qq * qq).sum(axis=1)) - 1.0)
        if float(norm_err.max()) > 1e-10:
            raise ValueError(f"q: must be unit quaternions (| |q| - 1 | <= 1e-10), got {float(norm_err.max()):.3g}")
        xy_ = rows(xy, "xy", 2, (0.0, 0.0))
        Gam = rot.quat_rotate(rot.quat_conjugate(qq), xp.asarray([0.0, 0.0, 1.0]))
        z = xp.concatenate([xy_, xp.broadcast_to(self.radius[:, None], (n, 1))], axis=1)
        cols = [Om, Gam, qq, z] + ([xp.zeros((n, 2))] if track_work else [])
        return RollingBallState(y=xp.concatenate(cols, axis=1))

    # ------------------------------------------------------------- kinematics

    def mass_kinematics(self, t):
        """The moving masses' body-frame kinematics at ``t`` (float or (N,)) [T]:
        :class:`~granular.bodies.rolling_ball.rails.MassKinematics` with (N, K, 3) arrays."""
        return mass_kinematics(self.rails, self.actuations, t, self.n, self.xp)

    def _points(self, t):
        """Shell centre of mass (index 0) and masses: ``χ``, ``χ̇``, ``χ̈`` (N, K+1, 3),
        and the masses' ``ζ'``, ``θ̇``."""
        xp, n = self.xp, self.n
        mk = self.mass_kinematics(t)
        c0 = xp.broadcast_to(self.shell_com[:, None, :], (n, 1, 3))
        z0 = xp.zeros((n, 1, 3))
        cat = lambda a, b: xp.concatenate([a, b], axis=1)  # noqa: E731
        return cat(c0, mk.chi), cat(z0, mk.dchi), cat(z0, mk.ddchi), mk

    def _force_body(self, t, qn):
        """``Γ̃ = Λᵀ F_e`` (N, 3) [M L/T²] or None."""
        if not self.has_external_force:
            return None
        F = self.external_force
        if self._force_fn is not None:
            xp = self.xp
            F = xp.asarray(self._force_fn(t), dtype=xp.float64)
            if F.shape not in ((3,), (self.n, 3), (1, 3)):
                raise ValueError(f"external_force(t): returned shape {tuple(F.shape)}, expected (3,) or ({self.n}, 3)")
        return rot.quat_rotate(rot.quat_conjugate(qn), F)

    def _I_times(self, v):
        return (self.inertia * v[:, None, :]).sum(axis=-1)

    def _terms(self, t, y):
        """Everything the right-hand side and the diagnostics share."""
        xp = self.xp
        Om, Gam, q = y[:, OMEGA], y[:, GAMMA], y[:, QUAT]
        qn = q / xp.sqrt((q * q).sum(axis=1))[:, None]
        chi, dchi, ddchi, mk = self._points(t)
        r = self.radius[:, None]
        m = self.m_all[:, :, None]  # (B, K+1, 1)
        s = r[:, :, None] * Gam[:, None, :] + chi  # (N, K+1, 3)
        Ob = Om[:, None, :]
        inner = self.gravity * Gam[:, None, :] + rot.cross(Ob, rot.cross(Ob, chi) + 2.0 * dchi) + ddchi
        IOm = self._I_times(Om)
        rhs = rot.cross(IOm, Om) - (m * rot.cross(s, inner)).sum(axis=1)
        Gt = self._force_body(t, qn)
        if Gt is not None:
            rhs = rhs - r * rot.cross(Gt, Gam)
        ms = m * s
        def msum(a, b):  # Σ_i m_i s_ia s_ib, (N,)
            return (ms[..., a] * s[..., b]).sum(axis=1)

        sxx, syy, szz, sxy, sxz, syz = msum(0, 0), msum(1, 1), msum(2, 2), msum(0, 1), msum(0, 2), msum(1, 2)
        I_ = self.inertia
        Omdot = _sym3_solve(I_[:, 0, 0] + syy + szz, I_[:, 0, 1] - sxy, I_[:, 0, 2] - sxz,
                            I_[:, 1, 1] + sxx + szz, I_[:, 1, 2] - syz, I_[:, 2, 2] + sxx + syy, rhs)  # fmt: skip
        return {"Om": Om, "Gam": Gam, "q": q, "qn": qn, "chi": chi, "dchi": dchi, "ddchi": ddchi, "mk": mk,
                "r": r, "m": m, "s": s, "Omdot": Omdot, "Gt": Gt, "IOm": IOm}  # fmt: skip

    # ------------------------------------------------------- equations of motion

    def rhs(self, t, y):
        """``dy/dt`` (N, 13) or (N, 15) for ``y`` of the same shape at ``t`` (float or (N,)) [T].

        ``Ω̇`` from (B.8) solved as in (B.9)-(B.10), ``Γ̇ = Γ × Ω`` (A.13),
        ``q̇ = ½ q Ω^♯`` (D.21), ``ż = r ω × e3``; with tracked work also the actuation
        power ``Σ F_i·Λχ̇_i`` and the external power ``F_e·ż``.
        """
        xp = self.xp
        if y.ndim != 2 or y.shape[0] != self.n or y.shape[1] not in (13, 15):
            raise ValueError(f"y: expected shape ({self.n}, 13) or ({self.n}, 15), got {tuple(y.shape)}")
        T = self._terms(t, y)
        Om, Gam, q, qn, r = T["Om"], T["Gam"], T["q"], T["qn"], T["r"]
        om = rot.quat_rotate(qn, Om)  # ω = Λ Ω
        zdot = r * xp.stack([om[:, 1], -om[:, 0], xp.zeros_like(om[:, 0])], axis=1)  # r ω × e3
        qdot = 0.5 * rot.quat_multiply(q, xp.concatenate([xp.zeros_like(Om[:, :1]), Om], axis=1))
        cols = [T["Omdot"], rot.cross(Gam, Om), qdot, zdot]
        if y.shape[1] == 15:
            p_ext = xp.zeros_like(r[:, 0]) if T["Gt"] is None else (T["Gt"] * (r * rot.cross(Om, Gam))).sum(axis=1)
            cols += [self._power(T)[:, None], xp.broadcast_to(p_ext, (self.n,))[:, None]]
        return xp.concatenate(cols, axis=1)

    def omega_dot(self, t, y):
        """``Ω̇`` (N, 3) [1/T²] from (B.8)-(B.10)."""
        return self._terms(t, y)["Omdot"]

    def project(self, y):
        """Renormalise the quaternion columns of ``y`` in place (the normalisation policy)."""
        q = y[:, QUAT]
        y[:, QUAT] = q / self.xp.sqrt((q * q).sum(axis=1))[:, None]
        return y

    # -------------------------------------------------------------- diagnostics

    def _accelerations(self, T):
        """Spatial acceleration of the shell's centre of mass and of each mass, body
        components ``A_i = u̇_i + Ω × u_i`` with ``u_i = Ω × s_i + χ̇_i`` (N, K+1, 3)."""
        Ob, s, dchi = T["Om"][:, None, :], T["s"], T["dchi"]
        u = rot.cross(Ob, s) + dchi
        sdot = T["r"][:, :, None] * rot.cross(T["Gam"], T["Om"])[:, None, :] + dchi
        return rot.cross(T["Omdot"][:, None, :], s) + rot.cross(Ob, sdot) + T["ddchi"] + rot.cross(Ob, u)

    def _rail_forces(self, T):
        A = self._accelerations(T)[:, 1:]
        return self.masses[:, :, None] * (A + self.gravity * T["Gam"][:, None, :])

    def _power(self, T):
        return (self._rail_forces(T) * T["dchi"][:, 1:]).sum(axis=(1, 2))

    def rail_forces(self, t, y):
        """Force of the ball on each mass, ``F_i = m_i (a_i + g e3)`` in body components
        (N, K, 3) [M L/T²], and its component along the rail coordinate
        ``Q_i = F_i·ζ_i'`` (N, K) [M L²/(T² θ)] (the actuation force; ``Q_i θ̇_i`` is its power)."""
        T = self._terms(t, y)
        F = self._rail_forces(T)
        return F, (F * T["mk"].tangent).sum(axis=-1)

    def actuation_power(self, t, y):
        """``Σ_i F_i·Λχ̇_i = Σ_i Q_i θ̇_i`` (N,) [M L²/T³]: power of the rail actuation forces."""
        return self._power(self._terms(t, y))

    def contact_force(self, t, y):
        """Force of the plane on the ball, body components (N, 3) [M L/T²]:
        ``λ = Σ_i m_i A_i + M g Γ - Γ̃`` (Newton's law for the whole system); the normal
        force is ``λ·Γ`` (must stay > 0 for contact) and the friction ``λ - (λ·Γ) Γ``."""
        T = self._terms(t, y)
        lam = (T["m"] * self._accelerations(T)).sum(axis=1) + self.total_mass[:, None] * self.gravity * T["Gam"]
        return lam if T["Gt"] is None else lam - T["Gt"]

    def energy(self, t, y):
        """``E = ½ Ω·𝕀Ω + ½ Σ m_i |Ω × s_i + χ̇_i|² + g Σ m_i (r + Γ·χ_i)`` (N,) [M L²/T²]
        (``i = 0`` the shell; heights above the plane; advected ``Γ``)."""
        xp = self.xp
        Om, Gam = y[:, OMEGA], y[:, GAMMA]
        chi, dchi, _, _ = self._points(t)
        r = self.radius[:, None]
        m = self.m_all
        s = r[:, :, None] * Gam[:, None, :] + chi
        u = rot.cross(Om[:, None, :], s) + dchi
        kin = 0.5 * (Om * self._I_times(Om)).sum(axis=1) + 0.5 * (m * (u * u).sum(axis=-1)).sum(axis=1)
        pot = self.gravity * (m * (r + (chi * Gam[:, None, :]).sum(axis=-1))).sum(axis=1)
        return xp.asarray(kin + pot)

    def mass_positions(self, t, y):
        """Spatial positions (N, K+1, 3) [L] of the shell's centre of mass (index 0) and
        of the masses: ``z + Λ χ_i``."""
        q = y[:, QUAT]
        qn = q / self.xp.sqrt((q * q).sum(axis=1))[:, None]
        chi = self._points(t)[0]
        return y[:, None, POSITION] + rot.quat_rotate(qn[:, None, :], chi)

    def invariants(self, state):
        """Per-ball diagnostics of ``state``, each (N,): ``energy`` [M L²/T²],
        ``energy_balance`` (``E - W_act - W_ext``, when work is tracked), ``gamma_norm``
        (``|Γ| - 1``), ``gamma_vs_q`` (``|Γ - R(q)ᵀe3|``), ``quat_norm`` (``|q| - 1``),
        ``height`` (``z3 - r``) [L]."""
        xp, y = self.xp, state.y
        q = y[:, QUAT]
        nq = xp.sqrt((q * q).sum(axis=1))
        G = y[:, GAMMA]
        Gq = rot.quat_rotate(rot.quat_conjugate(q / nq[:, None]), xp.asarray([0.0, 0.0, 1.0]))
        E = self.energy(state.t, y)
        out = {
            "energy": E,
            "gamma_norm": xp.sqrt((G * G).sum(axis=1)) - 1.0,
            "gamma_vs_q": xp.sqrt(((G - Gq) ** 2).sum(axis=1)),
            "quat_norm": nq - 1.0,
            "height": y[:, 12] - self.radius,
        }
        if y.shape[1] == 15:
            out["energy_balance"] = E - y[:, WORK_ACTUATION] - y[:, WORK_EXTERNAL]
        return out
