"""Loss geometries (paper, section "Loss Geometry and Centroid-based Ensemble Combiners").

Each admissible loss is a Bregman divergence; it fixes the per-sample loss used for the
winner-takes-all weights, the link between predictions and the combiner's output space, and
the centroid that a geometry-consistent ensemble must output (Wood et al. 2023). Code that
depends on the task asks its geometry instead of branching on the task name.
Works on numpy arrays and torch tensors alike (only arithmetic operators are used).
"""

from sbfn_dist.errors import ConfigError


class SquaredLoss:
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


GEOMETRIES = {"squared": SquaredLoss()}


def get_geometry(name: str):
    try:
        return GEOMETRIES[name]
    except KeyError:
        raise ConfigError("geometry", name, f"one of {sorted(GEOMETRIES)}") from None
