"""The report's sections as blocks: the sweeps read, regression, image ensembles, tabular
classification, and the trials' status.

`*_section(ok, not_ok, test, figdir, searched)` gives a section's blocks: per data set a heading
with its figures (drawn into `figdir`; none when it is None, as the benchmark times tables only; a
Skip becomes a note that says why a figure is missing), then the tables comparing the models.
Tables marked `detail` are moved by report.py to the closing "Detailed tables" section.

A setting a sweep drew from a range (`searched`, its sweep.json; or one with many values:
configs.continuous_settings) is shown as a scatter of the configurations' scores against it and
a binned table (`setting_specs`, `drawn_tables`), not pair by pair or row by value: the (M, ε)
figures and interval tables keep to the data sets whose M and ε are a grid's (`listed_m_eps`).
"""

import re
from pathlib import Path

import pandas as pd

from analysis import best, calibration, figures, image_tables as it, paper_images, tables, verdict
from analysis.collect import Searched
from analysis.configs import configurations, continuous_settings, log_scaled
from analysis.document import Figure, Heading, Table, Text
from analysis.labels import metric_label, model_label, param_label
from analysis.stats import PairedTest, no_test_notes, paired_test_notes
from sbfn_dist.records import metric_of

REGRESSION_LEVEL = 0.90         # the paper's regression intervals are 90%


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", str(text)).strip("_").lower() or "x"


def best_blocks(results) -> list:
    """The report's first answer: per data set each model at its best configuration, best
    first, as the sweep's end table printed it (best.py)."""
    table = best.best_per_model(results.ok)
    if table.empty:
        return []
    objectives = {dataset: tables.objective_model(sub, sub["task"].iloc[0],
                                                  results.searched.objectives)
                  for dataset, sub in results.ok.groupby("dataset")}
    return [Heading("Best configurations"),
            *[Text(line) for line in best.headline(table, objectives)],
            Table("best_per_model", "Each model at its best configuration, best first", table,
                  best.view(table), best.NOTES)]


def overview_blocks(results) -> list:
    """The sweeps read, and what is missing from them."""
    blocks = [Heading("Sweeps"), Table("sweeps", "Sweeps read",
                                       tables.sweep_summary(results.sweeps),
                                       notes=tables.NOTES["sweeps"])]
    if results.read_from:
        blocks.append(Text(places_read(results.read_from)))
    for s in results.sweeps:
        if s.partial:
            blocks.append(Text(f"{s.partial}. Every statistic below uses only what is present."))
        elif s.n_trials_expected is None:
            blocks.append(Text(f"Sweep '{s.name}' has no sweep.json, so the number of trials it "
                               f"should have is unknown; {s.n_trials} trials were found."))
    if not results.not_ok.empty:
        blocks.append(Text(f"{len(results.not_ok)} rows diverged or failed: they are never "
                           "averaged in, and the table 'Trials that diverged or failed' under "
                           "Detailed tables lists them."))
    flagged = int(results.ok["uninformative"].eq(True).sum()) if "uninformative" in results.ok \
        else 0
    if flagged:
        blocks.append(Text(f"{flagged} ok rows come from a combiner that did not beat the constant "
                           "guess on the rows it was fitted on (uninformative; counted by model "
                           "under Detailed tables, 'Rows by status')."))
    return blocks


def places_read(read_from: dict) -> str:
    """Where the data sets given as paths were read, once (the report names them by their
    folder's or file's name)."""
    said = [f"{name} from {where} (relative to this report)" if where else
            f"{name} outside this report's tree (on the machine that ran the sweep)"
            for name, where in sorted(read_from.items())]
    return (f"Data sets given as a path are named by their folder or file; read: "
            f"{'; '.join(said)}.")


def verdict_blocks(results, test: PairedTest) -> list:
    """The verdicts (verdict.py): the s-BFN against the practitioners' combiners, per data set."""
    table = verdict.verdicts(results.ok, test, results.searched.objectives)
    missing = verdict.missing_note(results.ok, table)
    if table.empty:
        return [Heading("Verdicts"), Text(missing or "No verdict: no row has status ok.")]
    return [Heading("Verdicts"),
            Table("verdicts", "Verdicts: the s-BFN against the practitioners' combiners and the "
                  "best single hypothesis", table, verdict.verdict_view(table, test),
                  verdict.NOTES + paired_test_notes(test, table["n_pairs"])
                  + no_test_notes(table) + verdict.design_notes(results.ok, table)),
            *([Text(missing)] if missing else [])]


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


def regression_section(ok: pd.DataFrame, not_ok: pd.DataFrame, test: PairedTest,
                       figdir: Path | None = None, searched: Searched = Searched()) -> list:
    blocks = []
    for dataset, sub in ok.groupby("dataset", sort=True):
        blocks += [Heading(f"{dataset}", 3),
                   *data_set_figures(sub, REGRESSION_FIGURES, figdir, "regression", searched,
                                     M_EPS_FIGURES["regression"]),
                   *regression_tables(sub, not_ok, searched),
                   *drawn_tables(sub, "regression", searched)]
    return blocks + [Heading("Regression: comparisons", 3), *heterogeneous_blocks(ok, test),
                     *ranking_blocks(ok, "regression", test)]


def regression_tables(sub: pd.DataFrame, not_ok: pd.DataFrame, searched: Searched) -> list:
    """One data set's quartile table and (M, ε) intervals (where M and ε are a grid's)."""
    dataset, unit = sub["dataset"].iloc[0], _unit(sub)
    conf = configurations(sub, metric_of("regression"))
    q = tables.quartile_table(sub, not_ok, conf=conf)
    view = q[["label", "first_model", "std_dev", "q1", "q3", "n_configurations",
              "excluded_rows", "best_config"]].rename(columns={
        "label": "model", "first_model": BEST_MEAN, "std_dev": "Std dev.", "q1": "1st Q",
        "q3": "3rd Q", "n_configurations": "configs", "excluded_rows": "excluded rows",
        "best_config": "best configuration"})
    blocks = [Table(f"quartiles_{slug(dataset)}", f"{dataset}: statistics of the test RMSE "
                    f"({unit or 'target units'}) over all hyper-parameter configurations",
                    q, view, tables.NOTES["quartiles"])]
    listed = listed_m_eps(sub, searched)
    iv = tables.interval_by_m_eps(listed, "regression", REGRESSION_LEVEL, conf=conf) \
        if len(listed) else pd.DataFrame()
    if not iv.empty:
        blocks.append(Table(f"rmse_m_eps_{slug(dataset)}", f"{dataset}: mean test RMSE with "
                            f"{REGRESSION_LEVEL:.0%} interval by (M, ε)", iv, None,
                            tables.m_eps_notes("regression", REGRESSION_LEVEL), detail=True))
    return blocks


# The quartile table's first column, the paper's "1st model": the mean RMSE of the model's best
# configuration (read as the rank of a model).
BEST_MEAN = "best configuration's mean"


def heterogeneous_blocks(ok: pd.DataFrame, test: PairedTest) -> list:
    """The combiners of heterogeneous hypothesis sets against each of their inputs."""
    table = tables.heterogeneous(ok, test)
    if table.empty:
        return []
    return [Table("heterogeneous", "Heterogeneous hypothesis sets: each combiner against each "
                  "of its inputs and the stacking anchors (test RMSE)", table,
                  notes=tables.NOTES["heterogeneous"] + paired_test_notes(test,
                                                                          table["n_pairs"]))]


def ranking_blocks(ok: pd.DataFrame, task: str, test: PairedTest, scope: str = "") -> list:
    """The ranking and pair tables; `scope` tells apart two sections of one task (file names)."""
    metric = metric_of(task)
    name, of = (f"{metric}_{scope}", f", {scope}") if scope else (metric, "")
    ranks, pairs = tables.ranking(ok, task, test)
    if ranks.empty:
        return [Text(f"Ranking by {metric}{of}: skipped, fewer than two models share a fold.")]
    notes = tables.NOTES["ranking"] + paired_test_notes(test, pairs["n_pairs"]) \
        + no_test_notes(pairs)
    return [Text(RANKING_AVERAGES),
            Table(f"ranking_{name}", f"Model ranking by {metric}{of}", ranks, notes=notes),
            Table(f"pairs_{name}", f"Paired tests between models ({metric}{of})", pairs,
                  notes=notes, detail=True)]


RANKING_AVERAGES = ("The model ranking averages each model over all of its configurations on "
                    "each split: how it does over its whole grid, not at its best configuration "
                    "(that is 'Best configurations', at the top).")

REFERENCE_LINES = ("Horizontal lines, where the sweep has them: each competitor's (dashed) and "
                   "the single network's (M = 1, dotted) mean over folds of its best "
                   "configuration.")


def _rmse_label(sub: pd.DataFrame) -> str:
    unit = _unit(sub)
    return f"test RMSE ({unit or 'target units'})"


# Each figure as (name, title, caption, draw(one data set's rows, path)).
REGRESSION_FIGURES = (
    ("rmse_violin", "RMSE across configurations", "Distribution over configurations of each "
     "model's mean test RMSE (violin; line: median).",
     lambda sub, p: figures.violins(sub, "rmse", _rmse_label(sub), p)),
)


def _figure(name: str, title: str, caption: str, draw, figdir: Path) -> Figure:
    try:
        return Figure(name, title, draw(figdir / f"{name}.png"), caption)
    except figures.Skip as why:
        return Figure(name, title, None, str(why))


def image_section(ok: pd.DataFrame, not_ok: pd.DataFrame, test: PairedTest,
                  figdir: Path | None = None, searched: Searched = Searched()) -> list:
    return (dataset_figures(ok, IMAGE_FIGURES, figdir, searched)
            + [Heading("Image ensembles: comparisons", 3), *image_tables(ok, test),
               *per_data_set_drawn_tables(ok, searched)])


def image_tables(ok: pd.DataFrame, test: PairedTest) -> list:
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
                            "split (accuracy points)", gain, it.heterogeneity_view(gain, test),
                            it.NOTES["heterogeneity"] + paired_test_notes(test,
                                                                          gain["n_splits"])))
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
            "ece_pct", "nll", "member_accuracy_mean", "train_seconds", "eval_seconds"]
    return view[[c for c in keep if c in view]].rename(columns={
        "n_members": "M", "epsilon": "ε", "ece_pct": "ECE (%)", "nll": "NLL",
        "member_accuracy_mean": "members (%)", "train_seconds": "train s",
        "eval_seconds": "eval s"})


ACCURACY_VIOLIN = (
    "accuracy_violin", "accuracy across configurations", "Distribution over configurations of "
    "each combiner's mean test accuracy (violin; line: median).",
    lambda sub, p: figures.violins(sub, "accuracy", "test accuracy (%)", p))

RELIABILITY = (
    "reliability", "reliability diagram", "Per combiner (the s-BFN heads, the practitioners' "
    "anchors, the best single hypothesis, Mean with and without its tuned temperature): accuracy "
    "against mean confidence in each of the 15 confidence bins (Guo et al. 2017), the bins "
    "summed over every fold and seed of the combiner's best configuration (the tables' rule); "
    "empty bins left out; dashed: perfect calibration; the legend gives each one's ECE of the "
    "summed bins.",
    lambda sub, p: figures.reliability_diagram(calibration.reliability_curves(sub), p))

IMAGE_FIGURES = (
    ("accuracy_by_m", "accuracy by M", "Mean test accuracy and its 95% interval across splits "
     "against the number of members M, per combiner (all other settings pooled).",
     lambda sub, p: figures.accuracy_by(sub, "n_members", "M (number of members)", p)),
    ("accuracy_by_eps", "accuracy by ε", "Mean test accuracy and its 95% interval across splits "
     "against the diversity parameter ε, per combiner.",
     lambda sub, p: figures.accuracy_by(sub, "epsilon", "ε (diversity parameter)", p)),
    ("accuracy_by_mix", "accuracy by architecture mix", "Mean test accuracy and its 95% interval "
     "across splits per architecture mix (heterogeneous: 'mixed' or a list of different "
     "architectures; homogeneous: one kind) and combiner.",
     figures.accuracy_by_architecture),
    ACCURACY_VIOLIN,
    RELIABILITY,
    ("time_vs_accuracy", "training time vs accuracy", "Each configuration's mean training time "
     "per split (members + combiner) against its mean test accuracy.", figures.time_vs_accuracy),
    ("diagnostics_eps", "diagnostics vs ε", "Left: cross-entropy Bregman terms of the members "
     "(ensemble loss, average member loss, diversity, bias at the centroid). Right: Gibbs risk, "
     "expected disagreement, majority-vote risk and C-bound; line style: architecture mix.",
     lambda sub, p: figures.diagnostics_vs_eps(it.diagnostics_by_epsilon(sub), p)),
)


def dataset_figures(ok: pd.DataFrame, specs, figdir: Path | None,
                    searched: Searched = Searched(), m_eps=None) -> list:
    """Per (classification) data set a heading and its figures (data_set_figures); only the
    headings without a figdir."""
    blocks = []
    for dataset, sub in ok.groupby("dataset", sort=True):
        blocks += [Heading(f"{dataset}", 3),
                   *data_set_figures(sub, specs, figdir, "classification", searched, m_eps)]
    return blocks


def data_set_figures(sub: pd.DataFrame, specs, figdir: Path | None, task: str,
                     searched: Searched, m_eps=None) -> list:
    """One data set's figures: its scores against its settings (setting_specs; `m_eps`: the
    section's (M, ε) figure, if it has one), then every (name, title, caption, draw(rows,
    path)) of `specs` drawn for its rows; none without a figdir."""
    if figdir is None:
        return []
    dataset = sub["dataset"].iloc[0]
    return [_figure(f"{name}_{slug(dataset)}", f"{dataset}: {title}", caption,
                    lambda p, d=draw: d(sub, p), figdir)
            for name, title, caption, draw in (*setting_specs(sub, task, searched, m_eps), *specs)]


# ------------------------------------------------------------------ settings drawn from ranges
M_EPS = ("n_members", "epsilon")


def listed_m_eps(rows: pd.DataFrame, searched: Searched) -> pd.DataFrame:
    """The rows of the data sets whose M and ε are listed values (a grid's): those the (M, ε)
    figures and interval tables show pair by pair. A data set that drew either from a range
    shows it as a scatter and a binned table instead (setting_specs, drawn_tables); one whose
    combiners read plug-ins alone (n_members 0: no ε) has no (M, ε) to show."""
    keep = [dataset for dataset, sub in rows.groupby("dataset", sort=False)
            if not set(M_EPS) & set(continuous_settings(sub, searched.ranges))
            and all(c in sub and sub[c].notna().any() for c in M_EPS)]
    return rows[rows["dataset"].isin(keep)]


def setting_specs(sub: pd.DataFrame, task: str, searched: Searched, m_eps=None) -> list:
    """The figure specs of one data set's scores against its settings: the (M, ε) figure
    `m_eps` where M and ε are a grid's, and one scatter per continuous setting
    (figures.score_against: each configuration of the objective model, the best one marked)."""
    listed = [m_eps] if m_eps is not None and len(listed_m_eps(sub, searched)) else []
    drawn, model, points = _drawn(sub, task, searched)
    metric, scale = _scored(task)
    return listed + [(f"{setting}_scatter", f"{metric} against {param_label(setting)}",
                      f"Each configuration of {model_label(model)} (one point each): its mean "
                      f"test {metric} over folds, at its best λ2 where it has one, against "
                      f"{param_label(setting)} ({setting}), drawn from "
                      f"{searched.ranges.get(setting, 'many values')}. Star: the best "
                      f"configuration with every fold; band: the range of {param_label(setting)} "
                      "among the best tenth of them (drawn from 11 configurations on: a tenth "
                      "of fewer is one); hollow: stopped early (fewer folds).",
                      lambda s, p, c=setting: figures.score_against(
                          points, c, task, f"{param_label(c)} ({c})",
                          f"{metric} of {model_label(model)}", p, scale,
                          _log(points, c, searched)))
                     for setting in drawn]


def _log(points: pd.DataFrame, setting: str, searched: Searched) -> bool:
    return log_scaled(points[setting], searched.ranges.get(setting, ""))


def _drawn(sub: pd.DataFrame, task: str, searched: Searched) -> tuple:
    """One data set's continuous settings, the model that ranks its configurations and their
    scores (tables.objective_points); ([], None, None) where it has none (or no combiner)."""
    drawn = continuous_settings(sub, searched.ranges)
    model = tables.objective_model(sub, task, searched.objectives) if drawn else None
    if model is None:
        return [], None, None
    return drawn, model, tables.objective_points(sub, task, model, drawn)


def _scored(task: str) -> tuple:
    """The task's metric as the report names it, and its scale (accuracy in %)."""
    metric = metric_of(task)
    return (("accuracy (%)", 100.0) if metric == "accuracy" else (metric_label(metric), 1.0))


def drawn_tables(sub: pd.DataFrame, task: str, searched: Searched) -> list:
    """One data set's binned table per continuous setting (tables.binned_summary), in place of
    a row per value."""
    drawn, model, points = _drawn(sub, task, searched)
    dataset = sub["dataset"].iloc[0]
    metric, scale = _scored(task)
    blocks = []
    for setting in drawn:
        binned = tables.binned_summary(points, setting, task, _log(points, setting, searched))
        if binned.empty:
            continue
        view = binned.assign(mean=scale * binned["mean"], best=scale * binned["best"])
        blocks.append(Table(f"binned_{setting}_{slug(dataset)}",
                            f"{dataset}: {metric} of {model_label(model)} by "
                            f"{param_label(setting)}, binned", binned,
                            view[["low", "high", "configurations", "mean", "best",
                                  "top_decile"]].rename(columns={
                                      "low": f"{param_label(setting)} from",
                                      "high": "to", "top_decile": "in top decile"}),
                            tables.NOTES["binned"]))
    return blocks


def per_data_set_drawn_tables(ok: pd.DataFrame, searched: Searched) -> list:
    """drawn_tables of every (classification) data set."""
    return [t for _, sub in ok.groupby("dataset", sort=True)
            for t in drawn_tables(sub, "classification", searched)]


# ------------------------------------------------------------------ tabular classification
BY_DATASET = ("dataset",)       # tabular rows have no architecture mix: compared per data set


def split_classification(ok: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(image, tabular) classification rows: only image rows carry `ensemble` (the CNN members'
    architecture mix); tabular rows (MLP members and the competitors) have none."""
    image = ok["ensemble"].notna() if "ensemble" in ok else pd.Series(False, index=ok.index)
    return ok[image], ok[~image]


def tabular_section(ok: pd.DataFrame, not_ok: pd.DataFrame, test: PairedTest,
                    figdir: Path | None = None, searched: Searched = Searched()) -> list:
    return (dataset_figures(ok, TABULAR_FIGURES, figdir, searched, M_EPS_FIGURES["tabular"])
            + [Heading("Tabular classification: comparisons", 3),
               *tabular_tables(ok, test, searched), *per_data_set_drawn_tables(ok, searched)])


def tabular_tables(ok: pd.DataFrame, test: PairedTest, searched: Searched = Searched()) -> list:
    acc = it.overall_accuracy(ok, BY_DATASET)
    conf = tables.configuration_table(ok, "classification")
    blocks = [Table("tabular_accuracy_overall", "Test accuracy (%) per data set and model "
                    "(ensemble combiners and competitors)", acc,
                    it.overall_view(acc, BY_DATASET, "fold"), it.NOTES["overall_folds"]),
              Table("tabular_accuracy_configurations", "Test accuracy (%) per model and "
                    "configuration, mean ± std across folds", conf, _configuration_view(conf),
                    tables.NOTES["configurations"], detail=True)]
    iv = tables.interval_by_m_eps(listed_m_eps(ok, searched), "classification", it.LEVEL)
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


TABULAR_FIGURES = (ACCURACY_VIOLIN, RELIABILITY)

# Each section's (M, ε) figure, drawn where M and ε are a grid's (setting_specs).
M_EPS_FIGURES = {
    "regression": (
        "rmse_m_eps", "RMSE by (M, ε)", f"Mean test RMSE over folds and its "
        f"{REGRESSION_LEVEL:.0%} Student-t interval for the best configuration of each (M, ε) "
        f"pair, per combiner. {REFERENCE_LINES}",
        lambda sub, p: figures.by_m_eps(
            tables.interval_by_m_eps(sub, "regression", REGRESSION_LEVEL), _rmse_label(sub), p,
            refs=tables.reference_scores(sub, "regression"))),
    "tabular": (
        "accuracy_m_eps", "accuracy by (M, ε)", f"Mean test accuracy over folds and its "
        f"{it.LEVEL:.0%} Student-t interval for the best configuration of each (M, ε) pair, "
        f"per combiner. {REFERENCE_LINES}",
        lambda sub, p: figures.by_m_eps(tables.interval_by_m_eps(sub, "classification", it.LEVEL),
                                        "test accuracy (%)", p, scale=100,
                                        refs=tables.reference_scores(sub, "classification"))),
}
