"""The largest stable step of the explicit maps, estimated at setup from the stiffest mode.

For a linear oscillator of angular frequency ``ω`` the maps (23) and (25) of paper 003
(velocity Verlet in the translations) and the symplectic Euler map (27) are stable for
``h ω < 2``. A model's fastest mode is bounded from the Hessian of its energy: for each
pair term with Hessian ``H ≥ 0`` over the two particles' coordinates, ``H ≤ 2 diag(H_aa,
H_bb)`` (``[[A, B], [Bᵀ, C]] ≥ 0`` implies ``[[A, -B], [-Bᵀ, C]] ≥ 0``; add the two), so
the whole Hessian is below a block diagonal with one block per particle, and

    ``ω_max² ≤ max_i max(λ_max(T_i) / m_i, R_i / J_i)``,

``T_i`` (3×3) the translational and ``R_i`` (a scalar bound) the rotational block of
particle ``i``. The estimate is ``h_max = 2 / ω_max``. The bound is exact for a chain or a
simple-cubic lattice of equal masses with axial springs, and for a dimer.

Terms, with the energies of :mod:`granular.particles.forces` (linearised where stated):

``bond axial``
    ``U^a = ½ K^a (r/r0 - 1)²``: ``T += 2 (K^a/r0²) n nᵀ`` at both ends (``n`` the bond
    direction). For the torus of paper 003 this gives ``h < r0 sqrt(m/K^a) = 8.3e-3``.
``bond shear``
    ``U^s = ½ K^s Σ_ends (1 - cos φ)²`` is quartic at rest, so it is taken at the stated
    angle ``φ =`` :data:`SHEAR_ANGLE`: ``f'' = K^s (sin²φ + (1 - cos φ) cos φ)``;
    ``R += 2 f''``, ``T += 8 f''/r² (I - n nᵀ)`` (Gauss-Newton part).
``bond bending``
    ``U^m = ½ K^m |θ|²``: ``R += 2 K^m`` at both ends.
``particle-particle contact``
    ``U = (2/5) K [1 - s/ρ]^{5/2}``, ``ρ = r_i + r_j``, has the normal stiffness
    ``k = 1.5 K sqrt(δ) / ρ²`` at the relative overlap ``δ = 1 - s/ρ``. Pairs that touch at
    the start (bonded neighbours of a torus, a lattice) add ``2 k n nᵀ``; a particle that
    touches none is given one collision, ``2 k I``, with the smallest partner.
``wall contact``
    the same law with ``ρ = r_i``: ``T += k n_w n_wᵀ`` for the wall that gives the largest
    bound (a particle touches one wall at a time; an orthogonal corner gives the same).
``pendulum``
    ``U = -m g e·Rρ0`` (39): ``R += m g |ρ0|``.
``rotation increment``
    not a vibration: the closed-form domain of the RRP map needs ``h|Ω| < 1`` for (23)
    (``< 2`` for (25), (27)) at the initial spin (the integrators' ``rotation_measure``).

``dissipative contact`` (materials, ``docs/contacts.md``)
    at the overlap ``δ`` of the collision energy ``(8/15) E* sqrt(R*) δ^{5/2} = ½ m* v²``
    (at least :data:`LAW_OVERLAP` of the radius, or the initial overlap): normal
    stiffness ``K_n = 2 E* a``, tangential ``k_t = 8 G* a`` (``a = sqrt(R* δ)``), acting on
    the translation and, through the lever, the rolling and the twisting springs, on the
    rotation: ``T ≤ Σ 2 max(K_n, k_t)``, ``R ≤ Σ 2 k_t (l² + R*² + a²/2)``, and a factor 2
    for the coupling of translation and rotation. Damping lowers the limit of the
    explicit maps (:func:`damped_limit`): to ``h ω < 2 (sqrt(1 + 4ζ²) - 2ζ)`` for (23)
    and (25) with the dashpots on the predicted velocity (the default), to
    ``h ω < 2 (sqrt(1 + ζ²) - ζ)`` for (27) or with ``velocity = "half"``; ``ζ = α/2``
    (the tangential damping ratio ``η_t / 2 sqrt(m* k_t)``; the normal one is
    ``α / 2 sqrt(1.5)``).
    Contacts counted: those touching at the start, else one collision with the smallest
    partner, and one wall.

Gravity adds no stiffness. The overlap ``δ`` is stated, not known: the largest of
:data:`CONTACT_OVERLAP`, the largest overlap at the start, and the overlap a head-on
collision reaches at the scene's speed (twice the largest initial speed for pairs, plus
the free-fall speed over the scene's height under gravity): ``(2/5) K δ^{5/2} = ½ μ v²``. Hertz contact stiffens with overlap,
so a harder impact needs a smaller step than estimated.

Measured (``tests/test_stability.py``): the bonded torus ring alone is stable at 8e-3 and
unstable at 9e-3, estimate 8.33e-3 (bond axial); the torus impact of
``scenes/torus_impact.toml`` (contacts between bonded neighbours, wall) is stable at 3e-3
and unstable at 4e-3, estimate 2.83e-3 (wall contact with bond axial and contact).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kernels.contact_laws.hertz_mindlin import PAIR_ALPHA, PAIR_ESTAR, PAIR_GSTAR

from .integrators.schemes import scheme_name
from .neighbors import min_image
from .placement import near_pairs

#: Relative Hertz overlap ``δ = 1 - s/ρ`` at which contact stiffness is taken (at least).
CONTACT_OVERLAP = 0.05
#: Angle [rad] between a bond end's carried direction and the bond at which shear is taken.
SHEAR_ANGLE = 0.25
#: Pairs closer than ``ρ (1 + TOUCH_TOLERANCE)`` at the start count as touching.
TOUCH_TOLERANCE = 1e-6
#: Smallest overlap, relative to ``R*``, at which the dissipative law's stiffness is taken.
LAW_OVERLAP = 1e-3
#: Particles handled at a time (bounds the estimate's memory).
CHUNK = 1 << 18

FAMILIES = ("bond axial", "bond shear", "bond bending", "particle-particle contact", "wall contact", "pendulum")
LAW = "dissipative contact"
ROTATION = "rotation increment"
#: ``h|Ω| < 1/scale``: the RRP map's closed-form domain (:meth:`ExplicitIntegrator.rotation_measure`).
_ROTATION_SCALE = {"exact": 1.0, "verlet": 0.5, "campello": 0.5}


@dataclass
class StepEstimate:
    """The result of :func:`estimate_stable_step`: the largest stable step and what limits it.

    ``h_max`` (inf when nothing limits the step), the limiting ``mode``, the critical
    ``particle``, the other families that add to the bound there (``with_``), each
    family's own limit (``modes``: family -> h, as if it acted alone) and the stated
    assumptions (``assumed``: contact overlaps, shear angle, collision speed).

    Attributes
    ----------
    h_max : float
        The estimated largest stable step [T]; ``inf`` when nothing limits the step.
    mode : str or None
        The limiting mode: one of ``FAMILIES`` (``"bond axial"``, ``"bond shear"``,
        ``"bond bending"``, ``"particle-particle contact"``, ``"wall contact"``,
        ``"pendulum"``), ``"dissipative contact"`` or ``"rotation increment"``; ``None``
        when nothing limits the step.
    particle : int or None
        The critical particle: where the bound is largest, or the fastest-spinning
        particle for ``"rotation increment"``; ``None`` when nothing limits the step.
    with_ : list of str
        The other families that add at least 5 % to the bound ``ω²`` at ``particle``,
        largest share first (empty for the dissipative law and the rotation increment).
    modes : dict of str to float
        Each mode's own limit [T], as if it acted alone (modes that set no limit are
        left out).
    assumed : dict of str to float
        The stated assumptions, where they apply: ``shear_angle`` [rad], ``speed`` (the
        collision speed) [L/T], ``overlap_pp`` and ``overlap_wall`` (relative Hertz
        overlaps) [-], ``damping_ratio`` ``ζ`` of the dissipative law [-].
    """

    h_max: float
    mode: str | None
    particle: int | None = None
    with_: list = field(default_factory=list)
    modes: dict = field(default_factory=dict)
    assumed: dict = field(default_factory=dict)

    def describe(self) -> str:
        """Describe the estimate in one line of text.

        Returns
        -------
        str
            E.g. ``"0.00833 from the bond axial at particle 56"``: ``h_max``, the mode with
            its assumption, the families that add to it and the critical particle.
        """
        if self.mode is None:
            return "no stiffness limits the step (no bonds, contacts, walls or pendula, no spin)"
        what = self.mode
        if self.mode == LAW:
            what += f" (Hertz-Mindlin with damping ζ = {self.assumed['damping_ratio']:.3g})"
        elif self.mode == "particle-particle contact":
            what += f" (Hertz, at {100 * self.assumed['overlap_pp']:.3g} % overlap)"
        elif self.mode == "wall contact":
            what += f" (Hertz, at {100 * self.assumed['overlap_wall']:.3g} % overlap)"
        elif self.mode == "bond shear":
            what += f" (at {self.assumed['shear_angle']:g} rad)"
        text = f"{self.h_max:.3g} from the {what}"
        if self.with_:
            text += " together with " + " and ".join(self.with_)
        if self.particle is not None:
            text += f" at particle {self.particle}"
        return text

    def as_dict(self) -> dict:
        """Return the estimate as a JSON-serialisable dict.

        Returns
        -------
        dict
            ``h_max``, ``mode``, ``particle``, ``with`` (the list ``with_``),
            ``description`` (:meth:`describe`), ``modes`` and ``assumed``; infinite
            limits are ``None``.
        """
        return {"h_max": self.h_max if math.isfinite(self.h_max) else None, "mode": self.mode,
                "particle": self.particle, "with": list(self.with_), "description": self.describe(),
                "modes": {k: (v if math.isfinite(v) else None) for k, v in self.modes.items()},
                "assumed": dict(self.assumed)}  # fmt: skip


def hertz_stiffness(k, reach, overlap):
    """Normal stiffness ``d²U/ds² = 1.5 K sqrt(δ)/ρ²`` of ``U = (2/5) K [1 - s/ρ]^{5/2}``."""
    return 1.5 * k * np.sqrt(overlap) / (reach * reach)


def collision_overlap(k, mass, speed) -> float:
    """Relative overlap ``δ`` a head-on collision of reduced mass ``mass`` at ``speed``
    reaches: ``(2/5) K δ^{5/2} = ½ μ v²`` (at most 1)."""
    if k <= 0 or speed <= 0:
        return 0.0
    return min(1.0, (5.0 * mass * speed * speed / (4.0 * k)) ** 0.4)


def _shear_curvature(ks, angle):
    return ks * (math.sin(angle) ** 2 + (1.0 - math.cos(angle)) * math.cos(angle))


def _fall_speed(model, x, gravity) -> float:
    """Speed gained falling over the scene's height along ``gravity`` (down to the lowest
    upward-facing wall, else over the particles' own extent)."""
    g = float(np.linalg.norm(gravity))
    if g == 0.0 or len(x) == 0:
        return 0.0
    down = np.asarray(gravity, dtype=np.float64) / g
    depth = x @ down  # grows downward
    drop = float(depth.max() - depth.min())
    walls = model.force("walls")
    if walls is not None:
        for n1, n2, n3, c in walls.planes_host:
            n = np.array([n1, n2, n3])
            facing = -float(n @ down)
            if facing > 0.5:  # a floor: the highest particle falls to it
                drop = max(drop, float(((x @ n) - c).max()) / facing)
        for spec in walls.meshes:  # down to the lowest point of a mesh
            drop = max(drop, float((spec["mesh"].vertices @ down).max() - depth.min()))
    return math.sqrt(2.0 * g * max(drop, 0.0))


def _pairs_touching(x, radius, exclude, replica=None, period=None):
    """``(i, j, n_ij)`` of the pairs within ``(r_i + r_j)(1 + TOUCH_TOLERANCE)`` at the start
    (within one replica, in a model of replicas: ``replica`` (N,); across the faces of a
    periodic box ``period``)."""
    if len(x) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    pairs, d = near_pairs(x, 2.0 * float(radius.max()) * (1 + TOUCH_TOLERANCE), period)
    if not len(pairs):
        return pairs.reshape(0, 2)
    d = np.linalg.norm(d, axis=1)
    pairs = pairs[d <= (radius[pairs[:, 0]] + radius[pairs[:, 1]]) * (1 + TOUCH_TOLERANCE)]
    if exclude is not None and len(pairs):
        keys = np.minimum(pairs[:, 0], pairs[:, 1]) * len(x) + np.maximum(pairs[:, 0], pairs[:, 1])
        pairs = pairs[~np.isin(keys, exclude)]
    if replica is not None and len(pairs):
        pairs = pairs[replica[pairs[:, 0]] == replica[pairs[:, 1]]]
    return pairs


def _meets(walls, n):
    """(N, W) bool: whether particle ``i`` meets wall ``w`` (its replica's walls; all for
    one system)."""
    if not len(walls.first_host):
        return np.ones((n, walls.count), dtype=bool)
    w = np.arange(walls.count)[None, :]
    rep = walls.replica_host[:, None]
    return (w >= walls.first_host[rep]) & (w < walls.first_host[rep + 1])


_SYM = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))  # the 6 entries of a symmetric 3x3 kept
_EYE = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])


def _outer(n, k):
    """``k n nᵀ`` for (M, 3) ``n`` and (M,) ``k``, as (M, 6) entries ``xx yy zz xy xz yz``."""
    return np.stack([k * n[:, a] * n[:, b] for a, b in _SYM], axis=1)


def _full(S):
    """(..., 6) symmetric entries -> (..., 3, 3)."""
    out = np.empty(S.shape[:-1] + (3, 3))
    for c, (a, b) in enumerate(_SYM):
        out[..., a, b] = out[..., b, a] = S[..., c]
    return out


def lambda_max(S):
    """Largest eigenvalue of symmetric 3x3 matrices given as (M, 6) entries (closed form,
    trigonometric): to rounding for distinct eigenvalues, to about 1e-8 relative where the
    largest is double (the arccos near 1), which is plenty for an estimate."""
    q = (S[:, 0] + S[:, 1] + S[:, 2]) / 3.0
    p1 = S[:, 3] ** 2 + S[:, 4] ** 2 + S[:, 5] ** 2
    p2 = (S[:, 0] - q) ** 2 + (S[:, 1] - q) ** 2 + (S[:, 2] - q) ** 2 + 2.0 * p1
    p = np.sqrt(p2 / 6.0)
    safe = np.where(p > 0, p, 1.0)
    b0, b1, b2 = (S[:, 0] - q) / safe, (S[:, 1] - q) / safe, (S[:, 2] - q) / safe
    b3, b4, b5 = S[:, 3] / safe, S[:, 4] / safe, S[:, 5] / safe
    det = b0 * (b1 * b2 - b5 * b5) - b3 * (b3 * b2 - b5 * b4) + b4 * (b3 * b5 - b1 * b4)
    phi = np.arccos(np.clip(0.5 * det, -1.0, 1.0)) / 3.0
    return np.where(p > 0, q + 2.0 * p * np.cos(phi), q)


class _Blocks:
    """Per-family translational (m, 6) and rotational (m,) bounds of one particle chunk."""

    def __init__(self, m):
        self.m = m
        self.T = {f: np.zeros((m, 6)) for f in FAMILIES}
        self.R = {f: np.zeros(m) for f in FAMILIES}

    def add_T(self, family, rows, vals):
        for c in range(6):
            self.T[family][:, c] += np.bincount(rows, weights=vals[:, c], minlength=self.m)

    def add_R(self, family, rows, vals):
        self.R[family] += np.bincount(rows, weights=np.broadcast_to(vals, rows.shape), minlength=self.m)


def _omega2(T, R, m, J, r, wall_n, wall_k, overlap_wall) -> float:
    """``ω²`` bound of one particle from its summed blocks (6 entries; walls: the largest)."""
    T = _full(T)
    lam = float(np.linalg.eigvalsh(T)[-1])
    for nw, kw in zip(wall_n, wall_k):
        kk = float(hertz_stiffness(kw, r, overlap_wall))
        lam = max(lam, float(np.linalg.eigvalsh(T + kk * np.outer(nw, nw))[-1]))
    return max(lam / m, R / J)


def _contributions(blk, c, m, J, r, wall_n, wall_k, overlap_wall) -> dict:
    """Share of each family in particle ``c``'s bound: the relative drop of ``ω²`` without it."""
    T = {f: blk.T[f][c] for f in FAMILIES}
    R = {f: blk.R[f][c] for f in FAMILIES}
    full = _omega2(sum(T.values()), sum(R.values()), m, J, r, wall_n, wall_k, overlap_wall)
    out = {}
    for f in FAMILIES:
        if f == "wall contact":
            without = _omega2(sum(T.values()), sum(R.values()), m, J, r, (), (), overlap_wall)
        else:
            without = _omega2(sum(T[g] for g in FAMILIES if g != f), sum(R[g] for g in FAMILIES if g != f),
                              m, J, r, wall_n, wall_k, overlap_wall)  # fmt: skip
        out[f] = (full - without) / full if full > 0 else 0.0
    return out


def damped_limit(zeta: float, lagging: bool) -> float:
    """The largest ``h ω`` for which an explicit map is stable on the damped oscillator
    ``x'' + 2ζω x' + ω² x = 0`` (where its amplification matrix has the eigenvalue -1).

    ``lagging``: the dashpot sees a velocity of the step's start, ``v_{k+1/2}`` in a
    kick-drift-kick step (``[contacts] velocity = "half"``) or ``v_{k+1}`` before the
    kick of the symplectic Euler map (27): ``2 (sqrt(1 + ζ²) - ζ)``. Otherwise it sees the
    prediction ``v_{k+1/2} + h F_k / 2m`` of maps (23) and (25) (the default), which takes
    the step's old force twice: ``2 (sqrt(1 + 4ζ²) - 2ζ)``, lower (1.16 against 1.51 at
    ``ζ = 0.285``, restitution 0.5). Both are 2 without damping."""
    if lagging:
        return 2.0 * (math.sqrt(1.0 + zeta * zeta) - zeta)
    return 2.0 * (math.sqrt(1.0 + 4.0 * zeta * zeta) - 2.0 * zeta)


def _law_limit(model, x, r, m, J, speed, assumed, scheme):
    """``(h, particle)``: the dissipative law's limit (module docstring), or ``(inf, None)``."""
    law = model.law
    n = len(x)
    nm = len(law.materials)
    mat = law.mat_host
    pair = law.pair_host

    def stiff(rows, rstar, mstar, initial):
        e_s, g_s = pair[rows, PAIR_ESTAR], pair[rows, PAIR_GSTAR]
        delta = (15.0 * mstar * speed * speed / (16.0 * e_s * np.sqrt(rstar))) ** 0.4
        delta = np.maximum(np.maximum(delta, LAW_OVERLAP * rstar), initial)
        a = np.sqrt(rstar * delta)
        return 2.0 * e_s * a, 8.0 * g_s * a, a, delta

    T = np.zeros(n)
    R = np.zeros(n)
    pairs = _pairs_touching(x, r, None, model.replica, model.period)
    touched = np.zeros(n, dtype=bool)
    if len(pairs):
        i, j = pairs[:, 0], pairs[:, 1]
        d = np.linalg.norm(min_image(x[i] - x[j], model.period), axis=1)
        rstar = r[i] * r[j] / (r[i] + r[j])
        kn, kt, a, delta = stiff(mat[i] * nm + mat[j] % nm, rstar, m[i] * m[j] / (m[i] + m[j]), r[i] + r[j] - d)
        for p, q in ((i, j), (j, i)):
            lever = r[p] - 0.5 * delta
            np.add.at(T, p, 2.0 * np.maximum(kn, kt))
            np.add.at(R, p, 2.0 * kt * (lever**2 + rstar**2 + 0.5 * a * a))
            touched[p] = True
    lonely = np.flatnonzero(~touched)
    if len(lonely):  # one collision with the smallest partner of the same material
        rmin = r.min()
        rstar = r[lonely] * rmin / (r[lonely] + rmin)
        kn, kt, a, delta = stiff(mat[lonely] * nm + mat[lonely] % nm, rstar, 0.5 * m[lonely], 0.0)
        T[lonely] += 2.0 * np.maximum(kn, kt)
        R[lonely] += 2.0 * kt * (r[lonely] ** 2 + rstar**2 + 0.5 * a * a)
    walls = model.force("walls")
    if walls is not None and (walls.count or walls.meshes):
        best_t, best_r = np.zeros(n), np.zeros(n)
        meets = _meets(walls, n)
        for w in range(walls.count):
            nw, c = walls.planes_host[w, :3], walls.planes_host[w, 3]
            initial = np.where(meets[:, w], np.maximum(r - (x @ nw - c), 0.0), 0.0)
            kn, kt, a, delta = stiff(mat * nm + law.wall_mat_host[w] % nm, r, m, initial)
            best_t = np.maximum(best_t, np.maximum(kn, kt))
            best_r = np.maximum(best_r, kt * ((r - delta) ** 2 + r * r + 0.5 * a * a))
        for mm in walls.mesh_mat_host:  # a mesh contact is a wall contact of the mesh's material
            kn, kt, a, delta = stiff(mat * nm + int(mm) % nm, r, m, np.zeros(n))
            best_t = np.maximum(best_t, np.maximum(kn, kt))
            best_r = np.maximum(best_r, kt * ((r - delta) ** 2 + r * r + 0.5 * a * a))
        T += best_t
        R += best_r
    w2 = 2.0 * np.maximum(T / m, R / J)
    k = int(np.argmax(w2))
    zeta = 0.5 * float(pair[:, PAIR_ALPHA].max())
    assumed["damping_ratio"] = zeta
    if w2[k] <= 0:
        return math.inf, None
    return damped_limit(zeta, lagging=scheme == "campello" or law.velocity == "half") / math.sqrt(w2[k]), k


#: The limit of each contact law whose contacts are not part of the elastic Hessian
#: blocks above (paper 003's law is), by name: ``f(model, x, r, m, J, speed, assumed,
#: scheme) -> (h, particle)``.
LAW_LIMITS = {"hertz-mindlin": _law_limit}


def estimate_stable_step(model, state=None, scheme="verlet") -> StepEstimate:
    """Estimate the largest stable step of ``model`` for an explicit map (23), (25) or (27).

    The maps are stable for ``h ω < 2`` (less with the dissipative law's damping); the
    fastest angular frequency ``ω_max`` is bounded from the Hessian of the energy, one
    block per particle, and the estimate is ``h_max = 2 / ω_max``. The rotation
    increment adds ``h|Ω| < 1`` for (23) (``< 2`` for (25), (27)) at the initial spin.
    The terms and the stated assumptions are in the module docstring
    (:mod:`granular.particles.stability`). Reads the model's arrays through
    ``model.backend.to_host``; independent of the kernels.

    Parameters
    ----------
    model : Model
        The model.
    state : State, optional
        The configuration and velocities to estimate at. Default: the model's initial
        state (:meth:`~granular.particles.model.Model.state`).
    scheme : {"verlet", "exact", "campello"}, optional
        The explicit map: ``"verlet"`` (25, default), ``"exact"`` (23) or ``"campello"``
        (27). Only the rotation-increment bound depends on it; another name (the
        aliases ``"23"``, ``"25"``, ... included) is taken as ``"exact"``.

    Returns
    -------
    StepEstimate
        ``h_max`` [T], the limiting mode and particle, each mode's own limit and the
        assumptions.

    Examples
    --------
    The bonded torus ring of paper 003, Sect. 4.1, alone: the axial chain mode limits
    the step to ``r0 sqrt(m/K^a)``.

    >>> import granular as gr
    >>> from granular.particles.shapes import add_torus
    >>> b = gr.ModelBuilder()
    >>> _ = add_torus(b)
    >>> est = gr.estimate_stable_step(b.finalize("cpu"))
    >>> est.mode, round(est.h_max, 5)
    ('bond axial', 0.00833)
    """
    scheme = scheme_name(scheme)  # "verlet", "25", ...; ValueError naming the choices otherwise
    be = model.backend
    state = model.state() if state is None else state
    x = be.to_host(state.x).astype(np.float64)
    v = be.to_host(state.v).astype(np.float64)
    w = be.to_host(state.omega).astype(np.float64)
    m = be.to_host(model.mass).astype(np.float64)
    J = be.to_host(model.inertia).astype(np.float64)
    r = be.to_host(model.radius).astype(np.float64)
    n = model.n
    assumed = {"shear_angle": SHEAR_ANGLE}

    gravity = model.force("gravity")
    speed = float(np.sqrt((v * v).sum(axis=1)).max()) if n else 0.0
    if gravity is not None and gravity.replica is not None:  # each replica falls in its own field
        speed += max(_fall_speed(model, x[gravity.replica == r], g) for r, g in enumerate(gravity.rows))
    elif gravity is not None:
        speed += _fall_speed(model, x, gravity.g)
    assumed["speed"] = speed

    # bond ends: (particle, partner, bond)
    bonds = model.bonds
    bond_keys = None
    if bonds is not None and bonds.count:
        a, b = bonds.host["a"], bonds.host["b"]
        intact = be.to_host(state.broken) == 0
        ids = np.flatnonzero(intact)
        ends = np.concatenate([a[ids], b[ids]])
        partners = np.concatenate([b[ids], a[ids]])
        bond_of = np.concatenate([ids, ids])
        order = np.argsort(ends, kind="stable")
        ends, partners, bond_of = ends[order], partners[order], bond_of[order]
        r0 = bonds.host["rest_length"]
        ka, ks, km = (be.to_host(k).astype(np.float64) for k in (bonds.ka, bonds.ks, bonds.km))
        nb = len(a)
        form = bonds.host["form"] if bonds.parallel else np.zeros(nb, np.int8)
        kt = bonds.host["kt"] if bonds.parallel else np.zeros(nb)
        arm = bonds.host["arm"] if bonds.parallel else np.zeros((nb, 2))
        bond_keys = np.minimum(a[ids], b[ids]) * n + np.maximum(a[ids], b[ids])  # broken bonds leave their contact
    else:
        ends = partners = bond_of = np.zeros(0, dtype=np.int64)

    contacts = model.force("contacts")
    pairs = np.zeros((0, 2), dtype=np.int64)
    overlap_pp = 0.0
    if contacts is not None and contacts.kpp > 0:
        exclude = bond_keys if contacts.skip_bonded else None
        pairs = _pairs_touching(x, r, exclude, model.replica, model.period)
        initial = 0.0
        if len(pairs):
            d = np.linalg.norm(min_image(x[pairs[:, 0]] - x[pairs[:, 1]], model.period), axis=1)
            initial = float((1.0 - d / (r[pairs[:, 0]] + r[pairs[:, 1]])).max())
        overlap_pp = max(CONTACT_OVERLAP, collision_overlap(contacts.kpp, 0.5 * m.max(), 2.0 * speed), initial)
        assumed["overlap_pp"] = float(overlap_pp)
    touching = np.concatenate([pairs[:, 0], pairs[:, 1]])
    touch_partner = np.concatenate([pairs[:, 1], pairs[:, 0]])
    order = np.argsort(touching, kind="stable")
    touching, touch_partner = touching[order], touch_partner[order]

    walls = model.force("walls")
    wall_n, wall_k, mesh_k = np.zeros((0, 3)), np.zeros(0), np.zeros(0)
    if walls is not None:
        wall_n = walls.planes_host[:, :3]
        wall_k = be.to_host(walls.k).astype(np.float64)
        wall_k, mesh_k = wall_k[:walls.count], wall_k[walls.count:]
        depth = (x @ wall_n.T - walls.planes_host[:, 3]) / r[:, None] if n else np.ones((0, 1))
        if n:  # in a model of replicas a particle meets its replica's walls only
            depth = np.where(_meets(walls, n), depth, np.inf)
        initial = float((1.0 - depth).max()) if depth.size else 0.0
        k_all = np.concatenate([wall_k, mesh_k])
        overlap_w = max(CONTACT_OVERLAP, collision_overlap(float(k_all.max()) if len(k_all) else 0.0, float(m.max()),
                                                           speed), initial)  # fmt: skip
        assumed["overlap_wall"] = float(overlap_w)

    pend = [f for f in model.forces if f.kind == "pendulum"]

    best = (0.0, None)  # (ω², particle)
    alone = dict.fromkeys(FAMILIES, 0.0)
    shares = {}
    for p0 in range(0, n, CHUNK):
        p1 = min(n, p0 + CHUNK)
        blk = _Blocks(p1 - p0)
        lo, hi = np.searchsorted(ends, [p0, p1])
        if hi > lo:
            i, j, k = ends[lo:hi], partners[lo:hi], bond_of[lo:hi]
            d = min_image(x[i] - x[j], model.period)
            dist = np.linalg.norm(d, axis=1)
            u = d / dist[:, None]
            rows = i - p0
            par = form[k] != 0  # parallel bonds: k_n, k_s, k_b in the ka, ks, km places
            blk.add_T("bond axial", rows, _outer(u, 2.0 * np.where(par, ka[k], ka[k] / r0[k] ** 2)))
            f2 = _shear_curvature(ks[k], SHEAR_ANGLE)
            c2 = np.where(par, 2.0 * ks[k], 8.0 * f2 / dist**2)
            blk.add_T("bond shear", rows, c2[:, None] * _EYE[None] - _outer(u, c2))  # c (I - n nᵀ)
            # a parallel bond's shear couples an end's turn through its arm (row sums of the
            # arm terms: ks l_i², and ks l_i l_j with the other end)
            arm_i = np.where(i == a[k], arm[k, 0], arm[k, 1])
            blk.add_R("bond shear", rows, np.where(par, 2.0 * ks[k] * arm_i * r0[k], 2.0 * f2))
            blk.add_R("bond bending", rows, 2.0 * np.where(par, np.maximum(km[k], kt[k]), km[k]))
        if contacts is not None and contacts.kpp > 0:
            lo, hi = np.searchsorted(touching, [p0, p1])
            i, j = touching[lo:hi], touch_partner[lo:hi]
            d = min_image(x[i] - x[j], model.period)
            u = d / np.linalg.norm(d, axis=1)[:, None]
            k = hertz_stiffness(contacts.kpp, r[i] + r[j], overlap_pp)
            blk.add_T("particle-particle contact", i - p0, _outer(u, 2.0 * k))
            lonely = np.ones(p1 - p0, dtype=bool)
            lonely[i - p0] = False
            idx = np.flatnonzero(lonely)
            k = hertz_stiffness(contacts.kpp, r[p0 + idx] + r.min(), overlap_pp)
            blk.T["particle-particle contact"][idx] += (2.0 * k)[:, None] * _EYE[None]
        for f in pend:
            sel = (f.index_host >= p0) & (f.index_host < p1)
            mg = be.to_host(f.mg).astype(np.float64)[sel]
            blk.add_R("pendulum", f.index_host[sel] - p0, mg * np.linalg.norm(f.rho0_host[sel], axis=1))

        mc, Jc = m[p0:p1], J[p0:p1]
        T = sum(blk.T[f] for f in FAMILIES)
        R = sum(blk.R[f] for f in FAMILIES)
        lam = lambda_max(T)
        wall_best = np.zeros(p1 - p0)
        for nw, kw in zip(wall_n, wall_k):
            kk = hertz_stiffness(kw, r[p0:p1], assumed["overlap_wall"])
            lam = np.maximum(lam, lambda_max(T + _outer(np.broadcast_to(nw, (p1 - p0, 3)), kk)))
            wall_best = np.maximum(wall_best, kk)
        for kw in mesh_k:  # a mesh contact's normal can point anywhere: λ(T + k n nᵀ) <= λ(T) + k
            kk = hertz_stiffness(kw, r[p0:p1], assumed["overlap_wall"])
            lam = np.maximum(lam, lambda_max(T) + kk)
            wall_best = np.maximum(wall_best, kk)
        w2 = np.maximum(lam / mc, R / Jc)
        c = int(np.argmax(w2))
        if w2[c] > best[0]:
            best = (float(w2[c]), p0 + c)
            shares = _contributions(blk, c, mc[c], Jc[c], r[p0 + c], wall_n, wall_k, assumed.get("overlap_wall"))
        for f in FAMILIES:
            if f == "wall contact":
                a2 = wall_best / mc
            else:
                a2 = np.maximum(lambda_max(blk.T[f]) / mc, blk.R[f] / Jc) if blk.T[f].any() or blk.R[f].any() else 0
            alone[f] = max(alone[f], float(np.max(a2)))

    modes = {f: 2.0 / math.sqrt(w2) for f, w2 in alone.items() if w2 > 0}
    h_law, law_particle = math.inf, None
    law = getattr(model, "law", None)
    if law is not None and law.name in LAW_LIMITS:
        h_law, law_particle = LAW_LIMITS[law.name](model, x, r, m, J, speed, assumed, scheme)
        if math.isfinite(h_law):
            modes[LAW] = h_law
    spin = float(np.sqrt((w * w).sum(axis=1)).max()) if n else 0.0
    h_rot = 1.0 / (_ROTATION_SCALE[scheme] * spin) if spin > 0 else math.inf
    if math.isfinite(h_rot):
        modes[ROTATION] = h_rot
    h_vib = 2.0 / math.sqrt(best[0]) if best[0] > 0 else math.inf
    if not modes:
        return StepEstimate(math.inf, None, modes=modes, assumed=assumed)
    if h_rot < min(h_vib, h_law):
        crit = int(np.argmax((w * w).sum(axis=1)))
        return StepEstimate(h_rot, ROTATION, crit, [], modes, assumed)
    if h_law < h_vib:
        return StepEstimate(h_law, LAW, law_particle, [], modes, assumed)
    ranked = sorted(((s, f) for f, s in shares.items() if s > 0), reverse=True)
    if not ranked:  # no single family decides (e.g. two equal walls): the stiffest alone
        ranked = [(1.0, max(alone, key=alone.get))]
    mode = ranked[0][1]
    others = [f for s, f in ranked[1:] if s >= 0.05]
    return StepEstimate(h_vib, mode, best[1], others, modes, assumed)
