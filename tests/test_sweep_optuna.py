"""The Optuna study of a `--search optuna` sweep: a real sqlite study beside the results (or in
the local cache for remote storage), written by Ray Tune's OptunaSearch, and resumed."""

import os
import signal
import subprocess
import sys
import time

import optuna
import pytest
from optuna.trial import TrialState
from ray import tune

from sbfn_dist.errors import SbfnError
from sweeps.engine.common.store import ResultStore
from sweeps.engine.tracking.study import (check_study, open_study, publish_copy, searcher,
                                          study_file, where_note)
from tests.sweep_helpers import ONE_AT_A_TIME, SEARCHED, TINY, run_tiny

pytestmark = pytest.mark.timeout(600)
SEARCH = ["--search", "optuna", "--no-mlflow", "--competitors", "none"]
TOLD = (TrialState.COMPLETE, TrialState.PRUNED)     # a full CV, or one ASHA stopped early


def trials_of(root, name: str) -> list:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{root}/optuna.db").trials


def test_a_search_sweep_keeps_every_trial_in_its_study_file(shared_sweeps):
    storage, outcome, printed = shared_sweeps(*SEARCHED)    # SEARCH with 3 samples; shared
    study = optuna.load_study(study_name="tiny", storage=outcome.study)
    assert outcome.study == f"sqlite:///{storage}/tiny/optuna.db"
    assert ResultStore(outcome.root).read_spec()["study"] == f"{storage}/tiny/optuna.db"
    done = [t for t in study.trials if t.state in TOLD]     # PRUNED: stopped early by ASHA
    assert len(study.trials) == len(done) == 3
    told = sorted((t.params["n_members"], t.params["epsilon"], t.value) for t in done)
    reported = sorted((r["config"]["n_members"], r["config"]["epsilon"], r["objective"])
                      for r in outcome.trials)
    assert told == reported
    assert study.user_attrs["sweep"] == "tiny" and study.direction.name == "MINIMIZE"
    assert f"optuna-dashboard {outcome.study}" in printed


@pytest.mark.parametrize("change, said", [
    (("--num-samples", "5"), "--num-samples 5, not 3"),
    (("--search-seed", "7"), "--search-seed 7, not 0"),
    (("--search", "random"), "--search random, not optuna")])
def test_a_resume_that_changes_the_search_is_refused(shared_sweeps, change, said, ray_connects):
    """It printed "5 Optuna trials", ran the same 3, and rewrote sweep.json to say 5."""
    storage, outcome, _ = shared_sweeps(*SEARCHED)
    spec = ResultStore(outcome.root).read_spec()
    flag, value = change
    argv = list(SEARCHED)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    with pytest.raises(SbfnError, match=f"created with other settings \\({said}; its command"):
        run_tiny(storage, *argv, "--resume")
    assert ResultStore(outcome.root).read_spec() == spec and not ray_connects


# Enough samples that the kill comes before the last is told: trials take about a second and
# run one at a time, and the kill follows the first told trial within a poll (0.2 s).
SAMPLES = 10


def search_command(storage, *extra) -> list[str]:
    return [sys.executable, "-m", "sweeps.regression", *TINY, *SEARCH, "--num-samples", str(SAMPLES),
            "--storage", str(storage), "--name", "study", "--num-cpus", "2", *ONE_AT_A_TIME,
            *extra]


def wait_for_a_told_trial(root, timeout: float = 300) -> None:
    """Polls the study only once a trial wrote a part: the study exists by then (opening the file
    earlier would race the driver creating its tables)."""
    deadline = time.monotonic() + timeout
    while not list(root.glob("parts/*.parquet")) or not any(
            t.state.is_finished() for t in trials_of(root, "study")):
        assert time.monotonic() < deadline, f"no trial told to the study after {timeout} s"
        time.sleep(0.2)


def test_a_killed_search_sweep_resumes_the_same_study(tmp_path):
    root, env = tmp_path / "study", dict(os.environ, PYTHONUNBUFFERED="1")
    driver = subprocess.Popen(search_command(tmp_path), env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_a_told_trial(root)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)   # the driver and the Ray it started
        driver.wait()
    before = {t.number: (t.params, t.state, t.value) for t in trials_of(root, "study")
              if t.state in TOLD}
    assert 1 <= len(before) < SAMPLES

    done = subprocess.run(search_command(tmp_path, "--resume"), env=env, capture_output=True,
                          text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    after = trials_of(root, "study")
    told = {t.number: (t.params, t.state, t.value) for t in after if t.state in TOLD}
    assert {n: told[n] for n in before} == before       # told before the kill, kept as they were
    assert len(told) == SAMPLES                         # each sample told once
    assert not [t.number for t in after if t.state == TrialState.RUNNING]


def test_a_restored_searcher_settles_with_a_study_file_that_ran_ahead(tmp_path):
    """Tune pickles the searcher every ~10 s; the study file changes at every ask and tell."""
    store = ResultStore(str(tmp_path / "s"))
    storage = open_study(store, "s", "min", resume=False, labels={})
    first = searcher(storage, "s", seed=0, folds=3)
    first.set_search_properties("objective", "min", {"a": tune.choice([1, 2, 3])})
    first.suggest("t1"), first.suggest("t2")
    first.save(str(tmp_path / "searcher.pkl"))          # Tune's last save before the kill
    first.on_trial_complete("t1", {"objective": 0.5, "training_iteration": 3})
    first.suggest("t3")                                 # asked after it: no Tune trial owns it

    restored = searcher(storage, "s", seed=0, folds=3)
    restored.restore(str(tmp_path / "searcher.pkl"))
    restored.on_trial_result("t1", {"objective": 9.0, "training_iteration": 1})   # Tune reruns t1
    restored.on_trial_complete("t1", {"objective": 9.0, "training_iteration": 3})
    restored.on_trial_complete("t2", {"objective": 0.7, "training_iteration": 3})
    states = {t.number: (t.state, t.value) for t in trials_of(store.root, "s")}
    assert states == {0: (TrialState.COMPLETE, 0.5), 1: (TrialState.COMPLETE, 0.7),
                      2: (TrialState.FAIL, None)}


def test_a_sample_told_after_the_last_save_is_taken_over_not_sampled_again(tmp_path):
    """A killed driver can leave a sample the study holds as told but no Tune trial owns (asked
    and told after Tune's last save): the resumed sweep's next trial takes it over."""
    store = ResultStore(str(tmp_path / "s"))
    storage = open_study(store, "s", "min", resume=False, labels={})
    first = searcher(storage, "s", seed=0, folds=3)
    first.set_search_properties("objective", "min", {"a": tune.uniform(0, 1)})
    first.suggest("t1")
    first.save(str(tmp_path / "searcher.pkl"))          # Tune's last save before the kill
    orphan = first.suggest("t2")
    first.on_trial_complete("t2", {"objective": 0.25, "training_iteration": 3})

    restored = searcher(storage, "s", seed=0, folds=3)
    restored.restore(str(tmp_path / "searcher.pkl"))
    assert restored.suggest("t3") == orphan             # Tune's new trial runs that sample
    restored.on_trial_result("t3", {"objective": 0.3, "training_iteration": 1})
    restored.on_trial_complete("t3", {"objective": 0.3, "training_iteration": 3})
    fresh = restored.suggest("t4")                      # nothing left to take over: a new ask
    restored.on_trial_complete("t1", {"objective": 0.5, "training_iteration": 3})
    restored.on_trial_complete("t4", {"objective": 0.1, "training_iteration": 3})
    trials = trials_of(store.root, "s")
    assert [(t.state, t.value) for t in trials] == [(TrialState.COMPLETE, 0.5),
                                                    (TrialState.COMPLETE, 0.25),
                                                    (TrialState.COMPLETE, 0.1)]
    assert trials[1].params == orphan and trials[2].params == fresh


def test_remote_storage_keeps_the_study_in_the_local_cache_and_copies_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SBFN_CACHE_DIR", str(tmp_path / "cache"))
    store = ResultStore("mock:///bucket/runs/aq")       # pyarrow's in-memory filesystem
    store.create()
    assert study_file(store) == tmp_path / "cache/sweeps/mock/bucket/runs/aq/optuna.db"
    assert str(study_file(store)) in where_note(store)
    open_study(store, "aq", "min", resume=False, labels={"sweep": "aq"})
    assert publish_copy(store) == "mock:///bucket/runs/aq/optuna.db" and store.has("optuna.db")


def test_a_study_file_is_never_inherited_and_never_silently_recreated(tmp_path):
    store = ResultStore(str(tmp_path / "s"))
    open_study(store, "s", "min", resume=False, labels={})
    with pytest.raises(SbfnError, match="delete that file, or pass --name"):
        check_study(store, "s", resume=False)
    study_file(store).unlink()
    (tmp_path / "s" / "tune").mkdir()                   # Tune has state: the study is needed
    store.write_spec({"name": "s", "study": str(study_file(store))})
    with pytest.raises(SbfnError, match="study .* is missing. Put it back"):
        check_study(store, "s", resume=True)
    store.write_spec({"name": "s"})     # a sweep from before studies were files: Tune holds it
    assert check_study(store, "s", resume=True) == str(study_file(store))


@pytest.mark.parametrize("damage", [b"not a database", "truncated"])
def test_a_damaged_study_file_is_refused_on_resume_in_one_line(tmp_path, damage):
    store = ResultStore(str(tmp_path / "s"))
    open_study(store, "s", "min", resume=False, labels={}).get_all_studies()
    path = study_file(store)
    data = path.read_bytes()
    path.write_bytes(data[:3000] if damage == "truncated" else damage)   # a copy cut short
    with pytest.raises(SbfnError) as refused:
        check_study(store, "s", resume=True)
    message = str(refused.value)
    assert f"cannot read the Optuna study file {path} (" in message and "\n" not in message
    assert "Put back a good copy of it" in message and "--name for a new sweep" in message


def test_a_study_file_of_another_sweep_is_refused_on_resume(tmp_path):
    store = ResultStore(str(tmp_path / "s"))
    open_study(store, "other", "min", resume=False, labels={})
    with pytest.raises(SbfnError, match="holds no study named 's'"):
        check_study(store, "s", resume=True)


def test_resume_with_a_damaged_study_stops_before_ray_starts(tmp_path, capsys, ray_connects):
    """Through the command: exit 2, one line naming the file, and no Ray started."""
    from sweeps import regression
    from sweeps.engine.plan.planning import plan
    from sweeps.engine.plan.grid_trials import smoke
    args = [*TINY, *SEARCH, "--num-samples", "2", "--storage", str(tmp_path), "--name", "dmg"]
    spec, _, opts = regression.build(args)
    store = ResultStore(str(tmp_path / "dmg"))
    store.create()
    trial_ids = [c["trial_id"] for c in plan(smoke(spec), opts)]     # as its first run wrote
    store.write_spec({"name": "dmg", "trial_ids": trial_ids, "search": "optuna",
                      "n_trials_expected": 2, "study": str(study_file(store))})
    study_file(store).write_bytes(b"\x00garbage")
    assert regression.main([*args, "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --resume: cannot read the Optuna study file") and "\n" not in err
    assert str(study_file(store)) in err and not ray_connects
