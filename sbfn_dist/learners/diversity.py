"""epsilon-modulated winner-takes-all weights (paper, Eq. "equatruedelta").

For a loss matrix of shape (N, M) -- sample i, member j -- the winner of sample i (the member
with the smallest loss) gets weight 1 - epsilon, every other member epsilon / (M - 1).
Ties go to the lowest member index (torch.argmin's rule), so delta stays a deterministic
function of the losses. With M = 1 the single member always gets weight 1.

epsilon's range, [0, 1], is the setting's (sbfn_dist/settings/fields.py): a trial's and an
estimator's configuration is checked once, when it is made, not on every batch here.
"""

import torch
from torch.nn import functional as F


def wta_weights(losses: torch.Tensor, epsilon: float, member_dim: int = -1) -> torch.Tensor:
    """delta(epsilon) for per-sample member losses; rows (along member_dim) sum to 1."""
    eps = float(epsilon)
    m = losses.shape[member_dim]
    if m == 1:
        return torch.ones_like(losses)
    winner = losses.argmin(dim=member_dim, keepdim=True)
    delta = torch.full_like(losses, eps / (m - 1))
    return delta.scatter_(member_dim, winner, 1.0 - eps)


class SetWeights:
    """delta for hypothesis sets trained side by side as one member stack (a pack): set s holds
    sizes[s] consecutive members and its own epsilon, and each sample's winner is chosen within
    each set -- Eq. "equatruedelta" per set, so a set's delta is what it would be alone."""

    def __init__(self, sizes, epsilons):
        # epsilons: the epsilon setting of each set, in the order of sizes (one value per set,
        # not per member): the plural of the one setting, as a pack holds one of it per set.
        self.sizes = tuple(int(m) for m in sizes)
        self.epsilons = tuple(float(e) for e in epsilons)
        self._tables: dict = {}

    def __call__(self, losses: torch.Tensor) -> torch.Tensor:
        """losses (b, sum(sizes)) -> delta of the same shape."""
        if len(self.sizes) == 1:
            return wta_weights(losses, self.epsilons[0])
        base, winner, index, offsets = self._table(losses.dtype, losses.device)
        b, width = len(losses), max(self.sizes)
        if index is None:                        # equal sizes: the sets are a plain view
            grouped = losses.view(b, len(self.sizes), width)
        else:                                    # unequal: pad every set to the largest
            grouped = F.pad(losses, (0, 1), value=float("inf"))[:, index].view(b, -1, width)
        won = grouped.argmin(2).add_(offsets)
        return base.repeat(b, 1).scatter_(1, won, winner.expand(b, -1))

    def _table(self, dtype, device):
        """Per dtype and device: each member's non-winner weight, each set's winner weight, the
        padded index of the members (None when the sets are equal) and each set's first member."""
        key = (dtype, device)
        if key not in self._tables:
            width, total = max(self.sizes), sum(self.sizes)
            base, winner, index, offsets = [], [], [], []
            for m, eps in zip(self.sizes, self.epsilons):
                offsets.append(len(base))
                base += [eps / (m - 1) if m > 1 else 1.0] * m
                winner.append(1.0 - eps if m > 1 else 1.0)
                index += list(range(offsets[-1], offsets[-1] + m)) + [total] * (width - m)
            as_tensor = lambda v, t=dtype: torch.tensor(v, dtype=t, device=device)  # noqa: E731
            equal = len(set(self.sizes)) == 1
            self._tables[key] = (as_tensor(base), as_tensor(winner),
                                 None if equal else as_tensor(index, torch.long),
                                 as_tensor(offsets, torch.long))
        return self._tables[key]


def as_weights(epsilon_or_weights):
    """A delta rule: an epsilon (one set of members) or a SetWeights (a pack of sets)."""
    if callable(epsilon_or_weights):
        return epsilon_or_weights
    eps = float(epsilon_or_weights)
    return lambda losses: wta_weights(losses, eps)
