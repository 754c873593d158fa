"""The kernel sources keep their promises: single precision stays single, and every CUDA
kernel compiles for a real GPU (checked without one)."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from patience import PATIENCE

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
LAW_MODULES = ("laws.py", "particles.py", "interactions.py", "bonds.py", "contacts.py", "grid.py") + tuple(
    f"contact_laws/{p.name}" for p in sorted((KERNELS / "contact_laws").glob("*.py")))
# Kernels whose float64 instructions are by design: the block report is float64, and the
# moving walls are placed from their float64 motion and clock (one thread per step).
FLOAT64_BY_DESIGN = {"report", "grid_build", "walls_place", "walls_tick"}


def _bare_float_literals(path):
    """``(line, value)`` of float literals inside function bodies that are not the
    argument of a ``T(...)`` cast."""
    tree = ast.parse(path.read_text())
    wrapped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "T":
            for arg in node.args:
                for sub in ast.walk(arg):
                    wrapped.add(id(sub))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Constant) and isinstance(node.value, float) and id(node) not in wrapped:
                found.append((node.lineno, node.value))
    return found


@pytest.mark.parametrize("module", LAW_MODULES)
def test_no_bare_float_literal_in_kernel_code(module):
    """A Python float literal is a float64 constant to Numba: in a float32 run it would
    promote the arithmetic to double. Every constant is written ``T(c)``."""
    found = _bare_float_literals(KERNELS / module)
    assert not found, f"kernels/{module}: bare float literals at {found}; write T(value)"


def test_the_literal_check_catches_a_literal(tmp_path):
    p = tmp_path / "k.py"
    p.write_text("def law(T, x):\n    return T(0.5) * x + 0.25 * x\n")
    assert _bare_float_literals(p) == [(2, 0.25)]


def _compile_ptx():
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return subprocess.run([sys.executable, str(Path(__file__).with_name("ptx_compile.py"))], env=env,
                          capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip


def test_every_cuda_kernel_compiles_to_ptx_and_float32_is_single_precision():
    """NVVM compiles each kernel for sm_90 in both precisions (what the simulator cannot
    check), and the float32 kernels contain no double-precision instruction except the
    float64 block report."""
    out = _compile_ptx()
    if out.returncode != 0 and any(s in out.stderr for s in ("nvrtc", "NVVM", "libnvvm", "CudaSupportError")):
        pytest.skip(f"no CUDA compiler libraries here: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    names = {r["kernel"] for r in rows}
    assert {"advance", "forces", "report", "grid_build", "diagnostics", "keep", "velocities", "walls_place",
            "walls_tick", "wall_loads"} <= names  # fmt: skip
    for law in ("hertz-mindlin", "linear", "jkr"):  # every contact law's step kernels
        assert {f"{law}_advance", f"{law}_forces", f"{law}_pairs", f"{law}_wall_loads"} <= names
    assert {"components_hook_bonds", "components_hook_contacts", "components_jump"} <= names  # fragments
    packing = {"packing_cells", "packing_neighbors", "packing_forces", "packing_advance", "packing_retreat"}
    assert packing <= names  # the dense packing, float64 only
    assert len(rows) == 2 * len(names) - len(packing)
    integer_only = ("block_start", "grid_clear", "components_start", "components_hook_bonds", "components_jump")
    for r in rows:
        if r["dtype"] == "float64":
            assert r["f64"] > 0 or r["kernel"] in integer_only, r
        elif r["kernel"] not in FLOAT64_BY_DESIGN:
            assert r["f64"] == 0, f"float32 kernel {r['kernel']} has {r['f64']} double-precision lines"
