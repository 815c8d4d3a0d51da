"""What a configuration's MLflow run carries (issue 48, "What the newcomer tripped on" 2): as
params the settings the sweep's configurations differ in, as metrics each model's CV mean and
its folds' scores under a name that starts with it, so that the UI, which lists a run's metrics
sorted and offers those holding what was typed, offers the CV mean first. The README's recipe
in a real MLflow UI and Chromium: tests/test_sweep_mlflow.py."""

import json

import pytest

from sweeps.engine.common.store import ResultStore
from sweeps.engine.common.tracking_uri import artifacts_beside
from sweeps.engine.tracking.mlflow_runs import SweepTracker

CONFIGS = [{"trial_id": f"M{m}_eps{e}", "task": "regression", "dataset": "diabetes",
            "n_members": m, "epsilon": e, "epochs": 1, "lr": 0.03, "folds": 2, "seed": 0,
            "combiners": ["sbfn_ls", "sbfn_ls_linear"], "extra": {"role": "ensemble"}}
           for m, e in ((2, 0.0), (3, 0.35))]
SETTINGS = ('{"lambda2": 0.0}', '{"lambda2": 3.0}')


def records(config: dict, fold: int) -> list:
    return [{"trial_id": config["trial_id"], "fold": fold, "task": "regression", "model": model,
             "model_params": params, "status": "ok", "role": "ensemble",
             "rmse": 50.0 + 10 * fold + k + (model == "sbfn_ls")}
            for model in config["combiners"] for k, params in enumerate(SETTINGS)]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """Both configurations' runs after their two folds, as the sweep's callback logs them."""
    from sweeps.engine.run.fold_means import summarise
    home = tmp_path_factory.mktemp("mlflow")
    store = ResultStore(str(home / "results"))
    store.create()
    sweep = {"name": "s", "grid": "demo", "dataset": "diabetes", "task": "regression",
             "compared": ["n_members", "epsilon"]}
    uri = f"sqlite:///{home / 'mlflow.db'}"
    tracker = SweepTracker(uri, sweep, store, artifacts_beside(uri))    # not ./mlruns
    tracker.apply({"op": "sweep"})
    for config in CONFIGS:
        done = []
        for fold in (0, 1):
            store.write_part(config["trial_id"], fold, records(config, fold))
            done += records(config, fold)
            tracker.apply({"op": "fold", "config": config, "fold": fold, "stamp": 1000 * fold,
                           "summary": summarise(done, "sbfn_ls_linear")})
    return tracker, {c["trial_id"]: tracker.client.get_run(tracker.run_id(c)) for c in CONFIGS}


def test_a_configuration_s_params_are_the_settings_the_sweep_compares(logged):
    _, runs = logged
    for config in CONFIGS:
        assert runs[config["trial_id"]].data.params == {"n_members": str(config["n_members"]),
                                                        "epsilon": str(config["epsilon"])}


def test_its_full_config_is_an_artifact_of_the_run(logged, tmp_path):
    tracker, runs = logged
    run = runs[CONFIGS[0]["trial_id"]]
    path = tracker.client.download_artifacts(run.info.run_id, "config.json", str(tmp_path))
    assert json.loads(open(path).read()) == CONFIGS[0]


def test_each_model_s_cv_mean_is_the_first_metric_holding_its_name(logged):
    """Every name that holds a configuration-level one starts with it: sorted, it comes first
    (`fold/rmse/sbfn_ls_linear` sorted before `rmse/sbfn_ls_linear`)."""
    _, runs = logged
    names = sorted(runs[CONFIGS[0]["trial_id"]].data.metrics)
    for model in ("sbfn_ls", "sbfn_ls_linear"):
        compared = f"rmse/{model}"
        assert [n for n in names if compared in n][0] == compared, names
        assert all(n.startswith(compared) for n in names if compared in n), names


def test_a_run_carries_one_cv_mean_and_one_per_fold_metric_per_model(logged):
    _, runs = logged
    assert sorted(runs[CONFIGS[0]["trial_id"]].data.metrics) == [
        "folds_done", "not_ok", "rmse/sbfn_ls", "rmse/sbfn_ls/by_fold", "rmse/sbfn_ls_linear",
        "rmse/sbfn_ls_linear/by_fold"]


def test_the_folds_scores_are_steps_of_one_metric_and_the_mean_its_last_value(logged):
    tracker, runs = logged
    run = runs[CONFIGS[0]["trial_id"]]
    per_fold = tracker.client.get_metric_history(run.info.run_id, "rmse/sbfn_ls_linear/by_fold")
    assert sorted((m.step, m.value) for m in per_fold) == [(0, 50.0), (1, 60.0)]
    assert run.data.metrics["rmse/sbfn_ls_linear"] == pytest.approx(55.0)   # best λ2: 0


def test_the_settings_compared_are_those_the_configurations_differ_in():
    from sweeps.engine.tracking.mlflow_runs import compared_settings
    reference = {**CONFIGS[0], "trial_id": "M1", "n_members": 1, "epsilon": 0.0, "lr": 0.003,
                 "combiners": ["arithmetic"], "extra": {"role": "reference"}}
    competitors = {"trial_id": "svm", "task": "regression", "dataset": "diabetes", "folds": 2,
                   "seed": 0, "combiners": [], "competitors": ["svm_rbf"],
                   "extra": {"role": "competitors"}}       # holds no member setting
    assert compared_settings([*CONFIGS, reference, competitors]) == ["n_members", "epsilon", "lr"]
