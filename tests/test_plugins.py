"""Heterogeneous plug-in hypotheses: fitted predictors join the M members as columns of D."""

import json

import numpy as np
import torch
import pytest
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.data.tabular import load_tabular
from sbfn_dist.learners.training import MLPConfig, StreamRecorder, train_mlp
from sbfn_dist.errors import ConfigError
from sbfn_dist.experiment import run_trial
from sbfn_dist.learners.competitors import competitor_configs
from sbfn_dist.combiners.plugins import PluginColumns, fit_plugins
from sbfn_dist.settings.tasks import TASKS

PLUGINS = {n: competitor_configs(n, "default")[0] for n in ("random_forest", "gradient_boosting")}

QUICK = {"dataset": "diabetes", "folds": 3, "fold": 0, "n_members": 3, "epsilon": 0.35,
         "width": 16, "epochs": 2, "batch_size": 8, "lambda2": [0.0, 3.0]}


@pytest.fixture(scope="module")
def diabetes():
    data = load_tabular("diabetes")
    X = (data.X - data.X.mean(0)) / data.X.std(0)
    y = (data.y - data.y.mean()) / data.y.std()
    return X[:300], y[:300], X[300:]


def _rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


def test_one_training_and_one_test_column_per_plugin(diabetes):
    X, y, X_test = diabetes
    cols = fit_plugins(("gradient_boosting", "random_forest"), X, y, X_test, folds=4, seed=0)
    assert cols.train.shape == (300, 2) and cols.test.shape == (len(X_test), 2)
    assert cols.names == ("gradient_boosting", "random_forest")
    assert cols.fit_seconds > 0 and cols.eval_seconds > 0
    empty = fit_plugins((), X, y, X_test, folds=4, seed=0)
    assert empty.train.shape == (300, 0) and empty.test.shape == (len(X_test), 0)


def test_training_columns_are_out_of_fold_not_in_sample(diabetes):
    X, y, X_test = diabetes
    oof = fit_plugins(("random_forest",), X, y, X_test, folds=5, seed=0).train[:, 0]
    in_sample = RandomForestRegressor(random_state=0, **PLUGINS["random_forest"]).fit(X, y).predict(X)
    # A forest nearly memorises its training rows; its out-of-fold error is that of unseen rows.
    assert _rmse(in_sample, y) < 0.5 * _rmse(oof, y)
    assert not np.allclose(oof, in_sample)


def test_test_rows_are_never_used_by_a_plugin_fit(diabetes):
    X, y, X_test = diabetes
    cols = fit_plugins(("gradient_boosting",), X, y, X_test, folds=4, seed=1)
    noise = np.random.default_rng(0).normal(size=X_test.shape) * 100
    other = fit_plugins(("gradient_boosting",), X, y, noise, folds=4, seed=1)
    assert np.array_equal(cols.train, other.train)
    alone = GradientBoostingRegressor(random_state=1, **PLUGINS["gradient_boosting"]).fit(X, y)
    assert np.allclose(cols.test[:, 0], alone.predict(X_test))


def test_inner_folds_are_a_config_option_and_seeded(diabetes):
    X, y, X_test = diabetes
    a = fit_plugins(("random_forest",), X, y, X_test, folds=3, seed=0).train
    assert np.array_equal(a, fit_plugins(("random_forest",), X, y, X_test, folds=3, seed=0).train)
    assert not np.allclose(a, fit_plugins(("random_forest",), X, y, X_test, folds=6, seed=0).train)
    assert TrialConfig.from_dict({"plugin_members": ["random_forest"],
                                  "plugin_folds": 7}).plugin_folds == 7


def test_the_stream_rows_follow_the_members_visit_order(diabetes):
    X, y, _ = diabetes
    cfg = MLPConfig(n_members=2, epochs=3, batch_size=4, seed=5, dtype="float64")
    recorder = StreamRecorder(cfg.epochs * len(y), cfg.n_members, torch.float64)
    train_mlp(X, y, cfg, observers=[recorder])
    # y as a "plug-in" column: in visit order it must be exactly the recorded stream's targets.
    as_column = PluginColumns(("y",), y[:, None], np.empty((0, 1)), 0.0, 0.0)
    assert np.array_equal(as_column.stream(cfg)[:, 0], recorder.arrays()[1])


def test_records_name_the_hypotheses_and_count_m_plus_p_columns():
    records = run_trial(dict(QUICK, plugin_members=["gradient_boosting", "random_forest"]))
    sbfn = [r for r in records if r["family"] == "sbfn"]
    assert {r["model"] for r in sbfn} == set(TASKS["regression"].combiners)
    assert all(r["status"] == "ok" for r in records)
    assert all(json.loads(r["plugin_members"]) == ["gradient_boosting", "random_forest"]
               for r in sbfn)
    assert all(r["plugin_seconds"] > 0 and r["plugin_folds"] == 5 for r in sbfn)
    # each plug-in is also a competitor row, at the setting it used
    plugins = [r for r in records if r["family"] == "competitor"]
    assert [r["model"] for r in plugins] == ["gradient_boosting", "random_forest"]
    assert [json.loads(r["model_params"]) for r in plugins] == [PLUGINS["gradient_boosting"],
                                                                PLUGINS["random_forest"]]
    assert all(r["plugin_tuning"] == "default" and "plugin_members" not in r for r in plugins)
    coef = {r["model"]: r["n_params"] - r["n_params_members"] for r in sbfn}
    assert coef["sbfn_ls"] == 3 + 2                 # one unit per hypothesis, M + P
    assert coef["sbfn_ls_linear"] == 2 * (3 + 2) + 1  # units + raw outputs + intercept
    assert coef["g1"] == 3 + 2
    assert coef["ensemble_selection"] == coef["stack_nnls"] == coef["best_single"] == 3 + 2


def test_a_competitors_only_trial_refuses_plugins_unless_they_are_a_shared_setting():
    # A competitor has no D to extend: asked directly, plug-ins are refused; as a sweep's
    # shared setting (optional) they are dropped from that trial, and its records say nothing.
    config = {"dataset": "diabetes", "folds": 3, "fold": 0, "plugin_members": ["random_forest"],
              "combiners": [], "competitors": ["gradient_boosting"], "competitor_grid": "default"}
    with pytest.raises(ConfigError, match="plugin_members.*regression trials with a combiner"):
        TrialConfig.from_dict(config)
    cfg = TrialConfig.from_dict(config, optional=["plugin_members"])
    records = run_trial(cfg)
    assert [r["model"] for r in records] == ["gradient_boosting"]
    assert "plugin_members" not in records[0]


def test_without_plugins_the_records_say_so_and_nothing_changes():
    plain = run_trial(dict(QUICK, combiners=["sbfn_ls_linear"]))
    assert all(r["plugin_members"] == "[]" and r["plugin_seconds"] == 0 for r in plain)
    assert all(r["n_params"] - r["n_params_members"] == 2 * 3 + 1 for r in plain)


def test_online_variants_also_run_in_the_plug_in_regime():
    records = run_trial(dict(QUICK, plugin_members=["gradient_boosting"],
                             combiners=["g1", "g2", "g3"], online_regime="plug_in"))
    assert len(records) == 3 * 2 + 1 and all(r["status"] == "ok" for r in records)


@pytest.mark.parametrize("value,message", [
    (["xgboost"], "one of \\('svm_rbf', 'random_forest', 'gradient_boosting', 'extra_trees'"),
    (["sklearn.svm.SVC"], "SVC is not a regressor; allowed: .*import path of a "
                          "scikit-learn-compatible regressor"),
    (["sklearn.linear_model.NoSuchModel"], "module sklearn.linear_model has no 'NoSuchModel'; "
                                           "allowed: .*import path"),
    (["collections.OrderedDict"], "OrderedDict is not a scikit-learn estimator"),
    (["sbfn_no_such_module.Model"], "importing sbfn_no_such_module failed: "
                                    "ModuleNotFoundError"),
    (["random_forest", "random_forest"], "each at most once"),
])
def test_bad_plugin_names_list_the_known_ones(value, message):
    with pytest.raises(ConfigError, match=message):
        TrialConfig.from_dict({"plugin_members": value})


def test_plugin_options_are_validated():
    with pytest.raises(ConfigError, match="plugin_folds"):
        TrialConfig.from_dict({"plugin_members": ["random_forest"], "plugin_folds": 1})
    with pytest.raises(ConfigError, match="regression trials"):
        TrialConfig.from_dict({"dataset": "digits", "plugin_members": ["random_forest"]})
    assert TrialConfig.from_dict({"plugin_members": "random_forest"}).plugin_members == (
        "random_forest",)


def test_mlp_members_plus_boosting_are_not_worse_than_the_worse_part():
    """Real check, diabetes, 5 folds: s-BFN (+linear) over M MLPs + GB vs each part alone."""
    cfg = dict(QUICK, fold=None, folds=5, n_members=5, epochs=10, combiners=["sbfn_ls_linear"],
               lambda2=[0.0])
    mixed = run_trial(dict(cfg, plugin_members=["gradient_boosting"]))   # with GB's own row
    mlp_only = run_trial(cfg)

    def mean_rmse(records, model):
        return np.mean([r["rmse"] for r in records if r["model"] == model])
    combined = mean_rmse(mixed, "sbfn_ls_linear")
    worse = max(mean_rmse(mlp_only, "sbfn_ls_linear"), mean_rmse(mixed, "gradient_boosting"))
    assert combined <= 1.05 * worse
