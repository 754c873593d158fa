"""What produced a result: the versions of granular, Python and the libraries it runs on,
recorded by ``granular info``, ``granular ensemble`` and the run metadata."""

from __future__ import annotations

import importlib
import platform

from ._version import __version__

LIBRARIES = ("numpy", "numba", "numba_cuda", "cupy", "meshio", "scipy", "matplotlib")


def versions() -> dict:
    """``{"granular": ..., "python": ..., <library>: version or None if not installed}``."""
    out = {"granular": __version__, "python": platform.python_version()}
    for mod in LIBRARIES:
        try:
            m = importlib.import_module(mod)
            out[mod] = getattr(m, "__version__", "?")
        except Exception:
            out[mod] = None
    return out
