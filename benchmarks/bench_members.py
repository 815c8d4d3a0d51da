"""Vectorised M-member training (one batched tensor program) vs a Python loop over M models.

Both sides do the same work: same initial parameters, same batches, same delta, one SGD step
per batch per member (`train_members` vs `train_members_looped`). Ratio = loop time /
vectorised time on the same samples, median over interleaved repeats.
(`train_members` reads its per-epoch training RMSE off the losses of each step, so neither
side makes an extra pass over the data.)
"""

import torch

from sbfn_dist.learners.training import MLPConfig, train_mlp as train_members
from references.looped_members import train_members_looped

from benchmarks.common import cli, compare, median, paired_ratio, regression_data, table, target, threads

TARGETS = {1: 10.0, 64: 5.0}          # at M = 20
N_FEATURES, WIDTH, EPSILON = 12, 50, 0.35

def measure(X, y, m: int, b: int, epochs: int, repeats: int, n_threads: int = 1) -> dict:
    cfg = MLPConfig(n_members=m, width=WIDTH, epsilon=EPSILON, batch_size=b, epochs=epochs)
    warm = MLPConfig(n_members=m, width=WIDTH, epsilon=EPSILON, batch_size=b, epochs=1)
    with threads(n_threads):
        for fn in (train_members, train_members_looped):       # first calls are slow
            fn(X[:b + 4], y[:b + 4], warm)
        t = compare({"vectorised": lambda: train_members(X, y, cfg),
                     "loop": lambda: train_members_looped(X, y, cfg)}, repeats)
    samples = len(X) * epochs
    return {"M": m, "b": b, "threads": n_threads, "samples": samples,
            "vec_sps": samples / median(t["vectorised"]), "loop_sps": samples / median(t["loop"]),
            "ratio": paired_ratio(t["loop"], t["vectorised"])}

def run(quick: bool = False) -> list:
    X, y = regression_data(2000, N_FEATURES)
    repeats = 1 if quick else 5
    # (b, samples per run, epochs): the loop at b = 1 manages ~35-300 samples/s, so fewer samples
    sizes = [(1, 16, 1), (64, 128, 1)] if quick else [(1, 250, 1), (64, 2000, 2)]
    rows = [measure(X[:n], y[:n], m, b, ep, repeats)
            for b, n, ep in sizes for m in (5, 20, 35)]
    b64, n64, ep64 = sizes[1]
    rows.append(measure(X[:n64], y[:n64], 20, b64, ep64, repeats, n_threads=2))
    table(f"M-member training, kappa = {WIDTH}, p = {N_FEATURES}, epsilon = {EPSILON} "
          f"(torch.set_num_threads(1) unless noted; median of {repeats} interleaved repeats)",
          ["M", "b", "threads", "samples", "vectorised samples/s", "loop samples/s", "ratio"],
          [[r["M"], r["b"], r["threads"], r["samples"], f"{r['vec_sps']:,.0f}",
            f"{r['loop_sps']:,.0f}", f"{r['ratio']:.1f}x"] for r in rows])
    for b, goal in TARGETS.items():
        r = next(r for r in rows if r["M"] == 20 and r["b"] == b and r["threads"] == 1)
        target(f"vectorised vs loop, M = 20, b = {b}, 1 thread", r["ratio"], goal)
    return rows

if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
