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
    """``½ Σ m_i |v_i|²``."""
    return float(0.5 * (model.mass * (state.v * state.v).sum(axis=1)).sum())


def kinetic_energy_rotational(model, state) -> float:
    """``½ Σ J_i |Ω_i|²`` (scalar inertia, so body and spatial forms agree)."""
    return float(0.5 * (model.inertia * (state.omega * state.omega).sum(axis=1)).sum())


def potential_energies(model, state) -> dict:
    """Potential energy of each interaction family: ``U_gravity``, ``U_pendulum``, ``U_m``
    (bending/torsion), ``U_a`` (axial), ``U_s`` (shear), ``U_pp`` (particle-particle),
    ``U_pw`` (particle-wall), for the families the model has (one fused kernel)."""
    return model.potential_energies(state)


def energies(model, state, totals=None) -> dict:
    """Energy by kind: ``kinetic_translational``, ``kinetic_rotational``, the potential
    energies of :func:`potential_energies`, and ``total``. ``totals``: the result of
    ``model.diagnostics(state)`` if already computed."""
    d = model.diagnostics(state) if totals is None else totals
    e = {"kinetic_translational": d["kinetic_translational"], "kinetic_rotational": d["kinetic_rotational"]}
    for f in model.forces:
        for k in f.energy_keys:
            e[k] = d[k]
    e["total"] = float(sum(e.values()))
    return e


def released_energy(model, state) -> float:
    """Energy the broken bonds had when they broke; ``total + released`` is what the
    scheme conserves when bonds break."""
    return model.diagnostics(state)["U_released"] if model.n_bonds else 0.0


def broken_bonds(model, state) -> int:
    """Number of broken bonds."""
    return int(state.broken.sum()) if model.n_bonds else 0


def total_energy(model, state) -> float:
    """Total energy [M L²/T²]: kinetic (translational and rotational) plus the potential
    energy of every interaction family (the ``total`` of :func:`energies`, the quantity
    the conservative schemes conserve)."""
    return energies(model, state)["total"]


def linear_momentum(model, state) -> np.ndarray:
    """``Σ m_i v_i``, (3,)."""
    return _host(model, (model.mass[:, None] * state.v).sum(axis=0))


def angular_momentum(model, state, origin=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Total angular momentum about ``origin``: ``Σ ((x_i - o) × m_i v_i + J_i Ω_i)``, (3,).

    (Paper (34) prints only the spin part ``Σ J_i Ω_i``; see ``docs/physics.md``.)
    """
    xp = model.backend.xp
    r = state.x - xp.asarray(origin, dtype=state.x.dtype)
    orbital = rotations.cross(r, model.mass[:, None] * state.v)
    return _host(model, (orbital + model.inertia[:, None] * state.omega).sum(axis=0))


def pendulum_invariants(model, state) -> tuple[np.ndarray, np.ndarray]:
    """For each pendulum (all families, in the order they were added per vertical):
    ``Rρ0·Ω`` (41b) and ``|Rρ0|`` (41c), host arrays (K,)."""
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
    """Eq. (35): ``∫ (|x|² + |v|² + |θ|² + |Ω|²) dt`` summed over particles, with the
    rotation angle ``|θ| = ‖log R‖_F/√2`` of the total orientation.

    ``traj``: a mapping with ``t`` (T,), ``x``, ``v``, ``omega`` (T, N, 3), ``q`` (T, N, 4).
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
    """Eq. (37): ``| ‖q_h‖²_H1 - ‖q‖²_H1 |^{1/2} / ‖q‖_H1`` (``ref`` sampled at ``traj``'s times).

    A difference of squared norms: it converges with half the order of the trajectory
    error (order 1 for a second-order map), as the paper reports.
    """
    a, b = h1_norm_squared(traj), h1_norm_squared(ref)
    return float(np.sqrt(abs(a - b)) / np.sqrt(b))


def h1_difference(traj, ref) -> float:
    """Plain relative H1 distance ``‖q_h - q‖_H1 / ‖q‖_H1`` with the rotation difference
    measured by the angle of ``R_hᵀ R`` (a metric on SO(3)); order 2 for (23), (25)."""
    dang = rotations.quat_angle_between(np.asarray(traj["q"]), np.asarray(ref["q"]))
    dens = (dang**2).sum(axis=-1)
    for key in ("x", "v", "omega"):
        d = np.asarray(traj[key]) - np.asarray(ref[key])
        dens = dens + (d * d).sum(axis=-1).sum(axis=-1)
    return float(np.sqrt(_integrate(traj["t"], dens) / h1_norm_squared(ref)))


def energy_error(t, E, E0=None) -> float:
    """Eqs. (36), (38): ``‖E_h(t) - E0‖_H0 / ‖E0‖_H0`` over the sample times ``t``."""
    E = np.asarray(E, dtype=np.float64)
    E0 = E[0] if E0 is None else float(E0)
    if E0 == 0.0:
        raise ValueError("E0: the relative energy error (38) is undefined for a zero reference energy")
    num = _integrate(t, (E - E0) ** 2)
    den = _integrate(t, np.full_like(E, E0) ** 2)
    return float(np.sqrt(num / den))


def convergence_order(h, err) -> float:
    """Least-squares slope of ``log err`` against ``log h``."""
    return float(np.polyfit(np.log(np.asarray(h, float)), np.log(np.asarray(err, float)), 1)[0])


class TrajectoryRecorder:
    """Host copies of ``t, x, v, q, omega`` and the total energy, appended by :meth:`record`."""

    def __init__(self, model, energy=True):
        self.model = model
        self.with_energy = energy
        self.rows = {"t": [], "x": [], "v": [], "q": [], "omega": [], "E": []}

    def record(self, state) -> None:
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
        return {k: np.asarray(v) for k, v in self.rows.items() if v}
