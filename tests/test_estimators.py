"""Specification of sbfn_dist.estimators.SBFNRegressor: a scikit-learn regressor for one s-BFN."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sbfn_dist.errors import ConfigError
from sbfn_dist.estimators import COMBINERS, FitDivergedError, SBFNRegressor

FAST = dict(epochs=5, n_members=3, width=16)


@parametrize_with_checks([SBFNRegressor(**FAST)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def sine(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


@pytest.fixture(scope="module")
def sine_data():
    X, y = sine()
    grid = np.linspace(-3, 3, 200)[:, None]
    return X, y, grid, np.sin(grid[:, 0])


def test_learns_a_smooth_function_with_defaults(sine_data):
    X, y, grid, truth = sine_data
    model = SBFNRegressor().fit(X, y)
    assert r2_score(truth, model.predict(grid)) > 0.8   # predicting the mean scores 0


@pytest.mark.parametrize("combiner", COMBINERS)
def test_every_combiner_fits_and_predicts(sine_data, combiner):
    X, y, grid, _ = sine_data
    model = SBFNRegressor(combiner=combiner, **FAST).fit(X, y)
    pred = model.predict(grid)
    assert pred.shape == (len(grid),) and np.isfinite(pred).all()
    assert model.combiner_.name == combiner


def test_predict_members_are_the_hypotheses_in_target_units(sine_data):
    X, y, grid, _ = sine_data
    y_shifted = 100.0 + 5.0 * y   # the internal standardisation must be undone
    model = SBFNRegressor(combiner="arithmetic", **FAST).fit(X, y_shifted)
    D = model.predict_members(grid)
    assert D.shape == (len(grid), 3)
    np.testing.assert_allclose(model.predict(grid), D.mean(1))
    assert abs(D.mean() - 100.0) < 10.0


def test_random_state_fixes_the_fit(sine_data):
    X, y, grid, _ = sine_data
    pred = lambda **kw: SBFNRegressor(**FAST, **kw).fit(X, y).predict(grid)
    np.testing.assert_array_equal(pred(random_state=3), pred(random_state=3))
    np.testing.assert_array_equal(pred(), pred(random_state=0))   # None means seed 0
    assert not np.allclose(pred(random_state=3), pred(random_state=4))


@pytest.mark.parametrize("field, value", [("epsilon", 1.5), ("n_members", 0),
                                          ("combiner", "nope"), ("lr", 0.0),
                                          ("random_state", -1), ("intercept", "yes")])
def test_bad_params_raise_a_config_error_naming_the_field(sine_data, field, value):
    X, y, _, _ = sine_data
    model = SBFNRegressor(**{field: value})   # sklearn rule: __init__ never validates
    with pytest.raises(ConfigError, match=f"'{field}'") as info:
        model.fit(X, y)
    assert info.value.field == field and isinstance(info.value, ValueError)


def test_unknown_combiner_error_lists_the_choices(sine_data):
    X, y, _, _ = sine_data
    with pytest.raises(ConfigError, match="sbfn_ls.*arithmetic"):
        SBFNRegressor(combiner="nope").fit(X, y)


def test_divergence_is_a_clear_value_error(sine_data):
    X, y, _, _ = sine_data
    with pytest.raises(FitDivergedError, match="diverged.*smaller lr or init_scale") as info:
        SBFNRegressor(lr=1e4, init_scale=10.0, **FAST).fit(X, y)
    assert isinstance(info.value, ValueError)


def test_combiner_divergence_is_a_clear_value_error(sine_data):
    X, y, _, _ = sine_data
    with pytest.raises(FitDivergedError, match="combiner 'g2' diverged.*smaller lr_alpha.*larger lambda2"):
        SBFNRegressor(combiner="g2", lr_alpha=10.0, **FAST).fit(X, y)


def test_multi_output_y_is_refused_clearly(sine_data):
    X, y, _, _ = sine_data
    with pytest.raises(ValueError, match="single target.*MultiOutputRegressor"):
        SBFNRegressor(**FAST).fit(X, np.column_stack([y, y]))


def test_constant_feature_and_target_stay_finite():
    X = np.column_stack([np.linspace(0, 1, 40), np.full(40, 7.0)])
    model = SBFNRegressor(**FAST).fit(X, np.full(40, 2.5))
    np.testing.assert_allclose(model.predict(X), 2.5, atol=1e-6)


def test_predict_before_fit_raises_not_fitted():
    with pytest.raises(NotFittedError):
        SBFNRegressor().predict(np.zeros((2, 1)))


def test_pipeline_and_cross_validation(sine_data):
    X, y, grid, truth = sine_data
    pipe = make_pipeline(StandardScaler(), SBFNRegressor(**FAST)).fit(X, y)
    assert pipe.predict(grid).shape == (len(grid),)
    scores = cross_val_score(SBFNRegressor(**FAST), X, y, cv=3)
    assert scores.shape == (3,) and np.isfinite(scores).all()
