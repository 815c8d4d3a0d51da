"""run_trial for image classification: one record per (split, combiner)."""

import json
import math

import pytest
import torch

from sbfn_dist.combiners.ensembles import stacking_epochs
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.errors import ConfigError
from sbfn_dist.experiment import run_trial
from sbfn_dist.settings.tasks import TASKS

COMBINERS = TASKS["classification"].combiners

SMALL = {"folds": 2, "fold": 0, "n_members": 3, "ensemble": "cnn", "batch_size": 64,
         "n_val": 300, "n_test": 500, "head_epochs": 30}


def by_model(records):
    return {r["model"]: r for r in records}


def test_digits_trial_gives_every_combiner_with_scores_and_diagnostics():
    records = run_trial(dict(SMALL, dataset="digits", n_test=300, epochs=3))
    assert set(by_model(records)) == set(COMBINERS)
    for r in records:
        assert r["status"] == "ok" and 0 <= r["accuracy"] <= 1 and r["nll"] > 0
        for field in ("ece", "gibbs_risk", "disagreement", "mv_risk", "bregman_diversity",
                      "flops_per_example", "n_params_members", "train_seconds", "eval_seconds"):
            assert field in r and not math.isnan(r[field])
    # ensemble selection on the validation images' probabilities: counts / rounds per member
    weights = json.loads(by_model(records)["ensemble_selection"]["weights"])
    assert list(weights) == ["member_0", "member_1", "member_2"]
    assert all(w >= 0 and (w * 50) == round(w * 50) for w in weights.values())
    assert sum(weights.values()) == pytest.approx(1.0, abs=1e-12)


def test_mnist_subset_beats_the_majority_class_by_a_wide_margin_for_every_combiner(data_dir):
    records = run_trial(dict(SMALL, dataset="mnist", data_dir=data_dir, epochs=2,
                             n_train=1500))
    # Stratified parts: the majority class is ~11% of the test images.
    assert all(r["accuracy"] > 0.4 for r in records), {r["model"]: r["accuracy"] for r in records}
    assert {r["n_test"] for r in records} == {500} and records[0]["n_classes"] == 10


def test_cifar10_subset_beats_chance_for_every_combiner(data_dir):
    records = run_trial(dict(SMALL, dataset="cifar10", data_dir=data_dir, epochs=2,
                             n_train=2000))
    scores = {r["model"]: r["accuracy"] for r in records}
    assert all(a > 0.15 for a in scores.values()), scores        # chance is 0.10
    assert scores["logit_mean"] > 0.25, scores


@pytest.mark.parametrize("field,value,message", [
    ("ensemble", "vgg", "ensemble"), ("temperature", 0.0, "temperature"),
    ("combiners", ["sbfn_ls"], "combiners"), ("competitors", ["svm_rbf"], "tabular data sets"),
    ("head_optimizer", "lbfgs", "head_optimizer"), ("centre_init", "farthest", "centre_init"),
    ("split", "kfold", "holdout"), ("dtype", "float64", "tabular data sets"),
    ("width", 20, "tabular data sets"), ("test_fraction", 0.3, "tabular data"),
])
def test_bad_image_config_is_a_clear_error(field, value, message):
    with pytest.raises(ConfigError, match=message):
        run_trial(dict(SMALL, dataset="digits", **{field: value}))


def test_task_defaults_follow_the_data_set():
    cfg = TrialConfig.from_dict({"dataset": "digits"})
    assert (cfg.split, cfg.folds, cfg.lr_alpha, cfg.temperature) == ("holdout", 5, 0.1, 3.0)
    assert TrialConfig.from_dict({"dataset": "diabetes"}).batch_size == 1


def test_image_records_say_what_was_used():
    records = run_trial(dict(SMALL, dataset="digits", n_test=300, epochs=1,
                             combiners=["logit_mean", "sbfn_stacked"]))
    by = {r["model"]: r for r in records}
    assert by["logit_mean"]["split"] == "holdout" and "dtype" not in by["logit_mean"]
    assert "temperature" not in by["logit_mean"] and by["sbfn_stacked"]["temperature"] == 3.0
    assert by["sbfn_stacked"]["head_epochs"] == 30 and "head_epochs" not in by["logit_mean"]
    assert by["logit_mean"]["augment"] is False and by["logit_mean"]["device"] == "cpu"


def test_stacked_heads_get_at_least_a_thousand_steps_by_default():
    assert stacking_epochs(n_val=300, batch_size=64) == 200        # 5 batches an epoch
    assert stacking_epochs(n_val=100_000, batch_size=64) == 10     # never under 10 epochs


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_digits_trial_runs_on_cuda_with_every_combiner():
    records = run_trial(dict(SMALL, dataset="digits", n_test=300, epochs=2, device="cuda"))
    assert {r["model"] for r in records} == set(COMBINERS)
    assert all(r["status"] == "ok" and r["accuracy"] > 0.5 for r in records)
