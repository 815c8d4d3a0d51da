"""Combiners on the structured dataset D (N, M)."""

import numpy as np
import pytest

from sbfn_dist.combiners import ArithmeticCombiner, OnlineSBFN, SBFNLeastSquares, fit_lambda_path
from sbfn_dist.combiners.basis import member_gaussian
from sbfn_dist.combiners.online import cross_member_scale, fit_online_grid
from sbfn_dist.combiners.ridge import ridge_path
from sbfn_dist.errors import ConfigError


@pytest.fixture
def structured():
    rng = np.random.default_rng(0)
    y = rng.normal(size=400)
    D = y[:, None] + rng.normal(scale=[0.2, 0.5, 1.0, 0.3], size=(400, 4))
    return D, y


def test_closed_form_alpha_equals_a_direct_solve(structured):
    D, y = structured
    model = SBFNLeastSquares(lambda2=3.0).fit(D, y)
    phi = model.features(D)
    direct = np.linalg.solve(phi.T @ phi + 3.0 * np.eye(phi.shape[1]), phi.T @ y)
    np.testing.assert_allclose(model.coef_, direct, rtol=1e-9)


def test_lambda2_zero_is_stable_on_a_rank_deficient_basis(structured):
    D, y = structured
    D = np.hstack([D, D[:, :1]])            # a duplicated member makes Phi^T Phi singular
    model = SBFNLeastSquares(lambda2=0.0).fit(D, y)
    assert np.isfinite(model.coef_).all()
    lstsq = np.linalg.lstsq(model.features(D), y, rcond=None)[0]
    np.testing.assert_allclose(model.predict(D), model.features(D) @ lstsq, atol=1e-8)


def test_lambda2_path_equals_separate_fits(structured):
    D, y = structured
    path = fit_lambda_path(D, y, [0.0, 3.0, 5.0, 7.0], intercept=True, linear=True)
    for model in path:
        single = SBFNLeastSquares(model.lambda2, intercept=True, linear=True).fit(D, y)
        np.testing.assert_allclose(model.predict(D), single.predict(D), atol=1e-9)


def test_intercept_is_not_penalised():
    phi = np.random.default_rng(1).normal(size=(200, 3))
    y = phi @ np.array([1.0, -2.0, 0.5]) + 10.0
    coefs, intercepts = ridge_path(phi, y, [1e-6], intercept=True)
    assert intercepts[0] == pytest.approx(10.0, abs=1e-3)


def test_paper_basis_is_one_gaussian_per_member_on_its_mean_and_spread(structured):
    D, y = structured
    model = SBFNLeastSquares().fit(D, y)
    expected = member_gaussian(D, D.mean(0), D.std(0, ddof=1))
    np.testing.assert_allclose(model.features(D), expected)
    assert model.features(D).shape == (400, 4)      # K = M units


def test_raw_outputs_option_contains_the_arithmetic_combiner(structured):
    D, y = structured
    linear = SBFNLeastSquares(intercept=True, linear=True).fit(D, y)
    mse = lambda p: np.mean((p - y) ** 2)
    assert mse(linear.predict(D)) <= mse(ArithmeticCombiner().predict(D)) + 1e-12


def test_g1_running_centre_and_scale_are_mean_and_std_of_past_predictions():
    z = np.random.default_rng(2).normal(size=(50, 3))
    model = OnlineSBFN("g1")
    phi, (centre, scale) = model.stream_features(z, batch_size=1)
    np.testing.assert_allclose(centre, z.mean(0))
    np.testing.assert_allclose(scale, z.std(0, ddof=1))
    i = 20                                  # at step i the moments cover predictions 1..i
    expected = member_gaussian(z[i], z[:i + 1].mean(0), z[:i + 1].std(0, ddof=1))
    np.testing.assert_allclose(phi[i], expected)


def test_g2_uses_only_the_last_k_predictions():
    z = np.random.default_rng(3).normal(size=(60, 2))
    phi, (centre, scale) = OnlineSBFN("g2", window=10).stream_features(z, batch_size=1)
    np.testing.assert_allclose(centre, z[-10:].mean(0))
    np.testing.assert_allclose(scale, z[-10:].std(0, ddof=1))


def test_g3_scale_is_the_cross_member_dispersion():
    D = np.array([[0.0, 1.0, 3.0]])
    np.testing.assert_allclose(cross_member_scale(D), [[3.0, 2.0, 3.0]] / np.sqrt(3))


def test_online_alpha_update_is_algorithm_1_step_by_step():
    rng = np.random.default_rng(4)
    z, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    model = fit_online_grid(z, y, 1, [OnlineSBFN("g1", lambda2=0.5, lr_alpha=0.1)])[0]
    phi, _ = OnlineSBFN("g1").stream_features(z, 1)
    alpha = np.zeros(3)
    for i in range(30):
        y_hat = phi[i] @ alpha
        alpha = alpha - 0.1 * ((y_hat - y[i]) * phi[i] + 0.5 * alpha)
    np.testing.assert_allclose(model.coef_, alpha)


def test_a_grid_of_variants_fits_like_each_alone():
    rng = np.random.default_rng(5)
    z, y = rng.normal(size=(80, 3)), rng.normal(size=80)
    grid = [OnlineSBFN(v, lam) for v in ("g1", "g2", "g3") for lam in (0.0, 3.0)]
    fit_online_grid(z, y, 4, grid)
    for model in grid:
        alone = fit_online_grid(z, y, 4, [OnlineSBFN(model.variant, model.lambda2)])[0]
        np.testing.assert_allclose(model.coef_, alone.coef_)


def test_iterative_sbfn_learns_from_a_stream(structured):
    D, y = structured
    model = OnlineSBFN("g1", lr_alpha=0.05, epochs=5).fit(D, y)
    assert np.mean((model.predict(D) - y) ** 2) < np.var(y)


def test_unknown_variant_is_a_clear_error():
    with pytest.raises(ConfigError, match="combiner"):
        OnlineSBFN("g4")
