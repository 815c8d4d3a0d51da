"""The named grids as data: what each sweep holds, before any Ray is involved."""

import pytest

from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.plan.grid_trials import (PAPER_LAMBDA2, classification_sweep, image_sweep,
                                            regression_sweep, smoke)
from sweeps.engine.plan.planning import SweepOptions, plan
from sweeps.engine.plan.planning import folds_of, trial_config, trial_key
from sweeps.engine.run.fold_means import summarise

# Fields that only trials training members use (sbfn_dist/settings/fields.py applies them there).
MEMBER_FIELDS = ("n_members", "epsilon", "lr", "epochs", "batch_size", "width", "init_scale",
                 "device")


def by_role(configs, role):
    return [c for c in configs if c["extra"]["role"] == role]


def test_regression80_is_20_trainings_covering_80_configurations_plus_reference_and_competitors():
    spec = regression_sweep("air_quality", "regression80")
    trials = spec.trials()
    ensembles = [t for t in trials if "role" not in t]
    assert len(ensembles) == 5 * 4 == 20
    # paper, Table "hyper": M and ε (sweeps/grids/regression/regression80.yaml), largest M first
    assert spec.axes == {"n_members": (35, 20, 10, 5, 2), "epsilon": (0.0, 0.1, 0.35, 0.5)}
    assert len(ensembles) * len(spec.base["lambda2"]) == 80       # λ2 rides along in each trial
    assert spec.base["lambda2"] == list(PAPER_LAMBDA2)
    assert [t["role"] for t in trials if "role" in t] == ["reference"] * 2 + ["competitors"] * 3
    configs = plan(spec, SweepOptions(name="x"))
    # one network at the grid's learning rate and at a tenth of it (it can diverge alone)
    assert [c["lr"] for c in by_role(configs, "reference")] == [0.03, 0.003]
    set_lr = plan(spec, SweepOptions(name="x", overrides={"lr": 0.01}))   # --set lr=0.01
    assert [c["lr"] for c in by_role(set_lr, "reference")] == [0.01, 0.001]
    assert [t["competitors"] for t in trials if t.get("role") == "competitors"] == [
        ["svm_rbf"], ["random_forest"], ["gradient_boosting"]]   # one trial each: they run in parallel
    assert {(c["split"], c["folds"]) for c in configs} == {("kfold", 10)}


def test_seeds_repeat_the_whole_grid_and_lambda2_is_never_a_trial_axis():
    spec = regression_sweep("air_quality", "regression80", seeds=3)
    trials = spec.trials()
    assert len(trials) == 3 * 25
    assert sorted({t["seed"] for t in trials}) == [0, 1, 2]
    assert all("lambda2" not in t for t in trials)


def test_paper_full_exposes_the_whole_product_of_table_hyper():
    spec = regression_sweep("appliances", "paper-full")
    assert len([t for t in spec.trials() if "role" not in t]) == 5 * 4 * 3 * 4 * 4 * 4


def test_image_grid_is_eps_by_m_by_ensemble_by_split_with_every_combiner_in_each_trial():
    spec = image_sweep("cifar10")
    trials = spec.trials()
    assert len(trials) == 5 * 3 * 3 * 5
    assert {t["ensemble"] for t in trials} == {"mixed", "cnn", "resnet"}
    assert sorted({t["fold"] for t in trials}) == [0, 1, 2, 3, 4]
    configs = plan(spec, SweepOptions(name="x"))
    assert {c["combiners"] for c in configs} == {TASKS["classification"].combiners}
    assert {c["epochs"] for c in configs} == {10} and spec.mode == "max"
    assert not {"dtype", "width", "lambda2"} & set(configs[0])   # settings of tables only
    assert {c["split"] for c in configs} == {"holdout"}


def test_smoke_is_a_small_version_of_the_same_sweep():
    full, tiny = regression_sweep("air_quality", "regression80"), None
    tiny = smoke(full)
    assert set(tiny.axes) == set(full.axes)
    assert all(len(v) <= 2 for v in tiny.axes.values())
    assert tiny.base["folds"] == 3 and tiny.base["n_samples"] == 300
    assert [t["competitors"] for t in tiny.extra_trials] == [["svm_rbf"]]
    # a sweep's own competitors are smoke-tested too (before, every one but svm_rbf was dropped)
    own = smoke(regression_sweep("diabetes", "demo", competitors=["knn", "ridge"]))
    assert [t["competitors"] for t in own.extra_trials] == [["knn"]]


def test_every_trial_gets_a_stable_readable_unique_key():
    spec = regression_sweep("diabetes", "demo")
    first = plan(spec, SweepOptions(name="x"))
    again = plan(spec, SweepOptions(name="x"))
    keys = [c["trial_id"] for c in first]
    assert keys == [c["trial_id"] for c in again]
    assert len(set(keys)) == len(keys)
    assert keys[0].startswith("M1_eps0_reference_s0_")    # extras first, then the largest M
    assert any(k.startswith("M10_eps0.35_s0_") for k in keys)
    assert any(k.startswith("svm_rbf_competitors_s0_") for k in keys)


def test_a_regression_trial_runs_all_its_folds_an_image_trial_one_split():
    reg = trial_config({"n_members": 2}, regression_sweep("diabetes", "demo").base, "s")
    img = trial_config(image_sweep("digits").trials()[0], image_sweep("digits").base, "s")
    assert folds_of(reg) == [0, 1, 2, 3, 4]
    assert folds_of(img) == [0]


def test_bad_values_are_refused_before_any_trial_runs():
    with pytest.raises(ConfigError, match="grid"):
        regression_sweep("air_quality", "regression81")
    with pytest.raises(ConfigError, match="regression data set"):
        regression_sweep("mnist", "regression80")
    with pytest.raises(ConfigError, match="epsilon"):
        plan(regression_sweep("diabetes", "demo", axes={"epsilon": [1.5]}), SweepOptions(name="x"))
    with pytest.raises(ConfigError, match="unknown_field|known field"):
        plan(regression_sweep("diabetes", "demo"), SweepOptions(name="x", overrides={"unknown_field": 1}))


def test_reported_metrics_are_running_means_per_model_and_setting():
    rows = [{"task": "regression", "status": "ok", "fold": f, "model": "sbfn_ls",
             "model_params": f'{{"lambda2": {lam}}}', "rmse": rmse}
            for f, lam, rmse in [(0, 0.0, 2.0), (1, 0.0, 4.0), (0, 3.0, 1.0), (1, 3.0, 2.0)]]
    rows.append({"task": "regression", "status": "diverged", "fold": 1, "model": "g1",
                 "model_params": "{}", "rmse": float("nan")})
    out = summarise(rows, "sbfn_ls")
    assert out["rmse/sbfn_ls/lambda2-0"] == 3.0 and out["rmse/sbfn_ls/lambda2-3"] == 1.5
    assert out["rmse/sbfn_ls"] == 1.5 and out["objective"] == 1.5
    assert out["folds_done"] == 2 and out["not_ok"] == 1


def test_trial_keys_ignore_fields_left_at_their_defaults():
    base = regression_sweep("diabetes", "demo").base
    key = trial_config({"n_members": 2}, base, "s")["trial_id"]
    # so a field added to the library later (at its default) keeps old sweeps resumable; the
    # defaults are the trial's own (classification: lr 0.1; regression: 0.03)
    assert trial_config({"n_members": 2}, {**base, "lr": 0.03, "activation": "tanh"},
                        "s")["trial_id"] == key
    assert trial_config({"n_members": 2}, {**base, "epochs": 99}, "s")["trial_id"] != key
    assert trial_config({"n_members": 2}, {**base, "lr": 0.1}, "s")["trial_id"] != key
    wine = classification_sweep("wine", "demo").base
    assert trial_config({"n_members": 2}, {**wine, "lr": 0.1}, "s")["trial_id"] == \
        trial_config({"n_members": 2}, wine, "s")["trial_id"]


def test_the_reference_stays_one_network_when_plug_ins_are_set():
    spec = regression_sweep("diabetes", "demo")
    configs = plan(spec, SweepOptions(name="x", overrides={"plugin_members": ["random_forest"]}))
    roles = {c["extra"]["role"]: c for c in configs}
    assert roles["reference"]["plugin_members"] == () and roles["reference"]["n_members"] == 1
    assert roles["ensemble"]["plugin_members"] == ("random_forest",)


def test_competitors_are_tuned_over_their_grids_so_quartiles_mean_something():
    spec = regression_sweep("air_quality", "regression80")
    competitor = next(t for t in spec.trials() if t.get("role") == "competitors")
    config = trial_config(competitor, spec.base, "s")
    assert config["competitor_grid"] == "small"     # 4 configurations each (sbfn_dist/baselines.py)


def test_each_trial_holds_only_the_shared_settings_that_apply_to_it():
    configs = plan(regression_sweep("diabetes", "demo"), SweepOptions(name="x"))
    competitor, = [c for c in by_role(configs, "competitors") if c["competitors"] == ("svm_rbf",)]
    assert not set(MEMBER_FIELDS) & set(competitor) and "lambda2" not in competitor
    reference = by_role(configs, "reference")[0]
    assert reference["combiners"] == ("arithmetic",) and "lambda2" not in reference
    assert all(set(MEMBER_FIELDS) <= set(c) for c in by_role(configs, "ensemble"))
    assert by_role(configs, "ensemble")[0]["lambda2"] == PAPER_LAMBDA2


def test_a_trial_refuses_its_own_settings_where_they_do_not_apply():
    base = regression_sweep("diabetes", "demo").base
    with pytest.raises(ConfigError, match="'n_members'.*trains no members"):
        trial_config({"n_members": 3, "combiners": [], "competitors": ["svm_rbf"]}, base, "s")


def test_classification_grid_crosses_m_and_eps_with_every_combiner_the_reference_and_competitors():
    spec = classification_sweep("breast_cancer", "classification25")
    configs = plan(spec, SweepOptions(name="x"))
    ensembles = by_role(configs, "ensemble")
    assert len(ensembles) == 5 * 5 and spec.mode == "max" and spec.objective == "sbfn"
    assert {c["combiners"] for c in ensembles} == {TASKS["classification"].combiners}
    reference, = by_role(configs, "reference")
    assert (reference["n_members"], reference["combiners"]) == (1, ("logit_mean",))
    assert not {"temperature", "val_fraction", "lambda2"} & set(reference)
    assert [c["competitors"] for c in by_role(configs, "competitors")] == [
        ("svm_rbf",), ("random_forest",), ("gradient_boosting",)]
    assert {(c["task"], c["split"], c["folds"]) for c in configs} == {("classification", "kfold", 10)}
    with pytest.raises(ConfigError, match="lambda2"):   # a regression combiner's setting
        classification_sweep("wine", "demo", lambda2=[1.0])


def test_a_csv_classification_sweep_carries_its_task_and_target_into_every_trial():
    spec = classification_sweep("csv:/data/patients.csv", "demo")
    configs = plan(spec, SweepOptions(name="x", overrides={"target": "outcome"}))
    assert {(c["task"], c["target"]) for c in configs} == {("classification", "outcome")}
    with pytest.raises(ConfigError, match="diabetes is a regression data set: sweep it with "
                                          "python -m sweeps.regression"):
        classification_sweep("diabetes", "demo")


def test_smoke_keeps_each_kind_of_sweep_trainable_in_seconds():
    tiny = plan(smoke(classification_sweep("wine", "demo")), SweepOptions(name="x"))
    assert [c["extra"]["role"] for c in tiny] == ["reference", "competitors"] + ["ensemble"] * 4
    assert {c["folds"] for c in tiny} == {3}
    assert {c.get("head_epochs") for c in by_role(tiny, "ensemble")} == {20}   # not 1,000 steps
    images = plan(smoke(image_sweep("digits")), SweepOptions(name="x"))
    assert {(c["epochs"], c["n_train"], c["fold"]) for c in images} == {(1, 256, 0)}


def test_the_command_passes_lambda2_to_every_ensemble_trial():
    from sweeps.regression import build
    spec, _, _ = build(["--dataset", "diabetes", "--grid", "demo"])
    assert spec.base["lambda2"] == list(PAPER_LAMBDA2)
    spec, _, _ = build(["--dataset", "diabetes", "--grid", "demo", "--lambda2", "1", "2"])
    assert spec.base["lambda2"] == [1.0, 2.0]


def test_image_trials_run_the_kinds_of_one_m_and_eps_side_by_side_under_unchanged_keys():
    from dataclasses import replace
    spec = image_sweep("cifar10", splits=1)
    trials = spec.trials()
    assert [t["ensemble"] for t in trials[:3]] == ["mixed", "cnn", "resnet"]
    assert {(t["n_members"], t["epsilon"]) for t in trials[:3]} == {(10, 0.0)}
    before = replace(spec, innermost=None).trials()          # the kinds outermost, as before
    assert [t["ensemble"] for t in before[:2]] == ["mixed", "mixed"]
    keys = lambda s: [c["trial_id"] for c in plan(s, SweepOptions(name="x"))]
    assert sorted(keys(spec)) == sorted(keys(replace(spec, innermost=None)))
    assert keys(spec)[0].startswith("mixed_M10_eps0_split0_")


def test_a_sweep_listed_in_another_order_resumes(tmp_path):
    """A sweep started before its grid's order changed keeps resuming: the same trials count."""
    from dataclasses import replace

    from sweeps.engine.sweep import _check_store
    from sweeps.engine.plan.planning import result_store
    spec = image_sweep("digits", splits=1)
    opts = SweepOptions(name="x", storage=str(tmp_path))
    configs = plan(spec, opts)
    store = result_store(opts)
    record = _check_store(store, spec, opts, configs, {})
    store.write_spec({**record, "trial_ids": record["trial_ids"][::-1]})
    _check_store(store, spec, replace(opts, resume=True), configs, {})       # no error
    with pytest.raises(SbfnError, match="other settings"):
        _check_store(store, spec, replace(opts, resume=True), configs[1:], {})
