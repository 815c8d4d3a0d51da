"""Heterogeneous plug-in hypotheses: fitted predictors as extra columns of the structured dataset D.

In the plug-in regime (paper, section "Structured Dataset Formation") D holds the predictions of
any fitted hypotheses, so the M epsilon-trained MLPs can be joined by, e.g., gradient-boosted
trees and random forests; every combiner then sees M + P columns.

The training-set columns are out-of-fold predictions (`plugin_folds` seeded inner folds of the
training part): an in-sample fit of a tree ensemble nearly reproduces y, and a combiner fitted
on it would put all its weight on that column. The test columns come from the model refitted
on the whole training part. The test rows are never seen by a plug-in fit (docs/method.md).
"""

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import cross_val_predict

from sbfn_dist.learners.competitors import build_competitor, competitor_configs
from sbfn_dist.data.splits import kfold_splits
from sbfn_dist.learners.training import MLPConfig, epoch_order

# The grid each plug-in tuning draws its candidates from (sbfn_dist.learners.competitors): "default"
# is the competitors' default setting, so a plug-in column is the model of a default competitor
# row; "inner_cv" chooses among the competitors' "small" grid.
CANDIDATES = {"default": "default", "inner_cv": "small"}


@dataclass
class PluginColumns:
    names: tuple
    train: np.ndarray        # (N_train, P) out-of-fold predictions on the training part
    test: np.ndarray         # (N_test, P) predictions of the refit on the whole training part
    fit_seconds: float       # inner-fold fits + refits
    eval_seconds: float      # test predictions
    settings: list = field(default_factory=list)   # per plug-in, the setting used
    seconds: list = field(default_factory=list)    # per plug-in, its fits' seconds

    def stream(self, cfg: MLPConfig) -> np.ndarray:
        """The training columns in the members' visit order, epoch after epoch: the rows that
        sit beside the recorded on-the-fly stream (a plug-in is a frozen hypothesis there)."""
        n = len(self.train)
        order = np.concatenate([epoch_order(n, cfg, e).numpy() for e in range(cfg.epochs)])
        return self.train[order]


def fit_plugins(names, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                folds: int, seed: int, tuning: str = "default") -> PluginColumns:
    """Out-of-fold training columns and refit test columns for every named plug-in; with
    tuning='inner_cv' each uses the setting of its grid with the lowest out-of-fold error,
    whose out-of-fold predictions are then its training column."""
    train_cols, test_cols, settings, seconds, eval_s = [], [], [], [], 0.0
    # the same inner folds for every plug-in and every candidate setting
    inner = kfold_splits(len(y_train), folds, seed) if names else []
    for name in names:
        start = time.perf_counter()
        oof, params = _best_out_of_fold(name, X_train, y_train, inner, seed, tuning)
        model = build_competitor(name, params, seed).fit(X_train, y_train)
        seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        test_cols.append(model.predict(X_test))
        eval_s += time.perf_counter() - start
        train_cols.append(oof)
        settings.append(params)
    as_columns = (lambda cols, n: np.column_stack(cols) if cols else np.empty((n, 0)))
    return PluginColumns(tuple(names), as_columns(train_cols, len(X_train)),
                         as_columns(test_cols, len(X_test)), sum(seconds), eval_s, settings,
                         seconds)


def _best_out_of_fold(name: str, X, y, inner, seed: int, tuning: str):
    """(out-of-fold predictions, setting) of the candidate with the lowest out-of-fold MSE."""
    best = None
    for params in competitor_configs(name, CANDIDATES[tuning]):
        model = build_competitor(name, params, seed)
        oof = cross_val_predict(clone(model), X, y, cv=inner)
        mse = float(((oof - y) ** 2).mean())
        if best is None or mse < best[0]:
            best = (mse, oof, params)
    return best[1], best[2]
