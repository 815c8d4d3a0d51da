"""Combiners: every one has fit(D, y) / predict(D) on the structured dataset D (N, M)."""

from sbfn_dist.combiners.mean import ArithmeticCombiner
from sbfn_dist.combiners.online import VARIANTS as ONLINE_VARIANTS, OnlineSBFN, fit_online_grid
from sbfn_dist.combiners.sbfn_ls import SBFNLeastSquares, fit_lambda_path

# sbfn_ls_linear: the closed-form s-BFN with an intercept and the raw member outputs as extra
# linear features (a strengthening of the paper's feature map; docs/method.md).
REGRESSION_COMBINERS = ("sbfn_ls", "sbfn_ls_linear", "g1", "g2", "g3", "arithmetic")
CLOSED_FORM = ("sbfn_ls", "sbfn_ls_linear")
# Image classification (Table "Ensemble variants"): s-BFN and MoE on-the-fly (Algorithm 2) or
# stacked on a validation split; "Mean" = logit averaging (optionally temperature-tuned);
# probability averaging; "Base Avg." = the members' average score.
CLASSIFICATION_COMBINERS = ("sbfn", "sbfn_stacked", "moe", "moe_stacked", "logit_mean",
                            "logit_mean_tuned", "prob_mean", "base_avg")

__all__ = ["ArithmeticCombiner", "OnlineSBFN", "SBFNLeastSquares", "fit_lambda_path",
           "fit_online_grid", "ONLINE_VARIANTS", "REGRESSION_COMBINERS", "CLOSED_FORM",
           "CLASSIFICATION_COMBINERS"]
