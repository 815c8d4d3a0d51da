"""Combiners for heterogeneous hypothesis sets (docs/method.md, "Heterogeneous s-BFN"): the
paper's general s-BFN with K chosen by inner CV, and the stacking anchors it must beat.

All fit(D, y) / predict(D) on the structured dataset D (N, M + P): the M members' training
predictions and the P plug-ins' out-of-fold ones (sbfn_dist.combiners.plugins), so a weight learned
on D is a weight for unseen rows.

- SBFNRBF ("sbfn_rbf"): K multivariate Gaussian units over the whole hypothesis vector
  (k-means centres, widths by `width`), the raw columns as linear terms and an intercept: the
  paper's y = Phi(D) alpha with Phi = [RBF units, D, 1]. K and lambda2 are chosen together by
  inner k-fold CV on the training part's D; every lambda2 of one K costs one factorisation
  (fit_lambda_path).
- StackRidge ("stack_ridge"): scikit-learn's StackingRegressor final step, RidgeCV with its
  default alphas on D; on plug-in columns it is StackingRegressor itself (a test checks it).
- StackNNLS ("stack_nnls"): Breiman's (1996) stacked regression, non-negative weights and no
  intercept.
- BestSingle ("best_single"): the column with the lowest error on the training part's D (for
  plug-ins an out-of-fold error: selection by inner CV).

Classification (docs/method.md, "Plug-in classifiers"): D is (N, M + P, C), the members' and the
plug-ins' class probabilities on the held-out part.
- LogisticStack ("stack_logistic"): scikit-learn's StackingClassifier final step, a default
  LogisticRegression on the probabilities side by side (one column per hypothesis for two
  classes); on plug-in probabilities alone it is StackingClassifier itself (a test checks it).
"""

import numpy as np
import torch
from scipy.optimize import nnls
from sklearn.linear_model import LogisticRegression, RidgeCV

from sbfn_dist.combiners.plugins import in_classes
from sbfn_dist.combiners.sbfn_ls import fit_lambda_path
from sbfn_dist.data.splits import kfold_splits


class SBFNRBF:
    name = "sbfn_rbf"

    def __init__(self, units, lambdas, folds: int, width: str, seed: int):
        self.units, self.lambdas = tuple(units), tuple(lambdas)
        self.folds, self.width, self.seed = folds, width, seed

    def _path(self, D, y, k: int, lambdas) -> list:
        return fit_lambda_path(D, y, list(lambdas), basis="kmeans", n_units=k, intercept=True,
                               linear=True, seed=self.seed, width=self.width)

    def inner_errors(self, D: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(K values, lambda2 values) inner-CV mean squared error on the training part's D."""
        sse = np.zeros((len(self.units), len(self.lambdas)))
        for train, val in kfold_splits(len(y), self.folds, self.seed):
            for i, k in enumerate(self.units):
                for j, model in enumerate(self._path(D[train], y[train], k, self.lambdas)):
                    sse[i, j] += ((model.predict(D[val]) - y[val]) ** 2).sum()
        return sse / len(y)

    def fit(self, D: np.ndarray, y: np.ndarray) -> "SBFNRBF":
        self.inner_mse_ = self.inner_errors(D, y)
        i, j = np.unravel_index(np.argmin(self.inner_mse_), self.inner_mse_.shape)
        self.n_units_, self.lambda2_ = self.units[i], self.lambdas[j]
        [self.model_] = self._path(D, y, self.n_units_, [self.lambda2_])
        return self

    @property
    def params(self) -> dict:
        """The setting inner CV chose (recorded as the row's model_params)."""
        return {"rbf_units": int(self.n_units_), "lambda2": float(self.lambda2_)}

    @property
    def coef_(self) -> np.ndarray:
        return self.model_.coef_

    def predict(self, D: np.ndarray) -> np.ndarray:
        return self.model_.predict(D)


class StackRidge:
    name = "stack_ridge"

    def fit(self, D: np.ndarray, y: np.ndarray) -> "StackRidge":
        self.model_ = RidgeCV().fit(D, y)
        self.coef_ = self.model_.coef_
        return self

    @property
    def params(self) -> dict:
        return {"alpha": float(self.model_.alpha_)}

    def predict(self, D: np.ndarray) -> np.ndarray:
        return self.model_.predict(D)


class StackNNLS:
    name = "stack_nnls"

    def fit(self, D: np.ndarray, y: np.ndarray) -> "StackNNLS":
        self.coef_, _ = nnls(D, y)
        return self

    params = {}

    def predict(self, D: np.ndarray) -> np.ndarray:
        return D @ self.coef_


class BestSingle:
    name = "best_single"

    def __init__(self, columns):
        self.columns = tuple(columns)     # D's column names: member_0 ... and the plug-ins

    def fit(self, D: np.ndarray, y: np.ndarray) -> "BestSingle":
        self.column_ = int(np.argmin(((D - y[:, None]) ** 2).mean(0)))
        return self

    @property
    def params(self) -> dict:
        return {"column": self.columns[self.column_]}

    def predict(self, D: np.ndarray) -> np.ndarray:
        return D[:, self.column_]


def heterogeneous_combiner(name: str, setting, seed: int, columns):
    """The combiner `name` of sbfn_dist.settings.tasks.HETEROGENEOUS, unfitted; `setting(field)`
    reads the trial's settings, `columns` names D's columns."""
    if name == "sbfn_rbf":
        return SBFNRBF(setting("rbf_units"), setting("lambda2"), setting("inner_folds"),
                       setting("rbf_width"), seed)
    if name == "best_single":
        return BestSingle(columns)
    return {"stack_ridge": StackRidge, "stack_nnls": StackNNLS}[name]()


class LogisticStack:
    """Logistic-regression stacking over class probabilities P (N, H, C) of H hypotheses."""

    name = "stack_logistic"

    def fit(self, P, y) -> "LogisticStack":
        P = _numpy(P)
        self.n_hypotheses, self.n_classes = P.shape[1], P.shape[2]
        y = y.cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
        self.model_ = LogisticRegression().fit(self.features(P), y)
        return self

    def features(self, P: np.ndarray) -> np.ndarray:
        """The hypotheses' probabilities side by side, as StackingClassifier stacks them: with
        two classes only p(class 1) of each (the other column is 1 minus it, collinear)."""
        return (P[:, :, 1] if P.shape[2] == 2 else P).reshape(len(P), -1)

    @property
    def n_coef(self) -> int:
        return int(self.model_.coef_.size + self.model_.intercept_.size)

    def predict_proba(self, P) -> np.ndarray:
        """(N, C) probabilities; a class absent from the rows it was fitted on gets 0."""
        probs = self.model_.predict_proba(self.features(_numpy(P)))
        return in_classes(probs, self.model_.classes_, self.n_classes)


def _numpy(a) -> np.ndarray:
    """A tensor (on any device) or an array as a float64 numpy array."""
    a = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else a
    return np.asarray(a, dtype=np.float64)
