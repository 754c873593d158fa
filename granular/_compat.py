"""Old import paths kept working for one release, with a :class:`DeprecationWarning`.

:func:`forward` serves the names of a module whose contents moved to several modules
(a module ``__getattr__``). :data:`MOVED` lists modules that moved whole; the import
finder :class:`_MovedFinder` makes ``import granular.<old>`` return the new module itself
(the same object, so ``isinstance`` and monkeypatching behave), submodules included.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: Release in which the old paths stop working.
REMOVED_IN = "0.3"

#: Old module path -> new module path, for modules (and packages) that moved whole.
MOVED: dict[str, str] = {
    "granular.bodies.dla": "granular.bodies.directors.dla",
    "granular.bodies.livens_comparators": "granular.bodies.livens.comparators",
    "granular.bodies.livens_multibody": "granular.bodies.livens.multibody",
    "granular.bodies.livens_rigid": "granular.bodies.livens.rigid",
    "granular.bodies.nontwisting": "granular.bodies.directors.nontwisting",
    "granular.bodies.rails": "granular.bodies.rolling_ball.rails",
    "granular.bodies.rolling_ball_integrators": "granular.bodies.rolling_ball.integrators",
    "granular.bodies.rolling_ball_output": "granular.bodies.rolling_ball.output",
    "granular.bodies.rolling_ball_reference": "granular.bodies.rolling_ball.reference",
    "granular.bodies.rolling_disk": "granular.bodies.rolling_ball.disk",
    "granular.bodies.scene_base": "granular.bodies.scenes.base",
    "granular.bodies.scene_config": "granular.bodies.scenes.config",
    "granular.bodies.scene_more": "granular.bodies.scenes.systems",
    "granular.bodies.scene_schema": "granular.bodies.scenes.schema",
    "granular.bodies.scene_systems": "granular.bodies.scenes.systems",
    "granular.bodies.ulvc_coordinates": "granular.bodies.ulvc.coordinates",
    "granular.diagnostics": "granular.particles.diagnostics",
    "granular.ensemble_store": "granular.ensemble.store",
    "granular.forces": "granular.particles.forces",
    "granular.health": "granular.particles.health",
    "granular.integrators": "granular.particles.integrators",
    "granular.model": "granular.particles.model",
    "granular.neighbors": "granular.particles.neighbors",
    "granular.outdir": "granular.run.folder",
    "granular.paper_torus": "granular.particles.paper_torus",
    "granular.scene": "granular.run.scene",
    "granular.shapes": "granular.particles.shapes",
    "granular.stability": "granular.particles.stability",
    "granular.state": "granular.particles.state",
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path is removed in granular {REMOVED_IN}", DeprecationWarning,
                  stacklevel=3)  # fmt: skip


def forward(module: str, table: dict):
    """A module ``__getattr__`` serving ``table`` (``{new module: names}``) with a warning."""
    where = {name: new for new, names in table.items() for name in names}

    def __getattr__(name):
        if name not in where:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        _warn(f"{module}.{name}", f"{where[name]}.{name}")
        return getattr(importlib.import_module(where[name]), name)

    return __getattr__


def package_getattr(package: str, name: str):
    """``granular.<name>`` for a module that moved (the attribute a plain ``import granular``
    used to give), with a warning; AttributeError otherwise."""
    old = f"{package}.{name}"
    if old not in MOVED:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    _warn(old, MOVED[old])
    return importlib.import_module(MOVED[old])


def _new_name(fullname: str) -> str | None:
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import machinery set the old name's spec on the (shared) module: put its own back
        module.__spec__ = self.spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = _new_name(fullname)
        if new is None:
            return None
        try:
            found = importlib.util.find_spec(new)
        except ModuleNotFoundError:
            found = None
        if found is None:  # no such module under the new path either: let the import fail as usual
            return None
        _warn(fullname, new)
        real = importlib.import_module(new)
        spec = importlib.util.spec_from_loader(fullname, _Alias(new), is_package=hasattr(real, "__path__"))
        return spec


def install() -> None:
    """Put the finder of :data:`MOVED` on ``sys.meta_path`` (once)."""
    if not any(type(f).__name__ == "_MovedFinder" for f in sys.meta_path):  # also after a reload
        sys.meta_path.insert(0, _MovedFinder())
