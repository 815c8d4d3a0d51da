"""Sweep commands refuse bad input with one clear line (exit 2), before any trial runs."""

import os
import socket

import pytest

from sweeps.classification import main as classification
from sweeps.images import main_for
from sweeps.regression import main as regression

SMOKE = ["--dataset", "diabetes", "--grid", "demo", "--smoke", "--no-mlflow"]


def error_of(capsys, code):
    out = capsys.readouterr()
    assert code == 2, out
    assert "Traceback" not in out.err
    return out.err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unknown_grid_names_the_known_ones(capsys):
    err = error_of(capsys, regression(["--dataset", "diabetes", "--grid", "regression81"]))
    assert "regression81" in err and "regression80" in err


def test_a_bad_epsilon_list_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        regression(SMOKE + ["--epsilons", "0,abc"])
    assert exit_.value.code == 2
    assert "not a list of ε values" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        regression(SMOKE + ["--epsilons", "0.2", "1.5"])
    assert "must lie in [0.0, 1.0]" in capsys.readouterr().err


@pytest.mark.parametrize("fraction", ["1.5", "0"])
def test_gpus_per_trial_must_be_a_fraction_in_0_1(capsys, fraction, tmp_path):
    code = main_for("digits", ["--num-gpus", "1", "--gpus-per-trial", fraction, "--no-mlflow",
                               "--storage", str(tmp_path)])
    err = error_of(capsys, code)
    assert "--gpus-per-trial" in err and "(0, 1]" in err


def test_gpus_that_this_machine_lacks_fail_fast(capsys, tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    code = main_for("digits", ["--smoke", "--num-gpus", "1", "--no-mlflow", "--storage", str(tmp_path)])
    assert "this machine has 0 CUDA GPU" in error_of(capsys, code)


def test_an_unreachable_address_fails_in_seconds(capsys, tmp_path):
    code = regression(SMOKE + ["--address", f"127.0.0.1:{free_port()}", "--storage", str(tmp_path)])
    err = error_of(capsys, code)
    assert "cannot reach a Ray cluster" in err and "--address" in err
    assert not (tmp_path / "diabetes-demo-smoke" / "sweep.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_an_unwritable_storage_path_is_refused_as_non_root(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    err = error_of(capsys, regression(SMOKE + ["--storage", str(locked)]))
    assert "cannot write to the results storage" in err


def test_an_unwritable_storage_path_is_refused(capsys):
    err = error_of(capsys, regression(SMOKE + ["--storage", "/proc/sbfn-results"]))
    assert "cannot write to the results storage" in err and "--storage" in err


def test_a_remote_storage_needs_a_tracking_server(capsys):
    err = error_of(capsys, regression(SMOKE[:-1] + ["--storage", "s3://bucket/prefix"]))
    assert "--mlflow-uri" in err


def test_dry_run_lists_trials_and_resources_and_runs_nothing(capsys, tmp_path):
    assert regression(SMOKE + ["--dry-run", "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 configurations in 3 trials (--pack auto), 18 folds/splits" in out
    assert "1 CPU" in out and "trial   0" in out
    assert "competitors_s0_" in out
    assert not any(tmp_path.iterdir())


def test_dry_run_without_packing_lists_one_configuration_per_trial(capsys, tmp_path):
    assert regression(SMOKE + ["--dry-run", "--pack", "off", "--storage", str(tmp_path)]) == 0
    assert "6 trials, 18 folds/splits" in capsys.readouterr().out


def test_a_missing_data_directory_stops_the_sweep_before_ray(capsys, tmp_path):
    code = regression(["--dataset", "air_quality", "--smoke", "--no-mlflow", "--storage",
                       str(tmp_path), "--data-dir", str(tmp_path / "nowhere")])
    err = error_of(capsys, code)
    assert "air" in err.lower()


def test_one_holdout_split_is_a_valid_image_sweep_but_one_kfold_fold_is_not(capsys, tmp_path):
    assert main_for("digits", ["--splits", "1", "--dry-run", "--storage", str(tmp_path)]) == 0
    assert "folds/splits" in capsys.readouterr().out
    err = error_of(capsys, regression(["--dataset", "diabetes", "--grid", "demo", "--folds", "1",
                                       "--dry-run", "--storage", str(tmp_path)]))
    assert "folds" in err and "split=kfold" in err


def test_a_set_that_applies_to_no_trial_is_refused_before_ray_starts(capsys, tmp_path):
    import ray
    err = error_of(capsys, regression(SMOKE + ["--set", "temperature=2", "--storage", str(tmp_path)]))
    assert "'temperature'" in err and "the s-BFN classification heads" in err
    assert "tabular regression" in err
    assert not ray.is_initialized() and not any(tmp_path.iterdir())


def test_a_set_every_trial_overrides_is_refused_too(capsys, tmp_path):
    err = error_of(capsys, regression(SMOKE + ["--set", "n_members=3", "--dry-run"]))
    assert "'n_members'" in err and "--members" in err


@pytest.mark.parametrize("setting, where", [("width=20", "tabular data sets"),
                                            ("lambda2=3", "regression combiners"),
                                            ("dtype=float64", "tabular data sets"),
                                            ("split=kfold", "holdout")])
def test_an_image_sweep_refuses_settings_of_tables(capsys, tmp_path, setting, where):
    err = error_of(capsys, main_for("digits", ["--smoke", "--set", setting, "--dry-run",
                                               "--storage", str(tmp_path)]))
    assert f"'{setting.split('=')[0]}'" in err and where in err


def test_classification_dry_run_lists_the_reference_competitors_and_ensembles(capsys, tmp_path):
    assert classification(["--dataset", "iris", "--grid", "demo", "--smoke", "--dry-run",
                           "--storage", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "6 configurations in 4 trials (--pack auto), 18 folds/splits" in out
    assert "M1_eps0_reference_s0_" in out   # the reference holds out no validation part: own pack
    assert "svm_rbf_competitors_s0_" in out and "M10_eps0.5_s0_" in out
    with pytest.raises(SystemExit):    # λ2 is a regression combiner's: not an option here
        classification(["--dataset", "iris", "--grid", "demo", "--lambda2", "3"])
    assert "unrecognized arguments: --lambda2" in capsys.readouterr().err
