"""Check a ``pip install --dry-run --report`` of a GPU extra (``gpu``: CuPy for CUDA 12,
``gpu-cu13``: for CUDA 13): the resolved stack must be one numba-cuda can compile kernels
with (NumPy below 2.5 for numba-cuda <= 0.30).

    python .ci/check_gpu_resolution.py REPORT.json [cupy-cuda12x|cupy-cuda13x]
"""

import json
import sys


def version(v: str) -> tuple:
    return tuple(int(p) for p in v.split(".")[:2] if p.isdigit())


def main(path: str, cupy: str = "cupy-cuda12x") -> int:
    with open(path) as fh:
        report = json.load(fh)
    got = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report["install"]}
    stack = ("numpy", "numba", "numba-cuda", cupy)
    missing = [p for p in stack if p not in got]
    if missing:
        print(f"GPU extra with {cupy}: {missing} not in the resolution: {sorted(got)}")
        return 1
    if version(got["numba-cuda"]) <= (0, 30) and version(got["numpy"]) >= (2, 5):
        print(f"GPU extra with {cupy} resolves to numba-cuda {got['numba-cuda']} with NumPy {got['numpy']}: "
              "no kernel compiles")  # fmt: skip
        return 1
    print(f"GPU extra with {cupy} resolves to a working stack:", {k: got[k] for k in stack})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
