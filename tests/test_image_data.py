"""Specification of sbfn_dist.data.images: image data sets, stratified holdout splits, device batches."""

from __future__ import annotations

import gzip
import os
import pathlib
import struct
import time

import numpy as np
import pytest
import torch
import torchvision.datasets
from sklearn.datasets import load_digits

from sbfn_dist.data.images import (IMAGE_DATASETS, PROBE_TIMEOUT_S, SPECS, DeviceImages, ImageSplit,
                                   holdout_splits, load_images)
from sbfn_dist.errors import ConfigError, DataError

REPO = pathlib.Path(__file__).resolve().parents[1]
# Read before any test's monkeypatching touches the environment.
REAL_DATA_DIR = pathlib.Path(os.environ.get("SBFN_DATA_DIR") or REPO.parent / "shared" / "data")
DEAD_URL = "http://127.0.0.1:9/"  # discard port: nothing listens, so the connection is refused at once


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    """Every test: an empty private cache, no SBFN_DATA_DIR, and every torchvision download host dead."""
    monkeypatch.setenv("SBFN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("SBFN_DATA_DIR", raising=False)
    for cls in (torchvision.datasets.MNIST, torchvision.datasets.FashionMNIST):
        monkeypatch.setattr(cls, "mirrors", [DEAD_URL])
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "url", DEAD_URL + "cifar-10-python.tar.gz")


def _real(name: str):
    # load_images caches per process, so every test shares one load of each file.
    if not (REAL_DATA_DIR / SPECS[name].npz).is_file():
        pytest.skip(f"{SPECS[name].npz} not found under {REAL_DATA_DIR} (set SBFN_DATA_DIR to the shared data dir)")
    return load_images(name, str(REAL_DATA_DIR))


@pytest.fixture(scope="module")
def cifar():
    return _real("cifar10")


def _write_idx(path: pathlib.Path, array: np.ndarray, compress: bool = False) -> None:
    """The IDX format of the original MNIST files: big-endian magic (0x08 = uint8, ndim), dims, bytes."""
    header = struct.pack(">I", 0x800 + array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    payload = header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()
    if compress:
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)


def _write_torchvision_raw(raw: pathlib.Path, data, n_train: int, n_test: int, compress: bool = False) -> None:
    raw.mkdir(parents=True)
    test = slice(data.n_official_train, data.n_official_train + n_test)
    for prefix, rows in (("train", slice(0, n_train)), ("t10k", test)):
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", data.x[rows, 0], compress)
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", data.y[rows], compress)


# ---------------------------------------------------------------- loading

def test_digits_loads_offline_without_files():
    d = load_images("digits")
    bunch = load_digits()
    assert d.x.shape == (1797, 1, 8, 8) and d.x.dtype == np.uint8 and d.y.dtype == np.int64
    assert np.array_equal(d.x[:, 0], np.round(bunch.images * 255 / 16).astype(np.uint8))
    assert (d.x.min(), d.x.max()) == (0, 255)
    assert np.array_equal(d.y, bunch.target) and d.classes == tuple("0123456789")
    assert d.n_official_train == 1797
    assert not d.x.flags.writeable and not d.y.flags.writeable  # cached and shared: read-only


def test_mnist_pools_official_train_then_test():
    m = _real("mnist")
    assert m.x.shape == (70000, 1, 28, 28) and m.x.dtype == np.uint8 and m.n_official_train == 60000
    assert list(m.y[:10]) == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]           # SOURCE.md: first train labels
    assert list(m.y[60000:60010]) == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]   # first test labels
    assert list(np.bincount(m.y[:60000])) == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]


def test_fashion_mnist_loads_with_class_names():
    f = _real("fashion_mnist")
    assert f.x.shape == (70000, 1, 28, 28) and f.n_official_train == 60000
    assert list(f.y[:10]) == [9, 0, 0, 3, 0, 2, 7, 2, 5, 5] and f.classes[9] == "Ankle boot"


def test_cifar10_is_chw_and_matches_the_npz(cifar):
    assert cifar.x.shape == (60000, 3, 32, 32) and cifar.x.dtype == np.uint8 and cifar.n_official_train == 50000
    assert list(cifar.y[:10]) == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3] and cifar.classes[0] == "airplane"
    assert list(cifar.x[0, 0, 0, :3]) == [59, 43, 50]  # SOURCE.md: train image 0, red, row 0
    with np.load(REAL_DATA_DIR / SPECS["cifar10"].npz) as raw:
        assert np.array_equal(cifar.x[0], raw["x_train"][0].transpose(2, 0, 1))
        assert np.array_equal(cifar.x[50000:], raw["x_test"].transpose(0, 3, 1, 2))
    assert load_images("cifar10", str(REAL_DATA_DIR)) is cifar  # loaded once per process


def test_torchvision_mnist_folder_is_read(tmp_path):
    m = _real("mnist")
    _write_torchvision_raw(tmp_path / "MNIST" / "raw", m, n_train=30, n_test=20)
    d = load_images("mnist", str(tmp_path))
    assert d.x.shape == (50, 1, 28, 28) and d.n_official_train == 30
    assert np.array_equal(d.x, np.concatenate([m.x[:30], m.x[60000:60020]]))
    assert np.array_equal(d.y, np.concatenate([m.y[:30], m.y[60000:60020]]))
    assert "torchvision" in d.notes


def test_torchvision_fashion_folder_is_found_through_sbfn_data_dir(tmp_path, monkeypatch):
    f = _real("fashion_mnist")
    _write_torchvision_raw(tmp_path / "FashionMNIST" / "raw", f, n_train=12, n_test=8)
    monkeypatch.setenv("SBFN_DATA_DIR", str(tmp_path))
    d = load_images("fashion_mnist")
    assert d.x.shape == (20, 1, 28, 28) and np.array_equal(d.y[12:], f.y[60000:60008])


def test_compressed_only_torchvision_folder_asks_for_gunzip(tmp_path):
    _write_torchvision_raw(tmp_path / "MNIST" / "raw", load_images("digits"), n_train=0, n_test=0, compress=True)
    with pytest.raises(DataError, match="gunzip"):
        load_images("mnist", str(tmp_path))


@pytest.mark.parametrize("name", ["mnist", "fashion_mnist", "cifar10"])
def test_missing_images_name_both_fixes_quickly(name, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    start = time.perf_counter()
    with pytest.raises(DataError) as info:
        load_images(name, str(empty))
    message = str(info.value)
    for needed in ("--data-dir DIR", "SBFN_DATA_DIR=DIR", SPECS[name].npz, SPECS[name].layout,
                   "network access", str(tmp_path / "cache")):
        assert needed in message
    assert time.perf_counter() - start < PROBE_TIMEOUT_S
    assert not (tmp_path / "cache").exists()  # nothing half-downloaded was left behind


def test_bad_names_dirs_and_files_are_data_errors(tmp_path):
    with pytest.raises(DataError, match=", ".join(IMAGE_DATASETS)):
        load_images("svhn")
    with pytest.raises(DataError, match="does not exist"):
        load_images("mnist", str(tmp_path / "nowhere"))
    (tmp_path / "mnist").mkdir()
    np.savez(tmp_path / "mnist" / "mnist.npz", images=np.zeros((2, 28, 28), np.uint8))
    with pytest.raises(DataError, match="x_train"):
        load_images("mnist", str(tmp_path))
    (tmp_path / "cifar10").mkdir()
    small = {"x_train": np.zeros((2, 28, 28), np.uint8), "y_train": np.zeros(2, np.uint8),
             "x_test": np.zeros((1, 28, 28), np.uint8), "y_test": np.zeros(1, np.uint8)}
    np.savez(tmp_path / "cifar10" / "cifar10.npz", **small)
    with pytest.raises(DataError, match=r"expected uint8 \(2, 32, 32, 3\)"):
        load_images("cifar10", str(tmp_path))


# ---------------------------------------------------------------- splits

def _check_partition(split: ImageSplit, n_pool: int, sizes: tuple[int, int, int]) -> None:
    parts = (split.train, split.val, split.test)
    assert tuple(len(p) for p in parts) == sizes
    together = np.concatenate(parts)
    assert len(np.unique(together)) == len(together) and together.max() < n_pool  # disjoint, in range


def test_default_splits_hold_out_the_official_test_size():
    digits = load_images("digits")
    splits = holdout_splits(digits)
    assert len(splits) == 5  # the paper's n = 5 holdout test splits
    for split in splits:
        _check_partition(split, 1797, (1437, 0, 360))  # no official split: 20% test
    m = _real("mnist")
    _check_partition(holdout_splits(m, n_splits=1)[0], 70000, (60000, 0, 10000))


def test_splits_are_disjoint_sized_and_stratified():
    d = load_images("digits")
    pool = np.bincount(d.y)
    for split in holdout_splits(d, n_splits=3, n_train=500, n_val=100, n_test=200, seed=1):
        _check_partition(split, len(d.y), (500, 100, 200))
        for part in (split.train, split.val, split.test):
            counts = np.bincount(d.y[part], minlength=10)
            assert np.all(np.abs(counts - len(part) * pool / pool.sum()) <= 1)


def test_splits_are_seeded_and_differ_between_repeats():
    d = load_images("digits")
    first, again = holdout_splits(d, n_val=100, seed=3), holdout_splits(d, n_val=100, seed=3)
    for a, b in zip(first, again):
        assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("train", "val", "test"))
    assert not np.array_equal(first[0].test, first[1].test)
    assert not np.array_equal(first[0].test, holdout_splits(d, seed=4)[0].test)


def test_test_rows_do_not_depend_on_the_training_subset():
    d = load_images("digits")
    small = holdout_splits(d, n_train=300, n_val=50, n_test=200, seed=2)
    large = holdout_splits(d, n_val=50, n_test=200, seed=2)
    for s, l in zip(small, large):
        assert np.array_equal(s.test, l.test) and np.array_equal(s.val, l.val)
        assert np.isin(s.train, l.train).all()


@pytest.mark.parametrize("kwargs, error", [
    (dict(n_train=1500, n_test=400), DataError),     # 1900 > 1797 images
    (dict(n_test=5), DataError),                       # cannot hold one image of each of 10 classes
    (dict(n_val=3), DataError),
    (dict(n_splits=0), ConfigError),
    (dict(n_train=0), ConfigError),
    (dict(n_val=-1), ConfigError),
])
def test_impossible_splits_raise_with_the_fix(kwargs, error):
    with pytest.raises(error, match="n_|fold"):
        holdout_splits(load_images("digits"), **kwargs)


# ---------------------------------------------------------------- device batches

def _row_keys(x: torch.Tensor) -> torch.Tensor:
    # A random projection identifies a row (up to exact duplicates, which match on both sides).
    weights = torch.linspace(0.5, 1.5, x[0].numel(), dtype=torch.float64)
    return (x.flatten(1).double() * weights).sum(1)


def test_normalisation_uses_training_rows_only():
    d = load_images("digits")
    # Train on the darker images, so pooled statistics would differ visibly from the train ones.
    by_brightness = np.argsort(d.x.mean(axis=(1, 2, 3)), kind="stable")
    train, val, test = np.sort(by_brightness[:900]), by_brightness[900:920], by_brightness[920:]
    images = DeviceImages(d, ImageSplit(train=train, val=val, test=test))
    raw = d.x[train].astype(np.float64)
    assert np.isclose(float(images.mean[0]), raw.mean()) and np.isclose(float(images.std[0]), raw.std())
    assert not np.isclose(float(images.mean[0]), d.x.mean(), atol=2.0)
    assert abs(float(images.train_x.mean())) < 1e-5 and abs(float(images.train_x.std(correction=0)) - 1) < 1e-5
    expected_test = (d.x[test].astype(np.float64) - raw.mean()) / raw.std()
    assert np.allclose(images.test_x.numpy(), expected_test, atol=1e-5)
    assert images.val_x.shape == (20, 1, 8, 8) and images.test_y.dtype == torch.int64
    assert torch.equal(images.train_y, torch.from_numpy(d.y[train]))


def test_batches_cover_every_training_row_once_per_epoch():
    d = load_images("digits")
    images = DeviceImages(d, holdout_splits(d)[0])
    batches = list(images.batches(64, torch.Generator().manual_seed(0)))
    assert [len(y) for _, y in batches] == [64] * 22 + [1437 - 22 * 64]
    seen_x, seen_y = torch.cat([x for x, _ in batches]), torch.cat([y for _, y in batches])
    # Sort both sides by a per-row key, then compare the rows themselves (duplicates match either way).
    seen, expected = torch.sort(_row_keys(seen_x)).indices, torch.sort(_row_keys(images.train_x)).indices
    assert torch.equal(seen_x[seen], images.train_x[expected])
    assert torch.equal(seen_y[seen], images.train_y[expected])


def test_batches_are_seeded():
    d = load_images("digits")
    images = DeviceImages(d, holdout_splits(d)[0], augment=True)
    run = lambda seed: [x for x, _ in images.batches(100, torch.Generator().manual_seed(seed))]  # noqa: E731
    assert all(torch.equal(a, b) for a, b in zip(run(7), run(7)))
    assert not torch.equal(run(7)[0], run(8)[0])


def test_mnist_is_not_augmented_by_default_but_can_be():
    m = _real("mnist")
    split = holdout_splits(m, n_splits=1, n_train=300, n_test=100)[0]
    plain = DeviceImages(m, split)
    assert not plain.augment
    on, off = (next(plain.batches(50, torch.Generator().manual_seed(1), augment=a))[0] for a in (True, False))
    assert torch.equal(on, off)
    shifted = next(DeviceImages(m, split, augment=True).batches(50, torch.Generator().manual_seed(1)))[0]
    assert shifted.shape == off.shape and not torch.equal(shifted, off)


def test_cifar_augmentation_is_a_padded_random_crop_and_flip(cifar):
    images = DeviceImages(cifar, holdout_splits(cifar, n_splits=1, n_train=300, n_test=100)[0])
    assert images.augment
    first = lambda augment: next(images.batches(32, torch.Generator().manual_seed(5), augment=augment))  # noqa: E731
    (aug, y_aug), (plain, y_plain) = first(True), first(False)
    assert torch.equal(y_aug, y_plain) and aug.shape == plain.shape == (32, 3, 32, 32)
    assert torch.equal(aug, first(True)[0]) and not torch.equal(aug, plain)
    # Independent reference: zero-pad the raw pixels by 4, renormalise, take every 32x32 window.
    mean, std = images.mean.view(1, 3, 1, 1), images.std.view(1, 3, 1, 1)
    padded = (torch.nn.functional.pad(plain * std + mean, (4, 4, 4, 4)) - mean) / std
    windows = padded.unfold(2, 32, 1).unfold(3, 32, 1)  # (32, 3, 9, 9, 32, 32)
    matches = [((windows - view[:, :, None, None]).abs().amax(dim=(1, 4, 5)) < 1e-4).flatten(1).any(1)
               for view in (aug, aug.flip(3))]
    assert torch.stack(matches).any(0).all()       # every image is a crop, flipped or not
    assert matches[0].any() and matches[1].any()   # both orientations occur
