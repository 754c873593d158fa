"""Paper 000: rigid bodies as three directors with constraints; the energy-momentum scheme
(:mod:`.schemes`), the non-twisting frame (:mod:`.nontwisting`) and the discrete
Lagrange-d'Alembert comparator (:mod:`.dla`)."""

from .schemes import *  # noqa: F403
from .schemes import __all__  # noqa: F401
