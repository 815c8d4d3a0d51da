"""The arithmetic combiner: the mean of the hypotheses (the multiple-hypotheses-prediction
baseline of Rupprecht et al. 2017) -- the squared-loss geometry's centroid."""

import numpy as np

from sbfn_dist.learners.geometry import SquaredLoss


class ArithmeticCombiner:
    name = "arithmetic"

    def __init__(self, geometry=SquaredLoss()):
        self.geometry = geometry

    def fit(self, D: np.ndarray, y: np.ndarray) -> "ArithmeticCombiner":
        return self

    def predict(self, D: np.ndarray) -> np.ndarray:
        return self.geometry.centroid(D)
