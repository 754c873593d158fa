"""Every exception class of the package, at the bottom of the import graph (imports
nothing). The modules that raise them import them from here, and name them again where
users met them first (``granular.backend.BackendError``,
``granular.bodies.core.NewtonError``, ...): both are the same class.

A :class:`SceneError` lists every problem of a scene file, each with its field path.

An :class:`IntegrationError` means a step could not be taken and the state is exactly as
it was before that step. Its attributes name where: ``step`` (the number the failing step
would have had), ``particle`` (or body) index and the offending ``value``. The body
schemes' failures are :class:`BodyError` and its subclasses.

The others say why something cannot start: no such backend (:class:`BackendError`), not
enough memory or disk (:class:`ResourceError`), an output folder that cannot be used
(:class:`OutDirError`), a checkpoint that cannot be written or read
(:class:`CheckpointError`), a random packing that cannot be made (:class:`PackingError`),
a bad ensemble field (:class:`EnsembleSpecError`), and a ``granular run`` that does not
start (:class:`Refused`, the command's exit status 2).

``tests/test_errors.py`` checks that no exception class is defined anywhere else.
"""

__all__ = [
    "BackendError",
    "BodyError",
    "BodyStepSizeError",
    "CheckpointError",
    "EnsembleSpecError",
    "HealthError",
    "IntegrationError",
    "NewtonError",
    "NonFiniteBodyError",
    "NonFiniteError",
    "OutDirError",
    "PackingError",
    "Refused",
    "ResourceError",
    "SceneError",
    "StepSizeError",
]


class SceneError(ValueError):
    """A scene file is malformed; ``errors`` lists ``(path, message)`` pairs."""

    def __init__(self, errors, source="scene"):
        self.errors = list(errors)
        self.source = source
        lines = [f"{source}: {len(self.errors)} error(s)"] + [f"  {p}: {m}" for p, m in self.errors]
        super().__init__("\n".join(lines))


class IntegrationError(RuntimeError):
    """A step could not be taken; the state is unchanged."""

    def __init__(self, message, step=None, particle=None, value=None):
        super().__init__(message)
        self.step, self.particle, self.value = step, particle, value


class HealthError(IntegrationError):
    """A health check failed; the state has been put back to the last one that passed."""


class StepSizeError(IntegrationError, ValueError):
    """The step leaves the closed-form domain of the RRP map (incremental rotation >= π/2)."""


class NonFiniteError(IntegrationError, FloatingPointError):
    """A NaN or infinity appeared in the state or the forces."""


# --------------------------------------------------------------------- body schemes


class BodyError(IntegrationError):
    """A body scheme could not take a step; the state is left before that step.

    Attributes: ``body`` (index in the batch), ``step`` (number of the failing step,
    counted from the state's first step), ``quantity`` (name of what failed, e.g.
    ``"newton residual"`` or ``"w"``), ``value`` (its value: a residual norm, a step
    size, NaN for a non-finite state), ``scheme`` (registry name).
    """

    def __init__(self, message, *, body, step, quantity, value, scheme=""):
        super().__init__(message, step=step, particle=body, value=value)
        self.body, self.quantity, self.scheme = body, quantity, scheme


class NewtonError(BodyError):
    """The Newton iteration of an implicit scheme failed for a body (not converged,
    singular or non-finite Jacobian). Extra attributes: ``reason``, ``residual``
    (``‖r‖∞`` at the last iterate), ``iterations``, ``max_iter``, ``failed`` (bodies of
    the batch that failed)."""

    def __init__(self, message, *, body, step, reason, residual, iterations, max_iter, failed=1, update=float("nan"),
                 scheme=""):  # fmt: skip
        super().__init__(message, body=body, step=step, quantity="newton residual", value=residual, scheme=scheme)
        self.reason, self.residual, self.iterations = reason, float(residual), int(iterations)
        self.max_iter, self.failed, self.update = int(max_iter), int(failed), float(update)


class NonFiniteBodyError(BodyError, NonFiniteError):
    """A NaN or infinity appeared in a body's state."""


class BodyStepSizeError(BodyError):
    """An adaptive scheme's step size underflowed, or it ran out of step attempts.

    ``granular.bodies.core.StepSizeError`` is this class (the name :class:`StepSizeError`
    here is the particle engine's, a different class)."""


# ------------------------------------------------------------------ set-up and files


class BackendError(RuntimeError):
    """A requested backend is not available on this machine."""


class ResourceError(ValueError):
    """Not enough memory or disk for a run; the message names what is needed and what is there."""


class OutDirError(ValueError):
    """``--out`` cannot be used as asked; the message says why and what to do."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be written or read; the message names the path and why.

    A subclass of ``ValueError``.
    """


class PackingError(ValueError):
    """A random packing that cannot be made; ``field``: the argument to change.

    Parameters
    ----------
    message : str
        What went wrong.
    field : str
        The argument of :func:`~granular.particles.shapes.random_packing` to change
        (``"count"``, ``"box"`` or ``"radius"``).

    Attributes
    ----------
    field : str
        As given.
    """

    def __init__(self, message, field):
        super().__init__(message)
        self.field = field


class EnsembleSpecError(ValueError):
    """A bad ``--vary`` field or distribution, or a bad ensemble argument."""


class Refused(Exception):
    """``granular run`` does not start; the message says why (exit status 2). Raised and
    caught within the run command (:mod:`granular.run.command`)."""
