"""Compile every particle kernel of :mod:`kernels.cuda` to PTX for an H100 (sm_90)
without a GPU, in both precisions, and count double-precision instructions.

The CUDA simulator runs kernels as Python, so it cannot catch what only the real
compiler rejects (types numba-cuda cannot lower, a float64 constant promoting a float32
kernel). numba-cuda compiles to PTX with NVVM and needs no device, except that a device
function asks the current device for its compute capability: that query is answered
here. Run as a script (``NUMBA_ENABLE_CUDASIM`` must be unset); prints one JSON line per
kernel: ``{"kernel", "dtype", "f64", "chars"}``. Used by ``tests/test_kernel_sources.py``.
"""

import json
import os
import sys
from types import SimpleNamespace

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"

import numba.cuda.dispatcher as _dispatcher  # noqa: E402

_dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))

import numpy as np  # noqa: E402
from numba import cuda, typeof  # noqa: E402

import granular as gr  # noqa: E402
from kernels import contact_laws  # noqa: E402
from kernels import cuda as K  # noqa: E402
from kernels.layout import DIAGNOSTICS, REPORT_SIZE  # noqa: E402


def kernel_arguments(dtype):
    """Every kernel of :mod:`kernels.cuda` with arguments of the types a run passes."""
    b = gr.shapes.block_impact_builder(3, gap=0.05)
    b.set_gravity([0.0, 0.0, -1.0])
    b.add_pendulum(b.add_particle([10.0, 10.0, 10.0]))
    m = b.finalize("cpu", dtype=dtype)
    s = m.state()
    a = m.kernel_args(s)
    dyn = m.dynamics(s)
    k = K.for_law(contact_laws.hertz).kernels
    report = np.zeros(REPORT_SIZE)
    h = np.dtype(dtype).type(1e-3)
    fam = (a["par"], a["bonds"], a["contacts"], a["walls"], a["fields"])
    return {
        "advance": (k["_advance_kernel"], (1, h, dyn, a["par"], a["contacts"], s.status)),
        "forces": (k["_forces_kernel"], (True, 1, h, dyn, *fam, s.status)),
        "bond_eval": (k["_bond_eval_kernel"], (True, dyn, a["bonds"])),
        "pairs": (k["_pairs_kernel"], (h, dyn, a["par"], a["bonds"], a["contacts"])),
        "save": (k["_save_kernel"], (dyn, dyn)),
        "block_start": (k["_block_start_kernel"], (s.status, report)),
        "report": (k["_report_kernel"], (dyn, a["par"], a["contacts"], s.status, report)),
        "family_forces": (k["_family_forces_kernel"], (2, dyn, *fam)),
        "diagnostics": (k["_diagnostics_kernel"], (dyn, *fam, np.zeros((m.n, len(DIAGNOSTICS)), dtype))),
        "bond_measures": (k["_bond_measures_kernel"], (dyn, a["bonds"], np.zeros((m.n_bonds, 5), dtype))),
        "grid_clear": (k["_grid_clear_kernel"], (a["grid"],)),
        "grid_bin": (k["_grid_bin_kernel"], (s.x, a["grid"], a["contacts"].period)),
        "grid_build": (k["_grid_build_kernel"], (s.x, m.radius, a["contacts"], a["grid"], report)),
        "keep": (k["_keep_kernel"], (a["contacts"],)),
        "velocities": (k["_velocities_kernel"], (dyn,)),
        "walls_place": (k["_walls_place_kernel"], (a["walls"],)),
        "walls_tick": (k["_walls_tick_kernel"], (a["walls"],)),
        "wall_loads": (k["_wall_loads_kernel"], (0, dyn, a["par"], a["walls"], a["contacts"], np.zeros((m.n, 6), dtype))),
        "mesh_loads": (k["_mesh_loads_kernel"], (dyn, a["par"], a["walls"], a["contacts"],
                                                 np.zeros((m.n, 4, 9), dtype), np.zeros((m.n, 4), np.int32))),
    } | friction_arguments(dtype) | component_arguments(m, s) | (packing_arguments() if dtype == np.float64 else {})


def component_arguments(m, s):
    """The fragment labelling kernels (:mod:`kernels.components_cuda`)."""
    from kernels import components_cuda as C

    parent = np.zeros(m.n, dtype=np.int64)
    changed = np.zeros(1, dtype=np.int32)
    nl = m.neighbors_of(s)
    return {
        "components_start": (C.start, (parent,)),
        "components_hook_bonds": (C.hook_bonds, (m.bonds.a, m.bonds.b, s.broken, parent, changed)),
        "components_hook_contacts": (C.hook_contacts, (s.x, m.radius, nl.nbr, nl.count, np.zeros((0, 3), s.x.dtype),
                                                       parent, changed)),
        "components_jump": (C.jump, (parent,)),
    }


def packing_arguments():
    """The dense packing's kernels (:mod:`kernels.packing_cuda`): float64 only, as the
    packing is."""
    from kernels import packing_cuda as P

    n = 8
    x, f, v = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    i64 = np.zeros(n + 1, dtype=np.int64)
    dims = np.ones(3, dtype=np.int64)
    r = np.ones(n)
    return {
        "packing_cells": (P.cells, (x, r[:3], r[:3], dims, i64)),
        "packing_neighbors": (P.neighbors, (x, r, 0.1, i64, i64, i64, dims, i64, i64, True)),
        "packing_forces": (P.forces, (x, r, i64, i64, 0, r[:3], f, r, r)),
        "packing_advance": (P.advance, (x, v, f, x, 0.1, 0.9, 0.01, r)),
        "packing_retreat": (P.retreat, (x, v, 0.05)),
    }


def friction_arguments(dtype):
    """The kernels of the contact laws with history (the dissipative law of the block's
    materials, the linear law, JKR): their advance, force and per-pair kernels."""
    import dataclasses

    out = {}
    for law in ("hertz-mindlin", "linear", "jkr"):
        b = gr.shapes.block_impact_builder(3, gap=0.05, friction=True)
        b._contact_law = law
        if law != "hertz-mindlin":  # the fields the linear law and JKR read
            b._materials = {name: (i, dataclasses.replace(mat, stiffness=mat.young * 0.01, surface_energy=0.01))
                            for name, (i, mat) in b._materials.items()}  # fmt: skip
        m = b.finalize("cpu", dtype=dtype)
        s = m.state()
        a = m.kernel_args(s)
        dyn = m.dynamics(s, step=True)
        h = np.dtype(dtype).type(1e-3)
        fam = (a["par"], a["bonds"], a["contacts"], a["walls"], a["fields"])
        k = K.for_law(m.law.kernel).kernels
        out[f"{law}_advance"] = (k["_advance_kernel"], (1, h, dyn, a["par"], a["contacts"], s.status))
        out[f"{law}_forces"] = (k["_forces_kernel"], (True, 1, h, dyn, *fam, s.status))
        out[f"{law}_pairs"] = (k["_pairs_kernel"], (h, dyn, a["par"], a["bonds"], a["contacts"]))
        out[f"{law}_wall_loads"] = (k["_wall_loads_kernel"], (0, dyn, a["par"], a["walls"], a["contacts"],
                                                             np.zeros((m.n, 6), dtype)))  # fmt: skip
        if law == "hertz-mindlin":  # the variant that meets triangle meshes
            km = K.for_law(m.law.kernel, meshes=True).kernels
            out[f"{law}_meshes_forces"] = (km["_forces_kernel"], (True, 1, h, dyn, *fam, s.status))
            out[f"{law}_mesh_loads"] = (km["_mesh_loads_kernel"], (dyn, a["par"], a["walls"], a["contacts"],
                                                                  np.zeros((m.n, 4, 9), dtype),
                                                                  np.zeros((m.n, 4), np.int32)))  # fmt: skip
    return out


def main() -> int:
    for dtype in (np.float64, np.float32):
        for name, (kernel, args) in kernel_arguments(dtype).items():
            ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(typeof(x) for x in args), cc=(9, 0))
            code = [line for line in ptx.splitlines() if not line.strip().startswith("//")]
            f64 = sum(".f64" in line for line in code)
            print(json.dumps({"kernel": name, "dtype": np.dtype(dtype).name, "f64": f64, "chars": len(ptx)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
