"""How fast could the image members' training step be on a GPU? A roofline floor per step.

Runs the library's training step (`sbfn_dist.learners.training._cnn_step`: members forward in bf16
or fp32, the epsilon-WTA loss, backward, fused Adam, the s-BFN and MoE heads) once on the CPU,
with the grouped stacks a GPU runs (MemberStack strategy "grouped", channels_last for bf16), and
records every kernel-level (aten) operation it dispatches: its FLOPs (torch.utils.flop_counter's
formulas) and the bytes it reads and writes (its tensor arguments and results; views move
nothing). A kernel can take no less than max(FLOPs / peak FLOP/s, bytes / memory bandwidth) on
a card; the floor of a step is the sum over its kernels, i.e. every kernel at its roofline, the
kernels as eager PyTorch runs them (no fusion), no launch gaps (a CUDA graph's replay).

Set against a measured step time (docs/benchmarks.md 9.4) the floor says how far the kernels are
from what the card allows, and whether a target is reachable with these kernels at all. It is
an estimate: the CPU dispatches a few ops the GPU fuses (cuDNN's BatchNorm, fused Adam) and
vice versa, caches are ignored (small tensors may stay in L2), and the peaks are datasheet
figures that real kernels reach only near large shapes.

    python -m benchmarks.roofline_image [--members 10] [--kinds cnn mixed resnet] [--card h100]
"""

import argparse

import torch

from benchmarks.bench_image_gpu import BATCH, N_CLASSES, trial_heads
from benchmarks.common import table
from references.roofline import CARDS, Kernels
from sbfn_dist.learners.diversity import SetWeights
from sbfn_dist.learners.registry import build_ensemble
from sbfn_dist.learners.training import CNNConfig, _cnn_step, make_optimizer
from sbfn_dist.learners.steps import memory_format

def step_kernels(kind: str, m: int, precision: str, card: dict) -> Kernels:
    """The kernels of one training step (the third: optimizer state and heads set up) of an
    M-member `kind` stack on a CIFAR-shaped batch, as a GPU trial runs it."""
    torch.manual_seed(0)
    fmt = memory_format(precision, torch.device("cuda"))      # the layout a GPU trial trains in
    model = build_ensemble(kind, m, 3, N_CLASSES, seed=0, strategy="grouped")
    model = model.to(memory_format=fmt).train()
    cfg = CNNConfig(ensemble=kind, n_members=m, precision=precision, engine="cuda_graph")
    step, _ = _cnn_step(model, make_optimizer(model.parameters(), cfg), SetWeights([m], [0.5]),
                        precision, trial_heads(m, 1, torch.device("cpu")))
    x = torch.rand(BATCH, 3, 32, 32).contiguous(memory_format=fmt)
    y = torch.arange(BATCH) % N_CLASSES
    for _ in range(2):
        step(x, y)
    with Kernels(card) as kernels:
        step(x, y)
    return kernels


def summary(kernels: Kernels, m: int) -> dict:
    ops = kernels.ops.values()
    floor = sum(o["floor_s"] for o in ops)
    top = sorted(kernels.ops.items(), key=lambda kv: -kv[1]["floor_s"])[:4]
    return {"kernels": sum(o["calls"] for o in ops), "gflop": sum(o["flops"] for o in ops) / 1e9,
            "gb": sum(o["bytes"] for o in ops) / 1e9, "floor_ms": floor * 1e3,
            "rate": BATCH * m / floor,
            "top": ", ".join(f"{name} {o['floor_s'] / floor:.0%}" for name, o in top)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10, help="M, members per stack")
    parser.add_argument("--kinds", nargs="+", default=["cnn", "mixed", "resnet"],
                        help="ensemble kinds")
    parser.add_argument("--card", choices=sorted(CARDS), default="h100",
                        help="whose datasheet peaks")
    args = parser.parse_args()
    card, rows = CARDS[args.card], []
    for kind in args.kinds:
        for precision in ("fp32", "bf16"):
            s = summary(step_kernels(kind, args.members, precision, card), args.members)
            rows.append([kind, precision, s["kernels"], f"{s['gflop']:.1f}", f"{s['gb']:.2f}",
                         f"{s['floor_ms']:.3f}", f"{s['rate']:,.0f}", s["top"]])
    table(f"Roofline floor of one training step on an {card['name']} (datasheet peaks), "
          f"M = {args.members}, batch {BATCH}, 3x32x32, Adam + s-BFN and MoE heads",
          ["ensemble", "precision", "kernels", "GFLOP", "GB moved", "floor ms",
           "member-images/s at the floor", "largest shares of the floor"], rows)


if __name__ == "__main__":
    main()
