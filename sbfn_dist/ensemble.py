"""Training the M hypotheses together with epsilon-modulated winner-takes-all weights.

Algorithm 1 (online, b = 1) and its mini-batch form: for every batch, all members predict,
each sample's member losses give delta (Eq. "equatruedelta"), and member j takes the step
theta_j <- theta_j - eta_theta * (grad of mean_i delta_ij (z_ij - y_i)^2 + lambda1/N sgn(theta_j))
(Eq. "predparam2"). The combiner's alpha never feeds back into theta, so the training-time
predictions z_i (taken before each step, as in Algorithm 1) are recorded as a stream that the
on-the-fly combiners (G1, G2, G3) replay afterwards: the same result as updating alpha inside
this loop, without slowing it (see docs/method.md).
"""

import time
from dataclasses import dataclass

import numpy as np
import torch

from sbfn_dist.diversity import wta_weights
from sbfn_dist.learners.mlp import VectorisedMLP
from sbfn_dist.runtime import torch_threads

# Below this batch size a step's tensors are tiny and a second intra-op thread only spins:
# the demo took 300 s with torch's default 2 threads under load and 22 s with one.
SINGLE_THREAD_BELOW = 32


class TrainingDiverged(RuntimeError):
    """The members' parameters became NaN or infinite (a result, not a crash: status 'diverged')."""


@dataclass(frozen=True)
class MemberConfig:
    n_members: int = 5
    epsilon: float = 0.0
    width: int = 50            # kappa: neurons per hidden layer
    init_scale: float = 0.1    # chi
    lambda1: float = 0.0       # L1 penalty, applied as lambda1 / N per step (Algorithm 1)
    lr: float = 0.03           # eta_theta
    epochs: int = 5
    batch_size: int = 1        # b = 1 is exactly Algorithm 1
    activation: str = "tanh"
    init_scheme: str = "scaled_default"
    shuffle: bool = True
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"


def epoch_order(n: int, cfg: MemberConfig, epoch: int) -> torch.Tensor:
    """Visit order of one epoch; it depends only on (seed, epoch)."""
    if not cfg.shuffle:
        return torch.arange(n)
    return torch.randperm(n, generator=torch.Generator().manual_seed(int(cfg.seed) * 7919 + epoch))


def batch_slices(n: int, cfg: MemberConfig, epoch: int):
    """Index batches of one epoch, in visit order."""
    order = epoch_order(n, cfg, epoch)
    return [order[s:s + cfg.batch_size] for s in range(0, n, cfg.batch_size)]


def weighted_residual_grad(z: torch.Tensor, y: torch.Tensor, epsilon: float, sq_sum=None):
    """d/dz of mean_i sum_j delta_ij (z_ij - y_i)^2, delta from the detached losses.

    sq_sum, if given, accumulates each member's summed squared residual (the epoch's running
    training error, read off the losses this step computes anyway)."""
    r = z - y.unsqueeze(1)
    sq = r * r
    if sq_sum is not None:
        sq_sum.add_(sq.sum(0))
    delta = wta_weights(sq, epsilon)
    return delta.mul_(r).mul_(2.0 / len(y))


@dataclass
class TrainedMembers:
    model: VectorisedMLP
    seconds: float
    epoch_rmse: list            # each member's training RMSE during every epoch, (epochs, M),
                                # on the pre-step predictions (no extra pass over the data)
    stream_z: np.ndarray | None  # (epochs * N, M) training-time predictions in visit order
    stream_y: np.ndarray | None
    batch_size: int

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Structured dataset D (plug-in regime): member predictions, shape (N, M)."""
        flat = self.model.flat
        with torch.no_grad():
            x = torch.as_tensor(X, dtype=flat.dtype, device=flat.device)
            return self.model.predict(x).double().cpu().numpy()

    @property
    def n_parameters(self) -> int:
        return self.model.n_parameters


def train_members(X: np.ndarray, y: np.ndarray, cfg: MemberConfig,
                  record_stream: bool = False) -> TrainedMembers:
    threads = 1 if cfg.batch_size < SINGLE_THREAD_BELOW else torch.get_num_threads()
    with torch_threads(threads):
        return _train_members(X, y, cfg, record_stream)


def _train_members(X: np.ndarray, y: np.ndarray, cfg: MemberConfig,
                   record_stream: bool) -> TrainedMembers:
    dtype = getattr(torch, cfg.dtype)
    x = torch.as_tensor(X, dtype=dtype, device=cfg.device)
    yt = torch.as_tensor(y, dtype=dtype, device=cfg.device)
    n = len(x)
    model = VectorisedMLP(x.shape[1], cfg.n_members, cfg.width, cfg.init_scale, cfg.seed,
                          cfg.activation, cfg.init_scheme, dtype, cfg.device)
    stream = torch.empty((cfg.epochs * n, cfg.n_members), dtype=dtype) if record_stream else None
    stream_y = torch.empty(cfg.epochs * n, dtype=dtype) if record_stream else None
    l1 = cfg.lambda1 / n
    start, epoch_rmse = time.perf_counter(), []
    with torch.no_grad():
        for epoch in range(cfg.epochs):
            order = epoch_order(n, cfg, epoch).to(x.device)
            xs, ys = x[order], yt[order]        # one gather per epoch; batches are views
            if stream_y is not None:
                stream_y[epoch * n:(epoch + 1) * n] = ys
            sq_sum = torch.zeros(cfg.n_members, dtype=torch.float64, device=x.device)
            for s in range(0, n, cfg.batch_size):
                xb, yb = xs[s:s + cfg.batch_size], ys[s:s + cfg.batch_size]
                z, cache = model.forward(xb)
                if stream is not None:
                    stream[epoch * n + s:epoch * n + s + len(yb)] = z
                model.backward(weighted_residual_grad(z, yb, cfg.epsilon, sq_sum), cache)
                model.sgd_step(cfg.lr, l1)
            if not torch.isfinite(model.flat).all():
                raise TrainingDiverged(f"member parameters became non-finite in epoch {epoch + 1}")
            epoch_rmse.append((sq_sum / n).sqrt().cpu().numpy())
    seconds = time.perf_counter() - start
    to_np = (lambda t: None if t is None else t.double().numpy())
    return TrainedMembers(model, seconds, epoch_rmse, to_np(stream), to_np(stream_y), cfg.batch_size)
