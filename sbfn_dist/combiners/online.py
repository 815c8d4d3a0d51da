"""Iterative s-BFN variants G1, G2, G3 (paper, Table "s-BFN variants", Algorithm 1).

Each consumes a stream of structured vectors D_i (member predictions) in visit order. For
every batch it first updates the units' centres C_j and scales gamma_j with the batch, then
computes phi_i, predicts y_hat_i = phi_i . alpha and takes the alpha step of Algorithm 1:
alpha <- alpha - eta_alpha * (mean_i (y_hat_i - y_i) phi_i + lambda2 alpha).
  G1: C_j, gamma_j = mean and sample std of all past predictions of member j;
  G2: the same over the most recent `window` predictions (the current one included);
  G3: G2's centre, gamma_ij = max_{p != j} |D_ij - D_ip| / sqrt(M) (cross-member dispersion)
      and phi = exp(-(D_ij - C_j)^2 / gamma_ij), the table's entry read as the exponent
      ("exp", default). g3_basis="quadratic" takes the entry literally, phi = (D_ij - C_j)^2 /
      gamma_ij; that profile is unbounded and diverges under the alpha update in our runs,
      while the paper reports stable G3 results (docs/method.md).
On-the-fly regime: the stream is the members' own training-time predictions (recorded by
`sbfn_dist.learners.training.StreamRecorder`); plug-in regime: the frozen members' predictions on
the training set, replayed for `epochs` passes. Centres/scales and alpha are computed for the
whole stream with cumulative sums; only the alpha recursion is a loop, shared by every
(variant, lambda2) pair so that a grid of them costs one pass.
"""

import numpy as np

from sbfn_dist.combiners.basis import SCALE_FLOOR, member_gaussian
from sbfn_dist.errors import ConfigError
from sbfn_dist.settings.fields import G3_BASES, defaults
from sbfn_dist.settings.tasks import ITERATIVE as VARIANTS

_DEFAULTS = defaults("regression", "tabular")


def _batch_ends(t: int, batch_size: int) -> np.ndarray:
    """Index of the last sample of the batch that each stream position belongs to."""
    return np.minimum((np.arange(t) // batch_size + 1) * batch_size, t) - 1


def _window_moments(z: np.ndarray, ends: np.ndarray, window: int | None):
    """Mean and sample std of z[start:end+1] per position; window None = everything so far."""
    s1 = np.vstack([np.zeros(z.shape[1]), np.cumsum(z, 0)])
    s2 = np.vstack([np.zeros(z.shape[1]), np.cumsum(z * z, 0)])
    hi = ends + 1
    lo = np.zeros_like(hi) if window is None else np.maximum(hi - window, 0)
    n = (hi - lo)[:, None].astype(np.float64)
    mean = (s1[hi] - s1[lo]) / n
    var = np.maximum(s2[hi] - s2[lo] - n * mean * mean, 0.0) / np.maximum(n - 1, 1)
    return mean, np.sqrt(var)


def cross_member_scale(D: np.ndarray) -> np.ndarray:
    """G3's gamma_ij = max_{p != j} |D_ij - D_ip| / sqrt(M); with M = 1 there is no other member."""
    m = D.shape[1]
    if m == 1:
        return np.ones_like(D)
    spread = np.maximum(D.max(1, keepdims=True) - D, D - D.min(1, keepdims=True))
    return spread / np.sqrt(m)


def g3_features(D: np.ndarray, centre: np.ndarray, basis: str) -> np.ndarray:
    gamma = np.maximum(cross_member_scale(D), SCALE_FLOOR)
    r2 = (D - centre) ** 2
    return r2 / gamma if basis == "quadratic" else np.exp(-r2 / gamma)


class OnlineSBFN:
    """One fitted iterative s-BFN; `state` holds the final centres and scales."""

    def __init__(self, variant: str, lambda2: float = 0.0,
                 lr_alpha: float = _DEFAULTS["lr_alpha"], window: int | None = _DEFAULTS["window"],
                 g3_basis: str | None = _DEFAULTS["g3_basis"], epochs: int = 1, seed: int = 0):
        """window: G2/G3's k (G1 uses none: None is fine); g3_basis: only G3 uses it."""
        if variant not in VARIANTS:
            raise ConfigError("combiner", variant, f"an iterative variant in {VARIANTS}")
        if variant == "g3" and g3_basis not in G3_BASES:
            raise ConfigError("g3_basis", g3_basis, f"one of {G3_BASES}")
        if variant != "g1" and (window is None or int(window) < 2):
            raise ConfigError("window", window, "an integer >= 2 (G2/G3 need a spread)")
        self.variant, self.lambda2, self.lr_alpha = variant, lambda2, lr_alpha
        self.window, self.g3_basis, self.epochs, self.seed = window, g3_basis, epochs, seed
        self.name = variant

    def stream_features(self, z: np.ndarray, batch_size: int):
        """phi for every stream position and the final (centre, scale) state."""
        ends = _batch_ends(len(z), batch_size)
        window = None if self.variant == "g1" else self.window
        centre, scale = _window_moments(z, ends, window)
        if self.variant == "g3":
            phi = g3_features(z, centre, self.g3_basis)
        else:
            phi = member_gaussian(z, centre, scale)
        return phi, (centre[-1], scale[-1])

    def predict(self, D: np.ndarray) -> np.ndarray:
        centre, scale = self.state
        if self.variant == "g3":
            phi = g3_features(D, centre, self.g3_basis)
        else:
            phi = member_gaussian(D, centre, scale)
        return phi @ self.coef_

    def fit(self, D: np.ndarray, y: np.ndarray) -> "OnlineSBFN":
        """Plug-in regime: replay the frozen members' predictions for `epochs` shuffled passes."""
        rng = np.random.default_rng(self.seed)
        order = np.concatenate([rng.permutation(len(D)) for _ in range(self.epochs)])
        return fit_online_grid(D[order], y[order], 1, [self])[0]


def alpha_recursion(phis: np.ndarray, index, y: np.ndarray, batch_size: int,
                    lambdas: np.ndarray, lrs: np.ndarray) -> np.ndarray:
    """Run Algorithm 1's alpha update for C models at once: model c reads the features
    phis[index[c]] (U, T, K) -> alpha (C, K)."""
    index = np.asarray(index)
    c, (_, t, k) = len(index), phis.shape
    alpha = np.zeros((c, k))
    decay = (1.0 - lrs * lambdas)[:, None]
    step = lrs[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        for s in range(0, t, batch_size):
            phi_b = phis[index, s:s + batch_size]                 # (C, b, K)
            resid = np.einsum("cbk,ck->cb", phi_b, alpha) - y[s:s + batch_size]
            grad = np.einsum("cbk,cb->ck", phi_b, resid) / phi_b.shape[1]
            alpha = alpha * decay - step * grad
    return alpha


def fit_online_grid(z: np.ndarray, y: np.ndarray, batch_size: int, models: list) -> list:
    """Fit several OnlineSBFN (any variants, lambda2s, learning rates) on one stream."""
    return fit_online_streams([(z, models)], y, batch_size)[0]


def fit_online_streams(streams: list, y: np.ndarray, batch_size: int) -> list:
    """Fit the OnlineSBFN models of several streams that share one visit order (the hypothesis
    sets of one pack, sbfn_dist.learners.training.train_mlp_pack) in one alpha recursion: its steps
    are numpy calls whose cost hardly grows with the number of models. streams: [(z, models)];
    features are computed once per (variant, window, basis) and stream, and zero-padded to the
    widest stream (a zero feature keeps its alpha at 0)."""
    features, states, index = [], [], []
    for z, models in streams:
        seen = {}
        for m in models:
            key = (m.variant, m.window, m.g3_basis)
            if key not in seen:
                seen[key] = len(features)
                phi, state = m.stream_features(z, batch_size)
                features.append(phi)
                states.append(state)
            index.append(seen[key])
    phis = np.zeros((len(features), len(y), max(f.shape[1] for f in features)))
    for u, phi in enumerate(features):
        phis[u, :, :phi.shape[1]] = phi
    models = [m for _, group in streams for m in group]
    lambdas = np.array([m.lambda2 for m in models], dtype=np.float64)
    lrs = np.array([m.lr_alpha for m in models], dtype=np.float64)
    alphas = alpha_recursion(phis, index, np.asarray(y, np.float64), batch_size, lambdas, lrs)
    for m, alpha, u in zip(models, alphas, index):
        m.coef_, m.state = alpha[:features[u].shape[1]], states[u]
    return [group for _, group in streams]
