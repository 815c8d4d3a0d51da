"""MLflow as its users know it: a parent run per sweep with the configurations nested, per-fold
metrics as steps, the README's UI instructions followed in a real `mlflow ui` and headless
Chromium; and a tracking server killed mid-sweep costs the sweep nothing but the logs, which
`python -m sweeps.relog` writes later."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pandas as pd
import pytest

from sweeps.engine.common.next_steps import python_module
from sweeps.engine.common.tracking_uri import artifacts_beside   # not ./mlruns
from sweeps.relog import relog
from sweeps.tools import mlflow_server
from tests.browser import chromium
from tests.sweep_helpers import (LOGGED, ONE_AT_A_TIME, a_ray, assert_each_fold_once, config_keys,
                                 free_port, mlflow_runs, results, run_tiny)

pytestmark = pytest.mark.timeout(900)
README = Path(__file__).resolve().parents[1] / "README.md"
TINY_MLFLOW = LOGGED      # M=2 x eps in {0, 0.35}, the M = 1 reference, SVM-RBF


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with a_ray():
        yield


@pytest.fixture(scope="module")
def sweep(shared_sweeps):
    """A tiny sweep (M = 2) logged to its default sqlite store, and what it printed; one that
    test_sweep_run reads too (conftest.py)."""
    _, outcome, printed = shared_sweeps(*LOGGED)
    return outcome, printed


def cv_means(table: pd.DataFrame, model: str) -> pd.Series:
    """Each configuration's CV mean RMSE of `model`'s best setting, from the records alone."""
    rows = table[(table["status"] == "ok") & (table["model"] == model)]
    return rows.groupby(["trial_id", "model_params"])["rmse"].mean().groupby("trial_id").min()


def test_the_sweep_is_a_parent_run_with_its_configurations_nested(sweep):
    outcome, printed = sweep
    assert "did not reach" not in printed and "logging failed" not in printed, printed
    client, children = mlflow_runs(outcome.tracking_uri, "tiny")
    experiment = client.get_experiment_by_name("tiny")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    parents = client.search_runs([experiment.experiment_id], "tags.role = 'sweep'")
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.run_name == "tiny" and parent.info.status == "FINISHED"
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    assert sorted(c.data.tags["trial_id"] for c in children) == sorted(config_keys(outcome))
    params = parent.data.params
    assert (params["grid"], params["dataset"], params["configurations"]) == ("demo", "diabetes", "4")
    spec = json.loads((Path(outcome.root) / "sweep.json").read_text())
    assert params["command"] == spec["command"] and params["folds"] == "3"

    table = results(outcome.root)     # the parent's summary, against the records
    for model in ("sbfn_ls", "svm_rbf"):
        assert parent.data.metrics[f"rmse/{model}"] == pytest.approx(cv_means(table, model).min())
    assert parent.data.metrics["folds_done"] == 4 * 3
    assert parent.data.metrics["configurations_failed"] == 0


def test_each_fold_is_a_step_of_its_own_scores_and_of_the_running_mean(sweep):
    """A model's score at its best λ2: `rmse/sbfn_ls` the running CV mean (step: folds done),
    `rmse/sbfn_ls/by_fold` each fold's own (step: the fold)."""
    outcome, _ = sweep
    client, children = mlflow_runs(outcome.tracking_uri, "tiny")
    table = results(outcome.root)
    run = next(r for r in children if r.data.tags["role"] == "ensemble")
    mine = table[(table["trial_id"] == run.data.tags["trial_id"]) & (table["model"] == "sbfn_ls")]
    by_fold = mine.pivot_table(index="fold", columns="lambda2", values="rmse")   # fold x λ2
    steps, values = history(client, run, "rmse/sbfn_ls/by_fold")
    assert steps == [0, 1, 2] and values == pytest.approx(list(by_fold.min(axis=1)))
    steps, values = history(client, run, "rmse/sbfn_ls")
    assert steps == [1, 2, 3]                     # folds done: the CV mean after 1, 2, 3 folds
    assert values == pytest.approx(list(by_fold.expanding().mean().min(axis=1)))


def history(client, run, metric: str) -> tuple[list, list]:
    points = sorted(client.get_metric_history(run.info.run_id, metric), key=lambda m: m.step)
    return [m.step for m in points], [m.value for m in points]


def test_the_printed_ui_command_is_the_mlflow_beside_this_interpreter(sweep):
    """Pasted as printed, it runs this environment's mlflow on the sweep's store."""
    import shlex
    outcome, printed = sweep
    line = next(l for l in printed.splitlines() if "open the UI:" in l)
    mlflow, *args = shlex.split(line.split("open the UI:", 1)[1])
    assert os.path.samefile(mlflow, Path(sys.executable).parent / "mlflow")
    assert args == ["ui", "--backend-store-uri", outcome.tracking_uri, "--host", "127.0.0.1",
                    "--port", "5000"]


# --- the README's instructions, followed in a real MLflow UI ----------------------------------
def readme_ui_steps() -> dict:
    """The README's MLflow lines: the `mlflow ui` command, the page, the filter and the sort."""
    text = README.read_text()
    found = {key: re.search(pattern, text) for key, pattern in {
        "command": r"`(\.venv/bin/mlflow ui [^`]+)`", "page": r"`(http://127\.0\.0\.1:5000/#[^`]+)`",
        "filter": r"filter `([^`]+)`", "sort": r"sort by `([^`]+)`"}.items()}
    missing = [key for key, match in found.items() if not match]
    assert not missing, f"README.md's MLflow instructions lack: {missing}"
    return {key: match.group(1) for key, match in found.items()}


@pytest.fixture(scope="module")
def browser() -> str:
    """Asked before mlflow_ui, so a machine without a browser skips before the UI starts."""
    return chromium()


@pytest.fixture(scope="module")
def mlflow_ui(sweep, tmp_path_factory):
    """The README's `mlflow ui` command, on the sweep's store and a free port."""
    outcome, _ = sweep
    port = free_port()
    command = readme_ui_steps()["command"].replace(".venv/bin/mlflow", f"{Path(sys.executable).parent}/mlflow") \
        .replace("$PWD/results/<name>", outcome.root).replace("5000", str(port))
    log = tmp_path_factory.mktemp("ui") / "ui.log"
    # The README's command as written, in an environment that spares what two page loads never
    # use: MLflow's job execution (off as the project's own server runs it) and three of the
    # four web workers it starts by default (MLFLOW_WORKERS is --workers); they were most of
    # the UI's ~60 CPU-s and of its start (72 s once on 2 busy cores).
    env = {**os.environ, **mlflow_server.NO_JOB_EXECUTION, "MLFLOW_WORKERS": "1"}
    with open(log, "wb") as f:
        server = subprocess.Popen(command.split(), stdout=f, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 300     # a loaded machine's start
        while not mlflow_server.healthy(port):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def page_text(browser: str, url: str, profile: Path) -> str:
    """The page's visible text once its scripts and requests are done, in headless Chromium."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--virtual-time-budget=20000", "--dump-dom", url]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    dom = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", dom, flags=re.S)
    return re.sub(r"\s*(<[^>]+>\s*)+", " | ", dom)


def test_the_printed_link_opens_the_runs_table_with_the_sweeps_run(browser, sweep, mlflow_ui,
                                                                    tmp_path):
    outcome, printed = sweep
    link = re.search(r"then (http://127\.0\.0\.1:5000/#/\S+)", printed).group(1)
    assert link == readme_ui_steps()["page"]        # experiment 1: the sweep's own store
    text = page_text(browser, link.replace("http://127.0.0.1:5000", mlflow_ui), tmp_path / "p1")
    assert "Run Name" in text and "| tiny |" in text     # the runs table, the sweep's run
    assert "| 5 | matching runs" in text                  # the sweep's run and its 4 nested


# The runs table's own columns MLflow 3.17 does not show until asked (User, Version, Description),
# which its "Show more columns (N total)" counts with the runs' params, metrics and tags.
HIDDEN_ATTRIBUTES = 3


def test_the_readme_filter_and_sort_list_the_ensemble_runs_best_first(browser, sweep, mlflow_ui,
                                                                       tmp_path):
    outcome, _ = sweep
    steps = readme_ui_steps()
    metric = steps["sort"]
    query = urllib.parse.urlencode({"searchFilter": steps["filter"], "orderByAsc": "true",
                                    "orderByKey": f"metrics.`{metric}`"}, quote_via=urllib.parse.quote)
    page = steps["page"].replace("http://127.0.0.1:5000", mlflow_ui)
    text = page_text(browser, f"{page}&{query}", tmp_path / "p2")
    best_first = cv_means(results(outcome.root), metric.split("/")[1]).sort_values()
    shown = re.findall(r"\| (M\S+_eps\S+) \|", text)
    assert shown == list(best_first.index), text[-3000:]
    assert f"| Sort: {metric} |" in text
    # The columns the UI offers for these runs are the few a comparison reads (the settings the
    # sweep varies, each model's CV mean and folds, the runs' tags), not 99 of every setting
    # and every λ2 (issue 48): the count it shows is theirs.
    client, runs = mlflow_runs(outcome.tracking_uri, "tiny")
    ensembles = [r for r in runs if r.data.tags["role"] == "ensemble"]
    columns = {key for r in ensembles for key in (
        *(f"params.{k}" for k in r.data.params), *(f"metrics.{k}" for k in r.data.metrics),
        *(f"tags.{k}" for k in r.data.tags if not k.startswith("mlflow.")))}
    offered = int(re.search(r"Show more columns \((\d+) total\)", text).group(1))
    assert offered == len(columns) + HIDDEN_ATTRIBUTES and len(columns) <= 40, \
        (offered, sorted(columns))
    assert {"params.n_members", "params.epsilon", f"metrics.{metric}"} <= columns


# --- a tracking server killed mid-sweep -----------------------------------------------------------
def kill_when_logging(port: int, pid: int, killed: dict) -> None:
    """SIGKILL the server (its process group) once it holds a configuration's fold metrics."""
    from mlflow import MlflowClient
    client = MlflowClient(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            experiment = client.get_experiment_by_name("killed")
            if experiment and client.search_runs([experiment.experiment_id],
                                                 "metrics.folds_done >= 1", max_results=1):
                break
        except Exception:  # noqa: BLE001 - the sweep may not have created it yet
            pass
        time.sleep(0.5)
    os.killpg(pid, signal.SIGKILL)
    killed["at"] = time.monotonic()


# 10 folds instead of the smoke grid's 3: most of the sweep comes after the kill (the first
# result comes ~25 s in on 2 busy cores, mostly Ray starting its workers). One trial at a time,
# the baseline as the sweep it measures.
LONGER, FOLDS = (*TINY_MLFLOW, "--set", "folds=10", *ONE_AT_A_TIME), list(range(10))


def test_a_killed_tracking_server_costs_the_sweep_no_time_and_relog_fills_the_gaps(tmp_path,
                                                                                   capsys):
    baseline = run_tiny(tmp_path, *LONGER, "--no-mlflow", name="baseline").seconds
    port, store = free_port(), tmp_path / "server"
    pid = mlflow_server.start(store, str(store / "artifacts"), port=port, workers=1)
    killed: dict = {}
    threading.Thread(target=kill_when_logging, args=(port, pid, killed), daemon=True).start()
    capsys.readouterr()
    outcome = run_tiny(tmp_path, *LONGER, "--mlflow-uri", f"http://127.0.0.1:{port}",
                       name="killed")
    out = capsys.readouterr().out
    assert "at" in killed, out[-3000:]
    timing = (f"sweep {outcome.seconds:.1f} s with the server killed "
              f"{time.monotonic() - killed['at']:.1f} s before it returned; {baseline:.1f} s "
              "without MLflow")
    print(timing)
    assert_each_fold_once(results(outcome.root), config_keys(outcome), FOLDS)
    assert outcome.seconds < baseline + 60, timing      # not minutes of retries
    assert "logging operations did not reach" in out and "the sweep's run:" in out, out[-3000:]
    assert f"\n    {python_module('sweeps.relog', outcome.root)}\n" in out    # runs as pasted
    assert (Path(outcome.root) / "mlflow-unlogged.json").exists()

    mlflow_server.start(store, str(store / "artifacts"), port=port, workers=1)
    try:
        assert relog(outcome.root) == 0
        client, runs = mlflow_runs(f"http://127.0.0.1:{port}", "killed")
        assert sorted(r.data.tags["trial_id"] for r in runs) == sorted(config_keys(outcome))
        assert all(r.info.status == "FINISHED" and r.data.metrics["folds_done"] == len(FOLDS)
                   for r in runs)
        for run in runs:      # every fold's own scores, at its step
            key = next(k for k in run.data.metrics if k.endswith("/by_fold"))
            assert history(client, run, key)[0] == FOLDS, (run.info.run_name, key)
        assert not (Path(outcome.root) / "mlflow-unlogged.json").exists()
    finally:
        mlflow_server.stop(store)


def test_the_parent_run_ranks_an_image_configuration_by_its_mean_over_its_splits(tmp_path):
    """Each split is a trial of its own: the parent's best accuracy is the best configuration's
    mean over its splits (0.65), not the luckiest split's 0.8."""
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.tracking.mlflow_runs import SweepTracker
    store = ResultStore(str(tmp_path / "results"))
    store.create()
    for key, fold, accuracy in (("A0", 0, 0.5), ("A1", 1, 0.8), ("B0", 0, 0.6), ("B1", 1, 0.6)):
        store.write_part(key, fold, [{"trial_id": key, "fold": fold, "task": "classification",
                                      "model": "sbfn", "model_params": "{}", "status": "ok",
                                      "role": "ensemble", "accuracy": accuracy}])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = SweepTracker(uri, {"name": "s", "grid": "g", "dataset": "d",
                                 "task": "classification"}, store, artifacts_beside(uri))
    tracker.apply({"op": "sweep"})
    tracker.apply({"op": "end", "groups": {"A0": "A0", "A1": "A0", "B0": "B0", "B1": "B0"}})
    metrics = tracker.client.get_run(tracker.parent_id).data.metrics
    assert metrics["accuracy/sbfn"] == pytest.approx(0.65)
    assert (metrics["configurations"], metrics["folds_done"]) == (2, 4)


def test_a_fold_reported_again_is_logged_once_in_this_run_and_after_a_resume(tmp_path):
    """A trial run again (its node lost, the sweep resumed) reports the folds it reads back
    from the store: each fold stays one point of its run's history, whether the same driver
    logged it (retry) or a driver before it did (resume: a new tracker finds the run again).
    Seen on separate hosts (tests/test_cluster_hosts.py): fold 0 logged twice after a retry."""
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.tracking.mlflow_runs import SweepTracker
    store = ResultStore(str(tmp_path / "results"))
    store.create()
    config = {"trial_id": "A", "task": "regression", "extra": {"role": "ensemble"}}
    for fold in (0, 1):
        store.write_part("A", fold, [{"trial_id": "A", "fold": fold, "task": "regression",
                                      "model": "sbfn_ls", "model_params": "{}", "status": "ok",
                                      "role": "ensemble", "rmse": 1.0 + fold}])
    sweep = {"name": "s", "grid": "g", "dataset": "d", "task": "regression"}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"

    def report(tracker, fold):      # each report at a time of its own, as Tune's results come
        report.stamp += 1000
        tracker.apply({"op": "fold", "config": config, "fold": fold, "stamp": report.stamp,
                       "summary": {"folds_done": fold + 1, "rmse/sbfn_ls": 1.0}})
    report.stamp = 0

    first = SweepTracker(uri, sweep, store, artifacts_beside(uri))
    report(first, 0)
    report(first, 0)                     # the retry reads fold 0 back and reports it
    again = SweepTracker(uri, sweep, store, artifacts_beside(uri))   # a resumed sweep's driver
    report(again, 0)
    report(again, 1)
    run = again.client.get_run(again.run_id(config))
    assert history(again.client, run, "rmse/sbfn_ls/by_fold") == ([0, 1], [1.0, 2.0])
    assert history(again.client, run, "folds_done")[0] == [1, 2]


def test_a_run_a_killed_driver_left_open_is_ended_by_the_resume_that_skips_its_trial(tmp_path):
    """Tune saves a trial as done before the logging thread has logged its last fold and end
    (or any of it: the thread lags the trials); a driver killed in between left the run RUNNING
    or unopened, and a resume skips the trial (Tune's saved state), so nothing else would log it
    (test_sweep_faults saw both, once in CI). The resume's end logs the stored folds each run
    lacks, opening a missing one, and ends it; a run already ended stays as it is."""
    from ray.tune.experiment import Trial

    from sbfn_dist.settings.config import TrialConfig
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.tracking.mlflow_logger import MLflowSweepLogger
    from sweeps.engine.tracking.mlflow_runs import SweepTracker
    store = ResultStore(str(tmp_path / "results"))
    store.create()
    configs = {key: {"trial_id": key, "task": "regression", "split": "kfold", "folds": 3,
                     "fold": None, "extra": {"role": "ensemble"}} for key in ("open", "ended", "unopened")}
    for key in configs:
        for fold in range(3):
            store.write_part(key, fold, [{"trial_id": key, "fold": fold, "task": "regression",
                                          "model": "sbfn_ls", "model_params": "{}",
                                          "status": "ok", "role": "ensemble",
                                          "rmse": 1.0 + fold}])
    sweep = {"name": "s", "grid": "g", "dataset": "d", "task": "regression"}
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    killed = SweepTracker(uri, sweep, store, artifacts_beside(uri))   # the killed driver
    for key, config in configs.items():
        for fold in (0, 1) if key != "unopened" else ():
            killed.apply({"op": "fold", "config": config, "fold": fold, "stamp": 1000 + fold,
                          "summary": {"folds_done": fold + 1, "rmse/sbfn_ls": 1.0 + fold / 2}})
    killed.apply({"op": "finish", "config": configs["ended"], "status": "FINISHED"})
    trials = []
    for key in configs:                                    # as the resume's Tune restored them
        trial = Trial("sweep_trainable", config={"key": key}, stub=True)
        trial.set_status(Trial.TERMINATED)
        trials.append(trial)
    logger = MLflowSweepLogger(uri, sweep, lambda params: [TrialConfig(configs[params["key"]])],
                               store, artifacts_beside(uri))
    logger.on_experiment_end(trials=trials)
    client = killed.client
    _, runs = mlflow_runs(uri, "s")
    assert sorted(r.data.tags["trial_id"] for r in runs) == sorted(configs)   # one run a trial
    by_key = {r.data.tags["trial_id"]: client.get_run(r.info.run_id) for r in runs}
    assert all(run.info.status == "FINISHED" for run in by_key.values())
    for key in ("open", "unopened"):
        run = by_key[key]
        assert history(client, run, "rmse/sbfn_ls/by_fold") == ([0, 1, 2], [1.0, 2.0, 3.0])
        assert history(client, run, "rmse/sbfn_ls")[0] == [1, 2, 3]    # running means: steps
        assert history(client, run, "rmse/sbfn_ls")[1][-1] == pytest.approx(2.0, rel=1e-12)
        assert "records.parquet" in {f.path for f in client.list_artifacts(run.info.run_id)}
    ended = by_key["ended"]
    assert history(client, ended, "rmse/sbfn_ls/by_fold")[0] == [0, 1]   # left as it was


def test_a_tracking_server_that_is_down_is_refused_before_the_sweep_is_recorded(tmp_path,
                                                                                capsys):
    """The refusal came after sweep.json was written: the rerun with the server fixed, or with
    --no-mlflow, was refused as "already holds the sweep", though nothing had run."""
    from sweeps.regression import main as regression
    argv = ["--dataset", "diabetes", "--grid", "demo", "--smoke", "--storage", str(tmp_path),
            "--name", "down", "--mlflow-uri", f"http://127.0.0.1:{free_port()}"]
    with a_ray():
        assert regression(argv) == 2
    err = capsys.readouterr().err
    assert "error: cannot use the MLflow tracking store 'http://127.0.0.1:" in err
    assert "Connection refused" in err and "Traceback" not in err
    assert not (tmp_path / "down" / "sweep.json").exists()
    assert regression([*argv[:-2], "--no-mlflow", "--dry-run"]) == 0    # a new sweep, not held


def test_a_second_sweep_of_a_name_in_one_store_is_refused_not_nested(shared_sweeps, tmp_path,
                                                                     capsys):
    """Two storages, one tracking store, one sweep name (the default DATASET-GRID makes that
    easy): the second's runs nested under the first's sweep run, whose summary it overwrote.
    Refused before the second is recorded; the first's runs untouched."""
    from sweeps.regression import main as regression
    _, outcome, _ = shared_sweeps(*LOGGED)                 # "tiny", logged to its own store
    _, before = mlflow_runs(outcome.tracking_uri, "tiny")
    with a_ray():
        code = regression(["--dataset", "diabetes", "--grid", "demo", "--smoke", "--name",
                           "tiny", "--storage", str(tmp_path), "--mlflow-uri",
                           outcome.tracking_uri, *ONE_AT_A_TIME])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert (f"the MLflow store '{outcome.tracking_uri}' holds another sweep named 'tiny' (its "
            f"records: {outcome.root}/results.parquet): pass --name") in err
    assert not (tmp_path / "tiny" / "sweep.json").exists()
    _, after = mlflow_runs(outcome.tracking_uri, "tiny")
    assert [r.info.run_id for r in after] == [r.info.run_id for r in before]


def test_relog_to_a_store_that_is_down_names_its_own_fix(tmp_path, capsys):
    """It told the user to pass --no-mlflow, a flag relog does not have."""
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.tracking.mlflow_runs import Ledger
    from sweeps.relog import main as relog_main
    (tmp_path / "s").mkdir()
    store = ResultStore(str(tmp_path / "s"))
    store.write_spec({"name": "s", "trial_ids": []})
    down = f"http://127.0.0.1:{free_port()}"
    Ledger(store).write([{"op": "sweep"}], down, {"name": "s", "grid": "demo",
                                                  "dataset": "diabetes", "task": "regression"},
                        None, "ConnectionError")
    assert relog_main([str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot use the MLflow tracking store '{down}'")
    assert err.rstrip().endswith("or run this again once the tracking store answers")
    assert "--no-mlflow" not in err
