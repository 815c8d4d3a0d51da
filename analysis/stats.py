"""The statistics the tables report: t intervals, paired tests, Holm's correction."""

import warnings

import numpy as np
from scipy import stats

TESTS = ("t", "wilcoxon")


def t_interval(values, level: float) -> tuple[float, float, int]:
    """(mean, half width, n) of the Student-t interval mean ± t_{(1+level)/2, n-1} · s / √n.

    s is the sample standard deviation (ddof = 1); with n < 2 the half width is NaN.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return float("nan"), float("nan"), 0
    if n < 2:
        return float(x.mean()), float("nan"), 1
    return float(x.mean()), float(t_half_width(x.std(ddof=1), n, level)), n


def t_half_width(std, n, level: float):
    """t_{(1+level)/2, n-1} · s / √n (arrays welcome); NaN where n < 2."""
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = stats.t.ppf((1 + level) / 2, np.where(n >= 2, n - 1, np.nan))
        return q * np.asarray(std, dtype=float) / np.sqrt(n)


def paired_test(a, b, test: str = "t") -> tuple[float, float]:
    """(statistic, two-sided p) of a paired test of a - b: Student's paired t or Wilcoxon signed-rank."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or np.allclose(a, b):
        return float("nan"), float("nan") if len(a) < 2 else 1.0
    if test not in TESTS:
        raise ValueError(f"paired test '{test}' is unknown: use one of {TESTS}")
    with warnings.catch_warnings():     # near-identical scores: scipy warns, the p is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_rel(a, b) if test == "t" else stats.wilcoxon(a, b)
    return float(res.statistic), float(res.pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error), NaN entries left out and kept NaN.

    Sorted ascending p_(1..m): adjusted p_(i) = max_{j<=i} min(1, (m - j + 1) p_(j)).
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out
