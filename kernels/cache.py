"""Where the compiled kernels are kept: one directory per set of kernel sources, in the
user's cache directory, shared by every copy of the package on the machine. The CPU
kernels (Numba's ``cache=True``) and, through :func:`cuda_kernel`, the GPU kernels
(numba-cuda keeps a copy of Numba's cache module of its own: the same locator, keys and
locks are installed there).

Numba caches a function next to its source file, or under ``NUMBA_CACHE_DIR`` in a folder
named after the source file's absolute path: a checkout, its installed copy and a second
clone would each compile the same kernels again (about a minute on 2 cores). Here every
``kernels/*.py`` function is located by :class:`KernelsLocator` instead, under
:func:`cache_dir`: ``$GRANULAR_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/granular`` (or
``~/.cache/granular``), else ``kernels/__pycache__``, in a folder ``kernels-<digest>``
named after a hash of the Numba version and of every kernel source (:func:`sources_digest`),
and inside it by the file's path relative to the package. So the tests, the docs build
and the installed ``granular`` command share one cache, and an edit to any kernel gives a
fresh folder: Numba's own check looks only at the file that holds a cached function, not
at the laws and bodies it inlines from other modules. Old folders can be deleted at will.

Numba's cache is not safe for processes that compile the same function at once (test
workers, Dask workers, two runs started together). Each picks the next free data file for
its signature from the index it read, and both can pick the same one. The last index
written and the last data file written may then belong to different signatures, and the
next process to load that entry runs machine code compiled for other argument types
(seen as a segmentation fault in the neighbour build). :func:`_serialize_cache_writes`
puts a file lock around every cache save and load. A save reads the index again under the
lock and writes the data file before the index that names it.

Numba names every compiled function after its qualified name and a number drawn from a
counter that starts at 1 in each process (the ``v<n>`` tag of the mangled name). The
kernels of each contact law are closures of one factory: the same qualified names and,
for the functions whose arguments do not depend on the law (the neighbour rebuild called
inside a block, say), the same argument types. Two processes that compiled two laws in
the same order gave such functions the same number, so the cache held two different
functions under one symbol (seen: the rebuild of the Hertz-Mindlin and of the Hertz
block, both ``_rebuild_serial[abi:v1]``), and a process that loads both from the cache
has two definitions of one name in its JIT. :func:`_process_unique_function_ids`
starts the counter at a random 48-bit offset in each process, so functions compiled in
different processes never share a name.
"""

import functools
import hashlib
import itertools
import os
import sys
import tempfile

import numba
from numba.core import caching

try:
    import fcntl
except ImportError:  # no POSIX file locks (Windows): Numba's behaviour is left as it is
    fcntl = None

_HERE = os.path.dirname(os.path.abspath(__file__))


@functools.cache
def sources_digest() -> str:
    """A hash of the Numba and Python versions and of every ``.py`` file under
    ``kernels/`` (the laws of ``kernels/contact_laws`` included), by content and path
    relative to the package."""
    h = hashlib.sha256(f"numba {numba.__version__} python {sys.version_info[:2]}".encode())
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


def user_cache_base() -> str:
    """``$GRANULAR_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/granular``, else
    ``~/.cache/granular`` (``%LOCALAPPDATA%\\granular`` on Windows)."""
    given = os.environ.get("GRANULAR_KERNEL_CACHE")
    if given:
        return given
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return os.path.join(os.environ["LOCALAPPDATA"], "granular")
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "granular")


@functools.cache
def _cache_dir(base, fallback) -> str:
    for c in [base] + ([fallback] if fallback else []):
        path = os.path.join(c, "kernels-" + sources_digest())
        if _writable(path):
            return path
    return ""


def cache_dir() -> str:
    """The folder of this set of kernel sources' compiled code (created), or ``""`` where
    nothing is writable (Numba then compiles in every process)."""
    given = bool(os.environ.get("GRANULAR_KERNEL_CACHE"))
    return _cache_dir(user_cache_base(), None if given else os.path.join(_HERE, "__pycache__"))


@functools.cache
def _content_hash(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


class _Locating:
    """Numba cache locator for the functions of ``kernels/``: the folder
    :func:`cache_dir` plus the source file's folder relative to the package, a source
    stamp from the file's content (not its modification time, which differs between
    copies), and the function's first line to tell apart functions of one name. Mixed
    into the locator base of Numba's CPU cache (:class:`KernelsLocator`) and of
    numba-cuda's own copy of that module (:func:`cuda_kernel`)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        rel = os.path.relpath(os.path.dirname(os.path.abspath(py_file)), _HERE)
        self._cache_path = os.path.normpath(os.path.join(cache_dir(), rel))

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return _content_hash(self._py_file)

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        path = os.path.abspath(py_file)
        if not os.path.isfile(path) or os.path.commonpath([path, _HERE]) != _HERE or not cache_dir():
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


class KernelsLocator(_Locating, caching._CacheLocator):
    """:class:`_Locating` for Numba's CPU cache."""


def _install_locator(module, cls):
    """Put ``cls`` first among the locators of ``module`` (Numba's cache module or
    numba-cuda's copy of it)."""
    impl = getattr(module, "CacheImpl", None) or module._CacheImpl  # renamed in Numba 0.61
    classes = impl._locator_classes
    if not any(getattr(c, "__name__", "") == "KernelsLocator" for c in classes):
        classes.insert(0, cls)


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


def _key_by_name(cache_cls, *extra):
    """Make ``cache_cls._index_key`` (``(signature, the target's magic tuple, a hash of
    the bytecode and one of the closure)``) hash the :func:`keyed` name in place of the
    closure; ``extra`` goes between the target and the hashes (numba-cuda's version, as
    its own key has it). Functions not keyed keep the original key."""
    original = getattr(cache_cls, "_granular_numba_index_key", cache_cls._index_key)

    def _index_key(self, sig, codegen):
        key = getattr(self._py_func, "__granular_cache_key__", None)
        if key is None:
            return original(self, sig, codegen)
        digest = hashlib.sha256
        return (sig, codegen.magic_tuple(), *extra, (digest(self._py_func.__code__.co_code).hexdigest(),
                                                     digest(key.encode()).hexdigest()))  # fmt: skip

    cache_cls._granular_numba_index_key = original
    cache_cls._index_key = _index_key


def _serialize_cache_writes(cls):
    """Lock ``cls`` (an ``IndexDataCacheFile``)'s saves and loads, each save writing its
    data file before the index."""
    if fcntl is None or getattr(cls, "_granular_locked", False):
        return
    cls.save = _locked(_save_data_first)
    cls.load = _locked(cls.load)
    cls._granular_locked = True


def _install_cuda():
    """numba-cuda keeps a cache module of its own (``numba.cuda.core.caching``, with
    Numba's classes copied): the same locator, keys and locks there, once."""
    from numba.cuda.core import caching as cuda_caching

    if getattr(cuda_caching, "_granular_installed", False):
        return
    import numba_cuda

    locator = type("KernelsLocator", (_Locating, cuda_caching._CacheLocator),
                   {"__doc__": ":class:`_Locating` for numba-cuda's cache.", "__module__": __name__})  # fmt: skip
    _install_locator(cuda_caching, locator)
    _key_by_name(cuda_caching.Cache, numba_cuda.__version__)
    _serialize_cache_writes(cuda_caching.IndexDataCacheFile)
    cuda_caching._granular_installed = True


def cuda_kernel(key=None):
    """The decorator of a GPU kernel of ``kernels/``: ``numba.cuda.jit`` with the compiled
    kernel (its PTX and the device's binary) kept in :func:`cache_dir`, as the CPU
    kernels are, so that a second process loads what the first compiled instead of
    compiling it again (every process did, before). ``key`` names the law of a kernel made
    by a law's factory (:func:`keyed`). Under the CUDA simulator
    (``NUMBA_ENABLE_CUDASIM``), or where no cache folder is writable, plain
    ``numba.cuda.jit``.

    numba-cuda's key holds the signature, the device's compute capability and the CUDA
    runtime's version, so one folder serves several devices; the folder's name holds
    the kernel sources' digest, as for the CPU."""
    from numba import cuda

    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")

    def decorate(fn):
        if simulated or not cache_dir():
            return cuda.jit(fn)
        _install_cuda()
        if key is not None:
            keyed(fn, key)
        return cuda.jit(cache=True)(fn)

    return decorate


def _process_unique_function_ids():
    """Start Numba's function-number counter (``FunctionIdentity._unique_ids``) at a
    random offset below 2^48 in this process, once. Two processes then overlap in their
    numbers only if their offsets lie within the few thousand functions each compiles:
    odds of about 1e-10 per pair of processes."""
    from numba.core import bytecode

    ident = bytecode.FunctionIdentity
    if getattr(ident, "_granular_offset", None) is None:
        offset = int.from_bytes(os.urandom(6), "little")
        ident._unique_ids = itertools.count(offset + 1)
        ident._granular_offset = offset


_key_by_name(caching.Cache)
_process_unique_function_ids()
_serialize_cache_writes(caching.IndexDataCacheFile)
_install_locator(caching, KernelsLocator)
