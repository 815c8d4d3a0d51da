"""The data sets sbfn-dist knows: tables or images, their task, whether they come from files.

Torch-free and file-free, so that a config is checked against it before anything loads (and
the analysis layer may read it): a room of the library's floor 0, under settings/ and data/.
The loaders live in data/ (`tabular.py`, `images.py`, `image_files.py`). Beside the names, a
data set may be a path behind a prefix:

    csv:PATH     your table (a header row; the target column named by `target`)
    npz:PATH     your images as arrays: x (N, H, W), (N, H, W, C) or (N, C, H, W), labels y
    folder:PATH  your image files, one folder per class (torchvision's ImageFolder layout)
"""

import hashlib
import os
from dataclasses import dataclass

from sbfn_dist.errors import DataError, did_you_mean

CSV_PREFIX = "csv:"
NPZ_PREFIX = "npz:"
FOLDER_PREFIX = "folder:"


@dataclass(frozen=True)
class DataSet:
    modality: str                 # "tabular" (MLP members) | "image" (CNN members)
    tasks: tuple                  # the tasks its target supports; the first is the default
    files: bool                   # read from files (data_dir / SBFN_DATA_DIR / cache), not bundled
    fixed_split: bool = False     # has a published test split (split="fixed")
    augment: bool = False         # images: crop (+ flip) augmentation on by default
    about: str = ""

    @property
    def task(self) -> str:
        return self.tasks[0]


REGRESSION, CLASSIFICATION = ("regression",), ("classification",)

CATALOG = {
    # tables, regression (paper, "Multivariate Prediction")
    "air_quality": DataSet("tabular", REGRESSION, True, about="UCI Air Quality, target AH"),
    "appliances": DataSet("tabular", REGRESSION, True, fixed_split=True,
                          about="UCI Appliances Energy, Candanedo et al. 2017 split"),
    "diabetes": DataSet("tabular", REGRESSION, False, about="scikit-learn's bundled diabetes"),
    "sincos": DataSet("tabular", REGRESSION, False, fixed_split=True,
                      about="the paper's appendix task, generated"),
    "friedman1": DataSet("tabular", REGRESSION, False,
                         about="Friedman's (1991) benchmark #1, generated (2,000 rows, noise 1)"),
    # tables, classification (bundled with scikit-learn: offline)
    "breast_cancer": DataSet("tabular", CLASSIFICATION, False, about="Wisconsin, 2 classes"),
    "wine": DataSet("tabular", CLASSIFICATION, False, about="3 cultivars"),
    "iris": DataSet("tabular", CLASSIFICATION, False, about="3 species"),
    # images (paper, "Multiple Hypothesis Deep Ensembles")
    "mnist": DataSet("image", CLASSIFICATION, True),
    "fashion_mnist": DataSet("image", CLASSIFICATION, True),
    # The standard CIFAR recipe: 4-pixel padding, random 32x32 crop, random horizontal flip.
    "cifar10": DataSet("image", CLASSIFICATION, True, augment=True),
    "digits": DataSet("image", CLASSIFICATION, False, about="scikit-learn's bundled 8x8 digits"),
}
# Any user table: regression by default, classification with task="classification".
CSV = DataSet("tabular", REGRESSION + CLASSIFICATION, True, about="a user CSV with a header row")
# Any user images: augmentation off by default, since a flip may change what an image shows
# (a digit, a letter); augment=True turns the crop + flip on.
NPZ = DataSet("image", CLASSIFICATION, True, about="your arrays x (images) and y (labels)")
FOLDER = DataSet("image", CLASSIFICATION, True, about="your image files, one folder per class")
BY_PREFIX = {CSV_PREFIX: CSV, NPZ_PREFIX: NPZ, FOLDER_PREFIX: FOLDER}


def names(modality: str | None = None, task: str | None = None) -> tuple:
    """Known data set names, optionally of one modality and / or task."""
    return tuple(n for n, d in CATALOG.items()
                 if modality in (None, d.modality) and task in (None, *d.tasks))


def offline_instead(name: str) -> str:
    """For the refusal of a data set whose files are missing offline: the known sets of its
    kind (modality, task) that need no file, as a clause of the fix ("" for none). `python -m
    sweeps.regression` alone sweeps air_quality, and a newcomer offline was told only where to
    put its file."""
    kind = CATALOG.get(name)
    bundled = [n for n, d in CATALOG.items() if kind and not d.files
               and d.modality == kind.modality and d.task == kind.task]
    others = f" (or {', '.join(bundled[1:])})" if bundled[1:] else ""
    return f"; or sweep one that needs no file: --dataset {bundled[0]}{others}" if bundled else ""


def prefix_of(name) -> str | None:
    """The prefix of a data set given as a path (csv:, npz:, folder:); None for a name."""
    if isinstance(name, str):
        return next((p for p in BY_PREFIX if name.startswith(p)), None)
    return None


# A folder's stamp of its files' bytes starts so; one without it (sweeps recorded before issue
# 48) hashed the files' paths and sizes alone, and a resume of such a sweep compares that.
FOLDER_STAMP = "bytes-"


def contents_stamp(name, recorded: str | None = None) -> str | None:
    """What a data set given as a path holds, as a short digest a sweep records and a resume
    compares (None: a named set, or a path not on this machine). A file: its bytes. A folder:
    its files' relative paths, sizes and bytes (images swapped between two class folders keep
    every path and size). Reading the bytes costs little beside the data check, which decodes
    every image: 3,000 28x28 PNGs took 0.5 s here, against 0.2 s for their paths and sizes
    alone and 35 s for a first decode (2 busy cores). `recorded`: the stamp a resume compares
    with; an older folder stamp is made again as it was made (_listing_digest)."""
    prefix = prefix_of(name)
    path = os.path.abspath(os.path.expanduser(name[len(prefix):])) if prefix else ""
    if os.path.isfile(path):
        return _bytes_digest(path, [path])
    if not os.path.isdir(path):
        return None
    files = _files_under(path)
    if recorded is not None and not recorded.startswith(FOLDER_STAMP):
        return _listing_digest(path, files)
    return FOLDER_STAMP + _bytes_digest(path, files)


def _files_under(folder: str) -> list:
    """Every file under `folder` in a fixed order (folder links are not followed)."""
    found = []
    for parent, dirs, files in os.walk(folder):
        dirs.sort()
        found += [os.path.join(parent, file) for file in sorted(files)]
    return found


def _bytes_digest(root: str, files: list) -> str:
    """The files' bytes in one digest, each after its path relative to `root` where `root` is
    a folder (a file's digest is its bytes alone, as sweeps have recorded it)."""
    digest = hashlib.blake2b(digest_size=8)
    for file in files:
        if file != root:
            digest.update(f"{os.path.relpath(file, root)}\0{os.path.getsize(file)}\0".encode())
        with open(file, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def _listing_digest(root: str, files: list) -> str:
    """The files' relative paths and sizes: a folder's stamp before issue 48."""
    digest = hashlib.blake2b(digest_size=8)
    for file in files:
        digest.update(f"{os.path.relpath(file, root)}\0{os.path.getsize(file)}\n".encode())
    return digest.hexdigest()


def meant(name) -> str:
    """' (did you mean 'diabetes'?)' for a near miss of a known data set's name, else '': what
    an unknown name is told, by lookup and by the commands that take one modality only (an
    image sweep given `diabetis` heard nothing of diabetes when only the image names counted)."""
    return did_you_mean(name, CATALOG) if isinstance(name, str) else ""


def lookup(name: str) -> DataSet:
    if prefix := prefix_of(name):
        return BY_PREFIX[prefix]
    try:
        return CATALOG[name]
    except (KeyError, TypeError):
        raise DataError(f"unknown data set {name!r}{meant(name)}: use one of "
                        f"{', '.join(CATALOG)}, or "
                        f"'csv:PATH' for your own comma-separated file with a header row, "
                        f"'npz:PATH' for your image arrays x and y, 'folder:PATH' for your "
                        f"image files in one folder per class") from None


def own_data(modality: str) -> str:
    """A modality's data sets given as paths, in words for a message: for images
    "npz:PATH (your arrays x (images) and y (labels)) or folder:PATH (your image files, one
    folder per class)"."""
    return " or ".join(f"{prefix}PATH ({data.about})" for prefix, data in BY_PREFIX.items()
                       if data.modality == modality)


def absolute(name):
    """`name` with the path of a csv:, npz: or folder: data set made absolute against the
    current directory (a trial may run in another one: Ray Tune changes it)."""
    if prefix := prefix_of(name):
        return prefix + os.path.abspath(os.path.expanduser(name[len(prefix):]))
    return name


def short_name(name: str) -> str:
    """A data set as a name fit for a sweep's or a file's name: csv:/data/runs.csv -> runs,
    folder:/data/pets/ -> pets, npz:/data/cifar.npz -> cifar; a catalog name as it is."""
    if not (prefix := prefix_of(name)):
        return name
    stem = os.path.basename(os.path.normpath(name[len(prefix):]))
    return os.path.splitext(stem)[0] if prefix != FOLDER_PREFIX else stem
