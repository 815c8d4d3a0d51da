"""What the export hands a newcomer (issue 48, "What the newcomer tripped on" 1): the winner is
the best of the models that learned something, an export of a model that learned nothing in any
configuration says so, a classifier's held-out accuracy is shown against the majority class,
and the estimators' UninformativeWarning suggests a fix that is not the combiner already used."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits

from sbfn_dist.errors import UninformativeWarning
from sbfn_dist.settings.config import TrialConfig
from sweeps.api import SweepResult
from sweeps.engine.model_export import Exported, report
from sweeps.engine.plan.planning import Planned
from sweeps.engine.results.refit import Refit, _majority


def iris_config(trial_id: str, n_members: int) -> dict:
    """A planned configuration of a 2-fold tabular classification sweep."""
    cfg = TrialConfig.from_dict({"dataset": "iris", "task": "classification", "folds": 2,
                                 "n_members": n_members, "combiners": ["sbfn", "logit_mean"],
                                 "extra": {"role": "ensemble"}})
    return {**cfg.to_dict(), "trial_id": trial_id}


def rows(trial_id: str, model: str, accuracies: list, uninformative: list) -> list:
    return [{"trial_id": trial_id, "model": model, "model_params": "{}", "fold": fold,
             "status": "ok", "role": "ensemble", "task": "classification", "accuracy": acc,
             "nll": 1.0, "ece": 0.1, "uninformative": flag}
            for fold, (acc, flag) in enumerate(zip(accuracies, uninformative))]


def sweep_of(records: list, configs: list) -> SweepResult:
    points = [{"n_members": c["n_members"], "trial_id": c["trial_id"]} for c in configs]
    return SweepResult("unused", pd.DataFrame(records), None, plan=Planned(points, configs),
                       objective="sbfn", task="classification")


CONFIGS = [iris_config("loud", 2), iris_config("learned", 3)]


def test_a_configuration_whose_objective_learned_nothing_on_a_fold_never_wins():
    """"loud" scores higher, but its sbfn did not beat the constant guess on fold 1 (its
    accuracy is what near-uniform probabilities happened to get right)."""
    sweep = sweep_of(rows("loud", "sbfn", [0.9, 0.8], [False, True])
                     + rows("learned", "sbfn", [0.6, 0.6], [False, False]), CONFIGS)
    best = sweep.best()
    assert (best.trial_id, best.score, best.uninformative) == ("learned", 0.6, False)


def test_where_no_configuration_learned_the_best_of_them_wins_and_is_flagged():
    sweep = sweep_of(rows("loud", "sbfn", [0.5, 0.4], [True, True])
                     + rows("learned", "sbfn", [0.3, 0.4], [True, False])
                     + rows("learned", "logit_mean", [0.7, 0.7], [False, False]), CONFIGS)
    best = sweep.best()
    assert (best.trial_id, best.uninformative) == ("loud", True)


def exported(uninformative: bool, learned_instead: list, majority) -> Exported:
    made = Refit(None, 0, 96, "split 0's training part", {"accuracy": 0.416667}, majority=majority)
    return Exported("shapes-model", "m2", "sbfn", {}, made, {"accuracy": 0.416667}, None,
                    uninformative=uninformative, learned_instead=learned_instead)


def test_the_export_of_a_model_that_learned_nothing_says_so_and_names_one_that_did(monkeypatch):
    monkeypatch.setattr("sweeps.engine.model_export.saved.read_manifest", lambda path: {})
    said = "\n".join(report(exported(True, ["logit_mean"], 1 / 3)))
    assert "sbfn beat the constant guess in no configuration" in said
    assert "--objective logit_mean" in said
    assert "always answering the majority class: accuracy 0.333333" in said
    quiet = "\n".join(report(exported(False, [], None)))
    assert "constant guess" not in quiet and "majority" not in quiet


def test_the_majority_share_is_of_the_held_out_labels():
    assert _majority(np.array([0, 0, 0, 1, 2, 2]), ["a", "b", "c"]) == 0.5
    assert _majority(np.array([1.5, 2.5]), None) is None


def test_the_warning_of_an_uninformative_logit_mean_does_not_suggest_logit_mean():
    """It said "try more epochs or members, or combiner='logit_mean'" to a logit_mean fit."""
    from sbfn_dist import SBFNClassifier
    digits = load_digits()
    # 80 rows of one class and 10 of another: untrained members never beat answering the first
    x, y = digits.images[:90, None].astype(np.float32) / 16, np.repeat([0, 1], [80, 10])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UninformativeWarning)
        SBFNClassifier(ensemble="cnn", n_members=2, epochs=1, lr=1e-12,
                       combiner="logit_mean").fit(x, y)
    said = [str(w.message) for w in caught if w.category is UninformativeWarning]
    assert said and "combiner='logit_mean'" not in said[0], said
    assert re.search(r"its members learned nothing it could average", said[0])
