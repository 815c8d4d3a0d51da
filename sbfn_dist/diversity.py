"""epsilon-modulated winner-takes-all weights (paper, Eq. "equatruedelta").

For a loss matrix of shape (N, M) -- sample i, member j -- the winner of sample i (the member
with the smallest loss) gets weight 1 - epsilon, every other member epsilon / (M - 1).
Ties go to the lowest member index (torch.argmin's rule), so delta stays a deterministic
function of the losses. With M = 1 the single member always gets weight 1.
"""

import torch

from sbfn_dist.errors import ConfigError


def check_epsilon(epsilon: float) -> float:
    eps = float(epsilon)
    if not 0.0 <= eps <= 1.0:
        raise ConfigError("epsilon", epsilon, "a number in [0, 1] (0 = pure winner-takes-all)")
    return eps


def wta_weights(losses: torch.Tensor, epsilon: float, member_dim: int = -1) -> torch.Tensor:
    """delta(epsilon) for per-sample member losses; rows (along member_dim) sum to 1."""
    eps = check_epsilon(epsilon)
    m = losses.shape[member_dim]
    if m == 1:
        return torch.ones_like(losses)
    winner = losses.argmin(dim=member_dim, keepdim=True)
    delta = torch.full_like(losses, eps / (m - 1))
    return delta.scatter_(member_dim, winner, 1.0 - eps)
