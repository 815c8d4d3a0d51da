"""run_trial: one experiment, start to finish, as tidy records -- regression and tabular
classification through the same loop. Learning is checked against real baselines on the same
fold (the training-mean predictor, the majority class), never against loose ranges."""

import json
import math

import numpy as np
import pytest

from sbfn_dist import records
from sbfn_dist.combiners import ensembles
from sbfn_dist.data.splits import make_splits
from sbfn_dist.data.tabular import load_tabular
from sbfn_dist.experiment import run_trial, run_trials
from sbfn_dist.settings.tasks import COMPETITORS, PRACTITIONERS, TASKS

QUICK = {"n_members": 3, "epsilon": 0.35, "width": 16, "epochs": 2, "batch_size": 8,
         "lambda2": [0.0, 3.0], "competitors": list(COMPETITORS), "competitor_grid": "default"}
MEMBER_FIELDS = ("n_members", "epsilon", "width", "lr", "epochs", "batch_size", "init_scale")


def mean_predictor_rmse(dataset: str, fold: int, **split) -> float:
    """RMSE on the fold's test rows of predicting the training rows' mean."""
    data = load_tabular(dataset, data_dir=split.pop("data_dir", None))
    train, test = make_splits(data, **split)[fold]
    return float(np.sqrt(np.mean((data.y[test] - data.y[train].mean()) ** 2)))


def majority_accuracy(dataset: str, fold: int, **split) -> float:
    data = load_tabular(dataset)
    train, test = make_splits(data, **split)[fold]
    return float(np.mean(data.y[test] == np.bincount(data.y[train]).argmax()))


def best(records_, model, metric):
    values = [r[metric] for r in records_ if r["model"] == model]
    return max(values) if metric == "accuracy" else min(values)


def test_every_combiner_and_competitor_gives_a_record_per_fold_and_setting():
    out = run_trial(dict(QUICK, dataset="diabetes", folds=3))
    assert {r["model"] for r in out} == set(TASKS["regression"].combiners) | set(COMPETITORS)
    # 5 lambda2-dependent combiners x 2 lambda2 + arithmetic + the 4 practitioners' combiners
    # + 3 competitors, for 3 folds
    assert len(out) == 3 * (5 * 2 + 1 + len(PRACTITIONERS["regression"]) + 3)
    assert all(r["status"] == "ok" and r["rmse"] > 0 for r in out)
    assert {r["fold"] for r in out} == {0, 1, 2}


def test_records_hold_only_the_settings_each_model_used():
    out = run_trial(dict(QUICK, dataset="diabetes", folds=3, fold=1,
                         combiners=["sbfn_ls", "g2", "arithmetic"], competitors=["svm_rbf"]))
    by = {r["model"]: r for r in out}
    for r in out:
        records.check(r)                       # every column is registered
    assert by["g2"]["lr_alpha"] == 0.03 and by["g2"]["window"] == 100
    assert "lr_alpha" not in by["sbfn_ls"] and "window" not in by["sbfn_ls"]
    assert "sbfn_basis" in by["sbfn_ls"] and "sbfn_basis" not in by["g2"]
    assert not any(f in by["svm_rbf"] for f in MEMBER_FIELDS)    # a competitor trains no MLP
    assert json.loads(by["svm_rbf"]["model_params"]) == {"C": 1.0, "gamma": "scale",
                                                         "epsilon": 0.1}
    assert by["sbfn_ls"]["device"] == "cpu" and "data_dir" not in by["sbfn_ls"]
    assert by["sbfn_ls"]["fold"] == 1 and by["sbfn_ls"]["train_seconds"] > 0
    assert by["sbfn_ls"]["n_params"] > by["sbfn_ls"]["n_params_members"] > 0


def test_members_are_trained_once_per_fold_for_every_combiner(monkeypatch):
    """Combiner-only settings never retrain: one member training per fold, whatever the
    number of combiners and lambda2 values."""
    calls = []
    real = ensembles.train_mlp_pack
    monkeypatch.setattr(ensembles, "train_mlp_pack", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = run_trial(dict(QUICK, dataset="diabetes", folds=3, competitors=[],
                         competitor_grid=None, lambda2=[0.0, 1.0, 3.0]))
    assert len(calls) == 3 and len(out) == 3 * (5 * 3 + 1 + len(PRACTITIONERS["regression"]))
    per_fold = {}
    for r in out:
        per_fold.setdefault(r["fold"], set()).add(r["member_rmse_mean"])
    assert all(len(v) == 1 for v in per_fold.values())


def test_a_trial_reruns_exactly():
    cfg = dict(QUICK, dataset="diabetes", folds=3, fold=2)
    first, second = run_trial(cfg), run_trial(cfg)
    assert [r["rmse"] for r in first] == [r["rmse"] for r in second]


SMALL = {"epsilon": 0.35, "width": 16, "epochs": 2, "batch_size": 8}


@pytest.mark.parametrize("config", [
    dict(SMALL, dataset="diabetes", n_members=3, competitors=["ridge"], plugin_members=["knn"]),
    dict(SMALL, dataset="wine", n_members=3, competitors=["knn"], head_calibration="temperature"),
    dict(SMALL, dataset="diabetes", n_members=1),
    dict(SMALL, dataset="diabetes", n_members=3, lr=1e4, init_scale=50.0, batch_size=1)],
    ids=["plug-ins", "classification", "reference", "diverged"])
def test_a_trial_writes_the_models_records_name(config):
    """records.model_names is what a --resume holds a stored fold to (results/outdated.py)."""
    from sbfn_dist.settings.config import TrialConfig
    config = dict(config, folds=2, fold=0)
    names = records.model_names(TrialConfig.from_dict(config))
    assert {r["model"] for r in run_trial(config)} == names and len(names) > 1


def test_divergence_is_a_status_not_a_crash():
    out = run_trial(dict(QUICK, dataset="diabetes", folds=3, fold=0, competitors=[],
                         competitor_grid=None, lr=1e4, init_scale=50.0, batch_size=1))
    assert {r["status"] for r in out} == {"diverged"}
    assert all(math.isnan(r["rmse"]) for r in out)
    assert "non-finite" in out[0]["error"]


def test_diabetes_ensembles_beat_the_training_mean_predictor():
    out = run_trial(dict(QUICK, dataset="diabetes", folds=5, fold=0, epochs=10, batch_size=4,
                         init_scale=1.0, combiners=["sbfn_ls_linear", "arithmetic"],
                         competitors=[], competitor_grid=None))
    baseline = mean_predictor_rmse("diabetes", 0, scheme="kfold", folds=5)
    for model in ("sbfn_ls_linear", "arithmetic"):
        assert best(out, model, "rmse") < 0.85 * baseline, (model, baseline)


def test_air_quality_models_beat_the_training_mean_predictor(data_dir):
    out = run_trial(dict(QUICK, dataset="air_quality", data_dir=data_dir, fold=0))
    assert {r["model"] for r in out} == set(TASKS["regression"].combiners) | set(COMPETITORS)
    assert out[0]["n_train"] + out[0]["n_test"] == 8991
    baseline = mean_predictor_rmse("air_quality", 0, scheme="kfold", folds=10, data_dir=data_dir)
    # Measured at these settings: sbfn_ls_linear 0.22, arithmetic 0.27, competitors <= 0.10
    # of the baseline; the paper's feature map (sbfn_ls) and the iterative variants 0.89-1.0.
    assert all(r["status"] == "ok" and r["rmse"] <= 1.01 * baseline for r in out)
    for model in ("sbfn_ls_linear", "arithmetic"):
        assert best(out, model, "rmse") < 0.35 * baseline, model
    assert all(best(out, c, "rmse") < 0.15 * baseline for c in COMPETITORS)


def test_appliances_candanedo_split_models_beat_the_training_mean_predictor(data_dir):
    # The published split's one competitor is histogram boosting: 1 CPU-s on its 14,803 rows,
    # where SVR, gradient boosting and the random forest took 7, 7 and 21 (one thread). Those
    # three are checked on Air Quality above; what this test adds is the fixed split itself.
    competitors = ["hist_gradient_boosting"]
    out = run_trial(dict(QUICK, dataset="appliances", data_dir=data_dir, split="fixed",
                         competitors=competitors))
    assert out[0]["n_test"] == 4932
    baseline = mean_predictor_rmse("appliances", 0, scheme="fixed", data_dir=data_dir)
    # Measured: sbfn_ls_linear 0.92, arithmetic 0.94, histogram boosting 0.73 of the baseline.
    assert all(r["status"] == "ok" and r["rmse"] <= 1.01 * baseline for r in out)
    assert best(out, "sbfn_ls_linear", "rmse") < 0.96 * baseline
    assert all(best(out, c, "rmse") < 0.9 * baseline for c in competitors)


@pytest.mark.parametrize("dataset,margin", [("breast_cancer", 0.25), ("wine", 0.45),
                                            ("iris", 0.4)])
def test_tabular_classification_beats_the_majority_class(dataset, margin):
    """Algorithm 2 on MLP members: every combiner and competitor, stratified folds."""
    out = run_trial({"dataset": dataset, "folds": 3, "fold": 1, "competitors": list(COMPETITORS),
                     "competitor_grid": "default"})
    assert {r["model"] for r in out} == set(TASKS["classification"].combiners) | set(COMPETITORS)
    assert all(r["status"] == "ok" and r["task"] == "classification" for r in out)
    sbfn = [r for r in out if r["family"] == "sbfn"]
    assert all(r["n_val"] > 0 and r["n_classes"] == len(set(load_tabular(dataset).y))
               for r in sbfn)
    majority = majority_accuracy(dataset, 1, scheme="kfold", folds=3)
    scores = {r["model"]: r["accuracy"] for r in out}
    assert all(a > majority + margin for a in scores.values()), (majority, scores)


def test_tabular_classification_from_a_csv_with_text_labels(tmp_path):
    data = load_tabular("iris")
    names = np.array(["setosa", "versicolor", "virginica"])[data.y]
    path = tmp_path / "flowers.csv"
    lines = ["a,b,c,d,kind"] + [",".join(map(str, x)) + f",{k}" for x, k in zip(data.X, names)]
    path.write_text("\n".join(lines) + "\n")
    out = run_trial({"dataset": f"csv:{path}", "task": "classification", "target": "kind",
                     "folds": 3, "fold": 0, "combiners": ["logit_mean"]})
    assert out[0]["n_classes"] == 3 and out[0]["accuracy"] > 0.8


def _scores(out):
    return {(r["fold"], r["model"], r["model_params"]): (r["status"], r.get("rmse", r.get("accuracy")))
            for r in out}


@pytest.mark.parametrize("batch_size", [1, 8])
def test_trials_run_as_packs_give_each_trial_its_own_records(batch_size):
    """run_trials packs the hypothesis sets of compatible trials into one member stack per fold;
    every trial's records equal its own run_trial's (b = 1: to the bit; else to rounding)."""
    base = {"dataset": "diabetes", "folds": 3, "width": 16, "epochs": 2,
            "batch_size": batch_size, "lambda2": [0.0, 3.0]}
    configs = [dict(base, n_members=m, epsilon=e) for m in (2, 3) for e in (0.0, 0.35)]
    configs += [dict(base, n_members=1, epsilon=0.0, lr=0.003, combiners=["arithmetic"],
                     lambda2=None),                                     # the M = 1 reference
                dict(base, n_members=2, width=8),                      # another width: own pack
                {"dataset": "diabetes", "folds": 3, "combiners": [], "competitors": ["svm_rbf"],
                 "competitor_grid": "default"}]
    packed = run_trials(configs)
    for config, recs in zip(configs, packed):
        alone = _scores(run_trial(config))
        assert _scores(recs).keys() == alone.keys()
        for key, (status, score) in _scores(recs).items():
            assert status == alone[key][0] == "ok"
            assert score == pytest.approx(alone[key][1], rel=0 if batch_size == 1 else 1e-5)
    sizes = {r["packed_members"] for recs in packed[:5] for r in recs}
    assert sizes == {2 + 2 + 3 + 3 + 1}                     # one stack of five sets per fold
    assert {r["packed_members"] for r in packed[5]} == {2}


def test_a_pack_reports_a_diverged_trial_and_keeps_the_others():
    base = {"dataset": "diabetes", "folds": 3, "fold": 0, "width": 16, "epochs": 2,
            "batch_size": 1, "combiners": ["sbfn_ls_linear"]}
    calm, wild = dict(base, n_members=2), dict(base, n_members=2, lr=1e4, init_scale=50.0)
    [calm_recs, wild_recs] = run_trials([calm, wild])
    assert {r["status"] for r in wild_recs} == {"diverged"} and "non-finite" in wild_recs[0]["error"]
    assert _scores(calm_recs) == _scores(run_trial(calm))
