"""Test scores of a task: regression in the target's own units, classification from probabilities.
A missing or non-finite prediction scores NaN."""

import json

import numpy as np

from sbfn_dist.evaluation.diagnostics import calibration_bins, expected_calibration_error, nll
from sbfn_dist.settings.tasks import TASKS


def regression_metrics(y, pred) -> dict:
    if y is None or pred is None or not np.isfinite(pred).all():
        return {k: float("nan") for k in TASKS["regression"].scores}
    err = pred - y
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err))),
            "r2": 1.0 - float((err ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")}


def classification_scores(probs: np.ndarray, y: np.ndarray) -> dict:
    """accuracy, NLL, ECE of (N, C) probabilities; of (N, M, C) member probabilities: their mean
    (the paper's "Base Avg.")."""
    names = TASKS["classification"].scores
    if probs.ndim == 3:
        scores = [classification_scores(probs[:, j], y) for j in range(probs.shape[1])]
        return {k: float(np.mean([s[k] for s in scores])) for k in names}
    if not np.isfinite(probs).all():
        return {k: float("nan") for k in names}
    return {"accuracy": float((probs.argmax(1) == y).mean()), "nll": float(nll(probs, y)),
            "ece": float(expected_calibration_error(probs, y))}


def reliability(probs: np.ndarray, y: np.ndarray) -> dict:
    """The record's `reliability` column of (N, C) probabilities: their calibration_bins as JSON
    {"count": rows, "confidence": summed confidence, "correct": rows right} per bin, which the
    report sums over folds into a reliability diagram (docs/results-table.md); none for member
    probabilities (N, M, C) or non-finite ones."""
    if probs.ndim != 2 or not np.isfinite(probs).all():
        return {}
    count, conf, right = calibration_bins(probs, y)
    return {"reliability": json.dumps({"count": count.tolist(),
                                       "confidence": [round(float(c), 6) for c in conf],
                                       "correct": right.astype(int).tolist()})}
