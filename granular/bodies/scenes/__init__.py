"""``[bodies]`` scene tables: the schema (:mod:`.schema`), parsing (:mod:`.config`,
:func:`validate_bodies`), the adapters that give the run loop a system (:mod:`.base`,
:mod:`.systems`)."""

from .validate import *  # noqa: F403
from .validate import __all__  # noqa: F401
