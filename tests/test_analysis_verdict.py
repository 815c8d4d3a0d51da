"""The verdict (analysis/verdict.py) and the calibration shown beside it (calibration.py, the
reliability diagram) on hand-made results tables, against values computed here."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from analysis import calibration, figures, tables
from analysis.document import MISSING
from analysis.report import write_report
from analysis.stats import PairedTest, paired_test_of
from analysis.verdict import verdict_lines, verdict_view, verdicts

SEEDS, FOLDS = (0, 1), range(5)
# Regression scores are sums of a few numbers near 10 (rounding ~1e-15); the statistics over
# them are a handful of float operations more.
TOL = 1e-12


def rng_scores(seed: int, loc: float, scale: float) -> np.ndarray:
    """10 scores, one per (seed, fold), in (seed, fold) order."""
    return np.random.default_rng(seed).normal(loc, scale, len(SEEDS) * len(FOLDS))


# The s-BFN's scores at its best configuration (M = 5, λ2 = 1), and each other model's at its.
SBFN = 10 + rng_scores(0, 0, 0.5)
AGAINST = {"ensemble_selection": SBFN + 2 + rng_scores(1, 0, 0.3),    # clearly worse: a win
           "stack_nnls": SBFN + rng_scores(2, 0, 0.3),               # as good: a tie
           "stack_ridge": SBFN - 1.5 + rng_scores(3, 0, 0.3),        # clearly better: a loss
           "best_single": np.where(np.arange(10) < 3, SBFN, SBFN + 0.4 + rng_scores(4, 0, 1))}


def reg_row(model, score, seed, fold, m, lam=np.nan, **extra) -> dict:
    return dict(sweep="s", trial_id=f"M{m}-s{seed}-f{fold}", dataset="d", task="regression",
                model=model, family="sbfn", seed=seed, fold=fold, n_members=m, epsilon=0.1,
                lambda2=lam, model_params=json.dumps({} if lam != lam else {"lambda2": lam}),
                rmse=score, n_train=400, n_test=100, split="kfold", status="ok", error="",
                **extra)


def regression_table() -> pd.DataFrame:
    """Two member settings (M = 2, 5) per (seed, fold) trial; the s-BFN's λ2 path (0, 1);
    every model best at M = 5 but best_single, best at M = 2 (other members)."""
    out = []
    for i, (seed, fold) in enumerate((s, f) for s in SEEDS for f in FOLDS):
        out += [reg_row("sbfn_ls_linear", SBFN[i], seed, fold, 5, 1.0),
                reg_row("sbfn_ls_linear", SBFN[i] + 3, seed, fold, 5, 0.0),
                reg_row("sbfn_ls_linear", SBFN[i] + 1, seed, fold, 2, 1.0),
                reg_row("sbfn_ls_linear", SBFN[i] + 4, seed, fold, 2, 0.0)]
        for model, scores in AGAINST.items():
            worse, better = (5, 2) if model == "best_single" else (2, 5)
            out += [reg_row(model, scores[i], seed, fold, better),
                    reg_row(model, scores[i] + 5, seed, fold, worse)]
    return pd.DataFrame(out)


@pytest.fixture(scope="module")
def verdict() -> pd.DataFrame:
    return verdicts(regression_table(), PairedTest(), {"s": "sbfn_ls_linear"}).set_index("against")


def test_each_model_is_read_at_its_best_configuration_over_the_seed_fold_pairs(verdict):
    assert list(verdict.index) == ["ensemble_selection", "stack_nnls", "stack_ridge",
                                   "best_single"]
    assert set(verdict["sbfn_config"]) == {"M=5, λ2=1"}
    assert verdict.loc["best_single", "against_config"] == "M=2"
    assert (verdict["n_pairs"] == 10).all() and (verdict["size_ratio"] == 0.25).all()
    assert verdict["same_members"].tolist() == [True, True, True, False]


def test_the_difference_is_positive_where_the_s_bfn_is_better_with_the_corrected_interval(
        verdict):
    ratio, q = 100 / 400, sp.t.ppf(0.975, 9)
    p = {}
    for model, scores in AGAINST.items():
        d = scores - SBFN                           # RMSE: the other's minus the s-BFN's
        half = q * math.sqrt((1 / 10 + ratio) * d.var(ddof=1))
        row = verdict.loc[model]
        assert row["mean_difference"] == pytest.approx(d.mean(), rel=0, abs=TOL)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(
            (d.mean() - half, d.mean() + half), rel=0, abs=TOL)
        t = d.mean() / math.sqrt((1 / 10 + ratio) * d.var(ddof=1))
        p[model] = 2 * sp.t.sf(abs(t), 9)
        assert row["p"] == pytest.approx(p[model], rel=1e-9, abs=1e-300)
    # Holm over the data set's four comparisons, by hand
    order = sorted(p, key=p.get)
    holm = np.maximum.accumulate([min(1, (4 - i) * p[m]) for i, m in enumerate(order)])
    assert verdict.loc[order, "p_holm"].tolist() == pytest.approx(list(holm), rel=1e-9)
    assert verdict["verdict"].tolist() == ["win", "tie", "loss", "tie"]


def test_pairs_are_counted_better_worse_and_equal(verdict):
    for model, row in verdict.iterrows():
        d = AGAINST[model] - SBFN
        assert (row["n_better"], row["n_worse"], row["n_equal"]) == (
            (d > 0).sum(), (d < 0).sum(), (d == 0).sum())
    assert verdict.loc["best_single", "n_equal"] == 3         # the s-BFN's own scores there


def test_a_setting_an_anchor_chose_in_its_fit_is_no_configuration_of_its():
    """stack_ridge records the alpha RidgeCV chose on each fold (best_single its column): read
    as configurations, each alpha would be one of the folds that chose it."""
    table = regression_table()
    ridge = table["model"] == "stack_ridge"
    table.loc[ridge, "model_params"] = [json.dumps({"alpha": [0.1, 1.0, 10.0][f % 3]})
                                        for f in table.loc[ridge, "fold"]]
    row = verdicts(table, PairedTest(), {}).set_index("against").loc["stack_ridge"]
    assert (row["n_pairs"], row["against_config"]) == (10, "M=5")
    assert row["mean_difference"] == pytest.approx((AGAINST["stack_ridge"] - SBFN).mean(),
                                                   rel=0, abs=TOL)
    quartiles = tables.quartile_table(table, table.iloc[:0]).set_index("model")
    assert quartiles.loc["stack_ridge", "n_configurations"] == 2       # M = 2 and M = 5


def test_the_verdict_follows_the_objective_and_falls_back_to_the_task_s_first_combiner():
    table = regression_table()
    table = pd.concat([table, table[table["model"] == "sbfn_ls_linear"].assign(
        model="sbfn_ls", rmse=lambda r: r["rmse"] + 0.5)])
    assert set(verdicts(table, PairedTest(), {"s": "sbfn_ls_linear"})["sbfn"]) == {"sbfn_ls_linear"}
    assert set(verdicts(table, PairedTest(), {})["sbfn"]) == {"sbfn_ls"}


def test_with_the_bayesian_test_a_win_is_p_better_above_0_95():
    table = verdicts(regression_table(), paired_test_of("bayes", 0.1)).set_index("against")
    assert table.loc["ensemble_selection", "p_right"] > 0.95
    assert table.loc["stack_ridge", "p_left"] > 0.95
    assert table["verdict"].tolist()[:3] == ["win", "tie", "loss"]
    sums = table[["p_left", "p_rope", "p_right"]].sum(axis=1)
    assert sums.to_numpy() == pytest.approx(1, abs=1e-15)


def test_the_sweep_prints_the_verdict_line_by_line(verdict):
    lines = verdict_lines(verdict.reset_index(), PairedTest())
    assert len(lines) == 4
    row = verdict.loc["ensemble_selection"]
    assert lines[0] == (
        f"verdict (corrected t over 10 splits, rmse, + = s-BFN better): sbfn_ls_linear vs "
        f"ensemble_selection {row['mean_difference']:+.4g} [{row['ci_low']:+.4g}, "
        f"{row['ci_high']:+.4g}] win ({row['n_better']} better / {row['n_worse']} worse; "
        f"p (Holm) {row['p_holm']:.2g})")
    assert lines[3].endswith(f"/ 3 equal; p (Holm) {verdict.loc['best_single', 'p_holm']:.2g})")


# ------------------------------------------------------------------ classification, calibration
def cls_row(model, accuracy, seed, fold, m, reliability=None, **extra) -> dict:
    return dict(sweep="c", trial_id=f"M{m}-s{seed}-f{fold}", dataset="iris",
                task="classification", model=model, family="sbfn", seed=seed, fold=fold,
                n_members=m, epsilon=0.5, accuracy=accuracy, nll=1 - accuracy, ece=0.1,
                n_train=80, n_val=20, n_test=50, split="kfold", status="ok", error="",
                reliability=reliability, **extra)


def reliability_cells(right_high: int) -> str:
    """A fold's 15 bins: 10 rows of confidence 0.5 in bin 7 (4 right), 40 of 0.95 in bin 14."""
    return json.dumps({"count": [0, 0, 0, 0, 0, 0, 0, 10, *[0] * 6, 40],
                       "confidence": [0.0] * 7 + [5.0] + [0.0] * 6 + [38.0],
                       "correct": [0] * 7 + [4] + [0] * 6 + [right_high]})


def classification_table() -> pd.DataFrame:
    out = []
    for seed in SEEDS:
        for fold in FOLDS:
            for m, shift in ((3, 0.0), (5, 0.02)):          # M = 5 is every model's best
                out += [cls_row("sbfn", 0.90 + shift, seed, fold, m, reliability_cells(36)),
                        cls_row("stack_logistic", 0.88 + shift + 0.01 * (fold % 2), seed, fold,
                                m, reliability_cells(30)),
                        cls_row("logit_mean", 0.85 + shift, seed, fold, m),
                        cls_row("base_avg", 0.80, seed, fold, m)]
    return pd.DataFrame(out)


def test_a_classification_verdict_is_in_accuracy_fractions_positive_when_the_s_bfn_is_better():
    table = verdicts(classification_table(), PairedTest(), {})
    assert table[["sbfn", "against", "metric"]].values.tolist() == [
        ["sbfn", "stack_logistic", "accuracy"]]
    d = np.array([0.02 - 0.01 * (f % 2) for _ in SEEDS for f in FOLDS])
    assert table.loc[0, "mean_difference"] == pytest.approx(d.mean(), abs=1e-15)
    assert table.loc[0, "n_better"] == 10 - table.loc[0, "n_equal"]


def test_the_reliability_bins_are_summed_over_the_best_configuration_s_folds(tmp_path):
    rows = classification_table()
    curves = calibration.reliability_curves(rows)
    assert set(curves["model"]) == {"sbfn", "stack_logistic"}      # logit_mean: no cells
    sbfn = curves[curves["model"] == "sbfn"].set_index("bin")
    n = len(SEEDS) * len(FOLDS)                                    # M = 5's rows only
    assert sbfn.loc[14, ["count", "correct", "confidence"]].tolist() == [40 * n, 36 * n, 38 * n]
    assert sbfn.loc[14, "accuracy"] == pytest.approx(0.9, abs=1e-15)
    assert sbfn.loc[7, "mean_confidence"] == pytest.approx(0.5, abs=1e-15)
    assert sbfn["ece"].iloc[0] == pytest.approx((1 + 2) / 50, abs=1e-15)   # |4-5| + |36-38|
    assert sbfn["rows"].iloc[0] == n
    assert figures.reliability_diagram(curves, tmp_path / "r.png").stat().st_size > 1000
    with pytest.raises(figures.Skip, match="reliability column"):
        figures.reliability_diagram(calibration.reliability_curves(rows.drop(
            columns="reliability")), tmp_path / "none.png")


def test_the_report_opens_on_the_verdicts_and_shows_calibration(tmp_path):
    """The verdict right after the best configurations (the sweep's own answer, issue 48), in
    report.md, report.html and as CSV; ECE and NLL beside accuracy; a reliability diagram for
    the data set; a data set without anchors named in one line."""
    rows = classification_table()
    older = rows[rows["model"].isin(["sbfn", "logit_mean"])].assign(dataset="wine",
                                                                     reliability=None)
    home = tmp_path / "c"
    home.mkdir()
    pd.concat([rows, older]).to_parquet(home / "results.parquet")
    (home / "sweep.json").write_text(json.dumps({"name": "c", "objective": "sbfn"}))
    out = write_report(home, tmp_path / "report")
    md = (out / "report.md").read_text()
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections[:4] == ["## Contents", "## Best configurations", "## Verdicts", "## Sweeps"]
    verdict = md.split("## Verdicts")[1].split("\n## ")[0]
    assert "| iris | accuracy | s-BFN | Stacking (logistic) |" in verdict
    assert "No verdict for wine: no rows of ensemble_selection, stack_nnls, stack_logistic, " \
           "best_single, or none of the s-BFN." in verdict
    assert "Test: the corrected resampled t test" in verdict
    assert len(pd.read_csv(out / "tables" / "verdicts.csv")) == 1
    assert "<h2 id='verdicts'>Verdicts</h2>" in (out / "report.html").read_text()
    overall = pd.read_csv(out / "tables" / "tabular_accuracy_overall.csv")
    sbfn = overall[(overall["dataset"] == "iris") & (overall["model"] == "sbfn")].iloc[0]
    assert (sbfn["ece_pct"], sbfn["nll"]) == pytest.approx((10.0, 0.09), abs=1e-12)
    assert (out / "figures" / "reliability_iris.png").exists()
    assert "*Figure skipped — wine: reliability diagram:* no row has the reliability" in md


def test_a_verdict_line_of_one_split_prints_no_nan():
    """A published split evaluated once has no spread: the sweep's closing line says 'no test'
    and why, not an interval and a p of NaN; the report's table shows its p cells as every
    missing number ('–'), not the text 'nan'."""
    row = dict(dataset="appliances", metric="rmse", sbfn="sbfn_rbf", against="stack_nnls",
               mean_difference=0.057, ci_low=float("nan"), ci_high=float("nan"),
               verdict="no test", n_better=1, n_worse=0, n_equal=0, n_pairs=1,
               p=float("nan"), p_holm=float("nan"), p_right=float("nan"), same_members=True,
               sbfn_config="λ2=0", against_config="", design="")
    [line] = verdict_lines(pd.DataFrame([row]), PairedTest())
    assert "nan" not in line and "no test (1 better / 0 worse; one split" in line
    assert "over 1 split," in line
    [cells] = verdict_view(pd.DataFrame([row]), PairedTest()).to_dict("records")
    assert (cells["p"], cells["p (Holm)"]) == (MISSING, MISSING)


def two_design_table(n_samples) -> pd.DataFrame:
    """regression_table as 5-fold CV of every row, and again (sweep w, other trials) as 3-fold
    CV of the folds 0-2 with `n_samples` rows and other scores."""
    five = regression_table().assign(folds=5, n_samples=None)
    three = five[five["fold"] < 3].assign(
        sweep="w", trial_id=lambda t: "w-" + t["trial_id"], folds=3, n_samples=n_samples,
        n_train=266, n_test=134, rmse=lambda t: t["rmse"] + 20 * t["fold"])
    return pd.concat([five, three], ignore_index=True)


def test_a_verdict_over_two_designs_pairs_no_splits_of_different_designs():
    """Both sweeps read all rows, 5 and 3 folds: every configuration spans the two designs, so
    no test, and its 10 + 6 splits are never folded onto 10 (seed, fold)s."""
    table = verdicts(two_design_table(None), PairedTest("t"), {"s": "sbfn_ls_linear"})
    assert set(table["verdict"]) == {"no test"} and table["p"].isna().all()
    assert table["ci_low"].isna().all() and table["mean_difference"].notna().all()
    assert (table["n_pairs"] == 16).all()
    assert table["no_test"].str.contains("kfold, folds 3, all rows; kfold, folds 5, all rows",
                                         regex=False).all()


def test_a_verdict_of_two_designs_tests_within_the_one_design_both_configurations_lie_in():
    """n_samples is a hyper-parameter: the 3-fold sweep's 200 rows are other configurations,
    with fewer folds, so both best configurations are the 5-fold sweep's, tested there."""
    table = verdicts(two_design_table(200), PairedTest(), {"s": "sbfn_ls_linear"})
    assert (table["no_test"] == "").all() and table["p"].notna().all()
    assert (table["n_pairs"] == 10).all() and (table["size_ratio"] == 0.25).all()


def test_the_report_says_under_the_verdicts_and_the_ranking_why_two_designs_get_no_test(
        tmp_path):
    home = tmp_path / "s"
    home.mkdir()
    two_design_table(None).to_parquet(home / "results.parquet")
    md = (write_report(home, tmp_path / "report") / "report.md").read_text()
    note = ("No test for d: rows of 2 resampling designs (kfold, folds 3, all rows; kfold, "
            "folds 5, all rows) are never paired and get no test")
    assert md.count(note) >= 3          # the verdicts, the ranking, its pairs


def test_a_verdict_tested_within_one_of_two_designs_says_which_and_that_they_are_not_pooled(
        tmp_path):
    table = verdicts(two_design_table(200), PairedTest(), {"s": "sbfn_ls_linear"})
    assert (table["design"] == "kfold, folds 5, all rows").all()
    assert (verdicts(regression_table(), PairedTest(), {"s": "sbfn_ls_linear"})["design"]
            == "").all()                                 # one design: nothing to tell apart
    home = tmp_path / "s"
    home.mkdir()
    two_design_table(200).to_parquet(home / "results.parquet")
    md = (write_report(home, tmp_path / "report") / "report.md").read_text()
    assert ("d holds rows of 2 resampling designs (kfold, folds 3, 200 rows; kfold, folds 5, "
            "all rows), never pooled: each comparison pairs and tests only the splits") in md
