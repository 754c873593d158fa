"""A Numba cache directory keyed by the kernel sources.

Numba's on-disk cache checks only the file that holds a cached function, not the laws
and bodies it calls from other modules, so an edit to :mod:`kernels.laws` would leave a
stale compiled loop in place. The CPU kernels are therefore cached under a directory
named after a hash of every ``kernels/*.py`` file and the Numba version: any edit gives a
fresh directory. ``GRANULAR_KERNEL_CACHE`` overrides the base directory.

Numba's cache is not safe for processes that compile the same function at once (test
workers, Dask workers, two runs started together). Each picks the next free data file for
its signature from the index it read, and both can pick the same one. The last index
written and the last data file written may then belong to different signatures, and the
next process to load that entry runs machine code compiled for other argument types
(seen as a segmentation fault in the neighbour build). :func:`_serialize_cache_writes`
puts a file lock around every cache save and load. A save reads the index again under the
lock and writes the data file before the index that names it.
"""

import functools
import hashlib
import os
import tempfile

import numba
from numba.core import caching

try:
    import fcntl
except ImportError:  # no POSIX file locks (Windows): Numba's behaviour is left as it is
    fcntl = None

_HERE = os.path.dirname(os.path.abspath(__file__))


def sources_digest() -> str:
    """A hash of the Numba version and every ``.py`` file under ``kernels/`` (the laws of
    ``kernels/contact_laws`` included)."""
    h = hashlib.sha256(numba.__version__.encode())
    for folder, dirs, files in sorted(os.walk(_HERE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, _HERE).encode())
                with open(path, "rb") as fh:
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


def _locked(method):
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        try:
            lock = open(self._index_path + ".lock", "a+b")  # noqa: SIM115
        except OSError:  # a read-only cache: nobody writes it, nothing to serialize
            return method(self, *args, **kwargs)
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return method(self, *args, **kwargs)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    return run


def _save_data_first(self, key, data):
    """``IndexDataCacheFile.save``, writing the data file before the index entry."""
    overloads = self._load_index()
    data_name = overloads.get(key)
    if data_name is None:
        existing = set(overloads.values())
        number = 1
        while self._data_name(number) in existing:
            number += 1
        data_name = self._data_name(number)
    self._save_data(data_name, data)
    overloads[key] = data_name
    self._save_index(overloads)


def keyed(fn, key: str):
    """Mark ``fn`` (a function about to be compiled with ``cache=True``) to be cached
    under ``key`` instead of Numba's hash of its closure's contents.

    The kernels of each contact law are closures made by one factory
    (:func:`kernels.cpu.for_law`), so they share a file name and a qualified name, and
    Numba tells them apart by pickling the closure: its compiled functions pickle with a
    random id per process, so no entry would ever be found again. The cache directory is
    already keyed by every kernel source (:func:`sources_digest`), so the law's name is
    all that distinguishes two entries of one function."""
    fn.__granular_cache_key__ = str(key)
    return fn


def _index_key(self, sig, codegen):
    key = getattr(self._py_func, "__granular_cache_key__", None)
    if key is None:
        return _numba_index_key(self, sig, codegen)
    digest = hashlib.sha256
    return (sig, codegen.magic_tuple(), (digest(self._py_func.__code__.co_code).hexdigest(),
                                         digest(key.encode()).hexdigest()))  # fmt: skip


_numba_index_key = getattr(caching.Cache, "_granular_numba_index_key", caching.Cache._index_key)
caching.Cache._granular_numba_index_key = _numba_index_key
caching.Cache._index_key = _index_key


def _serialize_cache_writes():
    cls = caching.IndexDataCacheFile
    if fcntl is None or getattr(cls, "_granular_locked", False):
        return
    cls.save = _locked(_save_data_first)
    cls.load = _locked(cls.load)
    cls._granular_locked = True


_serialize_cache_writes()
