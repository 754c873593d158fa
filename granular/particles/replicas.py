"""Independent replicas of particle systems in one model, for ensembles of impacts.

A parameter study (impact speed, angle, spin, stiffness, breakage threshold ...) runs the
same scene many times with other values. Run one by one, each small system costs the
step loop's fixed overheads (on a GPU: launches for a few hundred particles). A model of
replicas puts them all in one system with one state, one set of kernels and one step
loop: :meth:`ModelBuilder.replicas <granular.particles.builder.ModelBuilder.replicas>`
concatenates builders, each replica keeping its own particles, bonds and walls.

Replicas do not interact, by construction rather than by filtering: the neighbour search
puts each particle's replica into its cell key (:mod:`kernels.grid`), so particles of
different replicas are never listed as neighbours, even when they occupy the same space;
a particle's walls are those of its replica (``Walls.first``); bonds join particles of
one replica. A particle's forces are therefore the same terms, in the same order, as in
its replica run alone, and each replica's trajectory equals that run bit for bit (on one
backend; ``tests/test_replicas.py``).

:func:`replica_diagnostics` reduces the per-particle diagnostics row of the step kernels
(:data:`kernels.layout.DIAGNOSTICS`) per replica on the device, and adds the centre-of-mass
velocity, the force the walls exert on each replica, and the largest force one wall
contact exerted on one of its particles at any step so far (the per-particle running
maximum ``State.wall_contact_peak`` the force pass keeps, reduced per replica).
"""

from __future__ import annotations

import numpy as np

from kernels.layout import DIAGNOSTICS

from .analysis import _configuration
from .builder import ModelBuilder

__all__ = ["replica_diagnostics", "replicate"]


def replicate(builders) -> ModelBuilder:
    """One builder holding ``builders`` as independent replicas
    (:meth:`ModelBuilder.replicas <granular.particles.builder.ModelBuilder.replicas>`)."""
    return ModelBuilder.replicas(builders)


def _segment_sums(model, rows):
    """Per-replica sums of ``rows`` (N, K) (backend array) as host float64 (R, K)."""
    counts = np.bincount(model.replica, minlength=model.replica_count)
    if (counts == counts[0]).all():  # replicas of one scene: a reshape, summed on the device
        sums = rows.reshape(model.replica_count, int(counts[0]), rows.shape[1]).sum(axis=1, dtype=np.float64)
        return np.asarray(model.backend.to_host(sums), dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    host = np.asarray(model.backend.to_host(rows), dtype=np.float64)
    return np.add.reduceat(host, starts, axis=0)


def _segment_max(model, values):
    """Per-replica maxima of ``values`` (N,) (backend array) as host float64 (R,)."""
    counts = np.bincount(model.replica, minlength=model.replica_count)
    if (counts == counts[0]).all():
        peaks = values.reshape(model.replica_count, int(counts[0])).max(axis=1)
        return np.asarray(model.backend.to_host(peaks), dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    host = np.asarray(model.backend.to_host(values), dtype=np.float64)
    return np.maximum.reduceat(host, starts)


def replica_diagnostics(model, state) -> dict:
    """The diagnostics of each replica of ``model`` at ``state``.

    Parameters
    ----------
    model : Model
        A model of replicas (:meth:`ModelBuilder.replicas`).
    state : State
        Its state.

    Returns
    -------
    dict
        ``{name: (R,) float64}``: every column of :data:`kernels.layout.DIAGNOSTICS`
        summed over the replica's particles (energies by kind [M L²/T²], momenta, broken
        bonds, released and dissipated energy, contacts), ``mass`` [M],
        ``v_cm_x``, ``v_cm_y``, ``v_cm_z`` (centre-of-mass velocity [L/T]) and
        ``wall_force_x``, ``wall_force_y``, ``wall_force_z``, ``wall_force`` (the force
        the replica's walls exert on it at ``state``, and its magnitude [M L/T²]),
        ``wall_contact_force_max`` (the largest magnitude of the force one wall exerted
        on one particle of the replica at any step of the state's run so far, the
        maximum of ``state.wall_contact_peak`` over its particles [M L/T²]; 0 without
        walls or before any wall contact).

    Raises
    ------
    ValueError
        ``model`` is not a model of replicas.
    """
    if model.replica is None:
        raise ValueError("replica_diagnostics: the model has no replicas (build it with ModelBuilder.replicas)")
    cfg = _configuration(model, state)
    rows = model.diagnostics_rows(cfg)
    sums = _segment_sums(model, rows)
    out = {name: sums[:, k].copy() for k, name in enumerate(DIAGNOSTICS)}
    mass = _segment_sums(model, model.mass.reshape(-1, 1))[:, 0]
    out["mass"] = mass
    for axis in "xyz":
        out[f"v_cm_{axis}"] = out[f"P_{axis}"] / mass
    walls = model.force("walls")
    if walls is not None:
        cfg = _configuration(model, state)
        walls.accumulate(model, cfg)
        force = _segment_sums(model, cfg.F)
    else:
        force = np.zeros((model.replica_count, 3))
    for c, axis in enumerate("xyz"):
        out[f"wall_force_{axis}"] = force[:, c]
    out["wall_force"] = np.linalg.norm(force, axis=1)
    peak = getattr(state, "wall_contact_peak", None)
    if peak is not None and peak.shape == (model.n,) and model.n:
        out["wall_contact_force_max"] = _segment_max(model, peak)
    else:
        out["wall_contact_force_max"] = np.zeros(model.replica_count)
    return out
