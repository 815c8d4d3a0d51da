"""Shared pieces of the sweep tests: tiny real sweeps and checks on what they leave behind."""

import contextlib
import socket

import pandas as pd

from sweeps import classification, regression
from sweeps.engine.plan.grid_trials import smoke
from sweeps.engine.sweep import run_sweep

# diabetes (bundled), 3 folds, 300 rows, 2 epochs: a real sweep in well under a minute.
TINY = ["--dataset", "diabetes", "--grid", "demo", "--smoke"]
# wine (bundled, 178 rows), 3 stratified folds, 10 epochs, stacked heads 20 epochs.
TINY_CLASSIFICATION = ["--dataset", "wine", "--grid", "demo", "--smoke"]
# One trial at a time (max_concurrent: 1 in a sweep file's resources), for a sweep whose checks
# do not depend on trials running together: a tiny sweep's trials are shorter than a trial
# worker's start (a process importing torch and scikit-learn, ~4 CPU-s), so a second worker
# costs CPU and saves no time (10 folds of LOGGED: 7.5 CPU-s one at a time, 14 with two
# workers, 8 s either way). Its packs then hold every packable configuration (one slot).
ONE_AT_A_TIME = ("--max-concurrent", "1")
# Two sweeps several test files read (conftest.py's shared_sweeps runs each once): the smoke
# grid with M = 2 (M=2 x eps in {0, 0.35}, the M = 1 reference, SVM-RBF) logged to its own
# sqlite MLflow store, and three Optuna samples of the smoke grid without competitors or MLflow;
# both one at a time.
LOGGED = ("--members", "2", *ONE_AT_A_TIME)
SEARCHED = ("--search", "optuna", "--num-samples", "3", "--no-mlflow", "--competitors", "none",
            *ONE_AT_A_TIME)


# The sweep tests that run in this process share one local Ray of 2 CPUs, the suite's Ray:
# started by the first that asks (a_ray), it stays up for the next test files. A Ray start and
# stop is ~7 CPU-s and ~7 s (its daemons: dashboard, agents, monitors, 2 prestarted workers), a
# tiny sweep's own work ~10 (docs/benchmarks.md §11.1). Its gcs address, once started. (Here, not
# in conftest.py, which pytest imports as a module of another name than tests.conftest.)
SUITE_RAY: dict = {}


def suite_ray_is_up() -> bool:
    import ray
    return ray.is_initialized() and \
        ray.get_runtime_context().gcs_address == SUITE_RAY.get("gcs_address")


@contextlib.contextmanager
def a_ray():
    """The suite's Ray (started here if this process has no Ray yet), for the block; a test
    file's own Ray if one is up (own_ray)."""
    import ray
    if not ray.is_initialized():
        started = ray.init(address="local", num_cpus=2, include_dashboard=False,
                           logging_level="ERROR")
        SUITE_RAY["gcs_address"] = started.address_info["gcs_address"]
    yield


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (a test's server binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_tiny(tmp_path, *extra, name="tiny", task="regression"):
    command, args = {"regression": (regression, TINY),
                     "classification": (classification, TINY_CLASSIFICATION)}[task]
    spec, _, opts = command.build(args + ["--storage", str(tmp_path), "--name", name, *extra])
    return run_sweep(smoke(spec), opts)


def config_keys(outcome) -> set:
    """The configuration keys the sweep's trials reported (a trial may train a pack of them)."""
    return {k for t in outcome.trials for k in t["trial_keys"]}


def results(root) -> pd.DataFrame:
    return pd.read_parquet(f"{root}/results.parquet")


def assert_each_fold_once(table: pd.DataFrame, trial_ids, folds) -> None:
    """Every trial has every fold, and no record appears twice."""
    ok = table[table["status"] != "failed"]
    assert set(ok["trial_id"]) == set(trial_ids)
    assert not ok.duplicated(["trial_id", "fold", "model", "model_params"]).any()
    per_trial = ok.groupby("trial_id")["fold"].apply(lambda f: sorted(set(f)))
    assert all(f == list(folds) for f in per_trial)


def mlflow_runs(tracking_uri: str, experiment: str):
    """The configurations' runs (the sweep's own parent run left out)."""
    from mlflow import MlflowClient
    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    return client, [r for r in runs if r.data.tags.get("role") != "sweep"]
