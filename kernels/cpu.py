"""CPU kernels: the bodies of :mod:`kernels.particles`, :mod:`kernels.interactions` and
:mod:`kernels.grid` compiled by ``numba.njit``, each looping over a range of particles
(or bonds) and writing only their own rows: deterministic, and the same bits whether a
loop runs on one thread or many.

Each loop is a serial function over ``[lo, hi)``; the parallel launch splits the rows
into chunks handed to threads by ``prange`` (:func:`_chunks`). Systems smaller than
:data:`SERIAL_BELOW`, and any system on one thread, run the serial functions: waking the
thread pool costs more than their work, and on a loaded machine a parallel region can
wait a whole scheduler time slice for a descheduled thread. A block of ``K`` steps is one
compiled call (:func:`block`): the interpreter is not involved between steps.

Contacts go through the direct pass (:mod:`kernels.contacts`): each pair is evaluated
once, by its lower index, and its terms on the higher end are added straight into that
end's compensated running sums, in the order each end would have added them itself; only
the pairs whose partner lies in a later chunk go through slots (the cross pass). A step
is the bond pass (with bonds), the cross pass and the direct pass, which also finishes
each row (forces, kick) and takes its next step's advance. Inside a block the neighbour
list is rebuilt after any advance that took a particle more than skin/2 from its place at
the last build (LAMMPS's every-step check), before the forces.

Compiled without Numba's reference counting (``_nrt=False``; nothing here allocates):
with it, every field read from an argument bundle costs an atomic increment and
decrement, which made the loops 5-30x slower. Two more choices come from measurement:
the loops call range functions instead of inlining the bodies into ``prange`` loops
(Numba 0.68 loses writes made through named-tuple fields inside a ``prange`` body), and
bonds are evaluated once each in a per-bond pass, then gathered per particle
(:data:`PER_BOND_PASS`; each end evaluating its bonds itself is 2-3x slower per bond here
because of the scattered reads).

The kernels are compiled once per contact law (:func:`for_law`, the law's scalar
functions inlined into the loops of :mod:`kernels.contacts`), and cached on disk per law.
The launchers have the names and arguments of their twins in :mod:`kernels.cuda`
(:class:`kernels.program.Program` drives both).
"""

from types import SimpleNamespace

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import get_num_threads, njit, prange
from numba.core import cgutils, types
from numba.core.extending import intrinsic

from . import bonds as bond_bodies
from . import grid, interactions, particles
from . import walls as wall_motion
from .cache import keyed
from .laws import CONTACTS_LIST, acc_layout
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
    REPORT_REBUILDS,
    REPORT_ROTATION,
    REPORT_SKIN,
    REPORT_SPEED2,
)

#: Systems with fewer particles (or bonds) run on one thread.
SERIAL_BELOW = 512
#: Chunks of rows per thread in a parallel pass (:func:`_chunk`). The direct pass's pairs
#: that cross from one chunk into a later one go through the cross pass and the slots (a
#: pass of their own, the terms written and read back): at 8 chunks a thread they were
#: 12-25 % of a lattice's pairs. More chunks would balance uneven rows better, but on two
#: threads (N = 10,648, 2026-11-29) 1, 2, 4 and 8 chunks a thread took 0.958, 0.941, 0.966
#: and 0.987 ms a step of the bonded frictional block and 0.521, 0.523, 0.651 and 0.620 ms
#: of the frictional spheres (``docs/engine.md``, "Fewer chunks, fewer pairs between them").
CHUNKS_PER_THREAD = 2
#: Rows of the direct pass whose next step's advance is taken at once, in vector lanes
#: (``_direct_range``). One thread, N = 10,648, the advance alone (``python
#: bench/particle_lanes.py``): 13.7 ns a particle in the scalar body, 8.0 over all rows
#: at once, 9.2 at 256 rows a call, 12.3 at 64 (the frictional spheres; the Hertz
#: spheres, without the dashpots' velocities: 12.7, 5.1, 5.7, 7.6).
LANE_ROWS = 256
#: Bonds are evaluated in a per-bond pass into a buffer, then gathered per particle.
PER_BOND_PASS = True
#: Contacts are evaluated once per pair, by the lower index, in the direct pass
#: (:mod:`kernels.contacts`, ``cross_pass``, ``direct_start``, ``direct_sum``): half the
#: law evaluations of each end evaluating its own, with the terms on the higher end added
#: straight into its running sums (slots only for the pairs that cross a chunk).
PER_CONTACT_PASS = True
DIRECT_PASS = True

name = "cpu"
simulated = False

# Constant arguments of compiled functions called from compiled functions. A literal
# ``0`` or ``True`` there is typed ``Literal[int](0)``, ``Literal[bool](True)``: the callee
# would be compiled a second time for those types, besides the ``int64``, ``bool`` of the
# launchers' calls from Python (about 25 s more of a first run on 2 cores).
_0 = np.int64(0)
_TRUE = np.bool_(True)
_FALSE = np.bool_(False)

# LLVM vectorises a loop only if the run-time checks it needs (that its arrays do not
# overlap, that its index arithmetic does not wrap) stay under its limits, 8 and 16 by
# default; the advance in lanes (``_advance_lanes``) reads and writes a dozen arrays.
# Raised for every loop this process compiles: a loop that now vectorises computes each
# element as before (no reduction is reordered without fast-math), so no result changes.
llvm.set_option("", "-runtime-memory-check-threshold=256")
llvm.set_option("", "-vectorize-scev-check-threshold=256")

# Laws and bodies are inlined at Numba IR level into the range functions: LLVM does not
# inline across separately compiled functions returning tuples.
_jit = njit(inline="always", error_model="numpy")
# The triangle-mesh loops (kernels.meshes) are compiled once, called from the inlined wall
# loops: inlined at every call site they multiplied the compile time of every law.
_jit.outline = njit(error_model="numpy")

# IEEE arithmetic as on the GPU (``error_model="numpy"``): a division by zero gives an
# infinity or a NaN, which the step's finiteness checks report, instead of a Python
# exception from inside a loop.
_kernel = njit(cache=True, nogil=True, _nrt=False, error_model="numpy")
_parallel = njit(parallel=True, cache=True, nogil=True, _nrt=False, error_model="numpy")


@intrinsic
def _prefetch(typingctx, arr, i, p):
    """Ask the CPU to bring the cache line of ``arr[i, p, 0]`` (a 3-D array) into its
    caches, for writing: ``llvm.prefetch``, a hint with no effect on any value."""
    if not (isinstance(arr, types.Array) and arr.ndim == 3 and isinstance(i, types.Integer)
            and isinstance(p, types.Integer)):  # fmt: skip
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], sig.args[1], types.intp),
               context.cast(builder, args[2], sig.args[2], types.intp), context.get_constant(types.intp, 0)]  # fmt: skip
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")  # fmt: skip
        # write, keep in all cache levels, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, i, p), codegen


@intrinsic
def _acc_add(typingctx, acc, row, xs):
    """``acc[row, k] += xs[k]`` with compensation, for the 3 or 6 numbers of ``xs``: the
    running sums of the direct pass (``Contacts.acc``, :func:`kernels.laws.acc_layout`),
    each sum at column ``k`` and its correction at ``k + 4`` (3 numbers: a law without
    moments) or ``k + 8`` (6). One vector of 4 or 8 lanes does what
    :func:`kernels.laws.compensated_add` does to each component (TwoSum, the same
    operations lane by lane: the same bits), where the scalar form takes seven additions a
    component; the lanes past ``xs`` add zero to zero."""
    if not (isinstance(acc, types.Array) and acc.ndim == 2 and acc.layout == "C" and isinstance(row, types.Integer)
            and isinstance(xs, types.UniTuple) and xs.count in (3, 6) and xs.dtype == acc.dtype):  # fmt: skip
        return None
    lanes = acc_layout(xs.count == 6)[1]  # the corrections' column: the vector's width

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], sig.args[1], types.intp), context.get_constant(types.intp, 0)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)
        elt = context.get_data_type(aryty.dtype)
        vec = ir.VectorType(elt, lanes)
        align = context.get_abi_sizeof(elt)
        sums = builder.bitcast(ptr, vec.as_pointer())
        corr = builder.bitcast(builder.gep(ptr, [context.get_constant(types.intp, lanes)]), vec.as_pointer())
        x = ir.Constant(vec, [ir.Constant(elt, 0.0)] * lanes)
        for k in range(xs.count):
            x = builder.insert_element(x, builder.extract_value(args[2], k), ir.Constant(ir.IntType(32), k))
        s = builder.load(sums, align=align)
        t = builder.fadd(s, x)
        z = builder.fsub(t, s)
        e = builder.fadd(builder.fsub(s, builder.fsub(t, z)), builder.fsub(x, z))
        builder.store(builder.fadd(builder.load(corr, align=align), e), corr, align=align)
        builder.store(t, sums, align=align)
        return context.get_dummy_value()

    return types.void(acc, row, xs), codegen


#: Floats of the per-bond pass's lane buffer (:func:`kernels.bonds.build` ``bond_lanes``).
_LANE_FLOATS = bond_bodies.LANES * (bond_bodies.LANE_IN + bond_bodies.LANE_OUT)


@intrinsic
def _lane_buffer(typingctx, like):
    """A 1-D array of :data:`_LANE_FLOATS` numbers of ``like``'s type on the calling
    function's stack (an ``alloca`` in its entry block): each thread's own scratch, with
    no allocation (these kernels run without Numba's runtime) and no array for the caller
    to keep. Its contents are undefined until written."""
    if not isinstance(like, types.Array):
        return None
    retty = types.Array(like.dtype, 1, "C")

    def codegen(context, builder, sig, args):
        lltype = context.get_data_type(like.dtype)
        size = context.get_abi_sizeof(lltype)
        ptr = cgutils.alloca_once(builder, lltype, size=context.get_constant(types.intp, _LANE_FLOATS))
        ary = context.make_array(retty)(context, builder)
        intp = lambda v: context.get_constant(types.intp, v)
        context.populate_array(ary, data=ptr, shape=[intp(_LANE_FLOATS)], strides=[intp(size)], itemsize=intp(size),
                               meminfo=None)  # fmt: skip
        return ary._getvalue()

    return retty(like), codegen


@_jit
def _prefetch_springs(k, contacts):
    """Prefetch the springs of row ``k``'s own pairs (partners ``j > k``) that held springs
    at the last step, which the direct pass is about to read and write. Their lines are
    scattered over an (N, capacity, 8) array (one 64-byte line a float64 slot) much larger
    than the caches: fetched on demand, each is a memory miss (about 60 ns of a two-thread
    pass per slot at N = 64000)."""
    if contacts.hist.shape[0] == 0:
        return
    for p in range(min(contacts.count[k], contacts.nbr.shape[1])):
        if contacts.nbr[k, p] > k and contacts.live[k, p] != 0:
            _prefetch(contacts.hist, k, p)


@_kernel
def _chunk(c, nchunks, n):
    """Rows ``[lo, hi)`` of chunk ``c`` of ``nchunks`` over ``n`` rows, the chunks dealt
    round-robin: the static schedule gives each of ``T`` threads ``CHUNKS_PER_THREAD``
    consecutive chunk numbers, which map to every ``T``-th slice of the rows. Work is often
    gathered in one region of the particle order (the face of a block that hits a wall);
    contiguous halves would leave it to one thread.

    ``prange`` hands ``c`` over as an unsigned integer; mixed with the signed row counts,
    Numba would promote the bounds to float64, and every range function called with them
    would be compiled a second time, for float64 bounds (with float loop counters)."""
    c = np.int64(c)
    if nchunks % CHUNKS_PER_THREAD == 0:
        c = (c % CHUNKS_PER_THREAD) * (nchunks // CHUNKS_PER_THREAD) + c // CHUNKS_PER_THREAD
    size = (n + nchunks - 1) // nchunks
    lo = c * size
    return lo, min(n, lo + size)



_compiled = {}


def for_law(law, meshes=False):
    """The kernels for the contact law ``law`` (a module of :mod:`kernels.contact_laws`),
    compiled on first use and cached on disk (one entry per law in each function's
    cache index: :func:`kernels.cache.keyed`); with ``meshes``, the variant that also
    meets triangle meshes (:mod:`kernels.meshes`: compiled only for models that have
    them, so that the others neither compile nor carry that code)."""
    key = (law.NAME, bool(meshes))
    k = _compiled.get(key)
    if k is None:
        k = _compiled[key] = _compile(law, bool(meshes))
    return k


def _compile(law, meshes=False):
    name = law.NAME + ("+meshes" if meshes else "")

    dispatchers = {}  # every compiled function by name, for granular.precompile

    def kernel(fn):
        d = dispatchers[fn.__name__] = _kernel(keyed(fn, name))
        return d

    def parallel(fn):
        d = dispatchers[fn.__name__] = _parallel(keyed(fn, name))
        return d

    _P = particles.build(_jit, law)
    _I = interactions.build(_jit, _P, law, _prefetch_springs, meshes=meshes, acc_add=_acc_add)
    _G = grid.build(_jit, law.HISTORY)
    HISTORY = law.HISTORY

    _advance_body = _P.advance_body
    _forces_body = _I.forces_body
    _bond_range = _I.bond_range
    _cross_pass = _I.cross_pass
    _direct_start = _I.direct_start
    _direct_chunk = _I.direct_chunk
    _direct_begin = _I.direct_begin
    _direct_rows = _I.direct_rows
    _advance_rows = _P.advance_rows
    _save_body = _P.save_body
    _family_forces_body = _I.family_forces_body
    _diagnostics_body = _I.diagnostics_body
    _bond_measures_body = _I.bond_measures_body
    _build_body = _G.build_body
    _sorted_body = _G.sorted_body
    _restore_counts = _G.restore_counts
    _sort_cells = _G.sort_cells
    _sort_box = _G.sort_box
    _sort_index = _G.sort_index
    _sort_place = _G.sort_place
    _keep_body = _G.keep_body
    _report_values = _P.report_values
    _bucket_of = _G.bucket_of
    _wall_load = _I.contacts.wall_load
    _mesh_load = _I.contacts.mesh_load
    _W = wall_motion.build(_jit)
    _walls_tick = _W.tick
    _walls_place = _W.place

    # --------------------------------------------------------------- range functions


    @kernel
    def _advance_range(lo, hi, scheme, h, dyn, par, contacts, status):
        for i in range(lo, hi):
            _advance_body(i, scheme, h, dyn, par, contacts, status)


    @kernel
    def _bond_eval_range(lo, hi, update, dyn, bonds):
        """The per-bond pass over ``[lo, hi)`` (:func:`kernels.bonds.build` ``bond_range``),
        its lanes' buffer on this thread's stack."""
        _bond_range(lo, hi, update, dyn, bonds, _lane_buffer(dyn.x))


    @kernel
    def _forces_range(lo, hi, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        for i in range(lo, hi):
            _forces_body(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    @kernel
    def _cross_range(lo, hi, h, dyn, par, bonds, contacts):
        """The pairs of rows ``[lo, hi)`` with partners from ``hi`` on, into slots (the
        last chunk has none)."""
        if hi >= dyn.x.shape[0]:
            return
        for i in range(lo, hi):
            _cross_pass(i, hi, h, dyn, par, bonds, contacts)


    @kernel
    def _advance_lanes(lo, hi, kick, scheme, h, dyn, par, contacts, status):
        """The end of the step (with ``kick`` the second half kick; the finiteness test)
        and the next step's advance of rows ``[lo, hi)`` in vector lanes
        (:func:`kernels.particles.build` ``advance_rows``)."""
        _advance_rows(lo, hi, kick, scheme, h, dyn, par, contacts, status)


    @kernel
    def _direct_range(lo, hi, kick, fuse, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """The direct pass over the chunk ``[lo, hi)``, after the cross pass of every chunk
        (:func:`kernels.interactions.build` ``direct_chunk``). Outside a periodic box,
        when the next step's advance follows (``fuse``), each :data:`LANE_ROWS` rows'
        forces are stored first, then those rows' second half kick, finiteness test and
        advance made at once in vector lanes (:func:`_advance_lanes`), instead of each
        row's own: the same bits."""
        if fuse and contacts.period.shape[0] == 0:
            _direct_begin(lo, hi, contacts)
            for r0 in range(lo, hi, LANE_ROWS):
                r1 = min(r0 + LANE_ROWS, hi)
                _direct_rows(r0, r1, hi, h, dyn, par, bonds, contacts, walls, fields)
                _advance_lanes(r0, r1, kick, scheme, h, dyn, par, contacts, status)
        else:
            _direct_chunk(lo, hi, kick, fuse, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    @kernel
    def _save_range(lo, hi, src, dst):
        for i in range(lo, hi):
            _save_body(i, src, dst)


    @kernel
    def _family_forces_range(lo, hi, family, dyn, par, bonds, contacts, walls, fields):
        for i in range(lo, hi):
            _family_forces_body(i, family, dyn, par, bonds, contacts, walls, fields)


    @kernel
    def _diagnostics_range(lo, hi, dyn, par, bonds, contacts, walls, fields, out):
        for i in range(lo, hi):
            _diagnostics_body(i, dyn, par, bonds, contacts, walls, fields, out)


    @kernel
    def _wall_loads_range(lo, hi, w, dyn, par, walls, contacts, out):
        for i in range(lo, hi):
            _wall_load(i, w, dyn, par, walls, contacts, out)

    @kernel
    def _mesh_loads_range(lo, hi, dyn, par, walls, contacts, out, out_tri):
        for i in range(lo, hi):
            _mesh_load(i, dyn, par, walls, contacts, out, out_tri)


    @kernel
    def _bond_measures_range(lo, hi, dyn, bonds, out):
        for k in range(lo, hi):
            _bond_measures_body(k, dyn, bonds, out)


    @kernel
    def _keep_range(lo, hi, contacts):
        for i in range(lo, hi):
            _keep_body(i, contacts)


    @kernel
    def _velocities_range(lo, hi, dyn):
        for i in range(lo, hi):
            for c in range(dyn.vp.shape[1]):
                dyn.vp[i, c] = dyn.v[i, c % 3]
                dyn.wp[i, c] = dyn.omega[i, c % 3]


    @_jit
    def _sorted(grid):
        """Whether the last binning filled the sorted cell list (``sort_cells``)."""
        return grid.cells.shape[0] > 3 and grid.cells[3] != 0


    @kernel
    def _build_range(lo, hi, x, radius, contacts, grid):
        if _sorted(grid):  # the sorted cell list (sort_cells)
            for i in range(lo, hi):
                _sorted_body(i, x, radius, contacts, grid)
        else:
            for i in range(lo, hi):
                _build_body(i, x, radius, contacts, grid)


    # ----------------------------------------------------- whole steps, one call per block


    @kernel
    def _direct(contacts):
        """Whether the contacts go through the direct pass (a neighbour list)."""
        return contacts.mode == CONTACTS_LIST and contacts.acc.shape[0] > 0


    @kernel
    def _steps_serial(nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        n, nb = dyn.x.shape[0], bonds.terms.shape[0]
        if _direct(contacts):  # each step's advance fused into the last step's force pass
            if nsteps > 0:
                _advance_range(_0, n, scheme, h, dyn, par, contacts, status)
            for k in range(nsteps):
                _walls_tick(walls)
                if nb > 0:
                    _bond_eval_range(_0, nb, _TRUE, dyn, bonds)
                _direct_range(_0, n, _TRUE, k + 1 < nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields,
                              status)  # fmt: skip
        else:
            for _ in range(nsteps):
                _advance_range(_0, n, scheme, h, dyn, par, contacts, status)
                _walls_tick(walls)
                if nb > 0:
                    _bond_eval_range(_0, nb, _TRUE, dyn, bonds)
                _forces_range(_0, n, _TRUE, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    @parallel
    def _steps_parallel(nsteps, nchunks, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        n, nb = dyn.x.shape[0], bonds.terms.shape[0]
        direct = _direct(contacts)
        fused = direct and nsteps > 0
        if fused:
            for c in prange(nchunks):
                lo, hi = _chunk(c, nchunks, n)
                _advance_range(lo, hi, scheme, h, dyn, par, contacts, status)
        for k in range(nsteps):
            if not fused:
                for c in prange(nchunks):
                    lo, hi = _chunk(c, nchunks, n)
                    _advance_range(lo, hi, scheme, h, dyn, par, contacts, status)
            _walls_tick(walls)
            if nb > 0:
                for c in prange(nchunks):
                    lo, hi = _chunk(c, nchunks, nb)
                    _bond_eval_range(lo, hi, _TRUE, dyn, bonds)
            if direct:
                for c in prange(nchunks):
                    lo, hi = _chunk(c, nchunks, n)
                    _cross_range(lo, hi, h, dyn, par, bonds, contacts)
                fuse = k + 1 < nsteps
                for c in prange(nchunks):
                    lo, hi = _chunk(c, nchunks, n)
                    _direct_range(lo, hi, _TRUE, fuse, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
            else:
                for c in prange(nchunks):
                    lo, hi = _chunk(c, nchunks, n)
                    _forces_range(lo, hi, _TRUE, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    # --------------------------------------------------------- parallel single passes


    @parallel
    def _advance_parallel(nchunks, scheme, h, dyn, par, contacts, status):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, dyn.x.shape[0])
            _advance_range(lo, hi, scheme, h, dyn, par, contacts, status)


    @parallel
    def _bond_eval_parallel(nchunks, update, dyn, bonds):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, bonds.terms.shape[0])
            _bond_eval_range(lo, hi, update, dyn, bonds)


    @parallel
    def _forces_parallel(nchunks, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, dyn.x.shape[0])
            _forces_range(lo, hi, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    @parallel
    def _direct_parallel(nchunks, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        n = dyn.x.shape[0]
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, n)
            _cross_range(lo, hi, h, dyn, par, bonds, contacts)
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, n)
            _direct_range(lo, hi, kick, _FALSE, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    @parallel
    def _save_parallel(nchunks, src, dst):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, max(src.x.shape[0], src.broken.shape[0]))
            _save_range(lo, hi, src, dst)


    @parallel
    def _family_forces_parallel(nchunks, family, dyn, par, bonds, contacts, walls, fields):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, dyn.x.shape[0])
            _family_forces_range(lo, hi, family, dyn, par, bonds, contacts, walls, fields)


    @parallel
    def _diagnostics_parallel(nchunks, dyn, par, bonds, contacts, walls, fields, out):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, dyn.x.shape[0])
            _diagnostics_range(lo, hi, dyn, par, bonds, contacts, walls, fields, out)


    @parallel
    def _bond_measures_parallel(nchunks, dyn, bonds, out):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, bonds.a.shape[0])
            _bond_measures_range(lo, hi, dyn, bonds, out)


    @parallel
    def _keep_parallel(nchunks, contacts):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, contacts.count.shape[0])
            _keep_range(lo, hi, contacts)


    @parallel
    def _build_parallel(nchunks, x, radius, contacts, grid):
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, x.shape[0])
            _build_range(lo, hi, x, radius, contacts, grid)


    # ------------------------------------------------------------------ other kernels


    @kernel
    def block_start(status, report):
        """Clear the status bits and the report (the start of a block)."""
        status[:] = 0
        report[:] = 0.0


    @kernel
    def report(dyn, par, contacts, status, out):
        """Reduce the block's per-particle results into ``out`` (``REPORT_*`` slots): which
        failures occurred, the largest displacement since the last neighbour build, the
        largest speed and acceleration (squared)."""
        bits = 0
        d2max = 0.0
        v2max = 0.0
        a2max = 0.0
        for i in range(dyn.x.shape[0]):
            b, d2, v2, a2 = _report_values(i, dyn, par, contacts, status)
            bits |= b
            d2max = max(d2max, d2)
            v2max = max(v2max, v2)
            a2max = max(a2max, a2)
        out[REPORT_ROTATION] = 1.0 if bits & BIT_ROTATION else 0.0
        out[REPORT_NOT_FINITE] = 1.0 if bits & BIT_NOT_FINITE else 0.0
        out[REPORT_SKIN] = 1.0 if bits & BIT_SKIN else 0.0
        out[REPORT_DISPLACEMENT2] = d2max
        out[REPORT_SPEED2] = v2max
        out[REPORT_ACCEL2] = a2max


    @kernel
    def _grid_bin(x, grid, period):
        """Serial counting pass of every particle into its bucket (deterministic order)."""
        grid.bucket_count[:] = 0
        depth = grid.members.shape[1]
        most = 0
        for i in range(x.shape[0]):
            b = _bucket_of(i, x, grid, period)
            slot = grid.bucket_count[b]
            if slot < depth:
                grid.members[b, slot] = i
            grid.bucket_count[b] = slot + 1
            most = max(most, slot + 1)
        return most


    @kernel
    def _max_count(count):
        most = 0
        for i in range(count.shape[0]):
            most = max(most, count[i])
        return most


    @kernel
    def _bin(x, radius, grid, period, report):
        """Bin the particles: into the sorted cell list where it applies (it cannot
        overflow), else into the hash grid; False when a bucket overflowed (the caller
        regrows)."""
        if grid.cells.shape[0] > 3 and _sort_cells(x, radius, grid, period):
            return True
        most = _grid_bin(x, grid, period)
        report[REPORT_BUCKET] = max(report[REPORT_BUCKET], most)
        return most <= grid.members.shape[1]


    @kernel
    def _sort_index_range(lo, hi, x, grid, period):
        _sort_index(lo, hi, x, grid, period)


    @kernel
    def _sort_place_range(c0, c1, x, radius, grid):
        _sort_place(c0, c1, x, radius, grid)


    @parallel
    def _sort_parallel(nchunks, x, radius, grid, period):
        """The sorted cell list's counting sort (after ``sort_box``) on every thread: the
        particles' cells in chunks of particles, then each thread places the particles
        of a range of cells (``kernels.grid`` ``sort_place``; it reads every particle's
        cell twice, so one range per thread). The loops call compiled range functions,
        as every parallel loop here does: inlined, the writes through the ``grid`` tuple
        were dropped from the parallel loop."""
        n = x.shape[0]
        for c in prange(nchunks):
            lo, hi = _chunk(c, nchunks, n)
            _sort_index_range(lo, hi, x, grid, period)
        ncell = grid.cells[0] * grid.cells[1] * grid.cells[2]
        ranges = max(1, nchunks // CHUNKS_PER_THREAD)
        for c in prange(ranges):
            c0, c1 = _chunk(c, ranges, ncell)
            _sort_place_range(c0, c1, x, radius, grid)


    @kernel
    def _bin_parallel(nchunks, x, radius, grid, period, report):
        """:func:`_bin` with the sorted cell list's counting sort on every thread."""
        if grid.cells.shape[0] > 3 and _sort_box(x, grid, period):
            _sort_parallel(nchunks, x, radius, grid, period)
            return True
        most = _grid_bin(x, grid, period)
        report[REPORT_BUCKET] = max(report[REPORT_BUCKET], most)
        return most <= grid.members.shape[1]


    @_jit
    def _built(contacts, grid, report):
        """After a build: its largest row into the report; True if every row fitted.
        Else, after a build through the sorted cell list with history, each row that
        outgrew its array (which kept its old partners and springs) gets its old count
        back, so that every row is whole, old or new, for the regrow
        (``NeighborList.overflowed``)."""
        most = _max_count(contacts.count)
        report[REPORT_NEIGHBORS] = max(report[REPORT_NEIGHBORS], most)
        if most <= contacts.nbr.shape[1]:
            return True
        if HISTORY > 0 and _sorted(grid):
            for i in range(contacts.count.shape[0]):
                _restore_counts(i, contacts)
        return False


    @kernel
    def _rebuild_serial(x, radius, contacts, grid, report):
        """Build the list at ``x``; False if a bucket or a row outgrew its array. With
        history the springs are carried from the rows as they were before the build:
        the hash grid's from a copy of every row made first, the sorted cell list's
        within each row as it is built (``kernels.grid`` ``carry_in_place``)."""
        if not _bin(x, radius, grid, contacts.period, report):
            if HISTORY > 0:  # the regrow carries the springs from the rows kept aside
                _keep_range(_0, contacts.count.shape[0], contacts)
            return False
        if HISTORY > 0 and not _sorted(grid):
            _keep_range(_0, contacts.count.shape[0], contacts)
        _build_range(_0, x.shape[0], x, radius, contacts, grid)
        return _built(contacts, grid, report)


    @kernel
    def _rebuild_parallel(nchunks, x, radius, contacts, grid, report):
        if not _bin_parallel(nchunks, x, radius, grid, contacts.period, report):
            if HISTORY > 0:
                _keep_parallel(nchunks, contacts)
            return False
        if HISTORY > 0 and not _sorted(grid):
            _keep_parallel(nchunks, contacts)
        _build_parallel(nchunks, x, radius, contacts, grid)
        return _built(contacts, grid, report)


    @kernel
    def _moved_range(lo, hi, status):
        """Rows of ``[lo, hi)`` that moved more than skin/2 since the last build (their
        status bit is cleared: a rebuild follows)."""
        moved = 0
        for i in range(lo, hi):
            if status[i] & BIT_SKIN:
                status[i] &= ~BIT_SKIN
                moved += 1
        return moved


    @kernel
    def _block_steps_serial(nsteps, scheme, h, dyn, par, bonds, contacts, grid, walls, fields, status, out):
        """The steps of a block through the direct pass, with the neighbour list rebuilt
        inside the block wherever a particle moved more than skin/2 since the last build:
        checked after every advance, before the forces (LAMMPS's ``neigh_modify every 1
        check yes``); the rebuilds are counted in ``out[REPORT_REBUILDS]``. Forces do not
        depend on when the list was built (sorted rows, springs carried), so this changes
        no bit of a trajectory. Returns False, the block stopped, where a rebuild outgrew
        its arrays (the caller restores, regrows and runs the block again)."""
        n, nb = dyn.x.shape[0], bonds.terms.shape[0]
        if nsteps == 0:
            return True
        _advance_range(_0, n, scheme, h, dyn, par, contacts, status)
        for k in range(nsteps):
            _walls_tick(walls)
            if _moved_range(_0, n, status) > 0:
                out[REPORT_REBUILDS] += 1.0
                if not _rebuild_serial(dyn.x, par.radius, contacts, grid, out):
                    return False
            if nb > 0:
                _bond_eval_range(_0, nb, _TRUE, dyn, bonds)
            _direct_range(_0, n, _TRUE, k + 1 < nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        return True


    @parallel
    def _block_steps_parallel(nsteps, nchunks, scheme, h, dyn, par, bonds, contacts, grid, walls, fields, status, out):
        """:func:`_block_steps_serial` in parallel passes (cross pass, then direct pass)."""
        n, nb = dyn.x.shape[0], bonds.terms.shape[0]
        ok = nsteps > 0
        if ok:
            for c in prange(nchunks):
                lo, hi = _chunk(c, nchunks, n)
                _advance_range(lo, hi, scheme, h, dyn, par, contacts, status)
        for k in range(nsteps):
            if not ok:
                break
            _walls_tick(walls)
            if _moved_range(_0, n, status) > 0:  # one thread: a reduction would allocate
                out[REPORT_REBUILDS] += 1.0
                ok = _rebuild_parallel(nchunks, dyn.x, par.radius, contacts, grid, out)
                if not ok:
                    break
            if nb > 0:
                for c in prange(nchunks):
                    lo, hi = _chunk(c, nchunks, nb)
                    _bond_eval_range(lo, hi, _TRUE, dyn, bonds)
            for c in prange(nchunks):
                lo, hi = _chunk(c, nchunks, n)
                _cross_range(lo, hi, h, dyn, par, bonds, contacts)
            fuse = k + 1 < nsteps
            for c in prange(nchunks):
                lo, hi = _chunk(c, nchunks, n)
                _direct_range(lo, hi, _TRUE, fuse, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        return ok


    @kernel
    def _block_serial(nsteps, scheme, h, rebuild_first, dyn, saved, par, bonds, contacts, grid, walls, fields, status,
                      out):  # fmt: skip
        block_start(status, out)
        _walls_place(walls)
        _save_range(_0, max(dyn.x.shape[0], dyn.broken.shape[0]), dyn, saved)
        if rebuild_first:
            _rebuild_serial(dyn.x, par.radius, contacts, grid, out)
        if _direct(contacts):
            _block_steps_serial(nsteps, scheme, h, dyn, par, bonds, contacts, grid, walls, fields, status, out)
        else:
            _steps_serial(nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        report(dyn, par, contacts, status, out)


    @kernel
    def _block_parallel(nsteps, nchunks, scheme, h, rebuild_first, dyn, saved, par, bonds, contacts, grid, walls, fields,
                        status, out):  # fmt: skip
        block_start(status, out)
        _walls_place(walls)
        _save_parallel(nchunks, dyn, saved)
        if rebuild_first:
            _rebuild_parallel(nchunks, dyn.x, par.radius, contacts, grid, out)
        if _direct(contacts):
            _block_steps_parallel(nsteps, nchunks, scheme, h, dyn, par, bonds, contacts, grid, walls, fields, status,
                                  out)  # fmt: skip
        else:
            _steps_parallel(nsteps, nchunks, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        report(dyn, par, contacts, status, out)


    # ---------------------------------------------------------------------- launchers


    def _threads(n) -> int:
        """0 for one thread (fewer than :data:`SERIAL_BELOW` rows, or one thread set), else
        the number of chunks for ``n`` rows."""
        threads = get_num_threads()
        if n < SERIAL_BELOW or threads == 1:
            return 0
        return CHUNKS_PER_THREAD * threads


    def advance(scheme, h, dyn, par, contacts, status):
        """First part of one step for every particle (:func:`kernels.particles.build`)."""
        c = _threads(dyn.x.shape[0])
        if c:
            _advance_parallel(c, scheme, h, dyn, par, contacts, status)
        else:
            _advance_range(0, dyn.x.shape[0], scheme, h, dyn, par, contacts, status)


    def wall_loads(w, dyn, par, walls, contacts, out):
        """Each particle's load on wall ``w`` (force, moment about its centre) into ``out`` (N, 6)."""
        _wall_loads_range(0, dyn.x.shape[0], w, dyn, par, walls, contacts, out)

    def mesh_loads(dyn, par, walls, contacts, out, out_tri):
        """Each particle's loads on the meshes into ``out`` (N, 4, 9) and ``out_tri`` (N, 4)
        (:mod:`kernels.meshes` ``mesh_load``)."""
        _mesh_loads_range(0, dyn.x.shape[0], dyn, par, walls, contacts, out, out_tri)


    def walls_place(walls):
        """Put the moving walls where the walls' clock says (:mod:`kernels.walls`)."""
        if walls.clock.shape[0]:
            _walls_place(walls)


    def walls_tick(walls):
        """One step of the walls' clock, the moving walls placed at its new time."""
        if walls.clock.shape[0]:
            _walls_tick(walls)


    def _bond_pass(update, dyn, bonds):
        """The per-bond pass before the particles gather (a no-op with an empty buffer)."""
        nb = bonds.terms.shape[0]
        c = _threads(nb)
        if c:
            _bond_eval_parallel(c, update, dyn, bonds)
        elif nb:
            _bond_eval_range(0, nb, update, dyn, bonds)


    def forces(kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """Forces at the current configuration (bonds break here) and, with ``kick``, the
        second half kick."""
        _bond_pass(True, dyn, bonds)
        n = dyn.x.shape[0]
        c = _threads(n)
        if _direct(contacts):
            if c:
                _direct_parallel(c, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
            else:
                _direct_range(0, n, kick, False, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        elif c:
            _forces_parallel(c, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        else:
            _forces_range(0, n, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    def steps(nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """``nsteps`` whole steps (advance, bond pass, forces and the second kick)."""
        c = _threads(dyn.x.shape[0])
        if c:
            _steps_parallel(nsteps, c, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
        else:
            _steps_serial(nsteps, scheme, h, dyn, par, bonds, contacts, walls, fields, status)


    def save(src, dst):
        """Copy the ``Dynamics`` ``src`` into ``dst`` (same shapes)."""
        n = max(src.x.shape[0], src.broken.shape[0])
        c = _threads(n)
        if c:
            _save_parallel(c, src, dst)
        else:
            _save_range(0, n, src, dst)


    def family_forces(family, dyn, par, bonds, contacts, walls, fields):
        """Add one interaction family's force and moment to ``dyn.F``, ``dyn.RM`` (no
        breakage)."""
        if family == FAMILY_BONDS:
            _bond_pass(False, dyn, bonds)
        c = _threads(dyn.x.shape[0])
        if c:
            _family_forces_parallel(c, family, dyn, par, bonds, contacts, walls, fields)
        else:
            _family_forces_range(0, dyn.x.shape[0], family, dyn, par, bonds, contacts, walls, fields)


    def diagnostics(dyn, par, bonds, contacts, walls, fields, out):
        """Per-particle diagnostics rows into ``out`` (N, len(DIAGNOSTICS))."""
        c = _threads(dyn.x.shape[0])
        if c:
            _diagnostics_parallel(c, dyn, par, bonds, contacts, walls, fields, out)
        else:
            _diagnostics_range(0, dyn.x.shape[0], dyn, par, bonds, contacts, walls, fields, out)


    def bond_measures(dyn, bonds, out):
        """Per-bond ``(U^a, U^s, U^m, strain, |θ|)`` into ``out`` (B, 5)."""
        c = _threads(bonds.a.shape[0])
        if c:
            _bond_measures_parallel(c, dyn, bonds, out)
        else:
            _bond_measures_range(0, bonds.a.shape[0], dyn, bonds, out)


    def rebuild(x, radius, contacts, grid, report):
        """Build the neighbour list at ``x`` in place; the largest bucket occupancy and row
        length go to ``report`` (the caller regrows and builds again on overflow)."""
        c = _threads(x.shape[0])
        if c:
            _rebuild_parallel(c, x, radius, contacts, grid, report)
        else:
            _rebuild_serial(x, radius, contacts, grid, report)


    def block(nsteps, scheme, h, rebuild_first, dyn, saved, par, bonds, contacts, grid, walls, fields, status, report):
        """A whole block in one compiled call: clear the status and the report, save the
        state into ``saved``, rebuild the neighbour list if asked, ``nsteps`` steps, report."""
        c = _threads(dyn.x.shape[0])
        if c:
            _block_parallel(nsteps, c, scheme, h, rebuild_first, dyn, saved, par, bonds, contacts, grid, walls, fields,
                            status, report)  # fmt: skip
        else:
            _block_serial(nsteps, scheme, h, rebuild_first, dyn, saved, par, bonds, contacts, grid, walls, fields,
                          status, report)  # fmt: skip


    def evaluation_velocities(dyn):
        """``vp = v``, ``wp = Ω``: the velocities the dissipative forces see at a force
        evaluation outside a step (the first one, and analysis)."""
        _velocities_range(0, dyn.vp.shape[0], dyn)



    return SimpleNamespace(name=name, simulated=simulated, law=law, advance=advance, forces=forces, steps=steps,
                           save=save, block_start=block_start, report=report, family_forces=family_forces,
                           diagnostics=diagnostics, bond_measures=bond_measures, rebuild=rebuild, block=block,
                           evaluation_velocities=evaluation_velocities, to_device=to_device, set_stream=set_stream,
                           walls_place=walls_place, walls_tick=walls_tick, set_clock=set_clock, wall_loads=wall_loads, mesh_loads=mesh_loads,
                           PER_BOND_PASS=PER_BOND_PASS, PER_CONTACT_PASS=PER_CONTACT_PASS,
                           DIRECT_PASS=DIRECT_PASS, REBUILDS_IN_BLOCK=True, dispatchers=dispatchers)  # fmt: skip


def to_device(a):
    """Kernel arguments on the CPU are the NumPy arrays themselves."""
    return a


def set_stream(stream) -> None:
    """No streams on the CPU: every call runs to completion."""


def set_clock(clock, values) -> None:
    """Write the walls' clock ``(t_0, k, h)`` (:mod:`kernels.walls`)."""
    clock[:] = values
