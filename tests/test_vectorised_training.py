"""All M members trained as one batched program equal M members trained one by one."""

import numpy as np
import pytest
import torch

from sbfn_dist.ensemble import MemberConfig, TrainingDiverged, train_members
from sbfn_dist.learners.reference import train_members_looped


def problem(n=120, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


def looped_predictions(nets, X):
    with torch.no_grad():
        return np.stack([net(torch.as_tensor(X)).squeeze(-1).numpy() for net in nets], 1)


@pytest.mark.parametrize("batch_size", [1, 16])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_vectorised_equals_member_by_member(batch_size, activation):
    X, y = problem()
    cfg = MemberConfig(n_members=4, epsilon=0.3, width=8, epochs=2, batch_size=batch_size,
                       lr=0.05, lambda1=0.5, init_scale=1.0, activation=activation,
                       dtype="float64")
    vectorised = train_members(X, y, cfg).predict(X)
    looped = looped_predictions(train_members_looped(X, y, cfg), X)
    np.testing.assert_allclose(vectorised, looped, rtol=0, atol=1e-12)


def test_same_seed_same_members_and_other_seed_differs():
    X, y = problem()
    cfg = MemberConfig(n_members=3, width=8, epochs=1, batch_size=4)
    a = train_members(X, y, cfg).predict(X)
    assert np.array_equal(a, train_members(X, y, cfg).predict(X))
    other = MemberConfig(n_members=3, width=8, epochs=1, batch_size=4, seed=1)
    assert not np.allclose(a, train_members(X, y, other).predict(X))


def test_members_start_different_and_epsilon_zero_specialises_them():
    X, y = problem(n=300)
    cfg = MemberConfig(n_members=5, epsilon=0.0, width=16, epochs=5, batch_size=1, lr=0.03)
    D = train_members(X, y, cfg).predict(X)
    assert D.std(1).mean() > 0.05       # winner-takes-all keeps the hypotheses apart


def test_a_single_hypothesis_learns_the_function():
    X, y = problem(n=300)
    cfg = MemberConfig(n_members=1, width=16, epochs=20, batch_size=8, lr=0.05)
    trained = train_members(X, y, cfg)
    assert trained.epoch_rmse[-1][0] < 0.5 * np.std(y)


def test_the_best_of_m_loss_falls_with_training():
    """The MHP objective (Eq. 14): the winner's loss, not each member's, is what training lowers."""
    X, y = problem(n=300)
    short, long = (MemberConfig(n_members=4, epsilon=0.1, width=16, epochs=e, batch_size=8,
                                lr=0.2) for e in (1, 20))
    oracle = [np.abs(train_members(X, y, c).predict(X) - y[:, None]).min(1).mean()
              for c in (short, long)]
    assert oracle[1] < 0.6 * oracle[0]


def test_stream_records_pre_update_predictions_in_visit_order():
    X, y = problem(n=40)
    cfg = MemberConfig(n_members=2, width=4, epochs=3, batch_size=1, dtype="float64")
    trained = train_members(X, y, cfg, record_stream=True)
    assert trained.stream_z.shape == (120, 2)
    assert sorted(trained.stream_y[:40]) == sorted(y)   # each epoch visits every sample once
    one_epoch = MemberConfig(n_members=2, width=4, epochs=1, batch_size=1, dtype="float64")
    first = train_members(X, y, one_epoch, record_stream=True)
    np.testing.assert_allclose(trained.stream_z[:40], first.stream_z)


def test_divergence_is_reported_not_hidden():
    X, y = problem()
    cfg = MemberConfig(n_members=2, width=8, epochs=3, batch_size=1, lr=1e6, init_scale=10.0)
    with pytest.raises(TrainingDiverged, match="non-finite"):
        train_members(X, y * 1e6, cfg)
