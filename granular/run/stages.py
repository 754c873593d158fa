"""Staged runs: a scene's ``[[stages]]``, one after the other, into one run folder.

Each stage lasts its ``duration`` (from the time it starts) or to the absolute time
``until``; ``kinetic_below`` ends it early, at the first series row whose kinetic energy
(translational plus rotational) is below that value. At its start a stage says which
``[[insert]]`` and ``[[outlets]]`` act (by name; default every one): a hopper is filled
in one stage and drains in the next. Every stage writes into the same ``series.csv``,
frames and checkpoints; a checkpoint keeps the stage it was written in and when that
stage started, so a run stopped in any stage resumes there, bit for bit.
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
        out.append(Stage(st.name or f"stage {k}", st.duration, st.until, st.kinetic_below, frozenset(active)))
    if errors:
        raise SceneError(errors, source)
    return out


def _kinetic(model, state) -> float:
    d = model.diagnostics(state)
    return d["kinetic_translational"] + d["kinetic_rotational"]


def run_stages(sim, stages, total, resumed=False, health_start=None, where=None) -> dict:
    """Run ``sim`` (a :class:`~granular.run.simulation.Simulation` with feeds) through
    ``stages`` up to the absolute step ``total`` at most; ``where``: a checkpoint's
    ``meta["stage"]`` (the stage it was written in and its start) when resuming. Returns
    the last ``run.json`` dict."""
    state = sim.state
    index, start = 0, state.time
    if where:
        index, start = int(where["index"]), float(where["start"])
    info = None
    h = float(sim.model.dtype.type(sim.run_table.dt))
    row_dt = sim.cadences(total)[1] * h or sim.run_table.dt * 100
    for k in range(index, len(stages)):
        st = stages[k]
        for i, f in enumerate(sim.feeds or []):
            f.active = i in st.active
        sim.stage = {"index": k, "start": start, "name": st.name}
        end = min(total, _step_at(sim, st.end_time(start), h))
        while state.step < end:
            stop = end
            if st.kinetic_below is not None:
                stop = min(end, _step_at(sim, state.time + row_dt, h))
            info = sim.execute(state, stop, resumed=resumed, health_start=health_start)
            resumed, health_start = True, sim._health_start
            if info.get("interrupted"):
                return info
            if st.kinetic_below is not None and _kinetic(sim.model, state) < st.kinetic_below:
                break
        start = state.time
        if state.step >= total:
            break
    return info


def _step_at(sim, t, h) -> int:
    """The first step at or after the time ``t`` (counted from step 0)."""
    state = sim.state
    k = max(1, round((t - state.time) / h)) if t > state.time + 0.5 * h else 0
    return state.step + int(k)
