"""
Block impact written for ParaView
=================================

A bonded simple-cubic block of unit spheres hits the wall ``x = 0`` at ``v0 = 1``: the
scene ``scenes/block_impact.toml``, here 4 x 4 x 4 particles built with
:func:`granular.particles.shapes.block_impact_builder`. The run is written to a run
folder exactly as ``granular run`` writes one, by :class:`granular.Simulation`
(the :class:`granular.run.Runner` loop with the writers of
:func:`granular.run.folder_writers`): ParaView frames (``frames.pvd``,
``frames/*.vtu``), the time series ``series.csv``, a checkpoint, ``run.json`` and
plots. The folder is a temporary directory here; open ``frames.pvd`` in ParaView to
see the block.
"""

# %%
# Build the model
# ---------------

import os
import tempfile

import matplotlib.pyplot as plt

from granular import Simulation
from granular.io import read_series
from granular.particles.shapes import block_impact_builder

n = 4  # particles along each edge
model = block_impact_builder(n=n, v0=1.0, gap=1.0).finalize("cpu")
print(model, f"{model.n_bonds} bonds", sep=", ")

# %%
# Run it into a folder
# --------------------
# The keyword arguments are the keys of a scene file's ``[run]`` table: the step, the
# map, and the time between frames, series rows and checkpoints.

tmp = tempfile.TemporaryDirectory()
out = os.path.join(tmp.name, "block_impact")
sim = Simulation(
    model, model.state(), out, dt=1e-3, integrator="verlet", output_every=0.25, series_every=0.01, checkpoint_every=1.0
)
info = sim.run(until=3.0)
print("finished:", info["finished"], "at t =", info["time"])

for root, dirs, files in os.walk(out):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(root, name)
        print(f"{os.path.relpath(path, out):32s} {os.path.getsize(path):>9,d} bytes")

# %%
# The time series
# ---------------
# :func:`granular.io.read_series` reads ``series.csv`` as one array per column.

series = read_series(os.path.join(out, "series.csv"))
print(", ".join(series))

t = series["time"]
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True, layout="constrained")
for key in ("kinetic_translational", "kinetic_rotational", "U_a", "U_s", "U_m", "U_pp", "U_pw", "total"):
    if key in series:
        top.plot(t, series[key], "k--" if key == "total" else "-", label=key)
top.set_ylabel("energy")
top.set_title(f"Block impact ({n}x{n}x{n} particles): energies from series.csv")
top.legend(loc="center right", fontsize="small")
# The wall pushes the block back: the momentum along x changes sign during the impact.
for key in ("P_x", "P_y", "P_z"):
    bottom.plot(t, series[key], label=key)
bottom.set_xlabel("time")
bottom.set_ylabel("linear momentum")
bottom.legend(fontsize="small")
plt.show()

tmp.cleanup()
