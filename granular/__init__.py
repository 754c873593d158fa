"""granular: particle and rigid-body dynamics with rotations, on the CPU or an NVIDIA GPU.

Quick start (a spinning top on a pendulum; runs as written)::

    import math
    import granular as gr
    b = gr.ModelBuilder()
    i = b.add_particle(x=[0, 0, 0], alpha=[0, 2 * math.tan(3 * math.pi / 8), 0],
                       omega=[0.2, 0, 0.2])
    b.add_pendulum(i, rho0=[0, 0, 1], g=1.0)
    model = b.finalize("cpu")          # or "gpu", "auto"
    state = model.state()
    integ = gr.ExplicitIntegrator("verlet")   # map (25); "exact" (23), "campello" (27)
    for _ in range(1000):
        integ.step(model, state, 1e-2)
    print(gr.diagnostics.energies(model, state))
"""

from . import rotations
from ._version import __version__
from .backend import Backend, BackendError, get_backend
from .particles import diagnostics, shapes
from .particles.analysis import ContactList, contact_list, forces_by_family, mesh_loads, wall_loads
from .particles.integrators import ExplicitIntegrator, IntegrationError, NonFiniteError, StepSizeError
from .particles.builder import ModelBuilder
from .particles.forces.meshes import TriangleMesh
from .particles.model import Model
from .particles.replicas import replica_diagnostics, replicate
from .particles.stability import StepEstimate, estimate_stable_step
from .particles.state import State

#: Names of the run layer, imported on first use: ``import granular`` stays light (no
#: pydantic, SciPy or the scene schema until a run needs them).
RUN_NAMES = ("Simulation", "load_state", "save_state")


def __getattr__(name):
    if name in RUN_NAMES:
        from .run import simulation

        return getattr(simulation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Backend",
    "BackendError",
    "ContactList",
    "ExplicitIntegrator",
    "IntegrationError",
    "Model",
    "ModelBuilder",
    "NonFiniteError",
    "State",
    "StepEstimate",
    "StepSizeError",
    "__version__",
    "Simulation",
    "contact_list",
    "diagnostics",
    "estimate_stable_step",
    "forces_by_family",
    "get_backend",
    "load_state",
    "replica_diagnostics",
    "replicate",
    "rotations",
    "save_state",
    "shapes",
    "wall_loads",
    "mesh_loads",
    "TriangleMesh",
]
