"""Staged runs: a scene's ``[[stages]]``, one after the other, into one run folder.

Each stage lasts its ``duration`` (from the time it starts) or to the absolute time
``until``. It ends early with ``kinetic_below``, at the first series row whose kinetic
energy (translational plus rotational) is below that value, and with ``until_inserted``
or ``until_removed``, at the first edit of the feeds after which that many particles
entered or left in the stage. At its start a stage says which ``[[insert]]`` and
``[[outlets]]`` act (by name; default every one): a hopper is filled in one stage and
drains in the next. It also changes the set-up (:mod:`granular.particles.setup`): walls
and meshes put in (``add``) and taken away (``remove``) by name, new motions from its
start (``[[stages.motions]]``), a new ``gravity``; a side wall taken away lets a column
slump into a heap, a gate that starts to move opens a silo. Every stage writes into the
same ``series.csv``, frames and checkpoints; a checkpoint keeps the stage it was written
in, when that stage started, and the set-up, so a run stopped in any stage resumes
there, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SceneError

__all__ = ["Stage", "run_stages", "stage_plan"]


@dataclass(frozen=True)
class Stage:
    """One stage: its name, length (``duration``) or end (``until``), the kinetic energy
    below which it ends early, and the indices of the feeds that act in it."""

    name: str
    duration: float | None
    until: float | None
    kinetic_below: float | None
    active: frozenset
    until_inserted: int | None = None
    until_removed: int | None = None
    change: dict | None = None  # Simulation.change's keywords at its start (None: no change)

    def end_time(self, start: float) -> float:
        return self.until if self.until is not None else start + self.duration


def stage_plan(scene, source="scene") -> list[Stage]:
    """The stages of ``scene`` (``[[stages]]``), checked: :class:`SceneError` naming the
    stage and field. The feeds are numbered as :func:`granular.run.scene.scene_feeds`
    makes them: the outlets, then the insertions."""
    outlets = {t.name: k for k, t in enumerate(scene.outlets) if t.name}
    inserts = {t.name: len(scene.outlets) + k for k, t in enumerate(scene.insert) if t.name}
    every = frozenset(range(len(scene.outlets) + len(scene.insert)))
    out, errors, last_until = [], [], 0.0
    for k, st in enumerate(scene.stages):
        where = f"stages[{k}]"
        if (st.duration is None) == (st.until is None):
            errors.append((where, "give its length as duration, or its end as until (an absolute time), one of them"))
            continue
        if st.until is not None:
            if st.until <= last_until:
                errors.append((f"{where}.until", f"{st.until:g} is not after the previous stage's end {last_until:g}"))
            last_until = st.until
        active = set()
        for field, names, table in (("insert", st.insert, inserts), ("outlets", st.outlets, outlets)):
            if names is None:
                active |= set(table.values()) | ({i for i in every if i < len(scene.outlets)} if field == "outlets"
                                                 else {i for i in every if i >= len(scene.outlets)})  # fmt: skip
                continue
            for name in names:
                if name not in table:
                    errors.append((f"{where}.{field}", f"no [[{field}]] table named {name!r}; named: {sorted(table)}"))
                else:
                    active.add(table[name])
        change = _change(scene, st, where, errors)
        out.append(Stage(st.name or f"stage {k}", st.duration, st.until, st.kinetic_below, frozenset(active),
                         st.until_inserted, st.until_removed, change))  # fmt: skip
    if errors:
        raise SceneError(errors, source)
    return out


def _change(scene, st, where, errors):
    """A stage's change of the set-up as :meth:`Simulation.change` takes it, or None;
    unknown names go to ``errors``."""
    names = [w.name or f"wall {k}" for k, w in enumerate(scene.walls)]
    names += [m.name or f"mesh {k}" for k, m in enumerate(scene.meshes)]
    for field, given in (("add", st.add), ("remove", st.remove), ("motions", [m.name for m in st.motions])):
        for j, name in enumerate(given):
            if name not in names:
                errors.append((f"{where}.{field}[{j}]" if field != "motions" else f"{where}.motions[{j}].name",
                               f"no wall or mesh named {name!r}; named: {names}"))  # fmt: skip
    for name in sorted(set(st.add) & set(st.remove)):
        errors.append((f"{where}.add", f"{name!r} is also in remove: put a wall in or take it away, not both"))
    seen = set()
    for j, m in enumerate(st.motions):
        if m.name in seen:
            errors.append((f"{where}.motions[{j}].name", f"{m.name!r} has a motion earlier in this stage; give one"))
        seen.add(m.name)
    motions = {m.name: {k: getattr(m, k) for k in ("velocity", "angular_velocity", "center")} for m in st.motions}
    if not (st.add or st.remove or motions or st.gravity is not None):
        return None
    return {"add": list(st.add), "remove": list(st.remove), "motions": motions, "gravity": st.gravity}


def _kinetic(model, state) -> float:
    d = model.diagnostics(state)
    return d["kinetic_translational"] + d["kinetic_rotational"]


def run_stages(sim, stages, total, resumed=False, health_start=None, where=None) -> dict:
    """Run ``sim`` (a :class:`~granular.run.simulation.Simulation` with feeds) through
    ``stages`` up to the absolute step ``total`` at most; ``where``: a checkpoint's
    ``meta["stage"]`` (the stage it was written in, its start and the ledger's counts
    then) when resuming. Returns the last ``run.json`` dict.

    A stage's counts (``until_inserted``, ``until_removed``) are checked after each
    edit of the feeds, inside the run (its last row and checkpoint are then at that
    edit); ``kinetic_below`` at the series rows, which fall on whole multiples of the
    row cadence. A run resumed at such a point checks there first, as the run that went
    through did, so that it ends the stage at the same step."""
    state = sim.state
    index, start = 0, state.time
    counts = _counts(sim)
    if where:
        index, start = int(where["index"]), float(where["start"])
        counts = (float(where.get("inserted0", 0.0)), float(where.get("removed0", 0.0)))
    info = None
    h = float(sim.model.dtype.type(sim.run_table.dt))
    row_steps = max(1, sim.cadences(total)[1] or 100)
    try:
        for k in range(index, len(stages)):
            st = stages[k]
            for i, f in enumerate(sim.feeds or []):
                f.active = i in st.active
            entered = k != index or not where  # a resumed stage made its change already
            if entered:
                counts = _counts(sim)
                if st.change is not None:
                    sim.change(**st.change)
            sim.stage = {"index": k, "start": start, "name": st.name, "inserted0": counts[0], "removed0": counts[1]}
            sim.stop_when = _count_reached(st, counts, sim.ledger)
            end = min(total, _step_at(sim, st.end_time(start), h))
            ended = not entered and state.time > start + 0.5 * h and (
                (sim.stop_when is not None and sim.stop_when(None))
                or (st.kinetic_below is not None and state.step % row_steps == 0
                    and _kinetic(sim.model, state) < st.kinetic_below))  # fmt: skip
            while state.step < end and not ended:
                stop = end
                if st.kinetic_below is not None:  # to the next row on the cadence's grid
                    stop = min(stop, (state.step // row_steps + 1) * row_steps)
                info = sim.execute(state, stop, resumed=resumed, health_start=health_start)
                resumed, health_start = True, sim._health_start
                if info.get("interrupted"):
                    return info
                if state.step < stop:  # a count was reached inside the run
                    break
                if st.kinetic_below is not None and _kinetic(sim.model, state) < st.kinetic_below:
                    break
            start = state.time
            if state.step >= total:
                break
    finally:
        sim.stop_when = None
    return info


def _count_reached(st, counts, ledger):
    """The test of ``st``'s counts since its start (``counts``: the ledger's then) that
    the feeds' edits call; None without counts."""
    if st.until_inserted is None and st.until_removed is None:
        return None

    def reached(_system=None) -> bool:
        v = ledger.values
        return (st.until_inserted is not None and v["inserted"] - counts[0] >= st.until_inserted) or \
            (st.until_removed is not None and v["removed"] - counts[1] >= st.until_removed)  # fmt: skip

    return reached


def _counts(sim) -> tuple:
    """The ledger's particles inserted and removed so far (zeros without a ledger)."""
    led = sim.ledger
    return (0.0, 0.0) if led is None else (led.values["inserted"], led.values["removed"])


def _step_at(sim, t, h) -> int:
    """The first step at or after the time ``t`` (counted from step 0)."""
    state = sim.state
    k = max(1, round((t - state.time) / h)) if t > state.time + 0.5 * h else 0
    return state.step + int(k)
