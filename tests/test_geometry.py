"""Loss geometries (paper, section "Loss Geometry and Centroid-based Ensemble Combiners")."""

import math

import numpy as np
import pytest
import torch

from sbfn_dist.errors import ConfigError
from sbfn_dist.learners.geometry import GEOMETRIES, CrossEntropy, SquaredLoss, get_geometry


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_registry_has_both_geometries():
    assert isinstance(get_geometry("cross_entropy"), CrossEntropy)
    assert isinstance(get_geometry("squared"), SquaredLoss)
    assert GEOMETRIES["cross_entropy"].task == "classification"
    assert GEOMETRIES["cross_entropy"].name == "cross_entropy"
    with pytest.raises(ConfigError):
        get_geometry("hinge")


def test_squared_divergence_by_hand():
    g = SquaredLoss()
    assert g.divergence(3.0, 1.0) == 4.0
    assert np.allclose(g.divergence(np.array([0.5, -1.0]), np.array([1.0, 1.0])), [0.25, 4.0])


def test_kl_divergence_by_hand():
    g = CrossEntropy()
    p, q = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    # KL = 0.5 log(0.5/0.25) + 0.5 log(0.5/0.75) = 0.5 log 2 + 0.5 log(2/3)
    assert g.divergence(p, q) == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3))
    assert g.divergence(p, p) == pytest.approx(0.0)
    # a zero entry of p contributes 0 (0 log 0 = 0)
    assert g.divergence(np.array([1.0, 0.0]), q) == pytest.approx(-math.log(0.25))


def test_cross_entropy_loss_is_kl_from_the_one_hot_label():
    g = CrossEntropy()
    probs = softmax(np.random.default_rng(0).normal(size=(6, 4)))
    y = np.array([0, 1, 2, 3, 0, 1])
    loss = g.loss(probs, y)
    assert np.allclose(loss, -np.log(probs[np.arange(6), y]))
    assert np.allclose(loss, g.divergence(np.eye(4)[y], probs))


def test_cross_entropy_loss_broadcasts_labels_over_members_and_is_finite():
    g = CrossEntropy()
    probs = softmax(np.random.default_rng(1).normal(size=(5, 3, 4)))   # (N, M, C)
    y = np.array([3, 2, 1, 0, 3])
    loss = g.loss(probs, y)
    assert loss.shape == (5, 3)
    assert np.allclose(loss, -np.log(probs[np.arange(5), :, y]))
    assert np.isfinite(g.loss(np.array([[1.0, 0.0]]), np.array([1]))).all()


def test_link_and_inverse_link_round_trip():
    g = CrossEntropy()
    p = softmax(np.random.default_rng(2).normal(size=(7, 5)))
    z = g.link(p)
    assert np.allclose(z.sum(-1), 0.0)                 # centred logits
    assert np.allclose(g.inverse_link(z), p)


@pytest.mark.parametrize("weights", [None, np.array([0.2, 1.0, 3.0])])
def test_logit_averaging_equals_the_cross_entropy_centroid(weights):
    logits = np.random.default_rng(3).normal(scale=3.0, size=(10, 3, 6))
    w = np.ones(3) if weights is None else weights
    mean_logits = (logits * w[None, :, None]).sum(1) / w.sum()
    centroid = CrossEntropy().centroid(softmax(logits), weights)
    assert np.allclose(centroid, softmax(mean_logits))
    assert np.allclose(centroid.sum(-1), 1.0)


def test_centroid_minimises_the_left_kl_sum_not_the_right():
    """argmin_z sum_j KL(z || p_j) is the normalised geometric mean; the arithmetic mean is the
    minimiser of the other order sum_j KL(p_j || z)."""
    g = CrossEntropy()
    rng = np.random.default_rng(4)
    probs = softmax(rng.normal(size=(1, 4, 3)))                  # one sample, M = 4, C = 3
    geo, arith = g.centroid(probs)[0], probs.mean(1)[0]

    def left(z):
        return g.divergence(z[None], probs[0]).sum()

    def right(z):
        return g.divergence(probs[0], z[None]).sum()

    for _ in range(200):
        z = softmax(np.log(geo) + rng.normal(scale=0.3, size=3))
        assert left(geo) <= left(z) + 1e-12
        assert right(arith) <= right(z) + 1e-12
    assert not np.allclose(geo, arith)


def test_cross_entropy_works_on_torch_tensors():
    g = CrossEntropy()
    logits = torch.randn(8, 3, 5, dtype=torch.float64)
    probs = torch.softmax(logits, -1)
    y = torch.randint(0, 5, (8,))
    assert torch.allclose(g.centroid(probs), torch.softmax(logits.mean(1), -1))
    assert torch.allclose(g.loss(probs, y), -probs[torch.arange(8), :, y].log())
    assert torch.allclose(g.inverse_link(g.link(probs)), probs)
    assert g.divergence(probs[:, 0], probs[:, 1]).shape == (8,)
    np_loss = g.loss(probs.numpy(), y.numpy())
    assert np.allclose(np_loss, g.loss(probs, y).numpy())


@pytest.mark.parametrize("name,d", [("squared", 1), ("cross_entropy", 4)])
def test_the_hand_written_wta_gradient_is_the_autograd_gradient_of_the_wta_loss(name, d):
    """What the MLP trainer steps on (wta_gradient) is d/dz of what the CNN trainer
    differentiates (wta_loss), with the same per-member losses."""
    geometry = GEOMETRIES[name]
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(6, 3, d, generator=gen, dtype=torch.float64, requires_grad=True)
    y = (torch.randn(6, generator=gen, dtype=torch.float64) if name == "squared"
         else torch.randint(0, d, (6,), generator=gen))
    loss, losses = geometry.wta_loss(z, y, 0.3)
    loss.backward()
    loss_sum = torch.zeros(3, dtype=torch.float64)
    grad = geometry.wta_gradient(z.detach(), y, 0.3, loss_sum)
    torch.testing.assert_close(grad, z.grad, rtol=0, atol=1e-14)
    torch.testing.assert_close(loss_sum, losses.sum(0), rtol=0, atol=1e-14)
