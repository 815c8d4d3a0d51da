"""Combiners over member class probabilities P (N, M, C)."""

import pytest
import torch

from sbfn_dist.combiners.classification import (MoEGateHead, SBFNClassifierHead, kmeanspp_rows,
                                                logit_average, probability_average,
                                                tune_temperature)
from sbfn_dist.errors import ConfigError
from sbfn_dist.learners.geometry import CrossEntropy


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


def sharpening_stream(epochs=8, n=640, m=3, c=10, b=64, seed=0):
    """What an on-the-fly head sees (Algorithm 2): members uniform at first, one-hot-like at the
    end; None marks an epoch start. Returns the batches and the final (P, y)."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(c, (n,), generator=gen)
    noise = torch.randn(n, m, c, generator=gen)
    items = []
    for e in range(epochs):
        logits = noise.clone()
        logits[torch.arange(n), :, y] += 6.0 * e / (epochs - 1)
        P = torch.softmax(logits, 2)
        items += [None] + [(P[s:s + b], y[s:s + b]) for s in range(0, n, b)]
    return items, (P, y)


def on_the_fly_accuracy(**options):
    head = SBFNClassifierHead(3, 10, n_units=12, **options)      # T = 3, eta = 0.1, SGD
    items, (P, y) = sharpening_stream()
    for item in items:
        head.epoch_start() if item is None else head.step(*item)
    return accuracy(head.predict_proba_eval(P), y)


def test_default_head_learns_on_the_fly_while_members_sharpen():
    assert on_the_fly_accuracy() > 0.95


def test_sum_row_normalisation_leaves_the_head_near_chance_at_the_papers_step_size():
    # why LayerNorm is the default: sum-normalised features barely move alpha (docs/method.md)
    assert on_the_fly_accuracy(row_norm="sum") < 0.5 < on_the_fly_accuracy(row_norm="layernorm")


def test_kmeanspp_seeding_puts_a_centre_in_every_class_cluster():
    labels = torch.arange(10).repeat_interleave(20)
    for seed in range(5):
        gen = torch.Generator().manual_seed(seed)
        points = torch.eye(10)[labels] + 0.01 * torch.rand(200, 10, generator=gen)
        picks = kmeanspp_rows(points, 10, gen)
        assert set(labels[picks].tolist()) == set(range(10))


def test_kmeanspp_seeding_handles_more_centres_than_distinct_rows():
    picks = kmeanspp_rows(torch.ones(4, 3), 6, torch.Generator().manual_seed(0))
    assert picks.shape == (6,) and int(picks.max()) < 4


def test_unknown_centre_init_is_a_clear_error():
    with pytest.raises(ConfigError, match="centre_init"):
        SBFNClassifierHead(3, 4, 12, centre_init="farthest")
