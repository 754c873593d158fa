"""Scene files with a ``[bodies]`` table: validation and ``granular run`` for the batched
single-body schemes.

``granular.run.scene.parse_scene`` calls :func:`validate_bodies` for a scene with a
``[bodies]`` table; ``granular run`` (:mod:`granular.run.command`) builds the batch
(:mod:`granular.bodies.scenes.systems`) and runs it in the same run loop and run folder
as a particle scene (:mod:`granular.run.runner`, :mod:`granular.run.writers`). The table (documented in
``docs/scenes.md``, section ``[bodies]``; schema in :mod:`granular.bodies.scenes.schema`)
names the scheme and its parameters:

=================  ======================================================  =========
``scheme``         classes                                                 paper
=================  ======================================================  =========
``"directors"``    ``DirectorEM`` (``variant = "em"``), ``DirectorDLA``    000
``"nontwisting"``  ``NonTwistingEM``, ``NonTwistingDLA``                   000
``"ulvc"``         ``LieGroupRK4`` (``"rk4"``), ``NewtonEulerRK4``          001
``"livens"``       ``EML``, ``REML``, ``NullEML``, ``MPL``, ``EMH``, ``MPH``    002
``"rolling_ball"`` ``RollingBall`` with ``RK4``                            004
=================  ======================================================  =========

The class is looked up in the scheme registry (:data:`granular.bodies.core.REGISTRY`)
under ``"<scheme> <variant>"``.
"""

from __future__ import annotations

from .config import parse_bodies

__all__ = ["validate_bodies"]


def validate_bodies(table) -> list[tuple[str, str]]:
    """``(path, message)`` for every problem of a ``[bodies]`` table (empty when valid);
    paths start with ``bodies.``."""
    return parse_bodies(table, check_only=True)
