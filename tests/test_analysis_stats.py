"""The paired tests over resampled splits (analysis/stats.py, resampling.py) against the
formulas computed here by hand: Nadeau & Bengio's corrected resampled t, Bouckaert & Frank's
repeated k-fold case, holdout sizes, the published split's exception, the Bayesian correlated t
test, and the degenerate cases."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp

from analysis import tables
from analysis.report import main
from analysis.resampling import design, size_ratio
from analysis.stats import PairedTest, paired_test, paired_test_of

CORRECTED, NAIVE = PairedTest("corrected"), PairedTest("t")
# A p-value from scipy's t distribution: a few ulps of its arguments, far below this.
P_TOL = 1e-12


def rows(scores: dict, seeds=(0,), n_train=90, n_test=10, n_val=None, split="kfold") -> list:
    """scores: {model: [score of split 0, 1, ...]} in (seed, fold) order, folds per seed
    len(scores) / len(seeds) -> ok regression rows."""
    out = []
    for model, values in scores.items():
        k = len(values) // len(seeds)
        for i, v in enumerate(values):
            out.append(dict(dataset="d", task="regression", model=model, seed=seeds[i // k],
                            fold=i % k, rmse=v, n_train=n_train, n_test=n_test, n_val=n_val,
                            split=split, status="ok"))
    return out


def hand_corrected(d, ratio: float) -> tuple[float, float]:
    """t = mean / sqrt((1/J + n2/n1) s²), two-sided p with J − 1 degrees of freedom."""
    d = np.asarray(d, dtype=float)
    j = len(d)
    t = d.mean() / math.sqrt((1 / j + ratio) * d.var(ddof=1))
    return t, 2 * sp.t.sf(abs(t), j - 1)


def pair_of(scores: dict, **kw) -> pd.Series:
    _, pairs = tables.ranking(pd.DataFrame(rows(scores, **kw)), "regression")
    return pairs.iloc[0]


def test_the_corrected_p_is_nadeau_and_bengio_s_formula_with_the_recorded_sizes():
    a = [3.0, 2.5, 4.0, 3.2, 2.9, 3.6, 3.1, 2.2, 3.9, 3.3]
    b = [3.4, 2.6, 4.5, 3.1, 3.5, 3.9, 3.0, 2.9, 4.4, 3.6]
    pair = pair_of({"a": a, "b": b}, n_train=90, n_test=10)
    t, p = hand_corrected(np.subtract(a, b), 10 / 90)
    assert (pair["better"], pair["n_pairs"], pair["size_ratio"]) == ("a", 10, pytest.approx(1 / 9))
    assert pair["statistic"] == pytest.approx(t, rel=1e-12)
    assert pair["p"] == pytest.approx(p, rel=0, abs=P_TOL)
    assert pair["p_holm"] == pair["p"] and pair["test"] == "corrected"


def test_on_consistent_folds_the_corrected_p_is_far_larger_than_the_naive_one():
    """Ten folds where a beats b by about the same amount each time (positively correlated
    folds): Student's t takes them as ten independent draws."""
    a = np.linspace(1.0, 2.0, 10)
    b = a + 0.05 + 0.01 * np.array([1, -1, 2, 0, -2, 1, 0, -1, 1, -1])
    corrected = pair_of({"a": list(a), "b": list(b)})
    naive = paired_test(a, b, NAIVE)
    assert naive["p"] == pytest.approx(sp.ttest_rel(a, b).pvalue, rel=1e-9)
    assert naive["p"] < 1e-6 and corrected["p"] > 20 * naive["p"]      # 1.1e-5 against 4.8e-7
    assert corrected["p"] == pytest.approx(hand_corrected(a - b, 1 / 9)[1], rel=0, abs=P_TOL)


def test_repeated_cv_pairs_each_seed_s_folds_j_is_k_times_r():
    """3 seeds (each re-splits the data) x 5 folds: J = 15 pairs, 14 degrees of freedom; a test
    over the 5 seed-averaged folds would have 4."""
    rng = np.random.default_rng(3)
    a = rng.normal(10, 1, 15)
    b = a + rng.normal(0.3, 0.5, 15)
    pair = pair_of({"a": list(a), "b": list(b)}, seeds=(0, 1, 2), n_train=80, n_test=20)
    assert pair["n_pairs"] == 15
    assert pair["p"] == pytest.approx(hand_corrected(a - b, 0.25)[1], rel=0, abs=P_TOL)
    averaged = (a - b).reshape(3, 5).mean(0)
    assert pair["p"] != pytest.approx(hand_corrected(averaged, 0.25)[1], rel=1e-3)


def test_a_holdout_split_is_corrected_with_its_sizes_training_including_validation():
    split = pd.DataFrame(rows({"a": [1.0, 2.0]}, n_train=200, n_val=50, n_test=100,
                              split="holdout"))
    assert size_ratio(split) == pytest.approx(100 / 250, rel=1e-15)
    a, b = [0.80, 0.82, 0.79, 0.84], [0.78, 0.81, 0.80, 0.80]
    pair = pair_of({"a": a, "b": b}, n_train=200, n_val=50, n_test=100, split="holdout")
    assert pair["p"] == pytest.approx(hand_corrected(np.subtract(a, b), 0.4)[1], rel=0,
                                      abs=P_TOL)


def test_without_sizes_k_fold_s_ratio_is_one_over_k_minus_one():
    plain = pd.DataFrame(rows({"a": [1.0] * 4})).drop(columns=["n_train", "n_test"])
    assert size_ratio(plain) == pytest.approx(1 / 3)
    assert size_ratio(plain.assign(folds=10)) == pytest.approx(1 / 9)


def test_a_published_test_split_is_one_split_whatever_the_seeds_no_test():
    """Seeds re-train the members on the same published split: three seeds are not three
    splits."""
    scores = {"a": [1.0, 1.1, 0.9], "b": [2.0, 2.2, 2.1]}
    table = pd.DataFrame(rows(scores, seeds=(0, 1, 2), split="fixed"))
    assert design(table).unit == ("fold",)
    ranks, pairs = tables.ranking(table, "regression")
    assert list(ranks["model"]) == ["a", "b"] and ranks["n_pairs"].tolist() == [1, 1]
    assert math.isnan(pairs.loc[0, "p"]) and "published test set" in pairs.loc[0, "no_test"]
    assert ranks.loc[0, "mean"] == pytest.approx(1.0)


def test_rows_of_two_split_schemes_get_no_test():
    table = pd.DataFrame(rows({"a": [1.0, 2.0, 3.0], "b": [2.0, 2.5, 3.9]}))
    table.loc[table["fold"] == 0, "split"] = "holdout"
    pairs = tables.ranking(table, "regression")[1]
    assert math.isnan(pairs.loc[0, "p"]) and "2 resampling designs" in pairs.loc[0, "no_test"]


def two_designs(scores_5: dict, scores_3: dict) -> pd.DataFrame:
    """One data set swept twice (the user's demo and diabetes-width): 5-fold CV of every row,
    and 3-fold CV of a 200-row subset, both seed 0."""
    five = pd.DataFrame(rows(scores_5, n_train=353, n_test=89)).assign(folds=5, n_samples=None)
    three = pd.DataFrame(rows(scores_3, n_train=133, n_test=67)).assign(folds=3, n_samples=200)
    return pd.concat([five, three], ignore_index=True)


def test_rows_of_two_designs_are_never_paired_and_get_no_test_naming_both():
    """Fold 0 of the 5-fold split of 442 rows and fold 0 of the 3-fold split of 200 are other
    test rows: 8 splits, not 5 (seed, fold)s averaging the two sweeps, and no test."""
    a5, b5, a3, b3 = [1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 2.6, 3.4, 4.7, 5.5], [9.0, 8.0, 7.0], \
        [9.2, 8.5, 7.1]
    ranks, pairs = tables.ranking(two_designs({"a": a5, "b": b5}, {"a": a3, "b": b3}),
                                  "regression")
    assert ranks["n_pairs"].tolist() == [8, 8]
    assert ranks.set_index("model")["mean"]["a"] == pytest.approx(np.mean(a5 + a3), rel=1e-12)
    assert math.isnan(pairs.loc[0, "p"]) and math.isnan(pairs.loc[0, "size_ratio"])
    note = pairs.loc[0, "no_test"]
    assert "2 resampling designs" in note
    assert "kfold, folds 3, 200 rows" in note and "kfold, folds 5, all rows" in note


@pytest.mark.parametrize("test", [NAIVE, PairedTest("wilcoxon"), paired_test_of("bayes", 0.1)])
def test_two_designs_get_no_test_whatever_the_test_even_those_without_n2_n1(test):
    table = two_designs({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [1.5, 2.6, 3.4, 4.7, 5.5]},
                        {"a": [9.0, 8.0, 7.0], "b": [9.2, 8.5, 7.1]})
    pair = tables.ranking(table, "regression", test)[1].iloc[0]
    assert pair[["p_left", "p_rope", "p_right"] if test.bayesian else ["p"]].isna().all()
    assert not pair["significant"]


def test_a_design_s_splits_pair_only_with_the_same_design_s():
    """b has rows of the 3-fold design only: no split of the 5-fold design pairs with them."""
    table = two_designs({"a": [1.0, 2.0, 3.0, 4.0, 5.0]}, {"a": [9.0, 8.0, 7.0],
                                                           "b": [9.2, 8.5, 7.1]})
    ranks = tables.ranking(table, "regression")[0]
    assert ranks["n_pairs"].tolist() == [3, 3]
    assert ranks.set_index("model")["mean"]["a"] == pytest.approx(8.0, rel=1e-12)


def test_one_design_s_rows_are_still_tested():
    table = two_designs({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [1.5, 2.6, 3.4, 4.7, 5.5]}, {})
    pair = tables.ranking(table, "regression")[1].iloc[0]
    assert pair["no_test"] == "" and pair["p"] == pytest.approx(
        hand_corrected(np.subtract([1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 2.6, 3.4, 4.7, 5.5]),
                       89 / 353)[1], rel=0, abs=P_TOL)


def test_the_bayesian_correlated_t_test_is_the_posterior_student_t():
    d = np.array([0.012, 0.004, 0.020, -0.003, 0.010, 0.015, 0.007, 0.001])
    b = np.full(8, 0.8)
    rope, ratio = 0.005, 0.25
    got = paired_test(b + d, b, paired_test_of("bayes", rope), ratio)
    scale = math.sqrt((1 / 8 + ratio) * d.var(ddof=1))
    left = sp.t.cdf((-rope - d.mean()) / scale, 7)
    right = sp.t.sf((rope - d.mean()) / scale, 7)
    assert (got["p_left"], got["p_right"]) == pytest.approx((left, right), rel=1e-9)
    assert got["p_left"] + got["p_rope"] + got["p_right"] == pytest.approx(1, abs=1e-15)
    # the ranking calls a difference only past CREDIBLE, and shows no Holm for a posterior
    pairs = tables.ranking(pd.DataFrame(rows({"a": list(b + d), "b": list(b)})), "regression",
                           paired_test_of("bayes", rope))[1]
    assert "p_holm" not in pairs and not pairs.loc[0, "significant"]


@pytest.mark.parametrize("test", [CORRECTED, NAIVE, PairedTest("wilcoxon")])
def test_identical_scores_are_no_difference(test):
    a = np.array([0.7, 0.8, 0.9])
    assert paired_test(a, a.copy(), test, 0.5) == {"statistic": 0.0, "p": 1.0}
    assert paired_test(a, a.copy(), paired_test_of("bayes", 0.0), 0.5) == \
        {"p_left": 0.0, "p_rope": 1.0, "p_right": 0.0}


def test_one_pair_has_no_test():
    got = paired_test([0.9], [0.8], CORRECTED, 0.25)
    assert math.isnan(got["statistic"]) and math.isnan(got["p"])
    assert all(math.isnan(v) for v in paired_test([0.9], [0.8], paired_test_of("bayes", 0.01),
                                                  0.25).values())


def test_a_constant_nonzero_difference_is_the_formula_s_limit():
    """s = 0 and mean(d) = 0.5 (exact in binary): t = +inf, p = 0; the posterior is all at 0.5."""
    a, b = np.array([1.5, 2.5, 3.5]), np.array([1.0, 2.0, 3.0])
    assert paired_test(a, b, CORRECTED, 0.25) == {"statistic": math.inf, "p": 0.0}
    assert paired_test(b, a, CORRECTED, 0.25)["statistic"] == -math.inf
    assert paired_test(a, b, paired_test_of("bayes", 0.1), 0.25) == \
        {"p_left": 0.0, "p_rope": 0.0, "p_right": 1.0}
    assert paired_test(a, b, paired_test_of("bayes", 0.5), 0.25)["p_rope"] == 1.0


@pytest.mark.parametrize("args, message", [
    (["--rope", "0.01"], "--rope applies to --test bayes only"),
    (["--test", "bayes", "--rope", "-0.01"], "--rope -0.01 must be a finite number >= 0"),
    (["--test", "bayes"], "--test bayes needs --rope X"),
])
def test_a_rope_that_does_not_fit_the_test_is_one_line(tmp_path, capsys, args, message):
    assert main([str(tmp_path / "none"), "--out", str(tmp_path / "r"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "r").exists()
