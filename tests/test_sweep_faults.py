"""Sweeps survive lost nodes and a killed driver, without duplicate or lost records."""

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sweeps.engine.run.claim import ray_processes
from tests.sweep_helpers import (ONE_AT_A_TIME, TINY, assert_each_fold_once, config_keys,
                                 mlflow_runs, results, run_tiny)

pytestmark = [pytest.mark.own_ray, pytest.mark.timeout(900)]


def wait_for_parts(root: Path, n: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while len(list((root / "parts").glob("*.parquet"))) < n:
        assert time.monotonic() < deadline, f"fewer than {n} parts after {timeout} s"
        time.sleep(0.2)


def test_a_worker_node_removed_mid_sweep_loses_no_trial_and_duplicates_none(tmp_path):
    import ray
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    # Two nodes, one removed: the other takes the lost node's trial (a third node, as here
    # before, cost ~6 CPU-s of raylet, agents and a trial worker, and proved nothing more).
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
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


# ------------------------------------------------------------------ processes of one sweep
def tiny_command(storage: Path, name: str, *extra, mlflow: bool = False) -> list[str]:
    """The tiny sweep's command line, one trial at a time, logged to its own MLflow store only
    if `mlflow`."""
    return [sys.executable, "-m", "sweeps.regression", *TINY, "--storage", str(storage),
            "--name", name, "--num-cpus", "2", *ONE_AT_A_TIME,
            *(() if mlflow else ("--no-mlflow",)), *extra]


def start_driver(storage: Path, name: str, *extra, log: Path | None = None,
                 mlflow: bool = False) -> subprocess.Popen:
    """A sweep's driver as its own process (a session of its own: the test kills it alone)."""
    out = open(log, "w") if log else subprocess.DEVNULL
    return subprocess.Popen(tiny_command(storage, name, *extra, mlflow=mlflow),
                            start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=out,
                            stderr=subprocess.STDOUT, text=True)


def ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def kill_driver_and_freeze_its_ray(driver: subprocess.Popen, root: Path) -> tuple[str, dict]:
    """SIGKILL the driver alone, then SIGSTOP what of its Ray outlives it: real leftovers that
    cannot end by themselves while the test looks (some would within a minute); the cleanup
    continues them with its SIGTERM (sweeps.engine.run.claim). Returns the Ray's session directory
    (as sweep.lock names it) and the frozen leftovers."""
    from sweeps.engine.run.claim import ray_session
    lock = (root / "sweep.lock").read_text()
    session = ray_session(lock)
    assert session, f"the run named no Ray of its own in sweep.lock: {lock}"
    driver.kill()
    driver.wait()
    time.sleep(1)               # what dies with the driver (its gcs, raylet) has gone by now
    left: dict = {}
    while new := {p: c for p, c in ray_processes(session).items() if p not in left}:
        for pid in new:         # until none new: a process found later is frozen as well
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        left.update(new)
    return session, {pid: cmd for pid, cmd in left.items() if not ended(pid)}


def waited(driver: subprocess.Popen, root: Path, parts: int) -> None:
    """Until the sweep has `parts` parts; if it never does, its driver and Ray are killed."""
    try:
        wait_for_parts(root, parts)
    except BaseException:
        os.killpg(driver.pid, signal.SIGKILL)
        raise


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> SimpleNamespace:
    """One killed run for the tests below (its start-up is most of their time): a sweep logged to
    its own MLflow store, its driver SIGKILLed after five folds and what of its Ray outlives it
    frozen, then `python -m sweeps.cleanup` run on it. Before any test resumes it, its folder goes
    to other storage less Tune's state and the MLflow store, which records its own location (a
    sweep carried to another machine, as the GPU session kit does). Returns the storages to
    resume in (storage[moved]), the leftovers and what the cleanup printed and left."""
    storage = tmp_path_factory.mktemp("killed")
    root = storage / "killed"
    driver = start_driver(storage, "killed", mlflow=True)
    waited(driver, root, 5)
    session, left = kill_driver_and_freeze_its_ray(driver, root)
    cleanup = subprocess.run([sys.executable, "-m", "sweeps.cleanup", "--storage", str(storage),
                              "--name", "killed"], capture_output=True, text=True, timeout=300)
    elsewhere = storage / "elsewhere"
    shutil.copytree(root, elsewhere / "killed", ignore=shutil.ignore_patterns("tune", "mlflow.db"))
    return SimpleNamespace(storage={False: storage, True: elsewhere}, session=session, left=left,
                           cleanup=cleanup, still_running=ray_processes(session),
                           not_ended=[pid for pid in left if not ended(pid)])


def test_the_cleanup_stops_what_a_killed_driver_left(killed):
    assert killed.left, "the killed driver's Ray left no process to clean up"
    assert killed.cleanup.returncode == 0, killed.cleanup.stderr
    # Ray's agents may exit on their own once the raylet is gone: the cleanup stops the rest.
    assert 0 < _stopped(killed.cleanup.stdout) <= len(killed.left)
    assert not killed.not_ended and not killed.still_running


@pytest.mark.parametrize("moved", [False, True], ids=["in place", "moved without tune"])
def test_a_killed_driver_resumes_without_rerunning_finished_folds(killed, moved):
    """In place: the resume is killed too, after one more fold, and the next --resume stops what
    that run left, then finishes. Moved: resumed from the copy in other storage: its parts alone
    resume it."""
    storage = killed.storage[moved]
    root = storage / "killed"
    mlflow = not moved                          # the copy has no MLflow store
    before = {p.name: p.stat().st_mtime_ns for p in (root / "parts").glob("*.parquet")}
    assert 5 <= len(before) < 18
    if not moved:
        driver = start_driver(storage, "killed", "--resume", mlflow=True)
        waited(driver, root, len(before) + 1)
        session, left = kill_driver_and_freeze_its_ray(driver, root)
        assert left
    done = subprocess.run(tiny_command(storage, "killed", "--resume", mlflow=mlflow),
                          env=dict(os.environ, PYTHONUNBUFFERED="1"), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    if not moved:
        assert "ended without finishing (killed?)" in done.stdout
        assert 0 < _stopped(done.stdout) <= len(left)
        assert all(ended(pid) for pid in left) and not ray_processes(session)
    after = {p.name: p.stat().st_mtime_ns for p in (root / "parts").glob("*.parquet")}
    assert {k: after[k] for k in before} == before          # no finished fold was recomputed
    table = results(root)
    keys = set(table["trial_id"])
    assert len(keys) == 6 and len(after) == 6 * 3
    assert_each_fold_once(table, keys, range(3))
    if mlflow:
        _, runs = mlflow_runs(f"sqlite:///{root}/mlflow.db", "killed")
        assert sorted(r.data.tags["trial_id"] for r in runs) == sorted(keys)   # one run a trial
        assert all(r.info.status == "FINISHED" for r in runs)
    # The resumed progress line counts the folds finished before the kill too.
    progress = [line for line in done.stdout.splitlines() if "| folds " in line]
    assert progress and "folds 18/18" in progress[-1], progress[-3:]


HOLD = "import sys, time; f = open(sys.argv[1], 'a'); print('open', flush=True); time.sleep(120)"


def holding(log: Path, title: str | None = None) -> subprocess.Popen:
    """A process with `log` open, titled `title` (argv[0], as Ray titles its workers "ray::...")."""
    command = [sys.executable, "-c", HOLD, str(log)]
    if title:
        command = ["bash", "-c", f'exec -a "{title}" "$@"', "bash", *command]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "open\n"
    return process


def test_the_leftovers_of_a_killed_run_are_the_ray_processes_of_the_session_it_named(tmp_path):
    """Found by the files they hold open in the session directory, whatever their environment
    says (Ray's title erases it): never a log viewer, never another Ray."""
    import socket

    from sweeps.engine.run.claim import ray_session, stop_leftovers
    session, other = tmp_path / "session_a", tmp_path / "session_b"
    for d in (session, other):
        (d / "logs").mkdir(parents=True)
    ray = holding(session / "logs" / "worker.out", "ray::ImplicitFunc")
    viewer = holding(session / "logs" / "worker.err")          # `tail -f`, say: not Ray
    another = holding(other / "logs" / "worker.out", "ray::IDLE")
    text = f"pid 1 on {socket.gethostname()} since 2026-11-27 05:00:00, its Ray's session {session}"
    try:
        assert ray_session(text) == str(session)
        assert ray_session(text.replace(socket.gethostname(), "elsewhere")) is None   # not here
        assert ray_session(text.partition(",")[0]) is None      # a run that started no Ray
        assert set(ray_processes(str(session))) == {ray.pid}
        assert set(stop_leftovers(text)) == {ray.pid}
        assert ended(ray.pid)                   # gone when stop_leftovers returns
        assert viewer.poll() is None and another.poll() is None
    finally:
        for process in (ray, viewer, another):
            process.kill()
            process.wait()


def test_a_run_names_the_ray_it_started_in_its_lock(tmp_path):
    from sweeps.engine.run.claim import claim, ray_session
    from sweeps.engine.common.store import ResultStore
    with claim(ResultStore(str(tmp_path / "sweep")), "sweep") as held:
        held.record_ray(str(tmp_path / "session_x"))
        lock = tmp_path / "sweep" / "sweep.lock"
        assert ray_session(lock.read_text()) == str(tmp_path / "session_x")
    assert lock.read_text() == ""        # a run that ended clears it


def test_a_resume_while_the_first_run_starts_is_told_it_runs(tmp_path, capsys):
    """Before the first run has written sweep.json, a --resume is refused as a second run is
    (it was told there was no sweep); once no run holds the lock, there is none to resume."""
    from sweeps.engine.run.claim import claim
    from sweeps.engine.common.store import ResultStore
    from sweeps.regression import main as regression
    argv = [*TINY, "--storage", str(tmp_path), "--name", "starting", "--no-mlflow", "--resume"]
    with claim(ResultStore(str(tmp_path / "starting")), "starting"):
        assert regression(argv) == 2
    err = capsys.readouterr().err
    assert "the sweep 'starting' is running now (pid " in err and "Traceback" not in err
    assert regression(argv) == 2
    assert "--resume: there is no sweep at" in capsys.readouterr().err


class Finaliser:
    def __init__(self, error: BaseException):
        self.error = error

    def __del__(self):
        raise self.error


def test_a_worker_ended_by_rays_sigterm_prints_no_traceback(monkeypatch, capfd):
    """Ray's SIGTERM handler raises SystemExit wherever a reused worker is, a finaliser too."""
    from sweeps.engine.run.trainable import _quiet_worker_exit
    monkeypatch.setattr(sys, "unraisablehook", _quiet_worker_exit)
    Finaliser(SystemExit(1))
    assert capfd.readouterr().err == ""
    Finaliser(ValueError("a real error in a finaliser"))    # still said
    assert "ValueError: a real error in a finaliser" in capfd.readouterr().err


@pytest.fixture(scope="module")
def retried(tmp_path_factory) -> SimpleNamespace:
    """One sweep's driver for the two tests below (its start-up is most of either's time):
    while it runs, a second sweep of its name is refused, plainly and with --resume; once two
    folds are written, one of its trial workers is killed. Returns what each test checks."""
    import ray

    from sweeps.engine.run.claim import ray_session
    from sweeps.regression import main as regression
    storage = tmp_path_factory.mktemp("retried")
    seen = SimpleNamespace(root=storage / "twice", log=storage / "first.log", refusals=[])
    root, log = seen.root, seen.log
    first = start_driver(storage, "twice", log=log)
    try:
        deadline = time.monotonic() + 300
        # The first run holds the lock and has started (sweep.json: written once its Ray is
        # up), so that both refusals below meet a started run (before sweep.json, a --resume
        # is refused too: test_a_resume_while_the_first_run_starts_is_told_it_runs).
        while not (root / "sweep.json").exists() or not (root / "sweep.lock").read_text():
            assert time.monotonic() < deadline and first.poll() is None, log.read_text()
            time.sleep(0.2)
        seen.ray_before = ray.is_initialized()
        for again in ([], ["--resume"]):
            with contextlib.redirect_stderr(io.StringIO()) as err:
                code = regression([*TINY, "--storage", str(storage), "--name", "twice",
                                   "--no-mlflow", *again])
            seen.refusals.append((code, err.getvalue()))
        seen.ray_after = ray.is_initialized()

        wait_for_parts(root, 2)
        seen.before = {p.name: p.stat().st_mtime_ns for p in (root / "parts").glob("*.parquet")}
        seen.running = ray_processes(ray_session((root / "sweep.lock").read_text()))
        workers = [pid for pid, cmd in seen.running.items()
                   if cmd.startswith("ray::ImplicitFunc")]       # a trial's worker process
        if workers:                                 # none: the test below fails, saying so
            os.kill(workers[0], signal.SIGKILL)
        seen.returncode = first.wait(timeout=600)
    finally:
        first.kill()
    return seen


@pytest.mark.slow
def test_a_killed_trial_worker_is_retried_and_each_fold_computed_once(retried):
    root, before, output = retried.root, retried.before, retried.log.read_text()
    assert any(cmd.startswith("ray::ImplicitFunc") for cmd in retried.running.values()), \
        retried.running
    assert retried.returncode == 0, output[-3000:]
    assert "failed, retrying it" in output and "Traceback" not in output
    after = {p.name: p.stat().st_mtime_ns for p in (root / "parts").glob("*.parquet")}
    assert {k: after[k] for k in before} == before          # finished folds were not redone
    table = results(root)
    assert len(after) == 6 * 3 and set(table["status"]) == {"ok"}
    assert_each_fold_once(table, set(table["trial_id"]), range(3))


@pytest.mark.slow
def test_a_second_sweep_of_the_same_name_is_refused_while_the_first_runs(retried):
    assert len(retried.refusals) == 2
    for code, err in retried.refusals:
        assert code == 2 and "the sweep 'twice' is running now (pid " in err, err
        assert "--name for a new sweep" in err and "Traceback" not in err
    assert retried.ray_after == retried.ray_before          # refused before Ray
    assert retried.returncode == 0, retried.log.read_text()[-3000:]
    root = retried.root
    table = results(root)
    assert table["trial_id"].nunique() == 6
    assert_each_fold_once(table, set(table["trial_id"]), range(3))
    assert (root / "sweep.lock").read_text() == ""           # released at the end


@pytest.mark.slow
def test_a_sweep_with_failed_trials_lists_them_with_their_errors_and_exits_1(tmp_path):
    # PoissonRegressor refuses the standardised (partly negative) targets of every fold: a real
    # error raised inside the competitor trial, on every attempt.
    done = subprocess.run(
        [sys.executable, "-m", "sweeps.regression", "--dataset", "diabetes", "--grid", "demo",
         "--folds", "3", "--members", "2", "--epsilons", "0", "--set", "n_samples=100",
         "epochs=1", "--competitors", "sklearn.linear_model.PoissonRegressor",
         "--max-failures", "1", "--num-cpus", "2", *ONE_AT_A_TIME, "--no-mlflow",
         "--storage", str(tmp_path),
         "--name", "failing"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    message = "ValueError: Some value(s) of y are out of the valid range of the loss"
    assert "Traceback" not in done.stdout + done.stderr
    assert f"failed, retrying it: {message}" in done.stdout
    listed = [line for line in done.stdout.splitlines() if line.startswith("  failed: ")]
    assert len(listed) == 1 and "PoissonRegressor_competitors" in listed[0], done.stdout
    assert message in listed[0]
    assert "error: 1 trials failed after their retries" in done.stderr
    table = results(tmp_path / "failing")
    assert set(table.loc[table["status"] == "failed", "error"].str[:len(message)]) == {message}


def _stopped(out: str) -> int:
    """N of the cleanup's "stopped N Ray processes" line."""
    import re
    return int(re.search(r"stopped (\d+) Ray processes", out).group(1))
