"""The explicit maps of Baker & Gonzalez (paper 003) on SE(3)^n.

================  ===========  ================================================  =====
name              paper        rotation increment ``Δα``                         order
================  ===========  ================================================  =====
``"exact"``       (23)         ``2h/(1+sqrt(1-h²|w|²)) w``, ``w = Ω + h RM/2J``    2
``"verlet"``      (25)         ``h Ω + h² RM/2J``                                  2
``"campello"``    (27)         ``h Ω_{k+1}``  (symplectic Euler)                   1
================  ===========  ================================================  =====

(23) and (25) share the translational velocity-Verlet update (a, c) and the kick
(d) ``Ω_{k+1} = Ω_k + h/2J (RM_k + RM_{k+1})``; (27) is the symplectic Euler of (27a-d).
All three update the orientation by ``α_{k+1} = α_k ⊕ Δα`` with the spatial increment
``Δα`` (``R_{k+1} = R(Δα) R_k``), applied to the stored unit quaternion.

Each step evaluates the forces once: the forces at ``k+1`` are kept for the next step.

Step-size limit: (23b) is real only for ``h|w| < 1``. The same condition, an incremental
rotation below π/2 (``|Δα| < 2``), is required of all three maps; a step that breaks it,
or that produces a NaN or infinity, raises :class:`StepSizeError` or
:class:`NonFiniteError` naming the step, the particle and the value, and the state is
left exactly as it was before the step (the step writes into back buffers and swaps
them in only after the checks).
"""

from __future__ import annotations

import math

import numpy as np

from kernels import laws

from ..forces import evaluate_forces, update_breakage

SCHEMES = {
    "exact": laws.SCHEME_EXACT,
    "verlet": laws.SCHEME_VERLET,
    "campello": laws.SCHEME_CAMPELLO,
}
ALIASES = {"23": "exact", "25": "verlet", "27": "campello", "rrp": "exact", "symplectic-euler": "campello"}
EQUATION = {"exact": "(23)", "verlet": "(25)", "campello": "(27)"}


class IntegrationError(RuntimeError):
    """A step could not be taken; the state is unchanged."""

    def __init__(self, message, step=None, particle=None, value=None):
        super().__init__(message)
        self.step, self.particle, self.value = step, particle, value


class StepSizeError(IntegrationError, ValueError):
    """The step leaves the closed-form domain of the RRP map (incremental rotation >= π/2)."""


class NonFiniteError(IntegrationError, FloatingPointError):
    """A NaN or infinity appeared in the state or the forces."""


def scheme_name(name: str) -> str:
    """Canonical name for ``name`` (accepts ``"23"``, ``"25"``, ``"27"`` and aliases)."""
    key = ALIASES.get(str(name), str(name))
    if key not in SCHEMES:
        allowed = sorted(SCHEMES) + sorted(ALIASES)
        raise ValueError(f"scheme: unknown explicit map {name!r}; allowed: {allowed}")
    return key


def check_step_size(h) -> float:
    """``h`` as a float, or a ``ValueError`` unless it is finite and > 0."""
    try:
        hf = float(h)
    except (TypeError, ValueError):
        raise ValueError(f"h: the time step must be a number, got {h!r}") from None
    if not (math.isfinite(hf) and hf > 0.0):
        raise ValueError(f"h: the time step must be finite and > 0, got {h!r}")
    return hf


class ExplicitIntegrator:
    """One of the explicit maps (23), (25), (27); see the module docstring.

    ``step(model, state, h)`` advances ``state`` in place by one step of size ``h``.
    The step allocates nothing and moves no state array between host and device; it
    reads back one integer (the worst per-particle status) to decide whether to commit.
    """

    def __init__(self, scheme: str = "verlet"):
        self.scheme = scheme_name(scheme)
        self.code = SCHEMES[self.scheme]

    def __repr__(self) -> str:
        return f"ExplicitIntegrator({self.scheme!r})  # map {EQUATION[self.scheme]}"

    @property
    def order(self) -> int:
        return 1 if self.scheme == "campello" else 2

    def prepare(self, model, state) -> None:
        """Evaluate the forces at the current configuration if they are not current."""
        if not state.forces_valid:
            update_breakage(model, state, state.broken)
            evaluate_forces(model, state)
            state.forces_valid = True

    def step(self, model, state, h) -> None:
        h = check_step_size(h)
        if state.n != model.n:
            raise ValueError(f"state: has {state.n} particles, the model {model.n}")
        self.prepare(model, state)
        k = model.backend.kernels
        nxt = state.back
        k.advance(
            self.code, h, state.x, state.v, state.q, state.omega, state.F, state.RM,
            model.mass, model.inertia, nxt.x, nxt.v, nxt.q, nxt.omega, state.status,
        )  # fmt: skip
        update_breakage(model, nxt, state.broken)
        evaluate_forces(model, nxt)
        k.finish(self.code, h, nxt.x, nxt.v, nxt.q, nxt.omega, nxt.F, nxt.RM, model.mass, model.inertia, state.status)
        if int(state.status.max()) != laws.STATUS_OK:
            raise self._failure(model, state, h)
        state.swap()
        state.step += 1
        state.time += h

    def run(self, model, state, h, steps: int, callback=None, every: int = 1) -> None:
        """Take ``steps`` steps; ``callback(state)`` after every ``every``-th step."""
        for n in range(1, int(steps) + 1):
            self.step(model, state, h)
            if callback is not None and n % every == 0:
                callback(state)

    # ------------------------------------------------------------------ diagnostics

    def rotation_measure(self, model, state, h):
        """Per-particle ``ρ`` of :func:`kernels.laws.rrp_increment` for a step from ``state``
        (host array; ``ρ < 1`` is required)."""
        be = model.backend
        om, RM = be.to_host(state.omega), be.to_host(state.RM)
        J = be.to_host(model.inertia)[:, None]
        if self.scheme == "campello":
            w = om + h * RM / J
            return 0.5 * h * np.linalg.norm(w, axis=1)
        w = om + 0.5 * h * RM / J
        scale = 1.0 if self.scheme == "exact" else 0.5
        return scale * h * np.linalg.norm(w, axis=1)

    def _failure(self, model, state, h) -> IntegrationError:
        status = model.backend.to_host(state.status)
        where = f"step {state.step + 1} (t = {state.time:.17g} -> {state.time + h:.17g})"
        domain = np.flatnonzero(status == laws.STATUS_ROTATION_DOMAIN)
        if domain.size:
            rho = self.rotation_measure(model, state, h)
            i = int(domain[np.argmax(rho[domain])])
            what = {
                "exact": "h|Ω + h RM/2J|",
                "verlet": "|Δα|/2 = h|Ω + h RM/2J|/2",
                "campello": "|Δα|/2 = h|Ω + h RM/J|/2",
            }[self.scheme]
            return StepSizeError(
                f"{where}: map {EQUATION[self.scheme]} needs {what} < 1 (incremental rotation "
                f"below pi/2); particle {i} has {rho[i]:.6g} with h = {h:.6g} "
                f"({domain.size} particle(s) affected). The state is unchanged; reduce h.",
                step=state.step + 1, particle=i, value=float(rho[i]),
            )  # fmt: skip
        bad = np.flatnonzero(status == laws.STATUS_NOT_FINITE)
        i = int(bad[0])
        return NonFiniteError(
            f"{where}: a NaN or infinity appeared in the state or forces of particle {i} "
            f"({bad.size} particle(s) affected). The state is unchanged.",
            step=state.step + 1, particle=i,
        )  # fmt: skip
