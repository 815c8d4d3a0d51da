"""What data must hold before anything trains on it: one function per fact.

    load_tabular              every table: a usable feature, a finite target that varies, or
                              two classes of labels, not measurements (check_table)
    image_files               your images (npz:, folder:): two classes, one image shape,
                              finite pixels (check_images)
    images.holdout_splits     every class has an image for each part of a split
    folds.make_parts          every training part: a varying target, rows for the inner folds,
                              a stratified validation part (folds.check_parts)
    sweeps.engine.checks  the same two, once per data set in the driver, before Ray starts
    estimators                the facts that apply to the X, y given to fit

Each refusal is a DataError that names the problem and the fix. Missing feature values (NaN)
are allowed: they are imputed per training fold (preprocess.FoldScaler).
"""

import numpy as np

from sbfn_dist.errors import DataError


def require_rows(n_rows: int, parts: int, setting: str, of: str = "") -> None:
    """k-fold CV with k = `parts` needs k rows: every test fold holds at least one."""
    if parts > n_rows:
        raise DataError(f"too few rows for the {setting}: {n_rows} rows{of} cannot fill {parts} "
                        f"test folds; use {setting} <= {n_rows} or a data set with more rows")


def require_features(X: np.ndarray, names, what: str) -> None:
    """At least one feature column holds a value, and no value is infinite."""
    if X.shape[1] == 0 or np.isnan(X).all(axis=0).all():
        raise DataError(f"{what} has no numeric feature with a value (columns: "
                        f"{list(names) or 'none'}): add at least one numeric feature column")
    infinite = [str(n) for n, column in zip(names, X.T) if np.isinf(column).any()]
    if infinite:
        raise DataError(f"feature columns {infinite} of {what} hold infinite values: replace "
                        "them by numbers, or leave those cells empty (a missing value is "
                        "imputed per training fold)")


def numeric_target(values, what: str, fix: str) -> np.ndarray:
    """`values` as float64 (NaN: missing), or a DataError naming one that is not a number."""
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        for value in array.ravel():
            try:
                float(value)
            except (TypeError, ValueError):
                raise DataError(f"{what} is not numeric (e.g. {_plain(value)!r}): regression "
                                f"needs numbers; {fix}") from None
    return array.astype(np.float64)


def require_finite_target(y: np.ndarray, what: str) -> None:
    """No target value is ±inf (a missing one, NaN, drops its row when the table is read)."""
    bad = np.flatnonzero(np.isinf(y))
    if bad.size:
        raise DataError(f"{what} holds {bad.size} infinite values (e.g. {y[bad[0]]} on row "
                        f"{bad[0]}): replace them by numbers, or leave those cells empty to drop "
                        "the rows")


def require_varying_target(y: np.ndarray, what: str, fix: str) -> None:
    """A regression target takes at least two values (a constant one cannot be standardised)."""
    if y.size and np.ptp(y) == 0:
        raise DataError(f"{what} is constant ({y[0]:g} on all {y.size} rows): {fix}")


def require_classes(present, what: str, fix: str) -> None:
    """A classification target holds at least two classes."""
    if len(present) < 2:
        raise DataError(f"{what} holds one class ({_plain(present[0])!r}): classification needs "
                        f"at least two classes; {fix}")


def require_images_per_class(counts, classes, parts: int, what: str) -> None:
    """Each class has an image for each of the `parts` parts of a stratified split (train and
    test, and val where one is held out)."""
    few = int(np.argmin(counts))
    if counts[few] < parts:
        n = int(counts[few])
        raise DataError(f"class {_plain(classes[few])!r} of {what} has {n} image"
                        f"{'' if n == 1 else 's'}: a stratified split puts every class in each "
                        f"of its {parts} parts, so each class needs at least {parts}; add images "
                        "of it, or leave the class out")


def require_one_shape(shapes: dict, what: str, fix: str) -> None:
    """Every image has the same (C, H, W): members take one input shape. `shapes` maps an
    example image (a file or a row) to its shape, one per shape found."""
    if len(shapes) > 1:
        (a, sa), (b, sb) = list(shapes.items())[:2]
        raise DataError(f"the images of {what} differ in shape ({a}: {sa}, {b}: {sb}): {fix}")


def require_finite_pixels(x: np.ndarray, what: str) -> None:
    """No pixel value is NaN or infinite (float images)."""
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        row = int(np.flatnonzero(~np.isfinite(x.reshape(len(x), -1)).all(axis=1))[0])
        raise DataError(f"the images of {what} hold values that are NaN or infinite (e.g. in "
                        f"image {row}): replace them by numbers")


def _plain(value):
    """A numpy scalar as the Python value it holds (its repr then reads 'a', not np.str_('a'))."""
    return value.item() if isinstance(value, np.generic) else value


def check_images(data, more_classes: str):
    """`data` (an ImageData of yours) if it has two classes and finite pixels, else DataError;
    `more_classes` says how to add a class to it."""
    where = f"data set '{data.name}'"
    require_classes([data.classes[c] for c in np.unique(data.y)], where, more_classes)
    require_finite_pixels(data.x, where)
    return data


def require_class_labels(classes, target: str, n_rows: int) -> None:
    """A classification target holds labels, not measurements: labels that are all numbers and
    not all whole look continuous (scikit-learn's rule, type_of_target), and each value would
    be a class of a row or two (refused as "a class has only 1 row ...: drop its row")."""
    try:
        values = sorted({float(c) for c in classes})
    except ValueError:
        return                                  # text labels
    if all(v.is_integer() for v in values):
        return
    shown = ", ".join(f"{v:g}" for v in values[:3])
    raise DataError(f"{target} looks continuous ({len(values)} distinct values in {n_rows} "
                    f"rows, e.g. {shown}): classification needs class labels; regress it "
                    "(python -m sweeps.regression, task='regression'), or bin it into classes "
                    "first")


def check_table(data):
    """`data` (a TabularData) if it has a usable feature and a target to learn, else DataError."""
    where = f"data set '{data.name}'"
    require_features(data.X, data.feature_names, where)
    target = f"target '{data.target_name}' of {where}"
    if data.classes is not None:
        require_class_labels(data.classes, target, len(data.y))
        present = [data.classes[c] for c in np.unique(data.y)]
        require_classes(present, target, "pick another target column, or more rows (n_samples)")
        return data
    require_finite_target(data.y, target)
    require_varying_target(data.y, target, "there is nothing to regress; pick another target "
                           "column or check the file")
    return data
