"""Optuna under ASHA: a configuration ASHA stopped after fewer folds is PRUNED in the study (its
running CV mean after each fold kept), never COMPLETE with a mean over fewer folds, so the
study's best trial (what optuna-dashboard shows) is the best full CV. A real sqlite study, told
by the sweep's searcher exactly as Ray Tune tells it."""

import optuna
from optuna.trial import TrialState
from ray import tune

from sweeps.engine.common.store import ResultStore
from sweeps.engine.tracking.study import open_study, searcher


def result(folds_done: int, running_mean: float) -> dict:
    """A trial's report after `folds_done` folds (sweeps.engine.run.trainable): its running CV mean."""
    return {"objective": running_mean, "folds_done": folds_done, "training_iteration": folds_done}


def test_a_configuration_stopped_early_is_pruned_and_never_the_best(tmp_path):
    store = ResultStore(str(tmp_path / "s"))
    search = searcher(open_study(store, "s", "min", resume=False, labels={}), "s", seed=0, folds=3)
    search.set_search_properties("objective", "min", {"a": tune.choice([1, 2, 3])})
    search.suggest("full"), search.suggest("stopped")
    # Fold scores: full 0.5, 0.5, 0.8 (running means 0.5, 0.5, 0.6); stopped 0.55, 0.55.
    # Stopped is worse after 1 and 2 folds, so ASHA stops it at its 2-fold rung; its 2-fold
    # mean (0.55) is still below full's 3-fold mean (0.6).
    search.on_trial_result("full", result(1, 0.5))
    search.on_trial_result("stopped", result(1, 0.55))
    search.on_trial_result("full", result(2, 0.5))
    search.on_trial_complete("stopped", result(2, 0.55))      # ASHA's stop: Tune's last result
    search.on_trial_complete("full", result(3, 0.6))          # max_t: the last fold

    study = optuna.load_study(study_name="s", storage=f"sqlite:///{store.root}/optuna.db")
    full, stopped = study.trials
    assert (full.state, full.value, full.intermediate_values) == (
        TrialState.COMPLETE, 0.6, {1: 0.5, 2: 0.5, 3: 0.6})
    assert (stopped.state, stopped.intermediate_values) == (TrialState.PRUNED, {1: 0.55, 2: 0.55})
    assert study.best_trial.number == full.number


def test_a_failed_or_finished_trial_is_told_as_before(tmp_path):
    """Without ASHA (2 folds or fewer) every trial runs all its folds: COMPLETE; an error: FAIL."""
    store = ResultStore(str(tmp_path / "s"))
    search = searcher(open_study(store, "s", "max", resume=False, labels={}), "s", seed=0, folds=2)
    search.set_search_properties("objective", "max", {"a": tune.choice([1, 2])})
    search.suggest("ok"), search.suggest("crashed")
    search.on_trial_result("ok", result(1, 0.9))
    search.on_trial_complete("ok", result(2, 0.8))
    search.on_trial_result("crashed", result(1, 0.99))
    search.on_trial_complete("crashed", None, error=True)
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{store.root}/optuna.db")
    ok, crashed = study.trials
    assert (ok.state, ok.value, ok.intermediate_values) == (TrialState.COMPLETE, 0.8,
                                                            {1: 0.9, 2: 0.8})
    assert crashed.state == TrialState.FAIL
