"""Tables common to both tasks: the regression quartile table, mean RMSE with intervals by
(M, ε), the combiner ranking with paired tests, and the sweep/status bookkeeping.

Every function takes the rows with status "ok" (except the status tables) and returns a tidy
DataFrame; `NOTES` holds the precise definition the report prints under each table.
"""

import numpy as np
import pandas as pd

from analysis.configs import configurations, fold_values
from analysis.labels import model_label, model_sort_key
from analysis.stats import holm, paired_test, t_half_width

LOWER_IS_BETTER = {"rmse": True, "mae": True, "nll": True, "ece": True, "accuracy": False}
SBFN_FAMILY = ("sbfn_ls", "sbfn_ls_linear", "g1", "g2", "g3", "arithmetic")
ALPHA = 0.05

NOTES = {
    "quartiles": [
        "A configuration is the model plus every hyper-parameter column that varies among that "
        "model's rows of the data set (listed in `config_columns`); folds, seeds, sizes and timings "
        "are not hyper-parameters.",
        "Per-configuration mean RMSE: each fold's test RMSE is averaged over seeds, then over folds.",
        "1st model: the lowest per-configuration mean RMSE; Std dev.: the sample standard deviation "
        "(ddof = 1) of that configuration's per-fold RMSE.",
        "Q1, Q3: first and third quartiles (linear interpolation, numpy's default) of the "
        "per-configuration mean RMSE over all configurations of the model.",
        "excluded rows: rows of this model with status diverged or failed; they are not averaged in.",
    ],
    "m_eps": [
        "For every model of the ensemble family and every (M, ε) pair, the configuration with that "
        "M and ε that has the lowest mean RMSE (other hyper-parameters chosen by this minimum, so the "
        "interval is optimistic when they vary).",
        "mean ± half width: the Student-t 90% interval across folds, mean ± t_{0.95, n-1} · s / √n, "
        "with s the sample standard deviation of the n per-fold RMSEs (each averaged over seeds).",
    ],
    "ranking": [
        "Each model's per-fold score is its metric averaged over every configuration and seed on that "
        "fold (split); only folds where every model of the data set has a score are used.",
        "rank 1 = best mean over those folds (lowest RMSE, highest accuracy).",
        "Pairs: a paired test of the per-fold scores of two models across folds (the fold is the "
        "pairing unit; both models were tested on the same rows). p_holm: Holm's step-down "
        "correction over all pairs of the data set; significant: p_holm < 0.05.",
    ],
    "status": [
        "Rows by status. ok rows are analysed; diverged (non-finite training or predictions) and "
        "failed (the trial crashed after its retries) rows are counted here and listed below, "
        "never averaged in.",
    ],
}


def quartile_table(ok: pd.DataFrame, not_ok: pd.DataFrame, metric: str = "rmse",
                   conf: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's per-data-set table: best configuration, its std, quartiles, n configurations.

    `conf`: `configurations(ok, metric)` when the caller already has it (it is the costly part)."""
    conf = configurations(ok, metric) if conf is None else conf
    rows = []
    for (dataset, model), sub in conf.groupby(["dataset", "model"], sort=False):
        best = sub.loc[sub["mean"].idxmin()]
        excluded = ((not_ok["dataset"] == dataset) & (not_ok["model"] == model)).sum()
        rows.append({"dataset": dataset, "model": model, "label": model_label(model),
                     "first_model": best["mean"], "std_dev": best["std"],
                     "q1": sub["mean"].quantile(0.25), "q3": sub["mean"].quantile(0.75),
                     "n_configurations": len(sub), "best_n_folds": int(best["n_folds"]),
                     "best_config": best["config"], "config_columns": best["config_columns"],
                     "excluded_rows": int(excluded)})
    return _sorted(pd.DataFrame(rows))


def _sorted(df: pd.DataFrame, first=("dataset",)) -> pd.DataFrame:
    if df.empty:
        return df
    key = df["model"].map(model_sort_key)
    return df.assign(_k=key).sort_values([*first, "_k"]).drop(columns="_k").reset_index(drop=True)


def interval_by_m_eps(ok: pd.DataFrame, metric: str = "rmse", level: float = 0.90,
                      conf: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean and t interval across folds of the best configuration for every (model, M, ε)."""
    conf = configurations(ok, metric) if conf is None else conf
    conf = conf[conf["model"].isin(SBFN_FAMILY)]
    if conf.empty:
        return pd.DataFrame()
    cells = ["dataset", "model", "n_members", "epsilon"]
    best = conf.loc[conf.groupby(cells, dropna=False, sort=False)["mean"].idxmin()]
    half = t_half_width(best["std"], best["n_folds"], level)
    out = best[cells].assign(mean=best["mean"], ci_low=best["mean"] - half, ci_high=best["mean"] + half,
                             n_folds=best["n_folds"], level=level, config=best["config"])
    return out.sort_values(cells, key=_model_key).reset_index(drop=True)


def _model_key(col: pd.Series) -> pd.Series:
    return col.map(lambda m: model_sort_key(m)[0]) if col.name == "model" else col


def ranking(ok: pd.DataFrame, metric: str, test: str = "t") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per data set: models ranked by mean per-fold score, and every pair's paired test (Holm)."""
    ranks, pairs = [], []
    for dataset, sub in ok.groupby("dataset", sort=True):
        wide = fold_values(sub, ["model"], metric).pivot(index="fold", columns="model", values=metric)
        wide = wide.dropna()
        if wide.empty or wide.shape[1] < 2:
            continue
        means = wide.mean().sort_values(ascending=LOWER_IS_BETTER[metric])
        ranks.append(pd.DataFrame({"dataset": dataset, "rank": np.arange(1, len(means) + 1),
                                   "model": means.index, "label": means.index.map(model_label),
                                   "mean": means.to_numpy(), "n_folds": len(wide)}))
        pairs.append(_pairs(dataset, wide[means.index], metric, test))
    if not ranks:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(ranks, ignore_index=True), pd.concat(pairs, ignore_index=True)


def _pairs(dataset: str, wide: pd.DataFrame, metric: str, test: str) -> pd.DataFrame:
    models = list(wide.columns)
    rows = []
    for i, a in enumerate(models):
        for b in models[i + 1:]:
            stat, p = paired_test(wide[a], wide[b], test)
            rows.append({"dataset": dataset, "better": a, "worse": b,
                         "mean_difference": float((wide[a] - wide[b]).mean()),
                         "test": test, "statistic": stat, "p": p, "n_folds": len(wide)})
    out = pd.DataFrame(rows)
    out["p_holm"] = holm(out["p"])
    out["significant"] = out["p_holm"] < ALPHA
    return out


def status_counts(table: pd.DataFrame) -> pd.DataFrame:
    counts = table.groupby(["sweep", "dataset", "model", "status"], dropna=False).size()
    wide = counts.unstack("status", fill_value=0).reset_index()
    for s in ("ok", "diverged", "failed"):
        if s not in wide.columns:
            wide[s] = 0
    return wide[["sweep", "dataset", "model", "ok", "diverged", "failed"]]


def problem_list(not_ok: pd.DataFrame) -> pd.DataFrame:
    """One line per (trial, fold, status, error): which trials diverged or failed, and why."""
    cols = ["sweep", "trial_id", "dataset", "fold", "status", "error"]
    listed = not_ok.assign(error=not_ok["error"].fillna("").astype(str).str.slice(0, 160))
    grouped = listed.groupby(cols, dropna=False, sort=True)["model"]
    return grouped.agg(lambda s: ", ".join(sorted(set(map(str, s))))).reset_index(name="models")


def sweep_summary(sweeps: list) -> pd.DataFrame:
    rows = []
    for s in sweeps:
        rows.append({"sweep": s.name, "path": s.path, "rows": s.n_rows, "trials_found": s.n_trials,
                     "trials_expected": s.n_trials_expected, "trials_missing": s.n_missing,
                     **{f"rows_{k}": s.status_counts.get(k, 0) for k in ("ok", "diverged", "failed")}})
    return pd.DataFrame(rows)
