"""Ties between configurations: the sweep's progress line, its end table and the report name the
same best configuration where means tie (sbfn_dist.records.best_position). Seen before: a tiny
image sweep's three configurations at 66.67% were `ensemble=simple_cnn,mynets:build n_members=2
epsilon=0` in the end table and `M=2, ε=0.5` in the report; an mnist smoke run's progress line
named `ensemble=mixed n_members=10` and its end table `cnn n_members=5` at the same 0.1133."""

import pandas as pd

from analysis.best import best_per_model
from sbfn_dist.interfaces.summary import comparison_table
from sbfn_dist.records import best_position, tie_order
from tests.test_sweep_progress import progress, trial

# Three configurations tied at 2 of 3 images right, listed with the one the rule picks last.
TIED = [{"ensemble": "simple_cnn", "n_members": 2, "epsilon": 0.5},
        {"ensemble": "mixed", "n_members": 10, "epsilon": 0.0},
        {"ensemble": "cnn", "n_members": 2, "epsilon": 0.0}]


def test_fewer_members_then_each_setting_by_name_then_the_model_s_own_setting():
    assert best_position([2 / 3] * 3, TIED, higher_is_better=True) == 2
    assert best_position([0.3, 0.2, 0.3], TIED, higher_is_better=False) == 1   # no tie: best
    # the same mean summed in another order is a tie, not a win by its last bit
    assert best_position([0.1 + 0.2, 0.3], [{"n_members": 5}, {"n_members": 2}], False) == 1
    assert tie_order({"n_members": "10"}) > tie_order({"n_members": "5"})       # as numbers
    assert best_position([1.0, 1.0], [{"lr": 0.1, "model_params": '{"lambda2": 0}'},
                                      {"lr": 0.01, "model_params": '{"lambda2": 3}'}],
                         False) == 1           # the configuration's lr before its own λ2
    assert best_position([float("nan")], [{}], False) is None


def test_the_progress_line_names_the_tied_configuration_with_fewer_members():
    pack = trial("P0", "TERMINATED", {10: {"sbfn_ls": 0.1133}, 5: {"sbfn_ls": 0.1133},
                                      20: {"sbfn_ls": 0.2}}, folds_done=3, planned=3)
    assert "best sbfn_ls rmse 0.1133 (n_members=5)" in progress().line([pack])


def image_rows() -> list:
    """The tutorial's tie: three configurations of one combiner, each 2 of 3 right per fold."""
    return [{"dataset": "folder:pets", "task": "classification", "model": "sbfn", "seed": 0,
             "fold": fold, "status": "ok", "accuracy": 2 / 3, "model_params": "{}",
             "trial_id": f"t{i}", **point}
            for i, point in enumerate(TIED) for fold in range(2)]


def test_the_end_table_and_the_report_name_the_same_tied_configuration():
    axes = ["ensemble", "n_members", "epsilon"]
    # the end table's rows carry the axes as text (sweeps.engine.summary._labelled)
    labelled = [{**r, **{a: str(r[a]) for a in axes}} for r in image_rows()]
    table = comparison_table(labelled, "accuracy", ["model_params", *axes])
    assert table.loc["sbfn", "best_setting"] == "ensemble=cnn n_members=2 epsilon=0.0"
    best = best_per_model(pd.DataFrame(image_rows()))
    assert best.loc[0, "config"] == "architecture=cnn, M=2, ε=0"


def test_the_end_table_reads_members_as_numbers_in_a_tie():
    """The end table's axes are text (sweeps.engine.summary._labelled): "10" sorted before "5"
    picked M = 10 of two tied mixed ensembles."""
    rows = [{"model": "sbfn_ls", "model_params": "{}", "status": "ok", "rmse": 0.1133, "seed": 0,
             "fold": 0, "ensemble": "mixed", "n_members": m} for m in ("10", "5")]
    table = comparison_table(rows, "rmse", ["model_params", "ensemble", "n_members"])
    assert table.loc["sbfn_ls", "best_setting"] == "ensemble=mixed n_members=5"
