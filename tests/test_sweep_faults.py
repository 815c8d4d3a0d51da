"""Sweeps survive lost nodes and a killed driver, without duplicate or lost records."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.sweep_helpers import (TINY, assert_each_fold_once, config_keys, mlflow_runs, results,
                                 run_tiny)

pytestmark = pytest.mark.timeout(900)


def wait_for_parts(root: Path, n: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while len(list((root / "parts").glob("*.parquet"))) < n:
        assert time.monotonic() < deadline, f"fewer than {n} parts after {timeout} s"
        time.sleep(0.2)


def test_a_worker_node_removed_mid_sweep_loses_no_trial_and_duplicates_none(tmp_path):
    import ray
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR")
    removed = threading.Event()

    def remove_one_node():
        wait_for_parts(tmp_path / "faults", 2)
        cluster.remove_node(nodes[0])
        removed.set()

    threading.Thread(target=remove_one_node, daemon=True).start()
    try:
        outcome = run_tiny(tmp_path, "--no-mlflow", name="faults")
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert removed.is_set()
    keys = config_keys(outcome)
    assert len(keys) == 6
    assert_each_fold_once(results(outcome.root), keys, range(3))


def sweep_command(storage: Path, *extra) -> list[str]:
    return [sys.executable, "-m", "sweeps.regression", *TINY, "--storage", str(storage),
            "--name", "killed", "--num-cpus", "2", *extra]


def test_a_killed_driver_resumes_without_rerunning_finished_folds(tmp_path):
    root = tmp_path / "killed"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    driver = subprocess.Popen(sweep_command(tmp_path), env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_parts(root, 5)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)   # the driver and the Ray it started
        driver.wait()
    before = {p.name: p.stat().st_mtime_ns for p in (root / "parts").glob("*.parquet")}
    assert 5 <= len(before) < 18

    done = subprocess.run(sweep_command(tmp_path, "--resume"), env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    after = {p.name: p.stat().st_mtime_ns for p in (root / "parts").glob("*.parquet")}
    assert {k: after[k] for k in before} == before          # no finished fold was recomputed
    table = results(root)
    keys = set(table["trial_id"])
    assert len(keys) == 6 and len(after) == 6 * 3
    assert_each_fold_once(table, keys, range(3))
    _, runs = mlflow_runs(f"sqlite:///{root}/mlflow.db", "killed")
    assert sorted(r.data.tags["trial_id"] for r in runs) == sorted(keys)   # one run per trial
    assert all(r.info.status == "FINISHED" for r in runs)
    # The resumed progress line counts the folds finished before the kill too.
    progress = [line for line in done.stdout.splitlines() if "| folds " in line]
    assert progress and "folds 18/18" in progress[-1], progress[-3:]
