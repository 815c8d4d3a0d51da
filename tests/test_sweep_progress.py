"""The progress line: it counts configurations (a Tune trial trains a pack of them), names the
sweep's objective model and metric in its "best", estimates the time left only from evidence,
and after a --resume still counts the trials finished before the kill.

Tune hands the callback its (restored) Trial objects; only `trial_id`, `status`, `last_result`
and `config` are read, so plain records stand in for them here. Their results are made by the
trainable's own summarise_pack from records."""

from types import SimpleNamespace

from sweeps.engine.run.fold_means import summarise_pack
from sweeps.engine.run.progress import ProgressLine


def record(model: str, rmse: float, fold: int = 0) -> dict:
    return {"task": "regression", "model": model, "model_params": "{}", "status": "ok",
            "rmse": rmse, "fold": fold}


def trial(trial_id, status, pack: dict | None = None, folds_done=0, planned=10,
          computed=True) -> SimpleNamespace:
    """A Tune trial of a pack: {n_members: {model: rmse}} per configuration (M as its axis),
    `folds_done` folds each, of `planned` (0 folds: no result yet)."""
    pack = pack or {int(trial_id[1:]): {"sbfn_ls": 0.5}}
    records = {f"M{m}_key": [record(model, value, k) for k in range(folds_done)
                             for model, value in scores.items()] for m, scores in pack.items()}
    last = {**summarise_pack(records, "sbfn_ls"), "folds_planned": planned,
            "fold_computed": computed} if folds_done else {}
    return SimpleNamespace(trial_id=trial_id, status=status, last_result=last, path="/t",
                           config={"trial": {"pack": [{"n_members": m} for m in pack]}})


def progress(configurations: int = 0, total_folds: int = 30) -> ProgressLine:
    line = ProgressLine("sweep", total_folds=total_folds, mode="min", configurations=configurations,
                        objective="sbfn_ls", metric="rmse")
    line.setup()
    return line


def resumed_line(computed_results: list[dict], trials, complete: bool = False) -> str:
    line = progress()
    running = trials[-1]
    for result in computed_results:
        running.last_result = {**running.last_result, **result}
        line.on_trial_result(0, trials, running, result)
    if complete:
        running.status = "TERMINATED"
        line.on_trial_complete(0, trials, running)
    return line.line(trials)


def test_folds_and_best_of_trials_finished_before_the_resume_are_counted():
    finished = trial("M35", "TERMINATED", {35: {"sbfn_ls": 0.29}}, folds_done=10)
    running = trial("M20", "RUNNING", {20: {"sbfn_ls": 0.4}}, folds_done=1)
    line = resumed_line([{"folds_done": 1, "fold_computed": True}],
                        [finished, trial("M10", "PENDING"), running])
    assert "configurations 1/3 done, 1 running, 1 pending" in line
    assert "folds 11/30" in line
    assert "best sbfn_ls rmse 0.29 (n_members=35)" in line


def test_configurations_are_counted_not_packs_and_those_without_a_trial_yet_are_pending():
    pack = trial("P0", "RUNNING", {2: {"sbfn_ls": 0.4}, 5: {"sbfn_ls": 0.3}, 10: {"sbfn_ls": 0.6}},
                 folds_done=1)
    line = progress(configurations=7).line([pack, trial("M1", "PENDING")])
    assert "configurations 0/7 done, 3 running, 4 pending, 0 failed" in line   # 3 without a trial


def test_a_failed_pack_mate_is_counted_failed_and_the_others_done():
    pack = trial("P0", "ERROR", {2: {"sbfn_ls": 0.4}, 5: {"sbfn_ls": 0.3}}, folds_done=3,
                 planned=3)
    pack.last_result["configs"].pop("M5_key")          # it raised: it reported nothing
    line = progress(configurations=3).line([pack, trial("M9", "TERMINATED", folds_done=3,
                                                        planned=3)])
    assert "configurations 2/3 done, 0 running, 0 pending, 1 failed" in line


def test_trials_an_interruption_stopped_before_their_first_result_are_not_done():
    """Ctrl-C: Tune marks every trial TERMINATED, and leaves one that never ran a last_result
    of its trial_id alone (seen: "15/15 done ... folds 9/45" after an interrupt). It had not
    started: pending, not "stopped early" (issue 48)."""
    never_ran = trial("M3", "TERMINATED")
    never_ran.last_result = {"trial_id": "M3"}
    line = progress(configurations=2).line([never_ran, trial("M9", "TERMINATED", folds_done=3,
                                                             planned=3)])
    assert "configurations 1/2 done, 0 running, 1 pending, 0 failed" in line


def test_a_rerun_that_asha_stopped_with_every_fold_on_record_is_done_not_stopped_early():
    """After a --resume Tune reruns a trial whose sample the Optuna study already holds COMPLETE
    (told after Tune's last save); it reads its folds back and ASHA may stop it at a rung. Its
    CV is whole in the store: done, as the study and the end table have it (it counted "stopped
    early": 4 beside the study's 3 PRUNED, issue 32). One with fewer folds recorded is stopped
    early still."""
    def asha_stopped(trial_id, recorded):
        t = trial(trial_id, "TERMINATED", folds_done=2, planned=3)
        for summary in t.last_result["configs"].values():
            summary["folds_recorded"] = recorded
        return t
    line = progress(configurations=3).line([asha_stopped("M5", 3), asha_stopped("M6", 2),
                                            trial("M9", "TERMINATED", folds_done=3, planned=3)])
    assert "configurations 2/3 done, 0 running, 0 pending, 1 stopped early, 0 failed" in line
    assert "best sbfn_ls rmse 0.5 (n_members=9)" in line    # a mean over 3 folds, not 2


def test_the_trainable_reports_the_folds_on_record():
    records = {"M5_key": [record("sbfn_ls", 0.5, k) for k in range(2)]}
    summary = summarise_pack(records, "sbfn_ls", {"M5_key": {0, 1, 2}})["configs"]["M5_key"]
    assert (summary["folds_done"], summary["folds_recorded"]) == (2, 3)


def test_no_time_left_is_estimated_before_a_configuration_has_finished_here():
    # The first folds carry the workers' start: a 36 s sweep once said "~14 min left".
    read_back = [{"folds_done": k, "fold_computed": False} for k in (1, 2, 3)]
    assert "left" not in resumed_line(read_back, [trial("M5", "RUNNING", folds_done=1)])
    computed = read_back + [{"folds_done": 4, "fold_computed": True}]
    assert "left" not in resumed_line(computed, [trial("M5", "RUNNING", folds_done=1),
                                                 trial("M6", "PENDING")])
    line = resumed_line(computed, [trial("M6", "PENDING"), trial("M5", "RUNNING", folds_done=1)],
                        complete=True)
    assert "folds 4/30" in line and "left" in line


def test_best_is_the_sweeps_objective_never_a_competitor_or_the_m1_reference():
    competitors = trial("C0", "TERMINATED", {0: {"svm_rbf": 0.1}}, folds_done=10)
    reference = trial("M1", "TERMINATED", {1: {"arithmetic": 0.2}}, folds_done=10)
    ensemble = trial("M5", "TERMINATED", {5: {"sbfn_ls": 0.5, "g1": 0.3}}, folds_done=10)
    line = progress().line([competitors, reference, ensemble])
    assert "best sbfn_ls rmse 0.5 (n_members=5)" in line


def test_a_diverged_trial_is_never_the_best():
    diverged = trial("M2", "TERMINATED", {2: {"sbfn_ls": float("nan")}}, folds_done=10)
    line = progress(total_folds=20).line([diverged, trial("M5", "TERMINATED", folds_done=10)])
    assert "best sbfn_ls rmse 0.5 (n_members=5)" in line


def test_a_finished_sweep_shows_no_time_left_even_when_asha_stopped_trials_early():
    line = progress(total_folds=40)
    stopped = trial("M5", "TERMINATED", folds_done=2)
    line.on_trial_result(0, [stopped], stopped, {"folds_done": 2, "fold_computed": True})
    line.on_trial_complete(0, [stopped], stopped)
    text = line.line([stopped])
    assert "folds 2/40" in text and "left" not in text
    assert "configurations 0/1 done, 0 running, 0 pending, 1 stopped early, 0 failed" in text


def failed_row(tmp_path, config: dict):
    """The row StoreKeeper writes for `config`'s trial failing beside a finished trial's part."""
    from sweeps.engine.run.progress import StoreKeeper
    from sweeps.engine.common.store import ResultStore
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
    from sweeps.engine.plan.grid_trials import regression_sweep
    from sweeps.engine.plan.planning import trial_config
    config = trial_config({"n_members": 2}, regression_sweep("diabetes", "demo").base, "s")
    row = failed_row(tmp_path, config)
    assert row["plugin_members"] == "[]" and row["error"] == "RuntimeError: node lost"
    assert (row["trial_id"], row["n_members"], row["role"]) == (config["trial_id"], 2, "ensemble")


def test_a_failed_trial_row_takes_its_task_from_the_config_and_only_its_settings(tmp_path):
    from sweeps.engine.plan.grid_trials import classification_sweep
    from sweeps.engine.plan.planning import trial_config
    base = {**classification_sweep("csv:/data/patients.csv", "demo").base, "target": "outcome"}
    config = trial_config({"combiners": [], "competitors": ["svm_rbf"], "role": "competitors"},
                          base, "s")
    row = failed_row(tmp_path, config)
    assert row["task"] == "classification"        # a csv data set's name says nothing of it
    assert row["role"] == "competitors" and row["status"] == "failed"
    assert "n_members" not in row.index or row.isna()["n_members"]   # a competitor trains none


def test_the_best_of_a_pack_is_named_by_its_own_axes():
    pack = trial("P0", "RUNNING", {2: {"sbfn_ls": 0.4}, 5: {"sbfn_ls": 0.3}}, folds_done=10)
    assert "best sbfn_ls rmse 0.3 (n_members=5)" in progress().line([pack])
    pack = trial("P0", "RUNNING", {2: {"sbfn_ls": 0.2}, 5: {"sbfn_ls": 0.3}}, folds_done=10)
    assert "best sbfn_ls rmse 0.2 (n_members=2)" in progress().line([pack])   # as the table says


def test_the_best_has_every_fold_it_planned():
    """A lucky first fold, or a configuration ASHA stopped after it, is no best beside a whole
    one (as the end table ranks); before any configuration is whole, no best is named."""
    whole = trial("M5", "TERMINATED", {5: {"sbfn_ls": 0.5}}, folds_done=10)
    lucky = trial("M2", "RUNNING", {2: {"sbfn_ls": 0.1}}, folds_done=1)
    stopped = trial("M3", "TERMINATED", {3: {"sbfn_ls": 0.2}}, folds_done=2)
    assert "best sbfn_ls rmse 0.5 (n_members=5)" in progress().line([whole, lucky, stopped])
    assert "best" not in progress().line([lucky, stopped])


def test_each_failed_pack_mate_gets_its_own_error_and_a_finished_one_none(tmp_path):
    """A pack's trial raises PackMatesFailed when several of its configurations raised (the
    trainable's error: type and message of each)."""
    from sweeps.engine.run.progress import StoreKeeper
    from sweeps.engine.plan.grid_trials import regression_sweep
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.plan.planning import folds_of, trial_config
    from sweeps.engine.run.trainable import PackMatesFailed
    from sweeps.engine.run.fold_means import error_line
    base = {**regression_sweep("diabetes", "demo").base, "folds": 2}
    configs = [trial_config({"n_members": m}, base, "s") for m in (2, 5, 10)]
    store = ResultStore(str(tmp_path / "s"))
    store.create()
    finished = configs[2]["trial_id"]
    for fold in folds_of(configs[2]):
        store.write_part(finished, fold, [{"model": "arithmetic", "status": "ok", "rmse": 1.0,
                                           "plugin_members": "[]"}])
    errors = {configs[0]["trial_id"]: error_line(ValueError("first\nits own message")),
              configs[1]["trial_id"]: error_line(KeyError("second"))}
    pack = SimpleNamespace(config={}, get_pickled_error=lambda: PackMatesFailed(errors))
    StoreKeeper(store, resolve=lambda params: configs).on_trial_error(0, [pack], pack)
    table = store.consolidate()
    rows = table[table["status"] == "failed"].set_index("trial_id")["error"].to_dict()
    assert rows == {configs[0]["trial_id"]: "ValueError: its own message",
                    configs[1]["trial_id"]: "KeyError: 'second'"}


def split_trial(key: str, m: int, fold: int, rmse: float) -> SimpleNamespace:
    """A trial of one split of configuration M{m} (an image sweep runs each split alone)."""
    one = trial("T", "TERMINATED", {m: {"sbfn_ls": rmse}}, folds_done=1, planned=1)
    one.last_result["configs"] = {key: one.last_result["configs"].pop(f"M{m}_key")}
    one.config = {"trial": {"pack": [{"n_members": m, "fold": fold, "trial_id": key}]}}
    return one


def test_a_configuration_split_by_fold_is_best_by_its_mean_over_its_splits():
    """Each split's trial is whole alone: the best waits for all splits and averages them."""
    groups = {"A0": "A0", "A1": "A0", "B0": "B0", "B1": "B0"}
    line = ProgressLine("s", total_folds=4, mode="min", configurations=4, objective="sbfn_ls",
                        metric="rmse", groups=groups)
    line.setup()
    a = [split_trial("A0", 2, 0, 0.5), split_trial("A1", 2, 1, 0.3)]
    lucky = split_trial("B0", 5, 0, 0.1)
    assert "best sbfn_ls rmse 0.4 (n_members=2)" in line.line([*a, lucky])
    assert "best sbfn_ls rmse 0.35 (n_members=5)" in line.line([*a, lucky,
                                                                 split_trial("B1", 5, 1, 0.6)])


def failing(name: str, error: Exception) -> SimpleNamespace:
    """A trial whose last attempt raised `error` (Tune's pickled copy of it)."""
    return SimpleNamespace(trial_id=name, status="RUNNING", last_result={}, path=f"/t/{name}",
                           config={}, pickled_error_file="/nonexistent",
                           get_pickled_error=lambda: error)


def test_a_fault_every_trial_meets_is_told_once_whole_then_only_counted(capsys):
    """Data that no machine has failed each of 6 trials at each of its 3 attempts: its long
    line came ~20 times, cut at 500 characters mid-word. Now each kind of note comes once,
    whole, then one line says the rest are counted; another error is told again."""
    fix = "put the file at DIR/uci_air_quality/AirQualityUCI.csv and pass --data-dir DIR " * 9
    same = [failing(f"T{i}", ValueError(f"data set 'air_quality' is missing. Fix: {fix}"))
            for i in range(6)]
    line = progress(configurations=7)
    for _ in range(2):
        for trial_ in same:
            line.on_trial_recover(0, same, trial_)
    for trial_ in same:
        line.on_trial_error(0, same, trial_)
    line.on_trial_recover(0, same, failing("T6", KeyError("another")))
    notes = [n.strip() for n in capsys.readouterr().out.splitlines() if n.startswith("    ")]
    assert len(notes) == 5, notes
    assert notes[0].startswith("trial ") and "failed, retrying it: ValueError: data set" in notes[0]
    assert notes[0].endswith(fix.strip())                   # whole: ~700 characters
    assert "with the same error (further ones are only counted" in notes[1]
    assert "failed after its retries: ValueError:" in notes[2] and "error.txt" in notes[2]
    assert "failed after its retries with the same error" in notes[3]
    assert "retrying it: KeyError: 'another'" in notes[4]
