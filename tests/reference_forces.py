"""Plain NumPy reference of every interaction (the slow twin of the kernels), written
from the formulas with the batched rotation module and no code shared with kernels/."""

import numpy as np

from granular import rotations as rot


def bonds(x, q, bd, broken):
    """U^a, U^s, U^m forces and moments of all intact bonds (reference data from ``bd``)."""
    a, b = bd["a"], bd["b"]
    live = broken == 0
    d = x[a] - x[b]
    r = np.linalg.norm(d, axis=1)
    n = d / r[:, None]
    strain = r / bd["rest_length"] - 1.0
    F_axial = (-bd["ka"] * strain / bd["rest_length"])[:, None] * n
    ua = rot.quat_rotate(q[a], bd["n0a"])
    ub = rot.quat_rotate(q[b], bd["n0b"])
    ta = 1.0 - (ua * n).sum(1)
    tb = 1.0 - (ub * n).sum(1)
    g = ta[:, None] * ua + tb[:, None] * ub
    F_shear = (bd["ks"] / r)[:, None] * (g - (g * n).sum(1)[:, None] * n)
    RMa = (bd["ks"] * ta)[:, None] * np.cross(ua, n)
    RMb = (bd["ks"] * tb)[:, None] * np.cross(ub, n)
    D = rot.quat_multiply(q[b], rot.quat_multiply(bd["qref"], rot.quat_conjugate(q[a])))
    theta = rot.quat_to_rotvec(D)
    RMa = RMa + bd["km"][:, None] * theta
    RMb = RMb - bd["km"][:, None] * theta
    Fa = (F_axial + F_shear) * live[:, None]
    RMa, RMb = RMa * live[:, None], RMb * live[:, None]
    F = np.zeros_like(x)
    RM = np.zeros_like(x)
    np.add.at(F, a, Fa)
    np.add.at(F, b, -Fa)
    np.add.at(RM, a, RMa)
    np.add.at(RM, b, RMb)
    U = {
        "U_a": float((0.5 * bd["ka"] * strain**2 * live).sum()),
        "U_s": float((0.5 * bd["ks"] * (ta**2 + tb**2) * live).sum()),
        "U_m": float((0.5 * bd["km"] * (theta**2).sum(1) * live).sum()),
    }
    return F, RM, U


def contacts(x, radius, kpp, exclude=()):
    """U^pp over all pairs (i < j), except the pairs in ``exclude``."""
    n = len(x)
    i, j = np.triu_indices(n, 1)
    skip = {(min(p), max(p)) for p in exclude}
    keep = np.array([(a, b) not in skip for a, b in zip(i, j)], dtype=bool) if skip else np.ones(len(i), bool)
    i, j = i[keep], j[keep]
    d = x[i] - x[j]
    dist = np.linalg.norm(d, axis=1)
    reach = radius[i] + radius[j]
    ov = np.maximum(1.0 - dist / reach, 0.0)
    f = kpp / reach * ov**1.5
    F = np.zeros_like(x)
    fi = (f / dist)[:, None] * d
    np.add.at(F, i, fi)
    np.add.at(F, j, -fi)
    return F, {"U_pp": float((0.4 * kpp * ov**2.5).sum())}


def walls(x, radius, planes, k):
    F = np.zeros_like(x)
    U = 0.0
    for (n1, n2, n3, c), kk in zip(planes, k):
        nrm = np.array([n1, n2, n3])
        dist = x @ nrm - c
        ov = np.maximum(1.0 - dist / radius, 0.0)
        F += (kk / radius * ov**1.5)[:, None] * nrm
        U += float((0.4 * kk * ov**2.5).sum())
    return F, {"U_pw": U}
