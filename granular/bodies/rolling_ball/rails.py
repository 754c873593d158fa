"""Rails fixed in a rolling ball and the prescribed motion of the masses on them (paper 004).

Putkaradze & Rogers let point mass ``i`` move on a rail ``χ_i = ζ_i(θ_i)`` fixed in the
ball's body frame, with the rail coordinate ``θ_i(t)`` prescribed (the actuation). The
equations of motion (B.8) need, per mass, the body-frame position, velocity and
acceleration relative to the ball::

    χ_i = ζ_i(θ_i),   χ̇_i = ζ_i'(θ_i) θ̇_i,   χ̈_i = ζ_i''(θ_i) θ̇_i² + ζ_i'(θ_i) θ̈_i

so a :class:`Rail` returns ``(ζ, ζ', ζ'')`` and an :class:`Actuation` returns
``(θ, θ̇, θ̈)``; :func:`mass_kinematics` combines them.

Rails (all lengths [L], body frame, relative to the ball's geometric centre):

==================  ===========================================================
:class:`CircleRail`      ``ζ = c + ρ (cos θ u + sin θ v)``
:class:`EllipseRail`     ``ζ = c + a cos θ u + b sin θ v``
:class:`FigureEightRail` ``ζ = c + a sin θ u + b sin θ cos θ v`` (lemniscate of Gerono)
:class:`LineRail`        ``ζ = c + θ d`` (``θ`` is arc length when ``|d| = 1``)
:class:`FourierRail`     ``ζ = c + Σ_k (A_k cos kθ + B_k sin kθ)``, any smooth closed curve
:class:`CurveRail`       user functions ``ζ(θ)``, ``ζ'(θ)``, ``ζ''(θ)`` (model diagnostics
                         only: the per-ball kernels cannot call Python)
==================  ===========================================================

``u`` and ``v`` must be orthonormal (checked to 1e-12); the default plane is the body
``x-z`` plane (``u = e1``, ``v = e3``), the plane of the rolling disk (Appendix C).

Actuations (``θ`` [rad for closed rails, L for a line], ``t`` [T]):
:class:`ConstantSpeed` ``θ = θ0 + w t``; :func:`at_rest` (``w = 0``); :class:`Sinusoidal`
``θ = θc + A sin(ω t + φ)``; :class:`Harmonic` ``θ = θ0 + w t + A sin(ν t + φ)`` (both at
once); :class:`UserActuation` user functions of ``t`` (model diagnostics only).

Every rail and actuation but the two user-function ones gives its parameters to the
per-ball kernels (:mod:`kernels.bodies_rolling`) through ``kernel_params()``: a kind code
and a (B, P) host array.

Batching: every parameter may be given once (shared by all balls) or with a leading axis
of length ``N`` (one row per ball); a batch uses the same rail *type* for mass ``i`` in
every ball. ``θ`` may be a (N,) array and ``t`` a float or a (N,) array (per-ball time
in the adaptive integrator). Parameters are stored on the host and copied to the array
module of the argument (NumPy or CuPy) on first use.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...rotations import array_module

__all__ = [
    "Rail",
    "CircleRail",
    "EllipseRail",
    "FigureEightRail",
    "LineRail",
    "CurveRail",
    "FourierRail",
    "Actuation",
    "ConstantSpeed",
    "Sinusoidal",
    "UserActuation",
    "Harmonic",
    "at_rest",
    "MassKinematics",
    "mass_kinematics",
    "derivative_error",
    "kernel_rails",
]

E1 = (1.0, 0.0, 0.0)
E3 = (0.0, 0.0, 1.0)


# ------------------------------------------------------------------ parameter checks


def _host_rows(value, name, tail, positive=False, nonzero=False):
    """``value`` as a finite float64 host array of shape ``(B,) + tail`` (B = 1 if shared)."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers of shape {tail or '()'} or (N, ...), got {value!r}") from None
    if a.shape == tail:
        a = a[None]
    if a.ndim != len(tail) + 1 or a.shape[1:] != tail or a.shape[0] < 1:
        allowed = f"{tail} (shared) or {('N',) + tail} (one row per ball)".replace("'", "")
        raise ValueError(f"{name}: expected shape {allowed}, got {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: must be finite, got {value!r}")
    if positive and not (a > 0).all():
        raise ValueError(f"{name}: must be > 0, got {value!r}")
    if nonzero and not (np.abs(a).reshape(a.shape[0], -1).max(axis=1) > 0).all():
        raise ValueError(f"{name}: must be non-zero, got {value!r}")
    return a


def _common_rows(name, **arrays):
    rows = {a.shape[0] for a in arrays.values()} - {1}
    if len(rows) > 1:
        detail = ", ".join(f"{k}: {v.shape[0]}" for k, v in arrays.items())
        raise ValueError(f"{name}: per-ball parameters have different numbers of rows ({detail})")
    return rows.pop() if rows else 1


class _HostParams:
    """Host parameters copied once per array module."""

    def _init_params(self, **arrays):
        self._host = arrays
        self._cache = {}
        self.rows = _common_rows(type(self).__name__, **arrays)

    def _params(self, xp):
        key = id(xp)
        if key not in self._cache:
            self._cache[key] = {k: xp.asarray(v) for k, v in self._host.items()}
        return self._cache[key]


def _as_theta(theta):
    xp = array_module(theta)
    th = xp.asarray(theta, dtype=xp.float64)
    if th.ndim != 1:
        raise ValueError(f"theta: expected a (N,) array of rail coordinates, got shape {tuple(th.shape)}")
    return xp, th


# ------------------------------------------------------------------------- rails


class Rail(_HostParams):
    """A curve ``ζ(θ)`` fixed in the ball's body frame [L].

    Subclasses implement :meth:`evaluate`. ``rows``: number of parameter rows (1 or N).
    """

    def evaluate(self, theta):
        """``(ζ, ζ', ζ'')`` at ``theta`` (M,) float64: three (max(M, B), 3) arrays [L],
        [L/θ], [L/θ²], body frame."""
        raise NotImplementedError

    def position(self, theta):
        """``ζ(θ)``: (max(M, B), 3) [L]."""
        return self.evaluate(theta)[0]

    kind = None  #: rail kind of :mod:`kernels.bodies_rolling` (None: not available there)

    def kernel_params(self):
        """``(kind, terms, params)``: the kernel's rail kind, number of Fourier terms and
        the (B, P) float64 host parameters (see :mod:`kernels.bodies_rolling`)."""
        raise ValueError(f"{type(self).__name__}: evaluated by Python callables, which the per-ball kernels cannot "
                         "call; describe the curve as a FourierRail (or a circle, ellipse, figure eight or line)")

    def _pack(self, *names):
        h = self._host
        return np.concatenate([np.broadcast_to(h[k].reshape(h[k].shape[0], -1), (self.rows, h[k][0].size))
                               for k in names], axis=1)  # fmt: skip


class _PlanarRail(Rail):
    """A rail in the plane through ``center`` spanned by orthonormal ``u``, ``v``."""

    def _init_frame(self, center, u, v, **scalars):
        c = _host_rows(center, "center", (3,))
        uu = _host_rows(u, "u", (3,))
        vv = _host_rows(v, "v", (3,))
        B = _common_rows(type(self).__name__, u=uu, v=vv)
        uu, vv = np.broadcast_to(uu, (B, 3)), np.broadcast_to(vv, (B, 3))
        nu, nv, uv = (uu * uu).sum(-1), (vv * vv).sum(-1), (uu * vv).sum(-1)
        if np.abs(nu - 1).max() > 1e-12 or np.abs(nv - 1).max() > 1e-12 or np.abs(uv).max() > 1e-12:
            raise ValueError("u, v: the rail's in-plane axes must be orthonormal (|u| = |v| = 1, u·v = 0 to 1e-12)")
        self._init_params(center=c, u=uu.copy(), v=vv.copy(), **scalars)

    def kernel_params(self):
        h = self._host
        a = h["radius"] if "radius" in h else h["a"]
        b = h["b"] if "b" in h else np.zeros_like(a)
        ab = np.stack(np.broadcast_arrays(a, b), axis=1)
        return self.kind, 0, np.concatenate([self._pack("center", "u", "v"), np.broadcast_to(ab, (self.rows, 2))],
                                            axis=1)  # fmt: skip

    def _combine(self, xp, th, cu, cv, du, dv, ddu, ddv):
        p = self._params(xp)
        u, v = p["u"], p["v"]
        zeta = p["center"] + cu[:, None] * u + cv[:, None] * v
        return zeta, du[:, None] * u + dv[:, None] * v, ddu[:, None] * u + ddv[:, None] * v


class CircleRail(_PlanarRail):
    """Circle ``ζ = c + ρ (cos θ u + sin θ v)``.

    ``radius`` ρ: scalar or (N,) [L], > 0; ``center``: (3,) or (N, 3) [L]; ``u``, ``v``:
    (3,) or (N, 3) orthonormal, default the body x-z plane.
    """

    kind = 0

    def __init__(self, radius, center=(0.0, 0.0, 0.0), u=E1, v=E3):
        self._init_frame(center, u, v, radius=_host_rows(radius, "radius", (), positive=True))

    def evaluate(self, theta):
        xp, th = _as_theta(theta)
        rho = self._params(xp)["radius"]
        c, s = rho * xp.cos(th), rho * xp.sin(th)
        return self._combine(xp, th, c, s, -s, c, -c, -s)


class EllipseRail(_PlanarRail):
    """Ellipse ``ζ = c + a cos θ u + b sin θ v``; ``a``, ``b``: scalar or (N,) [L], > 0."""

    kind = 1

    def __init__(self, a, b, center=(0.0, 0.0, 0.0), u=E1, v=E3):
        self._init_frame(center, u, v, a=_host_rows(a, "a", (), positive=True), b=_host_rows(b, "b", (), positive=True))

    def evaluate(self, theta):
        xp, th = _as_theta(theta)
        p = self._params(xp)
        ca, sb = p["a"] * xp.cos(th), p["b"] * xp.sin(th)
        sa, cb = p["a"] * xp.sin(th), p["b"] * xp.cos(th)
        return self._combine(xp, th, ca, sb, -sa, cb, -ca, -sb)


class FigureEightRail(_PlanarRail):
    """Figure eight (lemniscate of Gerono) ``ζ = c + a sin θ u + b sin θ cos θ v``.

    The curve crosses itself at ``c`` (θ = 0, π); its lobes reach ``±a`` along ``u`` and
    ``±b/2`` along ``v``. ``a``, ``b``: scalar or (N,) [L], > 0.
    """

    kind = 2

    def __init__(self, a, b, center=(0.0, 0.0, 0.0), u=E1, v=E3):
        self._init_frame(center, u, v, a=_host_rows(a, "a", (), positive=True), b=_host_rows(b, "b", (), positive=True))

    def evaluate(self, theta):
        xp, th = _as_theta(theta)
        p = self._params(xp)
        a, b = p["a"], p["b"]
        s, c = xp.sin(th), xp.cos(th)
        s2, c2 = xp.sin(2.0 * th), xp.cos(2.0 * th)
        return self._combine(xp, th, a * s, 0.5 * b * s2, a * c, b * c2, -a * s, -2.0 * b * s2)


class LineRail(Rail):
    """Straight rail ``ζ = c + θ d``; ``direction`` d: (3,) or (N, 3) [L/θ], non-zero
    (θ is arc length [L] when ``|d| = 1``); ``center``: (3,) or (N, 3) [L]."""

    kind = 3

    def kernel_params(self):
        return self.kind, 0, self._pack("center", "direction")

    def __init__(self, direction, center=(0.0, 0.0, 0.0)):
        self._init_params(
            center=_host_rows(center, "center", (3,)), direction=_host_rows(direction, "direction", (3,), nonzero=True)
        )

    def evaluate(self, theta):
        xp, th = _as_theta(theta)
        p = self._params(xp)
        d = p["direction"]
        zeta = p["center"] + th[:, None] * d
        d1 = xp.broadcast_to(d, zeta.shape)
        return zeta, d1, xp.zeros_like(zeta)


class FourierRail(Rail):
    """Closed curve ``ζ = c + Σ_{k=1..M} (A_k cos kθ + B_k sin kθ)`` [L], body frame.

    ``center``: (3,) or (N, 3); ``cos_coefficients`` ``A``, ``sin_coefficients`` ``B``:
    (M, 3) or (N, M, 3) [L]. ``ζ' = Σ k (-A_k sin kθ + B_k cos kθ)``,
    ``ζ'' = -Σ k² (A_k cos kθ + B_k sin kθ)``.
    """

    kind = 4

    def __init__(self, center, cos_coefficients, sin_coefficients):
        A = np.array(cos_coefficients, dtype=np.float64)
        B = np.array(sin_coefficients, dtype=np.float64)
        if A.ndim == 2:
            A = A[None]
        if B.ndim == 2:
            B = B[None]
        if A.ndim != 3 or A.shape[2] != 3 or B.shape[1:] != A.shape[1:] or A.shape[1] < 1:
            raise ValueError(f"cos_coefficients, sin_coefficients: expected equal shapes (M, 3) or (N, M, 3), M >= 1, "
                             f"got {np.shape(cos_coefficients)} and {np.shape(sin_coefficients)}")  # fmt: skip
        if not (np.isfinite(A).all() and np.isfinite(B).all()):
            raise ValueError("cos_coefficients, sin_coefficients: must be finite")
        self.terms = A.shape[1]
        self._init_params(center=_host_rows(center, "center", (3,)), A=A, B=B)

    def evaluate(self, theta):
        xp, th = _as_theta(theta)
        p = self._params(xp)
        z, d1, d2 = p["center"] + 0.0 * th[:, None], 0.0 * th[:, None], 0.0 * th[:, None]
        for m in range(self.terms):
            f = float(m + 1)
            c, s = xp.cos(f * th)[:, None], xp.sin(f * th)[:, None]
            A, B = p["A"][:, m], p["B"][:, m]
            z = z + c * A + s * B
            d1 = d1 - (f * s) * A + (f * c) * B
            d2 = d2 - (f * f * c) * A - (f * f * s) * B
        return z, d1, d2

    def kernel_params(self):
        h = self._host
        AB = np.stack([np.broadcast_to(h["A"], (self.rows,) + h["A"].shape[1:]),
                       np.broadcast_to(h["B"], (self.rows,) + h["B"].shape[1:])], axis=2)  # (B, M, 2, 3)
        c = np.broadcast_to(h["center"], (self.rows, 3))
        return self.kind, self.terms, np.concatenate([c, AB.reshape(self.rows, -1)], axis=1)


class CurveRail(Rail):
    """A user curve: ``position(θ)``, ``first_derivative(θ)``, ``second_derivative(θ)``.

    Each callable receives ``θ`` as a (M,) float64 array of the caller's array module
    (NumPy or CuPy) and must return an (M, 3) array [L], [L/θ], [L/θ²] in the body frame,
    written with array operations of that module (no Python loop over the entries).
    Use :func:`derivative_error` to check the derivatives against finite differences.
    """

    def __init__(self, position, first_derivative, second_derivative):
        for name, f in (("position", position), ("first_derivative", first_derivative),
                        ("second_derivative", second_derivative)):  # fmt: skip
            if not callable(f):
                raise ValueError(f"{name}: expected a callable theta (M,) -> (M, 3), got {f!r}")
        self._funcs = (position, first_derivative, second_derivative)
        self._init_params()

    def evaluate(self, theta):
        xp, th = _as_theta(theta)
        out = []
        for name, f in zip(("position", "first_derivative", "second_derivative"), self._funcs):
            a = xp.asarray(f(th), dtype=xp.float64)
            if a.shape != (th.shape[0], 3):
                raise ValueError(f"CurveRail.{name}: returned shape {tuple(a.shape)}, expected ({th.shape[0]}, 3)")
            out.append(a)
        return tuple(out)


def derivative_error(rail, theta, step=1e-4):
    """Largest deviation of ``ζ'`` and ``ζ''`` from 4th-order central differences of
    ``ζ`` and ``ζ'`` at ``theta`` (M,): ``(err1, err2)`` floats [L/θ], [L/θ²]."""
    xp, th = _as_theta(theta)
    h = float(step)
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"step: must be finite and > 0, got {step!r}")
    z, d1, d2 = rail.evaluate(th)
    pts = [rail.evaluate(th + k * h) for k in (-2, -1, 1, 2)]
    fd1 = (pts[0][0] - 8 * pts[1][0] + 8 * pts[2][0] - pts[3][0]) / (12 * h)
    fd2 = (pts[0][1] - 8 * pts[1][1] + 8 * pts[2][1] - pts[3][1]) / (12 * h)
    return float(xp.abs(fd1 - d1).max()), float(xp.abs(fd2 - d2).max())


# --------------------------------------------------------------------- actuations


class Actuation(_HostParams):
    """A prescribed rail coordinate ``θ(t)``; calling it gives ``(θ, θ̇, θ̈)``."""

    def kernel_params(self):
        """(B, 5) float64 host ``[c, w, A, ν, φ]`` of ``θ = c + w t + A sin(ν t + φ)``, the
        form of the per-ball kernels."""
        raise ValueError(f"{type(self).__name__}: evaluated by Python callables, which the per-ball kernels cannot "
                         "call; use ConstantSpeed, Sinusoidal or Harmonic")

    def _pack(self, c, w, A, nu, ph):
        cols = np.broadcast_arrays(*[np.asarray(x, dtype=np.float64).reshape(-1) for x in (c, w, A, nu, ph)])
        return np.ascontiguousarray(np.stack(cols, axis=1))

    def __call__(self, t, xp):
        """At time ``t`` (float or (N,) array [T]): ``(θ, θ̇, θ̈)``, each an array
        broadcastable to (N,) [θ], [θ/T], [θ/T²]."""
        raise NotImplementedError


class ConstantSpeed(Actuation):
    """``θ = θ0 + w t``: ``theta0`` [θ], ``speed`` w [θ/T], each scalar or (N,)."""

    def __init__(self, theta0, speed):
        self._init_params(theta0=_host_rows(theta0, "theta0", ()), speed=_host_rows(speed, "speed", ()))

    def __call__(self, t, xp):
        p = self._params(xp)
        w = p["speed"]
        return p["theta0"] + w * t, w + 0.0 * t, xp.zeros_like(w) + 0.0 * t

    def kernel_params(self):
        h = self._host
        return self._pack(h["theta0"], h["speed"], 0.0, 0.0, 0.0)


def at_rest(theta0):
    """The mass held at ``θ0`` (scalar or (N,)): ``ConstantSpeed(theta0, 0)``."""
    return ConstantSpeed(theta0, 0.0)


class Sinusoidal(Actuation):
    """``θ = θc + A sin(ω t + φ)``: ``amplitude`` A [θ], ``frequency`` ω [rad/T] (angular),
    ``phase`` φ [rad], ``center`` θc [θ]; each scalar or (N,)."""

    def __init__(self, amplitude, frequency, phase=0.0, center=0.0):
        self._init_params(
            amplitude=_host_rows(amplitude, "amplitude", ()),
            frequency=_host_rows(frequency, "frequency", ()),
            phase=_host_rows(phase, "phase", ()),
            center=_host_rows(center, "center", ()),
        )

    def __call__(self, t, xp):
        p = self._params(xp)
        A, w = p["amplitude"], p["frequency"]
        arg = w * t + p["phase"]
        s, c = xp.sin(arg), xp.cos(arg)
        return p["center"] + A * s, A * w * c, -A * w * w * s

    def kernel_params(self):
        h = self._host
        return self._pack(h["center"], 0.0, h["amplitude"], h["frequency"], h["phase"])


class Harmonic(Actuation):
    """``θ = θ0 + w t + A sin(ν t + φ)``: ``theta0`` [θ], ``speed`` w [θ/T], ``amplitude`` A
    [θ], ``frequency`` ν [rad/T], ``phase`` φ [rad]; each scalar or (N,). Includes
    :class:`ConstantSpeed` (A = 0) and :class:`Sinusoidal` (w = 0)."""

    def __init__(self, theta0, speed, amplitude, frequency, phase=0.0):
        self._init_params(theta0=_host_rows(theta0, "theta0", ()), speed=_host_rows(speed, "speed", ()),
                          amplitude=_host_rows(amplitude, "amplitude", ()),
                          frequency=_host_rows(frequency, "frequency", ()), phase=_host_rows(phase, "phase", ()))  # fmt: skip

    def __call__(self, t, xp):
        p = self._params(xp)
        w, A, nu = p["speed"], p["amplitude"], p["frequency"]
        arg = nu * t + p["phase"]
        s = xp.sin(arg)
        return p["theta0"] + w * t + A * s, w + A * nu * xp.cos(arg), -A * nu * nu * s

    def kernel_params(self):
        h = self._host
        return self._pack(h["theta0"], h["speed"], h["amplitude"], h["frequency"], h["phase"])


class UserActuation(Actuation):
    """User functions ``theta(t)``, ``dtheta(t)``, ``ddtheta(t)``.

    Each receives ``t`` (a float, or a (N,) float64 array of the caller's array module in
    the adaptive integrator) and returns a scalar or an array broadcastable to (N,),
    written with array operations (``numpy``/``cupy`` functions that accept both).
    """

    def __init__(self, theta, dtheta, ddtheta):
        for name, f in (("theta", theta), ("dtheta", dtheta), ("ddtheta", ddtheta)):
            if not callable(f):
                raise ValueError(f"{name}: expected a callable t -> theta, got {f!r}")
        self._funcs = (theta, dtheta, ddtheta)
        self._init_params()

    def __call__(self, t, xp):
        out = []
        for name, f in zip(("theta", "dtheta", "ddtheta"), self._funcs):
            a = xp.asarray(f(t), dtype=xp.float64)
            if a.ndim > 1:
                raise ValueError(f"UserActuation.{name}: returned shape {tuple(a.shape)}, expected () or (N,)")
            out.append(a)
        return tuple(out)


# -------------------------------------------------------------------- combination


class MassKinematics(NamedTuple):
    """Body-frame kinematics of K masses in n balls (see :func:`mass_kinematics`)."""

    chi: object  #: (n, K, 3) position ``χ = ζ(θ)`` [L]
    dchi: object  #: (n, K, 3) velocity relative to the ball ``χ̇ = ζ'(θ) θ̇`` [L/T]
    ddchi: object  #: (n, K, 3) acceleration relative to the ball ``χ̈ = ζ'' θ̇² + ζ' θ̈`` [L/T²]
    tangent: object  #: (n, K, 3) ``ζ'(θ)`` [L/θ]
    theta_dot: object  #: (n, K) ``θ̇`` [θ/T]


def mass_kinematics(rails, actuations, t, n, xp):
    """Body-frame kinematics of every mass at time ``t`` (a :class:`MassKinematics`).

    ``rails``, ``actuations``: sequences of length K (one per mass); ``t``: float or (n,)
    [T]; ``n``: number of balls::

        χ = ζ(θ),  χ̇ = ζ'(θ) θ̇,  χ̈ = ζ''(θ) θ̇² + ζ'(θ) θ̈
    """
    chi, dchi, ddchi, tan, thd = [], [], [], [], []
    for rail, act in zip(rails, actuations):
        th, w, a = (xp.broadcast_to(x, (n,)) for x in act(t, xp))
        z, d1, d2 = rail.evaluate(th)
        if z.shape[0] != n:
            z, d1, d2 = (xp.broadcast_to(x, (n, 3)) for x in (z, d1, d2))
        chi.append(z)
        tan.append(d1)
        dchi.append(d1 * w[:, None])
        ddchi.append(d2 * (w * w)[:, None] + d1 * a[:, None])
        thd.append(w)
    if not chi:
        e = xp.zeros((n, 0, 3))
        return MassKinematics(e, e, e, e, xp.zeros((n, 0)))
    st = lambda lst: xp.stack(lst, axis=1)  # noqa: E731
    return MassKinematics(st(chi), st(dchi), st(ddchi), st(tan), st(thd))


# --------------------------------------------------------------------- kernels


def kernel_rails(backend, rails, actuations, n_rows):
    """``(rail_info (K, 2) int32, rail_par (B, K, P), act_par (B, K, 5))`` on ``backend``
    for the rails and actuations (``ValueError`` naming one the kernels cannot take)."""
    K = len(rails)
    info = np.zeros((max(K, 1), 2), dtype=np.int32)
    packs, acts = [], []
    for k, (rail, act) in enumerate(zip(rails, actuations)):
        try:
            kind, terms, par = rail.kernel_params()
        except ValueError as exc:
            raise ValueError(f"rails[{k}]: {exc}") from None
        try:
            acts.append(act.kernel_params())
        except ValueError as exc:
            raise ValueError(f"actuations[{k}]: {exc}") from None
        info[k] = kind, terms
        packs.append(par)
    rows = max([n_rows] + [p.shape[0] for p in packs + acts])
    rows = rows if any(p.shape[0] > 1 for p in packs + acts) else 1
    P = max([11] + [p.shape[1] for p in packs])
    rail_par = np.zeros((rows, max(K, 1), P))
    act_par = np.zeros((rows, max(K, 1), 5))
    for k, (par, a) in enumerate(zip(packs, acts)):
        rail_par[:, k, : par.shape[1]] = par
        act_par[:, k] = a
    return backend.asarray(info), backend.asarray(rail_par), backend.asarray(act_par)
