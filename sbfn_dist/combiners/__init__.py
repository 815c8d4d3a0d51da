"""Combiners: every one has fit(D, y) / predict(D) on the structured dataset D (N, M)."""

from sbfn_dist.combiners.mean import ArithmeticCombiner
from sbfn_dist.combiners.online import VARIANTS as ONLINE_VARIANTS, OnlineSBFN, fit_online_grid
from sbfn_dist.combiners.sbfn_ls import SBFNLeastSquares, fit_lambda_path

REGRESSION_COMBINERS = ("sbfn_ls", "g1", "g2", "g3", "arithmetic")

__all__ = ["ArithmeticCombiner", "OnlineSBFN", "SBFNLeastSquares", "fit_lambda_path",
           "fit_online_grid", "ONLINE_VARIANTS", "REGRESSION_COMBINERS"]
