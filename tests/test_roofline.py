"""The roofline floor's bookkeeping (references/roofline.py) on operations whose FLOPs and
bytes are known by hand."""

import pytest
import torch
from torch.nn import functional as F

from references.roofline import CARDS, Kernels

CARD = CARDS["h100"]


def test_a_matmul_counts_its_flops_its_bytes_and_the_binding_peak():
    a, b = torch.randn(64, 128), torch.randn(128, 32)
    with Kernels(CARD) as k:
        a @ b.t().t()                       # views move nothing: one kernel
    [(name, row)] = k.ops.items()
    flops, moved = 2 * 64 * 128 * 32, (64 * 128 + 128 * 32 + 64 * 32) * 4
    assert name == "mm" and row["calls"] == 1
    assert (row["flops"], row["bytes"]) == (flops, moved)
    assert row["floor_s"] == pytest.approx(max(flops / CARD["fp32"], moved / CARD["bytes"]))


def test_convolutions_use_the_tensor_core_peak_and_elementwise_ops_the_bandwidth():
    x, w = torch.randn(8, 16, 32, 32), torch.randn(32, 16, 3, 3)
    with Kernels(CARD) as k:
        y = F.conv2d(x, w, padding=1)
        F.relu(y)
    conv, relu = k.ops["convolution"], k.ops["relu"]
    flops = 2 * 8 * 32 * 32 * 32 * 16 * 9
    assert conv["flops"] == flops
    assert conv["floor_s"] == pytest.approx(max(flops / CARD["tf32"], conv["bytes"] / CARD["bytes"]))
    assert relu["flops"] == 0 and relu["bytes"] == 2 * y.numel() * 4
    assert relu["floor_s"] == pytest.approx(relu["bytes"] / CARD["bytes"])
