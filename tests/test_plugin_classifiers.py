"""Plug-in classifiers in a trial's D: their out-of-fold class probabilities join the members'
in the stacked heads and in the logistic stacking anchor (stack_logistic), on the tabular
classification sets and csv:PATH; each plug-in is also a competitor row of the trial."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.ensemble import StackingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.neighbors import KNeighborsClassifier

from sbfn_dist.combiners import ensembles
from sbfn_dist.combiners.plugins import PluginSet, fit_columns, inner_splits, registry_plugins
from sbfn_dist.combiners.stacking import LogisticStack
from sbfn_dist.errors import ConfigError
from sbfn_dist.experiment import run_trial
from sbfn_dist.learners.competitors import REGISTRY, build_competitor, competitor_configs
from sbfn_dist.settings.config import TrialConfig
from sweeps.engine.plan.model_names import check_names

M, C = 3, 3
TRIAL = {"dataset": "wine", "folds": 3, "fold": 0, "n_members": M, "epochs": 10,
         "plugin_members": ["knn", "ridge"], "competitors": [],
         "combiners": ["sbfn_stacked", "moe_stacked", "stack_logistic", "logit_mean"]}


@pytest.fixture(scope="module")
def watched():
    """The wine trial's records, its ensemble and the D each stacked combiner was fitted on."""
    seen = {"d_val": []}

    class Watched(ensembles.ClassificationEnsemble):
        def _stack(self, name, d_val, y_val):
            seen["ens"] = self
            seen["d_val"].append((name, d_val))
            return super()._stack(name, d_val, y_val)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(ensembles.ENSEMBLES, "classification", Watched)
        seen["records"] = run_trial(TRIAL)
    return seen


def test_every_stacked_combiner_reads_the_members_and_the_plug_ins_probabilities(watched):
    ens = watched["ens"]
    n_val = len(ens.fold.y_val)
    assert [name for name, _ in watched["d_val"]] == ["sbfn_stacked", "moe_stacked",
                                                      "stack_logistic"]
    for name, d_val in watched["d_val"]:
        assert tuple(d_val.shape) == (n_val, M + 2, C), name


def test_the_plug_in_block_is_out_of_fold_on_the_whole_training_part(watched):
    """Recomputed here with scikit-learn: k-NN's cross_val_predict probabilities over the
    trial's plugin_folds stratified folds of the training part (the members' rows, then the
    held-out ones), seeded by the fold; the held-out rows' are D's k-NN block (float32)."""
    ens = watched["ens"]
    f = ens.fold
    X, y = np.concatenate([f.x_train, f.x_val]), np.concatenate([f.y_train, f.y_val])
    folds = StratifiedKFold(5, shuffle=True, random_state=f.seed)
    oof = cross_val_predict(KNeighborsClassifier(), X, y, cv=folds, method="predict_proba")
    [(_, d_val)] = [(n, d) for n, d in watched["d_val"] if n == "sbfn_stacked"]
    np.testing.assert_allclose(d_val[:, M].numpy(), oof[len(f.y_train):], atol=1e-7)


def test_records_name_the_plug_ins_count_their_coefficients_and_score_each_alone(watched):
    records = {r["model"]: r for r in watched["records"]}
    assert [r["model"] for r in watched["records"]] == [*TRIAL["combiners"], "knn", "ridge"]
    assert all(r["status"] == "ok" for r in records.values())
    h = M + 2
    extra = {n: records[n]["n_params"] - records[n]["n_params_members"] for n in TRIAL["combiners"]}
    k = 4 * h            # sbfn_units_per_member x hypotheses
    assert extra["sbfn_stacked"] == k * h * C + k * C + 2 * k   # centres, alpha, LayerNorm
    assert extra["moe_stacked"] == (h * C + 1) * h              # the gate over M + P experts
    assert extra["stack_logistic"] == C * h * C + C             # LogisticRegression
    assert extra["logit_mean"] == 0
    sbfn = [records[n] for n in TRIAL["combiners"]]
    assert all(json.loads(r["plugin_members"]) == ["knn", "ridge"] for r in sbfn)
    assert all(r["plugin_seconds"] > 0 for r in sbfn)
    for name in ("knn", "ridge"):
        assert records[name]["family"] == "competitor"
        assert json.loads(records[name]["model_params"]) == REGISTRY[name]["default"]
        assert records[name]["accuracy"] > 0.8      # the majority class: 0.40


@pytest.mark.parametrize("load", [load_wine, load_breast_cancer])
def test_stack_logistic_on_plug_ins_alone_is_scikit_learns_stacking_classifier(load):
    """On the plug-ins' columns alone the anchor is StackingClassifier (LogisticRegression
    final step, the same inner folds), prediction for prediction; two classes keep one column
    per hypothesis there, as here."""
    X, y = load(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    X, y, X_test = X[::2], y[::2], X[1::2]
    names, seed, n_classes = ("knn", "ridge"), 4, len(np.unique(y))
    plugins = PluginSet(registry_plugins(names, "default", seed, "classification"), cv=5)
    cols = fit_columns(plugins, X, y, X_test, seed, n_classes)
    ours = LogisticStack().fit(cols.train, y).predict_proba(cols.test)
    theirs = StackingClassifier(
        [(n, build_competitor(n, competitor_configs(n, "default", "classification")[0], seed,
                              "classification")) for n in names],
        final_estimator=LogisticRegression(), cv=inner_splits(5, X, y, seed, stratify=True))
    np.testing.assert_allclose(ours, theirs.fit(X, y).predict_proba(X_test), atol=1e-10)


def test_a_csv_class_table_takes_plug_in_classifiers(tmp_path):
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.csv"
    path.write_text("a,b,c,d,species\n" + "".join(
        ",".join(map(str, row)) + f",s{label}\n" for row, label in zip(X, y)))
    records = run_trial({"dataset": f"csv:{path}", "task": "classification",
                         "target": "species", "folds": 3, "fold": 0, "n_members": 2,
                         "epochs": 10, "combiners": ["sbfn_stacked", "stack_logistic"],
                         "plugin_members": ["knn"]})
    assert [r["model"] for r in records] == ["sbfn_stacked", "stack_logistic", "knn"]
    assert all(r["status"] == "ok" and r["accuracy"] > 0.8 for r in records)   # majority 0.33


@pytest.mark.parametrize("config, where", [
    ({"dataset": "wine", "combiners": ["logit_mean", "sbfn"]}, "stack_logistic"),
    ({"dataset": "digits", "combiners": ["sbfn_stacked"]}, "tabular")])
def test_plug_ins_are_refused_where_no_combiner_reads_them(config, where):
    with pytest.raises(ConfigError, match=f"plugin_members.*{where}"):
        TrialConfig.from_dict({**config, "plugin_members": ["knn"]})


def test_the_sweeps_know_the_anchor_and_the_plug_ins_by_name():
    check_names({"combiners": ["sbfn_stacked", "stack_logistic"], "plugin_members": ["knn"]},
                "classification")
    with pytest.raises(ConfigError, match="did you mean 'stack_logistic'"):
        check_names({"combiners": ["stack_logistc"]}, "classification")
