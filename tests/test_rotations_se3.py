"""SE(3) exponential map and tangent operators (paper 001, eqs. (13)-(17)): against the
matrix exponential, central finite differences, each other, and their limits at tiny
angles; plus a control showing the finite-difference check rejects the printed (17)."""

import numpy as np
import pytest

from granular import rotations as rot
from granular.rotations.so3 import _coefficients

expm = pytest.importorskip("scipy.linalg").expm

ANGLES = [0.0, 1e-12, 1e-8, 1e-4, 1e-2, 0.3, 0.4999999, 0.5000001, 1.0, 2.5, 4.0, 6.0]


def random_twists(rng, angles):
    """One ``n = [n_T, n_R]`` per angle, random directions, ``|n_R| = angle``, ``|n_T| ~ 1``."""
    n = rng.normal(size=(len(angles), 6))
    d = n[:, 3:] / np.linalg.norm(n[:, 3:], axis=1, keepdims=True)
    n[:, 3:] = d * np.asarray(angles)[:, None]
    return n


def inv_h(H):
    out = np.zeros_like(H)
    Rt = np.swapaxes(H[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -(Rt @ H[..., :3, 3, None])[..., 0]
    out[..., 3, 3] = 1.0
    return out


def vee(X):
    """4×4 Lie-algebra matrix → ``[U, Ω]``."""
    return np.stack([X[..., 0, 3], X[..., 1, 3], X[..., 2, 3], X[..., 2, 1], X[..., 0, 2], X[..., 1, 0]], axis=-1)


def body_velocity_fd(n, ndot, eps=1e-6):
    """``(H⁻¹ Ḣ)^∨`` for ``H(s) = exp(n + s ṅ)`` by central differences."""
    dH = (rot.se3_exp(n + eps * ndot) - rot.se3_exp(n - eps * ndot)) / (2 * eps)
    return vee(inv_h(rot.se3_exp(n)) @ dH)


def test_exp_matches_matrix_exponential_and_is_rigid(rng):
    n = random_twists(rng, ANGLES)
    H = rot.se3_exp(n)
    for k in range(len(n)):
        assert np.allclose(H[k], expm(rot.se3_hat(n[k])), rtol=0, atol=1e-14 * (1 + np.abs(n[k]).max() ** 2))
    R = H[:, :3, :3]
    assert np.abs(np.swapaxes(R, 1, 2) @ R - np.eye(3)).max() < 1e-15 * 10
    assert np.abs(np.linalg.det(R) - 1).max() < 1e-14
    assert np.array_equal(H[:, 3], np.tile([0.0, 0.0, 0.0, 1.0], (len(n), 1)))
    R2, x2 = rot.se3_exp_parts(n)
    assert np.array_equal(R2, R) and np.array_equal(x2, H[:, :3, 3])


def test_exp_of_pure_translation_and_pure_rotation_exactly():
    n = np.array([[1.5, -2.0, 0.25, 0.0, 0.0, 0.0]])
    H = rot.se3_exp(n)
    assert np.array_equal(H[0, :3, :3], np.eye(3)) and np.array_equal(H[0, :3, 3], n[0, :3])
    theta = np.array([0.0, 0.0, np.pi / 2])
    H = rot.se3_exp(np.concatenate([np.zeros(3), theta]))
    assert np.allclose(H[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], rtol=0, atol=2e-16)
    assert np.array_equal(H[:3, 3], np.zeros(3))


@pytest.mark.parametrize("angle", ANGLES[1:-1] + [5.5])
def test_tangent_operator_by_finite_differences(rng, angle):
    """``T_SE3(n) ṅ = (H⁻¹ Ḣ)^∨`` and ``T_SE3⁻¹(n) (H⁻¹ Ḣ)^∨ = ṅ`` for ``H = exp(n(t))``."""
    n = random_twists(rng, [angle])[0]
    ndot = rng.normal(size=6)
    v = body_velocity_fd(n, ndot)
    tol = 1e-8 * (1 + np.abs(n).max()) ** 2
    assert np.abs(rot.se3_tangent(n) @ ndot - v).max() < tol
    assert np.abs(rot.se3_tangent_inv(n) @ v - ndot).max() < tol
    assert np.abs(rot.se3_tangent_inv_apply(n, v) - ndot).max() < tol


@pytest.mark.parametrize("angle", [1e-8, 0.3, 1.0, 3.0])
def test_so3_tangent_by_finite_differences(rng, angle):
    th = rng.normal(size=3)
    th *= angle / np.linalg.norm(th)
    thd = rng.normal(size=3)
    eps = 1e-6
    dR = (rot.so3_exp(th + eps * thd) - rot.so3_exp(th - eps * thd)) / (2 * eps)
    W = rot.so3_exp(th).T @ dR
    omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
    assert np.abs(rot.so3_tangent(th) @ thd - omega).max() < 1e-8
    assert np.abs(rot.so3_tangent_inv(th) @ omega - thd).max() < 1e-8


def test_inverse_is_inverse_and_apply_matches_matrix(rng):
    n = random_twists(rng, ANGLES) * np.array([3.0, 3.0, 3.0, 1.0, 1.0, 1.0])
    T, Ti = rot.se3_tangent(n), rot.se3_tangent_inv(n)
    assert np.abs(Ti @ T - np.eye(6)).max() < 1e-13
    v = rng.normal(size=n.shape)
    Tv = (Ti @ v[..., None])[..., 0]
    assert np.abs(rot.se3_tangent_inv_apply(n, v) - Tv).max() < 1e-15 * np.abs(Tv).max()
    # the rotation blocks are the SO(3) operators (15), (16)
    assert np.array_equal(T[:, 3:, 3:], T[:, :3, :3])
    assert np.abs(T[:, :3, :3] - rot.so3_tangent(n[:, 3:])).max() < 1e-15
    assert np.abs(Ti[:, :3, :3] - rot.so3_tangent_inv(n[:, 3:])).max() < 1e-15
    assert np.array_equal(T[:, 3:, :3], np.zeros((len(n), 3, 3)))


def test_exact_limits_at_zero_and_tiny_angles(rng):
    """At ``n_R = 0``: ``T⁻¹ = I + ½ ad_n`` and ``T = I - ½ ad_n`` exactly. At tiny
    angles the operators equal their series ``I ± ½ ad + ad²/12 (…/6)`` to round-off."""
    n = np.concatenate([rng.normal(size=3), np.zeros(3)])
    ad = rot.se3_ad(n)
    assert np.array_equal(rot.se3_tangent_inv(n), np.eye(6) + 0.5 * ad)
    assert np.array_equal(rot.se3_tangent(n), np.eye(6) - 0.5 * ad)
    for angle in (1e-12, 1e-8, 1e-6):
        n = random_twists(rng, [angle])[0]
        ad = rot.se3_ad(n)
        # dexp⁻¹_{-n} = Σ B_k (-ad)^k / k! = I + ½ ad + ad²/12 - ad⁴/720 …; dexp_{-n} = Σ (-ad)^k/(k+1)!
        assert np.abs(rot.se3_tangent_inv(n) - (np.eye(6) + 0.5 * ad + ad @ ad / 12)).max() < 1e-15
        assert np.abs(rot.se3_tangent(n) - (np.eye(6) - 0.5 * ad + ad @ ad / 6 - ad @ ad @ ad / 24)).max() < 1e-15
        R, x = rot.se3_exp_parts(n)
        rT = np.cross(n[3:], n[:3])
        assert np.abs(x - (n[:3] + 0.5 * rT + np.cross(n[3:], rT) / 6)).max() < 1e-15
    assert np.all(np.isfinite(rot.se3_tangent_inv(np.zeros((4, 6)))))


def _exact_sin_cos(t, terms=40):
    """``sin t``, ``cos t`` of a rational ``t`` as exact rationals (Taylor sums, |t| ≤ 2)."""
    from fractions import Fraction
    from math import factorial

    sin = sum(Fraction((-1) ** k, factorial(2 * k + 1)) * t ** (2 * k + 1) for k in range(terms))
    cos = sum(Fraction((-1) ** k, factorial(2 * k)) * t ** (2 * k) for k in range(terms))
    return sin, cos


def test_series_and_closed_forms_agree_with_exact_rational_values():
    """Each coefficient (Taylor series below 0.5 rad, closed form above) against its
    closed form evaluated in exact rational arithmetic, on both sides of the switch."""
    from fractions import Fraction

    def exact(name, t):
        s, c = _exact_sin_cos(t)
        sh, ch = _exact_sin_cos(t / 2)
        tcot = t * ch / sh
        return {
            "b": (t - s) / t**3,
            "da": (t * s - 2 * (1 - c)) / t**4,
            "db": ((1 - c) * t - 3 * (t - s)) / t**5,
            "k1": (1 - tcot / 2) / t**2,
            "dk1": (t**2 / (1 - c) + tcot - 4) / (2 * t**4),
        }[name]

    angles = np.array([1e-3, 0.08, 0.2, 0.35, 0.49999, 0.50001, 0.8, 2.0])
    theta = np.stack([angles, np.zeros_like(angles), np.zeros_like(angles)], axis=1)
    for name in ("b", "da", "db", "k1", "dk1"):
        _, (got,) = _coefficients(theta, name)
        want = np.array([float(exact(name, Fraction(a))) for a in angles])
        rel = np.abs(got - want) / np.abs(want)
        assert rel[angles < 0.5].max() <= 4e-16, (name, rel)  # series: round-off only
        # closed form: cancellation error, up to ~ε·1440/θ⁴ for dk1 (a term of size θ³|n_T|)
        assert rel[angles > 0.5].max() <= 5e-13, (name, rel)


def test_printed_commutator_form_of_17_fails_the_finite_difference_check(rng):
    """Control: (17) as printed, with ``[ñ_T, ñ_R]`` instead of ``ñ_T ñ_R + ñ_R ñ_T``,
    is not the inverse tangent operator; the same check that passes above rejects it."""
    n = random_twists(rng, [1.0])[0]
    ndot = rng.normal(size=6)
    v = body_velocity_fd(n, ndot)
    good = rot.se3_tangent_inv(n)
    ST, SR = rot.skew(n[:3]), rot.skew(n[3:])
    _, (k1,) = _coefficients(n[3:], "k1")
    bad = good.copy()
    bad[:3, 3:] += k1 * ((ST @ SR - SR @ ST) - (ST @ SR + SR @ ST))
    assert np.abs(good @ v - ndot).max() < 1e-8
    assert np.abs(bad @ v - ndot).max() > 1e-3


def test_batched_over_leading_axes_equals_one_at_a_time(rng):
    n = rng.normal(size=(2, 3, 6))
    v = rng.normal(size=(2, 3, 6))
    for f in (rot.se3_exp, rot.se3_tangent, rot.se3_tangent_inv, rot.se3_hat, rot.se3_ad):
        batched = f(n)
        for i in range(2):
            for j in range(3):
                assert np.array_equal(batched[i, j], f(n[i, j]))
    batched = rot.se3_tangent_inv_apply(n, v)
    assert np.array_equal(batched[1, 2], rot.se3_tangent_inv_apply(n[1, 2], v[1, 2]))


@pytest.mark.parametrize("f", [rot.se3_exp, rot.se3_tangent, rot.se3_tangent_inv, rot.se3_hat, rot.se3_exp_parts])
def test_wrong_shape_is_rejected(f):
    with pytest.raises(ValueError, match="n must have shape"):
        f(np.zeros((4, 5)))
    with pytest.raises(ValueError, match="theta must have shape"):
        rot.so3_tangent_inv(np.zeros(4))
