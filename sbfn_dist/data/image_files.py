"""Your own images as a data set: ``npz:PATH`` (arrays) and ``folder:PATH`` (image files).

    npz:PATH     arrays ``x`` (N, H, W), (N, H, W, C) or (N, C, H, W), uint8 or any real type
                 (kept as float32), and labels ``y`` (N,): integers or strings. Or the built-in
                 files' four arrays x_train, y_train, x_test, y_test, pooled train first.
    folder:PATH  PATH/<class>/.../<image>, the layout torchvision's ImageFolder reads (its class
                 folders, its file extensions, links followed unless they would read an image
                 twice or under another class); decoded once with PIL as 8-bit gray (when every
                 image is gray) or RGB, or as float32 gray with their values where they have
                 more bits (16-bit, 32-bit, float), resized to image_size x image_size where
                 given, cached.

The decoded folder is cached on disk, keyed by what it was made from:

    <cache dir>/image_folders/<sha1 of the folder, image_size, every file's path, size, mtime,
                               ctime>.npz
        x (N, C, H, W) uint8, or float32 for images of more bits (the labels: the listing's)

A file added, removed or rewritten changes the key, so a cache entry is never stale: the mtime
alone would miss a file rewritten to the same size and given its old mtime back (`cp -p`,
`rsync -t`, `touch -d`), but no tool sets the ctime, which the kernel sets at every write,
rename or creation (a chmod or a copy of the folder elsewhere changes it too: one decode more,
never a stale entry). This is the decode cache only: what a resume compares is the files'
bytes (catalog.contents_stamp). A later run
(or a sweep's trials, after the driver's planning decoded it) only lists the folder and reads
one array. Entries are not deleted: remove the folder to reclaim the space.

Both give the same ImageData as the built-in sets (images.py): classes are the sorted labels
(folder names), no official split (the holdout splits draw from all N), and the checks of
`checks.check_images`. Every refusal is a DataError naming the path and the fix.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pathlib
import zipfile

import numpy as np

from sbfn_dist import catalog
from sbfn_dist.data import checks
from sbfn_dist.data.image_data import ImageData, brief, frozen
from sbfn_dist.data.sources import cache_dir
from sbfn_dist.errors import DataError

CACHE_VERSION = 2           # bump when the decoding changes: old entries are then not read
MAX_CHANNELS = 4            # a channel axis holds gray, gray+alpha, RGB or RGBA
SPLIT_KEYS = ("x_train", "y_train", "x_test", "y_test")
GRAY_MODES = ("1", "L", "LA", "I", "I;16", "F")   # PIL modes read as one channel
# PIL modes of more than 8 bits (I;16 and its byte orders, 32-bit I, float F): read as float32
# with their values. Converted to 8-bit "L", PIL cuts them to 255 (or 0 for floats in [0, 1]):
# a folder of 16-bit PNGs became constant images and trained silently at chance (issue 32).
DEEP_MODES = ("I", "F")
NEW_CLASS = {catalog.NPZ_PREFIX: "add images of another label to x and y",
             catalog.FOLDER_PREFIX: "add a sub-folder of images for another class"}


def load_user_images(name: str, image_size: int | None = None):
    """The ImageData of `name` (npz:PATH or folder:PATH, the path absolute); `image_size`
    resizes a folder's images (npz arrays are taken as they are)."""
    prefix = catalog.prefix_of(name)
    path = pathlib.Path(name[len(prefix):])
    if prefix == catalog.NPZ_PREFIX:
        stat = _existing(path, "file", "npz").stat()
        return _read_npz(name, stat.st_size, stat.st_mtime_ns)
    return _read_folder(name, _existing(path, "folder", "folder"), image_size)


def count_images(name: str) -> int | None:
    """How many images npz:PATH or folder:PATH (the path absolute) holds, told without decoding
    them: an npz's labels are read, a folder is listed. None where that fails: loading it then
    says why (a sweep sizes its --smoke parts by this, before its data check)."""
    prefix = catalog.prefix_of(name)
    path = pathlib.Path(name[len(prefix):])
    try:
        if prefix == catalog.NPZ_PREFIX:
            return _npz_label_count(str(_existing(path, "file", "npz")))
        return len(_listing(_existing(path, "folder", "folder"))[0])
    except (DataError, OSError, ValueError, KeyError, TypeError, AttributeError,
            zipfile.BadZipFile, EOFError):     # TypeError, AttributeError: a .npy, no archive
        return None


def _npz_label_count(path: str) -> int:
    """The labels in the file (y, or y_train and y_test), reading no other array."""
    with np.load(path, allow_pickle=False) as archive:
        keys = ("y",) if "y" in archive.files else ("y_train", "y_test")
        return sum(len(archive[k]) for k in keys)


def _existing(path: pathlib.Path, kind: str, prefix: str) -> pathlib.Path:
    """`path` if it is a `kind` (file or folder), else the DataError that says what to name."""
    if not path.exists():
        raise DataError(f"{kind} {path} does not exist: check the path after '{prefix}:' "
                        "(an absolute path is safest)")
    if path.is_dir() != (kind == "folder"):
        other = "npz:PATH names an .npz file" if kind == "folder" else \
            "folder:PATH names a folder of class folders"
        raise DataError(f"{path} is not a {kind}: '{prefix}:PATH' needs a {kind} ({other})")
    return path


# ---------------------------------------------------------------- npz:PATH

@functools.lru_cache(maxsize=2)
def _read_npz(name: str, size: int, mtime_ns: int):
    """The arrays of one version of the file (size and mtime in the key: a rewrite re-reads)."""
    path = name[len(catalog.NPZ_PREFIX):]
    arrays = _npz_arrays(path)
    if "x" in arrays and "y" in arrays:
        x, y, n_train = np.ascontiguousarray(as_nchw(arrays["x"], path)), arrays["y"], None
    elif all(k in arrays for k in SPLIT_KEYS):     # converted part by part: one copy
        x = np.concatenate([as_nchw(arrays[k], path) for k in ("x_train", "x_test")])
        y, n_train = np.concatenate([arrays["y_train"], arrays["y_test"]]), len(arrays["x_train"])
    else:
        raise DataError(f"npz file {path} holds the arrays {sorted(arrays) or 'none'}, not x "
                        "and y: save it with numpy.savez(PATH, x=images, y=labels) (or with "
                        f"{', '.join(SPLIT_KEYS)})")
    codes, classes = _label_codes(y, len(x), path)
    return _image_data(name, x, codes, classes, n_train, f"npz file {path}: {len(x)} images")


def _npz_arrays(path: str) -> dict:
    """Every array of the file, read (no pickles: an npz is data, not code)."""
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise _unreadable(path, exc) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DataError(f"npz file {path} holds one array, not an npz archive: save x and y "
                        "with numpy.savez(PATH, x=images, y=labels)")
    try:
        with archive:
            return {k: archive[k] for k in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: str, exc: Exception) -> DataError:
    """numpy's reason, except where it suggests loading pickles (this never does)."""
    if "Object arrays" in str(exc):
        return DataError(f"npz file {path} holds Python objects, which are not loaded (they "
                         "could run code): save labels as numbers or strings "
                         "(numpy.array(labels, dtype=str))")
    reason = "not an npz archive" if "pickled" in str(exc) else brief(exc)
    return DataError(f"npz file {path} cannot be read ({reason}): save it with "
                     "numpy.savez(PATH, x=images, y=labels)")


def as_nchw(x: np.ndarray, what: str) -> np.ndarray:
    """Images (N, H, W), (N, H, W, C) or (N, C, H, W) as (N, C, H, W): uint8 kept, any other
    real type as float32. The channel axis is the one of at most MAX_CHANNELS entries."""
    if x.dtype.kind not in "uif" or x.ndim not in (3, 4):
        raise DataError(f"x of {what} is {x.dtype} {x.shape}: images are a uint8 or float "
                        "array (N, H, W), (N, H, W, C) or (N, C, H, W)")
    x = x if x.dtype == np.uint8 else x.astype(np.float32)
    if x.ndim == 3:
        return x[:, None]
    first, last = (x.shape[axis] <= MAX_CHANNELS for axis in (1, 3))
    if first == last:
        which = "both could be" if first else "neither is"
        raise DataError(f"x of {what} has shape {x.shape}: axis 1 or 3 holds the channels (at "
                        f"most {MAX_CHANNELS}) and {which}: save x as (N, H, W), or "
                        f"(N, H, W, C) with C <= {MAX_CHANNELS} < H, W")
    return x if first else x.transpose(0, 3, 1, 2)


def _label_codes(y: np.ndarray, n: int, what: str) -> tuple[np.ndarray, tuple]:
    """Labels (integers or strings, one per image) -> int64 codes in sorted label order."""
    if y.ndim != 1 or len(y) != n:
        raise DataError(f"y of {what} has shape {y.shape} for {n} images: labels are one "
                        f"integer or string per image, shape (N,){_column_fix(y, n)}")
    if n == 0:     # before the class count, whose message names a class (an IndexError)
        raise DataError(f"x and y of {what} are empty (0 images): save your images and their "
                        "labels with numpy.savez(PATH, x=images, y=labels)")
    if y.dtype.kind == "f" and not np.array_equal(y, np.round(y)):
        raise DataError(f"y of {what} holds fractional numbers (e.g. {y[y != np.round(y)][0]}):"
                        " labels are integers or strings")
    if y.dtype.kind not in "iufUS":
        raise DataError(f"y of {what} is {y.dtype}: labels are integers or strings")
    classes, codes = np.unique(_label_values(y), return_inverse=True)
    return codes.astype(np.int64), tuple(classes.tolist())


def _column_fix(y: np.ndarray, n: int) -> str:
    """The fix for labels saved as a column or as one-hot rows (Keras' to_categorical)."""
    if y.ndim != 2 or len(y) != n:
        return ""
    return "; save y.ravel()" if y.shape[1] == 1 else \
        "; one-hot rows? save y.argmax(axis=1)"


def _label_values(y: np.ndarray) -> np.ndarray:
    """The labels as the classes keep them: integers as integers (whole floats too), strings
    as text (bytes decoded). A model exported from a sweep answers with these, as
    SBFNClassifier fitted on the same arrays does, so it scores against the file's own y."""
    if y.dtype.kind == "f":
        return y.astype(np.int64)
    return y.astype(str) if y.dtype.kind == "S" else y


def _image_data(name, x, y, classes, n_train, notes) -> ImageData:
    """The read-only, checked ImageData (no official split unless n_train says where it is)."""
    shape = "x".join(map(str, x.shape[1:]))
    data = ImageData(name, x, y, classes, len(y) if n_train is None else n_train,
                     f"{notes}, {len(classes)} classes, {shape}")
    return checks.check_images(frozen(data), NEW_CLASS[catalog.prefix_of(name)])


# ---------------------------------------------------------------- folder:PATH

def _read_folder(name: str, root: pathlib.Path, image_size: int | None):
    files, classes = _listing(root)
    key = _fingerprint(root, files, image_size)
    return _decoded(name, key, tuple(files), classes, image_size)


def _listing(root: pathlib.Path) -> tuple[list, tuple]:
    """(relative path, class code, size, mtime, ctime) of every image, as ImageFolder finds them
    (its class folders, its extensions, its order), each file once and under its own class
    (_ClassWalk: the links it refuses)."""
    from torchvision.datasets import folder
    try:
        classes, _ = folder.find_classes(root)
    except FileNotFoundError:       # its "Couldn't find any class folder"
        raise DataError(f"folder {root} has no sub-folders: put each class's images in a "
                        f"sub-folder named after the class ({root}/cat/1.png, "
                        f"{root}/dog/1.png, ...)") from None
    except OSError as exc:
        raise _unlisted(root, exc) from None
    walk = _ClassWalk(root, lambda p: folder.has_file_allowed_extension(p, folder.IMG_EXTENSIONS))
    files, empty = [], []
    try:
        for code, name in enumerate(classes):
            found = walk.files(name)
            empty += [] if found else [name]
            for path in found:
                stat = os.stat(path)
                files.append((os.path.relpath(path, root), code, stat.st_size,
                              stat.st_mtime_ns, stat.st_ctime_ns))
    except OSError as exc:      # a sub-folder or file it may not read (os.walk skipped them)
        raise _unlisted(root, exc) from None
    walk.check_links()
    if empty:
        raise DataError(f"folder {root} has class folders without an image "
                        f"({', '.join(empty)}): add images (.png, .jpg, ...) to them or remove "
                        "them")
    return files, tuple(classes)


def _unlisted(root: pathlib.Path, exc: OSError) -> DataError:
    return DataError(f"folder {root} cannot be listed ({brief(exc)}): check its permissions")


class _ClassWalk:
    """The files under each class folder, following links as ImageFolder does, except where
    that would read a file twice or under another class (issue 32: a class folder holding
    `loop -> ..` made 40 images 1,640, copies on both sides of the split). Refused, in one
    line naming the link: a link to a folder inside the data set or above it (the data set
    itself included), a file or folder reached a second time (a file link, a loop elsewhere,
    two links to one folder), a link to nothing. A link to a folder or file elsewhere is
    followed: a class folder may be a link to where its images live.

    Folders are told apart by their real paths, so the files in them are too; of the files,
    only links need their own (is a link's target a file some walked folder lists?)."""

    def __init__(self, root: pathlib.Path, is_image):
        self.root, self.real, self.is_image = root, os.path.realpath(root), is_image
        self.folders: dict = {}     # real path -> the relative path it was reached by
        self.links: dict = {}       # a file link's real target -> the link's relative path

    def files(self, name: str) -> list[str]:
        """The paths of every image under class folder `name`, in ImageFolder's order (the
        walk's folders sorted, each one's files sorted)."""
        top = os.path.join(self.root, name)
        self._enter(top)
        found, folders = [], [top]
        while folders:      # os.walk(followlinks=True), its entries' link flags kept (no lstat)
            folder = folders.pop()
            with os.scandir(folder) as listed:
                entries = list(listed)
            names = []
            for entry in entries:
                if entry.is_dir():              # checked before the walk goes into it
                    self._enter(entry.path)
                    folders.append(entry.path)
                elif self.is_image(entry.name):
                    names.append(entry.name)
                    if entry.is_symlink():
                        self._link(entry.path)
            found.append((folder, names))
        return [os.path.join(folder, n) for folder, names in sorted(found) for n in sorted(names)]

    def check_links(self) -> None:
        """After every class's walk: no file link leads to an image a walked folder lists."""
        for real, rel in self.links.items():
            folder = self.folders.get(os.path.dirname(real))
            if folder is not None and self.is_image(real):
                self._twice(rel, os.path.join(folder, os.path.basename(real)), real)

    def _enter(self, path: str) -> None:
        real = os.path.realpath(path)
        if os.path.islink(path):
            inside = real == self.real or real.startswith(self.real + os.sep)
            if inside or self.real.startswith(real.rstrip(os.sep) + os.sep):
                raise self._refusal(f"{self._rel(path)} is a link to {real}, "
                                    f"{'inside' if inside else 'above'} the data set: its "
                                    "images would be read twice or under another class; "
                                    "remove the link")
        first = self.folders.setdefault(real, self._rel(path))
        if first != self._rel(path):
            self._twice(first, self._rel(path), real)

    def _link(self, path: str) -> None:
        real = os.path.realpath(path)
        if not os.path.exists(real):
            raise self._refusal(f"{self._rel(path)} is a link to {real}, which does not "
                                "exist: remove the link")
        first = self.links.setdefault(real, self._rel(path))
        if first != self._rel(path):
            self._twice(first, self._rel(path), real)

    def _twice(self, first: str, again: str, real: str) -> None:
        raise self._refusal(f"{first} and {again} are one file or folder ({real}), which would "
                            "be read twice: remove the link that leads to it again")

    def _rel(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    def _refusal(self, text: str) -> DataError:
        return DataError(f"folder {self.root}: {text}")


def _fingerprint(root: pathlib.Path, files: list, image_size: int | None) -> str:
    text = json.dumps([CACHE_VERSION, str(root), image_size, files])
    return hashlib.sha1(text.encode()).hexdigest()


@functools.lru_cache(maxsize=2)
def _decoded(name: str, key: str, files: tuple, classes: tuple, image_size: int | None):
    """The folder's images: from the disk cache when it holds `key`, else decoded and saved."""
    root = pathlib.Path(name[len(catalog.FOLDER_PREFIX):])
    cached = cache_dir() / "image_folders" / f"{key}.npz"
    x = _cached(cached)
    if x is None:
        x = _decode_all(root, [f[0] for f in files], image_size)
        _save(cached, x)
    resized = f" resized to {image_size}x{image_size}" if image_size else ""
    y = np.array([f[1] for f in files], dtype=np.int64)
    return _image_data(name, x, y, classes, None, f"folder {root}: {len(y)} images{resized}")


def _cached(path: pathlib.Path) -> np.ndarray | None:
    """The cached images, or None (no entry, or one that cannot be read: decoded again)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return archive["x"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None


def _save(path: pathlib.Path, x: np.ndarray) -> None:
    """Written whole or not at all (a temporary name, then a rename); a cache that cannot be
    written only costs the next run a decode, so that is no error."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, x=x)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def _decode_all(root: pathlib.Path, paths: list, image_size: int | None) -> np.ndarray:
    """Every image as (N, C, H, W): gray when all are gray, else RGB; uint8, or float32 where
    they have more bits (one depth for all)."""
    images, shapes, depths, bad = [], {}, {}, []
    for rel in paths:
        try:
            image = _decode(root / rel, image_size)
        except Exception as exc:    # noqa: BLE001 -- a broken file raises what its decoder does
            bad.append((rel, exc))
            continue
        images.append(image)
        shapes.setdefault(image.shape[:2], rel)
        depths.setdefault(image.dtype == np.uint8, rel)
    if bad:
        rel, exc = bad[0]
        raise DataError(f"{len(bad)} of {len(paths)} images in folder {root} cannot be decoded "
                        f"(e.g. {rel}: {brief(exc)}): replace or remove them")
    if len(depths) > 1:
        raise DataError(f"folder {root} mixes 8-bit images ({depths[True]}) with images of more "
                        f"bits ({depths[False]}), whose values have another range: save them "
                        "all at one depth")
    checks.require_one_shape({rel: f"{h}x{w}" for (h, w), rel in shapes.items()},
                             f"folder {root}", "pass image_size=N to resize every image to "
                             "N x N (python -m sweeps.images: --image-size N; a sweep file: "
                             "settings: image_size: N)")
    return _stacked(images)


def _decode(path: pathlib.Path, image_size: int | None) -> np.ndarray:
    """One image as (H, W) gray or (H, W, 3) RGB uint8, or (H, W) float32 for an image of more
    than 8 bits (DEEP_MODES), resized to image_size x image_size."""
    from PIL import Image
    with Image.open(path) as image:
        deep = image.mode in DEEP_MODES or image.mode.startswith("I;16")
        image = image.convert("F" if deep else "L" if image.mode in GRAY_MODES else "RGB")
        if image_size:
            image = image.resize((image_size, image_size), Image.Resampling.BILINEAR)
        return np.asarray(image)


def _stacked(images: list) -> np.ndarray:
    """(N, C, H, W) of the images' one dtype; a gray image among RGB ones repeats its one
    channel three times."""
    rgb = any(image.ndim == 3 for image in images)
    out = np.empty((len(images), 3 if rgb else 1, *images[0].shape[:2]), dtype=images[0].dtype)
    for i, image in enumerate(images):
        out[i] = image.transpose(2, 0, 1) if image.ndim == 3 else image[None]
    return out

