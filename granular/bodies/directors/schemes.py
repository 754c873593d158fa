"""Director formulation of the rotating rigid body and its energy-momentum scheme, batched.

Paper 000 (Gebhardt & Romero, the rotating rigid body based on a non-twisting frame),
Sects. 3.5 and 5.1, eqs. (56)-(67) and (85)-(91). The nonholonomic extension (80)-(84),
(92)-(94) shares this assembly and lives in :mod:`granular.bodies.directors.nontwisting`; the
discrete Lagrange-d'Alembert comparator in :mod:`granular.bodies.directors.dla`.

Model (56)-(67)
---------------
The configuration of a body with a fixed point is ``q = (d1, d2, d3)``, three spatial
directors with ``d_i = Λ D_i`` (so ``Λ = [d1 d2 d3]``, columns; ``Λ`` maps body-frame
vectors to spatial ones as everywhere in the engine). Arrays hold them row-wise:
``d[b, i]`` is director ``d_{i+1}`` of body ``b``. The kinetic energy is

    K = ½ Σ_ij 𝒥^{ij} ḋ_i·ḋ_j = ½ q̇ᵀ M q̇,   M = 𝒥 ⊗ I₃   (61), (65), (88)

with Euler's inertia coefficients ``𝒥^{ij} = ∫ρ0 θ^i θ^j`` (66), related to the convected
inertia tensor by ``J = tr(𝒥) I - 𝒥``, ``𝒥 = ½ tr(J) I - J`` (111). The generalized
momenta are ``π^i = Σ_j 𝒥^{ij} ḋ_j`` (65) and the spatial angular momentum is
``π = Σ_i d_i × π^i`` (cf. (109)); the material one is ``Π^i = d_i · π`` (74).

Constraints (63). The paper's ``h`` lists only the three orthogonality conditions; for the
directors to stay *unit* vectors (``Q ⊂ S²×S²×S²``, (56)) we also impose the three
normalities, the usual choice for director formulations (Romero & Armero 2002,
Betsch & Steinmann 2002)::

    h(q) = (d2·d3, d1·d3, d1·d2, ½(d1·d1 - 1), ½(d2·d2 - 1), ½(d3·d3 - 1))   (6 rows)

All six are quadratic, so the average-vector-field Jacobian (89) is exactly the Jacobian
at the midpoint, ``H_d(q_n, q_{n+1}) = H(q_{n+½})``, and (90) ``H_d Δq = h(q_{n+1}) -
h(q_n)`` holds identically.

External moments (68): a moment ``m`` [M L²/T²] does virtual work
``Σ_i ½ (d_i × δd_i)·m``, i.e. generalized forces ``f^i = ½ m × d_i``.

Energy-momentum scheme (86)-(88)
--------------------------------
With ``q_{n+½} = ½(q_n + q_{n+1})`` and ``h`` the time step, unknowns ``q_{n+1}`` and
``λ_{n+½}``::

    (2/h²) M (q_{n+1} - q_n - h q̇_n) - Q^ext_{n+½} + H(q_{n+½})ᵀ λ = 0     (86), (87b)
    h(q_{n+1}) = 0
    q̇_{n+1} = (2/h)(q_{n+1} - q_n) - q̇_n                                    (after (87))

``Q^ext_{n+½}`` is the moment (68) evaluated at ``t_{n+½}`` with the midpoint directors,
``f^i = ½ m(t_{n+½}, q_{n+½}) × d_{i,n+½}`` (our reading: the paper does not define it;
averaging the node loads instead, ``½(Q(t_n, q_n) + Q(t_{n+1}, q_{n+1}))``, gave the same
accuracy on the cases of Sect. 6).
Without load, ``K`` and ``π`` are conserved exactly (91), up to the Newton tolerance and
round-off. The node velocities ``q̇_n`` satisfy the constraints only at the midpoints
(``H(q_{n+½})(q̇_n + q̇_{n+1}) = 0``, (90)); at the nodes the hidden constraints
``H(q_n) q̇_n`` are violated at O(h²) when the motion is not a uniform rotation. That is a
property of the scheme, reported by :func:`hidden_constraints`.

Newton (implementation)
-----------------------
The residual is multiplied by ``h²/2`` and the multipliers scaled as ``λ̃ = (h²/2) λ`` so
that all unknowns ``x = (q_{n+1} (9), λ̃ (6) [, μ̃ (1)])`` are of order one. Each step is
the per-body law ``director_body`` of :mod:`kernels.bodies_directors` (compiled for the
CPU and the GPU): the analytic Jacobian (bilinear constraints:
``∂(H(q̄)ᵀλ̃)/∂q_{n+1} = ½ L(λ̃) ⊗ I₃``) and a dense LU of each body's own 15 × 15
(16 × 16) system, each body stopping on its own tolerance. The predictor is
``q_n + h q̇_n`` with the previous step's multipliers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ... import rotations as rot
from ..core import BodyState, Scheme, inertia_tensors

__all__ = [
    "CONSTRAINT_PAIRS",
    "euler_coefficients",
    "inertia_from_euler",
    "constraints",
    "hidden_constraints",
    "directors_from_quaternion",
    "directors_from_matrix",
    "director_velocities",
    "angular_velocity",
    "generalized_momenta",
    "kinetic_energy",
    "spatial_angular_momentum",
    "material_angular_momentum",
    "ExternalMoment",
    "DirectorState",
    "DirectorScheme",
    "DirectorEM",
]

#: Director index pairs (i, j) of the six constraint rows of h (63): h_k = d_i·d_j (i ≠ j)
#: or ½(d_i·d_i - 1).
CONSTRAINT_PAIRS = ((1, 2), (0, 2), (0, 1), (0, 0), (1, 1), (2, 2))


# ------------------------------------------------------------------ inertia (66), (111)


def euler_coefficients(inertia):
    """Euler's inertia coefficients ``𝒥 = ½ tr(J) I - J`` (66), (111).

    inertia: (..., 3, 3) float64, convected inertia tensor J [M L²].
    Returns (..., 3, 3) float64 [M L²].
    """
    xp = rot.array_module(inertia)
    tr = xp.trace(inertia, axis1=-2, axis2=-1)
    return 0.5 * tr[..., None, None] * xp.eye(3, dtype=inertia.dtype) - inertia


def inertia_from_euler(euler):
    """Convected inertia ``J = tr(𝒥) I - 𝒥`` from Euler's coefficients (111).

    euler: (..., 3, 3) float64 [M L²]. Returns (..., 3, 3) float64 [M L²].
    """
    xp = rot.array_module(euler)
    tr = xp.trace(euler, axis1=-2, axis2=-1)
    return tr[..., None, None] * xp.eye(3, dtype=euler.dtype) - euler


# ------------------------------------------------------------ kinematics and invariants


def constraints(d):
    """``h(q)`` (63), completed by the normalities (see module docstring).

    d: (N, 3, 3) float64 directors, ``d[:, i]`` = d_{i+1} [1]. Returns (N, 6) float64 [1].
    """
    xp = rot.array_module(d)
    cols = []
    for i, j in CONSTRAINT_PAIRS:
        c = rot.dot(d[:, i], d[:, j])
        cols.append(0.5 * (c - 1.0) if i == j else c)
    return xp.stack(cols, axis=-1)


def hidden_constraints(d, v):
    """Velocity-level constraints ``H(q) q̇`` (time derivative of (63)).

    d: (N, 3, 3) directors [1]; v: (N, 3, 3) director velocities [1/s].
    Returns (N, 6) float64 [1/s]: ``d_i·ḋ_j + d_j·ḋ_i`` (i ≠ j), ``d_i·ḋ_i``.
    """
    xp = rot.array_module(d, v)
    cols = []
    for i, j in CONSTRAINT_PAIRS:
        c = rot.dot(d[:, i], v[:, i]) if i == j else rot.dot(d[:, i], v[:, j]) + rot.dot(d[:, j], v[:, i])
        cols.append(c)
    return xp.stack(cols, axis=-1)


def directors_from_matrix(R):
    """Directors ``d_i = Λ E_i`` (the columns of Λ) as rows: (N, 3, 3) → (N, 3, 3).

    R: (N, 3, 3) float64 rotation matrices, body → spatial [1].
    """
    return rot.array_module(R).ascontiguousarray(R.swapaxes(-1, -2))


def directors_from_quaternion(q):
    """Directors of unit quaternions (scalar-first Hamilton): (N, 4) → (N, 3, 3) [1]."""
    return directors_from_matrix(rot.quat_to_matrix(q))


def director_velocities(d, omega):
    """``ḋ_i = ω × d_i`` (57). d: (N, 3, 3) [1]; omega: (N, 3) spatial [1/T] → (N, 3, 3) [1/s]."""
    return rot.cross(omega[:, None, :], d)


def angular_velocity(d, v):
    """Spatial angular velocity ``ω = ½ Σ_i d_i × ḋ_i`` (exact for ḋ_i = ω × d_i, orthonormal d).

    d: (N, 3, 3) [1]; v: (N, 3, 3) [1/s] → (N, 3) [1/T].
    """
    return 0.5 * rot.cross(d, v).sum(axis=1)


def generalized_momenta(euler, v):
    """``π^i = Σ_j 𝒥^{ij} ḋ_j`` (65). euler: (N, 3, 3) [M L²]; v: (N, 3, 3) [1/s] → (N, 3, 3) [M L²/T]."""
    return euler @ v


def kinetic_energy(euler, v):
    """``K = ½ Σ_ij 𝒥^{ij} ḋ_i·ḋ_j`` (61), (65). → (N,) float64 [M L²/T²]."""
    return 0.5 * (v * (euler @ v)).sum(axis=(1, 2))


def spatial_angular_momentum(euler, d, v):
    """``π = Σ_i d_i × π^i`` (cf. (109)). → (N, 3) float64 [M L²/T]."""
    return rot.cross(d, euler @ v).sum(axis=1)


def material_angular_momentum(euler, d, v):
    """``Π^i = d_i · π`` (74); for orthonormal d this is ``Λᵀ π``. → (N, 3) float64 [M L²/T]."""
    pi = spatial_angular_momentum(euler, d, v)
    return (d * pi[:, None, :]).sum(axis=-1)


# ------------------------------------------------------------------------ loads (68)


@dataclass
class ExternalMoment:
    """An external moment on each body, ``m(t, q) = f(t) [spatial + Σ_k material_k d_k]``.

    spatial: a moment fixed in space [M L²/T²]: a (3,) or (N, 3) float64 array (scaled by
        ``profile``), or a callable ``t -> (N, 3)`` array on the backend, or ``None``.
    material: the components of a follower moment along the directors d1, d2 (, d3)
        [M L²/T²]: a (2,), (3,), (N, 2) or (N, 3) array (scaled by ``profile``), or a callable
        ``t -> (N, 2)`` or ``(N, 3)`` array, or ``None``. The loads (115), (118) of the
        paper are material: ``m⊥ = -f(t) (a d1 + b d2)``.
    profile: ``t -> float``, the factor ``f(t)`` of the array forms (default 1).

    The generalized forces are ``f^i = ½ m × d_i`` (68), (84); the schemes evaluate them
    with the directors where their equations need them (the midpoint for the EM schemes,
    the nodes for the DLA comparator) and differentiate the material part analytically.
    With arrays and a profile the kernels take blocks of many steps per launch (only
    ``f`` is evaluated on the host, once per step); a callable is evaluated on the host
    at every step (one step per launch).
    """

    spatial: object = None
    material: object = None
    profile: Callable | None = None

    @property
    def per_step(self) -> bool:
        """True when a component is a callable (evaluated on the host at every step)."""
        return callable(self.spatial) or callable(self.material)

    def factor(self, t) -> float:
        return 1.0 if self.profile is None else float(self.profile(t))

    def evaluate(self, t, n):
        """``(m_spatial (N, 3) or None, c_material (N, 2|3) or None)`` at time ``t`` [T]."""
        ms, c = self.spatial, self.material
        if ms is not None:
            ms = ms(t) if callable(ms) else self.factor(t) * _rows_of(ms, n, "moment.spatial", (3,))
        if c is not None:
            c = c(t) if callable(c) else self.factor(t) * _rows_of(c, n, "moment.material", (2, 3))
        if ms is not None and tuple(ms.shape) != (n, 3):
            raise ValueError(f"moment.spatial(t) must return shape ({n}, 3), got {tuple(ms.shape)}")
        if c is not None and (c.ndim != 2 or c.shape[0] != n or c.shape[1] not in (2, 3)):
            raise ValueError(f"moment.material(t) must return shape ({n}, 2) or ({n}, 3), got {tuple(c.shape)}")
        return ms, c


def _rows_of(a, n, name, widths, xp=None):
    """``a`` as a contiguous, writable (n, w) float64 array (a copy) on ``xp`` (default: the
    array module of ``a``); a kernel argument may not be a read-only broadcast view."""
    xp = rot.array_module(a) if xp is None else xp
    a = xp.asarray(a, dtype=xp.float64)
    if a.ndim == 1:
        a = a[None]
    if a.ndim != 2 or a.shape[1] not in widths or a.shape[0] not in (1, n):
        raise ValueError(f"{name} must have shape ({widths[-1]},) or ({n}, {widths[-1]}), got {tuple(a.shape)}")
    return xp.broadcast_to(a, (n, a.shape[1])).copy()


def _moment(ms, c, d):
    """``m = ms + Σ_k c_k d_k``: (N, 3) [M L²/T²]."""
    m = None if ms is None else ms
    if c is not None:
        mat = (c[:, :, None] * d[:, : c.shape[1]]).sum(axis=1)
        m = mat if m is None else m + mat
    return m


# --------------------------------------------------------------------------- state


@dataclass
class DirectorState(BodyState):
    """What changes during a run of a director scheme (one row per body).

    d: (N, 3, 3) float64, directors at ``t``; ``d[:, i]`` = d_{i+1} = Λ E_{i+1} [1].
    v: (N, 3, 3) float64, director velocities ḋ_i at ``t`` [1/s].
    lam: (N, 6) float64, multipliers of h (63) of the last step [M L²/T²].
    mu: (N,) float64, multiplier of the nonholonomic constraint (80) of the last step
        [M L²/T²] (0 for the standard body).
    v_half: (N, 3, 3) float64, midpoint velocity ``(q_{n+1} - q_n)/h`` of the last step
        [1/s] (equal to ``v`` before the first step).
    lam_end, mu_end: (N, 6), (N,) float64, the DLA comparator's end-of-step multipliers of
        its velocity projection [M L²/T²] (0 for the EM schemes).
    iterations: (N,) int64, Newton iterations of the last step per body.
    iterations_total: (N,) int64, Newton iterations summed over all steps.
    t: time [T]. step: steps taken.
    """

    d: object
    v: object
    lam: object
    mu: object
    v_half: object
    lam_end: object
    mu_end: object
    iterations: object
    iterations_total: object


# ------------------------------------------------------------------ common base class


def _as_stack(xp, a, n, name, shape):
    """``a`` as an (n,) + shape float64 array (broadcasting a single ``shape`` value)."""
    arr = xp.asarray(a, dtype=xp.float64)
    if tuple(arr.shape) == shape:
        arr = xp.broadcast_to(arr, (n,) + shape)
    if tuple(arr.shape) != (n,) + shape:
        raise ValueError(f"{name} must have shape {shape} or ({n},) + {shape}, got {tuple(arr.shape)}")
    return xp.ascontiguousarray(arr)


class DirectorScheme(Scheme):
    """Model (inertia, loads, solver settings) and stepping shared by the director schemes.

    Parameters
    ----------
    inertia: convected inertia tensor J [M L²]: (3,) principal moments, (3, 3), or per
        body (N, 3) or (N, 3, 3) (:func:`~granular.bodies.core.inertia_tensors`);
        symmetric, with positive-definite Euler coefficients 𝒥 = ½ tr(J) I - J, i.e.
        principal moments obeying the triangle inequality strictly. Exactly one of
        ``inertia`` and ``euler`` must be given.
    euler: Euler's coefficients 𝒥 (66) [M L²], in the same four shapes.
    n: number of bodies N; needed when the inertia is shared ((3,) or (3, 3)).
    backend: ``"cpu"``, ``"gpu"``, ``"auto"`` or a :class:`~granular.backend.Backend`.
    moment: :class:`ExternalMoment` or ``None`` (no load).
    rtol: Newton relative tolerance (``‖Δx‖∞ <= rtol ‖x‖∞``), > 0.
    max_iter: Newton iteration cap.
    """

    nonholonomic = False
    a = 0.0
    scheme_name = "director"
    state_type = DirectorState
    implicit = True
    energy_key = "kinetic_energy"
    quantities = ("newton residual",)
    _dla = 0

    def __init__(self, inertia=None, *, euler=None, n=None, backend="cpu", moment=None, rtol=1e-10, max_iter=25):
        self._init_backend(backend)
        if (inertia is None) == (euler is None):
            raise ValueError("give exactly one of inertia (J) and euler (Euler coefficients 𝒥)")
        src = inertia if euler is None else euler
        name = "inertia" if euler is None else "euler"
        # checked and set up on the host with NumPy (per matrix), then copied to the
        # backend: a body's parameters are the same bits alone and in any batch
        # shape, finite, symmetric; definiteness is that of the Euler coefficients, below
        arr, per_body = inertia_tensors(src, name, definite=False)
        if per_body:
            n = arr.shape[0] if n is None else n
        elif n is None:
            raise ValueError(f"{name} is shared by every body ((3,) or (3, 3)): give the number of bodies n")
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        self.n = n = int(n)
        arr = _as_stack(np, arr if per_body else arr[0], n, name, (3, 3))
        scale = float(abs(arr).max())
        arr = 0.5 * (arr + arr.swapaxes(1, 2))
        E = np.ascontiguousarray(euler_coefficients(arr) if euler is None else arr)
        eig = np.linalg.eigvalsh(E)
        if not bool((eig > 0.0).all()):
            b = int(np.nonzero((eig <= 0.0).any(axis=1))[0][0])
            raise ValueError(
                f"{name}: Euler coefficients 𝒥 = ½ tr(J) I - J must be positive definite (principal moments of J "
                f"obeying the strict triangle inequality); body {b} has eigenvalues {eig[b]}"
            )
        be = self.backend
        self.euler = be.asarray(E)
        self.inertia = be.asarray(inertia_from_euler(E))
        self.euler_inv = be.asarray(np.ascontiguousarray(np.linalg.inv(E)))
        self._check_inertia(scale)
        if moment is not None and not isinstance(moment, ExternalMoment):
            raise ValueError("moment must be an ExternalMoment or None")
        self.moment = moment
        self._check_moment()
        if not (rtol > 0.0):
            raise ValueError(f"rtol must be > 0, got {rtol!r}")
        self.rtol = float(rtol)
        if int(max_iter) != max_iter or max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
        self.max_iter = int(max_iter)
        self.k = 15 + int(self.nonholonomic)
        self._no_load = self.xp.zeros((1, 1, 3))

    # hooks for subclasses
    def _check_inertia(self, scale):
        pass

    def _check_moment(self):
        pass

    def _check_initial(self, d, omega, tol):
        pass

    def _check_width(self, c):
        pass

    # -------------------------------------------------------------------- state
    def state(self, directors, omega, t=0.0, tol=1e-10) -> DirectorState:
        """Initial state (67) from directors and the spatial angular velocity.

        directors: (3, 3) or (N, 3, 3) float64, ``directors[:, i]`` = d_{i+1} [1];
            orthonormal and right-handed (``d3 = d1 × d2``) to ``tol``.
        omega: (3,) or (N, 3) float64, spatial angular velocity ω [1/T];
            ``ḋ_i = ω × d_i``.
        t: initial time [T].
        """
        xp, n = self.xp, self.n
        d = _as_stack(xp, directors, n, "directors", (3, 3))
        w = _as_stack(xp, omega, n, "omega", (3,))
        if not bool(xp.isfinite(d).all()) or not bool(xp.isfinite(w).all()):
            raise ValueError("directors and omega must be finite")
        res = abs(constraints(d)).max(axis=1)
        if not bool((res <= tol).all()):
            b = int(xp.nonzero(res > tol)[0][0])
            raise ValueError(f"directors: body {b} violates orthonormality (63) by {float(res[b]):.3e} > tol {tol:g}")
        hand = rot.dot(rot.cross(d[:, 0], d[:, 1]), d[:, 2])
        if not bool((hand > 0.0).all()):
            b = int(xp.nonzero(hand <= 0.0)[0][0])
            raise ValueError(f"directors: body {b} is left-handed (d3 = -d1 x d2); need d3 = d1 x d2")
        self._check_initial(d, w, tol)
        v = director_velocities(d, w)
        z = xp.zeros(n, dtype=xp.int64)
        return DirectorState(d, v, xp.zeros((n, 6)), xp.zeros(n), v.copy(), xp.zeros((n, 6)), xp.zeros(n), z,
                             z.copy(), t=float(t))  # fmt: skip

    def _check_state(self, state):
        if not isinstance(state, DirectorState) or tuple(state.d.shape) != (self.n, 3, 3):
            shape = tuple(getattr(getattr(state, "d", None), "shape", ()))
            raise ValueError(f"state has shape {shape}, the scheme expects ({self.n}, 3, 3)")

    # --------------------------------------------------------------------- step
    def block_steps(self):
        return 1 if self.moment is not None and self.moment.per_step else self.max_block

    def _load_times(self):
        """Offsets (in h) of the load evaluations of one step: the midpoint (EM)."""
        return (0.5,)

    def _loads(self, state, h, k):
        """``flags, ms, mc, prof`` for the kernel (see :mod:`kernels.bodies_directors`)."""
        xp, n = self.xp, self.n
        offsets = self._load_times()
        m = self.moment
        if m is None or (m.spatial is None and m.material is None):
            return 0, self._no_load, self._no_load, xp.ones((max(k, 1), len(offsets)))
        times = self._times(state, h, k, offsets)
        flags = (1 if m.spatial is not None else 0) | (2 if m.material is not None else 0)
        if m.per_step:  # one step: the callables' values at each load time, factor 1
            vals = [m.evaluate(float(t), n) for t in times[0]]
            ms = xp.stack([v[0] for v in vals]) if m.spatial is not None else self._no_load
            mc = self._no_load
            if m.material is not None:
                for v in vals:
                    self._check_width(v[1])
                mc = xp.stack([_pad3(xp, v[1]) for v in vals])
            return flags, xp.ascontiguousarray(ms), xp.ascontiguousarray(mc), xp.ones((1, len(offsets)))
        ms = self._no_load if m.spatial is None else _rows_of(m.spatial, n, "moment.spatial", (3,), xp)[None]
        mc = self._no_load
        if m.material is not None:
            c = _rows_of(m.material, n, "moment.material", (2, 3), xp)
            self._check_width(c)
            mc = _pad3(xp, c)[None]
        prof = np.array([[m.factor(t) for t in row] for row in times])
        return flags, xp.ascontiguousarray(ms), xp.ascontiguousarray(mc), self.backend.asarray(prof)

    def _launch(self, state, out, h, k, status, value):
        flags, ms, mc, prof = self._loads(state, h, k)
        s = state
        self.kernels.directors(self._dla, int(self.nonholonomic), k, h, self.rtol, self.max_iter, float(self.a),
                               self.euler, self.euler_inv, flags, ms, mc, prof, s.d, s.v, s.lam, s.mu, s.v_half,
                               s.lam_end, s.mu_end, s.iterations_total, out.d, out.v, out.lam, out.mu, out.v_half,
                               out.lam_end, out.mu_end, out.iterations, out.iterations_total, status,
                               value)  # fmt: skip

    # ---------------------------------------------------------- diagnostics
    def kinetic_energy(self, state):
        """(N,) [M L²/T²], (61) at the nodes."""
        return kinetic_energy(self.euler, state.v)

    def spatial_angular_momentum(self, state):
        """(N, 3) [M L²/T], π at the nodes."""
        return spatial_angular_momentum(self.euler, state.d, state.v)

    def material_angular_momentum(self, state):
        """(N, 3) [M L²/T], Π^i = d_i·π at the nodes (74)."""
        return material_angular_momentum(self.euler, state.d, state.v)

    def constraint_residual(self, state):
        """(N,) float64, ``max_k |h_k(q_n)|`` (63) [1]."""
        return abs(constraints(state.d)).max(axis=1)

    def hidden_constraint_residual(self, state):
        """(N,) float64, ``max_k |(H(q_n) q̇_n)_k|`` [1/s]."""
        return abs(hidden_constraints(state.d, state.v)).max(axis=1)

    def invariants(self, state):
        """``kinetic_energy`` (N,) [M L²/T²] (61), ``angular_momentum`` (N, 3) [M L²/T] (π),
        ``material_angular_momentum`` (N, 3) (74), ``constraint_residual``,
        ``hidden_constraint_residual`` (N,)."""
        return {"kinetic_energy": self.kinetic_energy(state),
                "angular_momentum": self.spatial_angular_momentum(state),
                "material_angular_momentum": self.material_angular_momentum(state),
                "constraint_residual": self.constraint_residual(state),
                "hidden_constraint_residual": self.hidden_constraint_residual(state)}  # fmt: skip

    def body_angular_velocity(self, state):
        """(N, 3) [1/T]: ``Ω_i = d_i·ω`` with ``ω = ½ Σ_i d_i × ḋ_i``."""
        w = angular_velocity(state.d, state.v)
        return (state.d * w[:, None, :]).sum(axis=-1)


def _pad3(xp, c):
    """Material components (N, 2|3) as (N, 3) (a zero d3 component)."""
    if c.shape[1] == 3:
        return c
    return xp.concatenate([c, xp.zeros((c.shape[0], 1))], axis=1)


class DirectorEM(DirectorScheme):
    """Energy-momentum scheme (85)-(91) for the standard rigid body in directors, batched.

    See the module docstring for the equations. Conserves, without load, the kinetic
    energy and the spatial angular momentum exactly (91) (to the Newton tolerance and
    round-off); second order. Constructor parameters: :class:`DirectorScheme`.

    Example::

        em = DirectorEM(inertia=J, n=1000)           # J: (3, 3) or (1000, 3, 3)
        s = em.state(directors, omega)               # (1000, 3, 3), (1000, 3)
        em.run(s, h=0.005, steps=1000)
    """

    name = "directors em"
    scheme_name = "director EM"
