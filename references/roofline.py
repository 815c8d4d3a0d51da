"""The roofline floor's bookkeeping: per kernel-level (aten) operation a torch step dispatches,
its FLOPs (torch.utils.flop_counter's formulas), the bytes it reads and writes (its tensor
arguments and results; views move nothing), and the least time it can take on a card,
max(FLOPs / peak FLOP/s, bytes / memory bandwidth). benchmarks/roofline_image.py sums it over
the image members' training step; tests/test_roofline.py checks it on hand-counted operations.
"""

from collections import defaultdict

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

# Datasheet peaks (dense, no sparsity): FLOP/s by the dtype an op computes in, and HBM bytes/s.
# fp32 convolutions run on the tensor cores as TF32 (cuDNN's default); other fp32 ops do not.
CARDS = {
    "h100": {"name": "NVIDIA H100 SXM 80GB", "bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12,
             "bytes": 3.35e12},
    "h200": {"name": "NVIDIA H200 SXM 141GB", "bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12,
             "bytes": 4.8e12},
}
CONVOLUTIONS = {torch.ops.aten.convolution, torch.ops.aten.convolution_backward}
# Allocations write nothing until used; the op that fills them is counted instead.
NO_TRAFFIC = {torch.ops.aten.empty, torch.ops.aten.empty_like, torch.ops.aten.empty_strided}


class Kernels(TorchDispatchMode):
    """Per aten operation: calls, FLOPs, bytes read + written, and the floor seconds on `card`."""

    def __init__(self, card: dict):
        super().__init__()
        self.card = card
        self.ops = defaultdict(lambda: {"calls": 0, "flops": 0.0, "bytes": 0.0, "floor_s": 0.0})

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func.overloadpacket
        if func.is_view or packet in NO_TRAFFIC:
            return out
        tensors = [t for t in tree_flatten((args, kwargs, out))[0] if isinstance(t, torch.Tensor)]
        moved = sum(t.numel() * t.element_size() for t in tensors)
        flops = flop_registry[packet](*args, **kwargs, out_val=out) if packet in flop_registry else 0
        row = self.ops[packet.__name__]
        row["calls"] += 1
        row["flops"] += flops
        row["bytes"] += moved
        row["floor_s"] += max(flops / self._peak(packet, tensors), moved / self.card["bytes"])
        return out

    def _peak(self, packet, tensors) -> float:
        dtype = next((t.dtype for t in tensors if t.is_floating_point()), torch.float32)
        if dtype in (torch.bfloat16, torch.float16):
            return self.card["bf16"]
        return self.card["tf32" if packet in CONVOLUTIONS else "fp32"]
