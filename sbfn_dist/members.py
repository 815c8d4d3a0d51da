"""Training the M hypotheses together with epsilon-modulated winner-takes-all weights.

For every batch all members predict, each sample's member losses give delta (paper, Eq.
"equatruedelta"), and member j descends mean_i delta_ij l(z_ij, y_i) (Eq. "predparam2"); the loss
l and its gradient come from the task's geometry (squared loss: Algorithm 1; cross-entropy:
Algorithm 2). Two trainers, one result type:

  train_mlp  tables: M MLPs in one flat buffer, hand-written gradients and plain SGD (+ the
             lambda1 sign step) -- at b = 1 autograd's per-step overhead would dominate;
  train_cnn  images: M CNNs as one grouped model (learners/cnn.py), autograd and torch.optim.

Both return TrainedMembers, whose `predict` gives the structured dataset D (N, M, d). On-the-fly
combiners are observers: `epoch_start()` before every epoch and `batch(D_b, y_b)` after every
member step, with the batch's pre-step structured vectors. They never feed back into the members,
so a regression stream recorded here and replayed afterwards (G1/G2/G3) gives the same result as
updating alpha inside this loop (docs/method.md).
"""

import time
from dataclasses import dataclass

import numpy as np
import torch

from sbfn_dist.diagnostics import count_parameters, flops_per_example
from sbfn_dist.errors import ConfigError
from sbfn_dist.fields import OPTIMIZERS, defaults
from sbfn_dist.geometry import GEOMETRIES
from sbfn_dist.learners.mlp import VectorisedMLP
from sbfn_dist.learners.registry import build_ensemble
from sbfn_dist.runtime import torch_threads

# Below this batch size a step's tensors are tiny and a second intra-op thread only spins:
# the demo took 300 s with torch's default 2 threads under load and 22 s with one.
SINGLE_THREAD_BELOW = 32
_MLP = defaults("regression", "tabular")
_CNN = defaults("classification", "image")


class TrainingDiverged(RuntimeError):
    """The members' parameters became NaN or infinite (a result, not a crash: status 'diverged')."""


@dataclass(frozen=True)
class MLPConfig:
    """What train_mlp uses; defaults are the tabular-regression ones of sbfn_dist.fields."""
    n_members: int = _MLP["n_members"]
    epsilon: float = _MLP["epsilon"]
    width: int = _MLP["width"]              # kappa: neurons per hidden layer
    init_scale: float = _MLP["init_scale"]  # chi
    lambda1: float = _MLP["lambda1"]        # L1 penalty, applied as lambda1 / N per step
    lr: float = _MLP["lr"]                  # eta_theta
    epochs: int = _MLP["epochs"]
    batch_size: int = _MLP["batch_size"]    # b = 1 is exactly Algorithm 1
    activation: str = _MLP["activation"]
    init_scheme: str = _MLP["init_scheme"]
    seed: int = 0
    device: str = "cpu"
    dtype: str = _MLP["dtype"]
    geometry: str = "squared"               # the loss: squared (regression), cross_entropy
    shuffle: bool = True


@dataclass(frozen=True)
class CNNConfig:
    """What train_cnn uses; defaults are the image-classification ones of sbfn_dist.fields."""
    ensemble: str = _CNN["ensemble"]        # mixed (heterogeneous) | cnn | resnet | an architecture
    n_members: int = _CNN["n_members"]
    epsilon: float = _CNN["epsilon"]
    epochs: int = _CNN["epochs"]
    batch_size: int = _CNN["batch_size"]
    optimizer: str = _CNN["optimizer"]
    lr: float = _CNN["lr"]
    momentum: float = _CNN["momentum"]      # SGD only
    weight_decay: float = _CNN["weight_decay"]
    seed: int = 0


@dataclass
class TrainedMembers:
    model: object              # VectorisedMLP (tables) or learners.cnn.Ensemble (images)
    geometry: object
    seconds: float
    epoch_loss: list           # per epoch, each member's mean training loss on its pre-step
                               # outputs (M,): no extra pass over the data
    chunk: int                 # rows per forward pass when predicting

    @torch.no_grad()
    def scores(self, x) -> torch.Tensor:
        """The members' outputs in link space, (N, M, d): predictions, or logits."""
        self.model.eval()
        x = self._as_input(x)
        return torch.cat([self.model(x[s:s + self.chunk]) for s in range(0, len(x), self.chunk)])

    def predict(self, x) -> torch.Tensor:
        """The structured dataset D: (N, M) predictions, or (N, M, C) member probabilities."""
        return self.geometry.structured(self.scores(x))

    def _as_input(self, x):
        if isinstance(self.model, VectorisedMLP):
            flat = self.model.flat
            return torch.as_tensor(x, dtype=flat.dtype, device=flat.device)
        return x

    @property
    def n_parameters(self) -> int:
        if isinstance(self.model, VectorisedMLP):
            return self.model.n_parameters
        return count_parameters(self.model)

    def flops_per_example(self, example) -> float:
        if isinstance(self.model, VectorisedMLP):
            return self.model.flops_per_example
        return flops_per_example(self.model, example[:2])


class StreamRecorder:
    """An observer that records D_i in visit order: the on-the-fly stream G1/G2/G3 replay."""

    def __init__(self, n_rows: int, n_cols: int, dtype):
        self.z = torch.empty((n_rows, n_cols), dtype=dtype)
        self.y = torch.empty(n_rows, dtype=dtype)
        self.at = 0

    def epoch_start(self) -> None:
        pass

    def batch(self, d: torch.Tensor, y: torch.Tensor) -> None:
        end = self.at + len(y)
        self.z[self.at:end] = d
        self.y[self.at:end] = y
        self.at = end

    def arrays(self):
        return self.z.double().numpy(), self.y.double().numpy()


# ------------------------------------------------------------------------- tables: MLP stack
def epoch_order(n: int, cfg: MLPConfig, epoch: int) -> torch.Tensor:
    """Visit order of one epoch; it depends only on (seed, epoch)."""
    if not cfg.shuffle:
        return torch.arange(n)
    return torch.randperm(n, generator=torch.Generator().manual_seed(int(cfg.seed) * 7919 + epoch))


def batch_slices(n: int, cfg: MLPConfig, epoch: int):
    """Index batches of one epoch, in visit order."""
    order = epoch_order(n, cfg, epoch)
    return [order[s:s + cfg.batch_size] for s in range(0, n, cfg.batch_size)]


def train_mlp(X: np.ndarray, y: np.ndarray, cfg: MLPConfig, n_outputs: int = 1,
              observers=()) -> TrainedMembers:
    """X (N, p) standardised inputs; y (N,) standardised targets or integer class codes."""
    threads = 1 if cfg.batch_size < SINGLE_THREAD_BELOW else torch.get_num_threads()
    with torch_threads(threads):
        return _train_mlp(X, y, cfg, n_outputs, observers)


def _train_mlp(X, y, cfg: MLPConfig, n_outputs: int, observers) -> TrainedMembers:
    geometry = GEOMETRIES[cfg.geometry]
    dtype = getattr(torch, cfg.dtype)
    x = torch.as_tensor(X, dtype=dtype, device=cfg.device)
    yt = torch.as_tensor(y, dtype=dtype if cfg.geometry == "squared" else torch.int64,
                         device=cfg.device)
    n = len(x)
    model = VectorisedMLP(x.shape[1], cfg.n_members, cfg.width, cfg.init_scale, cfg.seed,
                          cfg.activation, cfg.init_scheme, dtype, cfg.device, n_outputs)
    l1 = cfg.lambda1 / n
    start, epoch_loss = time.perf_counter(), []
    with torch.no_grad():
        for epoch in range(cfg.epochs):
            for obs in observers:
                obs.epoch_start()
            order = epoch_order(n, cfg, epoch).to(x.device)
            xs, ys = x[order], yt[order]        # one gather per epoch; batches are views
            loss_sum = torch.zeros(cfg.n_members, dtype=torch.float64, device=x.device)
            for s in range(0, n, cfg.batch_size):
                xb, yb = xs[s:s + cfg.batch_size], ys[s:s + cfg.batch_size]
                z, cache = model.forward(xb)
                model.backward(geometry.wta_gradient(z, yb, cfg.epsilon, loss_sum), cache)
                model.sgd_step(cfg.lr, l1)
                for obs in observers:
                    obs.batch(geometry.structured(z), yb)
            if not torch.isfinite(model.flat).all():
                raise TrainingDiverged(f"member parameters became non-finite in epoch {epoch + 1}")
            epoch_loss.append((loss_sum / n).cpu().numpy())
    return TrainedMembers(model, geometry, time.perf_counter() - start, epoch_loss, chunk=8192)


# ------------------------------------------------------------------------- images: CNN stack
def make_optimizer(params, cfg: CNNConfig):
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    raise ConfigError("optimizer", cfg.optimizer, f"one of {OPTIMIZERS}")


def train_cnn(images, n_classes: int, cfg: CNNConfig, observers=()) -> TrainedMembers:
    """images: a DeviceImages (train_x, train_y, batches(...)); observers see every batch."""
    geometry = GEOMETRIES["cross_entropy"]
    torch.manual_seed(cfg.seed)
    model = build_ensemble(cfg.ensemble, cfg.n_members, images.train_x.shape[1], n_classes,
                           cfg.seed).to(images.train_x.device)
    opt = make_optimizer(model.parameters(), cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    start, epoch_loss = time.perf_counter(), []
    for epoch in range(cfg.epochs):
        model.train()
        for obs in observers:
            obs.epoch_start()
        # Summed on the device: no host synchronisation inside the epoch.
        loss_sum = torch.zeros(cfg.n_members, dtype=torch.float64, device=images.train_x.device)
        count = 0
        for x, y in images.batches(cfg.batch_size, gen):
            logits = model(x)
            loss, losses = geometry.wta_loss(logits, y, cfg.epsilon)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            probs = geometry.structured(logits.detach())
            for obs in observers:
                obs.batch(probs, y)
            loss_sum += losses.sum(0)
            count += len(y)
        mean = loss_sum / max(count, 1)
        if not torch.isfinite(mean).all():
            raise TrainingDiverged(f"member loss became non-finite in epoch {epoch + 1}")
        epoch_loss.append(mean.cpu().numpy())
    return TrainedMembers(model, geometry, time.perf_counter() - start, epoch_loss, chunk=1024)
