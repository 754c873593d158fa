"""Paper 002: Livens' equations with quaternions; the implicit energy-momentum scheme for
mechanical systems (:mod:`.schemes`) and its model problems (:mod:`.problems`), rigid bodies (:mod:`.rigid`), the comparators
(:mod:`.comparators`) and jointed bodies (:mod:`.multibody`)."""

from .problems import RedundantMassSpring, SpringPendulum
from .schemes import *  # noqa: F403
from .schemes import __all__ as _schemes

__all__ = [*_schemes, "RedundantMassSpring", "SpringPendulum"]
