"""Ensembles of independent bodies: sampled initial conditions and parameters, run in
batched chunks, in process or as Dask tasks, summarised one row per body. Ensembles of
particle scenes (impacts run as replicas in one system) are
:mod:`granular.ensemble.particles`; :func:`run_ensemble` takes either kind of scene.

:func:`run_ensemble` takes a scene with a ``[bodies]`` table (:mod:`granular.bodies.scenes`)
and ``vary``, a mapping ``FIELD -> DISTRIBUTION``:

``FIELD``
    an array-valued key of the ``[bodies]`` table, optionally with component indices:
    ``omega_body[0]``, ``mass``, ``inertia[2]`` (principal moments given as 3 numbers),
    ``inertia[1][1]`` (a 3x3 tensor), ``position``, ``orientation[0]`` ... (the keys of
    :data:`granular.bodies.scenes.config.ARRAY_KEYS` for the scheme, plus ``orientation``,
    ``rotvec``, ``omega``, ``omega_body``). Without indices every component is sampled.
    The scene must give the key as one shared value (not a per-body list); ``omega``,
    ``omega_body``, ``position``, ``velocity``, ``xy``, ``rotvec`` default to zeros,
    ``mass`` to the scheme's default. A varied ``orientation`` is normalised per body.
``DISTRIBUTION``
    ``uniform(a, b)`` (on [a, b)), ``normal(mu, sigma)``, ``grid(a, b)`` (body ``i`` of
    ``N`` takes ``a + (b - a) i / (N - 1)``; each grid field is its own 1-D sweep, not a
    tensor product), ``file(path.npy)`` (row ``i`` of the array: shape ``(N,)`` or
    ``(N,) + component shape``, at least ``N`` rows).

Sampling is counter based: the value of component ``c`` of field ``j`` for body ``i`` is
a SplitMix64 hash of ``(seed, j, c, i)`` mapped to a uniform (Box-Muller for the normal),
so a body's sample depends only on the seed, its index and the field order, never on the
chunking or on which worker ran it. Each chunk is one batched system built through the
scene adapters (:func:`granular.bodies.scenes.config.parse_bodies`,
:func:`granular.bodies.scenes.systems.build_system`) with per-body lists; the Newton
solvers freeze converged bodies, so a body's trajectory does not depend on the rest of
its chunk and the summaries are bitwise identical for any chunk size (on one backend).

The ``[bodies]`` keys ``count`` and ``[bodies.random]`` are ignored (the ensemble sets
the bodies); positions that the scene spaces along x for display (``spacing``) are given
explicitly per body (the scene's shared value, default 0), so that a body's state does
not depend on its place in a chunk.

Summary columns (each an (N,) array; units of the scene):

``body`` (int64), one column per sampled component (``omega_body[0]``, ...), ``time``
(final time [T]), ``x``, ``y``, ``z`` (final centre-of-mass / body position [L]),
``q0..q3`` (final orientation, body -> spatial), ``omega_x..z`` (spatial angular velocity
[1/T]), ``Omega_1..3`` (body angular velocity [1/T]), ``energy0`` and ``energy_error``
(the scheme's conserved energy, see below; absolute drift ``E(t_end) - E(0)``
[M L²/T²]) and ``energy_rel_error`` (drift / ``max(|E(0)|, tiny)``),
``L_error_x..z`` and ``L_error_norm`` (spatial angular momentum drift [M L²/T]; NaN for
the rolling ball and for the components a body does not conserve, e.g. the heavy top's
horizontal ones; the norm is over the conserved components), ``flip_axis`` (the body axis with the largest ``|Omega(0)|``) and
``flip_time`` (first time that body-axis component changes sign, linearly interpolated
between steps [T]; NaN when it never flips: the event of the unstable (intermediate-axis)
rotation; note that :mod:`granular.validation.ulvc` times a flip by the zero crossing of
a body point's ``p_z`` instead, a different event). The energy and momentum columns come
from the scheme's ``invariants(state)`` (:mod:`granular.bodies.core`): directors and the
non-twisting body ``K``; ulvc ``T + U`` of its dead loads; livens the scheme's conserved
energy (the generalized energy (74), the Hamiltonian for EMH and MPH); rolling ball
``E - W``. A chunk whose step fails (Newton not converged, non-finite state) raises a
:class:`~granular.bodies.core.BodyError` naming the body (its index within the chunk) and
the step; there is no per-body failure column. With ``--scheduler``, ``file(...)`` paths
must be readable by the workers.

``granular ensemble`` writes each chunk's rows as the chunk finishes
(:mod:`granular.ensemble.store`), so an interrupted ensemble keeps them and ``--resume``
runs only the missing chunks; an earlier ensemble in ``--out`` is not replaced without
``--overwrite``.
"""

from .chunk import run_chunk
from .command import main, run_subsample, subsample_indices
from .driver import Progress, collect, make_any_spec, run_ensemble, write_outputs
from .spec import (
    Distribution,
    EnsembleSpec,
    EnsembleSpecError,
    chunk_bounds,
    chunk_table,
    make_spec,
    parse_distribution,
    parse_field,
    parse_vary,
    sample,
)

__all__ = ["Distribution", "EnsembleSpec", "EnsembleSpecError", "Progress", "chunk_bounds", "chunk_table", "collect",
           "main", "make_any_spec", "make_spec", "parse_distribution", "parse_field", "parse_vary", "run_chunk", "run_ensemble",
           "run_subsample", "sample", "subsample_indices", "write_outputs"]  # fmt: skip
