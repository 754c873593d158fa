"""The engine's error family, at the bottom of the import graph (imports nothing).

A :class:`SceneError` lists every problem of a scene file, each with its field path.

An :class:`IntegrationError` means a step could not be taken and the state is exactly as
it was before that step. Its attributes name where: ``step`` (the number the failing step
would have had), ``particle`` (or body) index and the offending ``value``.
"""


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
