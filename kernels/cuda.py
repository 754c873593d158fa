"""GPU kernels: the bodies of :mod:`kernels.particles`, :mod:`kernels.interactions` and
:mod:`kernels.grid` compiled by ``numba.cuda.jit(device=True)``, one thread per particle
(or bond, or bucket), launched on numba device arrays that view CuPy memory or, under
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), on NumPy arrays.

The kernels are compiled once per contact law (:func:`for_law`, the law's scalar
functions inlined into the loops of :mod:`kernels.contacts`). The launchers have the
names and arguments of their twins in :mod:`kernels.cpu`; they
launch on the stream set by :func:`set_stream` (a non-blocking CuPy stream seen through
``numba.cuda.external_stream``), so that :class:`kernels.program.Program` can capture a
block of steps as a CUDA graph and replay it. Nothing here reads back to the host:
reductions (the block report) end in atomics on a small device array.
"""

import os
from types import SimpleNamespace

import numpy as np
from numba import cuda, float64, int32

from . import grid, interactions, particles
from . import walls as wall_motion
from .cache import cuda_kernel
from .layout import (
    BIT_NOT_FINITE,
    BIT_ROTATION,
    BIT_SKIN,
    FAMILY_BONDS,
    REPORT_ACCEL2,
    REPORT_BUCKET,
    REPORT_DISPLACEMENT2,
    REPORT_NEIGHBORS,
    REPORT_NOT_FINITE,
    REPORT_ROTATION,
    REPORT_SKIN,
    REPORT_SPEED2,
)

# The simulator runs every thread of a block as a Python thread, padding included, so
# small blocks keep its tests fast; on hardware 256 threads per block.
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
THREADS_PER_BLOCK = 8 if SIMULATED else 256
TPB = THREADS_PER_BLOCK

# Device functions are inlined into the kernels (NVVM ``alwaysinline``); the simulator's
# decorator has no such option.
_device = cuda.jit(device=True) if SIMULATED else cuda.jit(device=True, forceinline=True)
_device.outline = cuda.jit(device=True)  # the triangle-mesh loops: one device function each

name = "cuda"
simulated = SIMULATED

#: Each end evaluates its bonds inside the force kernel (no (B, 9) buffer written and
#: read back). ``GRANULAR_BOND_PASS=per-bond`` selects the per-bond pass instead, for
#: comparison; both give the same bits.
PER_BOND_PASS = os.environ.get("GRANULAR_BOND_PASS", "per-particle") == "per-bond"

#: Dissipative contacts: each end evaluates its pairs inside the force kernel. With
#: ``GRANULAR_CONTACT_PASS=per-pair`` a per-pair kernel evaluates each pair once into
#: slots for both ends first (as on the CPU), for comparison; both give the same bits.
PER_CONTACT_PASS = os.environ.get("GRANULAR_CONTACT_PASS", "per-particle") == "per-pair"

_stream = [0]


def set_stream(stream) -> None:
    """Launch on ``stream`` from now on (a numba stream; 0 is the legacy default stream)."""
    _stream[0] = stream


_configured = {}


def _launch(kernel, n):
    """``kernel`` configured for ``n`` threads on the current stream; configurations are
    made once per (kernel, size, stream) and reused (arguments are numba device arrays
    made once, see :func:`to_device`). The CUDA simulator's ``kernel[...]`` sets the
    configuration on the kernel object itself and returns it, so there every launch
    configures afresh."""
    if SIMULATED:
        return kernel[max(1, (n + TPB - 1) // TPB), TPB, _stream[0]]
    key = (kernel, n, _stream[0])
    cfg = _configured.get(key)
    if cfg is None:
        cfg = _configured[key] = kernel[max(1, (n + TPB - 1) // TPB), TPB, _stream[0]]
    return cfg


_compiled = {}


def for_law(law, meshes=False):
    """The kernels for the contact law ``law`` (a module of :mod:`kernels.contact_laws`),
    made on first use (numba-cuda compiles each at its first launch, or loads it from
    the kernel cache, :mod:`kernels.cache`); with ``meshes``,
    the variant that also meets triangle meshes (:func:`kernels.cpu.for_law`)."""
    key = (law.NAME, bool(meshes))
    k = _compiled.get(key)
    if k is None:
        k = _compiled[key] = _compile(law, bool(meshes))
    return k


def _compile(law, meshes=False):
    # Kept on disk by the law's name (:func:`kernels.cache.cuda_kernel`): a second process
    # loads them instead of compiling them again.
    kernel = cuda_kernel(law.NAME + ("+meshes" if meshes else ""))
    _P = particles.build(_device, law)
    _I = interactions.build(_device, _P, law, meshes=meshes)
    _G = grid.build(_device, law.HISTORY)
    HISTORY = law.HISTORY

    _advance_body = _P.advance_body
    _save_body = _P.save_body
    _report_values = _P.report_values
    _forces_body = _I.forces_body
    _family_forces_body = _I.family_forces_body
    _diagnostics_body = _I.diagnostics_body
    _bond_measures_body = _I.bond_measures_body
    _bond_eval_body = _I.bond_eval_body
    _pair_pass = _I.pair_pass
    _bucket_of = _G.bucket_of
    _build_body = _G.build_body
    _keep_body = _G.keep_body
    _wall_load = _I.contacts.wall_load
    _mesh_load = _I.contacts.mesh_load
    _W = wall_motion.build(_device)
    _walls_tick = _W.tick
    _walls_place = _W.place

    # --------------------------------------------------------------------------- kernels


    @kernel
    def _wall_loads_kernel(w, dyn, par, walls, contacts, out):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _wall_load(i, w, dyn, par, walls, contacts, out)

    @kernel
    def _mesh_loads_kernel(dyn, par, walls, contacts, out, out_tri):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _mesh_load(i, dyn, par, walls, contacts, out, out_tri)


    @kernel
    def _walls_place_kernel(walls):
        if cuda.grid(1) == 0:
            _walls_place(walls)


    @kernel
    def _walls_tick_kernel(walls):
        if cuda.grid(1) == 0:
            _walls_tick(walls)


    @kernel
    def _advance_kernel(scheme, h, dyn, par, contacts, status):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _advance_body(i, scheme, h, dyn, par, contacts, status)


    @kernel
    def _forces_kernel(kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _forces_body(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    @kernel
    def _pairs_kernel(h, dyn, par, bonds, contacts):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _pair_pass(i, h, dyn, par, bonds, contacts)


    @kernel
    def _bond_eval_kernel(update, dyn, bonds):
        k = cuda.grid(1)
        if k < bonds.terms.shape[0]:
            _bond_eval_body(k, update, dyn, bonds)


    @kernel
    def _save_kernel(src, dst):
        i = cuda.grid(1)
        if i < max(src.x.shape[0], src.broken.shape[0]):
            _save_body(i, src, dst)


    @kernel
    def _block_start_kernel(status, report):
        i = cuda.grid(1)
        if i < status.shape[0]:
            status[i] = 0
        if i < report.shape[0]:
            report[i] = 0.0


    @kernel
    def _report_kernel(dyn, par, contacts, status, out):
        """Block-level reduction of the per-particle report values (shared memory), then
        one atomic per block into ``out``."""
        i = cuda.grid(1)
        t = cuda.threadIdx.x
        bits_sh = cuda.shared.array(TPB, int32)
        val_sh = cuda.shared.array((3, TPB), float64)
        b = 0
        d2 = 0.0
        v2 = 0.0
        a2 = 0.0
        if i < dyn.x.shape[0]:
            b, d2, v2, a2 = _report_values(i, dyn, par, contacts, status)
        bits_sh[t] = b
        val_sh[0, t] = d2
        val_sh[1, t] = v2
        val_sh[2, t] = a2
        cuda.syncthreads()
        s = TPB // 2
        while s > 0:
            if t < s:
                bits_sh[t] |= bits_sh[t + s]
                for c in range(3):
                    val_sh[c, t] = max(val_sh[c, t], val_sh[c, t + s])
            cuda.syncthreads()
            s //= 2
        if t == 0:
            bits = bits_sh[0]
            if bits & BIT_ROTATION:
                out[REPORT_ROTATION] = 1.0
            if bits & BIT_NOT_FINITE:
                out[REPORT_NOT_FINITE] = 1.0
            if bits & BIT_SKIN:
                out[REPORT_SKIN] = 1.0
            cuda.atomic.max(out, REPORT_DISPLACEMENT2, val_sh[0, 0])
            cuda.atomic.max(out, REPORT_SPEED2, val_sh[1, 0])
            cuda.atomic.max(out, REPORT_ACCEL2, val_sh[2, 0])


    @kernel
    def _family_forces_kernel(family, dyn, par, bonds, contacts, walls, fields):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _family_forces_body(i, family, dyn, par, bonds, contacts, walls, fields)


    @kernel
    def _diagnostics_kernel(dyn, par, bonds, contacts, walls, fields, out):
        i = cuda.grid(1)
        if i < dyn.x.shape[0]:
            _diagnostics_body(i, dyn, par, bonds, contacts, walls, fields, out)


    @kernel
    def _bond_measures_kernel(dyn, bonds, out):
        k = cuda.grid(1)
        if k < bonds.a.shape[0]:
            _bond_measures_body(k, dyn, bonds, out)


    @kernel
    def _keep_kernel(contacts):
        i = cuda.grid(1)
        if i < contacts.count.shape[0]:
            _keep_body(i, contacts)


    @kernel
    def _velocities_kernel(dyn):
        i = cuda.grid(1)
        if i < dyn.vp.shape[0]:
            for c in range(dyn.vp.shape[1]):
                dyn.vp[i, c] = dyn.v[i, c % 3]
                dyn.wp[i, c] = dyn.omega[i, c % 3]


    @kernel
    def _grid_clear_kernel(grid_):
        b = cuda.grid(1)
        if b < grid_.bucket_count.shape[0]:
            grid_.bucket_count[b] = 0


    @kernel
    def _grid_bin_kernel(x, grid_, period):
        """Each particle takes the next slot of its bucket (atomic); the order within a
        bucket varies from run to run, the sorted list rows built from it do not."""
        i = cuda.grid(1)
        if i < x.shape[0]:
            b = _bucket_of(i, x, grid_, period)
            slot = cuda.atomic.add(grid_.bucket_count, b, 1)
            if slot < grid_.members.shape[1]:
                grid_.members[b, slot] = i


    @kernel
    def _grid_build_kernel(x, radius, contacts, grid_, out):
        """Rows of the Verlet list; the largest row length and bucket occupancy go to ``out``
        (block reduction, one atomic per block)."""
        i = cuda.grid(1)
        t = cuda.threadIdx.x
        sh = cuda.shared.array((2, TPB), float64)
        n = 0
        fill = 0
        if i < x.shape[0]:
            fill = grid_.bucket_count[_bucket_of(i, x, grid_, contacts.period)]
            n = _build_body(i, x, radius, contacts, grid_)
        sh[0, t] = n
        sh[1, t] = fill
        cuda.syncthreads()
        s = TPB // 2
        while s > 0:
            if t < s:
                sh[0, t] = max(sh[0, t], sh[0, t + s])
                sh[1, t] = max(sh[1, t], sh[1, t + s])
            cuda.syncthreads()
            s //= 2
        if t == 0:
            cuda.atomic.max(out, REPORT_NEIGHBORS, sh[0, 0])
            cuda.atomic.max(out, REPORT_BUCKET, sh[1, 0])


    # ------------------------------------------------------------------------- launchers


    def advance(scheme, h, dyn, par, contacts, status):
        _launch(_advance_kernel, dyn.x.shape[0])(scheme, h, dyn, par, contacts, status)


    def _bond_pass(update, dyn, bonds):
        """The per-bond pass before the particles gather (nothing with an empty buffer)."""
        if bonds.terms.shape[0]:
            _launch(_bond_eval_kernel, bonds.terms.shape[0])(update, dyn, bonds)


    def forces(kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        _bond_pass(True, dyn, bonds)
        if contacts.res.shape[0]:  # the per-pair pass
            _launch(_pairs_kernel, dyn.x.shape[0])(h, dyn, par, bonds, contacts)
        _launch(_forces_kernel, dyn.x.shape[0])(kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    def steps(nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """``nsteps`` steps: two launches each (queued; nothing waits)."""
        for _ in range(nsteps):
            advance(scheme, h, dyn, par, contacts, status)
            walls_tick(walls)
            forces(True, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    def wall_loads(w, dyn, par, walls, contacts, out):
        """Each particle's load on wall ``w`` (force, moment about its centre) into ``out`` (N, 6)."""
        _launch(_wall_loads_kernel, dyn.x.shape[0])(w, dyn, par, walls, contacts, out)

    def mesh_loads(dyn, par, walls, contacts, out, out_tri):
        """Each particle's loads on the meshes into ``out`` (N, 4, 9) and ``out_tri`` (N, 4)."""
        _launch(_mesh_loads_kernel, dyn.x.shape[0])(dyn, par, walls, contacts, out, out_tri)


    def walls_place(walls):
        """Put the moving walls where the walls' clock says (one thread; nothing without)."""
        if walls.clock.shape[0]:
            _launch(_walls_place_kernel, 1)(walls)


    def walls_tick(walls):
        """One step of the walls' clock, the moving walls placed at its new time."""
        if walls.clock.shape[0]:
            _launch(_walls_tick_kernel, 1)(walls)



    def save(src, dst):
        _launch(_save_kernel, max(src.x.shape[0], src.broken.shape[0]))(src, dst)


    def block_start(status, report):
        _launch(_block_start_kernel, max(status.shape[0], report.shape[0]))(status, report)


    def report(dyn, par, contacts, status, out):
        _launch(_report_kernel, dyn.x.shape[0])(dyn, par, contacts, status, out)


    def family_forces(family, dyn, par, bonds, contacts, walls, fields):
        if family == FAMILY_BONDS:
            _bond_pass(False, dyn, bonds)
        _launch(_family_forces_kernel, dyn.x.shape[0])(family, dyn, par, bonds, contacts, walls, fields)


    def diagnostics(dyn, par, bonds, contacts, walls, fields, out):
        _launch(_diagnostics_kernel, dyn.x.shape[0])(dyn, par, bonds, contacts, walls, fields, out)


    def bond_measures(dyn, bonds, out):
        if bonds.a.shape[0]:
            _launch(_bond_measures_kernel, bonds.a.shape[0])(dyn, bonds, out)


    def rebuild(x, radius, contacts, grid_, report):
        """Build the neighbour list at ``x`` in place (three launches, no read-back); the
        largest row length and bucket occupancy go to ``report``; with the dissipative law the
        rows and springs are first copied aside, and the build carries the springs."""
        if HISTORY > 0:
            _launch(_keep_kernel, contacts.count.shape[0])(contacts)
        _launch(_grid_clear_kernel, grid_.bucket_count.shape[0])(grid_)
        _launch(_grid_bin_kernel, x.shape[0])(x, grid_, contacts.period)
        _launch(_grid_build_kernel, x.shape[0])(x, radius, contacts, grid_, report)


    def evaluation_velocities(dyn):
        """``vp = v``, ``wp = Ω`` (see :func:`kernels.cpu.evaluation_velocities`)."""
        _launch(_velocities_kernel, dyn.vp.shape[0])(dyn)



    compiled = {k: v for k, v in locals().items() if k.endswith("_kernel")}
    return SimpleNamespace(name=name, simulated=simulated, law=law, advance=advance, forces=forces, steps=steps,
                           save=save, block_start=block_start, report=report, family_forces=family_forces,
                           diagnostics=diagnostics, bond_measures=bond_measures, rebuild=rebuild,
                           evaluation_velocities=evaluation_velocities, to_device=to_device, set_stream=set_stream,
                           walls_place=walls_place, walls_tick=walls_tick, set_clock=set_clock, wall_loads=wall_loads, mesh_loads=mesh_loads,
                           PER_BOND_PASS=PER_BOND_PASS, PER_CONTACT_PASS=PER_CONTACT_PASS, block=None,
                           kernels=compiled, dispatchers=compiled)  # fmt: skip


def to_device(a):
    """A numba device array viewing the CuPy array ``a`` (converted once: launches with
    numba arrays skip the per-launch ``__cuda_array_interface__`` parsing); NumPy arrays
    pass through under the simulator."""
    if isinstance(a, np.ndarray):
        return a
    return cuda.as_cuda_array(a)


def set_clock(clock, values) -> None:
    """Write the walls' clock ``(t_0, k, h)`` (:mod:`kernels.walls`) on the current stream."""
    if isinstance(clock, np.ndarray):
        clock[:] = values
    else:
        clock.copy_to_device(np.asarray(values, dtype=np.float64), stream=_stream[0])
