"""Training M deep members together with epsilon-modulated winner-takes-all cross-entropy
(paper, Algorithm 2), with any on-the-fly combiner heads stepping on every mini-batch.

Per mini-batch: every member's per-sample cross-entropy l_ij; delta_ij from the detached
losses (Eq. "equatruedelta"); member j minimises (1/b) sum_i delta_ij l_ij (the total loss is the
sum over j, so each member receives only its own term's gradient); then the heads take one step
on the detached member probabilities P (Algorithm 2's s-BFN update, after the member update).
Members of one architecture are a single grouped-convolution model (learners/cnn.py).
"""

import time
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from sbfn_dist.diversity import wta_weights
from sbfn_dist.ensemble import TrainingDiverged
from sbfn_dist.errors import ConfigError
from sbfn_dist.learners.registry import build_ensemble

OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class ImageMemberConfig:
    ensemble: str = "mixed"          # mixed (heterogeneous) | cnn | resnet | an architecture name
    n_members: int = 5
    epsilon: float = 0.5
    epochs: int = 2
    batch_size: int = 128
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.9
    weight_decay: float = 0.0
    seed: int = 0


def make_optimizer(params, cfg: ImageMemberConfig):
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    raise ConfigError("optimizer", cfg.optimizer, f"one of {OPTIMIZERS}")


def wta_member_loss(logits: torch.Tensor, y: torch.Tensor, epsilon: float) -> torch.Tensor:
    """sum_j (1/b) sum_i delta_ij CE(logits_ij, y_i); logits (b, M, C)."""
    b, m, c = logits.shape
    ce = F.cross_entropy(logits.reshape(b * m, c), y.repeat_interleave(m),
                         reduction="none").view(b, m)
    delta = wta_weights(ce.detach(), epsilon)
    return (delta * ce).mean(0).sum()


@dataclass
class TrainedImageEnsemble:
    model: torch.nn.Module
    seconds: float
    epoch_loss: list

    @torch.no_grad()
    def logits(self, x: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
        """Member logits (N, M, C) in eval mode."""
        self.model.eval()
        return torch.cat([self.model(x[s:s + chunk]) for s in range(0, len(x), chunk)])


def train_image_ensemble(images, n_classes: int, cfg: ImageMemberConfig,
                         heads=()) -> TrainedImageEnsemble:
    """images: a DeviceImages (train_x, train_y, batches(...)); heads step on every batch."""
    torch.manual_seed(cfg.seed)
    model = build_ensemble(cfg.ensemble, cfg.n_members, images.train_x.shape[1], n_classes,
                           cfg.seed).to(images.train_x.device)
    opt = make_optimizer(model.parameters(), cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    start, epoch_loss = time.perf_counter(), []
    for epoch in range(cfg.epochs):
        model.train()
        for head in heads:
            head.epoch_start()
        total, count = 0.0, 0
        for x, y in images.batches(cfg.batch_size, gen):
            logits = model(x)
            loss = wta_member_loss(logits, y, cfg.epsilon)
            if not torch.isfinite(loss):
                raise TrainingDiverged(f"member loss became non-finite in epoch {epoch + 1}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            probs = torch.softmax(logits.detach(), dim=2)
            for head in heads:
                head.step(probs, y)
            total, count = total + float(loss.detach()) * len(y), count + len(y)
        epoch_loss.append(total / max(count, 1))
    return TrainedImageEnsemble(model, time.perf_counter() - start, epoch_loss)
