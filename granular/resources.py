"""Memory and disk checked before a run computes anything.

:func:`bytes_per_item` is the one place that says how many bytes the engine holds per
particle, per bond and per neighbour-list slot, on the host and on the device; update it
when the kernels' arrays change. :func:`memory_needed` turns it into totals for
``(N, B, capacity, dtype, backend)``; :func:`check_memory` compares them with what the
machine has (:func:`memory_available`: the host's available memory, cgroup and ``ulimit``
limits included; the GPU's free memory) and raises :class:`ResourceError` naming both
numbers. :func:`check_disk` does the same for an output directory's file system.

Calibration (``granular run`` of a bonded lattice block with contacts and a wall, peak
RSS between 6.4e4 and 2.6e5 particles, float64 on the CPU): 2.74 kB per particle with its
three bonds, measured before the CPU's direct pass added its running sums and result
slots (about 1.1 kB more per particle with 16 slots, counted here by ``particle_direct``
and ``slot_pair_pass``).
"""

from __future__ import annotations

import os
import resource
import shutil

import numpy as np

from kernels.layout import DIAGNOSTICS

from .errors import ResourceError
from .particles.neighbors import BUCKET_DEPTH

#: Bytes of the interpreter, Numba and the libraries, before any particle [host].
HOST_BASELINE = 300 * 2**20
#: A CUDA context and the memory pool's slack [device].
DEVICE_BASELINE = 64 * 2**20
#: Initial neighbour-list capacity (slots per particle; :class:`granular.particles.neighbors.NeighborList`).
NEIGHBOR_CAPACITY = 16


def bytes_per_item(dtype) -> dict:
    """Bytes held per item, by where they live: ``particle_device``, ``particle_host``,
    ``bond_device``, ``bond_host``, ``slot_device`` (one neighbour-list entry). The device
    parts are host memory on the CPU backend.

    Per particle on the device: the state (x, v, q, Ω, F, RM and the running maximum of
    the wall contact force: 20 floats) three times (the
    state, the block loop's saved copy, the health check's copy), the status word, mass,
    inertia and radius, the per-particle diagnostics row (``len(DIAGNOSTICS)`` floats) and the zero
    velocities of analysis calls (3 floats); the neighbour list's count and ``x_ref`` (4
    bytes and 3 floats) and its hash grid (one bucket counter and ``BUCKET_DEPTH``
    member slots, about one bucket per particle). On the host: the builder's lists and
    the initial conditions, the output's temporary copies and the other temporaries of
    setup and output (84 floats, the remainder of the calibration below).
    Per bond on the device: rest data, stiffnesses, thresholds (16 floats), the CPU's
    per-bond force terms (9 floats), the energy measures (5 floats), the released energy
    three times (state and copies), the end indices and the CSR (four int64) and the
    broken flags (three); on the host: the builder's lists and the finalize step's sort
    keys (about 130 bytes). On the CPU, the per-bond pass's row index of each bond (4 bytes)
    and its table of distinct rows of rest data and stiffnesses (14 floats a row, at most
    one row a bond: a random packing's bonds are all distinct).
    With the dissipative contact law (``history``), per particle the velocities it sees
    (``vp``, ``wp``: 12 floats) and the dissipated-energy ledger with its saved copy (8
    floats), and per listed slot the springs (8 floats) three times (the list's, the
    rebuild's old copy, the block loop's saved copy), their flags and the old and saved
    neighbour ids (4 and 8 bytes). On the CPU, with any contact law and a neighbour list,
    the direct pass's running sums per particle (12 floats) and a result slot per listed
    slot (8 floats and a flag, written for the pairs that cross a chunk), and the sorted
    cell list of the neighbour search (per particle its place in the order, a copy of its
    position and about two cell starts: 3 floats and 12 bytes).
    """
    f = np.dtype(dtype).itemsize
    return {
        "particle_device": (3 * 20 + 3 + len(DIAGNOSTICS) + 3 + 3) * f + 4 + 4 + (1 + BUCKET_DEPTH) * 4 + 8,
        "particle_host": 84 * 8,
        "bond_device": (16 + 9 + 5 + 3) * f + 4 * 8 + 3,
        "bond_host": 130,
        "bond_table": 14 * f + 4,
        "slot_device": 4,
        "particle_history": 20 * f,
        "slot_history": 3 * 8 * f + 4 + 8,
        "slot_pair_pass": 8 * f + 1,
        "particle_direct": 15 * f + 12,
    }


def memory_needed(n, bonds, capacity, dtype, backend_name, simulated=False, history=False) -> dict:
    """``{"host": bytes, "device": bytes}`` for ``n`` particles, ``bonds`` bonds and a
    neighbour list of ``capacity`` slots per particle (0 without contacts); ``history``:
    the dissipative contact law, with its springs per slot. On the CPU backend (and under
    the CUDA simulator) everything is host memory and ``device`` is 0."""
    b = bytes_per_item(dtype)
    dev = n * (b["particle_device"] + capacity * b["slot_device"]) + bonds * b["bond_device"]
    if backend_name == "cpu" and capacity:  # the direct pass: running sums, slots of pairs across chunks
        dev += n * (b["particle_direct"] + capacity * b["slot_pair_pass"])
    if backend_name == "cpu":  # the per-bond pass's table of distinct rows, at most a row a bond
        dev += bonds * b["bond_table"]
    if history:
        dev += n * (b["particle_history"] + capacity * b["slot_history"])
    host = HOST_BASELINE + n * b["particle_host"] + bonds * b["bond_host"]
    if backend_name == "gpu" and not simulated:
        return {"host": int(host), "device": int(dev + DEVICE_BASELINE)}
    return {"host": int(host + dev), "device": 0}


def _read_int(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return None if not text.isdigit() else int(text)


def _vm_size() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def host_memory_available() -> tuple[int | None, str]:
    """Bytes this process can still allocate on the host and where the figure comes from:
    the least of ``MemAvailable`` (``/proc/meminfo``), a cgroup's limit less its usage, and
    ``ulimit -v`` less the process' virtual size. ``(None, ...)`` when nothing is known."""
    found = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append((int(line.split()[1]) * 1024, "available memory"))
    except OSError:
        try:
            found.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free memory"))
        except (ValueError, OSError, AttributeError):
            pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):  # fmt: skip
        lim, use = _read_int(limit), _read_int(usage)
        if lim is not None and use is not None and lim < 2**60:
            found.append((max(lim - use, 0), "the cgroup's memory limit"))
    for which, name in ((resource.RLIMIT_AS, "ulimit -v"), (resource.RLIMIT_DATA, "ulimit -d")):
        soft, _ = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY:
            used = _vm_size() if which == resource.RLIMIT_AS else 0
            found.append((max(soft - (used or 0), 0), name))
    if not found:
        return None, "unknown"
    return min(found)


def device_memory_available(backend) -> int | None:
    """Free bytes on the backend's GPU (CuPy's pool's free blocks included), or None."""
    if backend.name != "gpu" or getattr(backend, "simulated", False):
        return None
    try:
        free, _ = backend.xp.cuda.runtime.memGetInfo()
        pool = backend.xp.get_default_memory_pool()
        return int(free + pool.free_bytes())
    except Exception:  # noqa: BLE001  no figure is better than a wrong refusal
        return None


def _gb(x) -> str:
    return f"{x / 1e9:.3g} GB"


def check_memory(n, bonds, capacity, dtype, backend, what="the scene", history=False) -> dict:
    """Raise :class:`ResourceError` when ``memory_needed`` exceeds what is available on
    the host or the device; returns ``{"needed": ..., "available": ...}`` otherwise."""
    sim = bool(getattr(backend, "simulated", False))
    need = memory_needed(n, bonds, capacity, dtype, backend.name, sim, history)
    host, source = host_memory_available()
    dev = device_memory_available(backend)
    size = f"{n:,} particles, {bonds:,} bonds, {np.dtype(dtype).name}"
    if host is not None and need["host"] > host:
        raise ResourceError(f"{what} ({size}) needs about {_gb(need['host'])} of host memory; {_gb(host)} are "
                            f"available ({source}). Use fewer particles, float32, or a larger machine")  # fmt: skip
    if dev is not None and need["device"] > dev:
        raise ResourceError(f"{what} ({size}) needs about {_gb(need['device'])} of GPU memory; {_gb(dev)} are "
                            f"free on {backend.device}. Use fewer particles, float32, or --backend cpu")  # fmt: skip
    return {"needed": need, "available": {"host": host, "device": dev}}


#: Bytes per body of a ``[bodies]`` run, host and device: the scene's resolved arrays, the
#: state and the kernel's output state, status, snapshots and host copies for output.
#: Measured peaks (tracemalloc, 2·10^4 bodies, every scheme's scene): 1.1-2.5 kB per body
#: on the CPU; the figures below leave room for the writers' copies.
BODY_HOST_BYTES = 4096
BODY_DEVICE_BYTES = 2048


def check_body_memory(count, backend=None, what="the scene") -> dict:
    """:class:`ResourceError` when ``count`` bodies need more memory than is available
    (:data:`BODY_HOST_BYTES`, :data:`BODY_DEVICE_BYTES` per body); checked before any
    body's array is made. Without a ``backend`` (a scene being read) only the host memory
    every backend needs is checked (half the figure: on a GPU the rest is device memory)."""
    gpu = backend is None or (backend.name == "gpu" and not getattr(backend, "simulated", False))
    host_need = HOST_BASELINE + count * (BODY_HOST_BYTES // 2 if gpu else BODY_HOST_BYTES)
    dev_need = DEVICE_BASELINE + count * BODY_DEVICE_BYTES if gpu and backend is not None else 0
    host, source = host_memory_available()
    dev = device_memory_available(backend) if backend is not None else None
    if host is not None and host_need > host:
        raise ResourceError(f"{what} ({count:,} bodies) needs about {_gb(host_need)} of host memory; {_gb(host)} "
                            f"are available ({source}). Use fewer bodies (or an ensemble, which runs them in "
                            "chunks), or a larger machine")  # fmt: skip
    if dev is not None and dev_need > dev:
        raise ResourceError(f"{what} ({count:,} bodies) needs about {_gb(dev_need)} of GPU memory; {_gb(dev)} are "
                            f"free on {backend.device}. Use fewer bodies, or --backend cpu")  # fmt: skip
    return {"needed": {"host": host_need, "device": dev_need}, "available": {"host": host, "device": dev}}


def existing_ancestor(path) -> str:
    """The deepest existing directory on the way to ``path`` (``path`` itself if it exists);
    ResourceError when a component on the way is a file."""
    p = os.path.abspath(os.fspath(path))
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    if not os.path.isdir(p):
        raise ResourceError(f"--out {path}: {p} is a file, not a directory")
    return p


def check_writable(path) -> None:
    """ResourceError unless a file can be created in ``path`` (or, if it does not exist
    yet, in its nearest existing parent, where it would be made). Creates nothing that
    stays behind."""
    base = existing_ancestor(path)
    probe = os.path.join(base, f".granular-write-test.{os.getpid()}")
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = "" if base == os.path.abspath(os.fspath(path)) else f" (it would be created in {base})"
        raise ResourceError(f"--out {path}: not writable{where}: {exc.strerror or exc}") from None


def check_disk(path, needed_bytes, what="the output") -> int:
    """ResourceError when the file system of ``path`` has less free space than
    ``needed_bytes``; returns the free bytes."""
    free = shutil.disk_usage(existing_ancestor(path)).free
    if needed_bytes > free:
        raise ResourceError(f"--out {path}: {what} needs about {_gb(needed_bytes)} of disk; {_gb(free)} are free "
                            "there. Write fewer frames (run.output_every), or choose another --out")  # fmt: skip
    return free


def run_output_bytes(n, bonds, frames, rows, columns) -> int:
    """Size of a particle run's output directory: ``frames`` ParaView frames (about 230 B
    per particle and 45 B per bond each, before compression), ``rows`` × ``columns``
    series values (25 characters each), two checkpoints' worth (160 B per particle, 1 per
    bond) and 1 MB of plots."""
    per_frame = 230 * n + 45 * bonds + 4096
    return int(frames * per_frame + rows * columns * 25 + 2 * (160 * n + bonds) + 2**20)


def output_counts(total_steps, first_step, frame_every, series_every, ckpt_every) -> tuple[int, int]:
    """How many frames and series rows a run from ``first_step`` to ``total_steps`` writes."""
    left = max(total_steps - first_step, 0)
    frames = left // max(frame_every, 1) + 2
    rows = left // max(series_every, 1) + 2
    return int(frames), int(rows)


def cadence(interval, dt, default) -> int:
    """Steps between outputs for a time ``interval`` (``default`` when None)."""
    if interval is None:
        return default
    return max(1, int(round(interval / dt)))


__all__ = ["BODY_DEVICE_BYTES", "BODY_HOST_BYTES", "ResourceError", "bytes_per_item", "cadence", "check_body_memory",
           "check_disk", "check_memory", "check_writable",
           "host_memory_available", "memory_needed", "output_counts", "run_output_bytes"]  # fmt: skip
