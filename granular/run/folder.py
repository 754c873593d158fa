"""Run folders that lose nothing: what is in ``--out``, whether a run may use it, and
whether a checkpoint may continue it.

A directory holding a finished or partial run (``granular run``) or ensemble
(``granular ensemble``) is never replaced without ``--overwrite``; ``--resume`` continues
it. A directory holding anything else is refused. :func:`plan_out_dir` decides, before
anything is computed or deleted; :func:`clear` deletes the old run's files only once
every other check has passed, so a refused command leaves the directory as it was.

:func:`resume_problem` and :func:`resume_dir_problem` decide whether ``--resume`` can
continue a run (same scene, same backend, an end not before the checkpoint, a run folder
to write into); :func:`scene_differences` says what differs between two scene
dictionaries (a checkpoint's and the current scene) for the "written for a different
scene" message. :func:`total_steps` is the end step of ``granular run``'s options.
"""

from __future__ import annotations

import os
import shutil

from ..errors import OutDirError
from ..io.jsonio import dumps, encode, loads

#: What ``granular run`` writes into ``--out``.
RUN_FILES = frozenset({"frames.pvd", "frames", "series.csv", "run.json", "plots", "checkpoints", "walls.vtu",
                       "walls.pvd", "walls", "walls.csv", "meshes.pvd", "meshes", "fragments.csv"})  # fmt: skip
#: What ``granular ensemble`` writes into ``--out``.
ENSEMBLE_FILES = frozenset({"summaries.npz", "summaries.parquet", "histograms.png", "ensemble.json", "subsample",
                            "chunks"})  # fmt: skip


def _describe_run(out) -> str:
    """``"a finished run (1200 steps to t = 0.6)"`` or ``"a partial run ..."`` from run.json."""
    try:
        with open(os.path.join(out, "run.json")) as fh:
            info = loads(fh.read())
    except (OSError, ValueError):
        return "a partial run (no run.json: it was stopped before the end)"
    state = "finished" if info.get("finished") else "partial"
    why = ""
    if info.get("error"):
        why = ", stopped by an error"
    elif info.get("interrupted"):
        why = ", interrupted"
    return f"a {state} run ({info.get('steps')} steps to t = {info.get('time'):.6g}{why})"


def plan_out_dir(out, overwrite=False, ours=RUN_FILES, what="run", python=False) -> list[str]:
    """Check ``out`` for a new ``what`` (``"run"`` or ``"ensemble"``) and return the entries
    to delete before writing (only with ``overwrite``). OutDirError when ``out`` is a file,
    holds foreign files, or holds an earlier run and ``overwrite`` is false. ``python``:
    the message speaks of :class:`~granular.run.simulation.Simulation`'s arguments
    (``out=``, ``overwrite=True``, the ``Simulation.resume`` call that continues the run)
    rather than of the command's options."""
    out = os.fspath(out)
    where = f"out={out!r}" if python else f"--out {out}"
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutDirError(f"{where}: is a file, not a directory")
    if not os.path.isdir(out):
        return []
    present = set(os.listdir(out))
    if not present:
        return []
    foreign = sorted(n for n in present - ours if not n.startswith("."))
    if foreign:
        raise OutDirError(f"{where}: exists and holds files that are not a granular {what}'s "
                          f"({', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}); choose another directory")  # fmt: skip
    if not overwrite:
        if what == "run":
            found = _describe_run(out)
            ckpt = os.path.join(out, "checkpoints", "checkpoint.npz")
            if not os.path.isfile(ckpt):
                hint = ""
            elif python:  # the call as a script writes it (granular imported; model: the run's model)
                hint = f", or continue it with granular.Simulation.resume(model, {out!r})"
            else:
                hint = f", or --resume {ckpt} to continue it"
        else:
            done = os.path.isfile(os.path.join(out, "summaries.npz"))
            found = "a finished ensemble" if done else "a partial ensemble (some chunks done)"
            hint = ", or --resume to continue it" if not done else ""
        give = "overwrite=True" if python else "--overwrite"
        raise OutDirError(f"{where}: holds {found}; give {give} to replace it{hint}, "
                          "or choose another directory")  # fmt: skip
    leftovers = {n for n in present if n.startswith(".") and n.endswith((".tmp", ".part"))}
    return sorted(os.path.join(out, n) for n in (present & ours) | leftovers)


def clear(paths) -> None:
    """Delete the files and directories ``paths`` (from :func:`plan_out_dir`)."""
    for p in paths:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.remove(p)


def scene_differences(old, new, path="", limit=5, labels=("the checkpoint", "the scene")) -> list[str]:
    """Lines ``"run.dt: 0.0005 in the checkpoint, 0.001 in the scene"`` for the first
    ``limit`` differences between two scene dictionaries (as ``Scene.model_dump``);
    ``labels`` name where ``old`` and ``new`` come from."""
    out = []
    was, now = labels

    def walk(a, b, where):
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                sub = f"{where}.{k}" if where else str(k)
                if k not in b:
                    out.append(f"{sub}: {_short(a[k])} in {was}, absent in {now}")
                elif k not in a:
                    out.append(f"{sub}: absent in {was}, {_short(b[k])} in {now}")
                else:
                    walk(a[k], b[k], sub)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{where}[{i}]")
            return
        if a != b:
            out.append(f"{where or '(scene)'}: {_short(a)} in {was}, {_short(b)} in {now}")

    walk(old, new, path)
    return out


def _short(value) -> str:
    text = dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def total_steps(args, run) -> int:
    """The end step of a run (counted from step 0): ``--steps``, ``--time``, or the scene's
    ``[run]`` (``steps``, else ``duration``)."""
    if getattr(args, "steps", None) is not None:
        return args.steps
    if getattr(args, "time", None) is not None:
        return int(round(args.time / run.dt))
    if run.steps is not None:
        return run.steps
    return int(round(run.duration / run.dt))


def resume_problem(meta, scene_dict, path, total, backend_name=None) -> str | None:
    """Why the checkpoint ``meta`` (at ``path``) cannot continue this scene to step
    ``total`` on the backend ``backend_name`` (None: not checked here), or None."""
    stored = meta.get("scene") or {}
    if isinstance(stored.get("run"), dict) and "fragments" not in stored["run"]:
        # written before [run] fragments existed: that run counted fragments by bonds
        stored = dict(stored, run={**stored["run"], "fragments": "bonds"})
    # compared as stored (standard JSON): NaN equals NaN there, and inf is "Infinity" on both sides
    stored, current = encode(stored), encode(scene_dict)
    if stored != current:
        diffs = scene_differences(stored, current)
        return (f"checkpoint {path!r} was written for a different scene: " + "; ".join(diffs)
                + ". Resume with the scene that wrote it, or start a new run")  # fmt: skip
    if backend_name is not None and meta.get("backend") != backend_name:
        return (f"checkpoint is from backend {meta.get('backend')!r}, this run uses {backend_name!r} "
                "(bit-for-bit restarts need the same backend)")  # fmt: skip
    step, t = int(meta.get("step", 0)), float(meta.get("time", 0.0))
    if total < step:
        return (f"the checkpoint is at step {step} (t = {t:.6g}); the requested end, step {total} "
                f"(t = {total * float(meta.get('dt', 0.0)):.6g}), is before it. Give a later --time or more --steps")  # fmt: skip
    return None


def resume_dir_problem(out, advice="leave out --out, or give that directory") -> str | None:
    """Why ``out`` holds no run that a resumed run can write into, or None; ``advice``
    ends the message (the command line's by default)."""
    missing = [n for n in ("frames.pvd", "series.csv") if not os.path.isfile(os.path.join(out, n))]
    if missing:
        return (f"{out} holds no run to continue (no {' or '.join(missing)}); a resumed run writes into the run "
                f"directory of its checkpoint: {advice}")  # fmt: skip
    return None


def resume_out_dir(checkpoint) -> str:
    """The run folder a checkpoint belongs to (``<out>/checkpoints/checkpoint.npz``)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(checkpoint)))
