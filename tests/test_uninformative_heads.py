"""A classification head that learned nothing (issue 32 item 2): it scores the constant guess,
never below it, and its record says `uninformative`; the s-BFN head's bounded centre step."""

import re
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from sbfn_dist.combiners.classification import SBFNClassifierHead, beats_constant_guess
from sbfn_dist.errors import UninformativeWarning
from sbfn_dist.experiment import run_trials

# Digits 0, 1, 2 as 8x8 images, class 0 rare: a tie among the classes broken toward the first
# one picks the class the test part holds least of.
COUNTS = {0: 12, 1: 40, 2: 32}
# One epoch, and a step size that leaves the on-the-fly head's alpha at 0 in float32
# (|alpha| ~ 1e-31): its output is exactly 1/3 for every image, a head that learned nothing.
NOTHING = {"n_members": 2, "ensemble": "cnn", "epochs": 1, "folds": 1, "n_test": 21,
           "device": "cpu", "combiners": ["sbfn", "logit_mean"], "lr_alpha": 1e-30}


@pytest.fixture(scope="module")
def rare_first_class(tmp_path_factory) -> str:
    digits = load_digits()
    rows = np.concatenate([np.flatnonzero(digits.target == c)[:n] for c, n in COUNTS.items()])
    path = tmp_path_factory.mktemp("npz") / "digits012.npz"
    np.savez(path, x=(digits.images[rows] * 15).astype(np.uint8), y=digits.target[rows])
    return f"npz:{path}"


def sbfn_row_and_fold(config: dict):
    """The sbfn record of a one-split trial, and the fold it was scored on."""
    folds = []
    [records] = run_trials([config], keep=lambda cfg, fold, *rest: folds.append(fold))
    return next(r for r in records if r["model"] == "sbfn"), folds[0]


def test_a_head_that_learned_nothing_scores_the_constant_guess_and_says_so(rare_first_class):
    row, fold = sbfn_row_and_fold({**NOTHING, "dataset": rare_first_class})
    y_train, y_test = torch.as_tensor(fold.y_train).cpu().numpy(), fold.y_test
    prior = np.bincount(y_train, minlength=3) / len(y_train)
    guess_accuracy = float(np.mean(y_test == prior.argmax()))       # the majority class, 1
    tie_accuracy = float(np.mean(y_test == 0))                      # what the tie used to give
    assert tie_accuracy < guess_accuracy
    assert row["accuracy"] == pytest.approx(guess_accuracy, abs=1e-12)
    assert row["uninformative"] is True
    # Its probabilities are the training part's class prior (float32: 1e-6 of their log).
    assert row["nll"] == pytest.approx(-np.log(prior[y_test]).mean(), abs=1e-6)


def test_the_record_flags_an_uninformative_head_whose_output_is_kept(rare_first_class):
    row, fold = sbfn_row_and_fold({**NOTHING, "dataset": rare_first_class,
                                   "head_fallback": "none"})
    assert row["uninformative"] is True and row["head_fallback"] == "none"
    assert row["accuracy"] == pytest.approx(float(np.mean(fold.y_test == 0)), abs=1e-12)


def test_a_head_that_learned_beats_the_constant_guess_and_an_untrained_one_does_not():
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(60) % 3
    logits = torch.randn(60, 2, 3, generator=gen)
    logits[torch.arange(60), :, y] += 3.0
    P = torch.softmax(logits, 2)
    untrained = SBFNClassifierHead(2, 3, 8)         # alpha = 0: 1/3 everywhere, decided as 0
    assert not beats_constant_guess(untrained.predict_proba_eval(P), y)
    trained = SBFNClassifierHead(2, 3, 8).fit(P, y, epochs=30, batch_size=20, seed=0)
    assert beats_constant_guess(trained.predict_proba_eval(P), y)


def test_a_bounded_centre_step_keeps_layernorm_from_throwing_the_centres_away():
    """A row equidistant from both centres has equal features: LayerNorm's gradient there is
    1/sqrt(eps) = 316, and Algorithm 2's plain step throws the centres hundreds of widths out
    of the probability region (the collapse of the stacked head in issue 32); the bounded step
    moves each centre at most one width gamma."""
    moved = {}
    for step in ("plain", "bounded"):
        head = SBFNClassifierHead(1, 2, 2, centre_step=step)
        P, y = torch.tensor([[[0.5, 0.5]], [[0.6, 0.4]]]), torch.tensor([0, 1])
        head.prepare(P)
        with torch.no_grad():
            head.centres.copy_(torch.tensor([[0.5, 0.6], [0.5, 0.4]]))
            head.gamma.fill_(0.1)
            head.alpha.copy_(torch.tensor([[1.0, -1.0], [-1.0, 1.0]]))
        before = head.centres.detach().clone()
        head.step(P, y)
        moved[step] = (head.centres - before).norm(dim=1) / head.gamma
    assert (moved["plain"] > 100).all(), moved
    # float32: the capped move is gamma to a few ulps
    assert (moved["bounded"] <= 1 + 1e-5).all() and (moved["bounded"] > 0.99).all(), moved


@pytest.mark.parametrize("fallback", ["prior", "none"])
def test_the_classifier_estimator_takes_the_head_s_fallback_and_centre_step(fallback):
    """SBFNClassifier's head_fallback and centre_step reach its head (they were trial settings
    only): the head that learned nothing answers the class prior, or its own uniform output."""
    from sbfn_dist import SBFNClassifier
    digits = load_digits()
    rows = np.concatenate([np.flatnonzero(digits.target == c)[:n] for c, n in COUNTS.items()])
    x, y = digits.images[rows, None].astype(np.float32) / 16, digits.target[rows]
    # It said nothing (the verdict was the trial records' alone): a fit that learned nothing
    # warns, as scikit-learn's ConvergenceWarning does, and uninformative_ says so.
    said = {"prior": "predicts the class prior instead (head_fallback='prior')",
            "none": "predicts no better than the class prior"}[fallback]
    with pytest.warns(UninformativeWarning, match=re.escape(said)):
        model = SBFNClassifier(ensemble="cnn", n_members=2, epochs=1, combiner="sbfn",
                               lr_alpha=1e-30, head_fallback=fallback, centre_step="plain").fit(x, y)
    assert model.uninformative_ and model.combiner_.centre_step == "plain"
    prior = np.bincount(y) / len(y)
    expected = prior if fallback == "prior" else np.full(3, 1 / 3)
    # float32 probabilities: 1e-6 of 1
    np.testing.assert_allclose(model.predict_proba(x), np.tile(expected, (len(y), 1)), atol=1e-6)


def test_a_classifier_that_learned_says_nothing_of_it():
    from sbfn_dist import SBFNClassifier
    digits = load_digits()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UninformativeWarning)
        model = SBFNClassifier(n_members=2, epochs=2).fit(digits.data[:300], digits.target[:300])
    assert model.uninformative_ is False
