"""Rotation algebra (paper 003, eqs. (3)-(5)) against independent matrix computations."""

import numpy as np
import pytest

from granular import rotations as rot


def random_rotvecs(rng, n, max_angle=np.pi * 0.999):
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    return axis * rng.uniform(0.0, max_angle, size=(n, 1))


def rodrigues(theta):
    """Independent rotation matrix: scipy-free Rodrigues with explicit trigonometry."""
    out = np.empty((len(theta), 3, 3))
    for k, t in enumerate(theta):
        a = np.linalg.norm(t)
        K = rot.skew(t / a) if a > 0 else np.zeros((3, 3))
        out[k] = np.eye(3) + np.sin(a) * K + (1 - np.cos(a)) * K @ K
    return out


def test_rrp_matrix_is_rotation_and_matches_rodrigues(rng):
    theta = random_rotvecs(rng, 200)
    alpha = rot.rrp_from_rotvec(theta)
    R = rot.rrp_to_matrix(alpha)
    np.testing.assert_allclose(R, rodrigues(theta), atol=1e-13)
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), np.broadcast_to(np.eye(3), R.shape), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-14)


def test_composition_is_matrix_product_in_paper_order(rng):
    """(5): α1 ⊕ α2 is R(α2) R(α1), α1 first (docs/physics.md)."""
    a1 = rot.rrp_from_rotvec(random_rotvecs(rng, 500, 2.0))
    a2 = rot.rrp_from_rotvec(random_rotvecs(rng, 500, 2.0))
    a12 = rot.rrp_compose(a1, a2)
    lhs = rot.rrp_to_matrix(a12)
    rhs = rot.rrp_to_matrix(a2) @ rot.rrp_to_matrix(a1)
    ok = np.abs(4.0 - (a1 * a2).sum(axis=1)) > 1e-3  # away from composed half turns
    np.testing.assert_allclose(lhs[ok], rhs[ok], atol=1e-14, rtol=0)
    # and it is not the other order
    other = rot.rrp_to_matrix(a1) @ rot.rrp_to_matrix(a2)
    assert np.abs(lhs - other).max() > 1e-2


def test_inverse_and_relative_are_exact(rng):
    a1 = rot.rrp_from_rotvec(random_rotvecs(rng, 300, 2.5))
    a2 = rot.rrp_from_rotvec(random_rotvecs(rng, 300, 2.5))
    np.testing.assert_allclose(rot.rrp_compose(a1, rot.rrp_inverse(a1)), 0.0, atol=1e-15)
    r = rot.rrp_relative(a1, a2)
    R1, R2 = rot.rrp_to_matrix(a1), rot.rrp_to_matrix(a2)
    np.testing.assert_allclose(rot.rrp_to_matrix(r), R2 @ np.swapaxes(R1, -1, -2), atol=1e-13)
    np.testing.assert_allclose(rot.rrp_compose(a1, r), a2, rtol=1e-12, atol=1e-13)


def test_round_trips_rrp_quaternion_rotvec(rng):
    theta = random_rotvecs(rng, 400)
    q = rot.quat_from_rotvec(theta)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(rot.quat_to_rotvec(q), theta, atol=1e-13)
    a = rot.rrp_from_quat(q)
    np.testing.assert_allclose(a, rot.rrp_from_rotvec(theta), rtol=1e-12)
    np.testing.assert_allclose(rot.quat_canonical(rot.quat_from_rrp(a)), rot.quat_canonical(q), atol=1e-15)
    np.testing.assert_allclose(rot.rotvec_from_rrp(a), theta, atol=1e-13)
    # RRP do not see the sign of q
    np.testing.assert_allclose(rot.rrp_from_quat(-q), a, rtol=1e-15)
    # matrices
    np.testing.assert_allclose(rot.quat_to_matrix(q), rodrigues(theta), atol=1e-14)
    np.testing.assert_allclose(rot.quat_from_matrix(rodrigues(theta)), rot.quat_canonical(q), atol=1e-14)
    np.testing.assert_allclose(rot.so3_exp(theta), rodrigues(theta), atol=1e-14)
    np.testing.assert_allclose(rot.so3_log(rot.so3_exp(theta)), theta, atol=1e-12)


def test_quaternion_product_is_matrix_product(rng):
    p = rot.quat_from_rotvec(random_rotvecs(rng, 100))
    q = rot.quat_from_rotvec(random_rotvecs(rng, 100))
    np.testing.assert_allclose(
        rot.quat_to_matrix(rot.quat_multiply(p, q)), rot.quat_to_matrix(p) @ rot.quat_to_matrix(q), atol=1e-14
    )
    v = rng.normal(size=(100, 3))
    np.testing.assert_allclose(rot.quat_rotate(p, v), np.einsum("nij,nj->ni", rot.quat_to_matrix(p), v), atol=1e-14)


@pytest.mark.parametrize("angle", [1e-9, 1e-12, 0.0])
def test_exact_at_tiny_angles(angle, rng):
    axis = rng.normal(size=(20, 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    theta = angle * axis
    alpha = rot.rrp_from_rotvec(theta)
    # α = θ (1 + |θ|²/12 + ...): to round-off, equal at these angles
    np.testing.assert_allclose(alpha, theta, rtol=1e-15, atol=0)
    np.testing.assert_allclose(rot.rotvec_from_rrp(alpha), theta, rtol=1e-15, atol=0)
    q = rot.quat_from_rotvec(theta)
    np.testing.assert_allclose(q[:, 1:], 0.5 * theta, rtol=1e-15, atol=0)
    np.testing.assert_allclose(rot.quat_to_rotvec(q), theta, rtol=1e-15, atol=0)
    np.testing.assert_allclose(rot.rrp_angle(alpha), angle, rtol=1e-15, atol=0)
    # the angle between two orientations that differ by a tiny rotation
    q0 = rot.quat_from_rotvec(random_rotvecs(rng, 20))
    q1 = rot.quat_multiply(q, q0)
    # q1 carries ~1e-16 absolute rounding from the product; the angle is known to that
    np.testing.assert_allclose(rot.quat_angle_between(q0, q1), angle, rtol=1e-6, atol=5e-16)
    # composition of tiny increments is additive to second order: α1 ⊕ α2 ≈ α1 + α2
    np.testing.assert_allclose(rot.rrp_compose(alpha, alpha), 2 * alpha, rtol=1e-15, atol=0)


@pytest.mark.parametrize("gap", [1e-6, 1e-7])
def test_correct_near_half_turn(gap, rng):
    axis = rng.normal(size=(30, 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    angle = np.pi - gap
    theta = angle * axis
    alpha = rot.rrp_from_rotvec(theta)
    # |α| = 2 tan(angle/2) near its pole: the rounding of the angle itself is amplified
    # by ~π/gap, so that is the attainable relative accuracy of α here.
    cond = 20 * np.finfo(float).eps * np.pi / gap
    np.testing.assert_allclose(np.linalg.norm(alpha, axis=1), 2 * np.tan(angle / 2), rtol=cond)
    np.testing.assert_allclose(rot.rrp_to_matrix(alpha), rodrigues(theta), atol=1e-12)
    np.testing.assert_allclose(rot.rrp_angle(alpha), angle, rtol=1e-15)
    np.testing.assert_allclose(rot.rotvec_from_rrp(alpha), theta, rtol=1e-14)
    q = rot.quat_from_rrp(alpha)
    np.testing.assert_allclose(rot.quat_to_rotvec(q), theta, rtol=cond)
    np.testing.assert_allclose(rot.quat_from_matrix(rodrigues(theta)), rot.quat_canonical(q), atol=1e-12)
    # composing a near-half turn with a small rotation matches the matrix product
    small = rot.rrp_from_rotvec(random_rotvecs(rng, 30, 0.1))
    lhs = rot.rrp_to_matrix(rot.rrp_compose(alpha, small))
    rhs = rot.rrp_to_matrix(small) @ rot.rrp_to_matrix(alpha)
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)


def test_batched_over_leading_axes(rng):
    theta = random_rotvecs(rng, 24).reshape(2, 3, 4, 3)
    a = rot.rrp_from_rotvec(theta)
    R = rot.rrp_to_matrix(a)
    assert R.shape == (2, 3, 4, 3, 3)
    np.testing.assert_allclose(R.reshape(-1, 3, 3), rodrigues(theta.reshape(-1, 3)), atol=1e-13)
    assert rot.rrp_compose(a, a).shape == (2, 3, 4, 3)
    assert rot.quat_from_rrp(a).shape == (2, 3, 4, 4)
