"""Materials of the dissipative contact law and the mixing rules for unlike pairs.

A :class:`Material` has Young's modulus ``E`` and Poisson's ratio ``ν`` (elastic
stiffness), a density (the mass and inertia of spheres that name the material without
giving them), a coefficient of restitution ``e`` (normal damping), and the sliding,
rolling and twisting friction coefficients ``μ``, ``μ_r``, ``μ_t``; for the other contact
laws also a linear stiffness ``k_n`` with its tangential ``k_t`` and dashpot ratio
``x_γt`` (``"linear"``), and a surface energy ``γ`` with a damping coefficient ``d``
(``"jkr"``). Walls name materials too. Which fields a law needs, and how it mixes them
for a pair, is the law's (:mod:`granular.particles.forces.laws`); this module holds the
dissipative law's mixing (:func:`mix`). The law itself is
:func:`kernels.contact_laws.hertz_mindlin.contact_law`; its formulas and their derivation
are in ``docs/contacts.md``.

Mixing for a pair of materials ``i``, ``j`` (a wall counts as a body of its material with
infinite radius and mass):

* ``1/E* = (1 - ν_i²)/E_i + (1 - ν_j²)/E_j`` (Hertz);
* ``1/G* = (2 - ν_i)/G_i + (2 - ν_j)/G_j`` with ``G = E / 2(1 + ν)`` (Mindlin);
* ``e``, ``μ``, ``μ_r``, ``μ_t``: geometric means (equal materials keep their values; a
  frictionless material makes every pair with it frictionless);
* the Tsuji damping factor ``α`` of the pair is :func:`tsuji_alpha` of its ``e``.

A pair of materials can be given its own ``e``, ``μ``, ``μ_r``, ``μ_t`` in place of the
means (:data:`PAIR_FIELDS`; ``ModelBuilder.set_pair``, ``[[material_pairs]]`` of a
scene): measured values of a glass-steel contact, say, or ``e = 1`` and ``μ = 0`` for a
pair that should only push (Hertz without damping or friction). ``E*`` and ``G*`` always
follow from the materials.
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

import numpy as np

from kernels.contact_laws.hertz_mindlin import (
    PAIR_ALPHA,
    PAIR_DAMP_N,
    PAIR_DAMP_T,
    PAIR_ESTAR,
    PAIR_GSTAR,
    PAIR_MU,
    PAIR_MU_ROLL,
    PAIR_MU_TWIST,
    PAIR_WIDTH,
)

#: Restitution below this is refused: the Tsuji factor grows without bound as ``e → 0``.
MIN_RESTITUTION = 0.01

FIELDS = ("young", "poisson", "density", "restitution", "friction", "rolling_friction", "twisting_friction",
          "stiffness", "tangential_stiffness", "tangential_damping", "surface_energy", "damping")
#: The values a pair of materials may be given in place of the mixing rule.
PAIR_FIELDS = ("restitution", "friction", "rolling_friction", "twisting_friction", "surface_energy")


@dataclass(frozen=True)
class Material:
    """One material. ``young`` E > 0 [pressure]; ``poisson`` ν in (-1, 0.5];
    ``density`` > 0 [mass/length³]; ``restitution`` e in [0.01, 1] (1: elastic);
    ``friction`` μ ≥ 0, ``rolling_friction`` μ_r ≥ 0, ``twisting_friction`` μ_t ≥ 0 [-];
    ``stiffness`` k_n > 0 [M/T²] and ``tangential_stiffness`` k_t > 0 (default ``2/7
    k_n``), ``tangential_damping`` x_γt ≥ 0 [-] (the linear law); ``surface_energy`` γ ≥ 0
    [M/T², energy per area of one surface] and ``damping`` d ≥ 0 [1/(L T)] (JKR). A field
    a law needs must be given (``young`` for the Hertz laws, ``stiffness`` for the linear
    one); ``None`` marks one not given."""

    young: float | None = None
    poisson: float = 0.3
    density: float = 1.0
    restitution: float = 1.0
    friction: float = 0.0
    rolling_friction: float = 0.0
    twisting_friction: float = 0.0
    stiffness: float | None = None
    tangential_stiffness: float | None = None
    tangential_damping: float = 0.0
    surface_energy: float = 0.0
    damping: float = 0.0

    def problems(self, needs=()) -> list[tuple[str, str]]:
        """``(field, message)`` for every bad value and every field of ``needs`` not given
        (empty when the material is sound)."""
        out = []

        def bad(name, rule):
            out.append((name, f"must be {rule}, got {getattr(self, name)!r}"))

        def finite(name):
            v = getattr(self, name)
            return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)

        for name in needs:
            if getattr(self, name) is None:
                out.append((name, "required by the contact law, not given"))
        for name in ("young", "stiffness", "tangential_stiffness"):
            if getattr(self, name) is not None and not (finite(name) and getattr(self, name) > 0):
                bad(name, "finite and > 0")
        if not (finite("poisson") and -1.0 < self.poisson <= 0.5):
            bad("poisson", "in (-1, 0.5]")
        if not (finite("density") and self.density > 0):
            bad("density", "finite and > 0")
        if not (finite("restitution") and MIN_RESTITUTION <= self.restitution <= 1.0):
            bad("restitution", f"in [{MIN_RESTITUTION}, 1] (1: elastic)")
        for name in ("friction", "rolling_friction", "twisting_friction", "tangential_damping", "surface_energy",
                     "damping"):  # fmt: skip
            if not (finite(name) and getattr(self, name) >= 0):
                bad(name, "finite and >= 0")
        return out

    @property
    def shear(self) -> float:
        """Shear modulus ``G = E / 2(1 + ν)``."""
        return self.young / (2.0 * (1.0 + self.poisson))


def pair_problems(values: dict) -> list[tuple[str, str]]:
    """``(field, message)`` for every bad entry of a pair's ``values`` (:data:`PAIR_FIELDS`)."""
    out = []
    for k, v in values.items():
        if k not in PAIR_FIELDS:
            out.append((k, f"not a value of a pair; allowed: {', '.join(PAIR_FIELDS)}"))
            continue
        finite = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
        if k == "restitution" and not (finite and MIN_RESTITUTION <= v <= 1.0):
            out.append((k, f"must be in [{MIN_RESTITUTION}, 1] (1: elastic), got {v!r}"))
        elif k != "restitution" and not (finite and v >= 0):
            out.append((k, f"must be finite and >= 0, got {v!r}"))
    return out


def check_material(name: str, m: Material, needs=()) -> None:
    """``ValueError`` naming the material and its first bad field (or the first field of
    ``needs`` it lacks)."""
    probs = m.problems(needs)
    if probs:
        field, msg = probs[0]
        raise ValueError(f"material {name!r}: {field}: {msg}")


def _rebound(alpha: float) -> float:
    """Restitution of ``x'' = -max(0, x^{3/2} + α x^{1/4} x')``, ``x(0) = 0``,
    ``x'(0) = 1``: the Hertz-Tsuji impact in units where the speed, the mass and the
    stiffness are 1 (``docs/contacts.md``); ``e = -x'`` when ``x`` returns to 0."""
    from scipy.integrate import solve_ivp

    if alpha == 0.0:
        return 1.0

    def rhs(t, y):
        x = max(y[0], 0.0)
        f = x * math.sqrt(x) + alpha * math.sqrt(math.sqrt(x)) * y[1]
        return (y[1], -max(f, 0.0))

    def back(t, y):
        return y[0]

    back.terminal, back.direction = True, -1
    sol = solve_ivp(rhs, (0.0, 100.0), (0.0, 1.0), method="DOP853", rtol=1e-12, atol=1e-14, events=back)
    if not sol.t_events[0].size:  # stopped inside the contact (α huge): no rebound
        return 0.0
    return float(-sol.y_events[0][0][1])


#: Significant digits kept of the Tsuji factor ``α`` (:func:`tsuji_alpha`).
ALPHA_DIGITS = 9


@functools.lru_cache(maxsize=256)
def tsuji_alpha(e: float) -> float:
    """The damping factor ``α`` with which the Hertz-Tsuji law
    ``F_n = max(0, k_n δ^{3/2} - α sqrt(m* k_n) δ^{1/4} δ')`` (``k_n = 4/3 E* sqrt(R*)``)
    rebounds with restitution ``e`` at every impact speed (the law is self-similar, so
    ``e`` depends on ``α`` alone); solved by bisection on :func:`_rebound` and rounded to
    :data:`ALPHA_DIGITS` significant digits.

    The rounding makes ``α`` the same number on every machine: the ODE solve's last
    digits (about 1e-11 relative) depend on which BLAS kernels the machine's OpenBLAS
    picks for SciPy's Runge-Kutta steps (measured: its Haswell, Sandy Bridge and
    Skylake-X kernels gave three values of ``α(0.5)``, 8e-12 apart), and every
    trajectory with a damped contact inherits them. Nine digits keep the restitution to
    about 1e-9, far inside what the law's validation asks (``docs/contacts.md``)."""
    from scipy.optimize import brentq

    e = float(e)
    if not (MIN_RESTITUTION <= e <= 1.0):
        raise ValueError(f"restitution: must be in [{MIN_RESTITUTION}, 1], got {e!r}")
    if e == 1.0:
        return 0.0
    hi = 1.0
    while _rebound(hi) > e:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"restitution: no damping factor reaches e = {e!r}")
    alpha = brentq(lambda a: _rebound(a) - e, 0.0, hi, xtol=1e-13, rtol=1e-13)
    return float(f"{alpha:.{ALPHA_DIGITS}g}")


def mix(a: Material, b: Material, given=None) -> np.ndarray:
    """The pair parameters (``kernels.contact_laws.hertz_mindlin.PAIR_*`` columns) of materials ``a`` and ``b``;
    ``given``: values of :data:`PAIR_FIELDS` that replace the mixing rule's."""
    given = given or {}

    def mean(field):
        return given[field] if field in given else math.sqrt(getattr(a, field) * getattr(b, field))

    row = np.zeros(PAIR_WIDTH)
    row[PAIR_ESTAR] = 1.0 / ((1.0 - a.poisson**2) / a.young + (1.0 - b.poisson**2) / b.young)
    row[PAIR_GSTAR] = 1.0 / ((2.0 - a.poisson) / a.shear + (2.0 - b.poisson) / b.shear)
    row[PAIR_ALPHA] = tsuji_alpha(round(mean("restitution"), 15))
    row[PAIR_MU] = mean("friction")
    row[PAIR_MU_ROLL] = mean("rolling_friction")
    row[PAIR_MU_TWIST] = mean("twisting_friction")
    row[PAIR_DAMP_N] = row[PAIR_ALPHA] * math.sqrt(4.0 / 3.0 * row[PAIR_ESTAR])
    row[PAIR_DAMP_T] = row[PAIR_ALPHA] * math.sqrt(8.0 * row[PAIR_GSTAR])
    return row


def pair_table(materials: list[Material], pairs=None, mix_rule=None) -> np.ndarray:
    """(M*M, width) table, row ``i*M + j`` for materials ``i``, ``j`` (symmetric), by
    ``mix_rule(a, b, given)`` (default :func:`mix`, the dissipative law's);
    ``pairs``: ``{(i, j): values}`` (``i <= j``) given to pairs in place of the mixing rule."""
    mix_rule = mix if mix_rule is None else mix_rule
    m = len(materials)
    pairs = pairs or {}
    rows = {}
    for i in range(m):
        for j in range(i, m):
            rows[i, j] = np.asarray(mix_rule(materials[i], materials[j], pairs.get((i, j))), dtype=np.float64)
    width = len(next(iter(rows.values()))) if rows else PAIR_WIDTH
    table = np.zeros((m * m, width))
    for (i, j), row in rows.items():
        table[i * m + j] = table[j * m + i] = row
    return table


def sphere_mass(material: Material, radius):
    """Mass ``ρ 4/3 π r³`` and moment of inertia ``2/5 m r²`` of solid spheres."""
    r = np.asarray(radius, dtype=np.float64)
    m = material.density * 4.0 / 3.0 * math.pi * r**3
    return m, 0.4 * m * r * r
