"""Temperature-scaled learned heads (head_calibration: temperature; Guo et al. 2017; docs/method.md,
"Calibrated heads"): the temperature is the NLL minimum of the head's probabilities on the
validation part -- for an on-the-fly head the rows it never saw, for a stacked head its
out-of-fold probabilities there -- and the recorded scores are those of the scaled probabilities."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from sklearn.datasets import load_wine

from sbfn_dist import SBFNClassifier
from sbfn_dist.combiners.classification import (PROB_FLOOR, finite_minimum, fit_temperature,
                                                temperature_scaled, tune_temperature)
from sbfn_dist.combiners.ensembles import CALIBRATION_FOLDS, combine, fit_stacked_head
from sbfn_dist.data.splits import kfold_splits
from sbfn_dist.evaluation.diagnostics import nll
from sbfn_dist.settings.config import TrialConfig
from tests.test_practitioners import TINY, kept_trial

# fit_temperature searches log10(tau) on a grid of step 0.05: its tau is within half a step of
# the exact minimum of a unimodal NLL.
HALF_STEP = 0.025 + 1e-9


def test_fit_temperature_is_the_nll_minimum_within_its_grid():
    gen = torch.Generator().manual_seed(0)
    z = 3 * torch.randn(4000, 4, generator=gen, dtype=torch.float64)
    y = torch.multinomial(torch.softmax(z / 2.0, 1), 1, generator=gen).squeeze(1)
    exact = minimize_scalar(lambda lt: float(torch.nn.functional.cross_entropy(z / 10 ** lt, y)),
                            bounds=(-3, 3), method="bounded", options={"xatol": 1e-6}).x
    tau = fit_temperature(z, y)
    assert abs(np.log10(tau) - exact) <= HALF_STEP and abs(np.log10(tau) - np.log10(2)) < 0.1
    # logit averaging's tuned T is the same search on the members' mean logits
    members = torch.stack([z, z + torch.randn(4000, 4, generator=gen, dtype=torch.float64)], 1)
    assert tune_temperature(members, y) == fit_temperature(members.mean(1), y)


def test_temperature_scaled_probabilities_are_the_logits_over_tau():
    z = torch.tensor([[2.0, -1.0, 0.5], [0.0, 0.0, 3.0]], dtype=torch.float64)
    scaled = temperature_scaled(torch.softmax(z, 1), 2.5)
    torch.testing.assert_close(scaled, torch.softmax(z / 2.5, 1), rtol=1e-12, atol=1e-15)


def _uncalibrated(head, P):
    """The head's probabilities as trained (its temperature set aside)."""
    tau = float(head.calibration)
    head.calibrate(1.0)
    probs = combine(head, None, P).double()
    head.calibrate(tau)
    return probs


def _log(p):
    return torch.log(p.clamp_min(PROB_FLOOR))


# Breast cancer, one epoch: both heads err on some of the validation part's 57 rows, so each
# NLL has its minimum inside fit_temperature's range (an interior tau, not 1).
CALIBRATED = dict(TINY, dataset="breast_cancer", n_members=3, epochs=1,
                  combiners=["sbfn", "sbfn_stacked", "logit_mean"],
                  head_calibration="temperature")


def test_a_trials_heads_are_scaled_by_the_validation_parts_temperature():
    recs, seen = kept_trial(CALIBRATED)
    fold, members = seen["fold"], seen["members"]
    y_val = fold.y_val_tensor
    d_val = torch.softmax(members.scores(fold.x_val), 2).float()
    # D as the trial holds it: the validation part in float32 (as the stacked combiners read
    # it), the test part in the members' dtype
    d_test = torch.softmax(members.scores(fold.x_test), 2)
    # on-the-fly: the rows of the validation part, which neither the members nor it trained on
    head = seen["sbfn"]
    expected = fit_temperature(_log(_uncalibrated(head, d_val)), y_val)
    # stacked: its out-of-fold probabilities on the validation part it is fitted on
    stacked = seen["sbfn_stacked"]
    oof = torch.empty((len(y_val), fold.n_classes), dtype=torch.float64)
    setting = TrialConfig.from_dict(CALIBRATED).get
    for rows, held in kfold_splits(len(y_val), CALIBRATION_FOLDS, fold.seed):
        sub = fit_stacked_head("sbfn_stacked", setting, d_val[rows], y_val[rows], fold.seed)
        oof[held] = combine(sub, None, d_val[held]).double()
    expected_stacked = fit_temperature(_log(oof), y_val)
    # not its probabilities on the rows it was fitted on: those give another temperature
    assert fit_temperature(_log(_uncalibrated(stacked, d_val)), y_val) != expected_stacked
    for name, model, tau in (("sbfn", head, expected), ("sbfn_stacked", stacked, expected_stacked)):
        record = recs[name]
        assert finite_minimum(tau) and tau != 1.0
        assert record["calibration_temperature"] == pytest.approx(tau, rel=1e-12), name
        scaled = temperature_scaled(_uncalibrated(model, d_test), tau).numpy()
        # the head answers float32 probabilities (eps 6e-8), which the trial scales in float32
        assert record["nll"] == pytest.approx(nll(scaled, fold.y_test), rel=1e-6), name
    assert "calibration_temperature" not in recs["logit_mean"]
    assert recs["sbfn"]["head_calibration"] == "temperature"


def test_a_head_that_ranks_every_validation_row_right_is_left_as_trained():
    """No finite temperature fits a validation part the head separates (its NLL falls all the
    way to tau -> 0): tau = 1, said in the record, instead of infinitely sure probabilities."""
    z = torch.tensor([[3.0, 0.0], [0.0, 2.0], [1.0, 0.0]], dtype=torch.float64)
    tau = fit_temperature(z, torch.tensor([0, 1, 0]))
    assert not finite_minimum(tau) and tau == pytest.approx(1e-3)
    recs, _ = kept_trial(dict(TINY, dataset="wine", n_members=3, epochs=3, combiners=["sbfn"],
                              head_calibration="temperature"))
    assert recs["sbfn"]["calibration_temperature"] == 1.0


def test_a_calibrated_on_the_fly_head_alone_gets_a_validation_part():
    cfg = TrialConfig.from_dict(dict(TINY, dataset="wine", combiners=["sbfn"],
                                     head_calibration="temperature"))
    assert cfg.uses_validation() and cfg.val_fraction == 0.2
    assert not TrialConfig.from_dict(dict(TINY, dataset="wine", combiners=["sbfn"])).uses_validation()


def test_a_saved_calibrated_classifier_predicts_as_it_did(tmp_path):
    X, y = load_wine(return_X_y=True)
    model = SBFNClassifier(n_members=3, epochs=3, combiner="sbfn",
                           head_calibration="temperature").fit(X, y)
    tau = float(model.combiner_.calibration)
    assert tau != 1.0
    scaled = model.predict_proba(X)
    model.combiner_.calibrate(1.0)                 # the same head as trained
    plain = model.predict_proba(X)
    model.combiner_.calibrate(tau)
    np.testing.assert_allclose(scaled, temperature_scaled(torch.as_tensor(plain), tau).numpy(),
                               rtol=1e-9, atol=1e-12)
    model.save(tmp_path / "m")
    np.testing.assert_array_equal(SBFNClassifier.load(tmp_path / "m").predict_proba(X),
                                  model.predict_proba(X))
