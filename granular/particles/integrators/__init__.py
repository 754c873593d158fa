"""Time integrators for the particle state (explicit maps of paper 003)."""

from ...errors import IntegrationError, NonFiniteError, StepSizeError
from .explicit import SCHEMES, ExplicitIntegrator, scheme_name

__all__ = ["SCHEMES", "ExplicitIntegrator", "IntegrationError", "NonFiniteError", "StepSizeError", "scheme_name"]
