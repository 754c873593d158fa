"""The interface every body scheme shares: state, step, invariants, errors, registry.

Every single-body formulation of papers 000, 001, 002 and 004 is a :class:`Scheme`:

* it is built once from its fixed parameters (inertia, loads, rails, tolerances) on a
  backend, and makes states with ``scheme.state(...)``;
* ``scheme.step(state, h)`` advances every body of ``state`` from ``state.t`` to
  ``state.t + h`` in place; ``scheme.advance(state, h, steps)`` takes ``steps`` such
  steps, several per kernel launch; ``scheme.run(state, h, steps, callback, every)``
  calls ``callback(state)`` after every ``every``-th step;
* ``scheme.invariants(state)`` returns named per-body arrays (leading axis N) of what the
  paper conserves or checks (energies, momenta, constraint residuals); the key
  ``scheme.energy_key`` names the energy the scheme conserves;
* a failure raises a :class:`BodyError` naming the body, the step, the quantity and its
  value; the state is then left as it was before the failing step, for every body.

A state (:class:`BodyState`) carries ``t`` [T] and ``step`` (steps taken) beside its
arrays, one row per body; implicit schemes add ``iterations`` (Newton iterations of the
last step) and ``iterations_total``.

Each scheme's step is a per-body law in ``kernels/`` (``kernels.bodies_*``), compiled
for the CPU (``prange`` over bodies) and for the GPU (one thread per body). A launch
advances every body by a block of steps; the kernel writes the new state to a second set
of arrays and a status row per body (failure kind, step within the block, quantity,
Newton iterations) that the host reads once per block. On success the state takes the new
arrays (arrays a caller kept from before are not overwritten); on a failure the block is
run again up to the step before the first failure, which gives the same values bit for
bit (each body's arithmetic does not depend on the others).

:data:`REGISTRY` maps a scheme name (``"ulvc rk4"``, ``"livens eml"``, ...) to its class;
scenes, ensembles and studies look schemes up there.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib

import numpy as np

from ..backend import resolve_backend
from ..checks import check_step, count
from ..errors import BodyError, NewtonError, NonFiniteBodyError
from ..errors import BodyStepSizeError as StepSizeError

__all__ = [
    "BodyError",
    "NewtonError",
    "NonFiniteBodyError",
    "StepSizeError",
    "BodyState",
    "Scheme",
    "REGISTRY",
    "register",
    "scheme_class",
    "check_step",
    "count",
    "body_kernels",
    "host",
    "inertia_tensors",
]

# failure kinds written by the kernels in column 0 of the status array
# (kept equal to kernels.bodies_status)
OK, NOT_CONVERGED, SINGULAR, NOT_FINITE, STEP_UNDERFLOW, TOO_MANY_STEPS = 0, 1, 2, 3, 4, 5
_KIND_TEXT = {
    NOT_CONVERGED: "Newton solve not converged",
    SINGULAR: "singular Jacobian",
    NOT_FINITE: "non-finite value",
    STEP_UNDERFLOW: "step size underflow",
    TOO_MANY_STEPS: "too many step attempts",
}


# ---------------------------------------------------------------------------- state


@dataclasses.dataclass(kw_only=True)
class BodyState:
    """Base of every scheme's state: the clock ``t`` [T] and ``step`` (steps taken).

    Subclasses add their arrays as dataclass fields, one row per body; every field that
    is an array is part of the state (copied, checkpointed, advanced by the kernels).
    """

    t: float = 0.0
    step: int = 0
    #: ``(t0, step0, h, (t, step))``: the schemes set ``t = t0 + (step - step0) h`` (no time
    #: accumulated by repeated addition) and note the ``(t, step)`` they wrote; a clock set by
    #: hand or a new ``h`` starts a new origin. Saved in checkpoints.
    clock: tuple | None = None

    def origin(self, h) -> tuple[float, int]:
        """``(t0, step0)`` of the clock for steps of ``h`` from this state."""
        c = self.clock
        if c is None or c[2] != h or c[3] != (self.t, self.step):
            return self.t, self.step
        return c[0], c[1]

    def tick(self, h, k: int = 1) -> None:
        """Advance the clock by ``k`` steps of ``h``: ``step += k``, ``t = t0 + (step - step0) h``."""
        t0, step0 = self.origin(h)
        self.step += k
        self.t = t0 + (self.step - step0) * h
        self.clock = (t0, step0, h, (self.t, self.step))

    def time_at(self, step: int, h) -> float:
        """The time of ``step`` (>= the state's step) for steps of ``h``."""
        t0, step0 = self.origin(h)
        return t0 + (step - step0) * h

    def array_names(self) -> tuple:
        """Names of the array fields, in declaration order (fields holding arrays)."""
        return tuple(k for k in _field_names(type(self)) if hasattr(getattr(self, k), "shape"))

    def arrays(self) -> dict:
        return {k: getattr(self, k) for k in self.array_names()}

    @property
    def n(self) -> int:
        """Number of bodies."""
        return int(getattr(self, self.array_names()[0]).shape[0])

    def copy(self):
        return dataclasses.replace(self, **{k: a.copy() for k, a in self.arrays().items()})


@functools.lru_cache(maxsize=None)
def _field_names(cls) -> tuple:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name not in ("t", "step"))


# ---------------------------------------------------------------------------- checks


_KERNEL_MODULES = {"cpu": "kernels.bodies_cpu", "gpu": "kernels.bodies_cuda"}


def host(a):
    """``a`` as a host value: a CuPy array copied back to NumPy, anything else as it is.

    The schemes set up their per-body parameters on the host with NumPy, whose products
    and inverses are computed matrix by matrix, and copy them to the backend afterwards:
    a GPU library's batched products and inverses can round differently for different
    batch sizes, so a body alone and the same body in a batch would part in the last bit.
    """
    return a.get() if hasattr(a, "get") and hasattr(a, "__cuda_array_interface__") else a


#: The shapes every body scheme accepts for an inertia argument, as its errors name them.
INERTIA_SHAPES = "(3,) (principal moments), (3, 3) (a tensor), (N, 3) or (N, 3, 3) (one per body)"


def inertia_tensors(inertia, name="inertia", *, definite=True):
    """The inertia tensors of a body scheme's argument ``inertia`` [M L²], checked.

    One convention for every body scheme:

    * ``(3,)``: principal moments ``(J1, J2, J3)``, the tensor ``diag(J1, J2, J3)`` of
      every body;
    * ``(3, 3)``: one tensor for every body;
    * ``(N, 3)``: principal moments per body;
    * ``(N, 3, 3)``: one tensor per body.

    A (3, 3) array is always one tensor (three bodies' principal moments are given as
    their diagonal tensors, (3, 3, 3)). Principal moments give the same bits as the
    diagonal tensor written out (``np.diag``), so a scheme built from either runs the
    same. The tensors are checked and returned on the host (a CuPy array is copied back):
    the schemes set their per-body parameters up with NumPy, matrix by matrix.

    Parameters
    ----------
    inertia : array_like
        One of the four shapes above, finite.
    name : str, optional
        The argument's name in the errors (e.g. ``"euler"`` for Euler's coefficients).
    definite : bool, optional
        Also require each tensor to be positive definite (default). The director schemes
        check the stronger condition on Euler's coefficients themselves.

    Returns
    -------
    J : ndarray, (1, 3, 3) or (N, 3, 3) float64
        One tensor shared by every body, or one per body.
    per_body : bool
        Whether the argument was given per body ((N, 3) or (N, 3, 3), N >= 1).

    Raises
    ------
    ValueError
        Naming ``name``: not numbers, another shape (the shapes allowed and the shape
        given), a non-finite entry, a tensor not symmetric to 1e-12 relative to its
        largest entry, or (``definite``) not positive definite; per body, the first
        bad body.
    """
    try:
        a = np.array(host(inertia), dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers of shape {INERTIA_SHAPES}, got {inertia!r}") from None
    if a.shape == (3,) or (a.ndim == 2 and a.shape[1] == 3 and a.shape != (3, 3) and a.shape[0] >= 1):
        per_body = a.ndim == 2
        moments = a.reshape(-1, 3)
        a = np.zeros((moments.shape[0], 3, 3))
        a[:, [0, 1, 2], [0, 1, 2]] = moments
    elif a.shape == (3, 3):
        a, per_body = a[None], False
    elif a.ndim == 3 and a.shape[1:] == (3, 3) and a.shape[0] >= 1:
        per_body = True
    else:
        raise ValueError(f"{name} must have shape {INERTIA_SHAPES}, got {a.shape}")

    def where(b):
        return f"body {b} has" if per_body else "got"

    finite = np.isfinite(a).all(axis=(1, 2))
    if not finite.all():
        b = int(np.argmin(finite))
        raise ValueError(f"{name} must be finite; {where(b)} {a[b].tolist()}")
    scale = np.abs(a).max(axis=(1, 2))
    skew = np.abs(a - a.transpose(0, 2, 1)).max(axis=(1, 2))
    if (skew > 1e-12 * scale).any():
        b = int(np.argmax(skew > 1e-12 * scale))
        raise ValueError(f"{name} must be symmetric (to 1e-12 relative); {where(b)} {a[b].tolist()}")
    if definite:
        eig = np.linalg.eigvalsh(a)
        bad = eig[:, 0] <= 0.0
        if bad.any():
            b = int(np.argmax(bad))
            raise ValueError(f"{name} must be positive definite (all principal moments > 0); {where(b)} "
                             f"eigenvalues {eig[b].tolist()}")  # fmt: skip
    return a, per_body


def body_kernels(backend):
    """The per-body kernel module of ``backend`` (:mod:`kernels.bodies_cpu` or
    :mod:`kernels.bodies_cuda`); imported on first use (nothing compiles at import)."""
    return importlib.import_module(_KERNEL_MODULES[backend.name])


# ---------------------------------------------------------------------------- scheme


class Scheme:
    """Base class of the body schemes (see the module docstring).

    Subclasses set ``name`` (registry name), ``state_type``, ``quantities`` (names of the
    kernel's failure quantities, indexed by column 2 of the status array), ``n`` and
    ``backend``, and implement :meth:`_launch`, :meth:`invariants`,
    :meth:`body_angular_velocity` and ``state(...)``.
    """

    name = ""
    state_type = BodyState
    quantities = ("state",)
    energy_key = "energy"
    implicit = False
    #: most steps per launch (a GPU launch costs ~0.1 ms of host time, so blocks of
    #: many steps are needed at small batches; on the CPU a block only saves Python)
    max_block = 256

    def _init_backend(self, backend):
        self.backend = resolve_backend(backend)
        self.xp = self.backend.xp
        self.kernels = body_kernels(self.backend)
        self._status = None

    # ---------------------------------------------------------------- stepping
    def step(self, state, h):
        """Advance every body by one step of size ``h`` [T], in place; returns ``state``."""
        return self.advance(state, h, 1)

    def advance(self, state, h, steps):
        """``steps`` steps of size ``h`` [T], in blocks of at most :meth:`block_steps`
        steps per launch; returns ``state``. On a failure the state is left at the step
        before it (for every body) and a :class:`BodyError` is raised."""
        h = check_step(h)
        steps = count(steps, "steps", 0)
        self._check_state(state)
        done = 0
        while done < steps:
            k = min(steps - done, self.block_steps())
            self._block(state, h, k)
            done += k
        return state

    def run(self, state, h, steps, callback=None, every=1):
        """``steps`` steps of size ``h``; ``callback(state)`` after every ``every``-th step."""
        h = check_step(h)
        steps, every = count(steps, "steps", 0), count(every, "every", 1)
        done = 0
        while done < steps:
            k = min(every, steps - done) if callback is not None else steps - done
            self.advance(state, h, k)
            done += k
            if callback is not None and k == every:
                callback(state)
        return state

    def block_steps(self) -> int:
        """Most steps one launch may take (1 when loads are Python callables evaluated
        on the host at every step)."""
        return self.max_block

    # ---------------------------------------------------------------- internals
    def _check_state(self, state):
        if not isinstance(state, self.state_type):
            raise ValueError(f"state: expected a {self.state_type.__name__}, got {type(state).__name__}")
        if state.n != self.n:
            raise ValueError(f"state: has {state.n} bodies, the scheme has {self.n}")

    def _buffers(self, state):
        """Fresh output arrays shaped like the state's (the kernel writes every entry) and
        the status arrays (reused)."""
        out = dataclasses.replace(state, **{k: self.xp.empty_like(a) for k, a in state.arrays().items()})
        if self._status is None or self._status[0].shape[0] != state.n:
            self._status = (self.xp.zeros((state.n, 4), dtype=np.int32), self.xp.zeros(state.n, dtype=np.float64))
        return out, self._status

    def _block(self, state, h, k):
        out, (status, value) = self._buffers(state)
        with self.kernels.threads_for(state.n):
            self._launch(state, out, h, k, status, value)
        if int(status[:, 0].max()) == 0:  # the one read-back of the block
            self._commit(state, out, h, k)
            return
        st = self.backend.to_host(status).copy()  # a copy: the re-run below reuses the arrays
        val = self.backend.to_host(value).copy()
        failed = np.nonzero(st[:, 0])[0]
        first = int(st[failed, 1].min())
        body = int(failed[st[failed, 1] == first][0])
        if first > 1:  # every body up to the step before the failure (same values, bit for bit)
            with self.kernels.threads_for(state.n):
                self._launch(state, out, h, first - 1, status, value)
            self._commit(state, out, h, first - 1)
        raise self._error(body, state.step + 1, st[body], float(val[body]),
                          int(np.count_nonzero(st[failed, 1] == first)), state)

    def _commit(self, state, out, h, k):
        # the state takes the new arrays (as a step always replaced them): views of the
        # old ones that a caller keeps stay valid
        for name in state.array_names():
            setattr(state, name, getattr(out, name))
        state.tick(h, k)

    def _times(self, state, h, k, offsets):
        """Host (k, len(offsets)) float64: ``t_j + c h`` for the ``k`` steps of a block, with
        ``t_j = t0 + (step_j - step0) h`` of the state's clock (:meth:`BodyState.origin`)
        as the kernels compute it; the offset 1 is ``t_{j+1}`` itself."""
        out = np.empty((max(k, 1), len(offsets)))
        for j in range(k):
            t, t1 = state.time_at(state.step + j, h), state.time_at(state.step + j + 1, h)
            for c, off in enumerate(offsets):
                out[j, c] = t1 if off == 1.0 else t + off * h
        return out

    def _error(self, body, step, row, value, failed, state):
        kind, quantity, iterations = int(row[0]), int(row[2]), int(row[3])
        what = self.quantities[quantity] if 0 <= quantity < len(self.quantities) else f"quantity {quantity}"
        where = f"{self.name} step {step} (from t = {state.t:.6g}): body {body}"
        tail = f"; the state is left at step {state.step}"
        if kind in (NOT_CONVERGED, SINGULAR) or (kind == NOT_FINITE and what == "newton residual"):
            reason = "not converged" if kind == NOT_CONVERGED else (
                "singular Jacobian" if kind == SINGULAR else "non-finite residual or Jacobian")
            return NewtonError(
                f"{where}: Newton solve failed: {reason}; residual |r|_inf = {value:.3e} after {iterations} "
                f"iteration(s), cap max_iter = {self.max_iter}; {failed} body(ies) failed at this step{tail}",
                body=body, step=step, reason=reason, residual=value, iterations=iterations, max_iter=self.max_iter,
                failed=failed, scheme=self.name)  # fmt: skip
        if kind == NOT_FINITE:
            return NonFiniteBodyError(f"{where}: non-finite {what}{tail}", body=body, step=step, quantity=what,
                                      value=value, scheme=self.name)  # fmt: skip
        return StepSizeError(f"{where}: {_KIND_TEXT.get(kind, 'failure')} ({what} = {value!r}){tail}", body=body,
                             step=step, quantity=what, value=value, scheme=self.name)  # fmt: skip

    def _launch(self, state, out, h, k, status, value):
        raise NotImplementedError

    # ---------------------------------------------------------------- diagnostics
    def invariants(self, state) -> dict:
        """Named per-body arrays (leading axis N) of what the scheme conserves or checks."""
        raise NotImplementedError

    def body_angular_velocity(self, state):
        """(N, 3) body-frame angular velocity [1/T]."""
        raise NotImplementedError

    def rows(self, a, name, shape=(), dtype=np.float64):
        """``a`` as a contiguous (B,) + shape array on the backend, B = 1 (shared) or N."""
        arr = self.xp.asarray(a, dtype=dtype)
        if tuple(arr.shape) == tuple(shape):
            arr = arr[None]
        if arr.ndim != len(shape) + 1 or tuple(arr.shape[1:]) != tuple(shape) or arr.shape[0] not in (1, self.n):
            raise ValueError(f"{name} must have shape {tuple(shape)} or ({self.n},) + {tuple(shape)}, "
                             f"got {tuple(arr.shape)}")  # fmt: skip
        return self.xp.ascontiguousarray(arr)


# ---------------------------------------------------------------------------- registry

#: scheme name -> (module, class name); the class is imported on first use
REGISTRY = {
    "directors em": ("granular.bodies.directors", "DirectorEM"),
    "directors dla": ("granular.bodies.directors.dla", "DirectorDLA"),
    "nontwisting em": ("granular.bodies.directors.nontwisting", "NonTwistingEM"),
    "nontwisting dla": ("granular.bodies.directors.dla", "NonTwistingDLA"),
    "ulvc rk4": ("granular.bodies.ulvc", "LieGroupRK4"),
    "ulvc reference": ("granular.bodies.ulvc", "NewtonEulerRK4"),
    "livens eml": ("granular.bodies.livens.rigid", "EML"),
    "livens reml": ("granular.bodies.livens.rigid", "REML"),
    "livens null-eml": ("granular.bodies.livens.rigid", "NullEML"),
    "livens mpl": ("granular.bodies.livens.comparators", "MPL"),
    "livens emh": ("granular.bodies.livens.comparators", "EMH"),
    "livens mph": ("granular.bodies.livens.comparators", "MPH"),
    "rolling_ball rk4": ("granular.bodies.rolling_ball.integrators", "RK4"),
    "rolling_ball dopri5": ("granular.bodies.rolling_ball.integrators", "DormandPrince"),
    "rolling_disk rk4": ("granular.bodies.rolling_ball.disk", "RollingDiskRK4"),
}


def register(name: str, module: str, cls: str) -> None:
    """Add (or replace) the scheme ``name`` as the class ``cls`` of ``module``."""
    REGISTRY[str(name)] = (module, cls)


def schemes() -> list[str]:
    """The registered scheme names, sorted (``"livens eml"``, ``"ulvc rk4"``, ...)."""
    return sorted(REGISTRY)


def scheme_class(name: str):
    """The :class:`Scheme` subclass registered as ``name``; ``ValueError`` listing the
    names otherwise."""
    try:
        module, cls = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown body scheme {name!r}; registered: {', '.join(sorted(REGISTRY))}") from None
    return getattr(importlib.import_module(module), cls)
