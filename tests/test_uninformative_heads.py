"""The s-BFN head's bounded centre step (issue 32 item 2)."""

import torch

from sbfn_dist.combiners.classification import SBFNClassifierHead


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
