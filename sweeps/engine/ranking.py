"""How a sweep's configurations rank: the one ranking SweepResult.best (sweeps/api.py) and the
end of a --keep-models best run (sweeps/engine/runner.py) both use."""

import pandas as pd

from sbfn_dist.settings.tasks import HIGHER_IS_BETTER


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
