"""The data sets sbfn-dist knows: tables or images, their task, whether they come from files.

Torch-free and file-free, so that a config is checked against it before anything loads (and
the analysis layer may read it). The loaders live in `tabular.py`, `images.py` and
`image_files.py`. Beside the names, a data set may be a path behind a prefix:

    csv:PATH     your table (a header row; the target column named by `target`)
    npz:PATH     your images as arrays: x (N, H, W), (N, H, W, C) or (N, C, H, W), labels y
    folder:PATH  your image files, one folder per class (torchvision's ImageFolder layout)
"""

import hashlib
import os
from dataclasses import dataclass

from sbfn_dist.errors import DataError

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


def prefix_of(name) -> str | None:
    """The prefix of a data set given as a path (csv:, npz:, folder:); None for a name."""
    if isinstance(name, str):
        return next((p for p in BY_PREFIX if name.startswith(p)), None)
    return None


def contents_stamp(name) -> str | None:
    """What a data set given as a path holds, as a short digest a sweep records and a resume
    compares (None: a named set, or a path not on this machine). A file: its bytes. A folder:
    its files' relative paths and sizes (reading every image would cost a large folder
    minutes; a copy keeps sizes, not always modification times)."""
    prefix = prefix_of(name)
    path = os.path.abspath(os.path.expanduser(name[len(prefix):])) if prefix else ""
    digest = hashlib.blake2b(digest_size=8)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    elif os.path.isdir(path):
        for folder, dirs, files in os.walk(path):
            dirs.sort()
            for file in sorted(files):
                full = os.path.join(folder, file)
                digest.update(f"{os.path.relpath(full, path)}\0{os.path.getsize(full)}\n"
                              .encode())
    else:
        return None
    return digest.hexdigest()


def lookup(name: str) -> DataSet:
    if prefix := prefix_of(name):
        return BY_PREFIX[prefix]
    try:
        return CATALOG[name]
    except (KeyError, TypeError):
        raise DataError(f"unknown data set {name!r}: use one of {', '.join(CATALOG)}, or "
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
