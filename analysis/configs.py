"""Configurations: which columns are hyper-parameters, and per-configuration means over folds.

A *configuration* is a model plus every hyper-parameter column whose value varies among that
model's rows of one data set. The hyper-parameters are exactly the columns the records registry
marks so (`sbfn_dist.records.is_hyperparameter`): folds, seeds, sizes, timings, scores and
diagnostics never are, and neither is a column the registry does not know (a user's label).
A model that chooses its own setting inside its fit (SELF_TUNED: the practitioners' anchors, the
best single hypothesis, sbfn_rbf) records that choice in model_params, each fold its own: no
configuration of it. Per configuration, each fold's value is first averaged over seeds (and any
repeated runs), then the fold values give the configuration's mean and spread.
"""

import numpy as np
import pandas as pd

from analysis.labels import param_label
from sbfn_dist.records import (ANCHORS, BEST_SINGLE, COLUMNS, TASKS, best_position,
                               is_hyperparameter)


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


def fold_values(df: pd.DataFrame, keys: list, metric: str, extra=(),
                unit=("fold",)) -> pd.DataFrame:
    """One row per (keys, fold): the metric (and extra columns) averaged over seeds and repeats;
    per (keys, seed, fold) with unit=resampling.UNIT (the paired tests' splits)."""
    cols = [metric, *extra]
    return df.groupby([*keys, *unit], dropna=False, sort=False)[cols].mean().reset_index()


def best_index(conf: pd.DataFrame, task: str, by=None):
    """The index of the best configuration among `conf`'s rows (configurations': `mean`,
    `config_columns`), or with `by` (columns) a list of one per group: the highest mean where
    the task's metric is better higher (accuracy), else the lowest; means that tie go by
    records.best_position's rule (the sweep's progress line and end table use it too)."""
    if by is not None:
        return [best_index(g, task) for _, g in conf.groupby(by, dropna=False, sort=False)]
    settings = [{c: r[c] for c in r["config_columns"].split(", ") if c}
                for r in conf.to_dict("records")]
    return conf.index[best_position(conf["mean"], settings, TASKS[task].higher_is_better)]


KEEP = ("n_members", "epsilon", "ensemble")
# Models that choose their own setting inside their fit, on each fold's training rows (the
# practitioners' anchors and the best single hypothesis; sbfn_rbf its K and λ2 by inner CV):
# their model_params records that choice (stack_ridge: RidgeCV's alpha, best_single: its
# column), each fold's own, so it makes no configuration of theirs.
SELF_TUNED = frozenset({*ANCHORS["regression"], *ANCHORS["classification"], BEST_SINGLE,
                        "sbfn_rbf"})
CHOSEN_IN_FIT = ("model_params",)


def configurations(df: pd.DataFrame, metric: str, group=("dataset", "model"), extra=(),
                   carry=()) -> pd.DataFrame:
    """Per configuration within each group: mean over folds, std across folds (ddof 1), n folds.

    Adds `config` (a readable label of the varying columns) and `config_columns`. The KEEP
    columns, and those in `carry`, are carried even where they do not vary (or vary with
    another: a drawn lr one-to-one with a drawn ε), so callers can always group by them.
    A SELF_TUNED model's CHOSEN_IN_FIT columns are no part of its configurations.
    """
    parts = []
    for key, sub in df.groupby(list(group), dropna=False, sort=False):
        tuned = "model" in group and sub["model"].iloc[0] in SELF_TUNED
        cols = varying_columns(sub, exclude=(*group, *(CHOSEN_IN_FIT if tuned else ())))
        keys = [*group, *cols, *(k for k in dict.fromkeys((*KEEP, *carry))
                                 if k in sub and k not in cols and k not in group)]
        per_fold = fold_values(sub, keys, metric, extra)
        agg = per_fold.groupby(keys, dropna=False, sort=False).agg(
            mean=(metric, "mean"), std=(metric, "std"), n_folds=("fold", "nunique"),
            **{e: (e, "mean") for e in extra})
        agg = agg.reset_index()
        agg["config"] = config_labels(agg, cols)
        agg["config_columns"] = ", ".join(cols)
        parts.append(agg)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def best_configuration(rows: pd.DataFrame, task: str) -> tuple[pd.Series, pd.DataFrame]:
    """One model's rows of one data set -> (its best configuration's `configurations` row, the
    rows of that configuration). The tables' rule (the quartile table's "best configuration's
    mean": the best mean over folds), among the configurations with the most folds: one
    stopped early (ASHA) has a mean over fewer and is never chosen."""
    conf = configurations(rows, TASKS[task].metric)
    conf = conf[conf["n_folds"] == conf["n_folds"].max()]
    best = conf.loc[best_index(conf, task)]
    chosen = pd.Series(True, index=rows.index)
    for c in (c for c in best["config_columns"].split(", ") if c):
        chosen &= rows[c].isna() if pd.isna(best[c]) else rows[c].eq(best[c])
    return best, rows[chosen]


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


# A grid's axis holds a handful of values (the shipped grids' at most 5); a search that draws a
# setting from a range gives nearly every configuration a value of its own.
CONTINUOUS_LEVELS = 10


def continuous_settings(df: pd.DataFrame, ranges=()) -> list[str]:
    """The settings of df's configurations that the report shows as continuous (a scatter and a
    binned table instead of a row per value): those a sweep drew from a range (`ranges`: the
    names its sweep.json lists), and any taking more than CONTINUOUS_LEVELS distinct numbers.
    A setting here is a hyper-parameter of the trial's config, never a model's own setting
    (λ2: every trial evaluates each of its values)."""
    out = []
    for c in df.columns:
        if not (is_hyperparameter(c) and COLUMNS[c].kind == "config"
                and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])):
            continue
        levels = df[c].nunique()
        if levels > 1 and (c in ranges or levels > CONTINUOUS_LEVELS):
            out.append(c)
    return out


def log_scaled(values, drawn_from: str = "") -> bool:
    """Whether a setting is shown and binned on a log scale: drawn from a loguniform range
    (`drawn_from`, its sweep's text of it), or its positive values spread over two decades."""
    v = pd.Series(values).dropna()
    return str(drawn_from).startswith("loguniform") or (
        len(v) > 1 and (v > 0).all() and v.max() >= 100 * v.min())
