"""The progress line says what happened: a trial an interruption stopped before it started is
not "stopped early", and the last line's folds are the ones the store holds (issue 48, item
9). Plain records stand in for Tune's trials, as in tests/test_sweep_progress.py."""

from types import SimpleNamespace

from sweeps.engine.common.store import ResultStore
from sweeps.engine.run.fold_means import summarise_pack
from sweeps.engine.run.progress import ProgressLine, StoredFolds


def a_trial(key: str, status: str, folds_done: int, planned: int = 3) -> SimpleNamespace:
    records = {key: [{"task": "regression", "model": "sbfn_ls", "model_params": "{}",
                      "status": "ok", "rmse": 0.5, "fold": k} for k in range(folds_done)]}
    last = {**summarise_pack(records, "sbfn_ls"), "folds_planned": planned} if folds_done \
        else {"trial_id": key}        # Tune leaves one that never ran its trial_id alone
    return SimpleNamespace(trial_id=key, status=status, last_result=last, path="/t",
                           config={"n_members": 2, "trial_id": key})


def test_trials_stopped_before_they_started_are_pending_not_stopped_early():
    """SIGTERM before any trial started: `0/8 done, ... 8 stopped early`."""
    line = ProgressLine("s", total_folds=24, mode="min", configurations=8)
    line.setup()
    trials = [a_trial(f"M{i}", "TERMINATED", 0) for i in range(8)]
    text = line.line(trials)
    assert "configurations 0/8 done, 0 running, 8 pending, 0 failed | folds 0/24" in text, text


def test_the_last_line_counts_the_folds_the_store_holds(tmp_path):
    """A kill and a resume: Tune's saved state had the trial two folds in, the store three
    ("folds 25/30" beside 27 stored pairs); a stray key's parts are no fold of the sweep."""
    store = ResultStore(str(tmp_path / "s"))
    store.create()
    for key, folds in {"M2": (0, 1, 2), "M3": (0,), "other": (0, 1)}.items():
        for k in folds:
            store.write_part(key, k, [{"fold": k}])
    line = ProgressLine("s", total_folds=6, mode="min", configurations=2,
                        stored=StoredFolds(store, {"M2": [0, 1, 2], "M3": [0, 1, 2]}, [0, 1, 2]))
    line.setup()
    trials = [a_trial("M2", "TERMINATED", 2), a_trial("M3", "RUNNING", 0)]
    assert "| folds 2/6" in line.line(trials)
    line.on_experiment_end(trials)
    assert "| folds 4/6" in line.line(trials)
