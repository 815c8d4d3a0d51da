"""Online training (b = 1, Algorithm 1) speed and the cost of replaying G1/G2/G3 afterwards.

M = 20 members of kappa = 50, one optimiser step per sample, on synthetic data shaped like
UCI Air Quality after cleaning (8991 rows x 11 features; a 10-fold training split has 9/10 of
the rows, ~8092 steps per epoch). The on-the-fly combiners are fitted afterwards by
`fit_online_grid` on the recorded training-time stream (3 variants x 4 lambda2 in one pass).
"""

from sbfn_dist.combiners.online import VARIANTS, OnlineSBFN, fit_online_grid
import torch

from sbfn_dist.learners.training import MLPConfig, StreamRecorder, train_mlp as train_members

from benchmarks.common import cli, compare, median, regression_data, seconds, table, threads

M, WIDTH, N_FEATURES, EPSILON = 20, 50, 11, 0.35
AIR_QUALITY_STEPS = round(8991 * 9 / 10)         # one epoch of a 10-fold training split
LAMBDA2 = (0.0, 3.0, 5.0, 7.0)


def run(quick: bool = False) -> dict:
    n, repeats = (300, 1) if quick else (AIR_QUALITY_STEPS, 5)
    X, y = regression_data(n, N_FEATURES, seed=1)
    cfg = MLPConfig(n_members=M, width=WIDTH, epsilon=EPSILON, batch_size=1, epochs=1)
    streams = []
    with threads(1):
        train_members(X[:20], y[:20], cfg)                                # warm-up
        def record():
            streams.append(StreamRecorder(n, M, torch.float32))
            train_members(X, y, cfg, observers=[streams[-1]])
        t = compare({"record": record, "plain": lambda: train_members(X, y, cfg)}, repeats)
        z, stream_y = streams[-1].arrays()
        models = lambda: [OnlineSBFN(v, lam) for v in VARIANTS for lam in LAMBDA2]
        fit_online_grid(z[:50], stream_y[:50], 1, models())   # warm-up
        replay = [seconds(lambda: fit_online_grid(z, stream_y, 1, models()))
                  for _ in range(repeats)]
    sps = {k: n / median(v) for k, v in t.items()}
    epoch_s = AIR_QUALITY_STEPS / sps["record"]
    res = {"steps": n, "sps_record": sps["record"], "sps_plain": sps["plain"],
           "epoch_s": epoch_s, "replay_s": median(replay) * AIR_QUALITY_STEPS / n,
           "replay_fraction": median(replay) / median(t["record"])}
    table(f"Online training, b = 1, M = {M}, kappa = {WIDTH}, p = {N_FEATURES}, 1 thread "
          f"({n} steps per run, median of {repeats})",
          ["quantity", "value"],
          [["steps/s, stream recorded", f"{res['sps_record']:,.0f}"],
           ["steps/s, no observer", f"{res['sps_plain']:,.0f}"],
           [f"Air Quality epoch ({AIR_QUALITY_STEPS} steps), s", f"{epoch_s:.2f}"],
           [f"G1/G2/G3 x {len(LAMBDA2)} lambda2 replay of that epoch, s", f"{res['replay_s']:.3f}"],
           ["replay / training time", f"{res['replay_fraction']:.1%}"]])
    print(f"RESULT online: {res['sps_record']:,.0f} steps/s, Air Quality epoch {epoch_s:.2f} s, "
          f"G1/G2/G3 replay {res['replay_fraction']:.1%} of training time")
    return res


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
