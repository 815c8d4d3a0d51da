"""The progress line after a --resume: trials finished before the kill still count, and the time
left is estimated from folds computed in this run, not from folds read back from the store.

Tune hands the callback its restored Trial objects; only `trial_id`, `status`, `last_result` and
`config` are read, so plain records stand in for them here."""

from types import SimpleNamespace

from sweeps.progress import ProgressLine


def trial(trial_id, status, folds_done=0, objective=None, model="sbfn_ls"):
    last = {"folds_done": folds_done, "objective": objective, "objective_model": model} \
        if folds_done else {}
    return SimpleNamespace(trial_id=trial_id, status=status, last_result=last,
                           config={"trial": {"pack": [{"n_members": int(trial_id[1:])}]}})


def resumed_line(computed_results: list[dict], trials) -> str:
    progress = ProgressLine("sweep", total_folds=30, mode="min")
    progress.setup()
    running = trials[-1]
    for result in computed_results:
        running.last_result = result
        progress.on_trial_result(0, trials, running, result)
    return progress.line(trials)


def test_folds_and_best_of_trials_finished_before_the_resume_are_counted():
    finished = trial("M35", "TERMINATED", folds_done=10, objective=0.29)
    running = trial("M20", "RUNNING")
    line = resumed_line([{"folds_done": 1, "objective": 0.4, "objective_model": "sbfn_ls",
                          "fold_computed": True}], [finished, trial("M10", "PENDING"), running])
    assert "trials 1/3 done, 1 running, 1 pending" in line
    assert "folds 11/30" in line
    assert "best 0.29 (sbfn_ls, n_members=35)" in line


def test_folds_read_back_from_the_store_do_not_speed_up_the_estimate():
    read_back = [{"folds_done": k, "objective": 0.3, "fold_computed": False} for k in (1, 2, 3)]
    assert "left" not in resumed_line(read_back, [trial("M5", "RUNNING")])
    line = resumed_line(read_back + [{"folds_done": 4, "objective": 0.3, "fold_computed": True}],
                        [trial("M5", "RUNNING")])
    assert "folds 4/30" in line and "left" in line


def test_a_diverged_trial_is_never_the_best():
    line = ProgressLine("sweep", total_folds=20, mode="min").line(
        [trial("M2", "TERMINATED", 10, float("nan")), trial("M5", "TERMINATED", 10, 0.5)])
    assert "best 0.5 (sbfn_ls, n_members=5)" in line


def test_a_finished_sweep_shows_no_time_left_even_when_asha_stopped_trials_early():
    progress = ProgressLine("sweep", total_folds=40, mode="min")
    stopped = trial("M5", "TERMINATED", folds_done=2, objective=0.5)
    progress.on_trial_result(0, [stopped], stopped, {"folds_done": 2, "fold_computed": True})
    line = progress.line([stopped])
    assert "folds 2/40" in line and "left" not in line


def failed_row(tmp_path, config: dict):
    """The row StoreKeeper writes for `config`'s trial failing beside a finished trial's part."""
    from sweeps.progress import StoreKeeper
    from sweeps.store import ResultStore
    store = ResultStore(str(tmp_path / "s"))
    store.create()
    store.write_part("done", 0, [{"model": "arithmetic", "status": "ok", "rmse": 1.0,
                                  "plugin_members": "[]"}])
    keeper = StoreKeeper(store, resolve=lambda params: [params])
    broken = SimpleNamespace(config=config, get_pickled_error=lambda: RuntimeError("node lost"))
    keeper.on_trial_error(0, [broken], broken)
    table = store.consolidate()     # raises if the failed row cannot sit beside the parts
    return table[table["status"] == "failed"].iloc[0]


def test_a_failed_trial_row_is_written_beside_finished_parts(tmp_path):
    # Seen on a fresh clone: a failed-trial row held plugin_members as a list while the parts
    # hold JSON strings, and results.parquet could no longer be written.
    from sweeps.spaces import regression_sweep
    from sweeps.trainable import trial_config
    config = trial_config({"n_members": 2}, regression_sweep("diabetes", "demo").base, "s")
    row = failed_row(tmp_path, config)
    assert row["plugin_members"] == "[]" and row["error"] == "RuntimeError: node lost"
    assert (row["trial_id"], row["n_members"], row["role"]) == (config["trial_id"], 2, "ensemble")


def test_a_failed_trial_row_takes_its_task_from_the_config_and_only_its_settings(tmp_path):
    from sweeps.spaces import classification_sweep
    from sweeps.trainable import trial_config
    base = {**classification_sweep("csv:/data/patients.csv", "demo").base, "target": "outcome"}
    config = trial_config({"combiners": [], "competitors": ["svm_rbf"], "role": "competitors"},
                          base, "s")
    row = failed_row(tmp_path, config)
    assert row["task"] == "classification"        # a csv data set's name says nothing of it
    assert row["role"] == "competitors" and row["status"] == "failed"
    assert "n_members" not in row.index or row.isna()["n_members"]   # a competitor trains none


def test_the_best_of_a_pack_is_named_by_its_own_axes():
    pack = SimpleNamespace(trial_id="p", status="RUNNING", config={"trial": {"pack": [
        {"n_members": 2, "epsilon": 0.0}, {"n_members": 5, "epsilon": 0.35}]}},
        last_result={"folds_done": 2, "objective": 0.3, "objective_model": "sbfn_ls",
                     "trial_keys": ["M2_eps0_x", "M5_eps0.35_y"], "objective_key": "M5_eps0.35_y"})
    line = ProgressLine("sweep", total_folds=20, mode="min").line([pack])
    assert "best 0.3 (sbfn_ls, n_members=5 epsilon=0.35)" in line
    pack.last_result["objective_key"] = "M2_eps0_x"
    line = ProgressLine("sweep", total_folds=20, mode="min").line([pack])
    assert "(sbfn_ls, n_members=2 epsilon=0)" in line        # as the end table says it
