"""The table a sweep prints at its end: every model appears, nothing is averaged across
settings that differ, and diverged rows are counted, never hidden."""

import io

import pandas as pd

from sweeps.engine.plan.grid_trials import image_sweep, regression_sweep
from sweeps.engine.plan.planning import SweepOptions
from sweeps.engine.summary import SweepOutcome, print_summary


def row(model, rmse, fold, role="ensemble", lr=0.03, status="ok", n_members=5, params="{}"):
    return dict(model=model, rmse=rmse, fold=fold, role=role, lr=lr, status=status,
                n_members=n_members, epsilon=0.35, model_params=params, trial_id=f"{role}{lr}")


def summary(rows, spec=None, plan=None, objective="") -> str:
    out = io.StringIO()
    outcome = SweepOutcome(root="/r", table=pd.DataFrame(rows), tracking_uri=None, trials=[],
                           seconds=60.0, plan=plan, objective=objective)
    print_summary(outcome, spec or regression_sweep("diabetes", "demo"), SweepOptions(name="s"),
                  out)
    return out.getvalue()


def test_the_two_references_are_two_settings_never_averaged_together():
    text = summary([row("arithmetic", 10.0 + f, f) for f in range(2)]
                   + [row("arithmetic", 50.0, f, role="reference", lr=0.03, n_members=1)
                      for f in range(2)]
                   + [row("arithmetic", 20.0, f, role="reference", lr=0.003, n_members=1)
                      for f in range(2)])
    line = next(l for l in text.splitlines() if l.startswith("single_network_M1"))
    assert '{"lr": 0.003}' in line and " 20 " in line and line.split()[-2] == "2"   # 2 settings


def test_the_end_table_says_which_s_bfn_form_won_and_names_the_paper_s():
    """Issue 32: the demo ranked the paper's map (sbfn_ls) near the bottom while the sweep
    tracked it; the line after the table names the winning form, the objective and the
    paper's form, whichever wins."""
    rows = [row(m, v + f, f) for f in range(2) for m, v in
            (("sbfn_ls", 74.0), ("sbfn_ls_linear", 54.0), ("g1", 67.0), ("arithmetic", 55.0))]
    line = summary(rows, objective="sbfn_ls_linear").splitlines()
    [line] = [l for l in line if l.startswith("s-BFN forms")]
    assert line == ("s-BFN forms by rmse, best first: sbfn_ls_linear 54.5 (the objective) won; "
                    "then g1 67.5, sbfn_ls 74.5 (the paper's form: --objective sbfn_ls ranks "
                    "by it)")
    paper = [{**r, "rmse": r["rmse"] - 30.0} if r["model"] == "sbfn_ls" else r for r in rows]
    assert ("best first: sbfn_ls 44.5 (the objective; the paper's form) won; then "
            "sbfn_ls_linear 54.5, g1 67.5") in summary(paper, objective="sbfn_ls")
    assert "s-BFN forms" not in summary([r for r in rows if r["model"] != "g1"
                                         and r["model"] != "sbfn_ls"])       # one form: no line


def test_a_model_whose_every_row_diverged_is_listed_with_its_count():
    text = summary([row("arithmetic", 10.0, f) for f in range(3)]
                   + [row("arithmetic", float("nan"), f, role="reference", status="diverged",
                          n_members=1) for f in range(3)])
    line = next(l for l in text.splitlines() if l.startswith("single_network_M1"))
    assert line.split()[-1] == "3"          # not_ok: the three diverged folds


def test_a_sweep_whose_every_row_diverged_says_so_and_how_to_train_instead():
    """It ended in a traceback from the end table ("Columns must be same length as key"), and
    the Python API's run() lost its result."""
    rows = [{**row(m, float("nan"), f, status="diverged"),
             "error": "member parameters became non-finite in epoch 1"}
            for f in range(2) for m in ("sbfn_ls_linear", "g1")]
    text = summary(rows)
    assert ("no score: every model diverged (member parameters became non-finite in epoch 1): "
            "train with a smaller lr or init_scale (--set lr=... init_scale=...)") in text
    assert "rmse_mean" not in text                           # no table of NaN


def test_an_image_sweep_without_references_or_model_params_prints_every_combiner():
    # Image records carry no model_params; the Fashion-MNIST sweep once crashed here at its end.
    rows = [dict(model=m, accuracy=a, fold=f, role="ensemble", lr=1e-3, status="ok",
                 ensemble="mixed", n_members=5, epsilon=0.5, trial_id=f"t{f}")
            for f in range(2) for m, a in (("sbfn_stacked", 0.8), ("logit_mean", 0.78))]
    text = summary(rows, image_sweep("fashion_mnist"))
    assert "sbfn_stacked" in text and "logit_mean" in text
    assert "ensemble=mixed n_members=5 epsilon=0.5 " in text and "{}" not in text


def test_m_reads_as_an_integer_when_competitor_rows_have_none():
    # results.parquet stores n_members as floats once competitor rows (no M) sit beside it
    rows = ([row("sbfn_ls", 10.0, f, n_members=2.0) for f in range(2)]
            + [row("svm_rbf", 12.0, f, role="competitors", n_members=float("nan")) for f in range(2)])
    text = summary(rows)
    assert "n_members=2 epsilon=0.35" in text and "n_members=2.0" not in text


def test_the_printed_report_command_runs_as_pasted_from_where_the_sweep_ran(tmp_path):
    """The interpreter that ran the sweep (as the README writes it, .venv/bin/python, inside
    the project), and a path with a space kept whole."""
    import os
    import shlex
    import sys
    root = str(tmp_path / "my results" / "s")
    out = io.StringIO()
    outcome = SweepOutcome(root=root, table=pd.DataFrame(), tracking_uri=None, trials=[],
                           seconds=1.0)
    print_summary(outcome, regression_sweep("diabetes", "demo"), SweepOptions(name="s"), out)
    line = next(l for l in out.getvalue().splitlines() if l.startswith("report:"))
    python, *args = shlex.split(line.removeprefix("report:"))
    assert args == ["-m", "analysis.report", root]
    assert os.path.samefile(python, sys.executable)
    assert not os.path.isabs(python) or not sys.executable.startswith(os.getcwd())


def test_a_configuration_stopped_early_never_tops_the_end_table():
    # ASHA stopped one configuration after a lucky first fold: its one-fold mean once topped the
    # table over a configuration measured on all five folds (SweepResult.best already ranked
    # only complete ones: sweeps.engine.results.ranking, shared now).
    from types import SimpleNamespace
    from sweeps.engine.plan.planning import folds_of, trial_config
    base = regression_sweep("diabetes", "demo").base
    whole, stopped = (trial_config({"n_members": m}, base, "s") for m in (5, 2))
    rows = ([{**row("sbfn_ls", 10.0, f), "trial_id": whole["trial_id"]} for f in folds_of(whole)]
            + [{**row("sbfn_ls", 5.0, 0, n_members=2), "trial_id": stopped["trial_id"]}])
    text = summary(rows, plan=SimpleNamespace(configs=[whole, stopped]))
    line = next(l for l in text.splitlines() if l.startswith("sbfn_ls"))
    assert "n_members=5" in line and " 10 " in line and line.split()[-3] == "5"     # 5 folds
    assert "1 configurations with fewer folds than planned" in text
    alone = summary(rows[-1:], plan=SimpleNamespace(configs=[whole, stopped]))
    assert " 5 " in alone and "fewer folds" not in alone    # none complete: shown as they are


def test_a_per_fold_grid_whose_every_fold_ran_leaves_nothing_out():
    # one trial per fold (a per_fold grid: stacking, heterogeneous): the configuration is the
    # folds' trials together; once it said "4 configurations with fewer folds than planned" of
    # a configuration with every fold
    from types import SimpleNamespace
    from sweeps.engine.plan.planning import trial_config
    base = regression_sweep("diabetes", "demo").base
    trials = [trial_config({"n_members": 5, "fold": f}, base, "s") for f in range(5)]
    rows = [{**row("sbfn_ls", 10.0 + f, f), "trial_id": t["trial_id"]}
            for f, t in enumerate(trials)]
    text = summary(rows, plan=SimpleNamespace(configs=trials))
    assert "fewer folds" not in text
    line = next(l for l in text.splitlines() if l.startswith("sbfn_ls"))
    assert line.split()[-3] == "5"                              # its mean over the 5 folds


def test_the_end_table_is_followed_by_the_report_s_verdict():
    """The same verdict as the report's (analysis.verdict): the objective's s-BFN against the
    practitioners' combiner, corrected t over the folds, positive = s-BFN better."""
    import math
    from scipy import stats
    ours, theirs = [50.0, 52.0, 49.0, 51.5, 50.5], [51.0, 52.5, 50.5, 51.0, 52.0]
    sizes = dict(dataset="diabetes", task="regression", seed=0, sweep="s", n_train=80,
                 n_test=20, split="kfold")
    rows = [{**row(m, v, f), **sizes} for f, (a, b) in enumerate(zip(ours, theirs))
            for m, v in (("sbfn_ls_linear", a), ("ensemble_selection", b), ("sbfn_ls", a + 9))]
    text = summary(rows, objective="sbfn_ls_linear").splitlines()
    [at] = [i for i, l in enumerate(text) if l.startswith("verdict")]
    assert text[at - 1].startswith("s-BFN forms") and text[at + 2].startswith("results:")
    d = [b - a for a, b in zip(ours, theirs)]                # RMSE: theirs minus ours
    mean, var = sum(d) / 5, stats.tvar(d)
    scale = math.sqrt((1 / 5 + 20 / 80) * var)
    t, half = mean / scale, stats.t.ppf(0.975, 4) * scale
    p = 2 * stats.t.sf(abs(t), 4)
    assert text[at] == (f"verdict (corrected t over 5 splits, rmse, + = s-BFN better): "
                        f"sbfn_ls_linear vs ensemble_selection {mean:+.4g} [{mean - half:+.4g}, "
                        f"{mean + half:+.4g}] tie (4 better / 1 worse; p (Holm) {p:.2g})")
