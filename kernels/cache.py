"""A Numba cache directory keyed by the kernel sources.

Numba's on-disk cache checks only the file that holds a cached function, not the laws
and bodies it calls from other modules, so an edit to :mod:`kernels.laws` would leave a
stale compiled loop in place. The CPU kernels are therefore cached under a directory
named after a hash of every ``kernels/*.py`` file and the Numba version: any edit gives a
fresh directory. ``GRANULAR_KERNEL_CACHE`` overrides the base directory.
"""

import hashlib
import os
import tempfile

import numba

_HERE = os.path.dirname(os.path.abspath(__file__))


def sources_digest() -> str:
    h = hashlib.sha256(numba.__version__.encode())
    for name in sorted(os.listdir(_HERE)):
        if name.endswith(".py"):
            h.update(name.encode())
            with open(os.path.join(_HERE, name), "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()[:16]


def _writable(path) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
        return True
    except OSError:
        return False


def cache_dir() -> str:
    base = os.environ.get("GRANULAR_KERNEL_CACHE")
    candidates = [base] if base else [os.path.join(_HERE, "__pycache__"), os.path.join(os.path.expanduser("~"), ".cache", "granular")]
    for c in candidates:
        path = os.path.join(c, "numba-" + sources_digest())
        if _writable(path):
            return path
    return ""  # no writable place: Numba then compiles without a disk cache


class keyed_cache:
    """Context manager: functions decorated with ``cache=True`` inside it use
    :func:`cache_dir` (Numba picks the cache location at decoration time)."""

    def __enter__(self):
        self._saved = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = cache_dir()
        return self

    def __exit__(self, *exc):
        numba.config.CACHE_DIR = self._saved
        return False
