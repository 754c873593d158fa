"""Paper reproductions run by ``granular validate NAME``.

Each study module has ``run(quick=False, backend="cpu") -> Report``; studies with a
longer mode also take ``long=False``.
"""

from importlib import import_module

STUDIES = {
    "pendulum": "granular.validation.pendulum",
    "torus": "granular.validation.torus",
    "ulvc": "granular.validation.ulvc",
    "nontwisting": "granular.validation.nontwisting",
    "livens": "granular.validation.livens",
    "rollingball": "granular.validation.rollingball",
    "contacts": "granular.validation.contacts",
    "pile": "granular.validation.pile",
    "agglomerate": "granular.validation.agglomerate",
    "drum": "granular.validation.drum",
    "hopper": "granular.validation.hopper",
    "heap": "granular.validation.heap",
}


def get_study(name: str):
    """The module of study ``name``, or a ``ValueError`` listing the known ones."""
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; available: {sorted(STUDIES)}")
    return import_module(STUDIES[name])
