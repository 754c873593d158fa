"""Choosing the backend once: array module ``xp`` and kernel table.

=========  ==========================  =============================================
name       arrays                      kernels
=========  ==========================  =============================================
``cpu``    NumPy                       :mod:`kernels.cpu` (Numba, parallel loops)
``gpu``    CuPy (device memory)        :mod:`kernels.cuda` (numba-cuda)
``auto``   ``gpu`` when CuPy finds a CUDA device, else ``cpu``
=========  ==========================  =============================================

Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, no GPU needed) ``"gpu"`` runs
the CUDA kernels in the simulator on NumPy arrays (``Backend.simulated`` is ``True``);
this is how CI exercises the GPU launch code. ``"auto"`` never picks the simulator.

The rest of the engine never asks which backend it is on: it uses ``backend.xp`` for
arrays and ``backend.kernels`` for hot loops.
"""

from __future__ import annotations

import importlib
import os
import platform
import warnings
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

import numpy as np

from .errors import BackendError

BACKEND_NAMES = ("auto", "cpu", "gpu")


@dataclass(frozen=True)
class Backend:
    """An array module and the kernels compiled for it.

    Attributes
    ----------
    name: ``"cpu"`` or ``"gpu"``.
    xp: ``numpy`` or ``cupy``.
    kernels: :mod:`kernels.cpu` or :mod:`kernels.cuda`.
    device: human-readable description of the processor.
    simulated: ``True`` for the CUDA simulator (GPU kernels on NumPy arrays).
    """

    name: str
    xp: ModuleType
    kernels: ModuleType
    device: str
    simulated: bool = False

    def asarray(self, a, dtype=None):
        """Copy host data to this backend's memory."""
        return self.xp.asarray(a, dtype=dtype)

    def to_host(self, a) -> np.ndarray:
        """A NumPy copy (or view, on the CPU) of a backend array."""
        if self.xp is np:
            return np.asarray(a)
        return self.xp.asnumpy(a)

    def synchronize(self) -> None:
        """Wait for all queued device work, on every stream (no-op on the CPU); call
        before reading a clock."""
        if self.xp is not np:
            self.xp.cuda.Device().synchronize()

    def __repr__(self) -> str:
        sim = ", simulated" if self.simulated else ""
        return f"Backend({self.name!r}, {self.device}{sim})"


def cuda_simulator_enabled() -> bool:
    """``True`` when ``NUMBA_ENABLE_CUDASIM`` is set to a non-zero value."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def gpu_probe() -> tuple[bool, str]:
    """Whether a usable CUDA GPU exists, and a sentence saying what was found."""
    try:
        import cupy
    except Exception as exc:  # ImportError or a broken CUDA installation
        return False, f"CuPy is not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CuPy found no CUDA device ({type(exc).__name__}: {exc})"
    if count < 1:
        return False, "CuPy found no CUDA device"
    try:
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:
        return False, f"CuPy sees {count} device(s) but cannot query them ({type(exc).__name__}: {exc})"
    if not cuda_simulator_enabled():
        try:
            from numba import cuda

            if not cuda.is_available():
                return False, f"CuPy found {name}, but numba-cuda cannot use it (driver or toolkit mismatch)"
        except Exception as exc:
            return False, f"CuPy found {name}, but numba-cuda is not importable ({type(exc).__name__}: {exc})"
        compiles, why = numba_cuda_compiles()
        if not compiles:
            return False, f"CuPy found {name}, but {why}"
    return True, f"{name} (CUDA device {cupy.cuda.Device().id} of {count})"


@lru_cache(maxsize=None)
def numba_cuda_compiles() -> tuple[bool, str]:
    """Whether numba-cuda can compile a kernel here (to PTX, which needs no device), and
    why not: a numba-cuda that is importable can still fail at its first compilation,
    for example numba-cuda <= 0.30 with NumPy 2.5 (``module 'numpy' has no attribute
    'row_stack'``)."""
    try:
        import numba_cuda
        from numba import cuda
    except Exception as exc:
        return False, f"numba-cuda is not importable ({type(exc).__name__}: {exc})"

    def scale(a):
        i = cuda.grid(1)
        if i < a.shape[0]:
            a[i] = 2.0 * a[i]

    try:
        cuda.compile_ptx(scale, "void(float64[:])", cc=(7, 5))
    except Exception as exc:
        return False, (f"numba-cuda {numba_cuda.__version__} cannot compile kernels with NumPy {np.__version__} "
                       f"({type(exc).__name__}: {exc}); install the GPU extra, which pins a working "
                       "stack: pip install 'granular[gpu]' (NumPy < 2.5)")  # fmt: skip
    return True, "numba-cuda compiles kernels"


@lru_cache(maxsize=None)
def get_backend(name: str = "auto") -> Backend:
    """Return the backend called ``name`` (``"auto"``, ``"cpu"`` or ``"gpu"``).

    Raises :class:`BackendError` for ``"gpu"`` without a GPU (and without the CUDA
    simulator), and :class:`ValueError` for an unknown name.
    """
    if isinstance(name, Backend):
        return name
    if name not in BACKEND_NAMES:
        raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {name!r}")
    if name == "cpu":
        return _cpu_backend()
    found, what = gpu_probe()
    if name == "auto":
        if found and not cuda_simulator_enabled():
            return _gpu_backend(what)
        if "numba-cuda" in what and "CuPy found" in what:  # a GPU is there but unusable: say so
            warnings.warn(f"backend 'auto' uses the CPU: {what}", RuntimeWarning, stacklevel=2)
        return _cpu_backend()
    if found and not cuda_simulator_enabled():
        return _gpu_backend(what)
    if cuda_simulator_enabled():
        from kernels import cuda as cuda_kernels

        return Backend("gpu", np, cuda_kernels, "Numba CUDA simulator", simulated=True)
    raise BackendError(
        f"backend 'gpu' was requested but no CUDA GPU is usable: {what}. "
        "Install the GPU extra (pip install 'granular[gpu]') on a machine with an NVIDIA "
        "GPU, or choose backend 'cpu' or 'auto'."
    )


def resolve_backend(backend) -> Backend:
    """Accept a :class:`Backend` or a name."""
    return backend if isinstance(backend, Backend) else get_backend(backend)


def _cpu_backend() -> Backend:
    from kernels import cpu as cpu_kernels

    cpu = platform.processor() or platform.machine()
    return Backend("cpu", np, cpu_kernels, f"{cpu}, {os.cpu_count()} logical cores")


def _no_array_interface_sync() -> None:
    """Stop numba-cuda from waiting on the producer's stream at every kernel argument.

    CuPy arrays export ``__cuda_array_interface__`` with their stream, and numba-cuda
    then synchronises that stream for each array argument of each launch: a host wait
    per argument. CuPy (null stream) and numba-cuda (stream 0) both use the legacy
    default stream, so their work is already ordered and the waits are unnecessary.
    Respects an explicit ``NUMBA_CUDA_ARRAY_INTERFACE_SYNC`` in the environment.
    """
    if "NUMBA_CUDA_ARRAY_INTERFACE_SYNC" in os.environ:
        return

    for name in ("numba.cuda.core.config", "numba.core.config"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "CUDA_ARRAY_INTERFACE_SYNC"):
            mod.CUDA_ARRAY_INTERFACE_SYNC = 0


def _gpu_backend(what: str) -> Backend:
    import cupy

    from kernels import cuda as cuda_kernels

    _no_array_interface_sync()
    return Backend("gpu", cupy, cuda_kernels, what)
