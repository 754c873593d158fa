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
left exactly as it was before the step.

:meth:`ExplicitIntegrator.advance` takes many steps in device-resident blocks
(:mod:`granular.particles.integrators.engine`) with the same results, bit for bit, and the same
errors as a loop of :meth:`ExplicitIntegrator.step`.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...checks import check_step
from ...errors import IntegrationError, NonFiniteError, StepSizeError
from .engine import MAX_BLOCK, ParticleEngine
from .schemes import EQUATION, SCHEMES, rotation_measure, scheme_name

__all__ = ["ExplicitIntegrator", "IntegrationError", "NonFiniteError", "StepSizeError", "SCHEMES", "scheme_name"]


def _check_steps(steps) -> int:
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, numbers.Integral):
        raise ValueError(f"steps: must be a whole number >= 0, got {steps!r}")
    if steps < 0:
        raise ValueError(f"steps: must be >= 0, got {steps!r}")
    return int(steps)


class ExplicitIntegrator:
    """One of the explicit maps (23), (25), (27); see the module docstring.

    ``step(model, state, h)`` advances ``state`` in place by one checked step of size
    ``h``; ``advance(model, state, h, steps)`` by ``steps`` steps in blocks (the fast
    path: on a GPU, one read-back per block and, with ``graphs``, blocks replayed as CUDA
    graphs). ``graphs=False`` launches every kernel eagerly (for debugging and
    comparison; results are identical). ``max_block``: longest block between checks.

    Examples
    --------
    A spinning top on a pendulum, eq. (39), advanced by the velocity-Verlet map (25):
    its energy is conserved to the scheme's second order.

    >>> import granular as gr
    >>> b = gr.ModelBuilder()
    >>> i = b.add_particle(x=[0, 0, 0], omega=[0.2, 0, 0.2])
    >>> b.add_pendulum(i, rho0=[0, 0, 1], g=1.0)
    >>> model = b.finalize("cpu")
    >>> state = model.state()
    >>> e0 = gr.diagnostics.total_energy(model, state)
    >>> gr.ExplicitIntegrator("verlet").advance(model, state, 1e-2, 1000)
    >>> state.step, round(state.time, 12)
    (1000, 10.0)
    >>> abs(gr.diagnostics.total_energy(model, state) - e0) < 1e-4
    True
    """

    def __init__(self, scheme: str = "verlet", graphs: bool = True, max_block: int = MAX_BLOCK):
        self.scheme = scheme_name(scheme)
        self.code = SCHEMES[self.scheme]
        self.graphs = bool(graphs)
        self.max_block = int(max_block)

    def __repr__(self) -> str:
        return f"ExplicitIntegrator({self.scheme!r})  # map {EQUATION[self.scheme]}"

    @property
    def order(self) -> int:
        return 1 if self.scheme == "campello" else 2

    def engine(self, model, state) -> ParticleEngine:
        """The step loop bound to ``(model, state)`` (made once, kept on the state)."""
        eng = state._engine
        if eng is None or eng.model is not model or eng.graphs != self.graphs:
            eng = ParticleEngine(model, state, graphs=self.graphs, max_block=self.max_block)
            state._engine = eng
        eng.max_block = self.max_block
        return eng

    def _enter(self, model, state):
        """The engine, after the check for edits by hand (:meth:`State.edited`)."""
        eng = self.engine(model, state)
        eng.check_edits()
        return eng

    def prepare(self, model, state) -> None:
        """Evaluate the forces at the current configuration if they are not current."""
        self._enter(model, state).prepare()

    def step(self, model, state, h) -> None:
        """Advance ``state`` in place by one checked step of the map.

        Parameters
        ----------
        model : Model
            The model ``state`` belongs to (same backend, particle count and dtype).
        state : State
            Advanced in place; edited arrays are seen (forces are evaluated again).
        h : float
            Step size [T], a finite number > 0.

        Raises
        ------
        StepSizeError
            The incremental rotation of a particle is outside the map's domain
            (``|Δα| < 2``); the state is as it was before the step.
        NonFiniteError
            A NaN or infinity appeared; the state is as it was before the step.
        ValueError
            ``h`` is not a positive number, or ``state`` does not fit ``model``.
        """
        hh = model.dtype.type(check_step(h))
        self._enter(model, state).step(self.code, hh)
        state.remember_forces()

    def advance(self, model, state, h, steps) -> None:
        """Advance ``state`` by ``steps`` steps of size ``h``, in device-resident blocks;
        the same trajectory and errors as ``steps`` calls of :meth:`step`."""
        hh = model.dtype.type(check_step(h))
        n = _check_steps(steps)
        if n:
            self._enter(model, state).advance(self.code, hh, n)
            state.remember_forces()

    def run(self, model, state, h, steps, callback=None, every: int = 1) -> None:
        """Take ``steps`` steps (a whole number >= 0) of size ``h``; ``callback(state)``
        after every ``every``-th step. For runs with output, see :class:`~granular.Simulation`."""
        n = _check_steps(steps)
        every = max(1, _check_steps(every))
        if callback is None:
            self.advance(model, state, h, n)
            return
        done = 0
        while done + every <= n:
            self.advance(model, state, h, every)
            done += every
            callback(state)
        self.advance(model, state, h, n - done)

    def rotation_measure(self, model, state, h):
        """Per-particle ``ρ`` of :func:`kernels.laws.rrp_increment` for a step from ``state``
        (host array; ``ρ < 1`` is required)."""
        return rotation_measure(model, state, self.scheme, float(h))
