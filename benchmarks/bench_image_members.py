"""Vectorised member stacks vs a Python loop over M CNNs: training images/s, side by side.

One training step = all members forward, the epsilon-WTA cross-entropy (Algorithm 2), one
backward, one Adam step. The vectorised side is `build_ensemble` (member stacks; strategy
"auto" picks grouped convolutions on GPUs and for images up to 16x16, per-member calls on
views of the stacked weights otherwise); the loop side is M ordinary `build_member` models
with one optimiser each. Sizes: CIFAR-shaped 3x32x32 and digits-shaped 1x8x8.

Achieved FLOP/s: the FLOPs of one training step (forward + backward, counted by
torch.utils.flop_counter: convolutions and matrix products, the same for both sides) times the
steps per second, against the machine's measured float32 matrix-multiply peak at the same
thread count (best of several square matmuls).
"""

import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.common import cli, compare, median, paired_ratio, seconds, table, threads
from sbfn_dist.learners.geometry import CrossEntropy
from sbfn_dist.learners.registry import build_ensemble, build_member, ensemble_archs

N_CLASSES, EPSILON, STEPS = 10, 0.5, 3


def wta_member_loss(logits, y, epsilon):
    """The members' epsilon-WTA cross-entropy objective (what train_cnn differentiates)."""
    return CrossEntropy().wta_loss(logits, y, epsilon)[0]


def synchronised(run, device: torch.device):
    """On a GPU the steps only queue kernels: wait for them so the timer sees the work."""
    if device.type != "cuda":
        return run

    def timed():
        run()
        torch.cuda.synchronize(device)
    return timed


def vectorised_side(kind, m, x, y):
    model = build_ensemble(kind, m, x.shape[1], N_CLASSES, seed=0).to(x.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def run():
        for _ in range(STEPS):
            loss = wta_member_loss(model(x), y, EPSILON)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run


def loop_side(kind, m, x, y):
    nets = [build_member(a, x.shape[1], N_CLASSES, seed=j).to(x.device)
            for j, a in enumerate(ensemble_archs(kind, m))]
    opts = [torch.optim.Adam(n.parameters(), lr=1e-3) for n in nets]

    def run():
        for _ in range(STEPS):
            logits = torch.stack([net(x) for net in nets], 1)
            loss = wta_member_loss(logits, y, EPSILON)
            for opt in opts:
                opt.zero_grad()
            loss.backward()
            for opt in opts:
                opt.step()
    return run


def step_flops(kind, m, x, y) -> int:
    """FLOPs of one forward + backward of the member stack (the Adam update is not counted)."""
    model = build_ensemble(kind, m, x.shape[1], N_CLASSES, seed=0).to(x.device)
    with FlopCounterMode(display=False) as counter:
        wta_member_loss(model(x), y, EPSILON).backward()
    return counter.get_total_flops()


def matmul_peak(device: torch.device, n_threads=2, repeats=7) -> float:
    """Measured float32 matmul FLOP/s: best of `repeats` n x n products (n = 1024 on a CPU,
    8192 on a GPU, where small products cannot fill the chip)."""
    n = 8192 if device.type == "cuda" else 1024
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    product = synchronised(lambda: a @ b, device)
    with threads(n_threads):
        product()                                       # warm-up
        best = min(seconds(product) for _ in range(repeats))
    return 2 * n ** 3 / best


def measure(kind, m, batch, shape, repeats, device: torch.device, n_threads=2) -> dict:
    x = torch.randn(batch, *shape, device=device)
    y = torch.randint(N_CLASSES, (batch,), device=device)
    with threads(n_threads):
        sides = {"vectorised": synchronised(vectorised_side(kind, m, x, y), device),
                 "loop": synchronised(loop_side(kind, m, x, y), device)}
        for run in sides.values():
            run()                                     # warm-up
        t = compare(sides, repeats)
    images, flops = batch * STEPS, step_flops(kind, m, x, y) * STEPS
    return {"kind": kind, "M": m, "batch": batch, "shape": "x".join(map(str, shape)),
            "vec": images / median(t["vectorised"]), "loop": images / median(t["loop"]),
            "ratio": paired_ratio(t["loop"], t["vectorised"]),
            "vec_flops": flops / median(t["vectorised"]), "loop_flops": flops / median(t["loop"])}


def run(quick: bool = False, device: str = "cpu") -> list:
    """device "cuda": the same grid on a GPU (python -c "...; run(device='cuda')")."""
    device = torch.device(device)
    repeats = 1 if quick else (3 if device.type == "cpu" else 5)
    grid = ([("cnn", 5, 32, (1, 8, 8))] if quick else
            [(k, m, b, s) for s in ((3, 32, 32), (1, 8, 8)) for k in ("cnn", "mixed")
             for m in (5, 10) for b in (32, 128)])
    peak = matmul_peak(device)
    rows = [measure(k, m, b, s, repeats, device) for k, m, b, s in grid]
    where = "2 threads" if device.type == "cpu" else torch.cuda.get_device_name(device)
    table(f"Image member training, vectorised stacks vs loop ({where}, Adam, eps = {EPSILON}, "
          f"{STEPS} steps, median of {repeats}; measured matmul peak {peak / 1e9:.1f} GFLOP/s)",
          ["input", "ensemble", "M", "batch", "vectorised img/s", "loop img/s", "ratio",
           "vec GFLOP/s", "vec % peak", "loop % peak"],
          [[r["shape"], r["kind"], r["M"], r["batch"], f"{r['vec']:,.0f}", f"{r['loop']:,.0f}",
            f"{r['ratio']:.2f}x", f"{r['vec_flops'] / 1e9:.2f}",
            f"{100 * r['vec_flops'] / peak:.1f}%", f"{100 * r['loop_flops'] / peak:.1f}%"]
           for r in rows])
    return rows


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
