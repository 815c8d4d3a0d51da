"""Combiners for heterogeneous hypothesis sets (docs/method.md, "Heterogeneous s-BFN", "The
practitioners' combiners"): the paper's general s-BFN with K chosen by inner CV, and the
stacking anchors it must beat.

Regression: all fit(D, y) / predict(D) on the structured dataset D (N, M + P): the M members'
training predictions and the P plug-ins' out-of-fold ones (sbfn_dist.combiners.plugins), so a
weight learned on D is a weight for unseen rows.

- SBFNRBF ("sbfn_rbf"): K multivariate Gaussian units over the whole hypothesis vector
  (k-means centres, widths by `width`), the raw columns as linear terms and an intercept: the
  paper's y = Phi(D) alpha with Phi = [RBF units, D, 1]. K and lambda2 are chosen together by
  inner k-fold CV on the training part's D; every lambda2 of one K costs one factorisation
  (fit_lambda_path).
- StackRidge ("stack_ridge"): scikit-learn's StackingRegressor final step, RidgeCV with its
  default alphas on D; on plug-in columns it is StackingRegressor itself (a test checks it).
- StackNNLS ("stack_nnls"): Breiman's (1996) stacked regression, non-negative weights and no
  intercept.
- EnsembleSelection, BestSingle (sbfn_dist.combiners.selection): Caruana et al.'s (2004)
  greedy selection, and the column with the lowest error on the training part's D (for
  plug-ins an out-of-fold error: selection by inner CV).

Classification (docs/method.md, "Plug-in classifiers"): D is (N, M + P, C), the members' and the
plug-ins' class probabilities on the held-out part.
- LogisticStack ("stack_logistic"): scikit-learn's StackingClassifier final step, a default
  LogisticRegression on the probabilities side by side (one column per hypothesis for two
  classes); on plug-in probabilities alone it is StackingClassifier itself (a test checks it).
- ProbabilityNNLS ("stack_nnls"): the Super Learner's method.NNLS (van der Laan, Polley &
  Hubbard 2007) on probability vectors: non-negative weights minimising the Brier score,
  normalised to sum to one.
- EnsembleSelection (log-loss or accuracy), BestSingle (log-loss), as for regression.

stacker(name, task, ...) builds any of them, unfitted.
"""

import json

import numpy as np
from scipy.optimize import nnls
from sklearn.linear_model import LogisticRegression, RidgeCV

from sbfn_dist.combiners.plugins import in_classes
from sbfn_dist.combiners.sbfn_ls import fit_lambda_path
from sbfn_dist.combiners.selection import (TASK_LOSS, BestSingle, EnsembleSelection,
                                           WeightedHypotheses, as_array, targets)
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

    params = {}     # K and lambda2 are chosen by the fit on each fold's rows: `fitted`

    @property
    def fitted(self) -> dict:
        """The record columns of its fit: the K and lambda2 its inner CV chose."""
        return {"fitted_params": json.dumps({"rbf_units": int(self.n_units_),
                                             "lambda2": float(self.lambda2_)})}

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

    params = {}     # its alpha is chosen by the fit on each fold's rows: `fitted`, not a setting

    @property
    def fitted(self) -> dict:
        """The record columns of its fit: RidgeCV's alpha (efficient leave-one-out)."""
        return {"fitted_params": json.dumps({"alpha": float(self.model_.alpha_)})}

    def predict(self, D: np.ndarray) -> np.ndarray:
        return self.model_.predict(D)


class StackNNLS(WeightedHypotheses):
    """Breiman's (1996) stacked regression: w = argmin_{w >= 0} ||D w - y||^2, no intercept and
    no sum constraint (y is centred on the training part)."""

    name = "stack_nnls"

    def fit(self, D: np.ndarray, y: np.ndarray) -> "StackNNLS":
        self.weights_, _ = nnls(D, y)
        return self


class ProbabilityNNLS(WeightedHypotheses):
    """The Super Learner's method.NNLS on probability vectors: each (row i, class c) is one
    equation sum_h w_h p_ihc = [y_i = c], so the (N C) x H least squares with w >= 0 minimises
    the Brier score sum_i ||sum_h w_h p_ih - e_{y_i}||^2; w is then normalised to sum to one
    (all zero: uniform), so the combination is a probability vector."""

    name = "stack_nnls"

    def fit(self, P, y) -> "ProbabilityNNLS":
        P, y = as_array(P), targets(y)
        n, h, c = P.shape
        design = P.transpose(0, 2, 1).reshape(n * c, h)     # row (i, c): p_i1c ... p_iHc
        weights, _ = nnls(design, np.eye(c)[y].reshape(n * c))
        total = weights.sum()
        self.weights_ = weights / total if total > 0 else np.full(h, 1.0 / h)
        return self


def stacker(name: str, task: str, setting, seed: int, columns):
    """The combiner `name` fitted on D beside the s-BFN (sbfn_dist.settings.tasks: the
    regression STACKERS, classification's PRACTITIONERS), unfitted; `setting(field)` reads the
    trial's settings, `columns` names D's hypotheses."""
    if name == "ensemble_selection":
        loss = TASK_LOSS[task] if task == "regression" else setting("selection_metric")
        return EnsembleSelection(columns, loss, setting("selection_rounds"))
    if name == "best_single":
        return BestSingle(columns, TASK_LOSS[task])
    if name == "stack_nnls":
        return StackNNLS(columns) if task == "regression" else ProbabilityNNLS(columns)
    if name == "sbfn_rbf":
        return SBFNRBF(setting("rbf_units"), setting("lambda2"), setting("inner_folds"),
                       setting("rbf_width"), seed)
    return {"stack_ridge": StackRidge, "stack_logistic": LogisticStack}[name]()


class LogisticStack:
    """Logistic-regression stacking over class probabilities P (N, H, C) of H hypotheses."""

    name = "stack_logistic"

    def fit(self, P, y) -> "LogisticStack":
        P = as_array(P)
        self.n_hypotheses, self.n_classes = P.shape[1], P.shape[2]
        self.model_ = LogisticRegression().fit(self.features(P), targets(y))
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
        probs = self.model_.predict_proba(self.features(as_array(P)))
        return in_classes(probs, self.model_.classes_, self.n_classes)
