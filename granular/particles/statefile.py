"""The arrays of a particle state as a checkpoint holds them: :func:`state_arrays` takes
host copies of every state array and the clock (the pair contacts' history by pair, so
that it does not depend on the neighbour list's layout), :func:`restore_state` puts them
back, bit for bit on the backend that wrote them."""

from __future__ import annotations

import numpy as np

STATE_ARRAYS = ("x", "v", "q", "omega", "F", "RM", "broken", "released", "wall_springs", "dissipated",
                "wall_contact_peak", "wall_work", "image")  # fmt: skip

#: A checkpoint's ``spring_order``: 1 where the pair springs' oriented floats (the law's
#: ``ORIENTED``: the tangential spring) are kept in the pair's order by index. Older
#: checkpoints kept them in the order by position; they are turned on restore.
SPRING_ORDER_INDEX = 1


def state_arrays(model, state) -> dict:
    """Host copies of every state array and the clock (for a checkpoint); with a contact
    law that keeps history also the pair contacts' history by pair (``contact_pairs``
    (P, 2), ``contact_springs`` (P, H)), which does not depend on the neighbour list's
    layout."""
    be = model.backend
    out = {k: be.to_host(getattr(state, k)).copy() for k in STATE_ARRAYS}
    if model.law is not None and model.law.history and state.neighbors is not None:
        out["contact_pairs"], out["contact_springs"] = state.neighbors.springs()
        out["spring_order"] = np.array([SPRING_ORDER_INDEX], dtype=np.int64)
    c = state.clock
    origin = (state.time, state.step, 0.0) if c is None else c[:3]
    out["clock"] = np.array([state.time, origin[0], origin[2]], dtype=np.float64)
    out["counters"] = np.array([state.step, int(state.forces_valid), origin[1]], dtype=np.int64)
    return out


def _springs_by_index(model, x, pairs, springs):
    """Springs of an older checkpoint (oriented floats in the pairs' order by position,
    lexicographic) turned to the order by index: negated for each pair ``i < j`` whose
    ``x_j`` comes first."""
    oriented = int(getattr(model.law.kernel, "ORIENTED", 0))
    if not oriented:
        return springs
    a, b = x[pairs[:, 0]], x[pairs[:, 1]]
    first_b = np.zeros(len(pairs), dtype=bool)
    decided = np.zeros(len(pairs), dtype=bool)
    for c in range(3):
        first_b |= ~decided & (b[:, c] < a[:, c])
        decided |= a[:, c] != b[:, c]
    out = springs.copy()
    out[first_b, :oriented] *= -1.0
    return out


def restore_state(model, state, arrays) -> None:
    """Put the arrays and clock of :func:`state_arrays` back into ``state``."""
    be = model.backend
    for k in STATE_ARRAYS:
        target = getattr(state, k)
        if k not in arrays and k in ("released", "wall_springs", "dissipated", "wall_contact_peak", "wall_work",
                                     "image"):  # older checkpoints  # fmt: skip
            if target.size and k in ("wall_springs", "dissipated"):
                raise ValueError(f"checkpoint: has no {k!r}; it was not written by a run of the dissipative law")
            target[...] = 0
            continue
        if arrays[k].shape != target.shape or arrays[k].dtype != target.dtype:
            raise ValueError(f"checkpoint: array {k!r} has shape {arrays[k].shape} {arrays[k].dtype}, "
                             f"the scene's model needs {target.shape} {target.dtype}")  # fmt: skip
        target[...] = be.asarray(arrays[k])
    # the step loop's knowledge of the old state (neighbour list, displacement budget)
    # does not hold for the restored one
    state._engine = None
    nl = state.neighbors
    if nl is not None:
        nl.invalidate()
        if model.law is not None and model.law.history:  # the list is built at x with the history by pair
            h = model.law.history
            pairs = np.asarray(arrays.get("contact_pairs", np.zeros((0, 2))), dtype=np.int64).reshape(-1, 2)
            springs = np.asarray(arrays.get("contact_springs", np.zeros((0, h))), dtype=np.float64)
            if len(pairs) and "spring_order" not in arrays:
                springs = _springs_by_index(model, np.asarray(arrays["x"]), pairs, springs.reshape(len(pairs), -1))
            nl.set_springs(state.x, pairs, springs.reshape(len(pairs), -1) if len(pairs) else np.zeros((0, h)))
    clock, counters = arrays["clock"], arrays["counters"]
    state.time = float(clock[0])
    state.step = int(counters[0])
    state.forces_valid = bool(counters[1])
    state.remember_forces()
    state.clock = None
    if len(clock) >= 3 and len(counters) >= 3 and clock[2] > 0:
        state.clock = (float(clock[1]), int(counters[2]), float(clock[2]), (state.time, state.step))


__all__ = ["SPRING_ORDER_INDEX", "STATE_ARRAYS", "restore_state", "state_arrays"]
