"""Combiners: regression ones fit(D, y) / predict(D) on the structured dataset D (N, M) in
numpy; classification ones (classification.py) work on member probabilities (N, M, C) in torch.
Their names per task: sbfn_dist.settings.tasks."""

from sbfn_dist.combiners.mean import ArithmeticCombiner
from sbfn_dist.combiners.online import OnlineSBFN, fit_online_grid
from sbfn_dist.combiners.sbfn_ls import SBFNLeastSquares, fit_lambda_path

__all__ = ["ArithmeticCombiner", "OnlineSBFN", "SBFNLeastSquares", "fit_lambda_path",
           "fit_online_grid"]
