"""Combiners: every one has fit(D, y) / predict(D) on the structured dataset D (N, M)."""

from sbfn_dist.combiners.mean import ArithmeticCombiner
from sbfn_dist.combiners.online import VARIANTS as ONLINE_VARIANTS, OnlineSBFN, fit_online_grid
from sbfn_dist.combiners.sbfn_ls import SBFNLeastSquares, fit_lambda_path

# sbfn_ls_linear: the closed-form s-BFN with an intercept and the raw member outputs as extra
# linear features (a strengthening of the paper's feature map; docs/method.md).
REGRESSION_COMBINERS = ("sbfn_ls", "sbfn_ls_linear", "g1", "g2", "g3", "arithmetic")
CLOSED_FORM = ("sbfn_ls", "sbfn_ls_linear")

__all__ = ["ArithmeticCombiner", "OnlineSBFN", "SBFNLeastSquares", "fit_lambda_path",
           "fit_online_grid", "ONLINE_VARIANTS", "REGRESSION_COMBINERS", "CLOSED_FORM"]
