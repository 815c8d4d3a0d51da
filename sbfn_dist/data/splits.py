"""Train/test splits as (train_idx, test_idx) int arrays, each deterministic in (seed, n).

A classification target (`classes` set) is split stratified, so every part keeps the class shares."""

from __future__ import annotations

import math

import numpy as np
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold, StratifiedShuffleSplit

from sbfn_dist.catalog import CATALOG
from sbfn_dist.data.checks import require_rows
from sbfn_dist.data.tabular import TabularData
from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.settings.fields import SPLITS as SCHEMES
from sbfn_dist.settings.tasks import STACKED

Split = tuple[np.ndarray, np.ndarray]


def kfold_splits(n: int, folds: int, seed: int, labels: np.ndarray | None = None,
                 classes: tuple | None = None) -> list[Split]:
    """Seeded shuffled k-fold: every row is in exactly one test set (stratified by `labels`,
    the codes of `classes`)."""
    if folds < 2:
        raise ConfigError("folds", folds, "k-fold needs at least 2 folds (use scheme='holdout' for one split)")
    require_rows(n, folds, "folds")
    if labels is None:
        kfold = KFold(n_splits=folds, shuffle=True, random_state=seed)
        return [(train, test) for train, test in kfold.split(np.arange(n))]
    _check_class_counts(labels, folds, "folds", classes)
    kfold = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return [(train, test) for train, test in kfold.split(np.arange(n), labels)]


def validation_part(labels: np.ndarray, rows: np.ndarray, fraction: float, seed: int,
                    classes=None):
    """(kept rows, held-out rows): a stratified, seeded `fraction` of `rows` held out (sorted),
    e.g. the validation part that stacked combiners fit on (`classes`: the names of the codes
    in `labels`, for the error)."""
    from sklearn.model_selection import train_test_split
    try:
        keep, val = train_test_split(rows, test_size=fraction, random_state=seed,
                                     stratify=labels[rows])
    except ValueError:
        raise DataError(f"val_fraction={fraction} cannot hold out a stratified part of {len(rows)} "
                        f"rows: {_validation_fix(labels[rows], fraction, classes)}, or leave out the "
                        f"combiners that fit on it ({', '.join(STACKED)})") from None
    return np.sort(keep), np.sort(val)


def _validation_fix(labels: np.ndarray, fraction: float, classes) -> str:
    """Why a stratified part of `fraction` of these rows fails, and the fix: each part needs a
    row of every class (scikit-learn's train_test_split holds out ceil(fraction * n) rows)."""
    n, counts = len(labels), np.bincount(labels)
    present = np.flatnonzero(counts)
    rare = present[counts[present].argmin()]
    if counts[rare] < 2:
        return (f"class {_class_name(rare, classes)} has a single row among them, which cannot be "
                "in both parts: add rows of it, or merge it into another class")
    held_out = math.ceil(fraction * n)
    if held_out < len(present):
        return (f"the held-out part ({held_out} of {n}) needs a row of each of the "
                f"{len(present)} classes: use val_fraction >= {len(present) / n:.3g}, or more rows")
    return (f"the rows left ({n - held_out} of {n}) need a row of each of the {len(present)} "
            f"classes: use val_fraction <= {1 - len(present) / n:.3g}, or more rows")


def _check_class_counts(labels: np.ndarray, parts: int, what: str,
                        classes: tuple | None = None) -> None:
    """Every class has a row in each of `parts` stratified parts, else an error naming the
    rarest class (`classes`: the names of the codes in `labels`)."""
    counts = np.bincount(labels)
    rare = int(np.flatnonzero(counts == counts[counts > 0].min())[0])
    n = int(counts[rare])
    if n >= parts:
        return
    name = _class_name(rare, classes)
    fix = (f"use {what} <= {n} or a data set with more rows of that class" if n >= 2 else
           "and no split puts a one-row class in both a training and a test part: drop its "
           "row, merge it into another class, or add rows of it")
    raise DataError(f"a class has only {n} row{'s' if n != 1 else ''}, fewer than the {parts} "
                    f"{what} (class {name}): stratified splits need every class in every part"
                    f"{'; ' if n >= 2 else ', '}{fix}")


def fixed_split(mask: np.ndarray) -> list[Split]:
    """The one split given by a boolean test mask (e.g. a published test set)."""
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.ndim != 1:
        raise DataError(f"a fixed split needs a 1-D boolean test mask, got dtype {mask.dtype} shape {mask.shape}: "
                        f"mark test rows True and training rows False")
    if mask.all() or not mask.any():
        raise DataError(f"the fixed test mask marks {int(mask.sum())} of {mask.size} rows as test: both the "
                        f"training and the test set need rows; fix the mask or use scheme='kfold'")
    return [(np.flatnonzero(~mask), np.flatnonzero(mask))]


def fixed_train_kfold_splits(mask: np.ndarray, folds: int, seed: int,
                             labels: np.ndarray | None = None,
                             classes: tuple | None = None) -> list[Split]:
    """Seeded k-fold inside the training rows of a published split, for tuning: the published
    test rows appear in no part of any fold, so a configuration chosen on these folds can be
    scored once on the fixed split without having seen its test rows."""
    [(train, _)] = fixed_split(mask)
    inner = kfold_splits(len(train), folds, seed, None if labels is None else labels[train],
                         classes)
    return [(train[inner_train], train[inner_val]) for inner_train, inner_val in inner]


def holdout_splits(n: int, n_splits: int, test_fraction: float, seed: int,
                   labels: np.ndarray | None = None, classes: tuple | None = None) -> list[Split]:
    """``n_splits`` independent seeded random holdouts of ``test_fraction`` of the rows."""
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError("test_fraction", test_fraction, "use a fraction strictly between 0 and 1, e.g. 0.2")
    if n_splits < 1:
        raise ConfigError("folds", n_splits, "holdout needs at least 1 repeat")
    n_test = int(np.ceil(test_fraction * n))  # ShuffleSplit's rounding of the test size
    if n < 2 or n_test >= n:
        raise DataError(f"too few rows for a holdout: {n} rows with test_fraction={test_fraction} leave no "
                        f"training rows; use a smaller test_fraction or more rows")
    if labels is None:
        shuffle = ShuffleSplit(n_splits=n_splits, test_size=test_fraction, random_state=seed)
    else:
        _check_class_counts(labels, 2, "parts (train and test)", classes)
        shuffle = StratifiedShuffleSplit(n_splits=n_splits, test_size=test_fraction, random_state=seed)
    # Sorted so the row order inside each part does not depend on the shuffle.
    return [(np.sort(train), np.sort(test)) for train, test in shuffle.split(np.arange(n), labels)]


def make_splits(data: TabularData, scheme: str, folds: int = 10, seed: int = 0,
                test_fraction: float = 0.2) -> list[Split]:
    """Splits of ``data`` by ``scheme``: "kfold" (``folds`` folds), "holdout" (``folds`` repeats of
    ``test_fraction``), "fixed" (the data set's published test rows), or "fixed_train_kfold"
    (``folds``-fold CV inside the published training rows only, for tuning)."""
    labels = data.y if data.classes is not None else None
    if scheme == "kfold":
        return kfold_splits(data.n_rows, folds, seed, labels, data.classes)
    if scheme == "holdout":
        return holdout_splits(data.n_rows, folds, test_fraction, seed, labels, data.classes)
    if scheme in ("fixed", "fixed_train_kfold"):
        if data.fixed_test_mask is None:
            raise DataError(f"data set '{data.name}' has no published test split for scheme='{scheme}': "
                            f"use scheme='kfold' or 'holdout', or a data set that has one "
                            f"({_with_fixed_split()})")
        if scheme == "fixed_train_kfold":
            return fixed_train_kfold_splits(data.fixed_test_mask, folds, seed, labels,
                                            data.classes)
        return fixed_split(data.fixed_test_mask)
    raise ConfigError("split scheme", scheme, f"use one of {', '.join(SCHEMES)}")


def _with_fixed_split() -> str:
    # appliances: only when the Candanedo dates file is available; sincos: always.
    return ", ".join(n for n, d in CATALOG.items() if d.fixed_split)


def _class_name(code: int, classes) -> str:
    """How an error names class `code`: by its name in `classes`, else as the code."""
    if classes is None:
        return f"code {code}"
    name = classes[code]
    return repr(name.item() if isinstance(name, np.generic) else name)    # 'z', not np.str_('z')
