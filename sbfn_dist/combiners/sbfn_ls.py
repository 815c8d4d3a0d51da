"""The least-squares s-BFN (paper, section "Analytical ensemble training", Eq. "weights").

y_hat = Phi(D) alpha with closed-form ridge alpha. Options beyond the paper's reading (both
off by default, see docs/method.md): `intercept` adds an unpenalised bias; `linear` appends
the raw member outputs as extra features, so the arithmetic combiner (and any weighted
average) lies inside the model class.
"""

import numpy as np

from sbfn_dist.combiners.basis import make_basis
from sbfn_dist.combiners.ridge import ridge_path
from sbfn_dist.settings.fields import defaults

_D = defaults("regression", "tabular")       # sbfn_dist.settings.fields holds the defaults


class SBFNLeastSquares:
    name = "sbfn_ls"

    def __init__(self, lambda2: float = 0.0, basis: str = _D["sbfn_basis"],
                 n_units: int | None = None, intercept: bool = _D["sbfn_intercept"],
                 linear: bool = False, seed: int = 0, width: str = "rms"):
        self.lambda2, self.basis, self.n_units = lambda2, basis, n_units
        self.intercept, self.linear, self.seed, self.width = intercept, linear, seed, width

    def features(self, D: np.ndarray) -> np.ndarray:
        phi = self.basis_.transform(D)
        return np.hstack([phi, D]) if self.linear else phi

    def _fit_basis(self, D: np.ndarray) -> np.ndarray:
        self.basis_ = make_basis(self.basis, self.n_units or D.shape[1], self.seed,
                                 self.width).fit(D)
        return self.features(D)

    def fit(self, D: np.ndarray, y: np.ndarray) -> "SBFNLeastSquares":
        coefs, intercepts = ridge_path(self._fit_basis(D), y, [self.lambda2], self.intercept)
        self.coef_, self.intercept_ = coefs[0], intercepts[0]
        return self

    def predict(self, D: np.ndarray) -> np.ndarray:
        return self.features(D) @ self.coef_ + self.intercept_


def fit_lambda_path(D: np.ndarray, y: np.ndarray, lambdas, **options) -> list[SBFNLeastSquares]:
    """One fitted SBFNLeastSquares per lambda2, all from one basis fit and one eigendecomposition."""
    first = SBFNLeastSquares(lambda2=lambdas[0], **options)
    coefs, intercepts = ridge_path(first._fit_basis(D), y, lambdas, first.intercept)
    fitted = []
    for lam, coef, b in zip(lambdas, coefs, intercepts):
        model = SBFNLeastSquares(lambda2=lam, **options)
        model.basis_, model.coef_, model.intercept_ = first.basis_, coef, b
        fitted.append(model)
    return fitted
