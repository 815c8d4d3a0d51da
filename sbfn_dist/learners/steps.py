"""How a member-training step runs on its device: precision, memory format, and eager execution
or the replay of a captured CUDA graph (docs/method.md "Fast image members").

On a GPU the image members' step is hundreds of small kernels (grouped convolutions of a few
channels per member, BatchNorm, the epsilon-WTA loss, Adam, the on-the-fly heads); launched one
by one from Python the GPU waits for the host. Captured once into a CUDA graph, a step is one
launch. bf16 autocast with channels_last tensors puts the convolutions on the tensor cores (on a
CPU, channels_last alone speeds oneDNN's convolutions up).
What the step computes is the same either way: the graph replays the very kernels the eager
step ran, and only the precision changes numbers (docs/method.md says by how much).
"""

import contextlib
import os
import warnings

import torch

from sbfn_dist.errors import ConfigError
from sbfn_dist.settings.fields import PRECISIONS, STEP_COMPILES as COMPILES, STEP_ENGINES as ENGINES
# Full batches run eagerly (on a side stream, as CUDA graph capture requires) before the step is
# captured: the optimizer's state, cuDNN's choices and the heads' lazy set-up happen there.
WARMUP_STEPS = 3


def resolve_precision(precision: str, device: str) -> str:
    """"auto": bf16 autocast on CUDA, fp32 elsewhere (a CPU gains nothing from bf16)."""
    if precision not in PRECISIONS:
        raise ConfigError("precision", precision, f"one of {PRECISIONS}")
    if precision == "auto":
        return "bf16" if str(device).startswith("cuda") else "fp32"
    return precision


def resolve_engine(engine: str, device: str) -> str:
    """"auto": the CUDA graph on CUDA, eager elsewhere; "cuda_graph" only on CUDA."""
    if engine not in ENGINES:
        raise ConfigError("step_engine", engine, f"one of {ENGINES}")
    cuda = str(device).startswith("cuda")
    if engine == "auto":
        return "cuda_graph" if cuda else "eager"
    if engine == "cuda_graph" and not cuda:
        raise ConfigError("step_engine", engine, "auto or eager: CUDA graphs need a CUDA device "
                          f"(this trial runs on {device})")
    return engine


# What "auto" compiles: nothing. On an H200 a default CIFAR-10 split's member steps ran 1.15x
# faster compiled, but 0.85x with each stack's compilation counted (11-28 s once per sweep, 1-2 s
# per later worker; docs/benchmarks.md 9.7): the rule for a CUDA default, >= 1.2x, fails.
COMPILE_AUTO_ON_CUDA = False
# torch.compile's recompilations per code object before it falls back to eager: a reused worker
# compiles Ensemble.forward once per stack shape ((kind, M) and batch size), more than dynamo's 8.
RECOMPILE_LIMIT = 64
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"


def resolve_compile(value: str, device: str) -> str:
    """"auto": what was measured to pay on the device (COMPILE_AUTO_ON_CUDA); "on" or "off"."""
    if value not in COMPILES:
        raise ConfigError("step_compile", value, f"one of {COMPILES}")
    if value == "auto":
        return "on" if COMPILE_AUTO_ON_CUDA and str(device).startswith("cuda") else "off"
    return value


def compiled(model: torch.nn.Module):
    """The stack's forward through torch.compile (inductor fuses the elementwise chains around
    the convolutions, AOTAutograd the backward's), one static graph per batch shape. The model
    itself stays uncompiled: prediction's 4,096-image chunks need no graph of their own."""
    import torch._dynamo
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit,
                                               RECOMPILE_LIMIT)
    return torch.compile(model, dynamic=False)


def share_compile_cache(directory: str) -> None:
    """torch's on-disk compilation caches (inductor's FX graph cache, AOTAutograd's cache,
    Triton's kernels: all under TORCHINDUCTOR_CACHE_DIR) in `directory`, unless the user set
    one: every process that compiles a stack after the first reads it from there. Set before
    the process's first compilation (torch reads it when it first compiles)."""
    os.environ.setdefault(INDUCTOR_CACHE, directory)


def autocast(precision: str, device: torch.device):
    """The forward pass's autocast context for a resolved precision. The cache is off: a CUDA
    graph must re-read the fp32 master weights at every replay."""
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


@contextlib.contextmanager
def tuned_kernels(device: torch.device):
    """cuDNN times its algorithms for each convolution shape at first use while members train
    (its heuristics pick poorly for grouped convolutions of a few channels per group); the
    caller's setting is restored afterwards."""
    saved = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = saved or device.type == "cuda"
    try:
        yield
    finally:
        torch.backends.cudnn.benchmark = saved


def memory_format(precision: str, device: torch.device):
    """channels_last wherever it was measured to pay: on CPUs (oneDNN's NHWC convolutions train
    the stacks 1.3-2x faster, docs/benchmarks.md 9.3) and for bf16 on CUDA (cuDNN's tensor-core
    kernels); fp32 on CUDA keeps the default layout (its TF32 NCHW kernels, as measured)."""
    if device.type == "cuda" and precision != "bf16":
        return torch.contiguous_format
    return torch.channels_last


class StepRunner:
    """Runs `step(x, y)` once per batch, eagerly or replayed from a CUDA graph.

    engine "cuda_graph": the first WARMUP_STEPS batches run eagerly on a side stream, the next
    one is captured (into static copies of its tensors) and replayed; every later batch of that
    shape is copied into the static tensors and replayed. A batch of another shape (an epoch's
    last, smaller one) runs eagerly once (cuDNN picks its kernels for the shape), then gets a
    graph of its own in the first graph's memory pool (they never run at once), so the short
    batch costs no second copy of the step's activations. `step` keeps its state in place (gradients zeroed, not freed): every graph and
    any eager step update the same tensors. Should a capture fail, that shape runs eagerly from
    then on, with a warning; `engine` says "eager" if no step was ever replayed (records say what
    ran).
    """

    def __init__(self, step, engine: str):
        self.step, self.requested = step, engine
        self.graphs: dict = {}          # batch shape -> (graph, static x, static y), or None
        self.first, self.seen = None, {}

    @property
    def engine(self) -> str:
        replayed = any(g is not None for g in self.graphs.values())
        return "cuda_graph" if replayed else "eager"

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        if self.requested != "cuda_graph":
            return self.step(x, y)
        shape = (tuple(x.shape), tuple(y.shape))
        self.first = self.first or shape
        if shape not in self.graphs:
            seen = self.seen[shape] = self.seen.get(shape, 0) + 1
            if seen <= (WARMUP_STEPS if shape == self.first else 1):
                return self._on_side_stream(x, y)
            if shape != self.first and not self.graphs.get(self.first):
                return self.step(x, y)          # no main graph (yet) to share memory with
            self.graphs[shape] = self._capture(x, y)
        captured = self.graphs[shape]
        if captured is None:
            return self.step(x, y)
        graph, static_x, static_y = captured
        static_x.copy_(x)
        static_y.copy_(y)
        graph.replay()

    def _on_side_stream(self, x, y) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.step(x, y)
        torch.cuda.current_stream().wait_stream(side)

    def _capture(self, x, y):
        """(graph, static x, static y) of one step on copies of (x, y), or None on failure."""
        static = (x.clone(), y.clone())          # clone keeps the memory format
        main = self.graphs.get(self.first)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, pool=main[0].pool() if main else None):
                self.step(*static)
        except RuntimeError as exc:
            warnings.warn(f"CUDA graph capture of the training step for batches of shape "
                          f"{tuple(x.shape)} failed; they train eagerly: "
                          f"{str(exc).splitlines()[0]}", RuntimeWarning, stacklevel=3)
            return None
        return graph, *static
