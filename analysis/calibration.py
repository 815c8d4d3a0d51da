"""Calibration of the classification combiners: their reliability bins summed over folds, for
the reliability diagrams (figures.reliability_diagram).

A record's `reliability` column (docs/results-table.md) holds its test part's Guo et al. (2017)
bins -- 15 equal-width bins of the confidence max_c p_c, per bin the rows in it, their summed
confidence and how many were right. Summed over the rows of a model's best configuration (every
fold and seed; configs.best_configuration, as the verdict reads it) they give per bin its mean confidence and accuracy,
and ECE = Σ_b |right_b − confidence_b| / N.
"""

import json

import numpy as np
import pandas as pd

from analysis.configs import best_configuration
from sbfn_dist.records import ANCHORS, BEST_SINGLE, SBFN_HEADS

# The combiners a diagram draws: the s-BFN heads, the practitioners' anchors and the best single
# hypothesis, and logit averaging with and without its tuned temperature (the calibrated
# baseline); more lines would hide one another.
RELIABILITY_MODELS = (*SBFN_HEADS, *ANCHORS["classification"], BEST_SINGLE, "logit_mean",
                      "logit_mean_tuned")
PARTS = ("count", "confidence", "correct")


def summed_bins(cells: pd.Series) -> pd.DataFrame:
    """The bins of `reliability` JSON cells (NaN cells skipped) summed: one row per bin with
    count, confidence, correct, and mean_confidence and accuracy (NaN in an empty bin)."""
    parsed = [json.loads(c) for c in cells.dropna()]
    sums = {p: np.sum([c[p] for c in parsed], axis=0, dtype=float) for p in PARTS}
    out = pd.DataFrame(sums)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["mean_confidence"] = out["confidence"] / out["count"]
        out["accuracy"] = out["correct"] / out["count"]
    return out.rename_axis("bin").reset_index()


def ece(bins: pd.DataFrame) -> float:
    """Guo et al. 2017: Σ_b |right_b − confidence_b| / N of summed bins."""
    return float((bins["correct"] - bins["confidence"]).abs().sum() / bins["count"].sum())


def reliability_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """One data set's classification rows -> per RELIABILITY_MODELS model with reliability
    cells, the summed bins of its best configuration (`model`, `ece` and `rows` beside each
    bin); empty where no row has the column (sweeps older than it)."""
    if "reliability" not in rows:
        return pd.DataFrame()
    parts = []
    for model in (m for m in RELIABILITY_MODELS if m in set(rows["model"])):
        _, chosen = best_configuration(rows[rows["model"] == model], "classification")
        cells = chosen["reliability"]
        if cells.notna().any():
            bins = summed_bins(cells)
            parts.append(bins.assign(model=model, ece=ece(bins), rows=int(cells.notna().sum())))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
