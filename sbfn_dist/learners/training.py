"""Training the M hypotheses together with epsilon-modulated winner-takes-all weights.

For every batch all members predict, each sample's member losses give delta (paper, Eq.
"equatruedelta"), and member j descends mean_i delta_ij l(z_ij, y_i) (Eq. "predparam2"); the loss
l and its gradient come from the task's geometry (squared loss: Algorithm 1; cross-entropy:
Algorithm 2). Two trainers, one result type:

  train_mlp  tables: M MLPs in one flat buffer, hand-written gradients and plain SGD (+ the
             lambda1 sign step) -- at b = 1 autograd's per-step overhead would dominate;
  train_cnn  images: M CNNs as member stacks (built-ins grouped, learners/cnn.py; your own
             networks vmapped, learners/factories.py), autograd and torch.optim; its step
             runs as sbfn_dist.learners.steps says (bf16 + a CUDA graph on CUDA).

Both return TrainedMembers, whose `predict` gives the structured dataset D (N, M, d).

Several hypothesis sets of one fold can train as one MLP stack (`train_mlp_pack`, a pack; for
images `train_cnn_pack`, sets differing in epsilon, kind or M):
the members of all sets side by side, each set with its own delta (winners chosen within the
set), epsilon, learning rate, lambda1, init scale and scheme; what must be shared for one
visit order and one kernel per layer is PACK_SHARED. A set trained in a pack equals the set
trained alone up to floating-point rounding (docs/method.md "Packed hypothesis sets"). On-the-fly
combiners are observers: `epoch_start()` before every epoch and `batch(D_b, y_b)` after every
member step, with the batch's pre-step structured vectors. They never feed back into the members,
so a regression stream recorded here and replayed afterwards (G1/G2/G3) gives the same result as
updating alpha inside this loop (docs/method.md).
"""

import time
from dataclasses import dataclass

import numpy as np
import torch

from sbfn_dist.learners.cost import count_parameters, flops_per_example
from sbfn_dist.learners.configs import PACK_SHARED, CNNConfig, MLPConfig
from sbfn_dist.learners.diversity import SetWeights
from sbfn_dist.errors import ConfigError
from sbfn_dist.settings.fields import OPTIMIZERS
from sbfn_dist.learners.geometry import GEOMETRIES
from sbfn_dist.learners.mlp import VectorisedMLP, member_init
from sbfn_dist.learners.cnn import member_seed
from sbfn_dist.learners.registry import Ensemble, check_ensemble, ensemble_archs
from sbfn_dist.runtime import torch_threads
from sbfn_dist.learners.steps import StepRunner, autocast, compiled, memory_format, tuned_kernels

# Below this batch size a step's tensors are tiny and a second intra-op thread only spins:
# the demo took 300 s with torch's default 2 threads under load and 22 s with one.
SINGLE_THREAD_BELOW = 32


class TrainingDiverged(RuntimeError):
    """The members' parameters became NaN or infinite (a result, not a crash: status 'diverged')."""


@dataclass
class TrainedMembers:
    model: object              # VectorisedMLP (tables) or learners.cnn.Ensemble (images)
    geometry: object
    seconds: float             # in a pack: the pack's time times this set's share of members
    epoch_loss: list           # per epoch, each member's mean training loss on its pre-step
                               # outputs (M,): no extra pass over the data
    chunk: int                 # rows per forward pass when predicting
    packed_members: int = 0    # members trained together in its stack (its own M if alone)
    precision: str = "fp32"    # images: the precision they trained (and predict) in
    engine: str = "eager"      # images: how their training step ran (sbfn_dist.learners.steps)

    @torch.no_grad()
    def scores(self, x) -> torch.Tensor:
        """The members' outputs in link space, (N, M, d): predictions, or logits (float32)."""
        self.model.eval()
        x = self._as_input(x)
        return torch.cat([self._forward(x[s:s + self.chunk]) for s in range(0, len(x), self.chunk)])

    def _forward(self, x):
        if isinstance(self.model, VectorisedMLP):
            return self.model(x)
        device = next(self.model.parameters()).device
        with autocast(self.precision, device):
            x = x.contiguous(memory_format=memory_format(self.precision, device))
            return self.model(x).float()

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

    def arrays(self, start: int = 0, stop: int | None = None):
        """(stream D of members [start, stop), targets) as float64 arrays: a pack's sets each
        read their own columns."""
        return self.z[:, start:stop].double().numpy(), self.y.double().numpy()


class ColumnObserver:
    """An observer of one hypothesis set of a pack: it sees only its own members' columns."""

    def __init__(self, observer, start: int, stop: int):
        self.observer, self.start, self.stop = observer, start, stop

    def epoch_start(self) -> None:
        self.observer.epoch_start()

    def batch(self, d: torch.Tensor, y: torch.Tensor) -> None:
        self.observer.batch(d[:, self.start:self.stop], y)


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
    [trained] = train_mlp_pack(X, y, [cfg], n_outputs, observers)
    if isinstance(trained, TrainingDiverged):
        raise trained
    return trained


def train_mlp_pack(X: np.ndarray, y: np.ndarray, cfgs: list, n_outputs: int = 1,
                   observers=()) -> list:
    """Hypothesis sets (MLPConfigs agreeing on PACK_SHARED) trained as one member stack; per set
    its TrainedMembers, or the TrainingDiverged that ended it (the other sets train on).
    Observers see the whole stack's D, sets side by side in the order of cfgs."""
    for name in PACK_SHARED:
        if len({getattr(c, name) for c in cfgs}) > 1:
            raise ConfigError(name, [getattr(c, name) for c in cfgs],
                              "one value for every hypothesis set of a pack (PACK_SHARED)")
    threads = 1 if cfgs[0].batch_size < SINGLE_THREAD_BELOW else torch.get_num_threads()
    with torch_threads(threads):
        return _train_mlp(X, y, cfgs, n_outputs, observers)


def _train_mlp(X, y, cfgs: list, n_outputs: int, observers) -> list:
    cfg = cfgs[0]                       # for PACK_SHARED
    geometry = GEOMETRIES[cfg.geometry]
    dtype = getattr(torch, cfg.dtype)
    x = torch.as_tensor(X, dtype=dtype, device=cfg.device)
    yt = torch.as_tensor(y, dtype=dtype if cfg.geometry == "squared" else torch.int64,
                         device=cfg.device)
    n = len(x)
    model = VectorisedMLP([[t.to(cfg.device) for t in member_init(
        x.shape[1], cfg.width, c.init_scale, c.seed, j, c.init_scheme, dtype, n_outputs)]
        for c in cfgs for j in range(c.n_members)], cfg.activation)
    sizes = [c.n_members for c in cfgs]
    weights = SetWeights(sizes, [c.epsilon for c in cfgs])
    lr, shrink = _per_member(model, sizes, [c.lr for c in cfgs], [c.lambda1 / n for c in cfgs])
    diverged = [None] * len(cfgs)
    start, epoch_loss = time.perf_counter(), []
    with torch.no_grad():
        for epoch in range(cfg.epochs):
            for obs in observers:
                obs.epoch_start()
            order = epoch_order(n, cfg, epoch).to(x.device)
            xs, ys = x[order], yt[order]        # one gather per epoch; batches are views
            loss_sum = torch.zeros(model.m, dtype=torch.float64, device=x.device)
            for s in range(0, n, cfg.batch_size):
                xb, yb = xs[s:s + cfg.batch_size], ys[s:s + cfg.batch_size]
                z, cache = model.forward(xb)
                model.step(geometry.wta_gradient(z, yb, weights, loss_sum), cache, lr, shrink)
                for obs in observers:
                    obs.batch(geometry.structured(z), yb)
            epoch_loss.append((loss_sum / n).cpu().numpy())
            finite = model.finite_members().cpu().tolist()
            if _note_divergence(finite, sizes, diverged,
                                f"member parameters became non-finite in epoch {epoch + 1}"):
                break                           # every set has diverged
    return _results(model, geometry, cfgs, diverged, time.perf_counter() - start, epoch_loss,
                    model.m, chunk=8192)


def _per_member(model: VectorisedMLP, sizes: list, lrs: list, l1s: list):
    """The step's lr and L1 shrink lr * lambda1 / N (VectorisedMLP.step): numbers when the sets
    agree, else each member's own (lr as (M,), the shrink laid out as the parameters)."""
    def per_member(values):
        return torch.tensor([v for v, m in zip(values, sizes) for _ in range(m)],
                            dtype=model.flat.dtype, device=model.flat.device)
    shrinks = [lr * l1 for lr, l1 in zip(lrs, l1s)]
    lr = lrs[0] if len(set(lrs)) == 1 else per_member(lrs)
    shrink = shrinks[0] if len(set(shrinks)) == 1 else model.member_values(per_member(shrinks))
    return lr, shrink


def _note_divergence(finite: list, sizes: list, diverged: list, message: str) -> bool:
    """Mark each set (sizes[k] consecutive members) with a member not `finite` as diverged with
    `message`, unless it already is; True when every set has diverged."""
    start = 0
    for k, m in enumerate(sizes):
        if diverged[k] is None and not all(finite[start:start + m]):
            diverged[k] = TrainingDiverged(message)
        start += m
    return all(d is not None for d in diverged)


def _results(model, geometry, cfgs, diverged, seconds, epoch_loss, total: int,
             **shared) -> list:
    """Per set: its members as a model of their own (`model.subset`), or its TrainingDiverged;
    `total` members trained together, `shared`: the TrainedMembers fields all sets share."""
    out, start = [], 0
    for cfg, failed in zip(cfgs, diverged):
        stop = start + cfg.n_members
        out.append(failed or TrainedMembers(
            model if len(cfgs) == 1 else model.subset(start, stop), geometry,
            seconds * cfg.n_members / total, [loss[start:stop] for loss in epoch_loss],
            packed_members=total, **shared))
        start = stop
    return out


# ------------------------------------------------------------------------- images: CNN stack
# What the hypothesis sets of one CNN pack must share: one visit order and augmentation (seed,
# epochs, batch size), one optimizer for all parameters, one way of running the step. Each set
# keeps its own ensemble kind, M and epsilon (and its own heads: observers per set).
CNN_PACK_SHARED = ("epochs", "batch_size", "optimizer", "lr", "momentum", "weight_decay",
                   "seed", "precision", "engine", "compile")


def make_optimizer(params, cfg: CNNConfig):
    """The members' optimizer. For a CUDA-graph step it is fused (one kernel for all tensors)
    and capturable (its step count lives on the GPU, so a replayed graph advances it)."""
    graph = {"fused": True} if cfg.engine == "cuda_graph" else {}
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay, **graph)
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay,
                                **graph, **({"capturable": True} if graph else {}))
    raise ConfigError("optimizer", cfg.optimizer, f"one of {OPTIMIZERS}")


def train_cnn(images, n_classes: int, cfg: CNNConfig, observers=()) -> TrainedMembers:
    """images: a DeviceImages (train_x, train_y, epoch(...)); observers see every batch."""
    [trained] = train_cnn_pack(images, n_classes, [cfg], observers)
    if isinstance(trained, TrainingDiverged):
        raise trained
    return trained


def train_cnn_pack(images, n_classes: int, cfgs: list, observers=()) -> list:
    """Hypothesis sets (CNNConfigs agreeing on CNN_PACK_SHARED) trained as one member stack;
    per set its TrainedMembers, or the TrainingDiverged that ended it (the others train on).
    Observers see the whole stack's member probabilities, sets side by side in cfgs' order."""
    for name in CNN_PACK_SHARED:
        if len({getattr(c, name) for c in cfgs}) > 1:
            raise ConfigError(name, [getattr(c, name) for c in cfgs],
                              "one value for every hypothesis set of a pack (CNN_PACK_SHARED)")
    cfg, device = cfgs[0], images.train_x.device
    n_channels, size = images.train_x.shape[1], images.train_x.shape[2:]
    for kind in dict.fromkeys(c.ensemble for c in cfgs):   # your factories, before any work
        check_ensemble(kind, n_channels, n_classes, size, device)
    torch.manual_seed(cfg.seed)
    model = Ensemble([a for c in cfgs for a in ensemble_archs(c.ensemble, c.n_members)],
                     n_channels, n_classes,
                     [member_seed(c.seed, j) for c in cfgs for j in range(c.n_members)],
                     size=size)
    fmt = memory_format(cfg.precision, device)
    model = model.to(device=device, memory_format=fmt)
    sizes = [c.n_members for c in cfgs]
    step, loss_sum = _cnn_step(model, _forward(model, cfg),
                               make_optimizer(model.parameters(), cfg),
                               SetWeights(sizes, [c.epsilon for c in cfgs]), cfg.precision,
                               observers)
    runner = StepRunner(step, cfg.engine)
    gen = torch.Generator().manual_seed(cfg.seed)
    diverged = [None] * len(cfgs)
    start, epoch_loss = time.perf_counter(), []
    with tuned_kernels(device):
        for epoch in range(cfg.epochs):
            model.train()
            for obs in observers:
                obs.epoch_start()
            loss_sum.zero_()
            x, y = images.epoch(gen)
            for s in range(0, len(y), cfg.batch_size):   # per batch: no second epoch-sized copy
                runner(x[s:s + cfg.batch_size].contiguous(memory_format=fmt),
                       y[s:s + cfg.batch_size])
            epoch_loss.append((loss_sum / max(len(y), 1)).cpu().numpy())   # one sync per epoch
            if _note_divergence(np.isfinite(epoch_loss[-1]).tolist(), sizes, diverged,
                                f"member loss became non-finite in epoch {epoch + 1}"):
                break
    seconds = time.perf_counter() - start
    return _results(model, GEOMETRIES["cross_entropy"], cfgs, diverged, seconds, epoch_loss,
                    model.n_members, chunk=eval_chunk(model), precision=cfg.precision,
                    engine=runner.engine)


def _forward(model, cfg: CNNConfig):
    """The stack's forward for a batch: compiled (cfg.compile "on") for full batches; the
    epoch's last, shorter batch runs the model as it is -- a second compilation, as long as the
    first, would buy one batch an epoch."""
    if cfg.compile != "on":
        return lambda x: model(x)
    fast = compiled(model)
    return lambda x: fast(x) if len(x) == cfg.batch_size else model(x)


def _cnn_step(model, forward, opt, weights, precision: str, observers):
    """One training step of the stack: all members forward (in `precision`), the epsilon-WTA
    cross-entropy per set (Algorithm 2), one backward, one optimizer step, the on-the-fly heads'
    steps, and the members' summed losses. Every tensor it updates is updated in place, and
    nothing is read back to the host: a CUDA graph can replay it (sbfn_dist.learners.steps)."""
    geometry = GEOMETRIES["cross_entropy"]
    device = next(model.parameters()).device
    loss_sum = torch.zeros(model.n_members, dtype=torch.float64, device=device)

    def step(x, y):
        with autocast(precision, device):
            logits = forward(x)
        loss, losses = geometry.wta_loss(logits.float(), y, weights)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        probs = geometry.structured(logits.detach().float())
        for obs in observers:
            obs.batch(probs, y)
        loss_sum.add_(losses.sum(0))
    return step, loss_sum


def eval_chunk(model) -> int:
    """Images per forward pass when predicting: large on a GPU (few launches), small on a CPU
    (memory of the grouped activations)."""
    return 4096 if next(model.parameters()).is_cuda else 1024
