"""Packed hypothesis sets: regression80's 20 (M, epsilon) sets of one fold as one member stack,
against the same 20 sets trained one after another, and what a member step costs per width.

Synthetic data shaped like a 10-fold training split of UCI Air Quality (8092 rows x 11
features), online training (b = 1, Algorithm 1), kappa = 50, one thread (a Ray trial's CPU);
the on-the-fly stream is recorded as in a sweep. Each side trains `steps` samples of one epoch;
a full fold is 5 epochs of 8092 steps. The per-width table measures a pack of paper-full's
sets (M in {2, 5, 10, 20, 35}) at each kappa of Table "hyper" and extrapolates paper-full's
3,840 configurations x 10 folds (docs/benchmarks.md).
"""

import torch

from benchmarks.common import (cli, compare, median, paired_ratio, regression_data, table, target,
                               threads)
from sbfn_dist.combiners.online import VARIANTS, OnlineSBFN, fit_online_grid, fit_online_streams
from sbfn_dist.learners.training import MLPConfig, StreamRecorder, train_mlp_pack

PAPER_M, PAPER_EPS = (2, 5, 10, 20, 35), (0.0, 0.1, 0.35, 0.5)
N_FEATURES, WIDTH, AQ_STEPS, EPOCHS, FOLDS = 11, 50, 8092, 5, 10
PAPER_FULL_PER_WIDTH = 3840 // 4          # configurations of paper-full at one kappa
TARGET = 8.0


def grid_sets(width: int = WIDTH) -> list[MLPConfig]:
    return [MLPConfig(n_members=m, epsilon=e, width=width, epochs=1, batch_size=1)
            for m in PAPER_M for e in PAPER_EPS]


def recorded(X, y, cfgs):
    """One pack with its stream recorded (what a sweep's on-the-fly combiners replay)."""
    recorder = StreamRecorder(len(y), sum(c.n_members for c in cfgs), torch.float32)
    train_mlp_pack(X, y, cfgs, observers=[recorder])
    return recorder


def replays(recorder, cfgs) -> list:
    """Each set's stream and its G1/G2/G3 x 4 lambda2 models, as a sweep's trials fit them."""
    out, start = [], 0
    for c in cfgs:
        z, _ = recorder.arrays(start, start + c.n_members)
        out.append((z, [OnlineSBFN(v, lam) for v in VARIANTS for lam in (0.0, 3.0, 5.0, 7.0)]))
        start += c.n_members
    return out


def packed_vs_sequential(steps: int, repeats: int) -> dict:
    X, y = regression_data(steps, N_FEATURES, seed=1)
    sets = grid_sets()
    recorded(X[:20], y[:20], sets)                                          # warm-up
    t = compare({"packed": lambda: recorded(X, y, sets),
                 "sequential": lambda: [recorded(X, y, [c]) for c in sets]}, repeats)
    streams, stream_y = replays(recorded(X, y, sets), sets), y.astype("float64")
    r = compare({"together": lambda: fit_online_streams(streams, stream_y, 1),
                 "apart": lambda: [fit_online_grid(z, stream_y, 1, m) for z, m in streams]},
                repeats)
    return {"steps": steps, "packed_s": median(t["packed"]), "seq_s": median(t["sequential"]),
            "ratio": paired_ratio(t["sequential"], t["packed"]),
            "replay_together_s": median(r["together"]), "replay_apart_s": median(r["apart"]),
            "replay_ratio": paired_ratio(r["apart"], r["together"])}


def per_width(steps: int) -> list:
    """Seconds per sample step of a pack of the 5 M values at each kappa, and paper-full's
    member-training cost extrapolated from it (per configuration: 5 epochs x 10 folds)."""
    X, y = regression_data(steps, N_FEATURES, seed=2)
    rows = []
    for width in (20, 50, 200, 2000):
        sets = [MLPConfig(n_members=m, epsilon=0.35, width=width, epochs=1, batch_size=1)
                for m in PAPER_M]
        train_mlp_pack(X[:5], y[:5], sets)
        n = max(20, steps // (1 + width // 200))             # fewer steps for the wide ones
        seconds = min(compare({"pack": lambda: train_mlp_pack(X[:n], y[:n], sets)}, 2)["pack"])
        per_config = seconds / n / len(sets) * AQ_STEPS * EPOCHS * FOLDS
        rows.append({"width": width, "step_ms": 1e3 * seconds / n, "per_config_s": per_config,
                     "all_h": per_config * PAPER_FULL_PER_WIDTH / 3600})
    return rows


def run(quick: bool = False) -> dict:
    steps, repeats = (200, 1) if quick else (2000, 3)
    with threads(1):
        res = packed_vs_sequential(steps, repeats)
        widths = per_width(50 if quick else 400)
    fold_s = res["packed_s"] / steps * AQ_STEPS * EPOCHS
    table(f"regression80's 20 hypothesis sets, M = 2..35 (288 members), kappa = {WIDTH}, b = 1, "
          f"1 thread, {steps} steps per side, median of {repeats} interleaved repeats",
          ["quantity", "value"],
          [["packed: one stack, s", f"{res['packed_s']:.2f}"],
           ["one after another, s", f"{res['seq_s']:.2f}"],
           ["ratio (paired)", f"{res['ratio']:.1f}x"],
           ["G1/G2/G3 x 4 lambda2 of all 20 sets: one recursion, s",
            f"{res['replay_together_s']:.2f}"],
           ["the same, one recursion per set, s", f"{res['replay_apart_s']:.2f}"],
           ["replay ratio (paired)", f"{res['replay_ratio']:.1f}x"],
           ["one Air Quality fold, packed (5 epochs x 8092 steps), s", f"{fold_s:.0f}"]])
    table("paper-full member training per kappa (a pack of M = 2..35, b = 1, 1 thread; "
          "extrapolated to 5 epochs x 8092 steps x 10 folds)",
          ["kappa", "ms per step (93 members)", "s per configuration", "h for its 960 configs"],
          [[w["width"], f"{w['step_ms']:.2f}", f"{w['per_config_s']:.0f}", f"{w['all_h']:.1f}"]
           for w in widths])
    total_h = sum(w["all_h"] for w in widths)
    print(f"RESULT paper-full member training: {total_h:.0f} core-hours; on N cores about "
          f"{total_h:.0f}/N h (N = 64: {total_h / 64:.1f} h)")
    target("20 regression80 sets packed vs one after another, 1 thread", res["ratio"], TARGET)
    return {**res, "widths": widths}


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
