"""The statistics the tables report: t intervals, paired tests over resampled splits, Holm.

Cross-validation folds share training rows, so the scores of two models on them are correlated
and Student's paired t over the folds underestimates the variance of the mean difference
(Dietterich 1998; Nadeau & Bengio 2003). The report's default paired test is therefore the
corrected resampled t test, whose variance factor 1/J + n2/n1 (`variance_factor`) also gives
the Bayesian correlated t test its scale and the corrected interval its width; the derivations
and the choice of references are in docs/analysis.md, "Paired tests over resampled splits".
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.document import fixed

DEFAULT_TEST = "corrected"
ALPHA = 0.05            # a frequentist test's difference: p (Holm) below it
CREDIBLE = 0.95         # a Bayesian one's: P(better) or P(worse) above it
FEW_PAIRS = 5           # at or below it every test has little power (notes say so)
# Two scores are the same when they differ by no more than this relative amount: a score is a
# mean of a handful of float64 values (rounding ~1e-15 relative), a real difference of two
# models' scores is far larger.
SAME = 1e-9

# Each --test: its short name (the sweep's verdict line) and what the notes call it.
TESTS = {
    "corrected": ("corrected t", "the corrected resampled t test (Nadeau & Bengio 2003; over r "
                  "repeats of k-fold the corrected repeated k-fold test, Bouckaert & Frank 2004)"),
    "t": ("Student's t", "Student's paired t-test, uncorrected (it ignores that the splits share "
          "training rows, so its p is too small)"),
    "wilcoxon": ("Wilcoxon", "the Wilcoxon signed-rank test, uncorrected (it ignores that the "
                 "splits share training rows)"),
    "bayes": ("Bayesian correlated t", "the Bayesian correlated t test (Corani & Benavoli 2015; "
              "Benavoli et al. 2017)"),
}


class PairedTestError(ValueError):
    """A --test / --rope the report cannot use; the message names the problem and the fix."""


@dataclass(frozen=True)
class PairedTest:
    """The report's paired test (`name`, a key of TESTS) and, for "bayes", its region of practical
    equivalence [-rope, rope] in the metric's units. Build it with `paired_test_of`."""
    name: str = DEFAULT_TEST
    rope: float | None = None

    @property
    def bayesian(self) -> bool:
        return self.name == "bayes"

    @property
    def ratio_used(self) -> bool:
        """Whether it corrects for the splits' overlap (reads n2/n1)."""
        return self.name in ("corrected", "bayes")

    @property
    def short(self) -> str:
        return TESTS[self.name][0]

    def description(self) -> str:
        rope = f", region of practical equivalence ±{self.rope:g}" if self.bayesian else ""
        return f"{TESTS[self.name][1]}{rope}"


def paired_test_of(name: str = DEFAULT_TEST, rope: float | None = None) -> PairedTest:
    """The PairedTest of --test and --rope, or PairedTestError saying what to pass instead."""
    if name not in TESTS:
        raise PairedTestError(f"--test {name} is unknown: use one of {', '.join(TESTS)}")
    if rope is not None and name != "bayes":
        raise PairedTestError(f"--rope applies to --test bayes only (the test here is {name}): "
                              "drop --rope, or pass --test bayes")
    if name == "bayes" and rope is None:
        raise PairedTestError("--test bayes needs --rope X, the region of practical equivalence "
                              "[-X, X] in the metric's units (accuracy as a fraction: 0.01 is "
                              "one point; RMSE in the target's unit); --rope 0 for none")
    if rope is not None and not (math.isfinite(rope) and rope >= 0):
        raise PairedTestError(f"--rope {rope:g} must be a finite number >= 0 (the half width of "
                              "the region of practical equivalence, in the metric's units)")
    return PairedTest(name, rope)


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


def variance_factor(n: int, ratio: float) -> float:
    """Nadeau & Bengio's (2003) factor of s² in the variance of the mean of n paired
    differences over resampled splits with n2/n1 = `ratio` (test rows / training rows):
    1/n + n2/n1. ratio = 0 gives Student's 1/n."""
    return 1.0 / n + ratio


def same(a, b) -> np.ndarray:
    """Elementwise: two scores equal up to float rounding (SAME)."""
    return np.isclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=SAME, atol=0)


def corrected_t(d, ratio: float) -> tuple[float, float]:
    """(t, two-sided p) of the corrected resampled t test of the differences d (Nadeau & Bengio
    2003): t = mean(d) / sqrt(variance_factor(J, ratio) · s²), s² = var(d, ddof 1), J − 1
    degrees of freedom; ratio = 0 is Student's paired t. J < 2: no test (NaN); s = 0 with a
    nonzero mean: the formula's limit, t = ±inf and p = 0."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2 or not math.isfinite(ratio):
        return float("nan"), float("nan")
    mean, s2 = float(d.mean()), float(d.var(ddof=1))
    if s2 == 0:
        return math.copysign(math.inf, mean), 0.0
    t = mean / math.sqrt(variance_factor(len(d), ratio) * s2)
    return t, float(2 * stats.t.sf(abs(t), len(d) - 1))


def corrected_half_width(d, ratio: float, level: float) -> float:
    """t_{(1+level)/2, J−1} · sqrt(variance_factor(J, ratio) · s²): the half width of the
    corrected interval of mean(d) (ratio = 0: Student's); NaN with J < 2."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2 or not math.isfinite(ratio):
        return float("nan")
    scale = math.sqrt(variance_factor(len(d), ratio) * d.var(ddof=1))
    return float(stats.t.ppf((1 + level) / 2, len(d) - 1) * scale)


def difference_interval(d, test: PairedTest, ratio: float, level: float) -> tuple:
    """(mean, half width, J) of the paired differences d (NaN dropped) with the interval that
    goes with `test`: corrected (corrected_half_width) where the test corrects for the splits'
    overlap, Student's (ratio 0) for the uncorrected ones."""
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    if not len(d):
        return float("nan"), float("nan"), 0
    half = corrected_half_width(d, ratio if test.ratio_used else 0.0, level)
    return float(d.mean()), half, len(d)


def bayes_correlated(d, ratio: float, rope: float) -> tuple[float, float, float]:
    """(P(left), P(rope), P(right)) of the Bayesian correlated t test (Corani & Benavoli 2015;
    Benavoli et al. 2017, JMLR 18(77), eq. 11): the posterior of the mean difference is Student's
    t with J − 1 degrees of freedom, location mean(d) and scale sqrt(variance_factor(J, ratio) ·
    s²) (their ρ/(1 − ρ) with ρ = n2/(n1 + n2) is n2/n1); the three parts are
    (-inf, -rope), [-rope, rope], (rope, inf). J < 2: NaN; s = 0: the posterior is all at
    mean(d)."""
    d = np.asarray(d, dtype=float)
    if len(d) < 2 or not math.isfinite(ratio):
        return float("nan"), float("nan"), float("nan")
    mean, s2 = float(d.mean()), float(d.var(ddof=1))
    if s2 == 0:
        return float(mean < -rope), float(-rope <= mean <= rope), float(mean > rope)
    post = stats.t(len(d) - 1, loc=mean, scale=math.sqrt(variance_factor(len(d), ratio) * s2))
    left, right = float(post.cdf(-rope)), float(post.sf(rope))
    return left, 1.0 - left - right, right


def paired_test(a, b, test: PairedTest = PairedTest(), ratio: float = math.nan) -> dict:
    """The paired test of a − b over J paired scores (one per split), `ratio` = n2/n1 of the
    splits (resampling.design): {"statistic", "p"}, or for "bayes" {"p_left", "p_rope",
    "p_right"} (left: a below b by more than the rope). Identical scores (`same`): t = 0, p = 1
    and P(rope) = 1; J < 2 (one split): NaN, no test."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = a - b
    if len(d) >= 2 and same(a, b).all():
        d = np.zeros_like(d)                    # rounding's differences are no difference
    if test.bayesian:
        return dict(zip(("p_left", "p_rope", "p_right"), bayes_correlated(d, ratio, test.rope)))
    if len(d) >= 2 and not d.any():
        return {"statistic": 0.0, "p": 1.0}
    if test.name == "wilcoxon":
        return _wilcoxon(d)
    stat, p = corrected_t(d, ratio if test.ratio_used else 0.0)
    return {"statistic": stat, "p": p}


def no_test(test: PairedTest) -> dict:
    """paired_test's columns where there is no test (rows of several designs: resampling)."""
    keys = ("p_left", "p_rope", "p_right") if test.bayesian else ("statistic", "p")
    return dict.fromkeys(keys, math.nan)


def _wilcoxon(d: np.ndarray) -> dict:
    if len(d) < 2:
        return {"statistic": float("nan"), "p": float("nan")}
    with warnings.catch_warnings():     # near-identical scores: scipy warns, the p is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.wilcoxon(d)
    return {"statistic": float(res.statistic), "p": float(res.pvalue)}


def decide(frame, test: PairedTest):
    """A table's family of paired tests (`paired_test`'s columns) decided together: for a
    frequentist test `p_holm` (Holm over the family) and `significant` = p_holm < ALPHA; for
    "bayes" `significant` = P(left) or P(right) above CREDIBLE (no Holm: the posterior
    probabilities are not p-values). Returns a copy."""
    out = frame.copy()
    if test.bayesian:
        out["significant"] = (out["p_left"] > CREDIBLE) | (out["p_right"] > CREDIBLE)
    else:
        out["p_holm"] = holm(out["p"])
        out["significant"] = out["p_holm"] < ALPHA
    return out


def test_cells(frame, test: PairedTest) -> dict:
    """A table's test columns as its view shows them: p and p (Holm), or for "bayes" the three
    posterior probabilities; where there is no test (one split), the report's mark for a
    missing number (was the text "nan")."""
    cols = (("p_left", "P(left)"), ("p_rope", "P(rope)"), ("p_right", "P(right)")) \
        if test.bayesian else (("p", "p"), ("p_holm", "p (Holm)"))
    return {shown: fixed(frame[c], ".2g") for c, shown in cols}


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


def no_test_notes(table) -> list:
    """One note per data set whose comparisons have no test, saying why (the `no_test` column:
    rows of several designs, a published split), so the table says it, not only its CSV."""
    if "no_test" not in table:
        return []
    why = table.loc[table["no_test"].fillna("") != "", ["dataset", "no_test"]].drop_duplicates()
    return [f"No test for {d}: {n}." for d, n in zip(why["dataset"], why["no_test"])]


def paired_test_notes(test: PairedTest, n_pairs) -> list:
    """What every table with paired tests says of its test: which one, what decides a
    difference, and, where a comparison has J <= FEW_PAIRS pairs, that the test has little power."""
    notes = [f"Test: {test.description()}, two-sided, over the (seed, fold) pairs (a fold of "
             "one seed's splits; seeds re-split the data). "]
    if test.bayesian:
        notes[0] += (f"p_left, p_rope, p_right: the posterior probabilities that the difference "
                     f"is below -{test.rope:g}, within ±{test.rope:g}, above {test.rope:g} "
                     f"(metric's units; accuracy as a fraction); a difference is called where "
                     f"p_left or p_right > {CREDIBLE:g}.")
    else:
        notes[0] += (f"p (Holm): Holm's step-down correction over the table's family; "
                     f"significant: p (Holm) < {ALPHA:g}.")
    if test.ratio_used:
        notes.append("The variance of the mean difference is s²·(1/J + n2/n1) over J pairs, "
                     "n2/n1 = test rows / training rows of the splits (size_ratio; k-fold: "
                     "about 1/(k − 1)), J − 1 degrees of freedom; with one split (a published "
                     "test set) there is no test.")
    if test.name == "wilcoxon":
        notes.append("With n pairs the smallest attainable Wilcoxon p is 2/2^n (0.0625 at n = 5).")
    pairs = np.asarray(n_pairs, dtype=float)
    if len(pairs) and np.nanmin(pairs) <= FEW_PAIRS:
        notes.append(f"Some comparisons rest on {FEW_PAIRS} pairs or fewer: every test has little "
                     "power there, and no significant difference is not evidence of equivalence.")
    return notes
