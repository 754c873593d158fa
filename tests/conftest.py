"""Shared fixtures: the ``backend`` fixture runs a test on the CPU and on the GPU backend.

The GPU case runs on a real GPU when CuPy finds one, else under Numba's CUDA simulator
when ``NUMBA_ENABLE_CUDASIM=1`` (CI sets it), else it is skipped.
"""

import numpy as np
import pytest

from granular.backend import BackendError, get_backend


def _gpu_or_skip():
    try:
        return get_backend("gpu")
    except BackendError as exc:
        pytest.skip(f"no GPU backend: {exc}")


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    if request.param == "cpu":
        return get_backend("cpu")
    return _gpu_or_skip()


@pytest.fixture
def gpu_backend():
    return _gpu_or_skip()


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(scope="module")
def dask_client():
    """A local Dask cluster of two worker processes (skipped without dask.distributed)."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def pytest_runtest_logreport(report):
    """With ``GRANULAR_TEST_LOG=path``: each test's outcome, duration and (on failure) its
    traceback appended to ``path`` as the test ends, so a run stopped by a time limit (a
    GPU session) still says which tests failed and why. Written by the controlling process
    only (pytest-xdist forwards every worker's reports to it)."""
    import os

    path = os.environ.get("GRANULAR_TEST_LOG")
    if not path or os.environ.get("PYTEST_XDIST_WORKER") or (report.when != "call" and not report.failed):
        return
    with open(path, "a") as fh:
        fh.write(f"{report.outcome.upper()} {report.when} {report.duration:.1f} s {report.nodeid}\n")
        if report.failed:
            fh.write(report.longreprtext + "\n\n")
