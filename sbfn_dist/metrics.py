"""Scores in the target's own units; a missing or non-finite prediction scores NaN."""

import numpy as np

REGRESSION_METRICS = ("rmse", "mae", "r2")


def regression_metrics(y, pred) -> dict:
    if y is None or pred is None or not np.isfinite(pred).all():
        return {k: float("nan") for k in REGRESSION_METRICS}
    err = pred - y
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err))),
            "r2": 1.0 - float((err ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")}
