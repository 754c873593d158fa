"""
An ensemble of heavy tops
=========================

A few hundred heavy tops (paper 002, Sect. 5.4: a cone on its tip under gravity,
the Livens energy-momentum scheme EML) with sampled initial angular velocities, run
as one batch with :func:`granular.ensemble.run_ensemble`, summarised one row per top.
This is what ``granular ensemble scenes/livens_heavy_top.toml ...`` does (see the
Ensembles page), here from Python and with histograms of the summary columns.

Two ensembles are compared:

* steady tops: each top's precession rate ``omega_p`` is drawn from a normal
  distribution and its spin ``omega_s`` is the one of (118) that makes it precess
  steadily, so its centre of mass keeps its height;
* perturbed tops: the scene's top with the vertical component of its angular velocity
  drawn from a normal distribution; they nutate and their centre of mass moves.
"""

# %%
# The scene and its sampled fields
# --------------------------------
# The scene file's step (``dt = 0.01``, the paper's) is coarse for a spin of
# 135 rad/s; a copy of the scene with ``dt = 1e-3`` keeps the steady tops at their
# height. ``FIELD=DISTRIBUTION`` strings are parsed by
# :func:`granular.ensemble.parse_distribution`; :func:`granular.ensemble.make_spec`
# validates an ensemble before anything runs.

import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import granular.ensemble as ens
from granular.run.scene import load_scene

# the repository's scenes/ folder (run this from anywhere inside the repository)
path = next(
    d / "scenes" / "livens_heavy_top.toml"
    for d in (Path.cwd(), *Path.cwd().parents)
    if (d / "scenes" / "livens_heavy_top.toml").is_file()
)
scene = load_scene(path)
scene = scene.model_copy(update={"run": scene.run.model_copy(update={"dt": 1e-3})})
print(scene.bodies["scheme"], scene.bodies["variant"], "dt =", scene.run.dt)

n, duration, seed = 300, 0.3, 3
print(ens.parse_distribution("omega[2]", "normal(77.8, 2.0)"))

# %%
# Steady precession, (118): with the scene's mass ``m``, gravity ``g``, centre of
# mass ``l`` above the tip, inertia ``J1, J3`` about the tip and nutation ``theta``,
# the spin of a top that precesses at ``omega_p`` is
# ``omega_s = m g l / (J3 omega_p) + (J1 - J3) / J3 omega_p cos(theta)``, and its
# spatial angular velocity is ``omega = omega_p e3 + omega_s d3(0)``. One row per top,
# from a ``.npy`` file: ``omega=file(tops.npy)``.

m, g, l = scene.bodies["mass"], 9.81, scene.bodies["center_of_mass"][2]
J1, J3 = scene.bodies["inertia"][0], scene.bodies["inertia"][2]
theta = np.pi / 3
wp = np.random.default_rng(seed).normal(10.0, 0.5, n)  # precession rates [1/s]
ws = m * g * l / (J3 * wp) + (J1 - J3) / J3 * wp * np.cos(theta)  # spins [1/s]
tmp = tempfile.TemporaryDirectory()
tops = os.path.join(tmp.name, "tops.npy")
np.save(tops, np.stack([0 * wp, -ws * np.sin(theta), wp + ws * np.cos(theta)], axis=1))

steady_vary = {"omega": f"file({tops})"}
perturbed_vary = {"omega[2]": "normal(77.8, 2.0)"}
spec = ens.make_spec(scene, n, steady_vary, seed, time=duration)
print(f"{spec.n} bodies, {spec.steps} steps of {spec.dt} s each")

# %%
# Run both ensembles
# ------------------
# Each runs in chunks of at most ``chunk_size`` bodies (one batched system per chunk;
# here one chunk) in this process; give ``client=`` a ``dask.distributed.Client`` to
# spread the chunks over workers. The summaries do not depend on the chunking. The
# first run compiles the body kernels.

steady = ens.run_ensemble(scene, n, steady_vary, seed=seed, time=duration)
perturbed = ens.run_ensemble(scene, n, perturbed_vary, seed=seed, time=duration)
print("summary columns:", ", ".join(steady))

# %%
# Histograms of the summaries
# ---------------------------
# The height of the centre of mass at the end, ``z``, against its height at the start,
# ``l cos(theta) = 0.0375`` m: the steady tops stay within a fraction of a millimetre
# of it, the perturbed ones nutate by centimetres.

z0 = l * np.cos(theta)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
for ax, table, label in ((axes[0], steady, "steady (118)"), (axes[1], perturbed, "omega[2] ~ normal(77.8, 2)")):
    ax.hist(1e3 * (table["z"] - z0), bins=30)
    ax.set_xlabel("z(t_end) - z(0) [mm]")
    ax.set_title(label)
axes[0].set_ylabel("tops")
fig.suptitle(f"{n} heavy tops, t = {duration} s, EML, dt = {scene.run.dt}")

# %%
# EML conserves the energy (74) and the vertical angular momentum exactly, up to the
# Newton tolerance and round-off: the relative energy error of every top is at the
# level of round-off. (The horizontal components of the angular momentum are not
# conserved under gravity; they are NaN in the table.)

fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
for table, label in ((steady, "steady"), (perturbed, "perturbed")):
    ax.hist(table["energy_rel_error"], bins=30, alpha=0.6, label=label)
ax.set_xlabel("relative energy error")
ax.set_ylabel("tops")
ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
ax.legend()

# %%
# Where a perturbed top ends up depends smoothly on its sampled initial angular
# velocity.

fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
ax.plot(perturbed["omega[2]"], 1e3 * (perturbed["z"] - z0), ".", ms=3)
ax.set_xlabel("sampled omega[2] [1/s]")
ax.set_ylabel("z(t_end) - z(0) [mm]")
ax.set_title("Perturbed tops")
plt.show()

tmp.cleanup()
