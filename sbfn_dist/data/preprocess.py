"""Fold-local preprocessing: every statistic comes from the training fold only.

Fitting on all rows would leak the test rows' medians, means and spreads into training and
make cross-validated RMSEs optimistic, so a new FoldScaler is fitted for every split.
"""

from __future__ import annotations

import numpy as np

from sbfn_dist.data.checks import require_varying_target
from sbfn_dist.errors import DataError


class FoldScaler:
    """Statistics of the training fold only: median imputation of missing features, then
    standardisation of X and y.

    A feature column that is entirely NaN in the training fold carries no usable information,
    so it is kept (the model's input width stays fixed across folds) but set to 0 on every row.
    A (near-)constant training column gets std 1 (spread), so it maps to ~0 instead of dividing
    by zero or by rounding noise. A class target is not scaled: fit(X_train) alone scales the
    features. A constant target is refused (a trial's fold cannot learn from it), unless
    refuse_constant_target=False (the scikit-learn estimators: it is centred, and predicted).
    """

    def __init__(self, refuse_constant_target: bool = True):
        self.refuse_constant_target = refuse_constant_target

    def fit(self, X_train, y_train=None) -> "FoldScaler":
        X = _as_matrix(X_train, "X_train")
        y = _as_target(y_train, "y_train") if y_train is not None else np.zeros(len(X))
        if X.shape[0] != y.shape[0] or X.shape[0] == 0:
            raise DataError(f"X_train has {X.shape[0]} rows and y_train {y.shape[0]}: pass the same, non-zero "
                            f"number of training rows to FoldScaler.fit")
        self.dead_ = np.isnan(X).all(axis=0)  # all-NaN in this fold
        # nanmedian of an all-NaN column warns; those columns are zeroed anyway.
        self.median_ = np.zeros(X.shape[1])
        self.median_[~self.dead_] = np.nanmedian(X[:, ~self.dead_], axis=0)
        filled = np.where(np.isnan(X), self.median_, X)
        with np.errstate(over="ignore", invalid="ignore"):     # refused below, in one line
            self.mean_ = filled.mean(axis=0)
            self.std_ = spread(filled.std(axis=0), self.mean_)
        _require_finite(self.std_, filled, lambda k: f"X_train column {k}")
        if y_train is None:
            return self
        if self.refuse_constant_target:
            require_varying_target(y, "the training target", "this fold cannot standardise it; "
                                   "use more rows or another split, or check the target column")
        with np.errstate(over="ignore", invalid="ignore"):
            self.y_mean_ = float(y.mean())
            self.y_std_ = float(spread(y.std(), self.y_mean_))
        _require_finite(self.y_std_, y[:, None], lambda k: "the training target")
        return self

    def transform_X(self, X) -> np.ndarray:
        """Impute NaN with the training medians, then (x - mean) / std; all-NaN-in-training columns -> 0."""
        if not hasattr(self, "median_"):
            raise RuntimeError("FoldScaler is not fitted: call fit(X_train[, y_train]) first")
        X = _as_matrix(X, "X")
        if X.shape[1] != self.median_.size:
            raise DataError(f"X has {X.shape[1]} columns but the scaler was fitted on {self.median_.size}: "
                            f"transform the same features it was fitted on")
        out = (np.where(np.isnan(X), self.median_, X) - self.mean_) / self.std_
        out[:, self.dead_] = 0.0
        return out

    def transform_y(self, y) -> np.ndarray:
        self._check_fitted()
        return (_as_target(y, "y") - self.y_mean_) / self.y_std_

    def inverse_y(self, y_std) -> np.ndarray:
        """Back to the target's own units (RMSE is reported in those)."""
        self._check_fitted()
        return np.asarray(y_std, dtype=np.float64) * self.y_std_ + self.y_mean_

    def _check_fitted(self) -> None:
        if not hasattr(self, "y_std_"):
            raise RuntimeError("FoldScaler has no target statistics: call fit(X_train, y_train) first")


def _require_finite(std, values: np.ndarray, name_of) -> None:
    """Values above ~1e154 overflow the squares of their standard deviation (float64), and
    the model would predict NaN or a constant: refused, naming (name_of(k)) the column k of
    `values` and the fix."""
    bad = np.flatnonzero(~np.isfinite(np.atleast_1d(std)))
    if bad.size:
        k = int(bad[0])
        raise DataError(f"{name_of(k)} holds values up to {np.abs(values[:, k]).max():.3g}, too large "
                        "to standardise in float64 (its squares overflow): rescale it, e.g. to "
                        "other units or by a power of ten")


def spread(std, mean):
    """The std to divide by: 1 where the values are constant up to rounding (a std within 1e-12
    of their magnitude is the summation's error, not a spread)."""
    return np.where(std <= 1e-12 * np.maximum(1.0, np.abs(mean)), 1.0, std)


def _as_matrix(X, what: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise DataError(f"{what} must be a 2-D (rows, features) array, got shape {X.shape}: reshape it, "
                        f"e.g. X.reshape(-1, 1) for a single feature")
    return X


def _as_target(y, what: str) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or np.isnan(y).any():
        raise DataError(f"{what} must be a 1-D array without NaN, got shape {y.shape}: drop rows with a "
                        f"missing target before scaling (load_tabular already does)")
    return y
