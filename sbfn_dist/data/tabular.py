"""Tabular data sets for the s-BFN experiments: regression and classification.

Every loader returns the same ``TabularData``: float64 features with NaN for a missing value
(imputation happens later, per training fold, in ``preprocess.FoldScaler``, so test rows never
leak into the statistics) and a target that is never missing: float64 values for regression,
int64 class codes 0..C-1 (with the class names in ``classes``) for classification.
"""

from __future__ import annotations

import dataclasses
import pathlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbfn_dist import catalog
from sbfn_dist.data.checks import check_table, numeric_target
from sbfn_dist.data.sources import (
    AIR_QUALITY_FILE,
    APPLIANCES_FILE,
    APPLIANCES_TEST_DATES_FILE,
    find_optional_file,
    resolve_data_file,
)
from sbfn_dist.errors import DataError

KNOWN_TABULAR = catalog.names("tabular")  # plus "csv:PATH"

# The target each built-in data set is defined by (a different one would be a different task).
DEFAULT_TARGETS = {"air_quality": "AH", "appliances": "Appliances",
                   "diabetes": "disease progression", "sincos": "y", "friedman1": "y",
                   "breast_cancer": "diagnosis",
                   "wine": "cultivar", "iris": "species"}

AIR_QUALITY_MISSING = -200.0  # the UCI file's code for a missing reading
AIR_QUALITY_DROPPED = ("Date", "Time", "NMHC(GT)")  # NMHC(GT): 90% missing, not worth imputing
APPLIANCES_BASE = ("lights", "T1", "RH_1", "T2", "RH_2", "T3", "RH_3", "T4", "RH_4", "T5", "RH_5",
                   "T6", "RH_6", "T7", "RH_7", "T8", "RH_8", "T9", "RH_9", "T_out", "Press_mm_hg",
                   "RH_out", "Windspeed", "Visibility", "Tdewpoint")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SINCOS_NOISE_SD = 0.1
SINCOS_TRAIN, SINCOS_TEST = 300, 1000  # the paper's appendix sizes
# Friedman1 as the stacking literature runs it (Breiman 1996, "Stacked regressions": noise sd 1),
# at the size of issue 46's comparison; its rows come from FRIEDMAN1_SEED alone, not the trial's
# seed, so that the seeds of a repeated CV re-split one data set.
FRIEDMAN1_ROWS, FRIEDMAN1_NOISE, FRIEDMAN1_SEED = 2000, 1.0, 0


@dataclass(frozen=True)
class TabularData:
    name: str                 # a catalog name or "csv:/abs/path.csv"
    X: np.ndarray             # float64 (n, p); NaN marks a missing feature value
    y: np.ndarray             # (n,), never missing (rows with a missing target are dropped):
                              # float64 values, or int64 class codes indexing `classes`
    feature_names: tuple[str, ...]
    target_name: str
    target_unit: str          # e.g. "g/m^3", "Wh", "" if unknown or a class
    fixed_test_mask: np.ndarray | None = None   # bool (n,), the published test rows, if any
    notes: str = ""           # one line describing the preprocessing applied (shown in reports)
    classes: tuple | None = None   # class names of a classification target; None: regression
    # A csv: file's feature columns' dtypes as pandas reads the file (e.g. "int64"), so that an
    # exported model's MLflow signature takes the frame a user reads from it; None: float64.
    feature_dtypes: tuple[str, ...] | None = None

    def __post_init__(self):
        # Catch loader bugs here rather than as a shape error deep inside training.
        n = self.X.shape[0]
        assert self.X.ndim == 2 and self.X.shape[1] == len(self.feature_names), "X / feature_names mismatch"
        assert self.y.shape == (n,) and not np.isnan(self.y).any(), "y must be (n,) without NaN"
        assert self.fixed_test_mask is None or self.fixed_test_mask.shape == (n,)
        assert self.classes is None or self.y.dtype == np.int64, "class codes are int64"

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]


def load_tabular(name: str, data_dir: str | None = None, target: str | None = None,
                 include_random_vars: bool = False, n_samples: int | None = None,
                 seed: int = 0, task: str | None = None) -> TabularData:
    """Load a data set by name (see KNOWN_TABULAR) or ``csv:PATH``.

    ``n_samples``: for "sincos" and "friedman1" the number of rows generated (default 1300,
    2000); for the others a
    seeded random subset of that many rows (for quick runs), ``None`` keeps all rows.
    ``include_random_vars`` only affects "appliances" (adds the noise columns rv1, rv2).
    ``task``: for a CSV, "classification" reads the target as class labels (default regression).
    """
    if n_samples is not None and n_samples < 2:
        raise DataError(f"n_samples={n_samples} is too small: a split needs at least 2 rows; "
                        f"pass n_samples >= 2 or leave it unset to use every row")
    if name.startswith("csv:"):
        data = _load_csv(name[len("csv:"):], target, task or "regression")
    elif name in DEFAULT_TARGETS:
        _check_builtin_target(name, target)
        if name == "sincos":
            return _make_sincos(n_samples or SINCOS_TRAIN + SINCOS_TEST, seed)
        if name == "friedman1":
            return check_table(_make_friedman1(n_samples or FRIEDMAN1_ROWS))
        data = _LOADERS[name](data_dir, include_random_vars)
    else:
        raise DataError(f"unknown data set '{name}': use one of {', '.join(KNOWN_TABULAR)}, "
                        f"or 'csv:PATH' for your own comma-separated file with a header row")
    return check_table(_subsample(data, n_samples, seed) if n_samples else data)


def _check_builtin_target(name: str, target: str | None) -> None:
    if target not in (None, DEFAULT_TARGETS[name]):
        raise DataError(f"data set '{name}' has the fixed target '{DEFAULT_TARGETS[name]}', not '{target}': "
                        f"leave target unset, or save the table as CSV and load it as 'csv:PATH' "
                        f"with target='{target}'")


def _subsample(data: TabularData, n_samples: int, seed: int) -> TabularData:
    if n_samples >= data.n_rows:
        return data
    # Sorted so time-ordered data sets keep their order within the subset.
    rows = np.sort(np.random.default_rng(seed).choice(data.n_rows, n_samples, replace=False))
    mask = None if data.fixed_test_mask is None else data.fixed_test_mask[rows]
    note = f"; random subset of {n_samples} of {data.n_rows} rows (seed {seed})"
    return dataclasses.replace(data, X=data.X[rows], y=data.y[rows], fixed_test_mask=mask,
                               notes=data.notes + note)


def _from_frame(name: str, features: pd.DataFrame, target: pd.Series, unit: str, notes: str,
                fixed_test_mask: np.ndarray | None = None) -> TabularData:
    """Numeric frame -> TabularData, dropping rows whose target is missing (noted in ``notes``)."""
    keep = target.notna().to_numpy()
    if not keep.all():
        notes += f"; dropped {int((~keep).sum())} rows with missing target"
    mask = None if fixed_test_mask is None else np.asarray(fixed_test_mask, dtype=bool)[keep]
    return TabularData(
        name=name,
        X=features.to_numpy(dtype=np.float64, na_value=np.nan)[keep],
        y=target.to_numpy(dtype=np.float64, na_value=np.nan)[keep],
        feature_names=tuple(str(c) for c in features.columns),
        target_name=str(target.name),
        target_unit=unit,
        fixed_test_mask=mask,
        notes=notes,
    )


def _require_columns(frame: pd.DataFrame, columns, path: pathlib.Path, dataset: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path} lacks the columns {missing} of data set '{dataset}': it is not the original "
                        f"UCI file; replace it with the original (or delete it from the cache to re-download)")


def _load_air_quality(data_dir: str | None, include_random_vars: bool) -> TabularData:
    path = resolve_data_file("air_quality", AIR_QUALITY_FILE, data_dir)
    # The UCI file has two empty trailing columns and 114 empty trailing rows.
    raw = pd.read_csv(path, sep=";", decimal=",").iloc[:, :15].dropna(how="all")
    _require_columns(raw, AIR_QUALITY_DROPPED + ("AH",), path, "air_quality")
    frame = raw.drop(columns=list(AIR_QUALITY_DROPPED)).replace(AIR_QUALITY_MISSING, np.nan)
    notes = ("UCI Air Quality: -200 -> missing (median-imputed per training fold); "
             f"Date, Time, NMHC(GT) dropped; {len(raw)} rows read")
    return _from_frame("air_quality", frame.drop(columns="AH"), frame["AH"], "g/m^3", notes)


def _load_appliances(data_dir: str | None, include_random_vars: bool) -> TabularData:
    path = resolve_data_file("appliances", APPLIANCES_FILE, data_dir)
    raw = pd.read_csv(path)
    random_vars = ("rv1", "rv2") if include_random_vars else ()
    _require_columns(raw, ("date", "Appliances") + APPLIANCES_BASE + random_vars, path, "appliances")
    stamps = pd.to_datetime(raw["date"], format="%Y-%m-%d %H:%M:%S")
    features = pd.concat([raw[list(APPLIANCES_BASE)].astype(np.float64), _calendar_features(stamps),
                          raw[list(random_vars)].astype(np.float64)], axis=1)
    mask = _candanedo_test_mask(stamps, data_dir)
    split = "Candanedo 2017 test split attached" if mask is not None else "no published split file found"
    notes = (f"UCI Appliances Energy: NSM, WeekStatus, day-of-week dummies added; "
             f"rv1/rv2 {'kept' if include_random_vars else 'dropped'}; {split}")
    return _from_frame("appliances", features, raw["Appliances"], "Wh", notes, mask)


def _calendar_features(stamps: pd.Series) -> pd.DataFrame:
    """The calendar predictors of Candanedo et al. 2017 (NSM, WeekStatus, Day_of_week dummies)."""
    day = stamps.dt.day_of_week  # Monday = 0
    columns = {"NSM": (stamps - stamps.dt.normalize()).dt.total_seconds(),
               "WeekStatus": (day >= 5).astype(np.float64)}
    columns.update({f"dow_{name}": (day == i).astype(np.float64) for i, name in enumerate(WEEKDAYS)})
    return pd.DataFrame(columns, index=stamps.index)


def _candanedo_test_mask(stamps: pd.Series, data_dir: str | None) -> np.ndarray | None:
    path = find_optional_file("appliances", APPLIANCES_TEST_DATES_FILE, data_dir)
    if path is None:
        return None
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    listed = pd.to_datetime(pd.Series(lines), format="%Y-%m-%d %H:%M:%S")
    mask = stamps.isin(listed).to_numpy()
    # A partial match means the dates file and the data file are from different versions.
    if mask.sum() != listed.nunique():
        raise DataError(f"{path} lists {listed.nunique()} test timestamps but only {int(mask.sum())} are in the "
                        f"Appliances data: the two files do not belong together; replace the dates file "
                        f"(or delete it to run without the published split)")
    return mask


def _load_diabetes(data_dir: str | None, include_random_vars: bool) -> TabularData:
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes()  # bundled with scikit-learn: works offline
    features = pd.DataFrame(bunch.data, columns=bunch.feature_names)
    target = pd.Series(bunch.target, name=DEFAULT_TARGETS["diabetes"])
    return _from_frame("diabetes", features, target, "",
                       "scikit-learn diabetes (features already centred and scaled by scikit-learn)")


def _make_sincos(n_samples: int, seed: int) -> TabularData:
    """y = sin(x1) + cos(x2) + N(0, 0.1^2) noise, x ~ U[-3, 3]^2; the last rows are the test set."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n_samples, 2))
    y = np.sin(X[:, 0]) + np.cos(X[:, 1]) + rng.normal(0.0, SINCOS_NOISE_SD, size=n_samples)
    # Keep the paper's 300:1000 train:test proportion when n_samples differs from 1300.
    n_test = round(n_samples * SINCOS_TEST / (SINCOS_TRAIN + SINCOS_TEST))
    n_test = min(max(n_test, 1), n_samples - 1)
    mask = np.arange(n_samples) >= n_samples - n_test
    return TabularData("sincos", X, y, ("x1", "x2"), "y", "", mask,
                       f"synthetic sin(x1)+cos(x2)+N(0, {SINCOS_NOISE_SD}^2), seed {seed}, "
                       f"last {n_test} of {n_samples} rows are the test set")


def _make_friedman1(n_samples: int) -> TabularData:
    """scikit-learn's make_friedman1: y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 +
    N(0, FRIEDMAN1_NOISE^2), x ~ U[0, 1]^10 (x6..x10 carry no signal)."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples, n_features=10, noise=FRIEDMAN1_NOISE,
                          random_state=FRIEDMAN1_SEED)
    return TabularData("friedman1", X, y, tuple(f"x{j}" for j in range(1, 11)), "y", "",
                       notes=f"scikit-learn make_friedman1: {n_samples} rows, 10 features, noise sd "
                             f"{FRIEDMAN1_NOISE:g}, random_state {FRIEDMAN1_SEED}")


def _read_user_csv(path: pathlib.Path) -> pd.DataFrame:
    if path.is_dir():
        raise DataError(f"CSV path {path} is a directory, not a file: name the file after 'csv:'")
    if not path.is_file():
        raise DataError(f"CSV file {path} does not exist: check the path after 'csv:' (an absolute path is safest)")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"CSV file {path} is empty: it needs a header row and at least one data row") from exc
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"CSV file {path} cannot be parsed ({exc}): save it as comma-separated UTF-8 text "
                        f"with one header row") from exc
    except OSError as exc:
        raise DataError(f"CSV file {path} cannot be read ({exc.strerror or exc}): check its "
                        "permissions, or copy it to a readable place") from None
    if frame.empty:
        raise DataError(f"CSV file {path} has a header but no data rows: add rows or pick another file")
    _require_distinct_names(path)
    return frame


def _require_distinct_names(path: pathlib.Path) -> None:
    """Each column named once in the header row: pandas renames a repeated name ('y' again
    becomes 'y.1'), and a second target column became a feature that leaked it (issue 48).
    The header is read apart, as written (pandas gives no frame its repeated names)."""
    header = list(pd.read_csv(path, header=None, nrows=1, dtype=str,
                              keep_default_na=False).iloc[0])
    if all(_is_number(n) for n in header):
        return          # a first row of data, not names: the target's check says so
    repeated = {name: [i + 1 for i, n in enumerate(header) if n == name]
                for name in header if name and header.count(name) > 1}
    if repeated:
        said = "; ".join(f"'{name}' in columns {', '.join(map(str, at))}"
                         for name, at in repeated.items())
        first = next(iter(repeated))
        raise DataError(f"CSV file {path} names a column more than once in its header row "
                        f"({said}): pandas would read the second '{first}' as '{first}.1', a "
                        "column of its own (a copy of the target would become a feature); "
                        "give each column a name of its own")


def _check_user_target(frame: pd.DataFrame, path: pathlib.Path, target: str | None, task: str) -> None:
    available = ", ".join(map(str, frame.columns))
    if target is None:
        raise DataError(f"no target column given for CSV file {path}: pass target='COLUMN' "
                        f"(sweeps: --set target=COLUMN) naming one of: {available}")
    if target not in frame.columns:
        raise DataError(f"target column '{target}' is not in CSV file {path}: pick one of: "
                        f"{available}{_header_hint(frame, target)}")
    if task == "regression":
        numeric_target(frame[target], f"target column '{target}' in {path}",
                       "fix or remove those rows, pick a numeric target, or pass "
                       "task='classification' if it holds class labels")


def _header_hint(frame: pd.DataFrame, target: str) -> str:
    """Why a header may not name the target: the file's first row is data, its separator is
    not a comma, or its names have spaces around them."""
    names = [str(c) for c in frame.columns]
    if all(_is_number(n) for n in names):
        features = [f"x{i}" for i in range(1, len(names))]
        shown = features if len(features) <= 3 else [*features[:2], "...", features[-1]]
        return (" (the first row looks like data, not names: add a header row, e.g. "
                f"{','.join([*shown, 'y'])})")
    if len(names) == 1 and any(s in names[0] for s in ";\t|"):
        return " (the file is not comma-separated: save it with commas between the columns)"
    if target in (n.strip() for n in names):
        return " (its names have spaces around them: remove the spaces from the header row)"
    return ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _load_csv(raw_path: str, target: str | None, task: str) -> TabularData:
    path = pathlib.Path(raw_path).expanduser().resolve()
    frame = _read_user_csv(path)
    _check_user_target(frame, path, target, task)
    features = frame.drop(columns=target)
    if features.shape[1] == 0:
        raise DataError(f"CSV file {path} has only the target column '{target}': add feature columns")
    text = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if text:
        raise DataError(f"CSV file {path} has non-numeric feature columns {text}: encode them as numbers "
                        f"(e.g. one-hot dummies) or drop them before loading")
    labels = frame[target]
    if task == "classification":   # _from_frame reads numbers: a placeholder, missing where the
        labels = pd.Series(np.zeros(len(frame)), name=target).where(labels.notna())  # label is
    data = dataclasses.replace(_from_frame(f"csv:{path}", features, labels, "", f"user CSV {path.name}"),
                               feature_dtypes=tuple(str(t) for t in features.dtypes))
    if data.n_rows == 0:
        raise DataError(f"every row of CSV file {path} has a missing target '{target}': fill in the target values")
    if task == "classification":
        return _with_classes(data, frame[target].dropna().to_numpy())
    return data


def _with_classes(data: TabularData, labels: np.ndarray) -> TabularData:
    """Class labels (any values) -> int64 codes in sorted label order; in `classes` the labels
    as the file gives them (integers stay integers: a model exported from the sweep answers
    3, not '3', and compares equal to the file's own column)."""
    classes, codes = np.unique(labels.astype(str) if labels.dtype == object else labels,
                               return_inverse=True)
    return dataclasses.replace(data, y=codes.astype(np.int64), classes=tuple(c.item() for c in classes),
                               notes=data.notes + f"; {len(classes)} classes")


def _load_sklearn_classes(loader: str, about: str):
    """A classification set bundled with scikit-learn (works offline)."""
    def load(data_dir: str | None, include_random_vars: bool) -> TabularData:
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, loader)()
        name = loader.removeprefix("load_")
        classes = tuple(str(c) for c in bunch.target_names)
        return TabularData(name, np.asarray(bunch.data, dtype=np.float64),
                           np.asarray(bunch.target, dtype=np.int64),
                           tuple(str(f) for f in bunch.feature_names), DEFAULT_TARGETS[name], "",
                           notes=f"scikit-learn {loader}: {about}", classes=classes)
    return load


_LOADERS = {"air_quality": _load_air_quality, "appliances": _load_appliances, "diabetes": _load_diabetes,
            "breast_cancer": _load_sklearn_classes("load_breast_cancer",
                                                   "569 tumours, 30 features, malignant / benign"),
            "wine": _load_sklearn_classes("load_wine", "178 wines, 13 features, 3 cultivars"),
            "iris": _load_sklearn_classes("load_iris", "150 flowers, 4 features, 3 species")}
