"""Ensemble diagnostics (paper, section "Analysis of Ensemble Diversity, Capacity, and Dataset
Complexity"): Bregman decomposition (Wood et al. 2023), PAC-Bayes majority vote (Germain et al.
2015, Laviolette et al. 2017), calibration (Guo et al. 2017), FLOPs."""

import numpy as np
import pytest
import torch

from sbfn_dist.evaluation import diagnostics as dg
from sbfn_dist.learners import cost
from sbfn_dist.learners.geometry import CrossEntropy, SquaredLoss


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_case(geometry, rng, shape):
    """Member predictions of `shape` (..., N, M) plus the class axis, and labels (N,)."""
    n = shape[-2]
    if geometry.name == "squared":
        return rng.normal(size=shape), rng.normal(size=n)
    return softmax(rng.normal(scale=2.0, size=shape + (5,))), rng.integers(0, 5, size=n)


# ---------------------------------------------------------------- Bregman decomposition

@pytest.mark.parametrize("geometry", [SquaredLoss(), CrossEntropy()], ids=lambda g: g.name)
@pytest.mark.parametrize("m", [1, 2, 5, 16])
def test_ensemble_loss_is_avg_member_loss_minus_diversity(geometry, m):
    preds, y = random_case(geometry, np.random.default_rng(m), (200, m))
    d = dg.decomposition(geometry, preds, y)
    assert d["ensemble_loss"] == pytest.approx(d["avg_member_loss"] - d["diversity"], abs=1e-12)
    assert d["diversity"] >= -1e-12
    if m == 1:
        assert d["diversity"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("geometry", [SquaredLoss(), CrossEntropy()], ids=lambda g: g.name)
def test_weighted_decomposition_also_adds_up(geometry):
    preds, y = random_case(geometry, np.random.default_rng(7), (100, 4))
    d = dg.decomposition(geometry, preds, y, weights=np.array([0.1, 0.2, 0.3, 2.0]))
    assert d["ensemble_loss"] == pytest.approx(d["avg_member_loss"] - d["diversity"], abs=1e-12)


def test_squared_decomposition_is_the_ambiguity_decomposition():
    preds = np.array([[1.0, 3.0], [0.0, 4.0]])          # N = 2, M = 2
    y = np.array([1.0, 1.0])
    d = dg.decomposition(SquaredLoss(), preds, y)
    # centroids 2, 2: ensemble loss ((2-1)^2 + (2-1)^2)/2 = 1
    # member losses (0 + 4)/2 = 2 and (1 + 9)/2 = 5 -> avg 3.5; diversity (1 + 4)/2 = 2.5
    assert d == pytest.approx({"ensemble_loss": 1.0, "avg_member_loss": 3.5, "diversity": 2.5})


def test_cross_entropy_diversity_is_kl_from_the_geometric_mean():
    rng = np.random.default_rng(8)
    logits = rng.normal(size=(30, 3, 4))
    probs, y = softmax(logits), rng.integers(0, 4, size=30)
    qbar = softmax(logits.mean(1))                       # logit averaging
    kl = (qbar[:, None] * (np.log(qbar[:, None]) - np.log(probs))).sum(-1)
    d = dg.decomposition(CrossEntropy(), probs, y)
    assert d["diversity"] == pytest.approx(kl.mean())
    assert d["ensemble_loss"] == pytest.approx(-np.log(qbar[np.arange(30), y]).mean())


def test_paper_reading_bias_is_the_centroid_loss():
    preds, y = random_case(CrossEntropy(), np.random.default_rng(9), (50, 3))
    d = dg.decomposition(CrossEntropy(), preds, y)
    r = dg.centroid_bias_diversity(CrossEntropy(), preds, y)
    assert r == pytest.approx({"bias": d["ensemble_loss"], "diversity": d["diversity"]})


@pytest.mark.parametrize("geometry", [SquaredLoss(), CrossEntropy()], ids=lambda g: g.name)
@pytest.mark.parametrize("m", [1, 3, 8])
def test_multi_run_bias_variance_diversity_identities(geometry, m):
    preds, y = random_case(geometry, np.random.default_rng(10 + m), (6, 80, m))   # R = 6 runs
    b = dg.bias_variance_diversity(geometry, preds, y)
    assert b["expected_ensemble_loss"] == pytest.approx(b["bias"] + b["variance"], abs=1e-12)
    assert b["expected_avg_member_loss"] == pytest.approx(
        b["bias"] + b["variance"] + b["diversity"], abs=1e-12)
    # Wood et al.: expected ensemble loss = average bias + average variance - diversity
    assert b["expected_ensemble_loss"] == pytest.approx(
        b["avg_bias"] + b["avg_variance"] - b["diversity"], abs=1e-12)
    assert min(b["variance"], b["avg_variance"], b["diversity"]) >= -1e-12
    assert b["noise"] == 0.0


def test_multi_run_squared_terms_by_definition():
    rng = np.random.default_rng(11)
    preds, y = rng.normal(size=(5, 40, 3)), rng.normal(size=40)
    b = dg.bias_variance_diversity(SquaredLoss(), preds, y)
    qbar = preds.mean(2)                                  # (R, N)
    assert b["bias"] == pytest.approx(((qbar.mean(0) - y) ** 2).mean())
    assert b["variance"] == pytest.approx(qbar.var(0).mean())
    assert b["diversity"] == pytest.approx(((preds - qbar[..., None]) ** 2).mean())


def test_multi_run_with_identical_runs_has_zero_variance():
    preds, y = random_case(CrossEntropy(), np.random.default_rng(12), (1, 30, 4))
    b = dg.bias_variance_diversity(CrossEntropy(), np.repeat(preds, 3, 0), y)
    assert b["variance"] == pytest.approx(0.0, abs=1e-12)
    assert b["bias"] == pytest.approx(b["expected_ensemble_loss"])


# ---------------------------------------------------------------- PAC-Bayes majority vote

# 4 samples, 3 voters, 3 classes, uniform rho = 1/3 each.
VOTES = np.array([[0, 0, 1],     # y=0: 1/3 wrong, vote (2/3, 1/3, 0), d = 1-(4/9+1/9) = 4/9,
                                 #      MV=0 right, margin 2/3-1/3 = 1/3
                  [1, 1, 1],     # y=1: 0 wrong, vote (0, 1, 0), d = 0, MV right, margin 1
                  [0, 1, 2],     # y=2: 2/3 wrong, vote (1/3,1/3,1/3), d = 2/3,
                                 #      tie -> class 0 (wrong), margin 1/3-1/3 = 0
                  [2, 2, 0]])    # y=0: 2/3 wrong, vote (1/3, 0, 2/3), d = 4/9, MV=2 wrong,
                                 #      margin 1/3-2/3 = -1/3
LABELS = np.array([0, 1, 2, 0])


def test_gibbs_risk_by_hand():
    assert dg.gibbs_risk(VOTES, LABELS) == pytest.approx((1 / 3 + 0 + 2 / 3 + 2 / 3) / 4)  # 5/12


def test_expected_disagreement_by_hand():
    assert dg.expected_disagreement(VOTES) == pytest.approx((4 / 9 + 0 + 2 / 3 + 4 / 9) / 4)  # 7/18


def test_majority_vote_risk_by_hand_ties_go_to_the_lowest_class():
    assert dg.majority_vote_risk(VOTES, LABELS) == pytest.approx(0.5)
    # the tie of sample 3 resolves to class 0: correct if the label were 0
    assert dg.majority_vote_risk(VOTES[2:3], np.array([0])) == 0.0


def test_c_bound_by_hand():
    assert np.allclose(dg.margins(VOTES, LABELS), [1 / 3, 1.0, 0.0, -1 / 3])
    # E[M] = 1/4, E[M^2] = (1/9 + 1 + 0 + 1/9)/4 = 11/36 -> C = 1 - (1/16)/(11/36) = 35/44
    assert dg.c_bound(VOTES, LABELS) == pytest.approx(35 / 44)
    assert dg.c_bound(VOTES, LABELS) >= dg.majority_vote_risk(VOTES, LABELS)


def test_weighted_posterior():
    rho = np.array([0.0, 0.0, 1.0])                        # only voter 3 counts
    assert dg.gibbs_risk(VOTES, LABELS, rho) == pytest.approx(0.25)    # votes 1,1,2,0: wrong on x1
    assert dg.expected_disagreement(VOTES, rho) == 0.0
    assert dg.majority_vote_risk(VOTES, LABELS, rho) == pytest.approx(0.25)
    rho = np.array([1.0, 1.0, 3.0])        # voter 3 outweighs the other two: MV wrong on x1 only
    assert dg.majority_vote_risk(VOTES, LABELS, rho) == pytest.approx(0.25)
    assert dg.gibbs_risk(VOTES, LABELS, rho) == pytest.approx(
        (1 / 5) * (2 / 4) + (1 / 5) * (2 / 4) + (3 / 5) * (1 / 4))   # voter errors 2, 2, 1 of 4


def test_c_bound_is_nan_without_positive_mean_margin():
    votes = np.array([[1, 1, 0], [0, 0, 1]])
    assert np.isnan(dg.c_bound(votes, np.array([0, 1])))
    assert np.isnan(dg.c_bound_binary(0.6, 0.3))


@pytest.mark.parametrize("seed", range(20))
def test_c_bound_upper_bounds_majority_vote_risk(seed):
    rng = np.random.default_rng(seed)
    n, m, c = 300, int(rng.integers(2, 12)), int(rng.integers(2, 8))
    y = rng.integers(0, c, size=n)
    p_right = rng.uniform(0.3, 0.9)
    votes = np.where(rng.random((n, m)) < p_right, y[:, None], rng.integers(0, c, size=(n, m)))
    rho = rng.dirichlet(np.ones(m)) if seed % 2 else None
    bound = dg.c_bound(votes, y, rho)
    if np.isfinite(bound):
        assert dg.majority_vote_risk(votes, y, rho) <= bound + 1e-12


def test_multiclass_c_bound_reduces_to_the_binary_one():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, size=500)
    votes = np.where(rng.random((500, 7)) < 0.75, y[:, None], 1 - y[:, None])
    rg, d = dg.gibbs_risk(votes, y), dg.expected_disagreement(votes)
    assert dg.c_bound(votes, y) == pytest.approx(dg.c_bound_binary(rg, d))


# ---------------------------------------------------------------- calibration

def test_nll_and_accuracy():
    probs = np.array([[0.5, 0.5], [0.9, 0.1], [0.0, 1.0]])
    y = np.array([0, 1, 0])
    assert dg.accuracy(probs, y) == pytest.approx(1 / 3)              # argmax tie -> class 0
    assert dg.accuracy(probs, np.array([0, 0, 1])) == 1.0
    assert dg.nll(probs, y) == pytest.approx((np.log(2) + np.log(10) - np.log(1e-12)) / 3)


def test_ece_of_a_calibrated_toy_is_zero_and_of_an_overconfident_toy_is_large():
    n = 1000
    y = np.zeros(n, dtype=int)
    y[800:] = 1                                          # 80% of predictions of class 0 correct
    calibrated = np.tile([0.8, 0.2], (n, 1))
    assert dg.expected_calibration_error(calibrated, y) == pytest.approx(0.0, abs=1e-12)
    overconfident = np.tile([0.99, 0.01], (n, 1))
    assert dg.expected_calibration_error(overconfident, y) == pytest.approx(0.19)


def test_ece_by_hand_over_two_bins():
    probs = np.array([[0.95, 0.05], [0.95, 0.05], [0.6, 0.4], [0.6, 0.4]])
    y = np.array([0, 1, 0, 0])
    # bin (0.933, 1]: acc 1/2, conf 0.95 -> 0.45 * 2/4
    # bin (0.533, 0.6]: acc 1, conf 0.6 -> 0.4 * 2/4
    assert dg.expected_calibration_error(probs, y) == pytest.approx(0.225 + 0.2)


# ---------------------------------------------------------------- efficiency

def test_flops_of_a_linear_layer_per_example():
    model = torch.nn.Linear(10, 5)
    assert cost.flops_per_example(model, torch.randn(4, 10)) == 2 * 10 * 5
    assert cost.count_parameters(model) == 10 * 5 + 5


def test_flops_restore_training_mode_and_leave_batchnorm_stats_alone():
    model = torch.nn.Sequential(torch.nn.Linear(10, 5), torch.nn.BatchNorm1d(5))
    before = model[1].running_mean.clone()
    cost.flops_per_example(model, torch.randn(8, 10) + 3.0)
    assert model.training
    assert torch.equal(model[1].running_mean, before)


# ---------------------------------------------------------------- result-table columns

def test_classification_diagnostics_columns():
    rng = np.random.default_rng(6)
    probs, y = softmax(rng.normal(size=(64, 4, 3))), rng.integers(0, 3, size=64)
    out = dg.classification_diagnostics(probs, y)
    assert tuple(out) == dg.CLASSIFICATION_DIAGNOSTICS
    assert all(isinstance(v, float) for v in out.values())
    assert out["bregman_ensemble_loss"] == pytest.approx(
        out["bregman_avg_member_loss"] - out["bregman_diversity"])
    assert out["bregman_bias"] == out["bregman_ensemble_loss"]
    votes = probs.argmax(2)
    assert out["mv_risk"] == dg.majority_vote_risk(votes, y)
    assert out["disagreement"] == dg.expected_disagreement(votes)
    nan = dg.classification_diagnostics(np.full((4, 2, 3), np.nan), y[:4])
    assert all(np.isnan(v) for v in nan.values())


def test_regression_diagnostics_columns():
    rng = np.random.default_rng(7)
    preds, y = rng.normal(size=(50, 6)), rng.normal(size=50)
    out = dg.regression_diagnostics(preds, y)
    assert tuple(out) == dg.REGRESSION_DIAGNOSTICS
    assert out["bregman_ensemble_loss"] == pytest.approx(((preds.mean(1) - y) ** 2).mean())
    assert out["bregman_diversity"] == pytest.approx(preds.var(1).mean())
