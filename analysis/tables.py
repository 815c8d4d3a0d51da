"""Tables common to both tasks: the regression quartile table, the task's metric with intervals
by (M, ε), the model ranking with paired tests, and the sweep/status bookkeeping.

Every function takes the rows with status "ok" (except the status tables) and returns a tidy
DataFrame; `NOTES` holds the precise definition the report prints under each table.
"""

import math

import numpy as np
import pandas as pd

from analysis.configs import best_index, configurations
from analysis.labels import metric_label, model_label, model_sort_key
from analysis.resampling import Design, design, paired_wide, planned_test
from analysis.stats import PairedTest, decide, t_half_width
from sbfn_dist.records import COLUMNS, REFERENCE_MODEL, TASKS

NOTES = {
    "quartiles": [
        "A configuration is the model plus every hyper-parameter column that varies among that "
        "model's rows of the data set (listed in `config_columns`); folds, seeds, sizes and timings "
        "are not hyper-parameters.",
        "Per-configuration mean RMSE: each fold's test RMSE is averaged over seeds, then over folds.",
        "best configuration's mean (the paper's \"1st model\"): the lowest per-configuration mean "
        "RMSE; Std dev.: the sample standard deviation (ddof = 1) of that configuration's "
        "per-fold RMSE.",
        "Q1, Q3: first and third quartiles (linear interpolation, numpy's default) of the "
        "per-configuration mean RMSE over all configurations of the model.",
        "excluded rows: rows of this model with status diverged or failed; they are not averaged in.",
    ],
    "configurations": [
        "Every configuration of every model (hyper-parameters that vary among the model's rows of "
        "the data set, `config_columns`): each fold's score averaged over seeds, then the mean over "
        "folds ± the sample standard deviation (ddof = 1) across folds (the folds' spread).",
        "Competitors (SVM-RBF, random forest, gradient boosting) are tested on the same folds as "
        "the ensembles and listed beside them; their configurations are their grid's points.",
    ],
    "ranking": [
        "Each model's score on a split, a (seed, fold) (seeds re-split the data; a published test "
        "split is one split whatever the seed), is its metric averaged over every configuration "
        "on that split; only splits where every model of the data set has a score are used "
        "(n_pairs of them).",
        "rank 1 = best mean over those splits (lowest RMSE, highest accuracy).",
        "Pairs: a paired test of two models' scores across the splits (both models were tested "
        "on the same rows), over all pairs of the data set as one family; mean_difference: the "
        "model listed first minus the other.",
    ],
    "heterogeneous": [
        "Rows of trials whose D held plug-in hypotheses: each combiner of that D and each plug-in "
        "on its own (the same fit that gave its column). Every model chose its setting on the "
        "training part (inner CV) or has none; closed forms and online variants are shown at "
        "every λ2 they evaluated, not the best one.",
        "mean: the test RMSE over the (seed, fold) splits (each averaged over repeated runs); "
        "std: across them (ddof = 1). minus_sbfn_rbf: mean − the multivariate s-BFN's mean "
        "(positive: s-BFN better). The paired test of sbfn_rbf against each row across the "
        "splits, the data set's rows one family. With one split (a published test set) there "
        "is no test.",
    ],
    "sweeps": [
        "location: the sweep's results directory relative to this report when both lie in one "
        "repository (outside any repository: under the working directory the report was made "
        "from); otherwise only the directory's name, since the path of the machine that ran the "
        "sweep means nothing elsewhere; a remote URI (s3://...) as given.",
    ],
    "binned": [
        "A configuration is one point of the search (its settings, as the quartile table's); its "
        "score is the model's mean over folds (each fold averaged over seeds) at its best own "
        "setting (λ2 where it has one). Only configurations with every fold count: one stopped "
        "early (ASHA) has a mean over fewer folds and is never ranked.",
        "Bins: the setting's range cut into equal widths (on a log scale where the sweep "
        "drew it from a loguniform range, or its values span two decades or more); from, to: "
        "the lowest and highest value in the bin; mean and best: of the bin's configurations' "
        "scores; in top decile: how many of the bin's configurations are among the best tenth "
        "of all (at least one), the region the scatter shades.",
    ],
    "status": [
        "Rows by status. ok rows are analysed; diverged (non-finite training or predictions) and "
        "failed (the trial crashed after its retries) rows are counted here and listed below, "
        "never averaged in. uninformative: ok rows of a classification combiner that was right "
        "on no more of the rows it was fitted on than their majority class (a learned head then "
        "answers the class prior; docs/results-table.md); they are averaged in, as scored.",
    ],
}


def m_eps_notes(task: str, level: float) -> list:
    """The definition under a table of `interval_by_m_eps(ok, task, level)`."""
    metric, best = metric_label(TASKS[task].metric), _extreme(task)
    return [
        f"For every model of the ensemble family and every (M, ε) pair, the configuration with that "
        f"M and ε that has the {best[0]} mean {metric} (other hyper-parameters chosen by this "
        f"{best[1]}, so the interval is optimistic when they vary).",
        f"mean ± half width: the Student-t {level:.0%} interval across folds, mean ± "
        f"t_{{{(1 + level) / 2:g}, n-1}} · s / √n, with s the sample standard deviation of the n "
        f"per-fold scores (each averaged over seeds).",
    ]


def _extreme(task: str) -> tuple:
    return ("highest", "maximum") if TASKS[task].higher_is_better else ("lowest", "minimum")


def quartile_table(ok: pd.DataFrame, not_ok: pd.DataFrame, task: str = "regression",
                   conf: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's per-data-set table: best configuration, its std, quartiles, n configurations.

    `conf`: `configurations(ok, metric)` when the caller already has it (it is the costly part)."""
    conf = configurations(ok, TASKS[task].metric) if conf is None else conf
    rows = []
    for (dataset, model), sub in conf.groupby(["dataset", "model"], sort=False):
        best = sub.loc[best_index(sub, task)]
        excluded = ((not_ok["dataset"] == dataset) & (not_ok["model"] == model)).sum()
        rows.append({"dataset": dataset, "model": model, "label": model_label(model),
                     "first_model": best["mean"], "std_dev": best["std"],
                     "q1": sub["mean"].quantile(0.25), "q3": sub["mean"].quantile(0.75),
                     "n_configurations": len(sub), "best_n_folds": int(best["n_folds"]),
                     "best_config": best["config"], "config_columns": best["config_columns"],
                     "excluded_rows": int(excluded)})
    return in_model_order(pd.DataFrame(rows))


def in_model_order(df: pd.DataFrame, first=("dataset",)) -> pd.DataFrame:
    """Rows sorted by the `first` columns, then by model in the tables' order (labels.py)."""
    if df.empty:
        return df
    key = df["model"].map(model_sort_key)
    return df.assign(_k=key).sort_values([*first, "_k"]).drop(columns="_k").reset_index(drop=True)


def interval_by_m_eps(ok: pd.DataFrame, task: str = "regression", level: float = 0.90,
                      conf: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean and t interval across folds of the best configuration for every (combiner, M, ε).

    `conf`: `configurations(ok, metric)` when the caller already has it."""
    spec = TASKS[task]
    conf = configurations(ok, spec.metric) if conf is None else conf
    if conf.empty:              # no rows (every data set's M or ε drawn from a range)
        return pd.DataFrame()
    conf = conf[conf["model"].isin(spec.combiners)]
    if conf.empty:
        return pd.DataFrame()
    cells = ["dataset", "model", "n_members", "epsilon"]
    best = conf.loc[best_index(conf, task, cells)]
    half = t_half_width(best["std"], best["n_folds"], level)
    out = best[cells].assign(mean=best["mean"], ci_low=best["mean"] - half, ci_high=best["mean"] + half,
                             n_folds=best["n_folds"], level=level, config=best["config"])
    return out.sort_values(cells, key=_model_key).reset_index(drop=True)


def reference_scores(ok: pd.DataFrame, task: str) -> pd.DataFrame:
    """What an (M, ε) figure reads the ensembles against: per data set, the best configuration
    (as the quartile table's "best configuration's mean") of every model that is no combiner of
    the task -- the competitors -- and of the single network (M = 1): its mean metric over
    folds, kind "competitor" or "single network"."""
    rows = ok[~ok["model"].isin(TASKS[task].allowed)]
    if rows.empty:
        return pd.DataFrame(columns=["dataset", "model", "kind", "mean", "config"])
    conf = configurations(rows, TASKS[task].metric)
    best = conf.loc[best_index(conf, task, ["dataset", "model"])]
    kind = np.where(best["model"] == REFERENCE_MODEL, "single network", "competitor")
    out = best[["dataset", "model"]].assign(kind=kind, mean=best["mean"], config=best["config"])
    return in_model_order(out)


def objective_model(rows: pd.DataFrame, task: str, objectives: dict) -> str | None:
    """The model that ranks one data set's configurations: the one their sweeps searched by
    (`objectives`: sweep -> model, from sweep.json) where that names one model the rows have,
    else the task's first combiner present (sbfn_ls, sbfn: the default objective of sweeps too
    old to record theirs); None when the rows hold no combiner."""
    present = set(rows["model"])
    named = {objectives.get(sweep) for sweep in rows["sweep"].unique()} & present
    if len(named) == 1:
        return named.pop()
    return next((m for m in TASKS[task].allowed if m in present), None)


def objective_points(rows: pd.DataFrame, task: str, model: str, settings=()) -> pd.DataFrame:
    """One row per configuration of `model` on one data set: `mean`, its score over folds (each
    averaged over seeds) at its best own setting (λ2; `config` names it), the settings that make
    the configuration (`settings` among them, whatever they vary with), and `complete`: whether
    it has as many folds as the most complete one (a configuration ASHA stopped early has fewer,
    and is never ranked)."""
    conf = configurations(rows[rows["model"] == model], TASKS[task].metric, carry=settings)
    if conf.empty:
        return conf
    settings = [c for c in conf["config_columns"].iloc[0].split(", ")
                if c and COLUMNS[c].kind != "setting"]          # not λ2, not model_params
    if settings:
        conf = conf.loc[best_index(conf, task, settings)]
    else:
        conf = conf.loc[[best_index(conf, task)]]
    return conf.assign(complete=conf["n_folds"] == conf["n_folds"].max()).reset_index(drop=True)


TOP_SHARE = 0.1         # the "best region": the best tenth of the configurations
BINS = 5


def top_decile(points: pd.DataFrame, task: str) -> pd.DataFrame:
    """The complete configurations of `points` (objective_points) among the best TOP_SHARE of
    them (at least one), best first."""
    full = points[points["complete"]]
    n = max(1, math.ceil(TOP_SHARE * len(full)))
    return full.sort_values("mean", ascending=not TASKS[task].higher_is_better).head(n)


def binned_summary(points: pd.DataFrame, setting: str, task: str, log: bool) -> pd.DataFrame:
    """The complete configurations of `points` (objective_points) in BINS bins of `setting`
    (equal widths, on a log scale if `log`: configs.log_scaled), one row per bin that holds any
    (NOTES "binned")."""
    full = points[points["complete"]].dropna(subset=[setting])
    if full.empty:
        return pd.DataFrame()
    values = full[setting].astype(float)
    spaced = np.geomspace if log else np.linspace
    edges = np.unique(spaced(values.min(), values.max(), BINS + 1))
    # One value throughout is one bin (pd.cut needs two edges).
    bins = pd.cut(values, edges, include_lowest=True) if len(edges) > 1 else 0
    top = full.index.isin(top_decile(points, task).index)
    best = "max" if TASKS[task].higher_is_better else "min"
    grouped = full.assign(_bin=bins, _top=top, _v=values).groupby("_bin", observed=True, sort=True)
    out = grouped.agg(low=("_v", "min"), high=("_v", "max"), configurations=("mean", "size"),
                      mean=("mean", "mean"), best=("mean", best), top_decile=("_top", "sum"))
    return out.reset_index(drop=True).assign(dataset=full["dataset"].iloc[0],
                                             model=full["model"].iloc[0], setting=setting)


def configuration_table(ok: pd.DataFrame, task: str) -> pd.DataFrame:
    """Every configuration of every model: the task's metric, mean and std across folds, sorted
    by data set, model and best first."""
    conf = configurations(ok, TASKS[task].metric)
    if conf.empty:
        return conf
    keep = ["dataset", "model", "config", *(c for c in ("n_members", "epsilon") if c in conf),
            "mean", "std", "n_folds", "config_columns"]
    sign = -1 if TASKS[task].higher_is_better else 1
    out = conf[keep].assign(_k=conf["model"].map(model_sort_key), _s=sign * conf["mean"])
    return out.sort_values(["dataset", "_k", "_s"]).drop(columns=["_k", "_s"]).reset_index(drop=True)


def _model_key(col: pd.Series) -> pd.Series:
    return col.map(lambda m: model_sort_key(m)[0]) if col.name == "model" else col


def ranking(ok: pd.DataFrame, task: str,
            test: PairedTest = PairedTest()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per data set: models ranked by the task's metric (mean score over the splits they share),
    and every pair's paired test (NOTES "ranking")."""
    metric = TASKS[task].metric
    ranks, pairs = [], []
    for dataset, sub in ok.groupby("dataset", sort=True):
        plan = design(sub)
        wide = paired_wide(sub, "model", metric, plan.unit)
        if wide.empty or wide.shape[1] < 2:
            continue
        means = wide.mean().sort_values(ascending=not TASKS[task].higher_is_better)
        ranks.append(pd.DataFrame({"dataset": dataset, "rank": np.arange(1, len(means) + 1),
                                   "model": means.index, "label": means.index.map(model_label),
                                   "mean": means.to_numpy(), "n_pairs": len(wide)}))
        pairs.append(_pairs(dataset, wide[means.index], test, plan))
    if not ranks:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(ranks, ignore_index=True), pd.concat(pairs, ignore_index=True)


def _pairs(dataset: str, wide: pd.DataFrame, test: PairedTest, plan: Design) -> pd.DataFrame:
    models = list(wide.columns)
    rows = [{"dataset": dataset, "better": a, "worse": b,
             "mean_difference": float((wide[a] - wide[b]).mean()), "test": test.name,
             **planned_test(wide[a], wide[b], test, plan), "n_pairs": len(wide),
             "size_ratio": plan.ratio, "no_test": plan.note}
            for i, a in enumerate(models) for b in models[i + 1:]]
    return decide(pd.DataFrame(rows), test)


def status_counts(table: pd.DataFrame) -> pd.DataFrame:
    keys = ["sweep", "dataset", "model"]
    counts = table.groupby([*keys, "status"], dropna=False).size()
    wide = counts.unstack("status", fill_value=0).reset_index()
    for s in ("ok", "diverged", "failed"):
        if s not in wide.columns:
            wide[s] = 0
    wide = wide[[*keys, "ok", "diverged", "failed"]]
    if "uninformative" not in table:         # a sweep from before the column
        return wide
    flagged = table[table["uninformative"].eq(True)].groupby(keys, dropna=False).size()
    return wide.merge(flagged.rename("uninformative").reset_index(), on=keys, how="left") \
        .fillna({"uninformative": 0}).astype({"uninformative": int})


def problem_list(not_ok: pd.DataFrame) -> pd.DataFrame:
    """One line per (trial, fold, status, error): which trials diverged or failed, and why."""
    cols = ["sweep", "trial_id", "dataset", "fold", "status", "error"]
    listed = not_ok.assign(error=not_ok["error"].fillna("").astype(str).str.slice(0, 160))
    grouped = listed.groupby(cols, dropna=False, sort=True)["model"]
    return grouped.agg(lambda s: ", ".join(sorted(set(map(str, s))))).reset_index(name="models")


def sweep_summary(sweeps: list) -> pd.DataFrame:
    rows = []
    for s in sweeps:
        rows.append({"sweep": s.name, "location": s.path, "rows": s.n_rows,
                     "trials_found": s.n_trials, "trials_expected": s.n_trials_expected,
                     "trials_missing": s.n_missing,
                     **{f"rows_{k}": s.status_counts.get(k, 0) for k in ("ok", "diverged", "failed")}})
    return pd.DataFrame(rows)


# Models that choose their own setting on the training part or have none: shown once each.
# The closed forms and online variants evaluate every lambda2 of the grid: one row per lambda2.
PER_LAMBDA2 = ("sbfn_ls", "sbfn_ls_linear", "g1", "g2", "g3")
HETEROGENEOUS_REFERENCE = "sbfn_rbf"


def heterogeneous(ok: pd.DataFrame, test: PairedTest = PairedTest()) -> pd.DataFrame:
    """Per data set: every combiner of a heterogeneous hypothesis set (M members + plug-ins)
    and every one of its inputs (the plug-ins' own rows), mean test RMSE over the splits, and
    a paired test of sbfn_rbf against each (NOTES "heterogeneous")."""
    rows = ok[_heterogeneous_rows(ok)]
    parts = []
    for dataset, sub in rows.groupby("dataset", sort=True):
        plan = design(sub)
        wide = paired_wide(sub.assign(entry=_entry(sub)), "entry", "rmse", plan.unit)
        if wide.empty:
            continue
        parts.append(_against_reference(dataset, wide, model_label(HETEROGENEOUS_REFERENCE),
                                        test, plan))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _heterogeneous_rows(ok: pd.DataFrame) -> pd.Series:
    """s-BFN rows whose D held plug-ins, and the plug-ins' own competitor rows."""
    none = pd.Series(False, index=ok.index)
    with_plugins = (ok["plugin_members"].fillna("[]") != "[]") if "plugin_members" in ok else none
    plugin_rows = ok["plugin_tuning"].notna() if "plugin_tuning" in ok else none
    family = ok["family"] if "family" in ok else pd.Series("", index=ok.index)   # older tables
    return ((family == "sbfn") & with_plugins) | ((family == "competitor") & plugin_rows)


def _entry(sub: pd.DataFrame) -> pd.Series:
    label = sub["model"].map(model_label)
    lam = sub["lambda2"].map(lambda v: f" (λ2 = {v:g})")
    return label.where(~sub["model"].isin(PER_LAMBDA2), label + lam)


def _against_reference(dataset: str, wide: pd.DataFrame, reference: str, test: PairedTest,
                       plan: Design) -> pd.DataFrame:
    means = wide.mean().sort_values()
    std = wide.std(ddof=1) if len(wide) > 1 else pd.Series(np.nan, index=wide.columns)
    out = pd.DataFrame({"dataset": dataset, "model": means.index, "mean": means.to_numpy(),
                        "std": std[means.index].to_numpy(), "n_pairs": len(wide)})
    if reference not in wide:
        return out
    out["minus_sbfn_rbf"] = out["mean"] - means[reference]
    others = out["model"] != reference
    if not others.any():
        return out
    tests = pd.DataFrame([planned_test(wide[reference], wide[m], test, plan)
                          for m in out.loc[others, "model"]], index=out.index[others])
    return out.join(decide(tests, test)).assign(size_ratio=plan.ratio, no_test=plan.note)
