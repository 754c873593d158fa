"""``granular run SCENE``: one path for particle scenes and ``[bodies]`` scenes.

The order of the checks is the contract of the command's exit status (``granular.cli``):
everything that can refuse the run (a malformed scene, a run too long or too short, a
checkpoint that cannot continue this scene, an earlier run in ``--out`` without
``--overwrite``, an unwritable or full ``--out``, a step above the stable-step estimate)
refuses it with status 2 before anything in ``--out`` is deleted or written. Then the
system (:class:`~granular.particles.system.ParticleSystem` or a body adapter of
:mod:`granular.bodies.scenes.systems`) runs in a :class:`~granular.run.runner.Runner`
with the run folder's writers (:mod:`granular.run.writers`): status 0 when it finished,
1 when a step or a health check failed (the last good state is the checkpoint), 130 when
a signal stopped it (after writing a checkpoint; the last line says at which step and
gives the command that continues it, :func:`resume_command`).
"""

from __future__ import annotations

import os
import shlex
import sys

from ..backend import BackendError, get_backend
from ..bodies.scenes.config import parse_bodies
from ..bodies.scenes.systems import build_system
from ..compiling import CompileNotice
from ..errors import IntegrationError, Refused, SceneError
from ..io import CheckpointError, load_checkpoint
from ..particles.feeds import check_stable_step, match, restore_feeds
from ..particles.setup import restore_setup
from ..particles.stability import estimate_stable_step
from ..particles.system import restore_state
from ..resources import ResourceError, check_body_memory, check_writable
from .folder import OutDirError, clear, plan_out_dir, resume_dir_problem, resume_out_dir, resume_problem, total_steps
from .progress import long_run_refused
from .scene import build_model, load_scene, scene_feeds
from .simulation import BodyRun, Simulation
from .stages import run_stages, stage_plan
from .writers import checkpoint_path

__all__ = ["cmd_run", "resume_command", "run_bodies", "run_scene"]


def _particles(scene, args):
    """The model, state and stable-step estimate of a particle scene, or :class:`Refused`."""
    try:
        model, run = build_model(scene, backend=args.backend, source=args.scene, precision=args.precision)
    except SceneError as exc:
        raise Refused(str(exc)) from None
    state = model.state()
    estimate = estimate_stable_step(model, state, run.integrator)
    if run.dt > estimate.h_max and not (run.allow_unstable_step or getattr(args, "allow_unstable_step", False)):
        raise Refused(f"granular run: run.dt = {run.dt:g} is above the stable-step estimate {estimate.describe()}. "
                      f"The explicit maps are stable for h ω < 2 only: reduce run.dt (below {estimate.h_max:.3g}), "
                      "or give --allow-unstable-step (or [run] allow_unstable_step = true) to run it anyway")  # fmt: skip
    return model, state, run, estimate


def _bodies(scene, args):
    """The body adapter of a ``[bodies]`` scene, or :class:`Refused`."""
    source = str(getattr(args, "scene", "scene"))
    precision = getattr(args, "precision", None) or scene.run.precision
    if precision != "float64":
        raise Refused(f"granular run: --precision {precision!r} is not available for [bodies] scenes; "
                      "allowed: float64")  # fmt: skip
    try:
        backend = get_backend(getattr(args, "backend", None) or scene.run.backend)
    except (BackendError, ValueError) as exc:
        raise Refused(f"granular run: {exc}") from None
    count = scene.bodies.get("count") if isinstance(scene.bodies, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        try:  # before any body's array is made
            check_body_memory(count, backend, f"{source}: bodies.count")
        except ResourceError as exc:
            raise Refused(f"granular run: {exc}") from None
    try:
        config = parse_bodies(scene.bodies, source)
    except SceneError as exc:
        raise Refused(str(exc)) from None
    try:
        return build_system(config, backend)
    except ValueError as exc:
        raise Refused(f"{source}: 1 error(s)\n  bodies: {exc}") from None


def _plan(scene, args, total):
    """The run folder, what to clear in it, and a resumed run's checkpoint; or :class:`Refused`
    (``None`` for the folder: a resumed run already at its end, nothing to do)."""
    scene_dict = scene.model_dump(mode="json")
    if args.resume is None:
        out = args.out or os.path.join("out", scene.name)
        try:
            to_clear = plan_out_dir(out, overwrite=getattr(args, "overwrite", False))
        except OutDirError as exc:
            raise Refused(f"granular run: {exc}") from None
        return out, to_clear, None, {}
    try:
        arrays, meta = load_checkpoint(args.resume)
    except CheckpointError as exc:
        raise Refused(f"granular run: --resume: {exc}") from None
    why = resume_problem(meta, scene_dict, args.resume, total)
    if why:
        raise Refused(f"granular run: --resume: {why}")
    out = args.out or resume_out_dir(args.resume)
    if total == int(meta.get("step", 0)):
        if not args.quiet:
            print(f"granular run: the checkpoint is already at step {total} (t = {float(meta.get('time') or 0.0):.6g}), the end "
                  "of the run; nothing to do (give a later --time or more --steps to go on)", file=sys.stderr)  # fmt: skip
        return None, [], arrays, meta
    why = resume_dir_problem(out)
    if why:
        raise Refused(f"granular run: --resume: {why}")
    return out, [], arrays, meta


def _restore(restore, name, arrays, meta) -> None:
    """Put a checkpoint's ``arrays`` back with ``restore`` on the backend ``name``, or :class:`Refused`."""
    if meta.get("backend") != name:
        raise Refused(f"granular run: --resume: checkpoint is from backend {meta.get('backend')!r}, this run uses "
                      f"{name!r} (bit-for-bit restarts need the same backend)")  # fmt: skip
    try:
        restore(arrays)
    except (ValueError, KeyError) as exc:
        raise Refused(f"granular run: --resume: {exc}") from None


def cmd_run(args) -> int:
    """``granular run`` with the parsed options ``args``; returns the exit status."""
    try:
        scene = load_scene(args.scene)
    except SceneError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return run_scene(scene, args)


def run_scene(scene, args) -> int:
    """Run the parsed scene ``scene`` with the ``granular run`` options ``args``
    (``scene``: its source, ``out``, ``backend``, ``precision``, ``time``, ``steps``,
    ``resume``, ``overwrite``, ``quiet``, ``log_json``, ...); returns the exit status."""
    try:
        return _run(scene, args)
    except Refused as exc:
        print(str(exc), file=sys.stderr)
        return 2


def run_bodies(scene, args) -> int:
    """``granular run`` of a ``[bodies]`` scene (:func:`run_scene` runs either kind)."""
    return run_scene(scene, args)


def _run(scene, args) -> int:
    args.resume = getattr(args, "resume", None)
    if args.resume is not None and getattr(args, "overwrite", False):
        raise Refused("granular run: --resume continues the run in its directory and --overwrite replaces a run; "
                      "give one of them")  # fmt: skip
    total = total_steps(args, scene.run)
    if total < 1:
        raise Refused(f"granular run: the run is shorter than one step (dt = {scene.run.dt})")
    why = long_run_refused(total, scene.run.dt, args)
    if why:
        raise Refused(f"granular run: {why}")
    out, to_clear, arrays, meta = _plan(scene, args, total)
    if out is None:
        return 0
    check_writable(out)
    scene_dict = scene.model_dump(mode="json")
    quiet, log_json = args.quiet, args.log_json
    with CompileNotice(quiet=quiet, log_json=log_json) as notice:
        return _execute(scene, args, total, out, to_clear, arrays, meta, scene_dict, notice)


def _compiled(notice) -> str:
    """``"; kernels compiled in 38 s (once)"`` when this run compiled any, else ``""``."""
    return f"; kernels compiled in {notice.so_far():.0f} s (once)" if notice.so_far() >= 0.5 else ""


def _execute(scene, args, total, out, to_clear, arrays, meta, scene_dict, notice) -> int:
    quiet, log_json = args.quiet, args.log_json
    if scene.bodies is not None:
        system = _bodies(scene, args)
        if arrays is not None:
            _restore(system.restore, system.backend.name, arrays, meta)
        body_run = BodyRun(system, scene.run, out, scene_dict, quiet=quiet, log_json=log_json)
        body_run.preflight(total, system.step_count)
        clear(to_clear)
        try:
            info = body_run.execute(total, resumed=arrays is not None)
        except IntegrationError as exc:
            _failed(exc, body_run.info or {}, out, checked=False)
            return 1
        if info["interrupted"] and not quiet and not log_json:
            _interrupted(scene, args, info, out, total)
        elif not quiet and not log_json:
            rate = info["steps_per_s"]
            speed = "" if rate is None else f" ({rate:,.0f} steps/s, {info['body_steps_per_s']:,.0f} body-steps/s)"
            print(f"granular run: {scene.name}: {system.label}, {system.n} bodies, {info['steps']} steps to "
                  f"t = {info['time']:.6g} on {info['backend']}{speed}{_compiled(notice)}; output in {out}/ "
                  "(open frames.pvd in ParaView)")  # fmt: skip
        return 130 if info["interrupted"] else 0

    model, state, run, estimate = _particles(scene, args)
    try:
        feeds = scene_feeds(scene, str(getattr(args, "scene", "scene")))
        stages = stage_plan(scene, str(getattr(args, "scene", "scene")))
    except SceneError as exc:
        raise Refused(str(exc)) from None
    if feeds is None and any(st.change is not None for st in stages):
        feeds = []  # the set-up changes: an open system, whose ledger books the change's energy
    if arrays is not None:
        if meta.get("setup"):  # the run changed its walls, meshes or gravity: the scene's model takes them
            _restore(lambda a: restore_setup(model, meta["setup"]), model.backend.name, arrays, meta)
            state = model.state()
        if "particle_ids" in arrays:  # particles entered or left: the scene's model takes the checkpoint's set
            _restore(lambda a: match(model, a), model.backend.name, arrays, meta)
            state = model.state()
        _restore(lambda a: restore_state(model, state, a), model.backend.name, arrays, meta)
    if feeds:  # what the insertions bring against the step (the run's own check was _particles')
        names = [f"outlets[{k}]" for k in range(len(scene.outlets))] + [f"insert[{k}]" for k in range(len(scene.insert))]
        try:
            check_stable_step(model, state, feeds, run.dt, run.integrator, names=names,
                              allow_unstable_step=run.allow_unstable_step or getattr(args, "allow_unstable_step", False))
        except ValueError as exc:
            how = "--allow-unstable-step (or [run] allow_unstable_step = true)"
            raise Refused(f"granular run: {str(exc).replace('allow_unstable_step=True', how)}") from None
    sim = Simulation(model, state, out, run, scene=scene_dict, quiet=quiet, log_json=log_json, stable_step=estimate,
                     graphs=run.graphs and not getattr(args, "eager", False), allow_unstable_step=True,
                     overwrite=bool(getattr(args, "overwrite", False)), resume=arrays is not None, feeds=feeds)  # fmt: skip
    if arrays is not None:
        try:
            restore_feeds(sim.feeds, sim.ledger, meta.get("feeds"))
        except ValueError as exc:
            raise Refused(f"granular run: --resume: {exc}") from None
    sim.preflight(total, state.step)
    if not quiet and not log_json:
        unstable = " (above it: allowed by request)" if run.dt > estimate.h_max else ""
        walls = model.force("walls")
        meshes = walls.meshes if walls is not None else []
        tris = sum(len(m["mesh"]) for m in meshes)
        bounds = f", {len(meshes)} mesh{'es' if len(meshes) > 1 else ''} of {tris:,} triangles" if meshes else ""
        print(f"granular run: {scene.name}: {model.n:,} particles, {model.n_bonds:,} bonds{bounds} on "
              f"{model.backend.name}; "
              f"steps {state.step} to {total} of dt = {run.dt:g} (t = {total * run.dt:.6g}); stable-step estimate "
              f"{estimate.describe()}{unstable}", file=sys.stderr)  # fmt: skip
    try:
        if stages:
            info = run_stages(sim, stages, total, resumed=arrays is not None, health_start=meta.get("health"),
                              where=meta.get("stage"))  # fmt: skip
        else:
            info = sim.execute(state, total, resumed=arrays is not None, health_start=meta.get("health"))
    except IntegrationError as exc:
        _failed(exc, sim.info or {}, out)
        return 1
    if info["interrupted"] and not quiet and not log_json:
        _interrupted(scene, args, info, out, total)
    elif not quiet and not log_json:
        rate = info["steps_per_s"]
        print(f"granular run: {scene.name}: {info['steps']} steps to t = {info['time']:.6g} on {info['backend']}"
              f"{'' if rate is None else f' ({rate:,.0f} steps/s)'}{_compiled(notice)}; output in {out}/ "
              "(open frames.pvd in ParaView)")  # fmt: skip
    return 130 if info["interrupted"] else 0


def resume_command(args, out) -> str:
    """The ``granular run`` command line that continues the run of the options ``args``
    writing into ``out`` from its checkpoint: the scene, ``--resume`` with the checkpoint
    (the run folder is the checkpoint's), and the options that decide what the run is and
    where it ends (``--backend``, ``--precision``, ``--steps`` or ``--time``, the
    ``--allow-*`` and ``--eager`` switches), quoted for a POSIX shell."""
    words = ["granular", "run", os.fspath(args.scene), "--resume", checkpoint_path(out)]
    for name in ("backend", "precision"):
        if getattr(args, name, None) is not None:
            words += [f"--{name}", str(getattr(args, name))]
    if getattr(args, "steps", None) is not None:
        words += ["--steps", str(args.steps)]
    elif getattr(args, "time", None) is not None:
        t = float(args.time)
        words += ["--time", f"{t:g}" if float(f"{t:g}") == t else repr(t)]
    for name in ("allow_unstable_step", "allow_long_run", "eager"):
        if getattr(args, name, False):
            words.append("--" + name.replace("_", "-"))
    return shlex.join(words)


def _interrupted(scene, args, info, out, total) -> None:
    """The last lines of a run stopped by a signal: where it stopped, where its output
    is, and the command that continues it."""
    print(f"granular run: {scene.name}: interrupted at step {info['steps']} of {total} (t = {info['time']:.6g} of "
          f"{total * scene.run.dt:.6g}) on {info['backend']}; "
          f"the checkpoint of that step and the output so far are in {out}/\n"
          f"  continue the run with: {resume_command(args, out)}", file=sys.stderr)  # fmt: skip


def _failed(exc, good, out, checked=True) -> None:
    why = ", the last that passed the health check" if checked else ", the step before the one that failed"
    print(f"granular run: {exc}\n  the last good state (step {good.get('steps')}, t = {good.get('time', 0):.6g}"
          f"{why}) is in {checkpoint_path(out)}", file=sys.stderr)  # fmt: skip
