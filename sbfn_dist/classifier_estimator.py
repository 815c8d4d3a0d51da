"""SBFNClassifier: the image ensemble behind the scikit-learn classifier API.

    clf = SBFNClassifier(n_members=3, epochs=5).fit(X_train, y_train)   # X: (N, C, H, W) or (N, H, W)
    clf.predict(X_test); clf.predict_proba(X_test)

M CNN members train together with epsilon-WTA cross-entropy (Algorithm 2); `combiner` picks the
output: "sbfn" / "moe" (heads trained on-the-fly with the members), "logit_mean" or
"prob_mean". Inputs are standardised per channel with the training images' statistics.
"""

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from sbfn_dist.combiners.classification import (MoEGateHead, SBFNClassifierHead, logit_average,
                                                probability_average)
from sbfn_dist.data.images import DeviceImages
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.image_ensemble import ImageMemberConfig, train_image_ensemble

COMBINERS = ("sbfn", "moe", "logit_mean", "prob_mean")


@dataclass
class _TensorImages:
    """The training-tensor view train_image_ensemble needs; batching is DeviceImages'."""
    train_x: torch.Tensor
    train_y: torch.Tensor
    device: str
    augment: bool = False
    batches = DeviceImages.batches


def _as_images(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float32)
    if X.ndim == 3:
        X = X[:, None]
    if X.ndim != 4 or min(X.shape[2:]) < 4:
        raise DataError(f"SBFNClassifier expects images of shape (N, C, H, W) or (N, H, W) with "
                        f"H, W >= 4; got an array of shape {X.shape}: reshape flat pixels first")
    if not np.isfinite(X).all():
        raise DataError("SBFNClassifier got NaN or infinite pixels: clean or impute them first")
    return X


class SBFNClassifier(ClassifierMixin, BaseEstimator):
    def __init__(self, n_members=3, ensemble="cnn", epsilon=0.5, epochs=5, batch_size=64,
                 lr=1e-3, combiner="sbfn", temperature=3.0, units_per_member=4, lr_alpha=0.1,
                 random_state=None, device="cpu"):
        self.n_members, self.ensemble, self.epsilon, self.epochs = n_members, ensemble, epsilon, epochs
        self.batch_size, self.lr, self.combiner, self.temperature = batch_size, lr, combiner, temperature
        self.units_per_member, self.lr_alpha = units_per_member, lr_alpha
        self.random_state, self.device = random_state, device

    def _head(self, n_classes: int):
        seed = self.random_state or 0
        if self.combiner == "sbfn":
            return SBFNClassifierHead(self.n_members, n_classes, self.units_per_member * self.n_members,
                                      self.temperature, self.lr_alpha, seed=seed)
        if self.combiner == "moe":
            return MoEGateHead(self.n_members, n_classes, lr=self.lr_alpha)
        return None

    def fit(self, X, y):
        if self.combiner not in COMBINERS:
            raise ConfigError("combiner", self.combiner, f"one of {COMBINERS}")
        X = _as_images(X)
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        if len(self.classes_) < 2:
            raise DataError("SBFNClassifier needs at least two classes in y")
        self.mean_ = X.mean(axis=(0, 2, 3), keepdims=True)
        self.std_ = X.std(axis=(0, 2, 3), keepdims=True) + 1e-8
        data = _TensorImages(torch.as_tensor((X - self.mean_) / self.std_, device=self.device),
                             torch.as_tensor(codes, device=self.device), self.device)
        head = self._head(len(self.classes_))
        self.head_ = head.to(self.device) if head is not None else None  # heads live with the data
        cfg = ImageMemberConfig(ensemble=self.ensemble, n_members=self.n_members,
                                epsilon=self.epsilon, epochs=self.epochs,
                                batch_size=self.batch_size, lr=self.lr, seed=self.random_state or 0)
        self.members_ = train_image_ensemble(data, len(self.classes_), cfg,
                                             [self.head_] if self.head_ is not None else [])
        self.n_features_in_ = int(np.prod(X.shape[1:]))
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "members_")
        X = torch.as_tensor((_as_images(X) - self.mean_) / self.std_, device=self.device)
        logits = self.members_.logits(X)
        if self.head_ is not None:
            probs = self.head_.predict_proba_eval(torch.softmax(logits, 2))
        elif self.combiner == "logit_mean":
            probs = logit_average(logits)
        else:
            probs = probability_average(torch.softmax(logits, 2))
        return probs.cpu().numpy()

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_proba(X).argmax(1)]
