"""Combiners over member class probabilities P (N, M, C)."""

import pytest
import torch

from sbfn_dist.combiners.classification import (MoEGateHead, SBFNClassifierHead, logit_average,
                                                probability_average, tune_temperature)
from sbfn_dist.errors import ConfigError
from sbfn_dist.geometry import CrossEntropy


def separable(n=600, m=3, c=4, signal=3.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(c, (n,), generator=gen)
    logits = torch.randn(n, m, c, generator=gen)
    logits[torch.arange(n), :, y] += signal
    return logits, torch.softmax(logits, 2), y


def accuracy(probs, y):
    return float((probs.argmax(1) == y).float().mean())


@pytest.mark.parametrize("make_head", [
    lambda m, c: SBFNClassifierHead(m, c, n_units=4 * m, temperature=3.0, lr=0.1),
    lambda m, c: MoEGateHead(m, c, lr=0.1),
])
def test_learned_heads_learn_a_separable_problem(make_head):
    _, probs, y = separable()
    head = make_head(3, 4).fit(probs, y, epochs=30, batch_size=32, seed=0)
    assert accuracy(head.predict_proba_eval(probs), y) > 0.9


def test_fixed_rules_learn_a_separable_problem():
    logits, probs, y = separable()
    assert accuracy(logit_average(logits), y) > 0.9
    assert accuracy(probability_average(probs), y) > 0.9


def test_logit_averaging_is_the_cross_entropy_centroid():
    logits, probs, _ = separable(n=50)
    centroid = CrossEntropy().centroid(probs.double())
    torch.testing.assert_close(logit_average(logits.double()), centroid)


def test_tuned_temperature_lowers_validation_nll():
    logits, _, y = separable(signal=6.0)
    t = tune_temperature(logits, y)
    nll = lambda temp: float(torch.nn.functional.cross_entropy(logits.mean(1) / temp, y))
    assert nll(t) <= nll(1.0)


@pytest.mark.parametrize("temperature", [0.0, -1.0, float("inf")])
def test_temperature_must_be_positive(temperature):
    with pytest.raises(ConfigError, match="temperature"):
        SBFNClassifierHead(3, 4, 12, temperature=temperature)


def test_heads_reject_a_wrong_probability_shape():
    head = MoEGateHead(3, 4)
    with pytest.raises(ConfigError, match="N, M, C"):
        head.predict_proba(torch.rand(5, 12))


def test_centres_seeded_on_untrained_members_are_reseeded_once_members_sharpen():
    _, sharp, y = separable(n=256)
    head = SBFNClassifierHead(3, 4, n_units=12)
    head.step(torch.full_like(sharp[:64], 0.25), y[:64])     # untrained members: uniform outputs
    collapsed = float(head._centre_spacing())
    for s in range(0, 256, 64):
        head.step(sharp[s:s + 64], y[s:s + 64])
    head.epoch_start()
    assert float(head._centre_spacing()) > 10 * collapsed
