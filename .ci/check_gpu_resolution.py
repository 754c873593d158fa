"""Check a ``pip install --dry-run --report`` of the ``gpu`` extra: the resolved stack
must be one numba-cuda can compile kernels with (NumPy below 2.5 for numba-cuda <= 0.30).

    python .ci/check_gpu_resolution.py REPORT.json
"""

import json
import sys


def version(v: str) -> tuple:
    return tuple(int(p) for p in v.split(".")[:2] if p.isdigit())


def main(path: str) -> int:
    with open(path) as fh:
        report = json.load(fh)
    got = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report["install"]}
    missing = [p for p in ("numpy", "numba", "numba-cuda", "cupy-cuda12x") if p not in got]
    if missing:
        print(f"gpu extra: {missing} not in the resolution: {sorted(got)}")
        return 1
    if version(got["numba-cuda"]) <= (0, 30) and version(got["numpy"]) >= (2, 5):
        print(f"gpu extra resolves to numba-cuda {got['numba-cuda']} with NumPy {got['numpy']}: no kernel compiles")
        return 1
    print("gpu extra resolves to a working stack:", {k: got[k] for k in ("numpy", "numba", "numba-cuda", "cupy-cuda12x")})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
