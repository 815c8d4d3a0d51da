"""How a sweep's configurations rank: the one ranking SweepResult.best (sweeps/api.py), the
end of a --keep-models best run and the table a run prints at its end (sweeps/engine/runner.py)
use. A configuration ranks only once it has every fold it planned: a mean over fewer folds
(ASHA stopped it, or the run was interrupted) is not comparable with one over all of them."""

import pandas as pd

from sbfn_dist.settings.tasks import HIGHER_IS_BETTER
from sweeps.engine.planning import folds_of


def best_row(means: pd.DataFrame, metric: str):
    """The index of the best CV mean of `metric` (lowest error, highest accuracy or R^2)."""
    sign = -1 if metric in HIGHER_IS_BETTER else 1
    return (sign * means[metric]).idxmin()


def ranked_rows(frame: pd.DataFrame, objective: str) -> pd.DataFrame:
    """The scored rows that rank configurations: the ensembles' (a sweep of competitors only:
    theirs), of the objective model where they have it (else every model, as the trials'
    running means fall back to their best)."""
    if not len(frame):
        return frame
    rows = frame[frame["status"] == "ok"]
    if "role" in rows and (rows["role"] == "ensemble").any():
        rows = rows[rows["role"] == "ensemble"]
    return rows[rows["model"] == objective] if (rows["model"] == objective).any() else rows


def planned_folds(configs: list) -> dict:
    """trial_id -> how many folds its configuration planned."""
    return {c["trial_id"]: len(folds_of(c)) for c in configs}


def with_every_fold(rows: pd.DataFrame, planned: dict) -> pd.DataFrame:
    """The rows of the configurations that have every fold they planned (trial_id -> folds)."""
    folds = rows.groupby("trial_id")["fold"].nunique()
    whole = folds.index[folds.to_numpy() == folds.index.map(planned).to_numpy()]
    return rows[rows["trial_id"].isin(whole)]


def cv_means(rows: pd.DataFrame, scores: tuple, planned: dict) -> pd.DataFrame:
    """The mean of each score over the folds of each (configuration, model, setting) that has
    every fold its configuration planned (trial_id -> folds); `folds`: how many."""
    if not len(rows):
        return pd.DataFrame()
    grouped = rows.groupby(["trial_id", "model", "model_params"])
    means = grouped[[s for s in scores if s in rows]].mean()
    means["folds"] = grouped["fold"].nunique()
    means = means.reset_index()
    return means[means["folds"] == means["trial_id"].map(planned)]
