"""Ensemble diagnostics (paper, section "Analysis of Ensemble Diversity, Capacity, and Dataset
Complexity", label {complexity}); formulas and references in docs/diagnostics.md.

1. Bregman bias / variance / diversity (Wood, Mu, Webb, Reeve, Lujan & Brown, JMLR 2023),
   in the geometry of the training loss (paper, section "Loss Geometry and Centroid-based
   Ensemble Combiners", label {lossgeo}, Table {tab:geom_loss_shapes_pred}).
2. PAC-Bayes majority-vote quantities (Germain, Lacasse, Laviolette, Marchand & Roy, JMLR 2015;
   multi-class margin C-bound of Laviolette, Morvant, Ralaivola & Roy 2017).
3. Calibration (NLL, Guo et al. 2017 ECE, accuracy) and efficiency (FLOPs, parameters).

Inputs are numpy arrays: member predictions (N, M) for regression, member probabilities
(N, M, C) for classification, labels (N,). Every reported number is a Python float.
"""

import numpy as np

from sbfn_dist.learners.geometry import CrossEntropy, SquaredLoss
from sbfn_dist.records import DIAGNOSTICS

PROB_FLOOR = 1e-12          # probabilities are clipped here before a log (finite NLL)
ECE_BINS = 15               # Guo et al. 2017's M = 15 equal-width confidence bins


# ----------------------------------------------------------------------------------------------
# 1. Bregman decomposition (Wood et al. 2023). Loss l(y, q) = B(y, q) with the label on the left;
#    ensemble output = the geometry's centroid qbar = argmin_z sum_j w_j B(z, q_j).

def _per_sample(x, ndim: int) -> np.ndarray:
    """Sum the trailing output axes beyond the first ndim axes (vector outputs, squared loss)."""
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(x.shape[:ndim] + (-1,)).sum(-1) if x.ndim > ndim else x


def _wmean(x, weights, axis: int):
    """(Weighted) mean over a member axis; weights (M,) need not be normalised."""
    if weights is None:
        return x.mean(axis)
    w = np.asarray(weights, dtype=np.float64)
    return np.moveaxis(x, axis, -1) @ w / w.sum()


def _terms(geometry, preds, y, weights=None, runs: int = 0) -> dict:
    """Per-sample terms for member predictions preds ([R,] N, M[, C or d]), labels y (N[, d]);
    runs = 1 when a leading run axis R is present."""
    ax = runs + 1                                                   # member axis
    y = y.reshape((1,) * runs + y.shape)                            # align to ([R,] N)
    qbar = geometry.centroid(preds, None if weights is None else np.asarray(weights), ax)
    member = _per_sample(geometry.loss(preds, np.expand_dims(y, ax)), ax + 1)   # ([R,] N, M)
    div = _per_sample(geometry.divergence(np.expand_dims(qbar, ax), preds), ax + 1)
    return {"qbar": qbar, "ensemble": _per_sample(geometry.loss(qbar, y), ax),
            "avg_member": _wmean(member, weights, -1), "diversity": _wmean(div, weights, -1)}


def _as_inputs(geometry, preds, y):
    preds = np.asarray(preds, dtype=np.float64)
    dtype = np.int64 if geometry.task == "classification" else np.float64
    return preds, np.asarray(y).astype(dtype)


def decomposition(geometry, member_preds, y, weights=None) -> dict:
    """One ensemble: ensemble_loss = avg_member_loss - diversity (exact).

    member_preds: (N, M) for squared loss (or (N, M, d)), (N, M, C) probabilities for
    cross-entropy; y: (N,) targets / integer labels; weights: optional (M,) member weights w_j.
        qbar_i          = centroid_j(q_ij)           (arithmetic / normalised geometric mean)
        ensemble_loss   = mean_i B(y_i, qbar_i)
        avg_member_loss = mean_i sum_j w_j B(y_i, q_ij) / W
        diversity       = mean_i sum_j w_j B(qbar_i, q_ij) / W
    Squared loss: B(a, b) = (a - b)^2 and this is the ambiguity decomposition (Krogh & Vedelsby,
    NIPS 1994); cross-entropy: B(y, q) = -log q_y, B(qbar, q_j) = KL(qbar || q_j). The identity is the
    three-point property of Bregman divergences, with sum_j w_j (grad phi(qbar) - grad phi(q_j))
    zero (squared) or a multiple of the all-ones vector, orthogonal to y - qbar (simplex).
    """
    preds, y = _as_inputs(geometry, member_preds, y)
    t = _terms(geometry, preds, y, weights)
    return {"ensemble_loss": float(t["ensemble"].mean()),
            "avg_member_loss": float(t["avg_member"].mean()),
            "diversity": float(t["diversity"].mean())}


def centroid_bias_diversity(geometry, member_preds, y, weights=None) -> dict:
    """The paper's single-run reading (section {complexity}): "the error at this centroid (bias)
    and the dispersion of base predictions around it (diversity)":
        bias = mean_i B(y_i, qbar_i)   (= decomposition()['ensemble_loss'])
        diversity = mean_i sum_j w_j B(qbar_i, q_ij) / W.
    With one training set the 'bias' absorbs Wood et al.'s variance (and the label noise); use
    bias_variance_diversity() with several independent runs to separate them."""
    d = decomposition(geometry, member_preds, y, weights)
    return {"bias": d["ensemble_loss"], "diversity": d["diversity"]}


def bias_variance_diversity(geometry, member_preds_runs, y, weights=None) -> dict:
    """Several independent trainings (runs r = 1..R, the expectation over training sets):
    member_preds_runs has shape (R, N, M[, C]); y (N,) is the same test set for every run.

    Ensemble level (qbar_r = centroid over members of run r, qstar = centroid over runs of
    qbar_r, both in the geometry's left/dual centroid; labels are treated as noise-free targets,
    so Wood et al.'s noise term is 0 and label noise sits in the bias):
        bias      = mean_i B(y_i, qstar_i)
        variance  = mean_r mean_i B(qstar_i, qbar_ri)
        diversity = mean_r mean_i sum_j w_j B(qbar_ri, q_rij) / W
        expected_ensemble_loss   = mean_r mean_i B(y_i, qbar_ri)       = bias + variance
        expected_avg_member_loss = mean_r mean_i sum_j w_j B(y_i, q_rij) / W
                                 = bias + variance + diversity
    Member level, Wood et al.'s bias-variance-diversity decomposition (qo_j = centroid over runs
    of member j's predictions q_rj):
        avg_bias     = mean_i sum_j w_j B(y_i, qo_ij) / W
        avg_variance = mean_r mean_i sum_j w_j B(qo_ij, q_rij) / W
        expected_ensemble_loss = avg_bias + avg_variance - diversity
    """
    preds, y = _as_inputs(geometry, member_preds_runs, y)
    t = _terms(geometry, preds, y, weights, runs=1)
    qstar = geometry.centroid(t["qbar"], None, 0)
    qo = geometry.centroid(preds, None, 0)                              # (N, M[, C])
    var = _per_sample(geometry.divergence(qstar[None], t["qbar"]), 2)    # (R, N)
    mvar = _per_sample(geometry.divergence(qo[None], preds), 3)         # (R, N, M)
    mbias = _per_sample(geometry.loss(qo, np.expand_dims(y, 1)), 2)     # (N, M)
    return {"bias": float(_per_sample(geometry.loss(qstar, y), 1).mean()),
            "variance": float(var.mean()),
            "diversity": float(t["diversity"].mean()),
            "avg_bias": float(_wmean(mbias, weights, -1).mean()),
            "avg_variance": float(_wmean(mvar, weights, -1).mean()),
            "expected_ensemble_loss": float(t["ensemble"].mean()),
            "expected_avg_member_loss": float(t["avg_member"].mean()),
            "noise": 0.0}


# ----------------------------------------------------------------------------------------------
# 2. PAC-Bayes majority vote (Germain et al. 2015; Laviolette et al. 2017). votes: (N, M) ints.

def _rho(m: int, rho=None) -> np.ndarray:
    r = np.full(m, 1.0 / m) if rho is None else np.asarray(rho, dtype=np.float64)
    return r / r.sum()


def vote_shares(votes, rho=None, n_classes: int | None = None) -> np.ndarray:
    """V_ic = sum_j rho_j 1[h_j(x_i) = c], shape (N, C): the rho-weighted vote of each class."""
    votes = np.asarray(votes, dtype=np.int64)
    c = int(votes.max()) + 1 if n_classes is None else n_classes
    return np.eye(c)[votes].transpose(0, 2, 1) @ _rho(votes.shape[1], rho)


def gibbs_risk(votes, y, rho=None) -> float:
    """R_G = E_{h~rho} mean_i 1[h(x_i) != y_i]."""
    wrong = np.asarray(votes) != np.asarray(y)[:, None]
    return float((wrong.mean(0) * _rho(wrong.shape[1], rho)).sum())


def expected_disagreement(votes, rho=None) -> float:
    """d = E_{(h,h')~rho^2} mean_i 1[h(x_i) != h'(x_i)] = mean_i (1 - sum_c V_ic^2): h and h'
    are drawn independently, so a pair h = h' counts with zero disagreement."""
    v = vote_shares(votes, rho)
    return float((1.0 - (v ** 2).sum(1)).mean())


def majority_vote_risk(votes, y, rho=None) -> float:
    """Risk of the rho-weighted plurality vote argmax_c V_ic; ties go to the lowest class index
    (numpy argmax keeps the first maximum)."""
    y = np.asarray(y)
    v = vote_shares(votes, rho, max(int(np.max(votes)), int(y.max())) + 1)
    return float((v.argmax(1) != y).mean())


def margins(votes, y, rho=None) -> np.ndarray:
    """M_rho(x_i, y_i) = V_{i,y_i} - max_{c != y_i} V_ic (Laviolette et al. 2017), in [-1, 1]."""
    y = np.asarray(y, dtype=np.int64)
    v = vote_shares(votes, rho, max(int(np.max(votes)), int(y.max())) + 1)
    correct = v[np.arange(len(y)), y]
    v[np.arange(len(y)), y] = -np.inf
    return correct - v.max(1)


def c_bound(votes, y, rho=None) -> float:
    """Multi-class C-bound C = 1 - (E[M])^2 / E[M^2], E over the test sample (Laviolette et al.
    2017; Cantelli-Chebyshev on the margin). Upper-bounds P(M <= 0) >= majority-vote risk.
    Defined when E[M] > 0; NaN otherwise. For C = 2 it equals c_bound_binary(R_G, d)."""
    m = margins(votes, y, rho)
    mu1, mu2 = m.mean(), (m ** 2).mean()
    return float(1.0 - mu1 ** 2 / mu2) if mu1 > 0 else float("nan")


def c_bound_binary(gibbs: float, disagreement: float) -> float:
    """Germain et al. 2015's C-bound 1 - (1 - 2 R_G)^2 / (1 - 2 d); defined when R_G < 1/2 (NaN
    otherwise). Exact form of c_bound() for two classes only (there E[M] = 1 - 2 R_G and
    E[M^2] = 1 - 2 d); in the multi-class case use c_bound()."""
    if not gibbs < 0.5:
        return float("nan")
    return float(1.0 - (1.0 - 2.0 * gibbs) ** 2 / (1.0 - 2.0 * disagreement))


# ----------------------------------------------------------------------------------------------
# 3. Calibration (probs (N, C), labels (N,))

def nll(probs, y, floor: float = PROB_FLOOR) -> float:
    """mean_i -log max(p_{i,y_i}, floor)."""
    probs = np.asarray(probs, dtype=np.float64)
    return float(-np.log(np.maximum(probs[np.arange(len(y)), np.asarray(y)], floor)).mean())


def accuracy(probs, y) -> float:
    return float((np.asarray(probs).argmax(1) == np.asarray(y)).mean())


def calibration_bins(probs, y, n_bins: int = ECE_BINS) -> tuple:
    """Guo et al. 2017's reliability bins of (N, C) probabilities: confidence = max_c p_ic in
    n_bins equal-width bins (lo, hi] on [0, 1]; per bin (rows, summed confidence, rows right)."""
    probs = np.asarray(probs, dtype=np.float64)
    conf, correct = probs.max(1), probs.argmax(1) == np.asarray(y)
    b = np.clip(np.searchsorted(np.linspace(0.0, 1.0, n_bins + 1), conf, side="left") - 1,
                0, n_bins - 1)
    return (np.bincount(b, minlength=n_bins), np.bincount(b, conf, n_bins),
            np.bincount(b, correct, n_bins))


def expected_calibration_error(probs, y, n_bins: int = ECE_BINS) -> float:
    """Guo et al. 2017: ECE = sum_b (|B_b| / N) |acc(B_b) - conf(B_b)| over calibration_bins."""
    count, conf, right = calibration_bins(probs, y, n_bins)
    return float(np.abs(right - conf).sum() / count.sum())   # sum_b n_b/N |acc_b - conf_b|


# ----------------------------------------------------------------------------------------------
# 4. Result-table columns (stable names)

CLASSIFICATION_DIAGNOSTICS = DIAGNOSTICS["classification"]
REGRESSION_DIAGNOSTICS = DIAGNOSTICS["regression"]


def _bregman_columns(geometry, preds, y) -> dict:
    d = decomposition(geometry, preds, y)
    return {"bregman_ensemble_loss": d["ensemble_loss"],
            "bregman_avg_member_loss": d["avg_member_loss"],
            "bregman_diversity": d["diversity"],
            "bregman_bias": centroid_bias_diversity(geometry, preds, y)["bias"]}


def classification_diagnostics(member_probs, y) -> dict:
    """member_probs (N, M, C), y (N,): cross-entropy Bregman terms (centroid = normalised
    geometric mean = logit averaging) and the PAC-Bayes quantities of the members' argmax votes
    (uniform rho). All NaN when the probabilities are not finite."""
    p = np.asarray(member_probs, dtype=np.float64)
    if not np.isfinite(p).all():
        return {k: float("nan") for k in CLASSIFICATION_DIAGNOSTICS}
    votes = p.argmax(2)
    return {**_bregman_columns(CrossEntropy(PROB_FLOOR), p, y),
            "gibbs_risk": gibbs_risk(votes, y), "disagreement": expected_disagreement(votes),
            "mv_risk": majority_vote_risk(votes, y), "c_bound": c_bound(votes, y)}


def regression_diagnostics(member_preds, y) -> dict:
    """member_preds (N, M), y (N,): squared-loss Bregman terms (B(a, b) = (a - b)^2, no 1/2;
    centroid = arithmetic mean). All NaN when the predictions are not finite."""
    p = np.asarray(member_preds, dtype=np.float64)
    if not np.isfinite(p).all():
        return {k: float("nan") for k in REGRESSION_DIAGNOSTICS}
    return _bregman_columns(SquaredLoss(), p, y)
