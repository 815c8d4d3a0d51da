"""A sweep planned once (sweeps/engine/plan/planning.py): every configuration validated in the driver,
the workers run the planned configurations as they are, each Ray Tune trial's config shows the
hyper-parameters of its configurations, trial ids stay those existing sweeps resume with, and
SweepResult.best() ranks the configurations by their full CV."""

import json
import pickle
import sys
from pathlib import Path

import pandas as pd
import pytest

from sbfn_dist.errors import SbfnError
from sbfn_dist.settings import config as config_module
from sweeps import Sweep
from sweeps.api import SweepResult
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.planning import plan_sweep, points_of
from sweeps.engine.run import trainable, trial
from tests.sweep_helpers import a_ray

pytestmark = pytest.mark.timeout(600)

# 120 rows of bundled diabetes, 2 folds, 1 epoch: 4 ensembles, 2 M = 1 references, 1 competitor;
# one trial at a time (tests/sweep_helpers.py, ONE_AT_A_TIME): the ensembles and references in
# one pack.
TINY = {"name": "plan", "dataset": "diabetes", "folds": 2,
        "axes": {"n_members": [2, 3], "epsilon": [0.0, 0.35]},
        "settings": {"n_samples": 120, "epochs": 1, "combiners": ["sbfn_ls", "arithmetic"],
                     "lambda2": [0, 3]},
        "competitors": ["ridge"], "mlflow": False,
        "resources": {"num_cpus": 2, "max_concurrent": 1}}
# The demo grid's trial ids as sweeps planned them before plans were shared (issue 22): the
# parts of an existing sweep are found again by these on --resume.
DEMO_IDS = ["M1_eps0_reference_s0_52b88539", "M1_eps0_reference_lr0.003_s0_b225bd61",
            "svm_rbf_competitors_s0_9224a649", "random_forest_competitors_s0_6faa4f46",
            "gradient_boosting_competitors_s0_5311e622", "M10_eps0_s0_7d0d7327",
            "M10_eps0.35_s0_8ca19b90", "M5_eps0_s0_c1e60917", "M5_eps0.35_s0_980a3139",
            "M2_eps0_s0_5cf2d4d1", "M2_eps0.35_s0_c395f40f"]


def tiny(tmp_path, **changes) -> Sweep:
    return Sweep.from_dict({**TINY, "storage": str(tmp_path / "results"), **changes})


@pytest.fixture
def validations(monkeypatch) -> list:
    """Each validation of a configuration (what TrialConfig.from_dict runs), by its trial_id."""
    calls: list = []
    real = config_module.resolve

    def counted(config, optional=frozenset()):
        calls.append(config.get("trial_id"))
        return real(config, optional)
    monkeypatch.setattr(config_module, "resolve", counted)
    return calls


def ensembles(planned) -> list[int]:
    return [i for i, c in enumerate(planned.configs) if c["extra"]["role"] == "ensemble"]


# ------------------------------------------------------------------ planned once, trusted after
def test_each_configuration_is_validated_once_when_a_sweep_is_planned(tmp_path, validations):
    from sweeps.engine.checks import _check_data
    sweep = tiny(tmp_path)
    validations.clear()           # making the Sweep checked its definition
    planned = plan_sweep(sweep.spec, sweep.options)
    assert len(planned.configs) == 4 + 2 + 1
    assert len(validations) == len(planned.configs)
    validations.clear()
    _check_data(planned.configs, sweep.options)     # every configuration's folds, made once
    assert validations == []


def test_a_worker_runs_its_planned_configurations_without_validating_them(
        tmp_path, validations, monkeypatch):
    planned = plan_sweep(tiny(tmp_path).spec, tiny(tmp_path).options)
    shipped = pickle.loads(pickle.dumps(planned))       # as the object store hands it over
    pack = ensembles(planned)[:2]
    reports: list = []
    monkeypatch.setattr(trainable, "_restored_folds", set)       # no Tune session here
    monkeypatch.setattr(trainable, "_report", lambda metrics, done: reports.append(metrics))
    monkeypatch.setattr(trial, "_limit_device", lambda *a: None)   # this process's threads
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)     # set back afterwards
    store = ResultStore(str(tmp_path / "store"))
    store.create()
    validations.clear()
    trainable.sweep_trainable(planned.tune_config(pack), plan=shipped, results_uri=store.root,
                              objective="sbfn_ls")
    assert validations == []
    keys = [planned.configs[i]["trial_id"] for i in pack]
    assert [r["fold"] for r in reports] == [0, 1] and reports[-1]["trial_keys"] == keys
    table = store.read_parts()
    assert set(table["trial_id"]) == set(keys) and (table["status"] == "ok").all()
    by_key = table.drop_duplicates("trial_id").set_index("trial_id")
    assert [by_key.loc[k, "n_members"] for k in keys] == \
        [planned.configs[i]["n_members"] for i in pack]


def test_a_worker_unpacks_a_plan_once_however_many_trials_it_runs(tmp_path):
    sweep = tiny(tmp_path)
    blob = pickle.dumps(plan_sweep(sweep.spec, sweep.options))
    first = pickle.loads(blob)
    assert pickle.loads(blob) is first
    resumed = pickle.loads(pickle.dumps(plan_sweep(sweep.spec, sweep.options)))
    assert resumed is not first and resumed.configs == first.configs     # a new plan replaces it


def test_an_optuna_sample_and_an_older_sweeps_trial_find_their_planned_configurations(tmp_path):
    sweep = tiny(tmp_path)
    planned = plan_sweep(sweep.spec, sweep.options)
    point = next(p for p in planned.points if (p.get("n_members"), p.get("epsilon")) == (3, 0.35))
    [config] = planned.configs_of(point)
    assert config["trial_id"] == point["trial_id"] and config["n_members"] == 3
    sample = {"epsilon": 0.35, "seed": 0, "n_members": 3}        # Optuna's: no trial_id
    assert planned.configs_of(sample) == [config]
    older = {"trial": {"pack": [{"n_members": 3, "epsilon": 0.35, "seed": 0}]}}
    assert planned.configs_of(older) == [config]
    with pytest.raises(SbfnError, match="not in this sweep's plan"):
        planned.configs_of({"n_members": 4, "epsilon": 0.35, "seed": 0})


def test_trial_ids_are_those_existing_sweeps_were_started_with():
    planned = [c["trial_id"] for c in Sweep.builtin("regression", "diabetes", "demo").trials()]
    assert planned == DEMO_IDS


def test_optuna_cannot_sample_a_grid_of_one_trial_per_fold(tmp_path):
    with pytest.raises(SbfnError, match="per_fold"):
        tiny(tmp_path, per_fold=True, search="optuna")


# ------------------------------------------------------------------ SweepResult.best
def records(planned, rows: list[tuple]) -> pd.DataFrame:
    """Records (trial index, fold, model, setting, status, scores) of the planned configs."""
    out = []
    for i, fold, model, setting, status, scores in rows:
        config = planned.configs[i]
        out.append({"trial_id": config["trial_id"], "role": config["extra"]["role"],
                    "fold": fold, "model": model, "model_params": json.dumps(setting),
                    "status": status, **scores})
    return pd.DataFrame(out)


def full_cv(i: int, model: str, setting: dict, folds=(0, 1), status="ok", **scores) -> list:
    return [(i, k, model, setting, status, scores) for k in folds]


def test_best_is_the_objective_models_best_full_cv_mean(tmp_path):
    planned = plan_sweep(tiny(tmp_path).spec, tiny(tmp_path).options)
    a, b, c, d = ensembles(planned)
    reference = next(i for i, c in enumerate(planned.configs) if c["extra"]["role"] == "reference")
    competitor = next(i for i, c in enumerate(planned.configs)
                      if c["extra"]["role"] == "competitors")
    rows = [*full_cv(a, "sbfn_ls", {"lambda2": 0.0}, rmse=0.50, r2=0.60),
            *full_cv(a, "sbfn_ls", {"lambda2": 3.0}, rmse=0.45, r2=0.70),
            *full_cv(a, "arithmetic", {}, rmse=0.05, r2=0.99),      # not the objective
            (b, 0, "sbfn_ls", {"lambda2": 0.0}, "ok", {"rmse": 0.30, "r2": 0.95}),
            (b, 1, "sbfn_ls", {"lambda2": 0.0}, "diverged", {"rmse": float("nan")}),
            (c, 0, "sbfn_ls", {"lambda2": 0.0}, "ok", {"rmse": 0.20, "r2": 0.97}),   # stopped
            *full_cv(d, "sbfn_ls", {"lambda2": 0.0}, rmse=0.48, r2=0.90),
            *full_cv(reference, "sbfn_ls", {}, rmse=0.10, r2=0.98),
            *full_cv(competitor, "ridge", {}, rmse=0.01, r2=0.99)]
    result = SweepResult("x", records(planned, rows), None, plan=planned, objective="sbfn_ls",
                         task="regression")
    best = result.best()
    assert (best.trial_id, best.model, best.model_params) == \
        (planned.configs[a]["trial_id"], "sbfn_ls", {"lambda2": 3.0})
    assert best.settings == {"n_members": planned.configs[a]["n_members"],
                             "epsilon": planned.configs[a]["epsilon"], "seed": 0}
    assert best.metric == "rmse" and best.score == pytest.approx(0.45) and best.folds == 2
    assert best.scores == pytest.approx({"rmse": 0.45, "r2": 0.70})
    assert best.config == planned.configs[a]
    by_r2 = result.best("r2")                           # larger is better
    assert (by_r2.trial_id, by_r2.score) == (planned.configs[d]["trial_id"], pytest.approx(0.9))
    with pytest.raises(ValueError, match="did you mean 'rmse'"):
        result.best("rmse_")
    assert SweepResult("x", pd.DataFrame(), None, plan=planned, objective="sbfn_ls",
                       task="regression").best() is None


def test_best_of_a_classification_sweep_is_its_highest_accuracy(tmp_path):
    sweep = Sweep.from_dict({"dataset": "wine", "folds": 2, "axes": {"n_members": [2, 3]},
                             "competitors": [], "references": False, "mlflow": False,
                             "storage": str(tmp_path)})
    planned = plan_sweep(sweep.spec, sweep.options)
    low, high = ensembles(planned)
    rows = [*full_cv(low, "sbfn", {}, accuracy=0.80), *full_cv(high, "sbfn", {}, accuracy=0.90)]
    result = SweepResult("x", records(planned, rows), None, plan=planned, objective="sbfn",
                         task="classification")
    assert result.best().trial_id == planned.configs[high]["trial_id"]
    assert result.best().metric == "accuracy"


# ------------------------------------------------------------------ through Ray Tune
@pytest.fixture(scope="module")
def local_ray():
    with a_ray():       # the suite's Ray of this process (tests/sweep_helpers.py)
        yield


def test_each_tune_result_shows_its_configurations_hyper_parameters(tmp_path, local_ray):
    sweep = tiny(tmp_path)
    planned = plan_sweep(sweep.spec, sweep.options)
    result = sweep.run()
    grid = result.result_grid
    assert not grid.errors
    points = {p["trial_id"]: p for p in planned.points}
    shown = [p for r in grid for p in points_of(r.config)]
    assert sorted(p["trial_id"] for p in shown) == sorted(points)       # every one, once
    assert all(p == points[p["trial_id"]] for p in shown)
    alone = [r.config for r in grid if "pack" not in r.config]
    packs = [r.config["pack"] for r in grid if "pack" in r.config]
    assert alone and packs        # the competitor trains alone; the ensembles in packs
    ensemble = next(p for pack in packs for p in pack if "n_members" in p and "role" not in p)
    assert set(ensemble) == {"n_members", "epsilon", "seed", "trial_id"}
    frame = grid.get_dataframe()
    assert "config/trial_id" in frame and "config/pack" in frame

    # best(): the lowest full-CV sbfn_ls mean, as the trials' own running means say
    folds = {r.metrics["folds_planned"] for r in grid}
    means = {key: summary["rmse/sbfn_ls"] for r in grid
             for key, summary in r.metrics["configs"].items()
             if "rmse/sbfn_ls" in summary and summary["folds_done"] in folds
             and points[key].get("role") is None}
    best = result.best()
    assert best.trial_id == min(means, key=means.get)
    assert best.score == pytest.approx(means[best.trial_id], rel=1e-12)
    assert best.settings == {k: v for k, v in points[best.trial_id].items() if k != "trial_id"}

    # resumed: Tune's saved plan and searcher come back; nothing is planned anew or rerun
    again = sweep.resume()
    assert sorted(p["trial_id"] for r in again.result_grid for p in points_of(r.config)) == \
        sorted(points)
    pd.testing.assert_frame_equal(again.frame, result.frame)
    assert again.best() == best

    # Tune's state saved by an older version (its pickles name a module gone since): the
    # trials start again under a new state, every fold read back from its part
    parts = {p: p.stat().st_mtime_ns for p in Path(result.path, "parts").iterdir()}
    Path(result.path, "tune", "tuner.pkl").write_bytes(b"csweeps.runner\n_Shared\n.")
    older = sweep.resume()
    assert {p: p.stat().st_mtime_ns for p in Path(result.path, "parts").iterdir()} == parts
    pd.testing.assert_frame_equal(older.frame, result.frame)
    assert not older.result_grid.errors and older.best() == best


def test_an_optuna_trial_shows_its_sample_and_runs_a_planned_configuration(tmp_path, local_ray):
    sweep = tiny(tmp_path, search="optuna", num_samples=2, competitors=[])
    planned = {p["trial_id"]: p for p in plan_sweep(sweep.spec, sweep.options).points}
    result = sweep.run()
    for r in result.result_grid:
        [key] = r.metrics["trial_keys"]
        assert {k: v for k, v in planned[key].items() if k != "trial_id"} == r.config
    assert result.best() is None or result.best().trial_id in planned
