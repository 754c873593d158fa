"""Health checks that keep a good state.

At every output event (a series row, a frame, a checkpoint, the end) the run loop asks
:class:`HealthCheck` whether the state is still sound, from the series row it computes
anyway and two reductions:

* energy: ``E = total (+ U_released, the energy broken bonds took away, when the row has
  that column)`` stays within ``tolerance × scale`` of its start. Walls, gravity and the
  pendulum exchange energy through their potentials, which ``total`` holds. ``scale`` is
  the largest energy magnitude seen in an accepted row or in the row checked: kinetic
  energy plus the magnitudes of the potentials (gravity by its change since the start, so
  the choice of origin does not matter). A blow-up makes the change as large as the
  scale itself (a ratio near 1, caught by any tolerance below 1); a run that only loses
  accuracy crosses the tolerance gradually.
* speeds: no particle faster than :data:`SPEED_FACTOR` times the speed of the lightest
  particle holding all of the energy scale, ``sqrt(2 scale / m_min)``;
* rotation increments: no ``h |Ω_i|`` above :data:`ROTATION_INCREMENT_MAX` rad per step
  (the RRP map's closed form needs less than 1 to 2).

A state that passes is copied into a :class:`Snapshot` on the backend (one copy of the
state arrays, no transfer); outputs and checkpoints are written only from passed states.
When a check fails, or a step fails (a NaN, a rotation increment beyond the RRP map's
domain, a neighbour search over exploded positions), the loop puts the snapshot back,
so the checkpoint it writes, and ``run.json``, hold the last state that passed.
"""

from __future__ import annotations

import math

from ..errors import HealthError

#: Default of ``[run] energy_tolerance``: allowed change of the total energy, relative to the energy scale.
ENERGY_TOLERANCE = 0.2
#: Largest speed, in units of ``sqrt(2 scale / m_min)``.
SPEED_FACTOR = 10.0
#: Largest rotation per step ``h |Ω|`` [rad].
ROTATION_INCREMENT_MAX = 0.5


def conserved_energy(row) -> float:
    """``total`` plus what left the system's energies (the energy broken bonds released,
    what the dissipative contacts dissipated, what particles that left took away) less
    what came in (the moving walls' work, what particles that entered brought, what
    changes of the set-up brought: ``E_setup``), when the row has those columns."""
    out = float(row["total"]) + float(row.get("U_released", 0.0)) - float(row.get("work_walls", 0.0))
    out += float(row.get("E_removed", 0.0)) - float(row.get("E_inserted", 0.0)) - float(row.get("E_setup", 0.0))
    for key, value in row.items():
        if key.startswith("dissipated_"):
            out += float(value)
    return out


def _magnitude(row, gravity0) -> float:
    total = 0.0
    for key, value in row.items():
        if key == "U_gravity":
            total += abs(float(value) - gravity0)
        elif key.startswith(("kinetic_", "U_")):
            total += abs(float(value))
    return total


class HealthCheck:
    """Checks rows against the run's start; see the module docstring. ``start`` is the
    first row's ``{"energy0", "scale", "gravity0"}`` (from :meth:`start_values`), which a
    resumed run takes from its checkpoint so that the check stays relative to the start."""

    def __init__(self, model, h, first_row, tolerance=ENERGY_TOLERANCE, start=None):
        self.model = model
        self.h = float(h)
        self.tolerance = float(tolerance)
        if start is None:
            g0 = float(first_row.get("U_gravity", 0.0))
            start = {"energy0": conserved_energy(first_row), "scale": _magnitude(first_row, g0), "gravity0": g0}
        self.energy0 = float(start["energy0"])
        self.gravity0 = float(start["gravity0"])
        self.scale = float(start["scale"])
        self.m_min = float(model.backend.to_host(model.mass).min())

    def start_values(self) -> dict:
        """What a checkpoint keeps so that a resumed run checks against the same start."""
        return {"energy0": self.energy0, "scale": self.scale, "gravity0": self.gravity0}

    def widen(self, row) -> None:
        """Take ``row``'s energy magnitude into the scale (after particles entered: the
        energy they brought sets the speeds that are sound)."""
        self.scale = max(self.scale, _magnitude(row, self.gravity0))

    def speed_bound(self) -> float:
        return SPEED_FACTOR * math.sqrt(2.0 * self.scale / self.m_min) if self.scale > 0 else math.inf

    def problem(self, row, state) -> str | None:
        """What is wrong with ``state`` (whose series row is ``row``), or None."""
        E = conserved_energy(row)
        change = E - self.energy0
        scale = max(self.scale, _magnitude(row, self.gravity0))
        if not (abs(change) <= self.tolerance * scale):  # NaN fails too
            released = " + U_released" if "U_released" in row else ""
            released += " + dissipated" if "dissipated_normal" in row else ""
            released += " - work_walls" if "work_walls" in row else ""
            return (f"the total energy{released} is {E:.6g}; it started at {self.energy0:.6g}. The change, "
                    f"{abs(change):.3g}, is more than {self.tolerance:g} (run.energy_tolerance) times the energy "
                    f"scale {scale:.6g} (the largest energy magnitude so far, this state's included)")  # fmt: skip
        xp = self.model.backend.xp
        speed = xp.sqrt((state.v * state.v).sum(axis=1))
        spin = xp.sqrt((state.omega * state.omega).sum(axis=1))
        i, j = int(xp.argmax(speed)), int(xp.argmax(spin))
        vmax, wmax = float(speed[i]), float(spin[j])
        bound = self.speed_bound()
        if not (vmax <= bound):
            return (f"particle {i} moves at {vmax:.6g}, above the bound {bound:.6g} ({SPEED_FACTOR:g} times the "
                    f"speed of the lightest particle holding the whole energy scale {self.scale:.6g})")  # fmt: skip
        if not (self.h * wmax <= ROTATION_INCREMENT_MAX):
            return (f"particle {j} turns by h|Ω| = {self.h * wmax:.6g} rad in one step, above the bound "
                    f"{ROTATION_INCREMENT_MAX:g} rad (|Ω| = {wmax:.6g}, h = {self.h:g})")  # fmt: skip
        self.scale = max(self.scale, _magnitude(row, self.gravity0))
        return None


class Snapshot:
    """A copy of the state arrays ``names`` on the state's backend, with the clock; with
    a ``model`` whose contact law keeps history also the state's neighbour list and the
    contacts' history (on the device:
    :meth:`granular.particles.neighbors.NeighborList.snapshot`)."""

    def __init__(self, state, names, model=None):
        self.names = tuple(names)
        law = getattr(model, "law", None)
        self.model = model if law is not None and law.history and getattr(state, "neighbors", None) is not None else None
        self.arrays = {k: getattr(state, k).copy() for k in self.names}
        self.springs = None
        self._take_springs(state)
        self.time, self.step, self.forces_valid, self.clock = state.time, state.step, state.forces_valid, state.clock

    def _take_springs(self, state) -> None:
        if self.model is not None:
            self.springs = state.neighbors.snapshot(self.springs)

    def take(self, state) -> None:
        for k in self.names:
            self.arrays[k][...] = getattr(state, k)
        self._take_springs(state)
        self.time, self.step, self.forces_valid, self.clock = state.time, state.step, state.forces_valid, state.clock

    def restore(self, state) -> None:
        for k in self.names:
            getattr(state, k)[...] = self.arrays[k]
        if self.model is not None:
            state.neighbors.restore_snapshot(self.springs)
        state.time, state.step, state.forces_valid, state.clock = self.time, self.step, self.forces_valid, self.clock
        state.remember_forces()
        state._engine = None  # the step loop's displacement budget belonged to the later state


__all__ = ["ENERGY_TOLERANCE", "HealthCheck", "HealthError", "Snapshot", "conserved_energy"]
