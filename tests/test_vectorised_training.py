"""All M members trained as one batched program equal M members trained one by one."""

import numpy as np
import pytest
import torch

from sbfn_dist.errors import ConfigError
from sbfn_dist.learners.training import (MLPConfig, StreamRecorder, TrainingDiverged, train_mlp,
                               train_mlp_pack)
from references.looped_members import train_members_looped


def train_members(X, y, cfg):
    return train_mlp(X, y, cfg)


def predictions(X, y, cfg):
    return train_mlp(X, y, cfg).predict(X).numpy()


def stream(X, y, cfg):
    """The recorded on-the-fly stream (visit-order pre-step predictions and targets)."""
    recorder = StreamRecorder(cfg.epochs * len(y), cfg.n_members, torch.float64)
    train_mlp(X, y, cfg, observers=[recorder])
    return recorder.arrays()


def problem(n=120, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


def looped_predictions(nets, X):
    with torch.no_grad():
        return np.stack([net(torch.as_tensor(X)).squeeze(-1).numpy() for net in nets], 1)


@pytest.mark.parametrize("batch_size", [1, 7])
def test_cross_entropy_members_equal_autograd_member_by_member(batch_size):
    """Algorithm 2 on MLPs: the hand-written cross-entropy gradient of the vectorised stack
    equals autograd on M separate nets (same init, batches, delta)."""
    X, y = problem()
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))       # three classes
    cfg = MLPConfig(n_members=3, epsilon=0.3, width=8, epochs=2, batch_size=batch_size, lr=0.1,
                    lambda1=0.5, init_scale=1.0, dtype="float64", geometry="cross_entropy")
    vectorised = train_mlp(X, labels, cfg, n_outputs=3).scores(X).numpy()
    nets = train_members_looped(X, labels, cfg, n_outputs=3)
    with torch.no_grad():
        looped = np.stack([net(torch.as_tensor(X)).numpy() for net in nets], 1)
    np.testing.assert_allclose(vectorised, looped, rtol=0, atol=1e-12)


@pytest.mark.parametrize("batch_size", [1, 16])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_vectorised_equals_member_by_member(batch_size, activation):
    X, y = problem()
    cfg = MLPConfig(n_members=4, epsilon=0.3, width=8, epochs=2, batch_size=batch_size,
                       lr=0.05, lambda1=0.5, init_scale=1.0, activation=activation,
                       dtype="float64")
    vectorised = predictions(X, y, cfg)
    looped = looped_predictions(train_members_looped(X, y, cfg), X)
    np.testing.assert_allclose(vectorised, looped, rtol=0, atol=1e-12)


def test_same_seed_same_members_and_other_seed_differs():
    X, y = problem()
    cfg = MLPConfig(n_members=3, width=8, epochs=1, batch_size=4)
    a = predictions(X, y, cfg)
    assert np.array_equal(a, predictions(X, y, cfg))
    other = MLPConfig(n_members=3, width=8, epochs=1, batch_size=4, seed=1)
    assert not np.allclose(a, predictions(X, y, other))


def test_members_start_different_and_epsilon_zero_specialises_them():
    X, y = problem(n=300)
    cfg = MLPConfig(n_members=5, epsilon=0.0, width=16, epochs=5, batch_size=1, lr=0.03)
    D = predictions(X, y, cfg)
    assert D.std(1).mean() > 0.05       # winner-takes-all keeps the hypotheses apart


def test_a_single_hypothesis_learns_the_function():
    X, y = problem(n=300)
    cfg = MLPConfig(n_members=1, width=16, epochs=20, batch_size=8, lr=0.05)
    trained = train_members(X, y, cfg)
    assert np.sqrt(trained.epoch_loss[-1][0]) < 0.5 * np.std(y)   # epoch_loss: mean squared


def test_the_best_of_m_loss_falls_with_training():
    """The MHP objective (Eq. 14): the winner's loss, not each member's, is what training lowers."""
    X, y = problem(n=300)
    short, long = (MLPConfig(n_members=4, epsilon=0.1, width=16, epochs=e, batch_size=8,
                                lr=0.2) for e in (1, 20))
    oracle = [np.abs(predictions(X, y, c) - y[:, None]).min(1).mean()
              for c in (short, long)]
    assert oracle[1] < 0.6 * oracle[0]


def test_stream_records_pre_update_predictions_in_visit_order():
    X, y = problem(n=40)
    cfg = MLPConfig(n_members=2, width=4, epochs=3, batch_size=1, dtype="float64")
    z, stream_y = stream(X, y, cfg)
    assert z.shape == (120, 2)
    assert sorted(stream_y[:40]) == sorted(y)   # each epoch visits every sample once
    one_epoch = MLPConfig(n_members=2, width=4, epochs=1, batch_size=1, dtype="float64")
    np.testing.assert_allclose(z[:40], stream(X, y, one_epoch)[0])


def test_divergence_is_reported_not_hidden():
    X, y = problem()
    cfg = MLPConfig(n_members=2, width=8, epochs=3, batch_size=1, lr=1e6, init_scale=10.0)
    with pytest.raises(TrainingDiverged, match="non-finite"):
        train_members(X, y * 1e6, cfg)


def _pack_configs(**shared):
    """Five hypothesis sets that differ in everything a set may: M, epsilon, lr, chi, lambda1,
    init scheme (M = 1 included)."""
    sets = [dict(n_members=3, epsilon=0.0, lr=0.05), dict(n_members=1, epsilon=0.2, lr=0.02),
            dict(n_members=5, epsilon=0.35, lr=0.05, init_scale=0.5),
            dict(n_members=2, epsilon=0.5, lr=0.1, lambda1=0.3, init_scheme="scaled_normal"),
            dict(n_members=5, epsilon=0.35, lr=0.05)]
    return [MLPConfig(**s, **shared) for s in sets]


@pytest.mark.parametrize("batch_size,geometry,n_outputs", [(1, "squared", 1), (8, "squared", 1),
                                                           (4, "cross_entropy", 3)])
def test_hypothesis_sets_trained_as_one_pack_equal_each_set_trained_alone(batch_size, geometry,
                                                                           n_outputs):
    X, y = problem()
    if geometry == "cross_entropy":
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    cfgs = _pack_configs(width=8, epochs=2, batch_size=batch_size, dtype="float64",
                         geometry=geometry)
    packed = train_mlp_pack(X, y, cfgs, n_outputs)
    for cfg, together in zip(cfgs, packed):
        alone = train_mlp(X, y, cfg, n_outputs)
        np.testing.assert_allclose(together.model.flat.numpy(), alone.model.flat.numpy(),
                                   rtol=0, atol=1e-10)
        assert together.packed_members == 16 and alone.packed_members == cfg.n_members


def test_a_diverging_set_does_not_disturb_the_others_of_its_pack():
    X, y = problem()
    calm = MLPConfig(n_members=3, width=8, epochs=3, batch_size=1, dtype="float64")
    wild = MLPConfig(n_members=2, width=8, epochs=3, batch_size=1, dtype="float64", lr=1e6,
                     init_scale=10.0)
    packed = train_mlp_pack(X, y * 1e6, [calm, wild])
    with pytest.raises(TrainingDiverged) as alone_err:
        train_mlp(X, y * 1e6, wild)
    assert isinstance(packed[1], TrainingDiverged) and str(packed[1]) == str(alone_err.value)
    np.testing.assert_allclose(packed[0].model.flat.numpy(),       # targets of order 1e6
                               train_mlp(X, y * 1e6, calm).model.flat.numpy(), rtol=1e-12)


def test_a_pack_refuses_sets_that_cannot_share_its_kernels():
    with pytest.raises(ConfigError, match="width"):
        train_mlp_pack(*problem(), [MLPConfig(width=8), MLPConfig(width=16)])
