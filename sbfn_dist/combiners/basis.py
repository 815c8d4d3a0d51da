"""Radial feature maps Phi(D) for the Euclidean s-BFN (paper, section "s-BFN Optimization").

"member": K = M univariate Gaussian units, unit j on member j's output with that member's
centre and spread -- the reading of Algorithm 1 ("running moments for per-predictor
univariate RBFs"), used as the default. "kmeans": K multivariate Gaussian units in R^M with
k-means centres (k-means++ seeding, then Lloyd; the appendix's RBF-KMeans strategy), each as
wide as its cluster's RMS radius ("rms") or as the distance to its nearest other centre
("nearest", Moody and Darken 1989's nearest-neighbour rule). See docs/method.md for the choice.
"""

import numpy as np
from sklearn.cluster import KMeans

from sbfn_dist.errors import ConfigError
from sbfn_dist.settings.fields import BASES

SCALE_FLOOR = 1e-8   # a constant member has zero spread; keep the Gaussian finite


def gaussian(r2: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """phi(r) = exp(-r^2 / (2 gamma^2)), the paper's Gaussian profile."""
    return np.exp(-0.5 * r2 / np.maximum(scale, SCALE_FLOOR) ** 2)


def member_gaussian(D: np.ndarray, centre: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Unit j = exp(-(D_ij - C_j)^2 / (2 gamma_j^2)); D (N, M) -> Phi (N, M)."""
    return gaussian((D - centre) ** 2, scale)


class MemberBasis:
    """K = M units; centre and scale = mean and sample std of each member's predictions."""

    def fit(self, D: np.ndarray) -> "MemberBasis":
        self.centre = D.mean(0)
        self.scale = D.std(0, ddof=1) if len(D) > 1 else np.ones(D.shape[1])
        return self

    def transform(self, D: np.ndarray) -> np.ndarray:
        return member_gaussian(D, self.centre, self.scale)


class KMeansBasis:
    """K multivariate units in R^M: k-means centres; scale = each cluster's RMS radius ("rms")
    or the distance to the nearest other centre ("nearest")."""

    def __init__(self, n_units: int, seed: int = 0, width: str = "rms"):
        self.n_units, self.seed, self.width = n_units, seed, width

    def fit(self, D: np.ndarray) -> "KMeansBasis":
        k = min(self.n_units, len(np.unique(D, axis=0)))
        km = KMeans(n_clusters=k, n_init=4, random_state=self.seed).fit(D)
        self.centre = km.cluster_centers_
        d2 = ((D - self.centre[km.labels_]) ** 2).sum(1)
        counts = np.bincount(km.labels_, minlength=k)
        rms = np.sqrt(np.bincount(km.labels_, d2, minlength=k) / np.maximum(counts, 1))
        self.scale = np.where(rms > SCALE_FLOOR, rms, np.sqrt(d2.mean()) + SCALE_FLOOR)
        if self.width == "nearest" and k > 1:
            self.scale = nearest_centre_distance(self.centre)
        return self

    def transform(self, D: np.ndarray) -> np.ndarray:
        r2 = ((D[:, None, :] - self.centre[None]) ** 2).sum(-1)
        return gaussian(r2, self.scale)


def nearest_centre_distance(centre: np.ndarray) -> np.ndarray:
    """Per centre, the Euclidean distance to the nearest other one (k-means centres differ)."""
    d2 = ((centre[:, None, :] - centre[None]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    return np.sqrt(d2.min(1))


def make_basis(kind: str, n_units: int, seed: int = 0, width: str = "rms"):
    if kind == "member":
        return MemberBasis()
    if kind == "kmeans":
        return KMeansBasis(n_units, seed, width)
    raise ConfigError("sbfn_basis", kind, f"one of {BASES}")
