"""
Restart a run from its checkpoint, bit for bit
==============================================

A run stopped part way (a wall-clock limit, a crash, Ctrl-C) continues from its
checkpoint and ends with the same state, to the last bit, as a run that never stopped.
Here the paper's torus (80 particles, binder bonds, one wall) runs to ``t = 4`` in one go
and, separately, to ``t = 1.5``, then is resumed with :meth:`granular.Simulation.resume`
and run on to ``t = 4``. The command line does the same with ``granular run SCENE
--resume OUT/checkpoints/checkpoint.npz``.
"""

# %%
# The model
# ---------
# The torus of ``scenes/torus_impact.toml``, built in Python: 80 particles on a ring of
# diameter 3, bonded to their neighbours, moving at speed 1 toward the wall ``x = 0``.

import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np

import granular as gr
from granular.io import read_series


def torus():
    b = gr.ModelBuilder()
    gr.shapes.add_torus(b, n_p=80, ring_diameter=3.0, center=(2.0, 0, 0), velocity=(-1, 0, 0))
    b.set_contacts(2100.0)
    b.add_wall([1, 0, 0], 0.0)
    return b.finalize("cpu")


folder = tempfile.TemporaryDirectory()
whole, parts = (os.path.join(folder.name, name) for name in ("whole", "parts"))
run = {"dt": 1e-3, "integrator": "verlet", "output_every": 0.5, "series_every": 0.01}

# %%
# One run, and a run in two parts
# -------------------------------
# ``run(until=t)`` runs up to an absolute time; ``run(steps=n)`` would take ``n`` more
# steps. The first part writes its checkpoint at the end, as every run does.

model = torus()
straight = gr.Simulation(model, model.state(), whole, run)
straight.run(until=4.0)

model = torus()
first = gr.Simulation(model, model.state(), parts, run)
first.run(until=1.5)
print("checkpoint:", os.path.relpath(first.checkpoint, folder.name), "at t =", first.state.time)

resumed = gr.Simulation.resume(model, parts)  # a new state from the checkpoint, dt from it
print("resumed at step", resumed.state.step, "t =", resumed.state.time)
resumed.run(until=4.0)

for name in ("x", "v", "q", "omega", "F", "RM"):
    a, b = getattr(straight.state, name), getattr(resumed.state, name)
    print(f"{name:6s} identical: {np.array_equal(a, b)}")

# %%
# One series
# ----------
# The resumed run writes on into the same folder: ``series.csv`` and ``frames.pvd`` hold
# the whole run, as if it had never stopped.

s1 = read_series(os.path.join(whole, "series.csv"))
s2 = read_series(os.path.join(parts, "series.csv"))
print("series rows:", len(s1["time"]), "and", len(s2["time"]), "identical:",
      all(np.array_equal(s1[k], s2[k]) for k in s1))  # fmt: skip

fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
ax.plot(s1["time"], s1["total"] - s1["total"][0], label="one run")
ax.plot(s2["time"], s2["total"] - s2["total"][0], "--", label="stopped at t = 1.5, resumed")
ax.axvline(1.5, color="gray", lw=0.5)
ax.set_xlabel("time")
ax.set_ylabel("total energy - initial")
ax.set_title("Torus impact: the energy error of both runs")
ax.legend()
plt.show()

folder.cleanup()
