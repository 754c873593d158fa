"""Array reference of paper 000's schemes (the package's implementation before the
per-body kernels): the director EM scheme (86)-(94) and the DLA comparator, standard and
non-twisting, assembling every body's residual and Jacobian as (N, 16) and (N, 16, 16)
arrays for :func:`granular.bodies.newton.solve`. Same constructor, state and diagnostics
as the package's classes; ``newton_system(state, h)`` exposes the residual for
finite-difference checks."""

from __future__ import annotations

import numpy as np

from granular import rotations as rot
from granular.backend import resolve_backend
from granular.bodies import newton
from granular.bodies.directors.nontwisting import (
    NonTwistingChecks,
    _check_material_width,
    nonholonomic_momenta,
    twist_rate,
)
from granular.bodies.directors.schemes import (
    CONSTRAINT_PAIRS,
    DirectorState,
    ExternalMoment,
    _moment,
    constraints,
    director_velocities,
    euler_coefficients,
    hidden_constraints,
    inertia_from_euler,
    kinetic_energy,
    material_angular_momentum,
    spatial_angular_momentum,
)
from granular.rotations import cross as _cross
from granular.rotations import dot as _dot

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
        return DirectorState(d, v, xp.zeros((n, 6)), xp.zeros(n), v.copy(), xp.zeros((n, 6)), xp.zeros(n), z,
                             z.copy(), t=float(t))  # fmt: skip

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
        ctx = f"{self.scheme_name} step {state.step + 1} at t = {state.t:.6g} s, h = {h:g} s"
        res = newton.solve(fun, x0, rtol=self.rtol, max_iter=self.max_iter, out=self._x, context=ctx)
        self._finish(state, res.x, h)
        state.t = self._t0 + h
        state.step += 1
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

    scheme_name = "non-twisting EM"

    def _prepare(self, state, h):
        super()._prepare(state, h)
        _check_material_width(self._load[1])

    def nonholonomic_momenta(self, state):
        """(N, 3) [kg m²/s]: Π^1, Π^2 (conserved without load, (95)) and Π^3 (= 0)."""
        return self.xp.stack(nonholonomic_momenta(self.euler, state.d, state.v), axis=-1)

    def twist_rate(self, state):
        """(N,) [1/s], (80) at the nodes (the scheme enforces it at the midpoints, (94))."""
        return twist_rate(state.d, state.v, self.a)

    def midpoint_twist_rate(self, state, h):
        """(N,) [1/s], (94) divided by h for the last step of size ``h`` [s]:
        ``(1 - a) v̄1·d̄2 - a v̄2·d̄1`` with ``v̄ = (q_{n+1} - q_n)/h``, ``d̄ = q_{n+1} - h v̄/2``."""
        dbar = state.d - 0.5 * h * state.v_half
        return twist_rate(dbar, state.v_half, self.a)


class DirectorDLA(DirectorScheme):
    """Discrete Lagrange-d'Alembert / RATTLE scheme for the standard director body.

    Constructor parameters: :class:`~granular.bodies.directors.DirectorScheme`. See the
    module docstring for the equations.
    """

    scheme_name = "director DLA"

    def _node_forces(self, t, d):
        """``Q^ext(t, q)``: (N, 3, 3), ``f^i = ½ m × d_i`` (68) at the nodes [N m]."""
        if self.moment is None:
            return None
        ms, c = self.moment.evaluate(t, self.n)
        self._check_width(c)
        m = _moment(ms, c, d)
        return 0.5 * _cross(m[:, None, :], d)

    def _check_width(self, c):
        pass

    def _constraint_rows(self, d):
        """Rows of ``C(q) = [H(q); G(q)]``: (N, 6 or 7, 3, 3)."""
        C = self._constraint_gradients(d)
        if self.nonholonomic:
            C = self.xp.concatenate([C, self._nonholonomic_force(d)[:, None]], axis=1)
        return C

    def _prepare(self, state, h):
        n = self.n
        x0 = self._x0
        x0[:, :9] = (state.d + h * state.v).reshape(n, 9)
        x0[:, 9:15] = (0.5 * h * h) * state.lam
        if self.nonholonomic:
            x0[:, 15] = (0.5 * h * h) * state.mu
        self._q_ext0 = self._node_forces(state.t, state.d)
        # constant parts of the Jacobian: M (kron), columns H(q_k)ᵀ, G(q_k)ᵀ
        jac = self._jac
        jac.fill(0.0)
        jac[:, :9, :9] = self._kron_block(self.euler).reshape(n, 9, 9)
        self._gk = self._nonholonomic_force(state.d) if self.nonholonomic else None

    def _residual(self, x):
        """Residual of the first half (times h) and its Jacobian."""
        n, h, a = self.n, self._h, self.a
        d0, v0 = self._d0, self._v0
        r, jac = self._r, self._jac
        d1 = x[:, :9].reshape(n, 3, 3)
        dq = d1 - d0
        L = self._lambda_matrix(x[:, 9:15])
        rq = self.euler @ (dq - h * v0) + L @ d0
        if self._q_ext0 is not None:
            rq -= (0.5 * h * h) * self._q_ext0
        if self.nonholonomic:
            rq += x[:, 15][:, None, None] * self._gk
        r[:, :9] = rq.reshape(n, 9)
        r[:, 9:15] = constraints(d1)
        self._constraint_blocks(jac, d0, d1)
        if self.nonholonomic:
            dbar = 0.5 * (d0 + d1)
            r[:, 15] = (1.0 - a) * _dot(dq[:, 0], dbar[:, 1]) - a * _dot(dq[:, 1], dbar[:, 0])
            jac[:, :9, 15] = self._gk.reshape(n, 9)
            jac[:, 15, 0:3] = -0.5 * a * dq[:, 1] + (1.0 - a) * dbar[:, 1]
            jac[:, 15, 3:6] = 0.5 * (1.0 - a) * dq[:, 0] - a * dbar[:, 0]
        return r, jac

    def _finish(self, state, x, h):
        xp, n = self.xp, self.n
        d1 = x[:, :9].reshape(n, 3, 3).copy()
        vh = (d1 - state.d) / h
        u = vh
        q1 = self._node_forces(state.t + h, d1)
        if q1 is not None:
            u = vh + (0.5 * h) * (self.euler_inv @ q1)
        C = self._constraint_rows(d1)  # (N, r, 3, 3)
        minv_c = self.euler_inv[:, None] @ C  # M⁻¹ Cᵀ columns, (N, r, 3, 3)
        nr = C.shape[1]
        A = C.reshape(n, nr, 9) @ minv_c.reshape(n, nr, 9).swapaxes(1, 2)
        rhs = (C.reshape(n, nr, 9) * u.reshape(n, 1, 9)).sum(axis=-1)
        nu = xp.linalg.solve(A, rhs[..., None])[..., 0]
        state.v = u - (nu[:, :, None, None] * minv_c).sum(axis=1)
        state.v_half = vh
        state.d = d1
        state.lam = (2.0 / (h * h)) * x[:, 9:15]
        if self.nonholonomic:
            state.mu = (2.0 / (h * h)) * x[:, 15]
        state.lam_end = (2.0 / h) * nu[:, :6]
        if self.nonholonomic:
            state.mu_end = (2.0 / h) * nu[:, 6]

    def midpoint_energy(self, state):
        """(N,) [J], ``E_{k+½} = ½ v̄ᵀ M v̄`` of the last step (Sect. 6.4)."""
        return kinetic_energy(self.euler, state.v_half)


class NonTwistingDLA(NonTwistingChecks, DirectorDLA):
    """Discrete Lagrange-d'Alembert comparator for the body on the non-twisting frame
    (Sect. 6.4). Parameters as :class:`~granular.bodies.directors.nontwisting.NonTwistingEM`."""

    scheme_name = "non-twisting DLA"

    def _check_width(self, c):
        _check_material_width(c)

    def nonholonomic_momenta(self, state):
        """(N, 3) [kg m²/s]: Π^1, Π^2, Π^3 at the nodes (74)."""
        return self.xp.stack(nonholonomic_momenta(self.euler, state.d, state.v), axis=-1)

    def twist_rate(self, state):
        """(N,) [1/s], (80) at the nodes (enforced there by the projection)."""
        return twist_rate(state.d, state.v, self.a)
