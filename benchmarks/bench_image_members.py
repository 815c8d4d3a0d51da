"""Vectorised member stacks vs a Python loop over M CNNs: training images/s, side by side.

One training step = all members forward, the epsilon-WTA cross-entropy (Algorithm 2), one
backward, one Adam step. The vectorised side is `build_ensemble` (member stacks; strategy
"auto" picks grouped convolutions on GPUs and for images up to 16x16, per-member calls on
views of the stacked weights otherwise); the loop side is M ordinary `build_member` models
with one optimiser each. Sizes: CIFAR-shaped 3x32x32 and digits-shaped 1x8x8.
"""

import torch

from benchmarks.common import cli, compare, median, paired_ratio, table, threads
from sbfn_dist.image_ensemble import wta_member_loss
from sbfn_dist.learners.registry import build_ensemble, build_member, ensemble_archs

N_CLASSES, EPSILON, STEPS = 10, 0.5, 3


def vectorised_side(kind, m, x, y):
    model = build_ensemble(kind, m, x.shape[1], N_CLASSES, seed=0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def run():
        for _ in range(STEPS):
            loss = wta_member_loss(model(x), y, EPSILON)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return run


def loop_side(kind, m, x, y):
    nets = [build_member(a, x.shape[1], N_CLASSES, seed=j)
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


def measure(kind, m, batch, shape, repeats, n_threads=2) -> dict:
    x, y = torch.randn(batch, *shape), torch.randint(N_CLASSES, (batch,))
    with threads(n_threads):
        sides = {"vectorised": vectorised_side(kind, m, x, y), "loop": loop_side(kind, m, x, y)}
        for run in sides.values():
            run()                                     # warm-up
        t = compare(sides, repeats)
    images = batch * STEPS
    return {"kind": kind, "M": m, "batch": batch, "shape": "x".join(map(str, shape)),
            "vec": images / median(t["vectorised"]), "loop": images / median(t["loop"]),
            "ratio": paired_ratio(t["loop"], t["vectorised"])}


def run(quick: bool = False) -> list:
    repeats = 1 if quick else 3
    grid = ([("cnn", 5, 32, (1, 8, 8))] if quick else
            [(k, m, b, s) for s in ((3, 32, 32), (1, 8, 8)) for k in ("cnn", "mixed")
             for m in (5, 10) for b in (32, 128)])
    rows = [measure(k, m, b, s, repeats) for k, m, b, s in grid]
    table(f"Image member training, vectorised stacks vs loop (2 threads, Adam, eps = {EPSILON}, "
          f"{STEPS} steps, median of {repeats})",
          ["input", "ensemble", "M", "batch", "vectorised img/s", "loop img/s", "ratio"],
          [[r["shape"], r["kind"], r["M"], r["batch"], f"{r['vec']:,.0f}", f"{r['loop']:,.0f}",
            f"{r['ratio']:.2f}x"] for r in rows])
    return rows


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
