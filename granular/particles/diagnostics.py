"""Energies, momenta, invariants and the error measures (35)-(38) of paper 003.

Scalar results come back as host floats, vector results as host NumPy arrays; the
reductions run on the backend.
"""

from __future__ import annotations

import numpy as np

from .. import rotations


def _host(model, a):
    return model.backend.to_host(a)


def kinetic_energy_translational(model, state) -> float:
    """Translational kinetic energy ``½ Σ m_i |v_i|²``.

    Summed on the backend in the model's dtype.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    float
        The energy [M L²/T²].
    """
    return float(0.5 * (model.mass * (state.v * state.v).sum(axis=1)).sum())


def kinetic_energy_rotational(model, state) -> float:
    """Rotational kinetic energy ``½ Σ J_i |Ω_i|²`` (scalar inertia, so body and spatial forms agree).

    Summed on the backend in the model's dtype.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    float
        The energy [M L²/T²].
    """
    return float(0.5 * (model.inertia * (state.omega * state.omega).sum(axis=1)).sum())


def potential_energies(model, state) -> dict:
    """Potential energy of each interaction family the model has (one fused kernel).

    The keys are ``U_gravity``, ``U_pendulum`` (39), ``U_m`` (bending/torsion, (44)-(50)),
    ``U_a`` (axial, (51)-(52)), ``U_s`` (shear, (53)-(55)), ``U_pp`` (particle-particle,
    (56)-(57)) and ``U_pw`` (particle-wall), in the order of ``model.forces``; sums over
    particles in float64. A neighbour list is brought up to date for ``state.x`` first.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    dict of str to float
        Energy of each family [M L²/T²].
    """
    return model.potential_energies(state)


def energies(model, state, totals=None) -> dict:
    """Energy by kind: kinetic, potential of each family, and their total.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).
    totals : dict of str to float, optional
        The result of ``model.diagnostics(state)`` if already computed (saves a kernel
        launch and a read-back).

    Returns
    -------
    dict of str to float
        ``kinetic_translational``, ``kinetic_rotational``, the potential energies of
        :func:`potential_energies`, and ``total``, their sum [M L²/T²] (sums over
        particles in float64).
    """
    d = model.diagnostics(state) if totals is None else totals
    e = {"kinetic_translational": d["kinetic_translational"], "kinetic_rotational": d["kinetic_rotational"]}
    for f in model.forces:
        for k in f.energy_keys:
            e[k] = d[k]
    e["total"] = float(sum(e.values()))
    return e


def released_energy(model, state) -> float:
    """Energy the broken bonds had when they broke.

    ``total + released`` is what the scheme conserves when bonds break.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    float
        The released energy ``U_released`` [M L²/T²]; 0.0 for a model without bonds.
    """
    return model.diagnostics(state)["U_released"] if model.n_bonds else 0.0


def broken_bonds(model, state) -> int:
    """Number of broken bonds.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    int
        Bonds with ``state.broken`` set; 0 for a model without bonds.
    """
    return int(state.broken.sum()) if model.n_bonds else 0


def total_energy(model, state) -> float:
    """Total energy: kinetic (translational and rotational) plus the potential energy of every family.

    The ``total`` of :func:`energies`, the quantity the conservative schemes conserve.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    float
        Total energy [M L²/T²].
    """
    return energies(model, state)["total"]


def linear_momentum(model, state) -> np.ndarray:
    """Total linear momentum ``Σ m_i v_i``.

    Summed on the backend in the model's dtype.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    ndarray, (3,) float
        The momentum [M L/T], a host array of the model's dtype.
    """
    return _host(model, (model.mass[:, None] * state.v).sum(axis=0))


def angular_momentum(model, state, origin=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Total angular momentum about ``origin``: ``Σ ((x_i - o) × m_i v_i + J_i Ω_i)``.

    (Paper (34) prints only the spin part ``Σ J_i Ω_i``; see ``docs/physics.md``.)
    Summed on the backend in the model's dtype.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).
    origin : array_like, (3,) float, optional
        The reference point ``o`` [L]. Default the origin.

    Returns
    -------
    ndarray, (3,) float
        The angular momentum [M L²/T], a host array of the model's dtype.
    """
    xp = model.backend.xp
    r = state.x - xp.asarray(origin, dtype=state.x.dtype)
    orbital = rotations.cross(r, model.mass[:, None] * state.v)
    return _host(model, (orbital + model.inertia[:, None] * state.omega).sum(axis=0))


def pendulum_invariants(model, state) -> tuple[np.ndarray, np.ndarray]:
    """The pendulum invariants ``Rρ0·Ω`` (41b) and ``|Rρ0|`` (41c) of each pendulum.

    Both are constant along the exact motion of (39); see
    :class:`~granular.particles.forces.PendulumPotential`.

    Parameters
    ----------
    model : Model
        The model ``state`` belongs to.
    state : State
        The state (or a configuration with the same arrays).

    Returns
    -------
    dot : ndarray, (K,) float
        ``Rρ0·Ω`` [L/T] of each of the ``K`` pendula (all pendulum families, each in the
        order its pendula were added), a host array of the model's dtype.
    norm : ndarray, (K,) float
        ``|Rρ0|`` [L], likewise.

    Raises
    ------
    ValueError
        The model has no pendulum potential.
    """
    families = [f for f in model.forces if f.kind == "pendulum"]
    if not families:
        raise ValueError("the model has no pendulum potential")
    dots, norms = [], []
    for f in families:
        idx = f.index
        p = rotations.quat_rotate(state.q[idx], f.rho0)
        dots.append(_host(model, (p * state.omega[idx]).sum(axis=1)))
        norms.append(_host(model, model.backend.xp.sqrt((p * p).sum(axis=1))))
    return np.concatenate(dots), np.concatenate(norms)


# -------------------------------------------------------------- error measures (35)-(38)


def _integrate(t, f):
    """Trapezoidal rule ``∫ f dt`` on the sample times ``t``."""
    t = np.asarray(t, dtype=np.float64)
    f = np.asarray(f, dtype=np.float64)
    return float(np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(t)))


def h1_norm_squared(traj) -> float:
    """Squared H1 norm of a trajectory, eq. (35): ``∫ (|x|² + |v|² + |θ|² + |Ω|²) dt``.

    Summed over particles, with the rotation angle ``|θ| = ‖log R‖_F/√2`` (in [0, π])
    of the total orientation; the integral is the trapezoidal rule on the sample times.

    Parameters
    ----------
    traj : mapping
        ``t`` (T,) float [T], ``x`` (T, N, 3) float [L], ``v`` (T, N, 3) float [L/T],
        ``omega`` (T, N, 3) float [1/T] and ``q`` (T, N, 4) float unit quaternions [-],
        e.g. :meth:`TrajectoryRecorder.arrays`.

    Returns
    -------
    float
        The squared norm (the terms are added as numbers, in the run's units, as in the
        paper).
    """
    theta = rotations.quat_to_rotvec(np.asarray(traj["q"]))
    ang2 = (theta * theta).sum(axis=-1)
    dens = (
        (np.asarray(traj["x"]) ** 2).sum(axis=-1)
        + (np.asarray(traj["v"]) ** 2).sum(axis=-1)
        + ang2
        + (np.asarray(traj["omega"]) ** 2).sum(axis=-1)
    ).sum(axis=-1)
    return _integrate(traj["t"], dens)


def q_error(traj, ref) -> float:
    """Relative trajectory error of eq. (37): ``| ‖q_h‖²_H1 - ‖q‖²_H1 |^{1/2} / ‖q‖_H1``.

    A difference of squared norms (:func:`h1_norm_squared`): it converges with half the
    order of the trajectory error (order 1 for a second-order map), as the paper reports.

    Parameters
    ----------
    traj : mapping
        ``t`` (T,) float [T], ``x`` (T, N, 3) float [L], ``v`` (T, N, 3) float [L/T],
        ``omega`` (T, N, 3) float [1/T] and ``q`` (T, N, 4) float unit quaternions [-],
        e.g. :meth:`TrajectoryRecorder.arrays`.
    ref : mapping
        The reference trajectory ``q`` (a run with a much smaller step), with the same
        keys, sampled at ``traj``'s times.

    Returns
    -------
    float
        The relative error [-].
    """
    a, b = h1_norm_squared(traj), h1_norm_squared(ref)
    return float(np.sqrt(abs(a - b)) / np.sqrt(b))


def h1_difference(traj, ref) -> float:
    """Plain relative H1 distance ``‖q_h - q‖_H1 / ‖q‖_H1`` of two trajectories.

    The rotation difference is measured by the angle of ``R_hᵀ R`` (a metric on SO(3));
    order 2 for (23), (25). The integrals are the trapezoidal rule on ``traj``'s times.

    Parameters
    ----------
    traj : mapping
        ``t`` (T,) float [T], ``x`` (T, N, 3) float [L], ``v`` (T, N, 3) float [L/T],
        ``omega`` (T, N, 3) float [1/T] and ``q`` (T, N, 4) float unit quaternions [-],
        e.g. :meth:`TrajectoryRecorder.arrays`.
    ref : mapping
        The reference trajectory, with the same keys, sampled at ``traj``'s times.

    Returns
    -------
    float
        The relative distance [-].
    """
    dang = rotations.quat_angle_between(np.asarray(traj["q"]), np.asarray(ref["q"]))
    dens = (dang**2).sum(axis=-1)
    for key in ("x", "v", "omega"):
        d = np.asarray(traj[key]) - np.asarray(ref[key])
        dens = dens + (d * d).sum(axis=-1).sum(axis=-1)
    return float(np.sqrt(_integrate(traj["t"], dens) / h1_norm_squared(ref)))


def energy_error(t, E, E0=None) -> float:
    """Relative energy error of eqs. (36), (38): ``‖E_h(t) - E0‖_H0 / ‖E0‖_H0``.

    The L2 (H0) norms in time are the trapezoidal rule on the sample times ``t``.

    Parameters
    ----------
    t : array_like, (T,) float
        Sample times [T], at least two.
    E : array_like, (T,) float
        Energy at each sample [M L²/T²] (e.g. :func:`total_energy`).
    E0 : float, optional
        Reference energy [M L²/T²]. Default ``E[0]``.

    Returns
    -------
    float
        The relative error [-].

    Raises
    ------
    ValueError
        The reference energy is zero (the relative error is undefined).
    """
    E = np.asarray(E, dtype=np.float64)
    E0 = E[0] if E0 is None else float(E0)
    if E0 == 0.0:
        raise ValueError("E0: the relative energy error (38) is undefined for a zero reference energy")
    num = _integrate(t, (E - E0) ** 2)
    den = _integrate(t, np.full_like(E, E0) ** 2)
    return float(np.sqrt(num / den))


def convergence_order(h, err) -> float:
    """Observed order of convergence: the least-squares slope of ``log err`` against ``log h``.

    Parameters
    ----------
    h : array_like, (K,) float
        Step sizes [T], > 0, at least two distinct.
    err : array_like, (K,) float
        Error of the run with each step size, > 0.

    Returns
    -------
    float
        The slope ``p`` of ``err ≈ C h^p``.
    """
    return float(np.polyfit(np.log(np.asarray(h, float)), np.log(np.asarray(err, float)), 1)[0])


class TrajectoryRecorder:
    """Host copies of ``t, x, v, q, omega`` and the total energy, appended by :meth:`record`.

    The recorder is callable (``recorder(state)`` is :meth:`record`), so it serves as the
    ``callback`` of :meth:`~granular.particles.integrators.ExplicitIntegrator.run`;
    :meth:`arrays` gives the trajectory mapping the error measures (35)-(38) take.

    Parameters
    ----------
    model : Model
        The model of the states to record.
    energy : bool, optional
        Also record the total energy (:func:`total_energy`, one kernel launch per
        record). Default ``True``.

    Attributes
    ----------
    model : Model
        The model.
    with_energy : bool
        Whether the energy is recorded.
    rows : dict of str to list
        The records so far: ``t``, ``x``, ``v``, ``q``, ``omega``, ``E`` (empty without
        energy).
    """

    def __init__(self, model, energy=True):
        self.model = model
        self.with_energy = energy
        self.rows = {"t": [], "x": [], "v": [], "q": [], "omega": [], "E": []}

    def record(self, state) -> None:
        """Append host copies of ``state``'s time and arrays (and total energy).

        Parameters
        ----------
        state : State
            A state of the recorder's model.
        """
        be = self.model.backend
        r = self.rows
        r["t"].append(state.time)
        r["x"].append(be.to_host(state.x).copy())
        r["v"].append(be.to_host(state.v).copy())
        r["q"].append(be.to_host(state.q).copy())
        r["omega"].append(be.to_host(state.omega).copy())
        if self.with_energy:
            r["E"].append(total_energy(self.model, state))

    __call__ = record

    def arrays(self) -> dict:
        """Return the records as arrays, one row per record.

        Returns
        -------
        dict of str to ndarray
            ``t`` (T,) [T]; ``x`` (T, N, 3) [L], ``v`` (T, N, 3) [L/T], ``q`` (T, N, 4)
            [-], ``omega`` (T, N, 3) [1/T] in the model's float dtype; ``E`` (T,) float64
            [M L²/T²] when the energy is recorded. Keys without records are left out.
        """
        return {k: np.asarray(v) for k, v in self.rows.items() if v}
