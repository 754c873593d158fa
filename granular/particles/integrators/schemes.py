"""Names, equation numbers and step-size measures of the explicit maps of paper 003."""

from __future__ import annotations

import numpy as np

from kernels import laws

SCHEMES = {
    "exact": laws.SCHEME_EXACT,
    "verlet": laws.SCHEME_VERLET,
    "campello": laws.SCHEME_CAMPELLO,
}
SCHEME_NAMES = {code: name for name, code in SCHEMES.items()}
ALIASES = {"23": "exact", "25": "verlet", "27": "campello", "rrp": "exact", "symplectic-euler": "campello"}
EQUATION = {"exact": "(23)", "verlet": "(25)", "campello": "(27)"}


def scheme_name(name: str) -> str:
    """Canonical name for ``name`` (accepts ``"23"``, ``"25"``, ``"27"`` and aliases)."""
    key = ALIASES.get(str(name), str(name))
    if key not in SCHEMES:
        allowed = sorted(SCHEMES) + sorted(ALIASES)
        raise ValueError(f"scheme: unknown explicit map {name!r}; allowed: {allowed}")
    return key


def rotation_measure(model, state, scheme: str, h: float) -> np.ndarray:
    """Per-particle ``ρ`` of :func:`kernels.laws.rrp_increment` for a step of ``scheme``
    from ``state`` (host array; ``ρ < 1`` is required)."""
    be = model.backend
    om, RM = be.to_host(state.omega).astype(np.float64), be.to_host(state.RM).astype(np.float64)
    J = be.to_host(model.inertia).astype(np.float64)[:, None]
    if scheme == "campello":
        w = om + h * RM / J
        return 0.5 * h * np.linalg.norm(w, axis=1)
    w = om + 0.5 * h * RM / J
    scale = 1.0 if scheme == "exact" else 0.5
    return scale * h * np.linalg.norm(w, axis=1)
