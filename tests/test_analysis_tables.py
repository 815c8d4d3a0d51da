"""The analysis tables on small hand-made results tables, against hand-computed values."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import image_tables as it, tables
from analysis.collect import ResultsError, check_columns, normalise
from analysis.configs import configurations, varying_columns
from analysis.document import MISSING
from analysis.labels import ensemble_label
from analysis.stats import PairedTest, holm, t_interval


def reg_rows(model, values_by_config, **fixed):
    """values_by_config: {lambda2: [rmse of fold 0, fold 1, ...]} -> ok regression rows."""
    rows = []
    for lam, values in values_by_config.items():
        for fold, v in enumerate(values):
            rows.append(dict(dataset="d", task="regression", model=model, fold=fold, seed=0,
                             lambda2=lam, model_params=f'{{"lambda2": {lam}}}', rmse=v,
                             status="ok", error="", n_members=2, epsilon=0.1, **fixed))
    return rows


def test_quartile_table_best_configuration_std_and_quartiles():
    ok = pd.DataFrame(reg_rows("sbfn_ls", {0.0: [1, 3], 1.0: [2, 4], 2.0: [3, 5], 3.0: [4, 6]}))
    bad = pd.DataFrame([dict(dataset="d", model="sbfn_ls", status="diverged", rmse=np.nan)])
    row = tables.quartile_table(ok, bad).iloc[0]
    # per-configuration means 2, 3, 4, 5; best lambda2 = 0 with fold values (1, 3)
    assert row["first_model"] == 2.0
    assert row["std_dev"] == pytest.approx(math.sqrt(2))
    assert (row["q1"], row["q3"]) == (2.75, 4.25)      # linear interpolation of [2, 3, 4, 5]
    assert row["n_configurations"] == 4 and row["excluded_rows"] == 1
    assert row["best_config"] == "λ2=0"                # model_params duplicates lambda2: left out


def test_a_fold_is_first_averaged_over_seeds():
    rows = reg_rows("arithmetic", {0.0: [1, 3]}) + reg_rows("arithmetic", {0.0: [3, 3]})
    rows[2]["seed"] = rows[3]["seed"] = 1
    row = tables.quartile_table(pd.DataFrame(rows), pd.DataFrame(columns=["dataset", "model"])).iloc[0]
    assert row["first_model"] == 2.5                   # folds (1+3)/2 = 2 and (3+3)/2 = 3
    assert row["std_dev"] == pytest.approx(math.sqrt(0.5))


def test_interval_by_m_eps_is_the_t_interval_of_the_best_configuration():
    rows = reg_rows("sbfn_ls", {0.0: [1, 2, 3], 1.0: [5, 6, 7]})
    iv = tables.interval_by_m_eps(pd.DataFrame(rows))
    assert len(iv) == 1
    half = 2.919985580355516 / math.sqrt(3)            # t_{0.95, 2} * s / sqrt(n), s = 1
    assert iv.iloc[0]["mean"] == 2.0
    assert iv.iloc[0]["ci_high"] - 2.0 == pytest.approx(half)
    assert iv.iloc[0]["config"] == "λ2=0"


def test_holm_adjusts_step_down_and_keeps_nan():
    out = holm([0.01, 0.04, 0.03, np.nan])
    assert out[:3] == pytest.approx([0.03, 0.06, 0.06]) and np.isnan(out[3])


def test_t_interval_with_one_value_has_no_width():
    mean, half, n = t_interval([4.0, np.nan], 0.95)
    assert (mean, n) == (4.0, 1) and np.isnan(half)


def test_ranking_orders_models_and_tests_pairs_across_folds():
    a = [1.0, 2.0, 3.0, 4.0]
    b = [x + d for x, d in zip(a, [1.0, 1.1, 0.9, 1.0])]
    rows = [dict(dataset="d", model=m, fold=f, seed=0, rmse=v)
            for m, vals in (("b", b), ("a", a)) for f, v in enumerate(vals)]
    ranks, pairs = tables.ranking(pd.DataFrame(rows), "regression")
    assert list(ranks["model"]) == ["a", "b"] and list(ranks["rank"]) == [1, 2]
    pair = pairs.iloc[0]
    # differences -1, -1.1, -0.9, -1.0: s² = 0.02 / 3; no sizes recorded: n2/n1 = 1/(4 - 1)
    assert pair["statistic"] == pytest.approx(-1 / math.sqrt((1 / 4 + 1 / 3) * 0.02 / 3))
    assert pair["p_holm"] == pair["p"] and pair["significant"]


def test_accuracy_ranking_puts_the_highest_first():
    rows = [dict(dataset="d", model=m, fold=f, seed=0, accuracy=v)
            for m, v in (("moe", 0.5), ("sbfn", 0.9)) for f in range(3)]
    ranks, _ = tables.ranking(pd.DataFrame(rows), "classification")
    assert list(ranks["model"]) == ["sbfn", "moe"]


def img_rows():
    rows = []
    for fold, (sbfn, base, mean) in enumerate([(0.80, 0.70, 0.75), (0.90, 0.72, 0.77)]):
        for model, acc in (("sbfn", sbfn), ("base_avg", base), ("logit_mean", mean)):
            rows.append(dict(dataset="mnist", task="classification", ensemble="mixed",
                             model=model, fold=fold, seed=0, epsilon=0.5, n_members=3,
                             accuracy=acc, status="ok", sweep="s", trial_id=f"t{fold}",
                             train_seconds=2.0, eval_seconds=0.5, gibbs_risk=0.3 + fold / 10))
    return pd.DataFrame(rows)


def test_overall_accuracy_interval_across_splits_and_gains_in_points():
    acc = it.overall_accuracy(img_rows()).set_index("model")
    assert acc.loc["sbfn", "mean"] == pytest.approx(85.0)
    # splits 80 and 90: s = sqrt(50), t_{0.975, 1} = 12.7062
    assert acc.loc["sbfn", "half_width"] == pytest.approx(12.706204736 * math.sqrt(50) / math.sqrt(2))
    assert acc.loc["sbfn", "gain_vs_base_avg"] == pytest.approx(85.0 - 71.0)
    assert acc.loc["sbfn", "gain_vs_mean"] == pytest.approx(85.0 - 76.0)


def test_best_configuration_and_diagnostics_once_per_split():
    df = img_rows()
    worse = df.assign(epsilon=0.1, accuracy=df["accuracy"] - 0.1, trial_id=df["trial_id"] + "b")
    best = it.best_configurations(pd.concat([df, worse])).set_index("model")
    assert best.loc["sbfn", "epsilon"] == 0.5 and best.loc["sbfn", "accuracy_pct"] == pytest.approx(85)
    diag = it.diagnostics_by_epsilon(df)
    assert diag.iloc[0]["gibbs_risk"] == pytest.approx(0.35) and diag.iloc[0]["n"] == 2


def test_ece_and_log_loss_stand_beside_accuracy_averaged_as_it_is():
    """Per split over the rows, then over splits; ECE in %; – for rows without the columns."""
    df = img_rows().assign(ece=lambda d: 0.1 * d["fold"] + 0.05, nll=lambda d: d["accuracy"] / 2)
    acc = it.overall_accuracy(df).set_index("model")
    assert acc.loc["sbfn", "ece_pct"] == pytest.approx(10.0, abs=1e-12)       # 5 % and 15 %
    assert acc.loc["sbfn", "nll"] == pytest.approx(0.425, abs=1e-12)          # (0.40 + 0.45) / 2
    best = it.best_configurations(df).set_index("model")
    assert best.loc["base_avg", "ece_pct"] == pytest.approx(10.0, abs=1e-12)
    view = it.overall_view(it.overall_accuracy(img_rows())).set_index("model")
    assert (view.loc["s-BFN", "ECE (%)"], view.loc["s-BFN", "NLL"]) == ("–", "–")
    assert view.loc["s-BFN", "− Base avg. (pts)"] == "+14.00"


def test_varying_columns_ignore_folds_seeds_and_outputs():
    df = pd.DataFrame(reg_rows("sbfn_ls", {0.0: [1, 2], 1.0: [3, 4]}, train_seconds=1.0))
    df["train_seconds"] = [1.0, 2.0, 3.0, 4.0]
    assert varying_columns(df) == ["lambda2"]


def test_only_registered_hyperparameters_make_a_configuration():
    """A user's label (unregistered) and a registered non-hyper-parameter (device) never split
    configurations; a registered hyper-parameter (epsilon) does."""
    rows = pd.DataFrame(reg_rows("sbfn_ls", {0.0: [1, 2]}) + reg_rows("sbfn_ls", {0.0: [3, 4]}))
    rows["epsilon"] = [0.1, 0.1, 0.3, 0.3]
    rows["my_label"] = ["a", "b", "c", "d"]            # a user's free-form label via `extra`
    rows["device"] = ["cpu", "cuda", "cpu", "cuda"]
    assert varying_columns(rows) == ["epsilon"]
    conf = configurations(rows, "rmse").set_index("epsilon")
    assert conf.loc[0.1, "mean"] == 1.5 and conf.loc[0.3, "mean"] == 3.5
    assert conf.loc[0.1, "config"] == "ε=0.1"


def test_competitor_rows_without_member_settings_are_their_own_configurations():
    """Competitor rows carry no n_members / epsilon (NaN beside the ensemble rows): they keep one
    configuration per grid point and stay out of the (M, ε) table."""
    ens = reg_rows("sbfn_ls", {0.0: [1, 3]})
    comp = [dict(dataset="d", task="regression", model="svm_rbf", fold=f, seed=0, rmse=v,
                 model_params=p, status="ok", error="")
            for p, vals in (('{"C": 1}', [2, 2]), ('{"C": 10}', [4, 6])) for f, v in enumerate(vals)]
    ok = pd.DataFrame(ens + comp)
    q = tables.quartile_table(ok, ok.iloc[:0]).set_index("model")
    assert q.loc["svm_rbf", "n_configurations"] == 2 and q.loc["svm_rbf", "first_model"] == 2.0
    assert q.loc["svm_rbf", "best_config"] == 'params={"C": 1}'
    assert list(tables.interval_by_m_eps(ok)["model"]) == ["sbfn_ls"]


def test_missing_columns_name_them_and_their_producer():
    with pytest.raises(ResultsError, match=r"\['model', 'status'\].*run_trial"):
        check_columns(pd.DataFrame({"dataset": ["d"], "task": ["regression"], "fold": [0],
                                    "seed": [0], "rmse": [1.0]}), "x.parquet")


def test_rows_written_without_trial_id_get_one_key_per_call_family_and_fold():
    """A combiner's own setting (temperature, on the s-BFN rows only) does not split a call; the
    members' settings (n_members) and the fold do; competitors are keyed apart."""
    def call(m, fold):
        return [dict(dataset="iris", task="classification", seed=0, fold=fold, model=model,
                     family="sbfn", n_members=m, epsilon=0.5, status="ok", trial_id="", **extra)
                for model, extra in (("sbfn", {"temperature": 3.0}), ("logit_mean", {}))]
    comp = dict(dataset="iris", task="classification", seed=0, fold=0, model="random_forest",
                family="competitor", competitor_grid="small", status="ok", trial_id="")
    keys = normalise(pd.DataFrame(call(2, 0) + call(2, 1) + call(3, 0) + [comp]), "s")["trial_id"]
    assert keys[0] == keys[1] and keys.nunique() == 4


def test_failed_rows_keep_a_status_and_unknown_status_is_an_error():
    df = pd.DataFrame({"model": [None], "status": ["failed"], "trial_id": ["t"], "dataset": ["d"]})
    assert normalise(df, "s").loc[0, "model"] == "(whole trial)"
    with pytest.raises(ResultsError, match="unknown status"):
        normalise(df.assign(status="weird"), "s")


def test_a_single_split_has_no_interval_and_says_so():
    import pandas as pd
    from analysis.image_tables import plus_minus
    cells = plus_minus(pd.Series([81.2, 90.0]), pd.Series([0.85, float("nan")]))
    assert list(cells) == ["81.20 ± 0.85", "90.00 (1 split)"]


def test_the_sweeps_m1_reference_is_its_own_model_not_an_arithmetic_setting():
    import pandas as pd
    from analysis.collect import REFERENCE_MODEL, normalise
    rows = pd.DataFrame({"model": ["arithmetic", "arithmetic"], "role": ["ensemble", "reference"],
                         "status": ["ok", "ok"], "trial_id": ["a", "b"], "sweep": ["s", "s"]})
    assert list(normalise(rows, "s")["model"]) == ["arithmetic", REFERENCE_MODEL]


def test_heterogeneous_table_compares_sbfn_rbf_with_each_input_per_fold():
    def rows(model, family, values, **cols):
        return [dict(dataset="d", task="regression", model=model, family=family, fold=f, seed=0,
                     rmse=v, status="ok", **cols) for f, v in enumerate(values)]
    plugin = {"plugin_members": '["knn"]', "plugin_tuning": "inner_cv"}
    ok = pd.DataFrame(
        rows("sbfn_rbf", "sbfn", [1.0, 2.0, 3.0], lambda2=0.0, **plugin)
        + rows("sbfn_ls_linear", "sbfn", [2.0, 2.5, 3.0], lambda2=0.0, **plugin)
        + rows("sbfn_ls_linear", "sbfn", [9.0, 9.0, 9.0], lambda2=7.0, **plugin)
        + rows("knn", "competitor", [1.5, 3.0, 3.5], lambda2=np.nan, plugin_tuning="inner_cv")
        # not part of the heterogeneous set: a plain ensemble and a plain competitor trial
        + rows("sbfn_rbf", "sbfn", [0.1, 0.1, 0.1], lambda2=0.0, plugin_members="[]")
        + rows("random_forest", "competitor", [0.1, 0.1, 0.1], lambda2=np.nan))
    table = tables.heterogeneous(ok).set_index("model")
    # by mean RMSE: 2.0, 2.5, 8/3, 9.0
    assert list(table.index) == ["s-BFN multivariate RBF (K by inner CV)",
                                 "s-BFN least squares + linear (λ2 = 0)", "k-NN",
                                 "s-BFN least squares + linear (λ2 = 7)"]
    knn = table.loc["k-NN"]
    assert knn["mean"] == pytest.approx(8 / 3) and knn["minus_sbfn_rbf"] == pytest.approx(2 / 3)
    assert knn["p"] == pytest.approx(corrected_p([1.0, 2.0, 3.0], [1.5, 3.0, 3.5], 1 / 2))
    assert np.isnan(table.loc["s-BFN multivariate RBF (K by inner CV)", "p"])


def corrected_p(a, b, ratio: float) -> float:
    """Nadeau & Bengio's corrected resampled t test of a − b, by hand."""
    d = np.subtract(a, b)
    t = d.mean() / math.sqrt((1 / len(d) + ratio) * d.var(ddof=1))
    return 2 * stats.t.sf(abs(t), len(d) - 1)


def mix_rows(dataset, accuracies):
    """accuracies: {ensemble: [accuracy of split 0, split 1, ...]} -> ok image rows (s-BFN)."""
    return [dict(dataset=dataset, task="classification", ensemble=ens, model="sbfn", fold=fold,
                 seed=0, epsilon=0.5, n_members=5, accuracy=acc, status="ok", sweep="s",
                 trial_id=f"{dataset}-{ens}-{fold}")
            for ens, values in accuracies.items() for fold, acc in enumerate(values)]


def test_heterogeneity_gain_is_paired_by_split_and_sorted_easiest_first():
    hard = mix_rows("cifar10", {"cnn": [0.50, 0.60, 0.55], "resnet": [0.60, 0.70, 0.65],
                                "mixed": [0.60, 0.66, 0.63]})
    easy = mix_rows("mnist", {"cnn": [0.97, 0.98, 0.99], "resnet": [0.99, 0.99, 0.99],
                              "mixed": [0.98, 0.985, 0.99]})
    gain = it.heterogeneity_gain(pd.DataFrame(hard + easy))
    assert list(gain["dataset"]) == ["mnist", "cifar10"]          # easiest first
    row = gain.set_index("dataset").loc["cifar10"]
    diffs = np.array([5.0, 1.0, 3.0])           # mixed minus the mean of cnn and resnet, points
    # the corrected interval: no sizes recorded, n2/n1 = 1/(3 - 1)
    half = stats.t.ppf(0.975, 2) * math.sqrt((1 / 3 + 1 / 2) * diffs.var(ddof=1))
    assert (row["gain_vs_mean"], row["half_width"], row["n_splits"]) == pytest.approx((3, half, 3))
    assert row["p"] == pytest.approx(corrected_p([60, 66, 63], [55, 65, 60], 1 / 2))
    assert row["best_homogeneous"] == "resnet" and row["gain_vs_best"] == pytest.approx(-2.0)
    assert row["homogeneous"] == "cnn resnet" and row["homogeneous_accuracy"] == pytest.approx(60)


def test_heterogeneity_gain_counts_only_splits_where_every_mix_trained():
    rows = mix_rows("fashion_mnist", {"cnn": [0.80, 0.82], "resnet": [0.84, 0.86],
                                      "mixed": [0.85, 0.90]})
    gain = it.heterogeneity_gain(pd.DataFrame(rows[:3] + rows[4:]))   # resnet lacks split 1
    assert gain.loc[0, "n_splits"] == 1 and gain.loc[0, "gain_vs_mean"] == pytest.approx(3.0)
    assert it.heterogeneity_gain(pd.DataFrame(mix_rows("d", {"cnn": [0.8], "resnet": [0.9]}))).empty


# ------------------------------------------------------------------ mixes given as lists (issue 23)
FACTORY = "mynets:build"
# Accuracies in points: each a product by 100 and a mean or difference of two or three values
# at most 100, so a handful of roundings of numbers below 100 apart from the exact value.
POINTS = 16 * np.finfo(float).eps * 100


@pytest.mark.parametrize("mix, kind, label", [
    ("mixed", "heterogeneous", "Het. mixed"),
    (f"simple_cnn,{FACTORY}", "heterogeneous", f"Het. simple_cnn + {FACTORY}"),
    (f"simple_cnn,simple_cnn,{FACTORY}", "heterogeneous",
     f"Het. simple_cnn + simple_cnn + {FACTORY}"),        # other proportions, another label
    (f"{FACTORY},{FACTORY}", "homogeneous", f"Homo. {FACTORY}"),
    (FACTORY, "homogeneous", f"Homo. {FACTORY}"),
    ("resnet_tiny1", "homogeneous", "Homo. resnet_tiny1"),
    ("cnn", "homogeneous", "Homo. CNN"),
])
def test_a_mix_is_heterogeneous_when_its_members_differ_in_architecture(mix, kind, label):
    assert it.with_kind(pd.DataFrame(mix_rows("d", {mix: [0.5]})))["kind"].tolist() == [kind]
    assert ensemble_label(mix) == label


def test_a_list_of_different_architectures_is_compared_with_the_homogeneous_mixes():
    own = f"simple_cnn,{FACTORY}"
    rows = mix_rows("pets", {"cnn": [0.60, 0.70], FACTORY: [0.64, 0.72],
                             f"{FACTORY},{FACTORY}": [0.62, 0.75], own: [0.66, 0.77],
                             "mixed": [0.61, 0.73]})
    gain = it.heterogeneity_gain(pd.DataFrame(rows), PairedTest("t")).set_index("heterogeneous")
    assert sorted(gain.index) == sorted(["mixed", own])
    row = gain.loc[own]
    assert row["homogeneous"] == f"cnn {FACTORY} {FACTORY},{FACTORY}"
    assert row["best_homogeneous"] == f"{FACTORY},{FACTORY}"        # 68.5 against 68 and 65
    homogeneous_mean = np.array([60 + 64 + 62, 70 + 72 + 75]) / 3
    mean, half, n = t_interval(np.array([66, 77]) - homogeneous_mean, 0.95)
    assert row["n_splits"] == n == 2
    assert row["gain_vs_mean"] == pytest.approx(mean, rel=0, abs=POINTS)
    # the half width multiplies the splits' spread by t_{0.975, 1}, and its rounding with it
    assert row["half_width"] == pytest.approx(half, rel=0, abs=POINTS * stats.t.ppf(0.975, 1))
    view = it.heterogeneity_view(gain.reset_index())
    assert set(view["heterogeneous mix"]) == {"Het. mixed", f"Het. simple_cnn + {FACTORY}"}


def test_a_mix_of_one_split_shows_no_test_as_a_missing_number():
    """One split (an image sweep's --splits 1): no test, its p cells the report's mark for a
    missing number, as the interval's (they read "nan")."""
    rows = mix_rows("digits", {"cnn": [0.60], "resnet": [0.64], "mixed": [0.66]})
    gain = it.heterogeneity_gain(pd.DataFrame(rows), PairedTest())
    assert np.isnan(gain.loc[0, "p"]) and gain.loc[0, "n_splits"] == 1
    [cells] = it.heterogeneity_view(gain, PairedTest()).to_dict("records")
    assert (cells["p"], cells["p (Holm)"]) == (MISSING, MISSING)
    assert cells["− homogeneous mean (pts)"] == f"{(66 - 62):+.2f}"     # 66 against (60 + 64) / 2


def test_plug_ins_alone_have_no_m_eps_to_show():
    """A trial of the plug-ins alone (n_members 0) has no ε: no (M, ε) figure or table for its
    data set (it once raised KeyError 'epsilon' building the report)."""
    from analysis.collect import Searched
    from analysis.sections import listed_m_eps
    rows = pd.DataFrame({"dataset": "d", "model": "sbfn_ls_linear", "n_members": 0,
                         "fold": [0, 1], "rmse": [1.0, 2.0]})
    assert listed_m_eps(rows, Searched()).empty
    with_eps = rows.assign(n_members=2, epsilon=0.5)
    assert len(listed_m_eps(with_eps, Searched())) == 2
