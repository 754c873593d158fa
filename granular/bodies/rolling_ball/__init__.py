"""Paper 004: the rolling ball actuated by internal masses on rails; the equations of
motion (:mod:`.ball`), the rails (:mod:`.rails`), the integrators (:mod:`.integrators`),
the planar disk (:mod:`.disk`), the reference solution (:mod:`.reference`) and the
output (:mod:`.output`)."""

from .ball import *  # noqa: F403
from .ball import __all__  # noqa: F401
