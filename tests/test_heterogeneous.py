"""Heterogeneous hypothesis sets: the estimators registry, plug-ins tuned by inner CV, the
paper's general (multivariate) s-BFN with K by inner CV, and the stacking anchors."""

import json

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.ensemble import StackingRegressor
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import cross_val_predict

from sbfn_dist.combiners.basis import KMeansBasis
from sbfn_dist.combiners.plugins import fit_plugins
from sbfn_dist.combiners.sbfn_ls import SBFNLeastSquares
from sbfn_dist.combiners.selection import BestSingle
from sbfn_dist.combiners.stacking import SBFNRBF, StackNNLS, StackRidge
from sbfn_dist.data.splits import kfold_splits
from sbfn_dist.data.tabular import load_tabular
from sbfn_dist.errors import ConfigError
from sbfn_dist.experiment import run_trial
from sbfn_dist.learners.competitors import REGISTRY, build_competitor, competitor_configs
from sbfn_dist.settings.config import TrialConfig
from sweeps import regression
from sweeps.engine.plan.grid_trials import regression_sweep, smoke
from sweeps.engine.sweep import run_sweep
from tests.sweep_helpers import ONE_AT_A_TIME, a_ray, assert_each_fold_once, results


@pytest.fixture(scope="module")
def diabetes():
    data = load_tabular("diabetes")
    X = (data.X - data.X.mean(0)) / data.X.std(0)
    y = (data.y - data.y.mean()) / data.y.std()
    return X[:300], y[:300], X[300:], y[300:]


def _rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_every_registry_setting_builds_and_fits(task):
    data = load_tabular("diabetes" if task == "regression" else "iris")
    X, y = data.X[:120], data.y[:120]
    for name in REGISTRY:
        if name in ("svm_rbf", "gradient_boosting", "mlp") and task == "classification":
            continue          # slow to fit; built below
        for params in competitor_configs(name, "small", task):
            model = build_competitor(name, params, 0, task)
            assert model.fit(X, y).predict(X).shape == (len(y),), (name, params)
    for name in REGISTRY:
        build_competitor(name, competitor_configs(name, "default", task)[0], 0, task)


def test_inner_cv_tuning_picks_the_lowest_out_of_fold_error(diabetes):
    X, y, X_test, _ = diabetes
    cols = fit_plugins(("knn",), X, y, X_test, folds=4, seed=3, tuning="inner_cv")
    inner = kfold_splits(len(y), 4, 3)
    errors = {json.dumps(p): _rmse(cross_val_predict(build_competitor("knn", p, 3), X, y,
                                                     cv=inner), y)
              for p in competitor_configs("knn", "small")}
    chosen = json.dumps(cols.settings[0])
    assert errors[chosen] == min(errors.values()) and len(set(errors.values())) > 1
    best = build_competitor("knn", cols.settings[0], 3)
    assert np.array_equal(cols.train[:, 0], cross_val_predict(best, X, y, cv=inner))
    assert np.allclose(cols.test[:, 0], best.fit(X, y).predict(X_test))
    default = fit_plugins(("knn",), X, y, X_test, folds=4, seed=3)
    assert default.settings == [REGISTRY["knn"]["default"]]


def test_stack_ridge_on_plugin_columns_is_scikit_learns_stacking_regressor(diabetes):
    X, y, X_test, _ = diabetes
    names = ("ridge", "knn", "random_forest")
    cols = fit_plugins(names, X, y, X_test, folds=5, seed=1)
    ours = StackRidge().fit(cols.train, y).predict(cols.test)
    estimators = [(n, build_competitor(n, competitor_configs(n, "default")[0], 1)) for n in names]
    theirs = StackingRegressor(estimators, final_estimator=RidgeCV(),
                               cv=kfold_splits(len(y), 5, 1)).fit(X, y).predict(X_test)
    assert np.allclose(ours, theirs, atol=1e-10)


def test_nnls_stacking_recovers_non_negative_weights():
    rng = np.random.default_rng(0)
    D = rng.normal(size=(500, 3))
    y = 0.3 * D[:, 0] + 0.7 * D[:, 1] - 0.5 * D[:, 2]
    model = StackNNLS(["a", "b", "c"]).fit(D, y)
    assert np.all(model.coef_ >= 0) and model.coef_[2] == 0
    # least squares would take the negative weight; NNLS must not (Breiman 1996)
    assert np.allclose(model.coef_[:2], [0.3, 0.7], atol=0.1)


def test_best_single_names_the_column_with_the_lowest_training_error():
    rng = np.random.default_rng(1)
    y = rng.normal(size=200)
    D = np.column_stack([y + rng.normal(scale=s, size=200) for s in (1.0, 0.2, 0.5)])
    model = BestSingle(["member_0", "member_1", "knn"], "squared_error").fit(D, y)
    assert json.loads(model.fitted["weights"]) == {"member_0": 0.0, "member_1": 1.0, "knn": 0.0}
    assert model.params == {}
    assert np.array_equal(model.predict(D), D[:, 1])


def test_nearest_width_is_the_distance_to_the_nearest_other_centre():
    D = np.random.default_rng(2).normal(size=(300, 4))
    basis = KMeansBasis(6, seed=0, width="nearest").fit(D)
    dist = cdist(basis.centre, basis.centre)
    np.fill_diagonal(dist, np.inf)
    assert np.allclose(basis.scale, dist.min(1))
    assert not np.allclose(KMeansBasis(6, seed=0).fit(D).scale, basis.scale)


def test_sbfn_rbf_chooses_k_and_lambda2_by_inner_cv():
    rng = np.random.default_rng(3)
    D = rng.normal(size=(400, 3))
    y = np.sin(2 * D[:, 0]) * D[:, 1] + 0.1 * rng.normal(size=400)
    model = SBFNRBF(units=(2, 16), lambdas=(0.0, 10.0), folds=4, width="nearest", seed=0)
    model.fit(D, y)
    # the inner errors recomputed independently, one SBFNLeastSquares per (K, lambda2, fold)
    expected = np.zeros((2, 2))
    for train, val in kfold_splits(400, 4, 0):
        for i, k in enumerate((2, 16)):
            for j, lam in enumerate((0.0, 10.0)):
                m = SBFNLeastSquares(lam, basis="kmeans", n_units=k, intercept=True, linear=True,
                                     seed=0, width="nearest").fit(D[train], y[train])
                expected[i, j] += ((m.predict(D[val]) - y[val]) ** 2).sum() / 400
    assert np.allclose(model.inner_mse_, expected)
    i, j = np.unravel_index(expected.argmin(), expected.shape)
    # the choice is the fit's (fitted_params, each fold's own), not a setting (model_params)
    assert model.params == {}
    assert json.loads(model.fitted["fitted_params"]) == {"rbf_units": (2, 16)[i],
                                                          "lambda2": (0.0, 10.0)[j]}


def test_the_multivariate_basis_captures_what_a_linear_stack_cannot():
    """y depends on an interaction of two hypotheses: RBF units over the whole vector fit it,
    any weighted sum of the columns (ridge stacking) cannot."""
    rng = np.random.default_rng(4)
    D = rng.normal(size=(1200, 2))
    y = D[:, 0] * D[:, 1]
    train, test = slice(0, 900), slice(900, None)
    rbf = SBFNRBF(units=(8, 32), lambdas=(0.0, 1.0), folds=3, width="nearest", seed=0)
    rbf_rmse = _rmse(rbf.fit(D[train], y[train]).predict(D[test]), y[test])
    ridge_rmse = _rmse(StackRidge().fit(D[train], y[train]).predict(D[test]), y[test])
    assert rbf_rmse < 0.5 * ridge_rmse


def test_a_trial_records_each_plugin_as_a_competitor_and_each_anchor(diabetes):
    records = run_trial({"dataset": "diabetes", "folds": 3, "fold": 0, "n_members": 3,
                         "epsilon": 0.35, "width": 16, "epochs": 2, "batch_size": 8,
                         "lambda2": [0.0, 1.0], "plugin_tuning": "inner_cv",
                         "plugin_members": ["ridge", "sklearn.linear_model.LassoCV"],
                         "combiners": ["sbfn_rbf", "stack_ridge", "stack_nnls", "best_single"]})
    by_model = {r["model"]: r for r in records}
    assert list(by_model) == ["sbfn_rbf", "stack_nnls", "stack_ridge", "best_single", "ridge",
                              "sklearn.linear_model.LassoCV"]
    assert all(r["status"] == "ok" for r in records)
    rbf = by_model["sbfn_rbf"]
    # its K and lambda2 are each fold's own choice by inner CV (fitted_params), not a setting
    assert rbf["model_params"] == "{}" and np.isnan(rbf.get("lambda2", np.nan))
    chosen = json.loads(rbf["fitted_params"])
    assert chosen["lambda2"] in (0.0, 1.0) and chosen["rbf_units"] in (2, 4, 8, 16, 32)
    assert rbf["rbf_width"] == "nearest" and rbf["inner_folds"] == 5
    assert json.loads(by_model["ridge"]["model_params"])["alpha"] in (0.1, 1.0, 10.0, 100.0)
    # RidgeCV's alpha is the fold's own choice: recorded as fitted, never as a setting that
    # would split stack_ridge into one configuration per alpha across folds
    ridge_stack = by_model["stack_ridge"]
    assert ridge_stack["model_params"] == "{}"
    assert json.loads(ridge_stack["fitted_params"])["alpha"] in (0.1, 1.0, 10.0)
    assert by_model["ridge"]["family"] == "competitor"
    assert by_model["ridge"]["plugin_tuning"] == "inner_cv"
    # every model beats predicting the training mean on this fold by a clear margin
    data = load_tabular("diabetes")
    train, test = kfold_splits(len(data.y), 3, 0)[0]
    mean_rmse = _rmse(data.y[train].mean(), data.y[test])
    assert all(r["rmse"] < 0.85 * mean_rmse for r in records)


@pytest.mark.parametrize("config,field,message", [
    ({"competitors": ["random_forest"], "plugin_members": ["random_forest"]}, "competitors",
     "already get a competitor row"),
    ({"competitors": ["sklearn.ensemble.RandomForestClassifier"]}, "competitors",
     "regressor"),
    ({"dataset": "iris", "competitors": ["sklearn.svm.SVC"]}, "competitors",
     "classifier with predict_proba"),
    ({"rbf_units": [4]}, "rbf_units", "sbfn_rbf"),
    ({"combiners": ["sbfn_rbf"], "rbf_width": "widest"}, "rbf_width", "nearest"),
    ({"plugin_tuning": "inner_cv"}, "plugin_tuning", "plugin_members"),
])
def test_heterogeneous_settings_are_refused_where_they_do_not_apply(config, field, message):
    with pytest.raises(ConfigError, match=message) as err:
        TrialConfig.from_dict(config)
    assert err.value.field == field


def test_an_import_path_classifier_is_a_competitor_of_a_classification_trial():
    records = run_trial({"dataset": "iris", "folds": 3, "fold": 0, "combiners": [],
                         "competitors": ["sklearn.naive_bayes.GaussianNB", "knn"],
                         "competitor_grid": "default"})
    assert [r["model"] for r in records] == ["sklearn.naive_bayes.GaussianNB", "knn"]
    assert all(r["accuracy"] > 0.8 for r in records)      # three classes: chance is 1/3


# The grid's plug-ins (sweeps/grids/regression/heterogeneous.yaml): the cheap ones on 15k rows.
PLUGINS = ("extra_trees", "random_forest", "hist_gradient_boosting", "knn", "ridge")


def test_the_heterogeneous_grid_is_one_trial_whose_plugins_are_its_competitors():
    spec = regression_sweep("air_quality", "heterogeneous")
    [trial] = spec.trials()
    assert trial == {"n_members": 20, "epsilon": 0.5, "seed": 0}
    assert spec.base["plugin_members"] == list(PLUGINS)
    assert spec.base["plugin_tuning"] == "inner_cv" and "sbfn_rbf" in spec.base["combiners"]


def test_the_heterogeneous_grid_runs_one_trial_per_fold_of_the_split():
    from sweeps.engine.plan.planning import SweepOptions, plan
    from sweeps.engine.plan.planning import folds_of
    spec = regression_sweep("diabetes", "heterogeneous", folds=4)
    configs = plan(spec, SweepOptions(name="x"))
    assert [folds_of(c) for c in configs] == [[0], [1], [2], [3]]
    assert len({c["trial_id"] for c in configs}) == 4
    assert all(c["plugin_members"] == PLUGINS for c in configs)


def test_a_heterogeneous_sweep_runs_each_fold_as_a_trial_through_ray(tmp_path):
    spec, _, opts = regression.build(["--dataset", "diabetes", "--grid", "heterogeneous",
                                      "--storage", str(tmp_path), "--name", "het", "--no-mlflow",
                                      "--num-cpus", "2", *ONE_AT_A_TIME,
                                      "--set", "plugin_members=ridge,knn"])
    with a_ray():
        outcome = run_sweep(smoke(spec), opts)
    table = results(tmp_path / "het")
    assert len(outcome.trials) == 3
    assert sorted(table["fold"].unique()) == [0, 1, 2]
    assert {"sbfn_rbf", "stack_ridge", "ridge", "knn"} <= set(table["model"])
    for _, sub in table.groupby("trial_id"):
        assert_each_fold_once(sub, set(sub["trial_id"]), [sub["fold"].iloc[0]])
