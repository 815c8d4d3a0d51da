"""How a sweep's driver schedules its trials and answers what happens around it: a local Ray of its
own whatever Ray left on the machine, SIGTERM handled as Ctrl-C, pack-mates that fail alone, and
every trial slot filled. Real sweeps on a local Ray (127.0.0.1); the trials' plug-in members
below are real scikit-learn estimators that wait for, or raise, what each test needs."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor

from sweeps import Sweep
from sweeps.engine.summary import failed_trials
from sweeps.engine.sweep import run_sweep
from tests.sweep_helpers import ONE_AT_A_TIME, TINY, results
from tests.sweep_helpers import free_port

pytestmark = [pytest.mark.own_ray, pytest.mark.timeout(600)]
WAIT_S = 300        # the longest a trial waits for another worker (a loaded 2-core machine)
HERE = "tests.test_sweep_scheduling"   # the plug-ins' import path, for the trials' workers


@pytest.fixture(autouse=True)
def own_ray():
    """Each test's sweep starts its own Ray (with the test's settings), stopped after; one an
    earlier test of this process left running is stopped first."""
    import ray
    ray.shutdown()
    yield
    ray.shutdown()


# ------------------------------------------------------------------ a local Ray of its own
@pytest.fixture
def ray_left_behind(monkeypatch):
    """Ray's temp folder as `ray start --head`, or a cluster stopped by a signal, leaves it: a
    ray_current_cluster file naming a cluster (here none answers). ray.init() without an
    address joins that cluster, and refuses num_cpus there. Yields the temp folder."""
    import ray
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")   # short: Ray's socket paths
    (Path(temp) / "ray").mkdir()
    (Path(temp) / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{free_port()}")
    monkeypatch.setenv("RAY_TMPDIR", temp)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    yield temp
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def callers_handlers():
    """SIGINT and SIGTERM handlers of the caller's own (a notebook's), put back after."""
    def mine(signum, frame):
        pass

    before = {s: signal.signal(s, mine) for s in (signal.SIGINT, signal.SIGTERM)}
    yield mine
    for sig, handler in before.items():
        signal.signal(sig, handler)


# ------------------------------------------------------------------ SIGTERM as Ctrl-C
def test_sigterm_stops_a_sweep_as_ctrl_c_does(tmp_path):
    """A scheduler's time limit, `timeout` or `kill`: Tune stops, the finished folds are in
    results.parquet, one line says how to resume, exit 130. Ray's own handler used to dump a
    C++ stack and abort (exit -6)."""
    root = tmp_path / "term"
    driver = subprocess.Popen(
        [sys.executable, "-m", "sweeps.regression", *TINY, "--storage", str(tmp_path), "--name",
         "term", "--num-cpus", "2", *ONE_AT_A_TIME, "--no-mlflow", "--set", "epochs=30"],
        env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + WAIT_S
        while not list((root / "parts").glob("*.parquet")):     # a trial has results
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
            time.sleep(0.1)
        driver.send_signal(signal.SIGTERM)                          # the driver alone
        out, err = driver.communicate(timeout=WAIT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):     # whatever of its session is left
            os.killpg(driver.pid, signal.SIGKILL)
    assert driver.returncode == 130, err[-3000:]
    assert "interrupted: finished folds are in results.parquet" in err and "--resume" in err
    assert "SIGTERM received" not in out + err and "Traceback" not in out + err
    parts = list((root / "parts").glob("*.parquet"))
    assert len(results(root)) == sum(len(pd.read_parquet(p)) for p in parts) > 0


# ------------------------------------------------------------------ pack-mates
class RaisesInFit(DummyRegressor):
    """A plug-in member whose fit always fails."""

    def fit(self, X, y, sample_weight=None):
        raise ValueError("this plug-in always fails")


def test_a_configuration_that_raises_fails_alone_in_its_pack(tmp_path, capsys):
    """Three plug-in configurations in one pack (one trial slot), one raising in fit: it is
    retried and recorded as failed; the other two keep every fold, as with --pack off, and a
    --resume retries only it."""
    sweep = Sweep.from_dict({
        "name": "mates", "dataset": "diabetes", "folds": 2, "references": False,
        "competitors": [], "storage": str(tmp_path), "mlflow": False,
        "axes": {"plugin_members": [["ridge"], ["knn"], [f"{HERE}.RaisesInFit"]]},
        "settings": {"n_samples": 80, "epochs": 1, "n_members": 2},
        "resources": {"num_cpus": 2, "max_concurrent": 1, "max_failures": 1}})
    outcome = run_sweep(sweep.spec, sweep.options)
    assert len(outcome.trials) == 1 and len(outcome.trials[0]["trial_keys"]) == 3   # one pack
    out = capsys.readouterr().out
    assert "failed, retrying it: ValueError: this plug-in always fails" in out
    assert "configurations 2/3 done, 0 running, 0 pending, 1 failed" in out
    # The summary's counts add up (the failed one has a row too: it was counted with results)
    assert "min: 2 configurations with results, 1 failed" in out
    table = results(outcome.root)
    failed = failed_trials(table)
    assert list(failed.values()) == ["ValueError: this plug-in always fails"]
    healthy = table[~table["trial_id"].isin(failed)]
    assert healthy["trial_id"].nunique() == 2 and set(healthy["status"]) == {"ok"}
    assert (healthy.groupby("trial_id")["fold"].nunique() == 2).all()

    folds = (tmp_path / "mates" / "parts").glob("*-f[0-9]*.parquet")
    parts = {p: p.stat().st_mtime_ns for p in folds}
    assert failed_trials(sweep.resume().frame) == failed
    assert {p: p.stat().st_mtime_ns for p in parts} == parts      # the two were read back
    assert "failed after its retries: ValueError: this plug-in" in capsys.readouterr().out


# ------------------------------------------------------------------ every slot filled
def worker_file():
    """(this Tune trial's id, this worker process's file in the sweep's workers/ folder, which
    lists the trials it ran), or None outside a Tune trial (the test's own run_trial)."""
    from ray import tune
    context = tune.get_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # outside a trial Tune warns and returns None
        trial, folder = context.get_trial_id(), context.get_trial_dir()
    if trial is None:
        return None
    workers = Path(folder).parents[1] / "workers"
    workers.mkdir(exist_ok=True)
    return trial, workers / str(os.getpid())


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} in {WAIT_S} s")
        time.sleep(0.05)


def workers_seen(mine: Path) -> int:
    return sum(1 for _ in mine.parent.iterdir())


class WaitsForAnotherWorker(DummyRegressor):
    """A plug-in member: in the second trial a worker process runs, fit waits until another
    worker has run a trial."""

    def fit(self, X, y, sample_weight=None):
        if found := worker_file():
            trial, mine = found
            ran = mine.read_text().split() if mine.exists() else []
            if trial not in ran:
                if ran:
                    wait_for(lambda: workers_seen(mine) >= 2, "no other worker ran a trial")
                mine.write_text(" ".join([*ran, trial]))
        return super().fit(X, y, sample_weight)


class WaitsForWorkers(DummyRegressor):
    """A plug-in member whose fit waits until WORKERS worker processes run trials of the sweep:
    that many trials at once, whatever the machine's pace (a pace of epochs to outlast the
    workers' start, a fast CPU beats)."""

    WORKERS: int

    def fit(self, X, y, sample_weight=None):
        if found := worker_file():
            found[1].touch()
            wait_for(lambda: workers_seen(found[1]) >= self.WORKERS,
                     f"fewer than {self.WORKERS} workers ran trials")
        return super().fit(X, y, sample_weight)


class WaitsForTwoWorkers(WaitsForWorkers):
    """tests/test_cluster_autoscaler.py's two trials at once, on two nodes."""

    WORKERS = 2


class WaitsForFourWorkers(WaitsForWorkers):
    """tests/test_sweep_gpu.py's four quarter-GPU trials at once."""

    WORKERS = 4


def test_a_local_sweep_starts_its_own_ray_and_fills_every_slot(tmp_path, monkeypatch,
                                                               ray_left_behind, callers_handlers):
    """Whatever Ray left behind, a sweep without --address starts its own, on 127.0.0.1, and
    gives the caller's signal handlers back when it ends.

    Two slots, four one-configuration trials. Tune starts a worker for each of the first
    two; when the first ends before the second's worker is up, FIFO gave it the second's trial
    and cancelled that worker's start, and while trials are shorter than a worker's start one
    trial ran at a time. Here the first trial's folds are in the store already (instant), Ray
    starts one worker process at a time (the second comes up a start later), and a worker's
    second trial waits until another worker ran one: the first two trials must run on two
    workers, two trials at once."""
    from sbfn_dist.experiment import run_trial
    from sweeps.engine.plan.planning import result_store
    from sweeps.engine.plan.planning import folds_of
    sweep = Sweep.from_dict({
        "name": "slots", "dataset": "diabetes", "folds": 2, "references": False,
        "competitors": [], "storage": str(tmp_path), "mlflow": False,
        "axes": {"epsilon": [0.0, 0.1, 0.2, 0.3]},
        "settings": {"n_samples": 60, "epochs": 1, "n_members": 2,
                     "plugin_members": [f"{HERE}.WaitsForAnotherWorker"]},
        "resources": {"num_cpus": 2, "pack": "off", "max_failures": 0}})
    ready = sweep.trials()[0]                   # Tune's first trial (the plan's order)
    store = result_store(sweep.options)
    store.create()
    for fold in folds_of(ready):
        store.write_part(ready["trial_id"], fold, run_trial({**ready, "fold": fold}))
    for setting, value in {"worker_maximum_startup_concurrency": "1", "enable_worker_prestart":
                           "0", "prestart_worker_first_driver": "0"}.items():
        monkeypatch.setenv(f"RAY_{setting}", value)      # read by the Ray the sweep starts
    with Writes(tmp_path / "slots" / "results.parquet") as writes:
        outcome = run_sweep(sweep.spec, sweep.options)
    import ray
    assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")
    assert ray._private.worker.global_worker.node.get_session_dir_path().startswith(
        ray_left_behind)
    assert {signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} == {callers_handlers}
    # Tune's own trial ids are random (a searcher hands Tune the plan): the plan's ids say which
    # configurations Tune ran first.
    worker = {r.config["trial_id"]: r.metrics["pid"] for r in outcome.result_grid}
    first, second = (config["trial_id"] for config in sweep.trials()[:2])
    assert worker[first] != worker[second], worker
    assert outcome.max_running == 2
    # Bookkeeping off the scheduler's path: results.parquet is merged once, at the end (it was
    # rewritten from every part at each trial's end, inside Tune's loop).
    assert len(writes.seen) == 1 and len(results(outcome.root)) == len(store.read_parts())


class Writes(threading.Thread):
    """While the block runs (and once after): each modification time `path` was seen with."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.seen, self.done = path, set(), threading.Event()

    def run(self):
        while not self.done.wait(0.02):
            self.look()

    def look(self):
        with contextlib.suppress(FileNotFoundError):
            self.seen.add(self.path.stat().st_mtime_ns)

    def __enter__(self) -> "Writes":
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()
        self.look()
