"""How a data set's rows were resampled, as the paired tests need it: the pairing unit and the
ratio n2/n1 of test rows to training rows (Nadeau & Bengio's correction).

A sweep's seeds re-split the data (k-fold and holdout splits are drawn from the seed:
sbfn_dist/data/splits.py, images.py), so one split is a (seed, fold) and r seeds of k folds give
J = k·r paired scores (Bouckaert & Frank 2004). A published test split (`split` = "fixed") is
the same split for every seed: one split, no test. The sizes come from the records: n2 =
`n_test`, n1 = `n_train` + `n_val` (tabular classification and images hold the validation part
out of the training part); rows without sizes (older tables) fall back to k-fold's 1/(k − 1).
Rows of more than one design (the settings that draw the splits: DESIGN) are never paired: fold
0 of a 5-fold split of 442 rows and fold 0 of a 3-fold split of 200 are different test rows.
"""

import math
from dataclasses import dataclass

import pandas as pd

from analysis.configs import fold_values
from analysis.stats import PairedTest, difference_interval, no_test, paired_test

UNIT = ("seed", "fold")
FIXED = "fixed"
# The settings that draw a data set's splits (sbfn_dist/data/splits.py): rows that differ in one
# were tested on other rows, so a (seed, fold) of one is no pair of the other's.
DESIGN = ("split", "folds", "test_fraction", "n_samples")
DESIGN_COLUMN = "split_design"
# The pairing unit of rows of several designs: a split is a (design, seed, fold).
DESIGN_UNIT = (DESIGN_COLUMN, *UNIT)


@dataclass(frozen=True)
class Design:
    """The pairing unit of a data set's rows, its n2/n1 (`ratio`; NaN: unknown, no corrected
    test), and a note when there is no test ("" otherwise)."""
    unit: tuple
    ratio: float
    note: str = ""


def design(rows: pd.DataFrame) -> Design:
    """The resampling design of one data set's rows. Rows of several designs: splits of one are
    paired only with splits of the same (DESIGN_UNIT: callers pair `with_design(rows)`), and no
    test, since neither J nor n2/n1 is one design's (docs/analysis.md, "The pairing unit")."""
    designs = sorted(set(design_names(rows)))
    if len(designs) > 1:
        return Design(DESIGN_UNIT, math.nan, f"rows of {len(designs)} resampling designs "
                      f"({'; '.join(designs)}) are never paired and get no test: report each "
                      "design's sweeps on their own")
    schemes = sorted(set(rows["split"].dropna())) if "split" in rows else []
    if schemes == [FIXED]:
        return Design(("fold",), math.nan, "one split (a published test set): no test")
    return Design(UNIT, size_ratio(rows))


def planned_test(a, b, test: PairedTest, plan: Design) -> dict:
    """paired_test over the plan's splits; none where the plan says so (rows of several designs),
    whatever the test: Student's t and Wilcoxon take no n2/n1, yet their pairs are no one
    design's either."""
    return no_test(test) if plan.unit == DESIGN_UNIT else paired_test(a, b, test, plan.ratio)


def planned_interval(d, test: PairedTest, plan: Design, level: float) -> tuple:
    """difference_interval over the plan's splits: (mean, NaN, J) where there is no test."""
    mean, half, n = difference_interval(d, test, plan.ratio, level)
    return (mean, math.nan, n) if plan.unit == DESIGN_UNIT else (mean, half, n)


def design_names(rows: pd.DataFrame) -> pd.Series:
    """Each row's design in words ("kfold, folds 5, all rows"), from the DESIGN columns the
    rows have."""
    cols = [c for c in DESIGN if c in rows]
    names = [_design_words(dict(zip(cols, v))) for v in rows[cols].itertuples(index=False)]
    return pd.Series(names, index=rows.index, dtype=object)


def _design_words(values: dict) -> str:
    """One design in words; an empty n_samples is every row of the data set."""
    given = lambda v: v is not None and v == v
    words = [str(values["split"])] if given(values.get("split")) else []
    words += [f"{c} {_number(values[c])}" for c in ("folds", "test_fraction")
              if given(values.get(c))]
    if "n_samples" in values:
        words.append(f"{int(values['n_samples'])} rows" if given(values["n_samples"])
                     else "all rows")
    return ", ".join(words)


def _number(value) -> str:
    """5.0 (a column with NaN in it) as 5, 0.2 as 0.2."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def with_design(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with their design as a column, as DESIGN_UNIT pairs them."""
    return rows.assign(**{DESIGN_COLUMN: design_names(rows)})


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
    long = fold_values(with_design(rows), [column], metric, unit=unit)
    return long.pivot(index=list(unit), columns=column, values=metric).dropna()
