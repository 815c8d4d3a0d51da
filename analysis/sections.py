"""The report's sections as blocks: the sweeps read, regression, image ensembles, tabular
classification, and the trials' status.

`*_section(ok, not_ok, test, figdir)` gives a section's blocks: per data set a heading with its
figures (drawn into `figdir`; none when it is None, as the benchmark times tables only; a Skip
becomes a note that says why a figure is missing), then the tables comparing the models.
Tables marked `detail` are moved by report.py to the closing "Detailed tables" section.
"""

import re
from pathlib import Path

import pandas as pd

from analysis import figures, image_tables as it, paper_images, tables
from analysis.configs import configurations
from analysis.document import Figure, Heading, Table, Text
from analysis.labels import model_label
from sbfn_dist.settings.records import metric_of

REGRESSION_LEVEL = 0.90         # the paper's regression intervals are 90%


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_").lower() or "x"


def overview_blocks(results) -> list:
    """The sweeps read, and what is missing from them."""
    blocks = [Heading("Sweeps"), Table("sweeps", "Sweeps read",
                                       tables.sweep_summary(results.sweeps),
                                       notes=tables.NOTES["sweeps"])]
    for s in results.sweeps:
        if s.n_missing:
            blocks.append(Text(f"Partial sweep '{s.name}': {s.n_trials} of {s.n_trials_expected} "
                               f"trials have results; {s.n_missing} are missing (not finished, "
                               f"or never started). Every statistic below uses only what is present."))
        elif s.n_trials_expected is None:
            blocks.append(Text(f"Sweep '{s.name}' has no sweep.json, so the number of trials it "
                               f"should have is unknown; {s.n_trials} trials were found."))
    if not results.not_ok.empty:
        blocks.append(Text(f"{len(results.not_ok)} rows diverged or failed: they are never "
                           "averaged in, and the table 'Trials that diverged or failed' under "
                           "Detailed tables lists them."))
    return blocks


def status_blocks(results) -> list:
    """Rows by status, and the rows that diverged or failed (both detailed tables)."""
    blocks = [Table("status", "Rows by status", tables.status_counts(results.table),
                    notes=tables.NOTES["status"], detail=True)]
    if not results.not_ok.empty:
        blocks.append(Table("problems", "Trials that diverged or failed",
                            tables.problem_list(results.not_ok), detail=True))
    return blocks


def _unit(ok: pd.DataFrame) -> str:
    units = ok["target_unit"].dropna().unique() if "target_unit" in ok else []
    return str(units[0]) if len(units) == 1 else ""


def regression_section(ok: pd.DataFrame, not_ok: pd.DataFrame, test: str,
                       figdir: Path | None = None) -> list:
    blocks = []
    for dataset, sub in ok.groupby("dataset", sort=True):
        blocks += [Heading(f"{dataset}", 3), *regression_figures(sub, figdir),
                   *regression_tables(sub, not_ok)]
    return blocks + [Heading("Regression: comparisons", 3), *heterogeneous_blocks(ok, test),
                     *ranking_blocks(ok, "regression", test)]


def regression_tables(sub: pd.DataFrame, not_ok: pd.DataFrame) -> list:
    """One data set's quartile table and (M, ε) intervals."""
    dataset, unit = sub["dataset"].iloc[0], _unit(sub)
    conf = configurations(sub, metric_of("regression"))
    q = tables.quartile_table(sub, not_ok, conf=conf)
    view = q[["label", "first_model", "std_dev", "q1", "q3", "n_configurations",
              "excluded_rows", "best_config"]].rename(columns={
        "label": "model", "first_model": "1st model", "std_dev": "Std dev.", "q1": "1st Q",
        "q3": "3rd Q", "n_configurations": "configs", "excluded_rows": "excluded rows",
        "best_config": "best configuration"})
    blocks = [Table(f"quartiles_{slug(dataset)}", f"{dataset}: statistics of the test RMSE "
                    f"({unit or 'target units'}) over all hyper-parameter configurations",
                    q, view, tables.NOTES["quartiles"])]
    iv = tables.interval_by_m_eps(sub, "regression", REGRESSION_LEVEL, conf=conf)
    if not iv.empty:
        blocks.append(Table(f"rmse_m_eps_{slug(dataset)}", f"{dataset}: mean test RMSE with "
                            f"{REGRESSION_LEVEL:.0%} interval by (M, ε)", iv, None,
                            tables.m_eps_notes("regression", REGRESSION_LEVEL), detail=True))
    return blocks


def heterogeneous_blocks(ok: pd.DataFrame, test: str) -> list:
    """The combiners of heterogeneous hypothesis sets against each of their inputs."""
    table = tables.heterogeneous(ok, test)
    if table.empty:
        return []
    return [Table("heterogeneous", "Heterogeneous hypothesis sets: each combiner against each "
                  "of its inputs and the stacking anchors (test RMSE)", table,
                  notes=tables.NOTES["heterogeneous"])]


def ranking_blocks(ok: pd.DataFrame, task: str, test: str, scope: str = "") -> list:
    """The ranking and pair tables; `scope` tells apart two sections of one task (file names)."""
    metric = metric_of(task)
    name, of = (f"{metric}_{scope}", f", {scope}") if scope else (metric, "")
    ranks, pairs = tables.ranking(ok, task, test)
    if ranks.empty:
        return [Text(f"Ranking by {metric}{of}: skipped, fewer than two models share a fold.")]
    test_name = {"t": "Student's paired t-test", "wilcoxon": "Wilcoxon signed-rank test"}[test]
    notes = tables.NOTES["ranking"] + [f"Test: {test_name}, two-sided."]
    if test == "wilcoxon":
        notes.append("With n folds the smallest attainable Wilcoxon p is 2/2^n (0.0625 at n = 5).")
    return [Table(f"ranking_{name}", f"Model ranking by {metric}{of}", ranks, notes=notes),
            Table(f"pairs_{name}", f"Paired tests between models ({metric}{of})", pairs,
                  notes=notes, detail=True)]


REFERENCE_LINES = ("Horizontal lines, where the sweep has them: each competitor's (dashed) and "
                   "the single network's (M = 1, dotted) mean over folds of its best "
                   "configuration.")


def regression_figures(sub: pd.DataFrame, figdir: Path | None) -> list:
    """One data set's (M, ε) figure (with the competitors and the single network as lines)
    and violins; none without a figdir."""
    if figdir is None:
        return []
    dataset, unit = sub["dataset"].iloc[0], _unit(sub)
    s = slug(dataset)
    draw_m_eps = lambda p: figures.by_m_eps(
        tables.interval_by_m_eps(sub, "regression", REGRESSION_LEVEL),
        f"test RMSE{f' ({unit})' if unit else ''}", p,
        refs=tables.reference_scores(sub, "regression"))
    return [_figure(f"rmse_m_eps_{s}", f"{dataset}: RMSE by (M, ε)",
                    f"Mean test RMSE over folds and its {REGRESSION_LEVEL:.0%} Student-t interval "
                    f"for the best configuration of each (M, ε) pair, per combiner. "
                    f"{REFERENCE_LINES}", draw_m_eps, figdir),
            _figure(f"rmse_violin_{s}", f"{dataset}: RMSE across configurations",
                    "Distribution over configurations of each model's mean test RMSE "
                    "(violin; line: median).",
                    lambda p: figures.violins(sub, "rmse", f"test RMSE ({unit or 'target units'})",
                                              p), figdir)]


def _figure(name: str, title: str, caption: str, draw, figdir: Path) -> Figure:
    try:
        return Figure(name, title, draw(figdir / f"{name}.png"), caption)
    except figures.Skip as why:
        return Figure(name, title, None, str(why))


def image_section(ok: pd.DataFrame, not_ok: pd.DataFrame, test: str,
                  figdir: Path | None = None) -> list:
    return (dataset_figures(ok, IMAGE_FIGURES, figdir)
            + [Heading("Image ensembles: comparisons", 3), *image_tables(ok, test)])


def image_tables(ok: pd.DataFrame, test: str) -> list:
    acc = it.overall_accuracy(ok)
    best = it.best_configurations(ok)
    eps = it.epsilon_sensitivity(ok)
    blocks = [Table("accuracy_overall", "Overall test accuracy (%) per data set and "
                    "architecture mix", acc, it.overall_view(acc), it.NOTES["overall"]),
              Table("best_configurations", "Best configuration per data set, architecture mix and "
                    "combiner", best, _best_view(best), it.NOTES["best"], detail=True),
              Table("efficiency", "Efficiency", it.efficiency(ok), None, it.NOTES["efficiency"],
                    detail=True),
              Table("epsilon_sensitivity", "ε-sensitivity: accuracy (%) by ε, heterogeneous vs "
                    "homogeneous", eps, it.epsilon_view(eps), it.NOTES["eps"], detail=True)]
    gain = it.heterogeneity_gain(ok, test)
    if not gain.empty:
        blocks.append(Table("heterogeneity_gain", "Heterogeneous vs homogeneous mixes, paired by "
                            "split (accuracy points)", gain, it.heterogeneity_view(gain),
                            it.NOTES["heterogeneity"]))
    paper = paper_images.paper_comparison(ok)
    if not paper.empty:
        blocks.append(Table("paper_comparison", "Against the paper's image tables (accuracy %)",
                            paper, paper_images.paper_view(paper), paper_images.NOTES))
    diag = it.diagnostics_by_epsilon(ok)
    if not diag.empty:
        blocks.append(Table("diagnostics_epsilon", "Ensemble diagnostics against ε", diag, None,
                            it.NOTES["diagnostics"], detail=True))
    return blocks + ranking_blocks(ok, "classification", test)


def _best_view(best: pd.DataFrame) -> pd.DataFrame:
    view = best.assign(model=best["model"].map(model_label))
    view["accuracy (%)"] = it.plus_minus(view["accuracy_pct"], view["half_width_pct"])
    keep = ["dataset", "ensemble", "model", "config", "n_members", "epsilon", "accuracy (%)",
            "member_accuracy_mean", "train_seconds", "eval_seconds"]
    return view[[c for c in keep if c in view]].rename(columns={
        "n_members": "M", "epsilon": "ε", "member_accuracy_mean": "members (%)",
        "train_seconds": "train s", "eval_seconds": "eval s"})


ACCURACY_VIOLIN = (
    "accuracy_violin", "accuracy across configurations", "Distribution over configurations of "
    "each combiner's mean test accuracy (violin; line: median).",
    lambda sub, p: figures.violins(sub, "accuracy", "test accuracy (%)", p))

IMAGE_FIGURES = (
    ("accuracy_by_m", "accuracy by M", "Mean test accuracy and its 95% interval across splits "
     "against the number of members M, per combiner (all other settings pooled).",
     lambda sub, p: figures.accuracy_by(sub, "n_members", "M (number of members)", p)),
    ("accuracy_by_eps", "accuracy by ε", "Mean test accuracy and its 95% interval across splits "
     "against the diversity parameter ε, per combiner.",
     lambda sub, p: figures.accuracy_by(sub, "epsilon", "ε (diversity parameter)", p)),
    ("accuracy_by_mix", "accuracy by architecture mix", "Mean test accuracy and its 95% interval "
     "across splits per architecture mix (heterogeneous 'mixed' vs homogeneous) and combiner.",
     figures.accuracy_by_architecture),
    ACCURACY_VIOLIN,
    ("time_vs_accuracy", "training time vs accuracy", "Each configuration's mean training time "
     "per split (members + combiner) against its mean test accuracy.", figures.time_vs_accuracy),
    ("diagnostics_eps", "diagnostics vs ε", "Left: cross-entropy Bregman terms of the members "
     "(ensemble loss, average member loss, diversity, bias at the centroid). Right: Gibbs risk, "
     "expected disagreement, majority-vote risk and C-bound; line style: architecture mix.",
     lambda sub, p: figures.diagnostics_vs_eps(it.diagnostics_by_epsilon(sub), p)),
)


def dataset_figures(ok: pd.DataFrame, specs, figdir: Path | None) -> list:
    """Per data set a heading and every (name, title, caption, draw(rows, path)) of `specs`
    drawn for its rows; only the headings without a figdir."""
    blocks = []
    for dataset, sub in ok.groupby("dataset", sort=True):
        blocks.append(Heading(f"{dataset}", 3))
        if figdir is None:
            continue
        for name, title, caption, draw in specs:
            blocks.append(_figure(f"{name}_{slug(dataset)}", f"{dataset}: {title}", caption,
                                  lambda p, d=draw, s=sub: d(s, p), figdir))
    return blocks


# ------------------------------------------------------------------ tabular classification
BY_DATASET = ("dataset",)       # tabular rows have no architecture mix: compared per data set


def split_classification(ok: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(image, tabular) classification rows: only image rows carry `ensemble` (the CNN members'
    architecture mix); tabular rows (MLP members and the competitors) have none."""
    image = ok["ensemble"].notna() if "ensemble" in ok else pd.Series(False, index=ok.index)
    return ok[image], ok[~image]


def tabular_section(ok: pd.DataFrame, not_ok: pd.DataFrame, test: str,
                    figdir: Path | None = None) -> list:
    return (dataset_figures(ok, TABULAR_FIGURES, figdir)
            + [Heading("Tabular classification: comparisons", 3), *tabular_tables(ok, test)])


def tabular_tables(ok: pd.DataFrame, test: str) -> list:
    acc = it.overall_accuracy(ok, BY_DATASET)
    conf = tables.configuration_table(ok, "classification")
    blocks = [Table("tabular_accuracy_overall", "Test accuracy (%) per data set and model "
                    "(ensemble combiners and competitors)", acc,
                    it.overall_view(acc, BY_DATASET, "fold"), it.NOTES["overall_folds"]),
              Table("tabular_accuracy_configurations", "Test accuracy (%) per model and "
                    "configuration, mean ± std across folds", conf, _configuration_view(conf),
                    tables.NOTES["configurations"], detail=True)]
    iv = tables.interval_by_m_eps(ok, "classification", it.LEVEL)
    if not iv.empty:
        blocks.append(Table("tabular_accuracy_m_eps", f"Mean test accuracy (%) with {it.LEVEL:.0%} "
                            "interval by (M, ε)", iv, _m_eps_view(iv),
                            tables.m_eps_notes("classification", it.LEVEL), detail=True))
    return blocks + ranking_blocks(ok, "classification", test, "tabular")


def _configuration_view(conf: pd.DataFrame) -> pd.DataFrame:
    view = conf.assign(model=conf["model"].map(model_label),
                       accuracy=it.plus_minus(100 * conf["mean"], 100 * conf["std"], "fold"))
    keep = ["dataset", "model", "config", "n_members", "epsilon", "accuracy", "n_folds"]
    return view[[c for c in keep if c in view]].rename(columns={
        "config": "configuration", "n_members": "M", "epsilon": "ε", "accuracy": "accuracy (%)",
        "n_folds": "folds"})


def _m_eps_view(iv: pd.DataFrame) -> pd.DataFrame:
    half = 100 * (iv["ci_high"] - iv["mean"])
    view = iv.assign(model=iv["model"].map(model_label),
                     accuracy=it.plus_minus(100 * iv["mean"], half, "fold"))
    return view[["dataset", "model", "n_members", "epsilon", "accuracy", "n_folds", "config"]].rename(
        columns={"n_members": "M", "epsilon": "ε", "accuracy": "accuracy (%)", "n_folds": "folds",
                 "config": "best configuration"})


TABULAR_FIGURES = (
    ("accuracy_m_eps", "accuracy by (M, ε)", f"Mean test accuracy over folds and its {it.LEVEL:.0%} "
     f"Student-t interval for the best configuration of each (M, ε) pair, per combiner. "
     f"{REFERENCE_LINES}",
     lambda sub, p: figures.by_m_eps(tables.interval_by_m_eps(sub, "classification", it.LEVEL),
                                     "test accuracy (%)", p, scale=100,
                                     refs=tables.reference_scores(sub, "classification"))),
    ACCURACY_VIOLIN,
)
