"""Greedy forward ensemble selection with replacement (Caruana, Niculescu-Mizil, Crew & Ksikes
2004, "Ensemble selection from libraries of models", ICML; auto-sklearn's EnsembleSelection,
AutoGluon's WeightedEnsemble), and the combiners that are one weight per hypothesis of D
(docs/method.md, "The practitioners' combiners").

D holds H hypotheses side by side: (N, H) predictions (regression) or (N, H, C) probability
vectors (classification). A weighted combiner predicts

    z_i = sum_h w_h D_ih                                   (D @ w; sum_h w_h p_ih)

- EnsembleSelection ("ensemble_selection"): from the empty ensemble, each round r = 1 .. R adds,
  with replacement, the hypothesis whose addition gives the lowest loss of the average of the
  selected hypotheses' predictions,

      h_r = argmin_h  L( (sum_{s < r} D_{h_s} + D_h) / r ;  y ),     w_h = #{r : h_r = h} / R,

  ties to the lowest index h (auto-sklearn draws among ties at random; here the fit is a
  deterministic function of D). No sorted initialisation and no bagging of the library
  (Caruana et al.'s options; auto-sklearn's default has neither).
- BestSingle ("best_single"): the hypothesis with the lowest loss, w one-hot -- the first
  round of the selection above.

The losses L (LOSSES) take every candidate's averaged prediction at once, (N, H) or (N, H, C),
and return one loss per candidate (H,): a round is one vectorised evaluation.
"""

import json

import numpy as np
import torch

from sbfn_dist.evaluation.diagnostics import PROB_FLOOR


def squared_error(candidates: np.ndarray, y: np.ndarray) -> np.ndarray:
    """mean_i (z_ih - y_i)^2 of (N, H) candidate predictions: the regression task's loss."""
    return ((candidates - y[:, None]) ** 2).mean(0)


def log_loss(candidates: np.ndarray, y: np.ndarray) -> np.ndarray:
    """mean_i -log max(p_ih[y_i], floor) of (N, H, C) candidate probabilities: the records' NLL
    (sbfn_dist.evaluation.diagnostics.nll), per candidate."""
    truth = candidates[np.arange(len(y)), :, y]
    return -np.log(np.maximum(truth, PROB_FLOOR)).mean(0)


def error_rate(candidates: np.ndarray, y: np.ndarray) -> np.ndarray:
    """1 - accuracy of (N, H, C) candidate probabilities (a row's decision: its first most
    probable class, as in the scores)."""
    return (candidates.argmax(2) != y[:, None]).mean(0)


# The losses a weighted combiner minimises, by the name its setting gives (selection_metric).
LOSSES = {"squared_error": squared_error, "log_loss": log_loss, "accuracy": error_rate}
# Each task's own loss: regression's ensemble selection and both tasks' best single.
TASK_LOSS = {"regression": "squared_error", "classification": "log_loss"}


def greedy_selection(D: np.ndarray, y: np.ndarray, loss: str, rounds: int) -> np.ndarray:
    """The weights (H,) of Caruana et al.'s selection with replacement (module docstring) on
    D (N, H) or (N, H, C) and targets y, minimising LOSSES[loss] for `rounds` rounds."""
    loss_of = LOSSES[loss]
    total = np.zeros((D.shape[0], 1, *D.shape[2:]))
    counts = np.zeros(D.shape[1], dtype=np.int64)
    for r in range(1, rounds + 1):
        h = int(np.argmin(loss_of((total + D) / r, y)))     # the first minimum: lowest index
        counts[h] += 1
        total += D[:, h:h + 1]
    return counts / rounds


class WeightedHypotheses:
    """A fitted weight per hypothesis of D; subclasses set `weights_` in fit(D, y)."""

    name: str

    def __init__(self, columns):
        self.columns = tuple(columns)    # D's column names: member_0 ... and the plug-ins

    @property
    def n_hypotheses(self) -> int:
        return len(self.columns)

    @property
    def coef_(self) -> np.ndarray:
        return self.weights_

    @property
    def n_coef(self) -> int:
        return len(self.weights_)

    @property
    def params(self) -> dict:
        """Its setting is the trial's (selection_rounds, selection_metric): no own one."""
        return {}

    @property
    def fitted(self) -> dict:
        """The record columns of its fit: `weights`, JSON {column: weight}."""
        return {"weights": json.dumps(dict(zip(self.columns, map(float, self.weights_))))}

    def predict(self, D) -> np.ndarray:
        """sum_h w_h D_h: (N,) from (N, H) predictions, (N, C) from (N, H, C) probabilities."""
        return np.tensordot(as_array(D), self.weights_, axes=([1], [0]))

    predict_proba = predict


class EnsembleSelection(WeightedHypotheses):
    name = "ensemble_selection"

    def __init__(self, columns, loss: str, rounds: int):
        super().__init__(columns)
        self.loss, self.rounds = loss, rounds

    def fit(self, D, y) -> "EnsembleSelection":
        self.weights_ = greedy_selection(as_array(D), targets(y), self.loss, self.rounds)
        return self


class BestSingle(WeightedHypotheses):
    name = "best_single"

    def __init__(self, columns, loss: str):
        super().__init__(columns)
        self.loss = loss

    def fit(self, D, y) -> "BestSingle":
        self.weights_ = greedy_selection(as_array(D), targets(y), self.loss, rounds=1)
        return self


def as_array(a) -> np.ndarray:
    """A tensor (on any device) or an array as a float64 numpy array."""
    return targets(a).astype(np.float64, copy=False)


def targets(y) -> np.ndarray:
    """A tensor (on any device) or an array as a numpy array of its own dtype (class codes stay
    integers)."""
    return y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
