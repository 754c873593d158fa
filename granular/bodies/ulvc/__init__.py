"""Paper 001: unified local velocity coordinates; the Lie-group and Newton-Euler RK4
schemes (:mod:`.schemes`) and the coordinates and maps they use (:mod:`.coordinates`)."""

from .schemes import *  # noqa: F403
from .schemes import __all__  # noqa: F401
