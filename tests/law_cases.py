"""Trajectories that pin the contact laws' arithmetic: each case is a model, a scheme, a
step and a number of steps; :func:`final` runs it and returns the final state (and the
springs of the pair contacts) as host arrays.

``tests/data/law_reference.npz`` holds these arrays as the engine computed them before
the contact laws became pluggable evaluators (``kernels/contact_laws``), written by
``python tests/law_cases.py`` at that commit (``python tests/law_cases.py --sim`` for the
CUDA simulator's file), and the interface reproduced every one of them bit for bit.
``tests/test_contact_laws.py`` checks that the engine still gives these bits. One change
since was meant to move them: the dissipative law's springs are scaled, not reset, on
sliding and keep their energy through the change of stiffness (dissipation never
negative), which changed the cases with friction (box, box_campello, box_half,
block_replicas: positions by up to 3e-3 of a radius over their runs); the files were
written again then, and the cases of paper 003's law kept their bits. So again when a
pair's canonical order became that of its positions instead of its indices (the
frictional box parted by 2e-6 of a radius after 300 steps from last-bit differences;
paper 003's law, exactly antisymmetric in the pair, kept its bits). And once more when
the tangential spring came to be stored in the pair's order by index and turned to the
canonical order as it is read (``docs/geometry.md``): the springs of the pairs whose two
orders differ changed sign in the files (box_campello and box_half kept every other bit),
and in the frictional box a contact whose canonical order flipped while it held its
spring no longer loses the spring's sign (positions moved by up to 2e-4 of a radius).
The files were written again when the step lost square roots and divisions that
changed only round-off: the orientation update normalises ``(2, Δα) ⊗ q_k`` once instead
of normalising ``q(Δα)`` and then the product, the rotation bound is tested on ``ρ²``,
the dissipative law's twisting spring is scaled by ``keep³`` and ``post³`` (the same
powers of the overlaps' ratio) and its normal is ``d`` times one reciprocal of the
distance. Positions moved by at most 2.6e-10 (the torus after 1500 steps, 2.6e-8 of a
radius; every other case 3e-15 or less) and orientations by at most 8e-14. Once more
when paper 003's law took ``1/ρ`` once and the pair's ``1/s`` beside the overlap's square
root (one division fewer, a shorter chain): the cases of that law moved by round-off
(positions by at most 3.8e-10, the torus after 1500 steps; the spheres 1.6e-13), and the
dissipative law's cases kept every bit (the first half kick taking the second's factors
changed none). Once more when paper 003's bonds took the rotation vector of small
relative rotations from the series of ``atan`` (``kernels.laws.quat_log_series``, exact to
round-off, so that the CPU's bond pass runs in vector lanes): the cases with bonds moved
by round-off (positions by at most 2.7e-10, the torus after 1500 steps; every other case
3e-15 or less), the others kept every bit.
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import granular as gr  # noqa: E402
from granular.particles.replicas import replicate  # noqa: E402
from granular.particles.shapes import BLOCK_MATERIAL, add_block, add_torus, block_impact_builder  # noqa: E402
from granular.validation import torus_setup  # noqa: E402

FIELDS = ("x", "v", "q", "omega", "F", "RM", "broken", "released", "wall_springs", "dissipated")
R = 0.01


def torus(small):
    """The paper's torus with breakable bonds, tilted and spinning, onto a wall (Hertz)."""
    if small:
        b = gr.ModelBuilder()
        add_torus(b, n_p=12, ring_diameter=1.0, center=(0.65, 0, 0), normal=(0.2, 0.1, 1.0),
                  velocity=(-1.5, 0.2, 0.1), omega=(0.5, -0.3, 2.0), strain_max=0.02)  # fmt: skip
        b.set_contacts(torus_setup.K_PP)
        b.add_wall([1.0, 0.0, 0.0], 0.0, k=torus_setup.K_PP)
        return b
    v = np.tile([-1.5, 0.2, 0.1], (torus_setup.N_P, 1))
    return torus_setup.torus_builder(velocity=v, omega=(0.5, -0.3, 2.0), normal=(0.2, 0.1, 1.0), strain_max=0.02)


def frictional_box(small, spacing=2.01, velocity="predicted"):
    """Spheres of two materials in a box of five walls under tilted gravity, thrown with
    spins: pair and wall contacts, friction, rolling, twisting, sliding and sticking."""
    n_side = 2 if small else 4
    rng = np.random.default_rng(7)
    b = gr.ModelBuilder()
    b.add_material("glass", 7e10, 0.25, 2500.0, 0.6, 0.4, 0.05, 0.05)
    b.add_material("steel", 2e11, 0.3, 7800.0, 0.9, 0.2, 0.02, 0.02)
    g = (np.stack(np.meshgrid(*(np.arange(n_side),) * 3, indexing="ij"), -1).reshape(-1, 3) + 0.5) * spacing * R
    g += rng.uniform(-0.2, 0.2, size=g.shape) * (spacing - 2.0) * R
    n = len(g)
    half = n // 2
    v = rng.normal(scale=3.0, size=(n, 3))
    w = rng.normal(scale=80.0, size=(n, 3))
    b.add_particles(g[:half], v=v[:half], omega=w[:half], radius=R, material="glass")
    b.add_particles(g[half:], v=v[half:], omega=w[half:], radius=R * 0.98, material="steel")
    box = n_side * spacing * R
    for normal, offset in (([0, 0, 1], 0.0), ([1, 0, 0], 0.0), ([-1, 0, 0], -box), ([0, 1, 0], 0.0),
                           ([0, -1, 0], -box)):  # fmt: skip
        b.add_wall(normal, offset, material="steel")
    b.set_pair("glass", "steel", friction=0.3, restitution=0.8)
    b.set_gravity([2.0, 1.0, -9.81])
    b.set_contacts(skin=0.002 * R, velocity=velocity)
    return b


def hertz_spheres(small, search="cells"):
    """Loose Hertz spheres with bonds between some, all-pairs or cell search, no walls."""
    n_side = 3 if small else 5
    rng = np.random.default_rng(3)
    g = np.stack(np.meshgrid(*(np.arange(n_side),) * 3, indexing="ij"), -1).reshape(-1, 3) * 2.06
    g = g + rng.uniform(-0.02, 0.02, g.shape)
    b = gr.ModelBuilder()
    b.add_particles(g, v=rng.normal(scale=1.5, size=g.shape), omega=rng.normal(size=g.shape), radius=1.0)
    b.add_bonds([(0, 1), (1, 2)], ka=50.0, ks=20.0, km=5.0)
    b.set_contacts(500.0, search=search, bonded_contacts=False)
    return b


def torus_replicas(small):
    """Two tori with their own contact stiffness in one model of replicas (Hertz)."""
    out = []
    for v, kpp in ((-1.0, 2100.0), (-2.0, 800.0)):
        b = gr.ModelBuilder()
        n = 12 if small else 24
        d = 3.0 * np.sin(np.pi / n)
        add_torus(b, n, 3.0, center=(1.5 + 1.5 * d, 0.0, 0.0), velocity=(v, 0.0, 0.0), omega=(0.0, 0.0, 1.0))
        b.set_contacts(kpp)
        b.add_wall([1.0, 0.0, 0.0], 0.0, k=2100.0)
        out.append(b)
    return replicate(out)


def block_replicas(small):
    """Two bonded blocks with their own materials (the dissipative law) in one model."""
    out = []
    for e, v in ((0.3, -1.0), (0.9, -1.5)):
        b = gr.ModelBuilder()
        b.add_material("binder", **dict(BLOCK_MATERIAL, restitution=e))
        add_block(b, 2 if small else 3, origin=(0.0, 0.0, 0.55), velocity=(0.3, 0.0, v), material="binder")
        b.set_contacts(bonded_contacts=True)
        b.add_wall([0.0, 0.0, 1.0], 0.0, material="binder")
        b.set_gravity([0.0, 0.0, -1.0])
        out.append(b)
    return replicate(out)


#: name -> (builder(small), scheme, h, steps on the CPU, steps under the simulator)
CASES = {
    "torus": (torus, "verlet", 1e-3, 1500, 30),
    "torus_exact": (torus, "exact", 1e-3, 400, 0),
    "block_hertz": (lambda s: block_impact_builder(3 if s else 6, gap=0.05), "verlet", 1e-3, 400, 20),
    "block_friction": (
        lambda s: block_impact_builder(3 if s else 6, gap=0.05, friction=True),
        "verlet",
        1e-3,
        400,
        20,
    ),  # fmt: skip
    "box": (frictional_box, "verlet", 2e-7, 300, 40),
    "box_campello": (frictional_box, "campello", 2e-7, 200, 0),
    "box_half": (lambda s: frictional_box(s, velocity="half"), "exact", 2e-7, 200, 0),
    "spheres_cells": (hertz_spheres, "verlet", 1e-2, 300, 20),
    "spheres_all_pairs": (lambda s: hertz_spheres(s, "all-pairs"), "verlet", 1e-2, 300, 20),
    "torus_replicas": (torus_replicas, "verlet", 5e-4, 800, 0),
    "block_replicas": (block_replicas, "verlet", 5e-4, 600, 0),
}


def final(name, backend="cpu"):
    """Run case ``name`` on ``backend``; the final arrays (host), keyed ``name/field``."""
    make, scheme, h, steps_cpu, steps_sim = CASES[name]
    be = gr.get_backend(backend)
    model = make(be.simulated).finalize(be)
    s = model.state()
    gr.ExplicitIntegrator(scheme).advance(model, s, h, steps_sim if be.simulated else steps_cpu)
    out = {f"{name}/{k}": np.asarray(be.to_host(getattr(s, k))).copy() for k in FIELDS}
    out[f"{name}/step"] = np.array(s.step)
    pairs, springs = contact_springs(model, s)
    out[f"{name}/pairs"], out[f"{name}/springs"] = pairs, springs
    return out


def contact_springs(model, state):
    """``(pairs (P, 2), springs (P, H))`` of the pair contacts that hold history."""
    if state.neighbors is None or not state.neighbors.history:
        return np.zeros((0, 2), np.int64), np.zeros((0, 8))
    return state.neighbors.springs()


def cases(simulated: bool):
    return [name for name, c in CASES.items() if (c[4] if simulated else c[3])]


if __name__ == "__main__":
    sim = "--sim" in sys.argv
    if sim:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    data = {}
    for name in cases(sim):
        data.update(final(name, "gpu" if sim else "cpu"))
        print(name, "done", flush=True)
    path = os.path.join(ROOT, "tests", "data", "law_reference_sim.npz" if sim else "law_reference.npz")
    np.savez_compressed(path, **data)
    print("wrote", path)
