"""The named grids as data: what each sweep holds, before any Ray is involved."""

import pytest

from sbfn_dist.errors import ConfigError
from sweeps.runner import SweepOptions, plan
from sweeps.spaces import (PAPER_EPSILONS, PAPER_LAMBDA2, PAPER_MEMBERS, image_sweep,
                           regression_sweep, smoke)
from sweeps.trainable import folds_of, summarise, trial_config


def test_regression80_is_20_trainings_covering_80_configurations_plus_reference_and_competitors():
    spec = regression_sweep("air_quality", "regression80")
    trials = spec.trials()
    ensembles = [t for t in trials if "role" not in t]
    assert len(ensembles) == len(PAPER_MEMBERS) * len(PAPER_EPSILONS) == 20
    assert len(ensembles) * len(spec.base["lambda2"]) == 80       # λ2 rides along in each trial
    assert spec.base["lambda2"] == list(PAPER_LAMBDA2)
    assert [t["role"] for t in trials if "role" in t] == ["reference"] * 2 + ["competitors"] * 3
    # one network at the grid's learning rate and at a tenth of it (it can diverge alone)
    assert [t.get("lr", spec.base["lr"]) for t in trials if t.get("role") == "reference"] == [
        0.03, 0.003]
    assert [t["competitors"] for t in trials if t.get("role") == "competitors"] == [
        ["svm_rbf"], ["random_forest"], ["gradient_boosting"]]   # one trial each: they run in parallel
    assert spec.base["folds"] == 10


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
    assert len(spec.base["combiners"]) >= 5 and spec.mode == "max"


def test_smoke_is_a_small_version_of_the_same_sweep():
    full, tiny = regression_sweep("air_quality", "regression80"), None
    tiny = smoke(full)
    assert set(tiny.axes) == set(full.axes)
    assert all(len(v) <= 2 for v in tiny.axes.values())
    assert tiny.base["folds"] == 3 and tiny.base["n_samples"] == 300


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
        plan(regression_sweep("diabetes", "demo", epsilons=[1.5]), SweepOptions(name="x"))
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
    from sbfn_dist.config import TrialConfig
    from sweeps.trainable import trial_key
    config = trial_config({"n_members": 2}, regression_sweep("diabetes", "demo").base, "s")
    defaults = TrialConfig().to_dict()
    trimmed = {k: v for k, v in config.items() if v != defaults[k]}
    # so a field added to the library later (at its default) keeps old sweeps resumable
    assert trial_key(trimmed, {"n_members": 2}) == trial_key(config, {"n_members": 2})
    assert trial_key({**config, "epochs": 99}, {"n_members": 2}) != trial_key(config, {"n_members": 2})


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
