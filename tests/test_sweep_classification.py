"""A real tiny tabular classification sweep through Ray Tune and MLflow: every trial, fold and
combiner once, competitors without member settings, and s-BFN models that learn something."""

import json
from collections import Counter
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from mlflow import MlflowClient
from sklearn.datasets import load_wine
from sklearn.model_selection import StratifiedKFold

from sbfn_dist.settings.tasks import SBFN_HEADS, TASKS
from tests.sweep_helpers import (ONE_AT_A_TIME, a_ray, assert_each_fold_once, mlflow_runs,
                                 results, run_tiny)

pytestmark = pytest.mark.timeout(600)

FOLDS = range(3)                 # --smoke: 3 stratified folds, seed 0
MEMBER_FIELDS = ("n_members", "epsilon", "lr", "epochs", "batch_size", "width", "init_scale",
                 "device")
# Each s-BFN head (and the M = 1 network) beats predicting the training part's majority class
# by this much on every fold. Wine's majority share is 0.40; the heads score 0.87-1.0 on these
# folds after 10 epochs, a model that learned nothing scores 0.33-0.40.
MARGIN = 0.35


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    with a_ray():
        yield run_tiny(tmp_path_factory.mktemp("clf"), "--members", "2", *ONE_AT_A_TIME,
                       name="wine", task="classification")


def majority_accuracy_per_fold() -> tuple[dict, dict]:
    """(fold -> accuracy of the training part's majority class, fold -> test rows), computed
    from scikit-learn's wine and StratifiedKFold directly, not through sbfn_dist."""
    y = load_wine().target
    kfold = StratifiedKFold(n_splits=len(FOLDS), shuffle=True, random_state=0)
    acc, n_test = {}, {}
    for k, (train, test) in enumerate(kfold.split(np.zeros(len(y)), y)):
        majority = np.bincount(y[train]).argmax()
        acc[k], n_test[k] = float(np.mean(y[test] == majority)), len(test)
    return acc, n_test


def test_every_trial_fold_and_combiner_is_in_results_once(sweep):
    table = results(sweep.root)
    roles = table.groupby("trial_id")["role"].first()
    assert sorted(roles) == ["competitors", "ensemble", "ensemble", "reference"]
    assert_each_fold_once(table, set(roles.index), FOLDS)
    expected = {"ensemble": TASKS["classification"].combiners, "reference": ("logit_mean",)}
    for trial, rows in table.groupby("trial_id"):
        if roles[trial] in expected:
            seen = Counter(zip(rows["fold"], rows["model"]))
            assert seen == Counter(product(FOLDS, expected[roles[trial]])), trial
    assert (table["status"] == "ok").all() and (table["task"] == "classification").all()


def test_competitor_rows_carry_no_member_settings(sweep):
    table = results(sweep.root)
    competitors = table[table["role"] == "competitors"]
    assert set(competitors["model"]) == {"svm_rbf"} and len(competitors) >= len(FOLDS)
    assert competitors.reindex(columns=list(MEMBER_FIELDS)).isna().all().all()
    members = table[table["role"] != "competitors"]
    assert members[list(MEMBER_FIELDS)].notna().all().all()


def test_sbfn_heads_beat_the_majority_class_on_the_same_folds(sweep):
    table = results(sweep.root)
    majority, n_test = majority_accuracy_per_fold()
    assert table.groupby("fold")["n_test"].first().to_dict() == n_test     # the same folds
    learned = table[table["model"].isin(SBFN_HEADS) | (table["role"] == "reference")]
    assert len(learned) == 2 * len(SBFN_HEADS) * len(FOLDS) + len(FOLDS)
    floor = learned["fold"].map(majority) + MARGIN
    assert (learned["accuracy"] >= floor).all(), learned[["trial_id", "fold", "model", "accuracy"]]


def test_mlflow_logs_accuracy_and_only_the_settings_each_trial_holds(sweep, tmp_path):
    _, runs = mlflow_runs(sweep.tracking_uri, "wine")
    assert len(runs) == 4 and all(r.info.status == "FINISHED" for r in runs)
    client = MlflowClient(sweep.tracking_uri)
    for run in runs:
        role, params = run.data.tags["role"], set(run.data.params)
        assert run.data.tags["task"] == "classification"
        assert ("n_members" in params) == (role != "competitors")
        config = json.loads(Path(client.download_artifacts(run.info.run_id, "config.json",
                                                           str(tmp_path))).read_text())
        assert ("temperature" in config) == (role == "ensemble")   # the s-BFN heads' setting
        assert any(k.startswith("accuracy/") for k in run.data.metrics)
        assert not any(k.startswith("rmse") for k in run.data.metrics)
