"""How a data set's rows were resampled, as the paired tests need it: the pairing unit and the
ratio n2/n1 of test rows to training rows (Nadeau & Bengio's correction).

A sweep's seeds re-split the data (k-fold and holdout splits are drawn from the seed:
sbfn_dist/data/splits.py, images.py), so one split is a (seed, fold) and r seeds of k folds give
J = k·r paired scores (Bouckaert & Frank 2004). A published test split (`split` = "fixed") is
the same split for every seed: one split, no test. The sizes come from the records: n2 =
`n_test`, n1 = `n_train` + `n_val` (tabular classification and images hold the validation part
out of the training part); rows without sizes (older tables) fall back to k-fold's 1/(k − 1).
"""

import math
from dataclasses import dataclass

import pandas as pd

from analysis.configs import fold_values

UNIT = ("seed", "fold")
FIXED = "fixed"


@dataclass(frozen=True)
class Design:
    """The pairing unit of a data set's rows, its n2/n1 (`ratio`; NaN: unknown, no corrected
    test), and a note when there is no test ("" otherwise)."""
    unit: tuple
    ratio: float
    note: str = ""


def design(rows: pd.DataFrame) -> Design:
    """The resampling design of one data set's rows."""
    schemes = sorted(set(rows["split"].dropna())) if "split" in rows else []
    if len(schemes) > 1:
        return Design(UNIT, math.nan, f"rows of {len(schemes)} split schemes "
                      f"({', '.join(schemes)}) are not one resampling design: no test")
    if schemes == [FIXED]:
        return Design(("fold",), math.nan, "one split (a published test set): no test")
    return Design(UNIT, size_ratio(rows))


def size_ratio(rows: pd.DataFrame) -> float:
    """n2/n1 of the rows' splits: mean test rows over mean training rows (n_train + n_val),
    each split counted once; without sizes 1/(k − 1) for the k folds (`folds`, else the
    distinct folds of a seed); NaN for one fold."""
    splits = rows.drop_duplicates(list(UNIT))
    if {"n_train", "n_test"} <= set(rows) and splits[["n_train", "n_test"]].notna().all().all():
        n_val = splits["n_val"].fillna(0) if "n_val" in splits else 0
        return float(splits["n_test"].mean() / (splits["n_train"] + n_val).mean())
    given = rows["folds"].dropna() if "folds" in rows else pd.Series(dtype=float)
    k = given.iloc[0] if given.nunique() == 1 else splits.groupby("seed")["fold"].nunique().max()
    return 1.0 / (k - 1) if k > 1 else math.nan


def paired_wide(rows: pd.DataFrame, column: str, metric: str, unit=UNIT) -> pd.DataFrame:
    """The metric per unit (index) and value of `column` (columns), only the units where every
    value has a score."""
    long = fold_values(rows, [column], metric, unit=unit)
    return long.pivot(index=list(unit), columns=column, values=metric).dropna()
