"""Image classification data for the deep-ensemble experiments (paper, "Multiple Hypothesis Deep
Ensembles"): loading, repeated stratified holdout splits, and device-resident batches.

Where the images come from, for ``mnist``, ``fashion_mnist`` and ``cifar10`` (first hit wins):

1. ``<name>/<name>.npz`` (keys x_train, y_train, x_test, y_test), found like every other data file
   (``sources.find_optional_file``: the data dir, else ``$SBFN_DATA_DIR``, then the cache dir);
2. torchvision's own folder (``MNIST/raw``, ``FashionMNIST/raw``, ``cifar-10-batches-py``) in the
   data dir, then in the cache dir, read by torchvision itself;
3. a torchvision download into the cache dir (fails fast offline, with a DataError naming the fixes).

``digits`` is scikit-learn's bundled 8x8 set: no files, no network (demo and fast tests).
Your own images, ``npz:PATH`` and ``folder:PATH``, are read by ``image_files.py``.
The official train and test images are pooled (train first) because the paper scores on
repeated holdouts of the pool, not on the official test set.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import io
import math
import pathlib
import socket
import urllib.parse
from dataclasses import dataclass

import numpy as np
import torch

from sbfn_dist import catalog
from sbfn_dist.data.checks import require_images_per_class
from sbfn_dist.data.image_data import ImageData, brief, frozen
from sbfn_dist.data.image_files import load_user_images
from sbfn_dist.data.sources import (DOWNLOAD_TIMEOUT_S, _explicit_dir, cache_dir, find_optional_file,
                                    resolve_data_file)
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.runtime import fold_seed

IMAGE_DATASETS = catalog.names("image")
NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
AUGMENT_CHUNK = 8192   # images padded at once when an epoch is augmented (bounds the copy)
PROBE_TIMEOUT_S = 5.0  # connectivity check before a torchvision download (whose urlopen has no timeout)

DIGIT_CLASSES = tuple(str(d) for d in range(10))
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                   "Bag", "Ankle boot")
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


@dataclass(frozen=True)
class _Spec:
    npz: str | None             # relative path of the npz (None: bundled with scikit-learn)
    torchvision: str | None     # class name in torchvision.datasets
    layout: str                 # the folder below a root that torchvision reads
    shape: tuple[int, int, int]  # (C, H, W)
    classes: tuple[str, ...]
    crop_pad: int               # random-crop padding when augmenting (pixels)
    flip: bool                  # whether a horizontal flip keeps the label (not for digits/letters)


SPECS = {
    "mnist": _Spec("mnist/mnist.npz", "MNIST", "MNIST/raw", (1, 28, 28), DIGIT_CLASSES, 2, False),
    "fashion_mnist": _Spec("fashion_mnist/fashion_mnist.npz", "FashionMNIST", "FashionMNIST/raw",
                           (1, 28, 28), FASHION_CLASSES, 2, False),
    # The standard CIFAR recipe: 4-pixel padding, random 32x32 crop, random horizontal flip
    # (whether it is on by default: sbfn_dist.catalog).
    "cifar10": _Spec("cifar10/cifar10.npz", "CIFAR10", "cifar-10-batches-py", (3, 32, 32), CIFAR10_CLASSES,
                     4, True),
    "digits": _Spec(None, None, "", (1, 8, 8), DIGIT_CLASSES, 1, False),
}


@dataclass(frozen=True)
class ImageSplit:
    train: np.ndarray   # sorted row indices that train the members (and the on-the-fly s-BFN, Algorithm 2)
    val: np.ndarray     # held-out rows for stacking combiners and temperature tuning (may be empty)
    test: np.ndarray    # rows every combiner is scored on


def _spec(name: str) -> _Spec:
    if name not in SPECS:
        raise DataError(f"unknown image data set '{name}': use one of {', '.join(IMAGE_DATASETS)}, "
                        f"{catalog.own_data('image')}")
    return SPECS[name]


# ---------------------------------------------------------------- loading

def load_images(name: str, data_dir: str | None = None,
                image_size: int | None = None) -> ImageData:
    """The pooled images of ``name`` (see IMAGE_DATASETS, or npz:PATH / folder:PATH, whose
    images ``image_size`` resizes); cached per process and source file."""
    if catalog.prefix_of(name):
        return load_user_images(catalog.absolute(name), image_size)
    spec = _spec(name)
    if spec.npz is None:
        return _load_digits()
    roots = _search_roots(name, spec, data_dir)
    if npz := find_optional_file(name, spec.npz, data_dir):
        return _read_npz(name, str(npz.resolve()))
    for root in roots:
        if (root / spec.layout).is_dir():
            return _read_torchvision(name, str(root.resolve()))
    return _download(name, spec, roots)


def _search_roots(name: str, spec: _Spec, data_dir: str | None) -> list[pathlib.Path]:
    """The data dir (argument, else $SBFN_DATA_DIR) if any, then the cache dir."""
    explicit, _ = _explicit_dir(data_dir)
    if explicit is not None and not explicit.is_dir():
        resolve_data_file(name, spec.npz, data_dir)  # raises the shared "data dir does not exist" error
    return [d for d in (explicit, cache_dir()) if d is not None]


@functools.lru_cache(maxsize=1)
def _load_digits() -> ImageData:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = np.round(bunch.images * (255.0 / 16.0)).astype(np.uint8)[:, None]  # 0..16 -> 0..255
    n = len(x)
    return frozen(ImageData("digits", x, bunch.target.astype(np.int64), DIGIT_CLASSES, n,
                            f"scikit-learn load_digits: {n} images 8x8, 0..16 scaled to 0..255; no official split"))


@functools.lru_cache(maxsize=4)
def _read_npz(name: str, path: str) -> ImageData:
    with np.load(_npz_source(path)) as archive:
        missing = [k for k in NPZ_KEYS if k not in archive.files]
        if missing:
            raise DataError(f"{path} lacks the arrays {missing}: '{name}' needs an npz with keys "
                            f"{', '.join(NPZ_KEYS)}; replace it with the file described in docs/image-data.md")
        labels = [archive["y_train"], archive["y_test"]]
        # A generator, so that only one raw image array is alive next to the pooled one.
        return _assemble(name, labels, (archive[k] for k in ("x_train", "x_test")), path)


def _npz_source(path: str):
    # sources accepts "<file>.gz" wherever "<file>" is; a zip inside gzip must be unpacked to seek.
    return io.BytesIO(gzip.decompress(pathlib.Path(path).read_bytes())) if path.endswith(".gz") else path


@functools.lru_cache(maxsize=4)
def _read_torchvision(name: str, root: str) -> ImageData:
    import torchvision.datasets

    spec = SPECS[name]
    cls = getattr(torchvision.datasets, spec.torchvision)
    try:
        parts = [cls(root, train=train, download=False) for train in (True, False)]
    except (RuntimeError, OSError, ValueError) as exc:
        raise DataError(f"{root}/{spec.layout} looks like torchvision's {spec.torchvision} folder but torchvision "
                        f"cannot read it ({brief(exc)}). Fix: complete it (raw/ needs the four idx files "
                        f"uncompressed: gunzip the .gz ones; cifar-10-batches-py needs the original python "
                        f"batches), or remove it and provide {spec.npz}") from exc
    return _assemble(name, [np.asarray(p.targets) for p in parts], (np.asarray(p.data) for p in parts),
                     f"torchvision {spec.torchvision} folder {root}/{spec.layout}")


def _assemble(name: str, labels: list[np.ndarray], images, source: str) -> ImageData:
    """Pool [train, test] into one uint8 NCHW array, converting each part straight into place."""
    spec = SPECS[name]
    sizes = [len(y) for y in labels]
    x = np.empty((sum(sizes), *spec.shape), dtype=np.uint8)
    starts = np.cumsum([0] + sizes)
    for part, raw in enumerate(images):
        x[starts[part]:starts[part + 1]] = _as_nchw(np.asarray(raw), spec, sizes[part], source)
    y = np.concatenate(labels).astype(np.int64)
    if y.min() < 0 or y.max() >= len(spec.classes):
        raise DataError(f"{source} has labels outside 0..{len(spec.classes) - 1}: it is not the original "
                        f"'{name}' data; replace it")
    notes = f"{name}: {sizes[0]} official train + {sizes[1]} official test images, pooled; from {source}"
    return frozen(ImageData(name, x, y, spec.classes, sizes[0], notes))


def _as_nchw(raw: np.ndarray, spec: _Spec, n: int, source: str) -> np.ndarray:
    """A view of ``raw`` in NCHW order (the copy happens once, on assignment into the pool)."""
    c, h, w = spec.shape
    if raw.dtype == np.uint8 and raw.shape == (n, h, w) and c == 1:
        return raw[:, None]
    if raw.dtype == np.uint8 and raw.shape == (n, h, w, c):
        return raw.transpose(0, 3, 1, 2)  # HWC (as stored by CIFAR) -> CHW
    raise DataError(f"{source} holds images {raw.dtype} {raw.shape} for {n} labels, expected uint8 "
                    f"({n}, {h}, {w}{'' if c == 1 else f', {c}'}): it is not the original data; replace it")


def _download(name: str, spec: _Spec, roots: list[pathlib.Path]) -> ImageData:
    """torchvision download into the cache dir; a DataError naming both fixes when that fails."""
    import torchvision.datasets

    cls = getattr(torchvision.datasets, spec.torchvision)
    root = cache_dir()
    try:
        _probe(getattr(cls, "mirrors", None) or [cls.url])
        with _socket_timeout(DOWNLOAD_TIMEOUT_S):
            for train in (True, False):
                cls(root, train=train, download=True)
    except (OSError, RuntimeError, ValueError) as exc:  # URLError and socket errors are OSErrors
        searched = ", ".join(str(r) for r in roots)
        raise DataError(
            f"image data set '{name}' was not found in {searched} and could not be downloaded ({brief(exc)}). "
            f"Fix: put {spec.npz} (arrays {', '.join(NPZ_KEYS)}) or torchvision's {spec.layout}/ folder in DIR "
            f"and pass --data-dir DIR (or set SBFN_DATA_DIR=DIR), or run once with network access to "
            f"download it into the cache dir {root} (set SBFN_CACHE_DIR to move it)"
            f"{catalog.offline_instead(name)}") from exc
    return _read_torchvision(name, str(root.resolve()))


def _probe(urls: list[str]) -> None:
    """Raise OSError unless one download host accepts a connection within PROBE_TIMEOUT_S."""
    errors = []
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection((parts.hostname, port), timeout=PROBE_TIMEOUT_S).close()
            return
        except OSError as exc:
            errors.append(f"{parts.hostname}:{port}: {exc}")
    raise OSError("no download host reachable (" + "; ".join(errors) + ")")


@contextlib.contextmanager
def _socket_timeout(seconds: float):
    # torchvision opens its URLs without a timeout, so a stalled server would hang the run.
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(old)


# ---------------------------------------------------------------- repeated stratified holdout

PARTS = ("test", "val", "train")  # drawing order: test rows do not depend on n_val or n_train


def default_n_val(n_val: int | None, needed: bool, data: ImageData) -> int:
    """10% of the official training images unless n_val is given, and never fewer than hold
    every class (_every_class); 0 when no combiner needs it."""
    if n_val is not None:
        return n_val
    return max(data.n_official_train // 10, _every_class(np.bincount(data.y, minlength=len(data.classes)))) if needed else 0


def default_n_test(data: ImageData) -> int:
    """The official test-set size; 20% (rounded up) for a data set without an official split;
    never fewer than hold every class (_every_class)."""
    n = len(data.y)
    share = n - data.n_official_train if data.n_official_train < n else math.ceil(0.2 * n)
    return max(share, _every_class(np.bincount(data.y, minlength=len(data.classes))))


def smallest_part(data: ImageData) -> int:
    """The fewest images a stratified part of `data` can hold with an image of every class
    (_every_class): what a quick trial of it tests on (sweeps/engine/run/estimate.py)."""
    return _every_class(np.bincount(data.y, minlength=len(data.classes)))


def _every_class(counts: np.ndarray) -> int:
    """The smallest part whose stratified share holds every class (`counts`: images per class):
    the rarest class's share of it is a whole image. A default below it failed on a small set
    (18 images of 3 classes: "n_val=1 leaves class 'b' without an image", a setting the user
    never set: issue 32)."""
    return math.ceil(counts.sum() / max(1, counts.min()))


def holdout_splits(data: ImageData, n_splits: int = 5, n_train: int | None = None, n_val: int = 0,
                   n_test: int | None = None, seed: int = 0) -> list[ImageSplit]:
    """``n_splits`` stratified random partitions of the pooled images into disjoint train/val/test.

    Split s draws with ``numpy.random.default_rng(fold_seed(seed, s))``. Each class is permuted
    and cut into test, val, train (in that order), so the test rows of a split depend only on
    (seed, s, n_test) and a smaller n_train takes a subset of a larger one's training rows.
    """
    if n_splits < 1:
        raise ConfigError("folds", n_splits, "use at least 1 holdout split (the paper uses 5)")
    by_class = [np.flatnonzero(data.y == c) for c in range(len(data.classes))]
    counts = np.array([len(rows) for rows in by_class])
    # first: too few images of a class, not the part sizes that then cannot fit, is the problem
    require_images_per_class(counts, data.classes, 2 + (n_val > 0), f"data set '{data.name}'")
    sizes = _part_sizes(data, n_train, n_val, n_test)
    quotas = _stratified_quotas(counts, sizes, data.classes)
    return [_draw_split(by_class, quotas, np.random.default_rng(fold_seed(seed, s))) for s in range(n_splits)]


def _part_sizes(data: ImageData, n_train, n_val, n_test) -> dict[str, int]:
    n = len(data.y)
    n_test = default_n_test(data) if n_test is None else n_test
    n_train = n - n_val - n_test if n_train is None else n_train
    sizes = {"test": n_test, "val": n_val, "train": n_train}
    for part, size in sizes.items():
        if size < (0 if part == "val" else 1):
            raise ConfigError(f"n_{part}", size, f"use {'>= 0' if part == 'val' else '>= 1'} images")
    if sum(sizes.values()) > n:
        raise DataError(f"'{data.name}' has {n} images, fewer than the {n_train} train + {n_val} val + {n_test} "
                        f"test asked for: lower n_train, n_val or n_test (n_train unset takes the rest)")
    return sizes


def _stratified_quotas(counts: np.ndarray, sizes: dict[str, int], classes) -> dict[str, np.ndarray]:
    """Per-class image counts of each part, proportional to the pool's class counts."""
    room, quotas = counts.copy(), {}
    for part in PARTS:
        quotas[part] = _largest_remainder(counts, sizes[part], room)
        room -= quotas[part]
        if sizes[part] > 0 and (quotas[part] == 0).any():
            empty = classes[int(np.argmin(quotas[part]))]
            raise DataError(f"n_{part}={sizes[part]} leaves class '{empty}' without an image (parts are stratified "
                            f"by the pool's class shares, and each needs every class): use n_{part} >= "
                            f"{_every_class(counts)}" + (" or n_val=0" if part == "val" else ""))
    return quotas


def _largest_remainder(counts: np.ndarray, size: int, room: np.ndarray) -> np.ndarray:
    """Integer shares of ``size`` proportional to ``counts``, at most ``room`` per class."""
    exact = size * counts / counts.sum()
    quota = np.minimum(np.floor(exact).astype(np.int64), room)
    while quota.sum() < size:  # hand out the rest, largest shortfall first, where there is room
        for c in np.argsort(quota - exact, kind="stable"):
            if quota.sum() < size and quota[c] < room[c]:
                quota[c] += 1
    return quota


def _draw_split(by_class: list[np.ndarray], quotas: dict[str, np.ndarray], rng) -> ImageSplit:
    parts = {part: [] for part in PARTS}
    for c, rows in enumerate(by_class):
        cuts = np.cumsum([quotas[part][c] for part in PARTS])
        for part, chunk in zip(PARTS, np.split(rng.permutation(rows), cuts)):
            parts[part].append(chunk)
    return ImageSplit(**{part: np.sort(np.concatenate(chunks)) for part, chunks in parts.items()})


# ---------------------------------------------------------------- device-resident batches

def device_images(data: ImageData, split: ImageSplit, device: str, augment: bool | None):
    """The split's DeviceImages, kept per process: a Ray worker reused for the next trial of the
    same split (Tune's reuse_actors) finds its images already decoded and on the GPU and starts
    training at once. At most DEVICE_CACHE entries (a worker may alternate between splits)."""
    digest = hashlib.sha1(b"".join(np.ascontiguousarray(r).tobytes()
                                   for r in (split.train, split.val, split.test))).hexdigest()
    # id(data.x): the pooled array itself is cached per process and source file (load_images)
    key = (data.name, id(data.x), digest, str(device), augment)
    if key not in _DEVICE_CACHE:
        while len(_DEVICE_CACHE) >= DEVICE_CACHE:
            _DEVICE_CACHE.pop(next(iter(_DEVICE_CACHE)))          # the oldest goes first
        _DEVICE_CACHE[key] = (data.x, DeviceImages(data, split, device=device, augment=augment))
    return _DEVICE_CACHE[key][1]


DEVICE_CACHE = 2
_DEVICE_CACHE: dict = {}    # key -> (the pooled array, kept alive so its id stays its own; images)


def crop_and_flip(data: ImageData) -> tuple[int, bool]:
    """The augmentation's crop padding and whether it flips: a built-in set's own; for your
    images an eighth of the side (CIFAR's 4 pixels of 32) and flips (augment=True asks for both)."""
    if data.name in SPECS:
        return SPECS[data.name].crop_pad, SPECS[data.name].flip
    return max(1, min(data.x.shape[2:]) // 8), True


def channel_moments(train_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel pixel mean and std (C,) of training images (N, C, H, W); a constant channel
    gets std 1, so it stays finite. The one normalisation of images: trials and estimators."""
    var, mean = torch.var_mean(train_x, dim=(0, 2, 3), correction=0)
    return mean, torch.where(var > 0, var.sqrt(), torch.ones_like(var))


class DeviceImages:
    """Images on the device as one float tensor, normalised with the training part's per-channel mean/std."""

    def __init__(self, data: ImageData, split: ImageSplit, device: str = "cpu", augment: bool | None = None,
                 dtype=torch.float32):
        self.crop_pad, self.flip = crop_and_flip(data)
        self.classes = data.classes
        self.device = torch.device(device)
        self.augment = catalog.lookup(data.name).augment if augment is None else bool(augment)
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        train_x = self._pixels(data.x, split.train, dtype)
        self.mean, self.std = channel_moments(train_x)   # train rows only: no test leak
        self.train_x = self._normalise(train_x)
        self.val_x = self._normalise(self._pixels(data.x, split.val, dtype))
        self.test_x = self._normalise(self._pixels(data.x, split.test, dtype))
        self.train_y, self.val_y, self.test_y = (torch.from_numpy(data.y[rows]).to(self.device)
                                                 for rows in (split.train, split.val, split.test))
        # Raw black in normalised units: the crop pads with it, as the pixel-space recipe does.
        self.pad_value = -self.mean / self.std

    def _pixels(self, x: np.ndarray, rows: np.ndarray, dtype) -> torch.Tensor:
        # uint8 to the device first (4x less to move), then widen there.
        return torch.from_numpy(x[rows]).to(self.device).to(dtype)

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        return x.sub_(self.mean.view(1, -1, 1, 1)).div_(self.std.view(1, -1, 1, 1))

    def batches(self, batch_size: int, generator: torch.Generator, augment: bool = True):
        """One epoch of (x, y) training batches in an order drawn from ``generator``: views of
        `epoch` (whose docstring says what is drawn and when)."""
        if batch_size < 1:
            raise ConfigError("batch_size", batch_size, "use a positive batch size")
        x, y = self.epoch(generator, augment)
        for s in range(0, len(y), batch_size):
            yield x[s:s + batch_size], y[s:s + batch_size]

    def epoch(self, generator: torch.Generator, augment: bool = True):
        """One epoch's training images and labels in visit order, augmented, as two tensors.

        Every random draw of the epoch is made at once on ``generator`` (the order first, so it
        does not depend on augmentation; then each image's crop offsets and flip), and moves to
        the device in one transfer: a per-batch draw on a CPU generator made the host wait for
        the GPU at every batch. ``augment=False`` switches augmentation off for this epoch;
        ``True`` applies it only when the instance has it on (the data set's default unless the
        constructor said otherwise).
        """
        n = len(self.train_y)
        order = torch.randperm(n, generator=generator, device=generator.device)
        if not (augment and self.augment):
            rows = order.to(self.device)
            return self.train_x[rows], self.train_y[rows]
        p = self.crop_pad
        offsets = torch.randint(0, 2 * p + 1, (2, n), generator=generator, device=generator.device)
        flip = torch.rand(n, generator=generator, device=generator.device) < 0.5
        if not self.flip:
            flip.zero_()
        drawn = torch.cat([order[None], offsets, flip[None].long()]).to(self.device)
        rows, offsets, flip = drawn[0], drawn[1:3], drawn[3].bool()
        x = self.train_x[rows]
        for s in range(0, n, AUGMENT_CHUNK):       # bounded memory for the padded copies
            x[s:s + AUGMENT_CHUNK] = self.random_crop_flip(x[s:s + AUGMENT_CHUNK],
                                                          offsets[:, s:s + AUGMENT_CHUNK],
                                                          flip[s:s + AUGMENT_CHUNK])
        return x, self.train_y[rows]

    def random_crop_flip(self, x: torch.Tensor, offsets: torch.Tensor,
                         flip: torch.Tensor) -> torch.Tensor:
        """Per image: pad by crop_pad, crop back at `offsets` (2, n) (row, column), flip
        left-right where `flip` (n,). One gather for the whole batch, no per-image Python."""
        n, c, h, w = x.shape
        p = self.crop_pad
        padded = self.pad_value.view(1, c, 1, 1).repeat(n, 1, h + 2 * p, w + 2 * p)
        padded[:, :, p:p + h, p:p + w] = x
        rows = offsets[0, :, None] + torch.arange(h, device=x.device)
        cols = offsets[1, :, None] + torch.arange(w, device=x.device)
        cols = torch.where(flip[:, None], cols.flip(1), cols)  # reading columns backwards flips
        # One gather over the flattened padded plane (3x faster than 4-D advanced indexing on CPU).
        flat = (rows[:, :, None] * (w + 2 * p) + cols[:, None, :]).view(n, 1, h * w).expand(n, c, h * w)
        return padded.flatten(2).gather(2, flat).view(n, c, h, w)
