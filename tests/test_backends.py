"""Backends: CPU kernels, GPU kernels (CUDA simulator in CI) and a plain NumPy reference
step agree; backend selection errors are clear."""

import os
import subprocess
import sys

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot
from granular.backend import gpu_probe
from granular.validation import pendulum as study
from patience import PATIENCE


def batch_of_pendula(backend, rng, k=6):
    alpha = rot.rrp_from_rotvec(rng.normal(size=(k, 3)))
    omega = rng.normal(size=(k, 3))
    return study.build_model(backend, alpha, omega, g=2.0, inertia=1.3)


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["exact", "verlet", "campello"])
def test_cpu_and_gpu_kernels_agree_on_a_batch_of_pendula(scheme, gpu_backend):
    out = {}
    for be in ("cpu", gpu_backend):
        model = batch_of_pendula(be, np.random.default_rng(7))
        s = model.state()
        gr.ExplicitIntegrator(scheme).run(model, s, 0.01, 100)
        out[model.backend.name] = {k: model.backend.to_host(getattr(s, k)) for k in ("x", "v", "q", "omega", "RM")}
    for k in ("q", "omega", "RM"):
        np.testing.assert_allclose(out["gpu"][k], out["cpu"][k], rtol=1e-12, atol=1e-12, err_msg=k)


def numpy_reference_step(scheme, h, x, v, q, om, F, RM, m, J, forces):
    """Maps (23), (25), (27) written with the batched rotation module only (slow twin)."""
    m, J = m[:, None], J[:, None]
    if scheme == "campello":
        v1 = v + h * F / m
        om1 = om + h * RM / J
        x1 = x + h * v1
        da = h * om1
    else:
        vh = v + 0.5 * h * F / m
        w = om + 0.5 * h * RM / J
        x1 = x + h * vh
        if scheme == "exact":
            hw = h * np.linalg.norm(w, axis=1, keepdims=True)
            da = 2 * h / (1 + np.sqrt(1 - hw**2)) * w
        else:
            da = h * w
    q1 = rot.quat_normalize(rot.quat_multiply(rot.quat_from_rrp(da), q))
    F1, RM1 = forces(x1, q1)
    if scheme == "campello":
        return x1, v1, q1, om1, F1, RM1
    return x1, vh + 0.5 * h * F1 / m, q1, w + 0.5 * h * RM1 / J, F1, RM1


@pytest.mark.parametrize("scheme", ["exact", "verlet", "campello"])
def test_kernels_match_numpy_reference(scheme, backend, rng):
    alpha = rot.rrp_from_rotvec(rng.normal(size=(9, 3)))
    b = gr.ModelBuilder()
    idx = b.add_particles(rng.normal(size=(9, 3)), v=rng.normal(size=(9, 3)), alpha=alpha,
                          omega=rng.normal(size=(9, 3)), mass=rng.uniform(1, 2, 9), inertia=rng.uniform(1, 2, 9))  # fmt: skip
    b.add_pendulum(idx[:6], rho0=rng.normal(size=(6, 3)), g=1.5)
    b.set_gravity([0.1, 0.2, -1.0])
    model = b.finalize(backend)
    be = model.backend
    mass, J = be.to_host(model.mass), be.to_host(model.inertia)
    pend = model.force("pendulum")
    pidx, rho0, mg = be.to_host(pend.index), be.to_host(pend.rho0), be.to_host(pend.mg)

    def forces(x, q):
        F = mass[:, None] * np.array([0.1, 0.2, -1.0]) + 0 * x
        RM = np.zeros_like(x)
        p = rot.quat_rotate(q[pidx], rho0)
        RM[pidx] = mg[:, None] * np.cross(p, [0.0, 0.0, 1.0])
        return F, RM

    s = model.state()
    integ = gr.ExplicitIntegrator(scheme)
    integ.prepare(model, s)
    ref = [be.to_host(getattr(s, k)).copy() for k in ("x", "v", "q", "omega", "F", "RM")]
    for _ in range(20):
        integ.step(model, s, 0.02)
        ref = list(numpy_reference_step(scheme, 0.02, *ref, mass, J, forces))
    for k, r in zip(("x", "v", "q", "omega", "F", "RM"), ref):
        np.testing.assert_allclose(be.to_host(getattr(s, k)), r, rtol=1e-12, atol=1e-13, err_msg=k)


def test_cpu_runs_are_deterministic(rng):
    a = {}
    for trial in range(2):
        model = batch_of_pendula("cpu", np.random.default_rng(3), k=40)
        s = model.state()
        gr.ExplicitIntegrator("exact").run(model, s, 0.01, 50)
        a[trial] = s.q.copy()
    np.testing.assert_array_equal(a[0], a[1])


def test_unknown_backend_name():
    with pytest.raises(ValueError, match="backend must be one of"):
        gr.get_backend("tpu")


def test_gpu_without_gpu_is_a_clear_error():
    if gpu_probe()[0]:
        pytest.skip("a GPU is present")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    code = "import granular as gr\ntry:\n gr.get_backend('gpu')\nexcept gr.BackendError as e:\n print('ERR', e)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=PATIENCE)
    assert "ERR backend 'gpu' was requested but no CUDA GPU is usable" in out.stdout, out.stderr
    assert "backend 'cpu'" in out.stdout


def test_auto_picks_cpu_without_gpu():
    if gpu_probe()[0]:
        pytest.skip("a GPU is present")
    assert gr.get_backend("auto").name == "cpu"


def _compiles_in_subprocess(prelude=""):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    code = prelude + "\nfrom granular.backend import numba_cuda_compiles\nok, why = numba_cuda_compiles()\nprint(ok)\nprint(why)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=PATIENCE)
    assert out.returncode == 0, out.stderr
    ok, why = out.stdout.strip().split("\n", 1)
    return ok == "True", why


def test_a_numba_cuda_that_cannot_compile_is_named_with_the_cause():
    """numba-cuda <= 0.30 fails at its first compilation with NumPy 2.5, which dropped
    ``row_stack``; the same failure, reproduced by removing ``row_stack``, is reported by
    the backend probe (and `granular info`) with both versions and the fix."""
    ok, why = _compiles_in_subprocess()
    if not ok:
        pytest.skip(f"numba-cuda cannot compile here at all: {why}")
    ok, why = _compiles_in_subprocess("import numpy\ndel numpy.row_stack")
    assert not ok
    assert "row_stack" in why and "NumPy" in why and "pip install 'granular[gpu]'" in why


def test_a_gpu_whose_numba_cuda_cannot_compile(monkeypatch):
    """A GPU that CuPy sees but numba-cuda cannot compile for: ``auto`` falls back to the
    CPU with a warning that names the cause, ``gpu`` is an error that names it (a
    stand-in CuPy with one device; the compile probe reports the NumPy 2.5 failure)."""
    import types

    from numba import cuda

    import granular.backend as B

    why = "numba-cuda 0.30.4 cannot compile a kernel with NumPy 2.5 (module 'numpy' has no attribute 'row_stack')"
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, getDeviceProperties=lambda i: {"name": b"NVIDIA H100"})
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, Device=lambda: types.SimpleNamespace(id=0)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(B, "cuda_simulator_enabled", lambda: False)
    monkeypatch.setattr(B, "numba_cuda_compiles", lambda: (False, why))
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    found, what = B.gpu_probe()
    assert not found and "NVIDIA H100" in what and "row_stack" in what
    with pytest.warns(RuntimeWarning, match="backend 'auto' uses the CPU: CuPy found NVIDIA H100.*row_stack"):
        assert B.get_backend.__wrapped__("auto").name == "cpu"
    with pytest.raises(gr.BackendError, match="no CUDA GPU is usable: CuPy found NVIDIA H100.*row_stack"):
        B.get_backend.__wrapped__("gpu")
