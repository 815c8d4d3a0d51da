"""Every model name a user gives a sweep is checked against what its trials compute, before Ray
starts, in one line with a did-you-mean: --objective (which Optuna optimises and the study
records), and the combiners and competitors of --set, --competitors and sweep files. Without it
a misspelt objective ran: the trials fell back to their best model, so TPE optimised another
model than the one the study named."""

import pytest

from sbfn_dist.errors import SbfnError
from sweeps import Sweep, classification, regression

TABLE = ["--dataset", "diabetes", "--grid", "demo"]


def refused(main, argv, capsys) -> str:
    """The command's one error line (exit 2)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_a_misspelt_objective_stops_the_sweep_before_ray_and_before_any_file(tmp_path, capsys,
                                                                             ray_connects):
    err = refused(regression.main, [*TABLE, "--smoke", "--search", "optuna", "--storage",
                                    str(tmp_path), "--objective", "sbfn_lss"], capsys)
    assert "'--objective' = 'sbfn_lss'" in err and "did you mean 'sbfn_ls'" in err
    assert "sbfn_ls, sbfn_ls_linear, g1, g2, g3, arithmetic" in err     # what the trials compute
    assert not ray_connects and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, expected", [
    (["--competitors", "svm_rbff"], "'competitors' = 'svm_rbff' is not allowed: one of svm_rbf"),
    (["--set", "combiners=sbfn_ls,g11"], "'combiners' = 'g11' is not allowed: one of sbfn_ls"),
    (["--set", "competitors=knnn"], "'competitors' = 'knnn'"),
])
def test_a_misspelt_combiner_or_competitor_gets_a_did_you_mean(argv, expected, capsys):
    err = refused(regression.main, [*TABLE, "--dry-run", *argv], capsys)
    assert expected in err and "(did you mean '" in err


def test_a_competitor_is_no_objective_of_the_configurations_searched(capsys):
    err = refused(regression.main, [*TABLE, "--dry-run", "--search", "optuna",
                                    "--objective", "svm_rbf"], capsys)
    assert "svm_rbf runs in trials of its own" in err


def test_the_objective_must_be_computed_by_every_ranked_configuration(capsys):
    err = refused(regression.main, [*TABLE, "--dry-run", "--set", "combiners=sbfn_ls",
                                    "--objective", "g1"], capsys)
    assert "every configuration it ranks computes: sbfn_ls" in err


def test_the_classification_objective_is_checked_against_its_combiners(capsys):
    err = refused(classification.main, ["--dataset", "wine", "--grid", "demo", "--dry-run",
                                        "--objective", "sbfn_stackd"], capsys)
    assert "did you mean 'sbfn_stacked'" in err


def test_a_model_the_trials_compute_is_accepted(capsys):
    assert regression.main([*TABLE, "--dry-run", "--search", "optuna", "--objective", "g1"]) == 0
    assert classification.main(["--dataset", "wine", "--grid", "demo", "--dry-run",
                                "--objective", "logit_mean"]) == 0


def test_a_sweep_files_objective_is_checked_before_ray(tmp_path, ray_connects):
    with pytest.raises(SbfnError, match="did you mean 'sbfn_ls'"):
        Sweep.from_dict({"dataset": "diabetes", "grid": "demo", "smoke": True,
                         "objective": "sbfn_lss", "storage": str(tmp_path)}).run()
    assert not ray_connects and list(tmp_path.iterdir()) == []
