"""The data sets sbfn-dist knows: tables or images, their task, whether they come from files.

Torch-free and file-free, so that a config is checked against it before anything loads (and
the analysis layer may read it). The loaders live in `tabular.py` and `images.py`.
"""

from dataclasses import dataclass

from sbfn_dist.errors import DataError

CSV_PREFIX = "csv:"


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


def names(modality: str | None = None, task: str | None = None) -> tuple:
    """Known data set names, optionally of one modality and / or task."""
    return tuple(n for n, d in CATALOG.items()
                 if modality in (None, d.modality) and task in (None, *d.tasks))


def lookup(name: str) -> DataSet:
    if isinstance(name, str) and name.startswith(CSV_PREFIX):
        return CSV
    try:
        return CATALOG[name]
    except (KeyError, TypeError):
        raise DataError(f"unknown data set {name!r}: use one of {', '.join(CATALOG)}, or "
                        f"'csv:PATH' for your own comma-separated file with a header row") from None
