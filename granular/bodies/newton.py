"""Batched Newton solver for N independent small nonlinear systems ``r_b(x_b) = 0``.

The array-based implicit schemes (the general Livens scheme (72) for a user
``MechanicalSystem`` and the multibody closed loop of paper 002) solve one system of
``k`` equations per system and step; the single-body schemes do their Newton iterations
inside their per-body kernels instead (``kernels/bodies_*.py``). :func:`solve` solves all
``N`` of them together on the backend's arrays: one call of
the residual-and-Jacobian function per iteration for the whole batch, one batched dense
solve ``xp.linalg.solve`` on the ``(N, k, k)`` stack, and per-body convergence tracking.

Iteration, for every body ``b`` not yet converged::

    r_b, J_b = fun(x)_b                      # residual (k,) and Jacobian ∂r/∂x (k, k)
    Δx_b     = -J_b⁻¹ r_b
    x_b     <- x_b + Δx_b
    converged when ‖Δx_b‖∞ <= rtol · ‖x_b‖∞ + atol

A converged body is frozen: later iterations (run for the others) leave its ``x_b``
untouched, so a body's iterates, its result and its iteration count are the same whether
it is solved alone or inside any batch. The test is on the Newton update relative to the
size of the iterate (the usual "relative tolerance" of implicit integrators): with the
quadratic convergence of an exact Jacobian the accepted iterate is then accurate to about
``rtol²``. ``atol`` (default 0) is an absolute floor for unknowns whose solution is 0.

Failure is loud. A non-finite residual or Jacobian, a singular Jacobian, or a body still
unconverged after ``max_iter`` iterations raises :class:`NewtonError` (the error of the
body schemes, :mod:`granular.bodies.core`) naming the first such body, its residual
norm and the iteration cap. Nothing is accepted silently; the
caller's state is not modified by :func:`solve` (it works on a copy of ``x0`` or on
``out``).

The residual function sees the whole batch (converged bodies included, at their frozen
iterates); it must be a pure function of ``x`` row by row, so that rows do not interact.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..rotations import array_module
from .core import NewtonError

__all__ = ["NewtonError", "NewtonResult", "solve"]


class NewtonResult(NamedTuple):
    """Outcome of :func:`solve`.

    x: (N, k) float64, the solution (same units as ``x0``).
    iterations: (N,) int64, Newton iterations (Jacobian solves) per body, >= 1.
    residual: (N,) float64, ``‖r_b‖∞`` at the last iterate where the residual was
        evaluated, i.e. just before the accepted update (the accepted iterate is closer).
    """

    x: object
    iterations: object
    residual: object


def _inf_norm(a):
    return abs(a).max(axis=-1)


def solve(
    fun: Callable,
    x0,
    *,
    rtol: float = 1e-10,
    atol: float = 0.0,
    max_iter: int = 25,
    out=None,
    context: str = "",
    step=None,
    scheme: str = "",
) -> NewtonResult:
    """Solve ``r_b(x_b) = 0`` for every row ``b`` by Newton's method, all rows together.

    Parameters
    ----------
    fun: ``fun(x) -> (r, J)`` with ``x`` (N, k), ``r`` (N, k) the residuals and ``J``
        (N, k, k) their Jacobians ``J[b, i, j] = ∂r_b,i / ∂x_b,j``, on the same array
        module as ``x``. The returned arrays may be the caller's preallocated buffers.
    x0: (N, k) float64, the initial iterate (predictor); not modified.
    rtol: relative tolerance on the update, ``‖Δx_b‖∞ <= rtol ‖x_b‖∞ + atol``; > 0.
    atol: absolute floor of the same test (default 0), >= 0.
    max_iter: iteration cap, >= 1; a body not converged after it raises.
    out: optional (N, k) array receiving the solution (the iteration runs in it).
    context: text added to an error message (e.g. the step number).
    step, scheme: the step number and scheme name carried by a :class:`NewtonError`.

    Returns
    -------
    :class:`NewtonResult` ``(x, iterations, residual)``.

    Raises
    ------
    NewtonError: a body did not converge within ``max_iter``, or produced a non-finite
        residual/Jacobian, or a singular Jacobian. The error names the first such body.
    ValueError: bad arguments (shape, tolerances, cap).
    """
    xp = array_module(x0)
    if x0.ndim != 2:
        raise ValueError(f"x0 must have shape (N, k), got {tuple(x0.shape)}")
    if not (rtol > 0.0):
        raise ValueError(f"rtol must be > 0, got {rtol!r}")
    if not (atol >= 0.0):
        raise ValueError(f"atol must be >= 0, got {atol!r}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    n, k = x0.shape
    if out is None:
        x = x0.copy()
    else:
        if out.shape != x0.shape:
            raise ValueError(f"out must have shape {tuple(x0.shape)}, got {tuple(out.shape)}")
        x = out
        x[...] = x0
    iterations = xp.zeros(n, dtype=xp.int64)
    residual = xp.zeros(n, dtype=x.dtype)
    update = xp.zeros(n, dtype=x.dtype)
    active = xp.ones(n, dtype=bool)
    for _ in range(int(max_iter)):
        r, jac = fun(x)
        if r.shape != (n, k) or jac.shape != (n, k, k):
            raise ValueError(
                f"fun must return r (N, k) = {(n, k)} and J (N, k, k) = {(n, k, k)}, "
                f"got {tuple(r.shape)} and {tuple(jac.shape)}"
            )
        rnorm = _inf_norm(r)
        residual = xp.where(active, rnorm, residual)
        finite = xp.isfinite(rnorm) & xp.isfinite(jac.reshape(n, k * k)).all(axis=-1)
        bad = active & ~finite
        if bool(bad.any()):
            _raise(xp, bad, residual, update, iterations, max_iter, "non-finite residual or Jacobian", context, step,
                   scheme)
        try:
            dx = xp.linalg.solve(jac, -r[..., None])[..., 0]
        except np.linalg.LinAlgError:  # NumPy (and CuPy in 'raise' mode) on an exactly singular matrix
            singular = active & ~(xp.linalg.det(jac) != 0.0)
            if not bool(singular.any()):  # defensive: the solver failed on a frozen body
                singular = ~(xp.linalg.det(jac) != 0.0)
            _raise(xp, singular, residual, update, iterations, max_iter, "singular Jacobian", context, step, scheme)
        dnorm = _inf_norm(dx)
        bad = active & ~xp.isfinite(dnorm)  # CuPy returns inf/nan instead of raising
        if bool(bad.any()):
            _raise(xp, bad, residual, update, iterations, max_iter, "singular Jacobian", context, step, scheme)
        x += xp.where(active[:, None], dx, 0.0)
        update = xp.where(active, dnorm, update)
        iterations += active
        converged = dnorm <= rtol * _inf_norm(x) + atol
        active &= ~converged
        if not bool(active.any()):
            return NewtonResult(x, iterations, residual)
    _raise(xp, active, residual, update, iterations, max_iter, "not converged", context, step, scheme)


def _raise(xp, mask, residual, update, iterations, max_iter, reason, context, step, scheme):
    idx = xp.nonzero(mask)[0]
    b = int(idx[0])
    res, upd, it = float(residual[b]), float(update[b]), int(iterations[b])
    where = f" ({context})" if context else ""
    raise NewtonError(
        f"Newton solve failed{where}: body {b}: {reason}; residual |r|_inf = {res:.3e}, "
        f"last update |dx|_inf = {upd:.3e} after {it} iteration(s), cap max_iter = {int(max_iter)}; "
        f"{int(idx.size)} of {int(mask.shape[0])} bodies failed",
        body=b, step=step, reason=reason, residual=res, iterations=it, max_iter=max_iter, failed=int(idx.size),
        update=upd, scheme=scheme)  # fmt: skip
