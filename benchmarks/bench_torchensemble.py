"""torchensemble's VotingClassifier vs our vectorised member stack: M SimpleCNNs, same epochs.

Both sides train M = 5 SimpleCNNs with Adam (lr 1e-3), batch 64, for the same epochs on the
same normalised training images, and are scored on the same test images. Ours: one member stack
(`sbfn_dist.learners.training.train_cnn`: epsilon-WTA cross-entropy of Algorithm 2, the on-the-fly
s-BFN head stepping on every batch), batches sliced from device tensors. Theirs: `VotingClassifier`,
M independent copies trained one after another, each epoch over a torch DataLoader. Our side runs
at epsilon = 0.5 (the method) and at epsilon = (M-1)/M, where every delta is 1/M: independent
members up to a loss scale Adam ignores, i.e. what VotingClassifier trains. Throughput =
training images per second (one image = all M members seeing it once). Repeats are
interleaved (A B C, then C B A, ...); accuracies are the mean over repeats (seeds 0, 1, ...).
"""

import importlib.util
import itertools
import statistics

import torch
from torch.utils.data import DataLoader, TensorDataset

from benchmarks.common import cli, compare, median, paired_ratio, table, threads
from sbfn_dist.combiners.classification import SBFNClassifierHead, probability_average
from sbfn_dist.data.images import DeviceImages, holdout_splits, load_images
from sbfn_dist.data.sources import find_optional_file
from sbfn_dist.learners.training import CNNConfig, train_cnn
from sbfn_dist.learners.cnn import SimpleCNN
from sbfn_dist.learners.registry import build_ensemble

M, BATCH, LR, N_CLASSES = 5, 64, 1e-3, 10
THREADS = 1     # as a Ray trial gets one CPU; 2 threads on the shared 2 cores gave 3x spreads


def bench_images(quick: bool):
    """Digits (bundled) for --quick; else an MNIST subset when ../shared/data has it."""
    if quick or find_optional_file("mnist", "mnist/mnist.npz", None) is None:
        data, sizes = load_images("digits"), dict(n_test=300)
    else:
        data, sizes = load_images("mnist"), dict(n_train=1000, n_test=1000)
    split = holdout_splits(data, n_splits=1, seed=0, **sizes)[0]
    return data.name, DeviceImages(data, split, augment=False)


def accuracy(probs: torch.Tensor, y: torch.Tensor) -> float:
    return float((probs.argmax(1) == y).float().mean())


def ours(images, epochs: int, epsilon: float, scores: list):
    seeds = itertools.count()

    def run():
        seed = next(seeds)
        cfg = CNNConfig(ensemble="cnn", n_members=M, epsilon=epsilon, epochs=epochs,
                        batch_size=BATCH, optimizer="adam", lr=LR, seed=seed)
        head = SBFNClassifierHead(M, N_CLASSES, 4 * M, seed=seed)
        trained = train_cnn(images, N_CLASSES, cfg, [head])
        probs = trained.predict(images.test_x)
        scores.append({"prob_mean": accuracy(probability_average(probs), images.test_y),
                       "sbfn": accuracy(head.predict_proba_eval(probs), images.test_y)})
    return run


def theirs(images, epochs: int, scores: list):
    from torchensemble import VotingClassifier      # optional: the `bench` extra
    seeds = itertools.count()

    def run():
        torch.manual_seed(next(seeds))
        model = VotingClassifier(estimator=SimpleCNN, n_estimators=M, cuda=False,
                                 estimator_args={"in_channels": images.train_x.shape[1],
                                                 "n_classes": N_CLASSES})
        model.set_optimizer("Adam", lr=LR)
        loader = DataLoader(TensorDataset(images.train_x, images.train_y), batch_size=BATCH,
                            shuffle=True)
        model.fit(loader, epochs=epochs, log_interval=10**9, save_model=False)
        model.eval()
        with torch.no_grad():               # soft voting = probability averaging
            scores.append({"prob_mean": accuracy(model(images.test_x), images.test_y)})
    return run


def warm_up(images) -> None:
    """First calls pay one-off costs (Adam's first construction imports torch._dynamo, ~4 s):
    pay them before timing so they hit neither side."""
    x, y = images.train_x[:BATCH], images.train_y[:BATCH]
    for net in (SimpleCNN(x.shape[1], N_CLASSES), build_ensemble("cnn", M, x.shape[1], N_CLASSES, 0)):
        opt = torch.optim.Adam(net.parameters(), lr=LR)
        logits = net(x).reshape(len(x), -1, N_CLASSES)        # (B, C) or (B, M, C)
        torch.nn.functional.cross_entropy(logits.mean(1), y).backward()
        opt.step()


def run(quick: bool = False) -> dict:
    if importlib.util.find_spec("torchensemble") is None:
        print("\nbench_torchensemble skipped: torchensemble is not installed "
              "(pip install -c constraints.txt -e '.[bench]')")
        return {}
    repeats, epochs = (1, 2) if quick else (3, 2)   # on-the-fly s-BFN needs 2 epochs
    name, images = bench_images(quick)
    eps_indep = (M - 1) / M
    scores = {"ours eps=0.5": [], f"ours eps={eps_indep:g}": [], "torchensemble": []}
    with threads(THREADS):
        warm_up(images)
        sides = {"ours eps=0.5": ours(images, epochs, 0.5, scores["ours eps=0.5"]),
                 f"ours eps={eps_indep:g}": ours(images, epochs, eps_indep,
                                                 scores[f"ours eps={eps_indep:g}"]),
                 "torchensemble": theirs(images, epochs, scores["torchensemble"])}
        t = compare(sides, repeats)
    n_images = len(images.train_y) * epochs
    rows = []
    for side, times in t.items():
        acc = {k: statistics.mean(s[k] for s in scores[side]) for k in scores[side][0]}
        rows.append([side, f"{n_images / median(times):,.0f}",
                     f"{paired_ratio(t['torchensemble'], times):.2f}x",
                     f"{acc['prob_mean']:.3f}", f"{acc['sbfn']:.3f}" if "sbfn" in acc else "-"])
    table(f"M = {M} SimpleCNNs on {name} ({len(images.train_y)} train / {len(images.test_y)} test "
          f"images, {epochs} epochs, batch {BATCH}, Adam, {THREADS} thread(s), median of {repeats})",
          ["side", "train img/s", "speed vs torchensemble", "acc prob-mean", "acc s-BFN"], rows)
    return {"times": t, "scores": scores}


if __name__ == "__main__":
    run(cli(__doc__.splitlines()[0]).quick)
