"""Contact laws as pluggable evaluators (:mod:`kernels.contact_laws`, the loops of
:mod:`kernels.contacts`): the two laws re-expressed through the interface give the bits
they gave before it, on the CPU and under the CUDA simulator; no kernel branches on the
law; the contacts' history is part of the state."""

import os
import re

import numpy as np
import pytest

import law_cases

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _reference(simulated):
    name = "law_reference_sim.npz" if simulated else "law_reference.npz"
    return np.load(os.path.join(HERE, "data", name))


@pytest.mark.parametrize("case", law_cases.cases(False))
def test_trajectories_are_the_bits_of_before_the_interface(case):
    """Each case's final state (positions, velocities, orientations, angular velocities,
    forces, moments, bonds, wall history, dissipated energy, pair history) is what the
    engine computed before the laws moved behind the interface (``tests/law_cases.py``)."""
    ref = _reference(False)
    out = law_cases.final(case, "cpu")
    for key in law_cases.FIELDS + ("pairs", "springs"):
        k = f"{case}/{key}"
        a, b = ref[k], out[k]
        if key in ("pairs", "springs", "wall_springs") and not a.size and not b.size:
            continue
        np.testing.assert_array_equal(b, a, err_msg=k)
    assert int(out[f"{case}/step"]) == int(ref[f"{case}/step"])


@pytest.mark.gpu
@pytest.mark.parametrize("case", law_cases.cases(True))
def test_simulated_trajectories_are_the_bits_of_before_the_interface(case, gpu_backend):
    if not gpu_backend.simulated:
        pytest.skip("the reference was written by the CUDA simulator (a GPU rounds differently)")
    ref = _reference(True)
    out = law_cases.final(case, gpu_backend)
    for key in law_cases.FIELDS + ("pairs", "springs"):
        k = f"{case}/{key}"
        a, b = ref[k], out[k]
        if key in ("pairs", "springs", "wall_springs") and not a.size and not b.size:
            continue
        np.testing.assert_array_equal(b, a, err_msg=k)


def test_no_kernel_branches_on_the_law():
    """The loops and passes of ``kernels/`` do not name a law or test which law is on: a
    law is a module of ``kernels/contact_laws`` and reaches the loops only through the
    interface (its functions and its capability constants)."""
    laws_dir = os.path.join(ROOT, "kernels", "contact_laws")
    names = set()
    for f in os.listdir(laws_dir):
        if f.endswith(".py") and not f.startswith("_") and f != "interface.py":
            with open(os.path.join(laws_dir, f)) as fh:
                m = re.search(r'^NAME = "([^"]+)"', fh.read(), re.M)
            assert m, f"kernels/contact_laws/{f} has no NAME"
            names.add(m.group(1))
    assert {"hertz", "hertz-mindlin"} <= names
    bad = []
    for f in sorted(os.listdir(os.path.join(ROOT, "kernels"))):
        if not f.endswith(".py"):
            continue
        with open(os.path.join(ROOT, "kernels", f)) as fh:
            src = fh.read()
        for pattern in (
            r"contacts\.law\b",
            r"\.law\s*==",
            r"law\.NAME\s*==",
            r"\bNAME\s*==",
            r"granular_contact",
            r"hertz_force\(",
            r"from \.contact_laws import (hertz|hertz_mindlin)",
        ):
            for m in re.finditer(pattern, src):
                line = src.count("\n", 0, m.start()) + 1
                if f == "laws.py" and pattern == r"hertz_force\(":
                    continue  # the scalar Hertz force itself
                bad.append(f"kernels/{f}:{line}: {m.group(0)}")
        for name in names:
            for m in re.finditer(rf'["\']{re.escape(name)}["\']', src):
                bad.append(f"kernels/{f}:{src.count(chr(10), 0, m.start()) + 1}: names the law {name!r}")
    assert not bad, "kernels branch on or name a contact law:\n" + "\n".join(bad)
