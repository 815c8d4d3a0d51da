"""Configurations: which columns are hyper-parameters, and per-configuration means over folds.

A *configuration* is a model plus every hyper-parameter column whose value varies among that
model's rows of one data set. The hyper-parameters are exactly the columns the records registry
marks so (`sbfn_dist.settings.records.is_hyperparameter`): folds, seeds, sizes, timings, scores and
diagnostics never are, and neither is a column the registry does not know (a user's label).
Per configuration, each fold's value is first averaged over seeds (and any repeated runs), then
the fold values give the configuration's mean and spread.
"""

import numpy as np
import pandas as pd

from analysis.labels import param_label
from sbfn_dist.settings.records import TASKS, is_hyperparameter


def varying_columns(df: pd.DataFrame, exclude=()) -> list[str]:
    """Hyper-parameter columns with more than one value (NaN counts as a value) in df.

    A column that maps one-to-one onto an earlier one (model_params {"lambda2": x} onto lambda2)
    adds nothing and is left out; model_params comes last so the named column is kept.
    """
    cands = [c for c in df.columns if c not in exclude and is_hyperparameter(c)]
    cands.sort(key=lambda c: c == "model_params")
    counts = {c: df[c].nunique(dropna=False) for c in cands}
    out = []
    for c in (c for c in cands if counts[c] > 1):
        if not any(_one_to_one(df, kept, c, counts) for kept in out):
            out.append(c)
    return out


def _one_to_one(df: pd.DataFrame, a: str, b: str, counts: dict) -> bool:
    if counts[a] != counts[b]:
        return False
    return df.groupby([a, b], dropna=False, sort=False).ngroups == counts[a]


def fold_values(df: pd.DataFrame, keys: list, metric: str, extra=()) -> pd.DataFrame:
    """One row per (keys, fold): the metric (and extra columns) averaged over seeds and repeats."""
    cols = [metric, *extra]
    return df.groupby([*keys, "fold"], dropna=False, sort=False)[cols].mean().reset_index()


def best_index(means, task: str):
    """Index of the best mean (per group, for a groupby): the highest where the task's metric
    is better higher (accuracy), else the lowest (RMSE)."""
    return means.idxmax() if TASKS[task].higher_is_better else means.idxmin()


KEEP = ("n_members", "epsilon", "ensemble")


def configurations(df: pd.DataFrame, metric: str, group=("dataset", "model"), extra=()) -> pd.DataFrame:
    """Per configuration within each group: mean over folds, std across folds (ddof 1), n folds.

    Adds `config` (a readable label of the varying columns) and `config_columns`. The KEEP
    columns are carried even where they do not vary, so callers can always group by them.
    """
    parts = []
    for key, sub in df.groupby(list(group), dropna=False, sort=False):
        cols = varying_columns(sub, exclude=group)
        keys = [*group, *cols, *(k for k in KEEP if k in sub and k not in cols and k not in group)]
        per_fold = fold_values(sub, keys, metric, extra)
        agg = per_fold.groupby(keys, dropna=False, sort=False).agg(
            mean=(metric, "mean"), std=(metric, "std"), n_folds=("fold", "nunique"),
            **{e: (e, "mean") for e in extra})
        agg = agg.reset_index()
        agg["config"] = config_labels(agg, cols)
        agg["config_columns"] = ", ".join(cols)
        parts.append(agg)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def config_labels(df: pd.DataFrame, cols: list) -> pd.Series:
    if not cols:
        return pd.Series(["(single configuration)"] * len(df), index=df.index)
    label = None
    for c in cols:              # format each distinct value once; configurations can be many
        codes, uniques = pd.factorize(df[c], use_na_sentinel=False)
        text = np.array([f"{param_label(c)}={_short(u)}" for u in uniques], dtype=object)[codes]
        label = text if label is None else label + ", " + text
    return pd.Series(label, index=df.index)


def _short(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "–" if np.isnan(v) else f"{v:g}"
    return str(v)
