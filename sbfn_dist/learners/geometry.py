"""Loss geometries (paper, section "Loss Geometry and Centroid-based Ensemble Combiners").

Each admissible loss is a Bregman divergence; it fixes the per-sample loss used for the
winner-takes-all weights, the link between predictions and the combiner's output space, and
the centroid that a geometry-consistent ensemble must output (Wood et al. 2023). Code that
depends on the task asks its geometry instead of branching on the task name.
Works on numpy arrays and torch tensors alike (SquaredLoss uses only arithmetic operators;
CrossEntropy dispatches its logs and softmax on the array type).
"""

import numpy as np
import torch
from torch.nn import functional as F

from sbfn_dist.learners.diversity import as_weights
from sbfn_dist.errors import ConfigError


class _MemberTraining:
    """The epsilon-WTA objective of the members, for autograd (CNN members, the reference
    trainer): sum_j (1/b) sum_i delta_ij l(z_ij, y_i), delta from the detached losses."""

    def wta_loss(self, z, y, weights):
        """The objective and the detached per-sample member losses (b, M); `weights`: epsilon,
        or a diversity.SetWeights for several sets of members side by side."""
        losses = self.score_loss(z, y)
        delta = as_weights(weights)(losses.detach())
        return (delta * losses).mean(0).sum(), losses.detach()


class SquaredLoss(_MemberTraining):
    """Euclidean geometry: generator phi(u) = u^2, Bregman divergence (p - q)^2, identity link."""

    name = "squared"
    task = "regression"

    def loss(self, pred, y):
        # Algorithm 1 uses l = (z - y)^2 (no factor 1/2); the factor only rescales eta_theta.
        return (pred - y) ** 2

    def link(self, mean):
        return mean

    def inverse_link(self, score):
        return score

    def divergence(self, p, q):
        return (p - q) ** 2

    def centroid(self, preds, weights=None, member_axis: int = 1):
        """argmin_z sum_j w_j B(z_j, z): the (weighted) arithmetic mean of the members."""
        if weights is None:
            return preds.mean(member_axis)
        shape = [1] * preds.ndim
        shape[member_axis] = -1
        w = weights.reshape(shape)
        return (preds * w).sum(member_axis) / w.sum()

    # --- member training (paper, Eqs. "predparam2" and "equatruedelta"); scores z are the
    # members' outputs in link space, shape (b, M, d): here the predictions themselves, d = 1.

    def structured(self, z):
        """The structured dataset D from member scores: the predictions, (N, M, 1) -> (N, M)."""
        return z[..., 0]

    def wta_gradient(self, z, y, weights, loss_sum=None):
        """d/dz of mean_i sum_j delta_ij (z_ij - y_i)^2, delta from the detached losses
        (`weights`: epsilon, or a diversity.SetWeights for a pack of sets).

        loss_sum, if given, accumulates each member's summed loss (the epoch's running
        training error, read off the losses this step computes anyway)."""
        r = z[..., 0] - y.unsqueeze(1)
        sq = r * r
        if loss_sum is not None:
            loss_sum.add_(sq.sum(0))
        delta = as_weights(weights)(sq)
        return delta.mul_(r).mul_(2.0 / len(y)).unsqueeze(-1)

    def score_loss(self, z, y):
        """(z_ij - y_i)^2 for member scores z (b, M, 1): (b, M)."""
        return (z[..., 0] - y.unsqueeze(1)) ** 2


class CrossEntropy(_MemberTraining):
    """Simplex geometry: generator phi(p) = sum_c p_c log p_c (negative entropy).

    Bregman divergence on the simplex: B(p, q) = sum_c p_c log(p_c / q_c) = KL(p || q).
    The loss is the divergence from the one-hot label: -log q_y = KL(e_y || q) = B(e_y, q), so
    (as in Wood et al. 2023) the label sits in the LEFT argument and the prediction in the right.
    Gradient (dual, "logit") coordinates: grad phi(p) = log p + 1, i.e. log p up to a constant;
    ``link`` returns them centred over the classes, ``inverse_link`` is the softmax.

    Centroid. Wood et al. 2023's centroid combiner puts the unknown in the LEFT argument,
        qbar = argmin_{z in simplex} sum_j w_j B(z, q_j) = argmin_z sum_j w_j KL(z || q_j),
    whose solution is the dual mean (grad phi)^{-1}(sum_j w_j grad phi(q_j) / W), projected on
    the simplex: qbar ∝ exp(sum_j w_j log q_j / W) = softmax(sum_j w_j log q_j / W), the
    normalised weighted geometric mean (W = sum_j w_j). [Proof: sum_j w_j KL(z||q_j) =
    W sum_c z_c log z_c - sum_c z_c sum_j w_j log q_jc; a Lagrange multiplier for sum_c z_c = 1
    gives log z_c = sum_j w_j log q_jc / W - const.] With q_j = softmax(l_j) this is
    softmax(mean_j l_j): logit averaging, since log softmax(l) = l - logsumexp(l) and the
    per-member constant cancels in the final softmax. (The other order, argmin_z sum_j w_j
    B(q_j, z), is the arithmetic mean for every Bregman divergence -- probability averaging --
    and is NOT the combiner for which the Bregman diversity decomposition holds.)

    Probabilities are clipped at ``floor`` before every log so that losses stay finite; the
    identities above are exact while no probability falls below the floor.
    Works on numpy arrays and torch tensors (class axis last).
    """

    name = "cross_entropy"
    task = "classification"

    def __init__(self, floor: float = 1e-12):
        self.floor = floor

    def _log(self, p):
        if isinstance(p, torch.Tensor):
            return p.clamp_min(self.floor).log()
        return np.log(np.maximum(p, self.floor))

    def loss(self, prob, y):
        """-log prob[..., y]. y: integer labels, aligned to prob's leading axes (a (N,) label
        vector against (N, M, C) probabilities gives (N, M) losses); class axis last."""
        return -self._log(_take_label(prob, y))

    def link(self, prob):
        """Centred logits: log p - mean_c log p (softmax(link(p)) == p)."""
        logp = self._log(prob)
        return logp - logp.mean(-1, keepdims=True)      # torch accepts numpy's keepdims too

    def inverse_link(self, logits):
        return _softmax(logits)

    def divergence(self, p, q):
        """KL(p || q) = sum_c p_c (log p_c - log q_c), summed over the class (last) axis."""
        return (p * (self._log(p) - self._log(q))).sum(-1)

    def centroid(self, probs, weights=None, member_axis: int = 1):
        """softmax(sum_j w_j log p_j / sum_j w_j) = argmin_z sum_j w_j KL(z || p_j) (class doc)."""
        return _softmax(SquaredLoss().centroid(self._log(probs), weights, member_axis))

    # --- member training (Algorithm 2); scores z are the members' logits, shape (b, M, C).

    def structured(self, z):
        """The structured dataset D from member logits: each member's probabilities (N, M, C)."""
        return torch.softmax(z, dim=-1)

    def wta_gradient(self, z, y, weights, loss_sum=None):
        """d/dz of mean_i sum_j delta_ij CE(z_ij, y_i) = delta_ij (softmax(z_ij) - e_y) / b."""
        logp = torch.log_softmax(z, dim=-1)
        ce = -logp.gather(-1, y.view(-1, 1, 1).expand(-1, z.shape[1], 1)).squeeze(-1)
        if loss_sum is not None:
            loss_sum.add_(ce.sum(0))
        delta = as_weights(weights)(ce)
        grad = logp.exp_()
        grad.scatter_add_(-1, y.view(-1, 1, 1).expand(-1, z.shape[1], 1),
                          torch.full_like(ce, -1.0).unsqueeze(-1))
        return grad.mul_(delta.unsqueeze(-1)).div_(len(y))

    def score_loss(self, z, y):
        """CE(z_ij, y_i) for member logits z (b, M, C): (b, M)."""
        b, m, c = z.shape
        return F.cross_entropy(z.reshape(b * m, c), y.repeat_interleave(m),
                               reduction="none").view(b, m)


def _softmax(z):
    if isinstance(z, torch.Tensor):
        return torch.softmax(z, -1)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _take_label(prob, y):
    """prob[..., y] with y left-aligned to prob's leading axes and broadcast over the rest."""
    lead = prob.shape[:-1]
    if isinstance(prob, torch.Tensor):
        y = torch.as_tensor(y, device=prob.device).long()
        y = y.reshape(tuple(y.shape) + (1,) * (len(lead) - y.ndim)).expand(lead)
        return prob.gather(-1, y.unsqueeze(-1)).squeeze(-1)
    y = np.asarray(y).astype(np.int64)
    y = np.broadcast_to(y.reshape(y.shape + (1,) * (len(lead) - y.ndim)), lead)
    return np.take_along_axis(prob, y[..., None], -1)[..., 0]


GEOMETRIES = {"squared": SquaredLoss(), "cross_entropy": CrossEntropy()}


def get_geometry(name: str):
    try:
        return GEOMETRIES[name]
    except KeyError:
        raise ConfigError("geometry", name, f"one of {sorted(GEOMETRIES)}") from None
