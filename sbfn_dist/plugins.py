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
from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import cross_val_predict

from sbfn_dist.competitors import COMPETITORS, build_competitor, competitor_configs
from sbfn_dist.data.splits import kfold_splits
from sbfn_dist.members import MLPConfig, epoch_order

# One fixed setting per plug-in: the competitors' "default" setting (docs/method.md), so a
# plug-in column is the same model as the competitor row of the same trial.
PLUGINS = {name: competitor_configs(name, "default")[0] for name in COMPETITORS}


@dataclass
class PluginColumns:
    names: tuple
    train: np.ndarray        # (N_train, P) out-of-fold predictions on the training part
    test: np.ndarray         # (N_test, P) predictions of the refit on the whole training part
    fit_seconds: float       # inner-fold fits + refits
    eval_seconds: float      # test predictions

    def stream(self, cfg: MLPConfig) -> np.ndarray:
        """The training columns in the members' visit order, epoch after epoch: the rows that
        sit beside the recorded on-the-fly stream (a plug-in is a frozen hypothesis there)."""
        n = len(self.train)
        order = np.concatenate([epoch_order(n, cfg, e).numpy() for e in range(cfg.epochs)])
        return self.train[order]


def fit_plugins(names, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                folds: int, seed: int) -> PluginColumns:
    """Out-of-fold training columns and refit test columns for every named plug-in."""
    train_cols, test_cols, fit_s, eval_s = [], [], 0.0, 0.0
    # the same inner folds for every plug-in
    inner = kfold_splits(len(y_train), folds, seed) if names else []
    for name in names:
        model = build_competitor(name, PLUGINS[name], seed)
        start = time.perf_counter()
        train_cols.append(cross_val_predict(clone(model), X_train, y_train, cv=inner))
        model.fit(X_train, y_train)
        fit_s += time.perf_counter() - start
        start = time.perf_counter()
        test_cols.append(model.predict(X_test))
        eval_s += time.perf_counter() - start
    as_columns = (lambda cols, n: np.column_stack(cols) if cols else np.empty((n, 0)))
    return PluginColumns(tuple(names), as_columns(train_cols, len(X_train)),
                         as_columns(test_cols, len(X_test)), fit_s, eval_s)
