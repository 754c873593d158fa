"""``[bodies]`` scene tables: the schema (:mod:`.schema`), parsing (:mod:`.config`,
:func:`validate_bodies`), the adapters that give the run loop a system (:mod:`.base`,
:mod:`.systems`)."""

from ..._compat import forward
from .validate import *  # noqa: F403
from .validate import __all__  # noqa: F401

__getattr__ = forward(__name__, {
    "granular.run.command": ("run_bodies",),
    "granular.run.simulation": ("BodyRun",),
    "granular.bodies.scenes.base": ("body_series_columns",),
})  # fmt: skip
