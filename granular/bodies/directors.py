"""Director formulation of the rotating rigid body and its energy-momentum scheme, batched.

Paper 000 (Gebhardt & Romero, the rotating rigid body based on a non-twisting frame),
Sects. 3.5 and 5.1, eqs. (56)-(67) and (85)-(91). The nonholonomic extension (80)-(84),
(92)-(94) shares this assembly and lives in :mod:`granular.bodies.nontwisting`; the
discrete Lagrange-d'Alembert comparator in :mod:`granular.bodies.dla`.

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

External moments (68): a moment ``m`` [N m] does virtual work
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
that all unknowns ``x = (q_{n+1} (9), λ̃ (6) [, μ̃ (1)])`` are of order one. The analytic
Jacobian (bilinear constraints: ``∂(H(q̄)ᵀλ̃)/∂q_{n+1} = ½ L(λ̃) ⊗ I₃``) is assembled in
a workspace allocated once; :func:`granular.bodies.newton.solve` does the batched solves.
The predictor is ``q_n + h q̇_n`` with the previous step's multipliers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import rotations as rot
from ..backend import resolve_backend
from . import newton

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
    "DirectorEM",
]

#: Director index pairs (i, j) of the six constraint rows of h (63): h_k = d_i·d_j (i ≠ j)
#: or ½(d_i·d_i - 1).
CONSTRAINT_PAIRS = ((1, 2), (0, 2), (0, 1), (0, 0), (1, 1), (2, 2))


# ------------------------------------------------------------------ inertia (66), (111)


def euler_coefficients(inertia):
    """Euler's inertia coefficients ``𝒥 = ½ tr(J) I - J`` (66), (111).

    inertia: (..., 3, 3) float64, convected inertia tensor J [kg m²].
    Returns (..., 3, 3) float64 [kg m²].
    """
    xp = rot.array_module(inertia)
    tr = xp.trace(inertia, axis1=-2, axis2=-1)
    return 0.5 * tr[..., None, None] * xp.eye(3, dtype=inertia.dtype) - inertia


def inertia_from_euler(euler):
    """Convected inertia ``J = tr(𝒥) I - 𝒥`` from Euler's coefficients (111).

    euler: (..., 3, 3) float64 [kg m²]. Returns (..., 3, 3) float64 [kg m²].
    """
    xp = rot.array_module(euler)
    tr = xp.trace(euler, axis1=-2, axis2=-1)
    return tr[..., None, None] * xp.eye(3, dtype=euler.dtype) - euler


# ------------------------------------------------------------ kinematics and invariants


def _dot(a, b):
    return (a * b).sum(axis=-1)


def _cross(a, b):
    """``a × b`` over the last axis, broadcasting the leading ones (NumPy or CuPy)."""
    xp = rot.array_module(a, b)
    a, b = xp.broadcast_arrays(a, b)
    return xp.stack(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ],
        axis=-1,
    )


def constraints(d):
    """``h(q)`` (63), completed by the normalities (see module docstring).

    d: (N, 3, 3) float64 directors, ``d[:, i]`` = d_{i+1} [1]. Returns (N, 6) float64 [1].
    """
    xp = rot.array_module(d)
    cols = []
    for i, j in CONSTRAINT_PAIRS:
        c = _dot(d[:, i], d[:, j])
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
        c = _dot(d[:, i], v[:, i]) if i == j else _dot(d[:, i], v[:, j]) + _dot(d[:, j], v[:, i])
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
    """``ḋ_i = ω × d_i`` (57). d: (N, 3, 3) [1]; omega: (N, 3) spatial [rad/s] → (N, 3, 3) [1/s]."""
    return _cross(omega[:, None, :], d)


def angular_velocity(d, v):
    """Spatial angular velocity ``ω = ½ Σ_i d_i × ḋ_i`` (exact for ḋ_i = ω × d_i, orthonormal d).

    d: (N, 3, 3) [1]; v: (N, 3, 3) [1/s] → (N, 3) [rad/s].
    """
    return 0.5 * _cross(d, v).sum(axis=1)


def generalized_momenta(euler, v):
    """``π^i = Σ_j 𝒥^{ij} ḋ_j`` (65). euler: (N, 3, 3) [kg m²]; v: (N, 3, 3) [1/s] → (N, 3, 3) [kg m²/s]."""
    return euler @ v


def kinetic_energy(euler, v):
    """``K = ½ Σ_ij 𝒥^{ij} ḋ_i·ḋ_j`` (61), (65). → (N,) float64 [J]."""
    return 0.5 * (v * (euler @ v)).sum(axis=(1, 2))


def spatial_angular_momentum(euler, d, v):
    """``π = Σ_i d_i × π^i`` (cf. (109)). → (N, 3) float64 [kg m²/s]."""
    return _cross(d, euler @ v).sum(axis=1)


def material_angular_momentum(euler, d, v):
    """``Π^i = d_i · π`` (74); for orthonormal d this is ``Λᵀ π``. → (N, 3) float64 [kg m²/s]."""
    pi = spatial_angular_momentum(euler, d, v)
    return (d * pi[:, None, :]).sum(axis=-1)


# ------------------------------------------------------------------------ loads (68)


@dataclass
class ExternalMoment:
    """An external moment on each body, ``m(t, q) = spatial(t) + Σ_k material(t)_k d_k``.

    spatial: ``t -> (N, 3)`` float64 array on the backend, a moment fixed in space [N m],
        or ``None``.
    material: ``t -> (N, 2)`` or ``(N, 3)`` float64 array, the components of a follower
        moment along the directors d1, d2 (, d3) [N m], or ``None``. The loads (115),
        (118) of the paper are material: ``m⊥ = -f(t) (a d1 + b d2)``.

    The generalized forces are ``f^i = ½ m × d_i`` (68), (84); the schemes evaluate them
    with the directors where their equations need them (the midpoint for the EM schemes,
    the nodes for the DLA comparator) and differentiate the material part analytically.
    """

    spatial: Callable | None = None
    material: Callable | None = None

    def evaluate(self, t, n):
        """``(m_spatial (N, 3) or None, c_material (N, 2|3) or None)`` at time ``t`` [s]."""
        ms = None if self.spatial is None else self.spatial(t)
        c = None if self.material is None else self.material(t)
        if ms is not None and tuple(ms.shape) != (n, 3):
            raise ValueError(f"moment.spatial(t) must return shape ({n}, 3), got {tuple(ms.shape)}")
        if c is not None and (c.ndim != 2 or c.shape[0] != n or c.shape[1] not in (2, 3)):
            raise ValueError(f"moment.material(t) must return shape ({n}, 2) or ({n}, 3), got {tuple(c.shape)}")
        return ms, c


def _moment(ms, c, d):
    """``m = ms + Σ_k c_k d_k``: (N, 3) [N m]."""
    m = None if ms is None else ms
    if c is not None:
        mat = (c[:, :, None] * d[:, : c.shape[1]]).sum(axis=1)
        m = mat if m is None else m + mat
    return m


# --------------------------------------------------------------------------- state


@dataclass
class DirectorState:
    """What changes during a run of a director scheme (one row per body).

    d: (N, 3, 3) float64, directors at ``t``; ``d[:, i]`` = d_{i+1} = Λ E_{i+1} [1].
    v: (N, 3, 3) float64, director velocities ḋ_i at ``t`` [1/s].
    lam: (N, 6) float64, multipliers of h (63) of the last step [kg m²/s²].
    mu: (N,) float64, multiplier of the nonholonomic constraint (80) of the last step
        [kg m²/s²] (0 for the standard body).
    v_half: (N, 3, 3) float64, midpoint velocity ``(q_{n+1} - q_n)/h`` of the last step
        [1/s] (equal to ``v`` before the first step).
    t: time [s]. steps: steps taken.
    iterations: (N,) int64, Newton iterations of the last step per body.
    iterations_total: (N,) int64, Newton iterations summed over all steps.
    """

    d: object
    v: object
    lam: object
    mu: object
    v_half: object
    t: float = 0.0
    steps: int = 0
    iterations: object = None
    iterations_total: object = None
    extra: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.d.shape[0])

    def copy(self) -> "DirectorState":
        return DirectorState(
            self.d.copy(), self.v.copy(), self.lam.copy(), self.mu.copy(), self.v_half.copy(), self.t, self.steps,
            self.iterations.copy(), self.iterations_total.copy(), {k: v.copy() for k, v in self.extra.items()},
        )  # fmt: skip


# ------------------------------------------------------------------ common base class


def _as_stack(xp, a, n, name, shape):
    """``a`` as an (n,) + shape float64 array (broadcasting a single ``shape`` value)."""
    arr = xp.asarray(a, dtype=xp.float64)
    if tuple(arr.shape) == shape:
        arr = xp.broadcast_to(arr, (n,) + shape)
    if tuple(arr.shape) != (n,) + shape:
        raise ValueError(f"{name} must have shape {shape} or ({n},) + {shape}, got {tuple(arr.shape)}")
    return xp.ascontiguousarray(arr)


class DirectorScheme:
    """Model (inertia, loads, solver settings), workspace and stepping shared by the
    director schemes. Subclasses define :meth:`_residual` and :meth:`_finish`.

    Parameters
    ----------
    inertia: (3, 3) or (N, 3, 3) float64, convected inertia tensor J [kg m²] (symmetric,
        with positive-definite Euler coefficients 𝒥 = ½ tr(J) I - J, i.e. principal
        moments obeying the triangle inequality strictly). Exactly one of ``inertia`` and
        ``euler`` must be given.
    euler: (3, 3) or (N, 3, 3) float64, Euler's coefficients 𝒥 (66) [kg m²].
    n: number of bodies N; needed when the inertia is a single (3, 3) tensor.
    backend: ``"cpu"``, ``"gpu"``, ``"auto"`` or a :class:`~granular.backend.Backend`.
    moment: :class:`ExternalMoment` or ``None`` (no load).
    rtol: Newton relative tolerance (see :mod:`granular.bodies.newton`), > 0.
    max_iter: Newton iteration cap.
    """

    nonholonomic = False
    a = 0.0
    scheme_name = "director"

    def __init__(self, inertia=None, *, euler=None, n=None, backend="cpu", moment=None, rtol=1e-10, max_iter=25):
        self.backend = resolve_backend(backend)
        xp = self.xp = self.backend.xp
        if (inertia is None) == (euler is None):
            raise ValueError("give exactly one of inertia (J) and euler (Euler coefficients 𝒥)")
        src = inertia if euler is None else euler
        name = "inertia" if euler is None else "euler"
        arr = xp.asarray(src, dtype=xp.float64)
        if arr.ndim not in (2, 3):
            raise ValueError(f"{name} must have shape (3, 3) or (N, 3, 3), got {tuple(arr.shape)}")
        if arr.ndim == 2:
            if n is None:
                raise ValueError(f"{name} is a single (3, 3) tensor: give the number of bodies n")
        elif arr.ndim == 3:
            n = arr.shape[0] if n is None else n
        if n is None or int(n) != n or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        self.n = n = int(n)
        arr = _as_stack(xp, arr, n, name, (3, 3))
        if not bool(xp.isfinite(arr).all()):
            raise ValueError(f"{name} must be finite")
        scale = float(abs(arr).max())
        if not bool((abs(arr - arr.swapaxes(1, 2)) <= 1e-12 * scale).all()):
            raise ValueError(f"{name} must be symmetric (to 1e-12 relative)")
        arr = 0.5 * (arr + arr.swapaxes(1, 2))
        self.euler = euler_coefficients(arr) if euler is None else arr
        self.inertia = inertia_from_euler(self.euler)
        eig = xp.linalg.eigvalsh(self.euler)
        if not bool((eig > 0.0).all()):
            b = int(xp.nonzero((eig <= 0.0).any(axis=1))[0][0])
            raise ValueError(
                f"{name}: Euler coefficients 𝒥 = ½ tr(J) I - J must be positive definite (principal moments of J "
                f"obeying the strict triangle inequality); body {b} has eigenvalues {self.backend.to_host(eig[b])}"
            )
        self._check_inertia(scale)
        self.euler_inv = xp.linalg.inv(self.euler)
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
        k = self.k = 15 + int(self.nonholonomic)
        # workspace, allocated once
        self._x0 = xp.zeros((n, k))
        self._x = xp.zeros((n, k))
        self._r = xp.zeros((n, k))
        self._jac = xp.zeros((n, k, k))
        self._jqq = xp.zeros((n, 3, 3, 3, 3))
        self._lmat = xp.zeros((n, 3, 3))
        self._dpad = xp.zeros((n, 4, 3))  # directors and a zero row, for gathering ∂h/∂q
        src = np.full((6, 3), 3)
        for k, (i, j) in enumerate(CONSTRAINT_PAIRS):
            src[k, i], src[k, j] = j, i
        self._grad_src = xp.asarray(src)
        self._eye3 = xp.eye(3)
        self._d0 = None
        self._v0 = None
        self._h = None
        self._load = (None, None)

    # hooks for subclasses
    def _check_inertia(self, scale):
        pass

    def _check_moment(self):
        pass

    def _check_initial(self, d, omega, tol):
        pass

    # -------------------------------------------------------------------- state
    def state(self, directors, omega, t=0.0, tol=1e-10) -> DirectorState:
        """Initial state (67) from directors and the spatial angular velocity.

        directors: (3, 3) or (N, 3, 3) float64, ``directors[:, i]`` = d_{i+1} [1];
            orthonormal and right-handed (``d3 = d1 × d2``) to ``tol``.
        omega: (3,) or (N, 3) float64, spatial angular velocity ω [rad/s];
            ``ḋ_i = ω × d_i``.
        t: initial time [s].
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
        hand = _dot(_cross(d[:, 0], d[:, 1]), d[:, 2])
        if not bool((hand > 0.0).all()):
            b = int(xp.nonzero(hand <= 0.0)[0][0])
            raise ValueError(f"directors: body {b} is left-handed (d3 = -d1 x d2); need d3 = d1 x d2")
        self._check_initial(d, w, tol)
        v = director_velocities(d, w)
        z = xp.zeros(n, dtype=xp.int64)
        return DirectorState(d, v, xp.zeros((n, 6)), xp.zeros(n), v.copy(), float(t), 0, z, z.copy())

    # --------------------------------------------------------------------- step
    def newton_system(self, state: DirectorState, h: float):
        """Set up the nonlinear system of one step from ``state`` with step ``h`` [s].

        Returns ``(fun, x0)``: ``fun(x) -> (r, J)`` with ``x`` (N, k) the unknowns
        ``(q_{n+1} (9), λ̃ (6)[, μ̃ (1)])``, ``r`` (N, k) the scaled residual and ``J``
        (N, k, k) its analytic Jacobian (workspace buffers, overwritten by the next call);
        ``x0`` (N, k) the predictor. :meth:`step` passes them to
        :func:`granular.bodies.newton.solve`; tests use them to check the Jacobian.
        """
        if not (isinstance(h, (int, float, np.floating)) and np.isfinite(h) and h > 0.0):
            raise ValueError(f"h must be a finite number > 0, got {h!r}")
        if tuple(state.d.shape) != (self.n, 3, 3):
            raise ValueError(f"state has shape {tuple(state.d.shape)}, the scheme expects ({self.n}, 3, 3)")
        h = float(h)
        self._h = h
        self._d0, self._v0 = state.d, state.v
        self._t0 = state.t
        self._prepare(state, h)
        return self._residual, self._x0

    def step(self, state: DirectorState, h: float) -> newton.NewtonResult:
        """Advance all bodies by one step ``h`` [s] (> 0); ``state`` is updated in place.

        Returns the :class:`~granular.bodies.newton.NewtonResult` (iterations per body).
        Raises :class:`~granular.bodies.newton.NewtonError` (state untouched) when a body
        does not converge.
        """
        fun, x0 = self.newton_system(state, h)
        h = self._h
        ctx = f"{self.scheme_name} step {state.steps + 1} at t = {state.t:.6g} s, h = {h:g} s"
        res = newton.solve(fun, x0, rtol=self.rtol, max_iter=self.max_iter, out=self._x, context=ctx)
        self._finish(state, res.x, h)
        state.t = self._t0 + h
        state.steps += 1
        state.iterations = res.iterations
        state.iterations_total = state.iterations_total + res.iterations
        return res

    def run(self, state, h, steps, callback=None, every=1):
        """``steps`` steps of size ``h``; ``callback(state)`` after every ``every``-th step."""
        for s in range(int(steps)):
            self.step(state, h)
            if callback is not None and (s + 1) % every == 0:
                callback(state)
        return state

    # ------------------------------------------------------------ assembly helpers
    def _lambda_matrix(self, lt):
        """``L(λ̃)`` (N, 3, 3): ``H(q)ᵀ λ̃`` for director i is ``Σ_j L_ij d_j``."""
        L = self._lmat
        for k, (i, j) in enumerate(CONSTRAINT_PAIRS):
            L[:, i, j] = lt[:, k]
            L[:, j, i] = lt[:, k]
        return L

    def _constraint_gradients(self, d):
        """``∂h/∂q`` at ``d``: (N, 6, 3, 3), row k, director block i (one gather, no loop)."""
        pad = self._dpad
        pad[:, :3] = d
        return pad[:, self._grad_src]

    def _constraint_blocks(self, jac, dcol, drow):
        """Columns ``H(dcol)ᵀ`` (∂/∂λ̃) and rows ``H(drow)`` (∂h(q_{n+1})/∂q_{n+1})."""
        for k, (i, j) in enumerate(CONSTRAINT_PAIRS):
            c = 9 + k
            jac[:, 3 * i : 3 * i + 3, c] = dcol[:, j]
            jac[:, 3 * j : 3 * j + 3, c] = dcol[:, i]
            jac[:, c, 3 * i : 3 * i + 3] = drow[:, j]
            jac[:, c, 3 * j : 3 * j + 3] = drow[:, i]

    def _kron_block(self, B):
        """``jqq = B ⊗ I₃`` in the (N, 3, 3, 3, 3) workspace, layout (body, i, a, j, b)."""
        jqq = self._jqq
        jqq.fill(0.0)
        for a in range(3):
            jqq[:, :, a, :, a] = B
        return jqq

    def _load_jacobian(self, jqq, ms, c, dbar, factor):
        """Add ``factor · ∂f^i/∂d̄_j`` of f^i = ½ m × d̄_i, m = ms + Σ c_k d̄_k (68), to jqq:
        ``∂f^i/∂d̄_j = ½ (-c_j S(d̄_i) + δ_ij S(m))``."""
        m = _moment(ms, c, dbar)
        if m is None:
            return
        sm = rot.skew(m)
        for i in range(3):
            jqq[:, i, :, i, :] += factor * 0.5 * sm
        if c is not None:
            sd = rot.skew(dbar)  # (N, 3, 3, 3): S(d̄_i)
            for j in range(c.shape[1]):
                jqq[:, :, :, j, :] -= (factor * 0.5) * c[:, j, None, None, None] * sd

    def _nonholonomic_force(self, dref):
        """``G(q)ᵀ``: (N, 3, 3) with rows ((1-a) d2, -a d1, 0) (83)."""
        g = self.xp.zeros_like(dref)
        g[:, 0] = (1.0 - self.a) * dref[:, 1]
        g[:, 1] = -self.a * dref[:, 0]
        return g

    # ---------------------------------------------------------- diagnostics
    def kinetic_energy(self, state):
        """(N,) [J], (61) at the nodes."""
        return kinetic_energy(self.euler, state.v)

    def spatial_angular_momentum(self, state):
        """(N, 3) [kg m²/s], π at the nodes."""
        return spatial_angular_momentum(self.euler, state.d, state.v)

    def material_angular_momentum(self, state):
        """(N, 3) [kg m²/s], Π^i = d_i·π at the nodes (74)."""
        return material_angular_momentum(self.euler, state.d, state.v)

    def constraint_residual(self, state):
        """(N,) float64, ``max_k |h_k(q_n)|`` (63) [1]."""
        return abs(constraints(state.d)).max(axis=1)

    def hidden_constraint_residual(self, state):
        """(N,) float64, ``max_k |(H(q_n) q̇_n)_k|`` [1/s]."""
        return abs(hidden_constraints(state.d, state.v)).max(axis=1)


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

    scheme_name = "director EM"

    def _prepare(self, state, h):
        x0 = self._x0
        n = self.n
        x0[:, :9] = (state.d + h * state.v).reshape(n, 9)
        x0[:, 9:15] = (0.5 * h * h) * state.lam
        if self.nonholonomic:
            x0[:, 15] = (0.5 * h * h) * state.mu
        self._load = (None, None) if self.moment is None else self.moment.evaluate(state.t + 0.5 * h, n)

    def _residual(self, x):
        """Residual of (86)/(92) times h²/2 and its Jacobian, for all bodies."""
        n, h, a = self.n, self._h, self.a
        d0, v0 = self._d0, self._v0
        r, jac = self._r, self._jac
        d1 = x[:, :9].reshape(n, 3, 3)
        lt = x[:, 9:15]
        dbar = 0.5 * (d0 + d1)
        dq = d1 - d0
        L = self._lambda_matrix(lt)
        rq = self.euler @ (dq - h * v0) + L @ dbar
        B = self.euler + 0.5 * L
        if self.nonholonomic:
            mu = x[:, 15]
            g = self._nonholonomic_force(dbar)
            rq += mu[:, None, None] * g
            B[:, 0, 1] += 0.5 * (1.0 - a) * mu
            B[:, 1, 0] -= 0.5 * a * mu
        jqq = self._kron_block(B)
        ms, c = self._load
        m = _moment(ms, c, dbar)
        if m is not None:
            # -(h²/2) Q(t_{n+½}, q̄), Q_i = ½ m × d̄_i (68); ∂/∂q_{n+1} = ½ ∂/∂q̄
            rq -= (0.25 * h * h) * _cross(m[:, None, :], dbar)
            self._load_jacobian(jqq, ms, c, dbar, -0.25 * h * h)
        r[:, :9] = rq.reshape(n, 9)
        r[:, 9:15] = constraints(d1)
        jac[:, :9, :9] = jqq.reshape(n, 9, 9)
        self._constraint_blocks(jac, dbar, d1)
        if self.nonholonomic:
            r[:, 15] = (1.0 - a) * _dot(dq[:, 0], dbar[:, 1]) - a * _dot(dq[:, 1], dbar[:, 0])
            jac[:, :9, 15] = g.reshape(n, 9)
            jac[:, 15, 0:3] = -0.5 * a * dq[:, 1] + (1.0 - a) * dbar[:, 1]
            jac[:, 15, 3:6] = 0.5 * (1.0 - a) * dq[:, 0] - a * dbar[:, 0]
            jac[:, 15, 6:9] = 0.0
        return r, jac

    def _finish(self, state, x, h):
        n = self.n
        d1 = x[:, :9].reshape(n, 3, 3)
        vh = (d1 - state.d) / h
        state.v = 2.0 * vh - state.v
        state.v_half = vh
        state.d = d1.copy()
        state.lam = (2.0 / (h * h)) * x[:, 9:15]
        if self.nonholonomic:
            state.mu = (2.0 / (h * h)) * x[:, 15]
