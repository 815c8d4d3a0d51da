"""scikit-learn front end: `SBFNRegressor`, one s-BFN (paper, Algorithm 1) as an estimator.

fit trains M epsilon-modulated winner-takes-all members (`sbfn_dist.ensemble`) on
standardised data and fits a combiner on their predictions D; predict maps new inputs
through the frozen members and the combiner. Everything is checked at fit time, not in
__init__, as scikit-learn requires (clone and set_params must never raise).
"""

import math
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from sbfn_dist.combiners import (ONLINE_VARIANTS, ArithmeticCombiner, OnlineSBFN,
                                 SBFNLeastSquares, fit_online_grid)
from sbfn_dist.combiners.basis import BASES
from sbfn_dist.ensemble import MemberConfig, TrainingDiverged, train_members
from sbfn_dist.errors import ConfigError, SbfnError
from sbfn_dist.learners.mlp import ACTIVATIONS

# Not combiners.REGRESSION_COMBINERS: its "sbfn_ls_linear" is sbfn_ls with intercept=True,
# linear=True here, which are estimator parameters of their own.
COMBINERS = ("sbfn_ls", "g1", "g2", "g3", "arithmetic")
# Smallest integer each field accepts (window >= 2: G2/G3 need a spread over the window).
INT_MIN = {"n_members": 1, "width": 1, "epochs": 1, "batch_size": 1, "window": 2}
POSITIVE = ("init_scale", "lr", "lr_alpha")
NON_NEGATIVE = ("lambda1", "lambda2")
CHOICES = {"combiner": COMBINERS, "activation": ACTIVATIONS, "basis": BASES}
BOOLS = ("intercept", "linear")
DIVERGED_RMS = 1e6     # combiner output RMS, in target stds, taken as divergence
SEED_LIMIT = 2 ** 32  # numpy's range for integer seeds; keeps torch's derived seeds in range


class FitDivergedError(SbfnError):
    """Training produced non-finite parameters; the message says which step size to lower."""


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return (isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
            and math.isfinite(v))


def check_params(p: dict) -> None:
    """Raise ConfigError naming the first field of `p` (get_params()) that is not allowed."""
    for name, low in INT_MIN.items():
        if not (_is_int(p[name]) and p[name] >= low):
            raise ConfigError(name, p[name], f"an integer >= {low}")
    if not (_is_real(p["epsilon"]) and 0.0 <= p["epsilon"] <= 1.0):
        raise ConfigError("epsilon", p["epsilon"], "a number in [0, 1] (0 = pure winner-takes-all)")
    for name in POSITIVE:
        if not (_is_real(p[name]) and p[name] > 0):
            raise ConfigError(name, p[name], "a finite number > 0")
    for name in NON_NEGATIVE:
        if not (_is_real(p[name]) and p[name] >= 0):
            raise ConfigError(name, p[name], "a finite number >= 0")
    for name, allowed in CHOICES.items():
        if not (isinstance(p[name], str) and p[name] in allowed):
            raise ConfigError(name, p[name], f"one of {allowed}")
    for name in BOOLS:
        if not isinstance(p[name], (bool, np.bool_)):
            raise ConfigError(name, p[name], "True or False")
    seed = p["random_state"]
    if not (seed is None or (_is_int(seed) and 0 <= seed < SEED_LIMIT)):
        raise ConfigError("random_state", seed, f"None or an integer in [0, {SEED_LIMIT})")
    try:
        torch.device(p["device"])
    except (RuntimeError, TypeError) as err:
        raise ConfigError("device", p["device"], "a torch device string such as 'cpu' or 'cuda'") from err


def _moments(a: np.ndarray):
    """Column means and stds; a (near-)constant column gets std 1 so scaling stays finite."""
    mean, std = a.mean(0), a.std(0)
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    return mean, np.where(constant, 1.0, std)


def _single_target(y: np.ndarray) -> np.ndarray:
    """y from validate_data(multi_output=True): refuse several targets with a clear message;
    a (n, 1) column is raveled with sklearn's usual DataConversionWarning."""
    if y.ndim == 2 and y.shape[1] > 1:
        raise ValueError(f"SBFNRegressor predicts a single target, but y has shape {y.shape}; "
                         "fit one estimator per target (sklearn.multioutput.MultiOutputRegressor)")
    return column_or_1d(y, warn=True)


class SBFNRegressor(RegressorMixin, BaseEstimator):
    """Structured Basis Function Network regressor (multi-hypothesis ensemble + combiner).

    Members: `n_members` two-layer MLPs (`width` units, `activation`) trained together by
    epsilon-modulated winner-takes-all SGD (`epsilon`, `lr`, `epochs`, `batch_size`,
    `init_scale` = chi, `lambda1` = L1 penalty). Combiner, fitted on the members' predictions:
      "sbfn_ls"    closed-form ridge s-BFN (`lambda2`, `basis`, `intercept`, `linear`);
      "g1"/"g2"/"g3" iterative s-BFN fitted on the members' training-time prediction stream
                   (on-the-fly regime; `lambda2`, `lr_alpha`, `window`);
      "arithmetic" the mean of the members.
    Parameters a combiner does not use are ignored by it.

    `init_scale` defaults to 1.0 (chi; the paper's grid is 1e-4 .. 1): with chi = 0.1, two
    hidden layers and mini-batch gradients the members hardly move in 20 epochs (they score
    R^2 < 0.5 on scikit-learn's linear check problem), while chi = 1.0 trains them.

    X and y are standardised inside fit (constant columns are centred only), so the step
    sizes mean the same on any data scale. `random_state=None` means seed 0: fits are
    deterministic unless a seed is given. Members run in float64 so predictions do not depend
    on how rows are batched (scikit-learn checks this to 1e-7).

    Fitted attributes: `members_` (TrainedMembers; its recorded stream is dropped after the
    combiner is fitted, to keep the estimator small), `combiner_`, `x_mean_`, `x_scale_`,
    `y_mean_`, `y_scale_`, `n_features_in_` (and `feature_names_in_` for named columns).
    """

    def __init__(self, n_members=5, epsilon=0.1, width=50, init_scale=1.0, lambda1=0.0,
                 lr=0.03, epochs=20, batch_size=16, activation="tanh", combiner="sbfn_ls",
                 lambda2=1e-3, lr_alpha=0.03, window=100, basis="member", intercept=True,
                 linear=True, random_state=None, device="cpu"):
        self.n_members = n_members
        self.epsilon = epsilon
        self.width = width
        self.init_scale = init_scale
        self.lambda1 = lambda1
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.activation = activation
        self.combiner = combiner
        self.lambda2 = lambda2
        self.lr_alpha = lr_alpha
        self.window = window
        self.basis = basis
        self.intercept = intercept
        self.linear = linear
        self.random_state = random_state
        self.device = device

    def _seed(self) -> int:
        return 0 if self.random_state is None else int(self.random_state)

    def _member_config(self) -> MemberConfig:
        return MemberConfig(n_members=self.n_members, epsilon=float(self.epsilon),
                            width=self.width, init_scale=float(self.init_scale),
                            lambda1=float(self.lambda1), lr=float(self.lr), epochs=self.epochs,
                            batch_size=self.batch_size, activation=self.activation,
                            seed=self._seed(), device=self.device, dtype="float64")

    def _make_combiner(self):
        if self.combiner == "sbfn_ls":
            return SBFNLeastSquares(self.lambda2, self.basis, None, self.intercept, self.linear,
                                    self._seed())
        if self.combiner == "arithmetic":
            return ArithmeticCombiner()
        return OnlineSBFN(self.combiner, self.lambda2, self.lr_alpha, self.window, seed=self._seed())

    def fit(self, X, y):
        check_params(self.get_params())
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True)
        y = _single_target(y)
        self.x_mean_, self.x_scale_ = _moments(X)
        y_mean, y_scale = _moments(y.reshape(-1, 1))
        self.y_mean_, self.y_scale_ = float(y_mean[0]), float(y_scale[0])
        Xs, ys = self._scale_x(X), (y - self.y_mean_) / self.y_scale_
        online = self.combiner in ONLINE_VARIANTS
        try:
            members = train_members(Xs, ys, self._member_config(), record_stream=online)
        except TrainingDiverged as err:
            raise FitDivergedError(
                f"SBFNRegressor training diverged ({err}) with lr={self.lr}, "
                f"init_scale={self.init_scale}; try a smaller lr or init_scale") from None
        self.combiner_ = self._fit_combiner(members, Xs, ys)
        # The stream is only needed to fit G1/G2/G3; keeping it would make the
        # estimator (and every pickle of it) epochs * N * M floats larger.
        members.stream_z = members.stream_y = None
        self.members_ = members
        return self

    def _fit_combiner(self, members, Xs, ys):
        comb, D = self._make_combiner(), members.predict(Xs)
        if isinstance(comb, OnlineSBFN):
            fit_online_grid(members.stream_z, members.stream_y, members.batch_size, [comb])
        else:
            comb.fit(D, ys)
        # The alpha recursion runs with overflow warnings off, so a too-large lr_alpha
        # shows up only as absurd (or non-finite) fitted values. y is standardised here,
        # so an RMS of a million target stds cannot be a fit.
        with np.errstate(over="ignore", invalid="ignore"):
            rms = np.sqrt(np.mean(comb.predict(D) ** 2))
        if not rms < DIVERGED_RMS:
            fix = (f"a smaller lr_alpha (now {self.lr_alpha}) or" if self.combiner in ONLINE_VARIANTS
                   else "")
            raise FitDivergedError(
                f"SBFNRegressor combiner '{self.combiner}' diverged (training predictions reach "
                f"{rms:.3g} target stds); try {fix} a larger lambda2 (now {self.lambda2})")
        return comb

    def _scale_x(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_mean_) / self.x_scale_

    def _scaled_members(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self.members_.predict(self._scale_x(X))

    def predict(self, X) -> np.ndarray:
        """Combined prediction, shape (N,), in the units of y."""
        D = self._scaled_members(X)  # first: it raises NotFittedError before combiner_ is read
        return self.combiner_.predict(D) * self.y_scale_ + self.y_mean_

    def predict_members(self, X) -> np.ndarray:
        """Each member's prediction (the structured dataset D), shape (N, M), in the units of y."""
        return self._scaled_members(X) * self.y_scale_ + self.y_mean_
