"""delta(epsilon), paper Eq. "equatruedelta"."""

import numpy as np
import pytest
import torch

from sbfn_dist.learners.diversity import wta_weights
from sbfn_dist.errors import ConfigError
from sbfn_dist.interfaces.estimators import SBFNRegressor
from sbfn_dist.settings.config import TrialConfig


def test_rows_sum_to_one_for_every_epsilon():
    losses = torch.rand(50, 7)
    for eps in (0.0, 0.1, 0.35, 0.5, 1.0):
        assert torch.allclose(wta_weights(losses, eps).sum(1), torch.ones(50))


def test_winner_gets_one_minus_epsilon_others_share_epsilon():
    losses = torch.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, 9.0]])
    delta = wta_weights(losses, 0.4)
    assert torch.allclose(delta, torch.tensor([[0.2, 0.6, 0.2], [0.6, 0.2, 0.2]]))


def test_epsilon_zero_is_pure_winner_takes_all():
    losses = torch.tensor([[3.0, 1.0, 2.0]])
    assert torch.equal(wta_weights(losses, 0.0), torch.tensor([[0.0, 1.0, 0.0]]))


def test_single_member_always_gets_weight_one():
    assert torch.equal(wta_weights(torch.rand(5, 1), 0.7), torch.ones(5, 1))


def test_ties_go_to_the_lowest_member_index():
    delta = wta_weights(torch.tensor([[1.0, 1.0, 1.0]]), 0.0)
    assert torch.equal(delta, torch.tensor([[1.0, 0.0, 0.0]]))


def test_delta_is_computed_per_sample():
    losses = torch.tensor([[0.0, 5.0], [5.0, 0.0]])
    delta = wta_weights(losses, 0.0)
    assert torch.equal(delta, torch.eye(2))


@pytest.mark.parametrize("eps", [-0.1, 1.5, float("nan")])
def test_epsilon_outside_unit_interval_is_refused_when_the_configuration_is_made(eps):
    """Its range is checked once, where a configuration is made (the delta of every batch
    takes it as given): a trial's and an estimator's alike."""
    with pytest.raises(ConfigError, match="epsilon.*\\[0, 1\\]"):
        TrialConfig.from_dict({"epsilon": eps})
    with pytest.raises(ConfigError, match="epsilon.*\\[0, 1\\]"):
        SBFNRegressor(epsilon=eps).fit(np.zeros((4, 2)), np.zeros(4))
