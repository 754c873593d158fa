"""Every GPU kernel of the body schemes compiles to PTX (compute capability 9.0), with the
argument types the schemes pass. The CUDA simulator runs the laws as Python and would
not catch a typing error, so the check runs tests/ptx_compile_bodies.py in a subprocess with the
real numba-cuda compiler (no GPU needed; skipped when NVVM is not installed)."""

import os
import subprocess
import sys

import pytest
from patience import PATIENCE

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def test_every_body_kernel_compiles_to_ptx():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.run([sys.executable, os.path.join(HERE, "ptx_compile_bodies.py")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    if proc.returncode == 3:
        pytest.skip(proc.stdout.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ok ") >= 12, proc.stdout
