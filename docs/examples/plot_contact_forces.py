"""
Contact forces in a settled packing
===================================

Spheres of a random packing fall into a box under gravity and settle, with the
dissipative contact law (Hertz with restitution damping, Coulomb friction, rolling and
twisting resistance; ``docs/contacts.md``). Then :func:`granular.contact_list` lists
every active contact with its overlap, normal, contact point and force, and
:func:`granular.forces_by_family` splits each particle's force into the interactions
that make it: the data of a force-chain analysis.
"""

# %%
# A random packing in a box
# -------------------------
# :func:`granular.particles.shapes.random_packing` places non-overlapping spheres at
# random (the scene files' ``kind = "random"``). Units: millimetre-sized glass-like
# grains, SI units.

import matplotlib.pyplot as plt
import numpy as np

import granular as gr

R = 0.01  # largest radius [m]
side = 0.08  # box width [m]
x, radius = gr.shapes.random_packing(120, [[0, 0, 0], [side, side, 0.4]], radius=(0.8 * R, R), seed=4)
b = gr.ModelBuilder()
b.add_material("grain", young=1e7, poisson=0.3, density=2500.0, restitution=0.3, friction=0.5,
               rolling_friction=0.1, twisting_friction=0.05)  # fmt: skip
b.add_particles(x, radius=radius, material="grain")
b.set_contacts()
b.add_wall([0, 0, 1], 0.0, material="grain")  # the floor
for normal, offset in (([1, 0, 0], 0.0), ([-1, 0, 0], -side), ([0, 1, 0], 0.0), ([0, -1, 0], -side)):
    b.add_wall(normal, offset, material="grain")
b.set_gravity([0, 0, -9.81])
model = b.finalize("cpu")
state = model.state()
print(model)

# %%
# Let it settle
# -------------
# Steps of a fifth of the stable-step estimate; the energy the contacts dissipate is
# booked by mechanism, so ``total + dissipated`` stays constant.

h = 0.2 * gr.estimate_stable_step(model, state).h_max
integ = gr.ExplicitIntegrator("verlet")
times, kinetic, total = [], [], []
while state.time < 0.6:
    integ.advance(model, state, h, 500)
    e = gr.diagnostics.energies(model, state)
    times.append(state.time)
    kinetic.append(e["kinetic_translational"] + e["kinetic_rotational"])
    total.append(e["total"])
print(f"t = {state.time:.3f} s after {state.step} steps of {h:.2e} s")

# %%
# The contact list
# ----------------
# One row per touching pair (``i < j``) or particle-wall contact. The forces are those
# of the contact law at the state as it stands; summed per particle they are exactly the
# ``contacts`` and ``walls`` families of :func:`granular.forces_by_family`.

contacts = gr.contact_list(model, state)
families = gr.forces_by_family(model, state)
F, M = contacts.per_particle(model.n)
print(f"{len(contacts)} contacts ({contacts.wall.sum()} with walls); families: {', '.join(families)}")
print("largest difference to the families:",
      np.abs(F - families["contacts"][0] - families["walls"][0]).max())  # fmt: skip

fn = np.linalg.norm(contacts.force_normal, axis=1)
ft = np.linalg.norm(contacts.force_tangential, axis=1)
pp = ~contacts.wall

fig, axes = plt.subplots(1, 3, figsize=(12, 4), layout="constrained")
axes[0].semilogy(times, kinetic, label="kinetic")
axes[0].set_xlabel("time [s]")
axes[0].set_ylabel("kinetic energy [J]")
axes[0].set_title("settling")

# force chains: the line of centres of each pair, as thick as its normal force
xs = state.x
for (i, j), f in zip(contacts.pairs[pp], fn[pp]):
    axes[1].plot(xs[[i, j], 0], xs[[i, j], 2], "k-", lw=0.3 + 4 * f / fn[pp].max())
axes[1].set_aspect("equal")
axes[1].set_xlabel("x [m]")
axes[1].set_ylabel("z [m]")
axes[1].set_title("force chains (x-z projection)")

# the distribution of normal forces and the mobilised friction
axes[2].hist(fn[pp] / fn[pp].mean(), bins=20, density=True, alpha=0.7, label="normal force / mean")
axes[2].hist(ft[pp] / (0.5 * fn[pp]), bins=20, range=(0, 1), density=True, alpha=0.7, label="|F_t| / (μ F_n)")
axes[2].set_yscale("log")
axes[2].set_title("particle-particle contacts")
axes[2].legend(fontsize="small")
plt.show()
