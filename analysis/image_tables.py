"""Image-ensemble tables (paper, "Multiple Hypothesis Deep Ensembles" and "Computational
Efficiency"): overall accuracy with gains, best configuration, efficiency, ε-sensitivity
(homogeneous vs heterogeneous), and the ensemble diagnostics against ε. The overall accuracy
also serves the tabular classification section, grouped by data set alone (`by`).

Intervals are "95% across splits": within each holdout split the accuracy is averaged over the
rows of the group (configurations, seeds), then mean ± t_{0.975, n-1} · s / √n over the n splits.
"""

import numpy as np
import pandas as pd

from analysis.configs import best_index, configurations, fold_values
from analysis.document import fixed
from analysis.labels import ensemble_label, is_heterogeneous, model_label, model_sort_key
from analysis.resampling import Design, design, planned_interval, planned_test, with_design
from analysis.stats import PairedTest, decide, t_half_width, test_cells
from analysis.tables import in_model_order
from sbfn_dist.records import DIAGNOSTICS

LEVEL = 0.95
BASE = "base_avg"
MEAN = "logit_mean"
MIX = ("dataset", "ensemble")     # image rows are compared per data set and architecture mix
# Beside accuracy: the records' calibration scores (ECE, a fraction shown in %; log-loss in nats).
CALIBRATION = ("ece", "nll")
EFFICIENCY = ("train_seconds", "eval_seconds", "members_train_seconds", "flops_per_example",
              "n_params_members")

CALIBRATION_NOTE = (
    "ECE (%): expected calibration error (Guo et al. 2017, 15 equal-width confidence bins), "
    "NLL: the mean log-loss (nats) on the test part; each averaged as the accuracy is (per split "
    "over configurations and seeds, then over splits); – where the rows have none (sweeps "
    "recorded before the columns).")

NOTES = {
    "overall": [
        "Accuracy in %: for each split, the mean accuracy over every configuration and seed of the "
        "data set, architecture mix and combiner; then the mean over splits ± the half width of the "
        "95% Student-t interval across splits (t_{0.975, n-1} · s / √n).",
        "Gain (pts): the combiner's accuracy minus that of Base avg. (the mean accuracy of the "
        "individual members), or minus Mean (logit averaging), in percentage points.",
        CALIBRATION_NOTE,
    ],
    "overall_folds": [
        "Accuracy in %: for each fold, the mean accuracy over every configuration and seed of the "
        "data set and model; then the mean over folds ± the half width of the 95% Student-t "
        "interval across folds (t_{0.975, n-1} · s / √n).",
        "Gain (pts): the combiner's accuracy minus that of Base avg. (the mean accuracy of the "
        "individual members), or minus Mean (logit averaging), in percentage points.",
        CALIBRATION_NOTE,
    ],
    "best": [
        "Best configuration: for each data set, architecture mix and combiner, the configuration "
        "(hyper-parameters that vary in the sweep) with the highest mean accuracy over splits; "
        "± is the 95% t half width across its splits; seconds, ECE and NLL are means over its "
        "splits.",
        "members %: the mean accuracy of the individual members in that configuration.",
    ],
    "efficiency": [
        "Means over all rows of the data set, architecture mix and combiner. train s: members' "
        "training plus the combiner's fit; eval s: members' forward pass on the test split plus "
        "the combiner; FLOPs: multiply-accumulates x2 of the members per test image; params: "
        "trainable parameters of the members.",
        "acc. std (pts): the sample standard deviation across splits of the per-split accuracy "
        "(stability across runs).",
    ],
    "eps": [
        "Accuracy in % by ε, heterogeneous (the mixes whose members differ in architecture: "
        "'mixed', or a list of different architectures or factories) vs homogeneous (every "
        "other mix), each kind's mixes pooled; mean over splits ± the 95% t half width across "
        "splits.",
    ],
    "heterogeneity": [
        "Per data set, combiner, M, ε and heterogeneous mix ('mixed', or a list of different "
        "architectures or factories): within each split (a (seed, split) pair: seeds re-draw "
        "the splits), its accuracy minus the mean accuracy "
        "of the homogeneous mixes of the same split (the paper's claim "
        "that architectural heterogeneity matters more as data get harder reads across data "
        "sets: rows sorted by the homogeneous mixes' accuracy, hardest last), and minus the "
        "homogeneous mix with the best mean over the splits (named). Gains in points, mean over "
        "splits ± the half width of the 95% interval that goes with the test (the corrected "
        "one, t_{0.975, J−1} · s · sqrt(1/J + n2/n1), for the corrected and Bayesian tests; "
        "Student's t_{0.975, J−1} · s / √J for the uncorrected ones).",
        "The paired test of the heterogeneous mix against the homogeneous mean across the "
        "splits, the table's rows one family. Only splits where every mix of the row trained "
        "count.",
    ],
    "diagnostics": [
        "One value per (trial, split): the diagnostics are computed once on the members' test "
        "predictions and shared by every combiner row of that split; means over trials and splits.",
        "bregman_*: cross-entropy Bregman decomposition (ensemble loss = avg member loss − "
        "diversity; bias = loss at the centroid, docs/diagnostics.md). gibbs_risk, disagreement, "
        "mv_risk, c_bound: PAC-Bayes majority-vote quantities of the members' argmax votes with "
        "uniform weights.",
    ],
}


def split_interval(df: pd.DataFrame, keys: list, metric: str, level: float = LEVEL) -> pd.DataFrame:
    """Per group of keys: mean over splits of the per-split mean, t half width, n splits."""
    per_split = fold_values(df, keys, metric)
    g = per_split.groupby(keys, dropna=False, sort=False)[metric]
    out = pd.DataFrame({"mean": g.mean(), "n_splits": g.count()})
    out["half_width"] = t_half_width(g.std(), out["n_splits"], level)
    return out.reset_index()


def with_kind(df: pd.DataFrame) -> pd.DataFrame:
    kind = np.where(df["ensemble"].map(is_heterogeneous), "heterogeneous", "homogeneous")
    return df.assign(kind=kind)


def overall_accuracy(ok: pd.DataFrame, by=MIX) -> pd.DataFrame:
    """Long table: `by`, model, accuracy %, ±, the gains in points, ECE % and NLL."""
    keys = [*by, "model"]
    acc = split_interval(ok, keys, "accuracy")
    acc[["mean", "half_width"]] *= 100
    ref = acc.set_index(keys)["mean"]
    for other, col in ((BASE, "gain_vs_base_avg"), (MEAN, "gain_vs_mean")):
        cells = list(zip(*(acc[k] for k in by), [other] * len(acc)))
        acc[col] = acc["mean"].to_numpy() - ref.reindex(cells).to_numpy()
    return _order(acc.merge(calibration_means(ok, keys), on=keys, how="left"), by)


def calibration_means(ok: pd.DataFrame, keys: list) -> pd.DataFrame:
    """Per group of keys: ECE (`ece_pct`, %) and NLL, each split's mean averaged over the
    splits (as split_interval averages the accuracy); NaN where the rows lack them."""
    rows = ok.assign(**{c: np.nan for c in CALIBRATION if c not in ok})
    per_split = fold_values(rows, keys, CALIBRATION[0], CALIBRATION[1:])
    out = per_split.groupby(keys, dropna=False, sort=False)[list(CALIBRATION)].mean()
    return out.reset_index().assign(ece=lambda d: 100 * d["ece"]).rename(columns={"ece": "ece_pct"})


def _order(df: pd.DataFrame, first=MIX) -> pd.DataFrame:
    return in_model_order(df, first)


def plus_minus(mean: pd.Series, half: pd.Series, unit: str = "split") -> pd.Series:
    """"81.20 ± 0.85"; with a single split there is no interval: "81.20 (1 split)"."""
    return pd.Series([f"{m:.2f} (1 {unit})" if h != h else f"{m:.2f} ± {h:.2f}"
                      for m, h in zip(mean, half)], index=mean.index, dtype=object)


def overall_view(acc: pd.DataFrame, by=MIX, unit: str = "split") -> pd.DataFrame:
    """The report's view: one row per `by` (data set x architecture mix for images) and model,
    its accuracy with the interval, the gains, ECE and NLL."""
    view = pd.DataFrame({**{k: acc[k] for k in by}, "model": acc["model"].map(model_label),
                         "accuracy (%)": plus_minus(acc["mean"], acc["half_width"], unit),
                         "− Base avg. (pts)": fixed(acc["gain_vs_base_avg"], "+.2f"),
                         "− Mean (pts)": fixed(acc["gain_vs_mean"], "+.2f"),
                         "ECE (%)": fixed(acc["ece_pct"], ".2f"), "NLL": fixed(acc["nll"], ".3f")})
    if "ensemble" in by:
        view["ensemble"] = view["ensemble"].map(ensemble_label)
    return view


def best_configurations(ok: pd.DataFrame) -> pd.DataFrame:
    group = ["dataset", "ensemble", "model"]
    extra = [c for c in ("train_seconds", "eval_seconds", "member_accuracy_mean", *CALIBRATION)
             if c in ok]
    conf = configurations(ok, "accuracy", extra=extra)
    best = conf.loc[best_index(conf, "classification", group)]
    best = best.reset_index(drop=True)
    out = best[group + ["config", "n_members", "epsilon"]].assign(
        accuracy_pct=100 * best["mean"], n_splits=best["n_folds"],
        half_width_pct=100 * t_half_width(best["std"], best["n_folds"], LEVEL), **best[extra])
    for pct in ("member_accuracy_mean", "ece"):
        if pct in out:
            out[pct] *= 100
    return _order(out.rename(columns={"ece": "ece_pct"}))


def efficiency(ok: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in EFFICIENCY if c in ok]
    group = ["dataset", "ensemble", "model"]
    out = ok.groupby(group, sort=False)[[*cols, "accuracy"]].mean().reset_index()
    per_split = fold_values(ok, group, "accuracy")
    std = per_split.groupby(group, sort=False)["accuracy"].std().rename("accuracy_std") * 100
    out = out.merge(std.reset_index(), on=group)
    out["accuracy"] *= 100
    return _order(out)


def epsilon_sensitivity(ok: pd.DataFrame) -> pd.DataFrame:
    df = with_kind(ok)
    out = split_interval(df, ["dataset", "model", "epsilon", "kind"], "accuracy")
    out[["mean", "half_width"]] *= 100
    return _order(out.sort_values(["dataset", "model", "epsilon", "kind"]), ("dataset", "epsilon"))


def epsilon_view(eps: pd.DataFrame) -> pd.DataFrame:
    cell = plus_minus(eps["mean"], eps["half_width"])
    wide = eps.assign(cell=cell, label=eps["model"].map(model_label)).pivot(
        index=["dataset", "label", "epsilon"], columns="kind", values="cell")
    return wide.reset_index().fillna("–").rename(columns={"label": "combiner", "epsilon": "ε"})


GAIN_KEYS = ["dataset", "model", "n_members", "epsilon"]


def heterogeneity_gain(ok: pd.DataFrame, test: PairedTest = PairedTest()) -> pd.DataFrame:
    """Each heterogeneous mix against the homogeneous ones, paired by split (NOTES
    "heterogeneity"); empty when no row has a heterogeneous mix and a homogeneous one."""
    rows = []
    for _, sub in ok.groupby("dataset", sort=False):
        plan = design(sub)
        per_split = fold_values(with_design(sub), [*GAIN_KEYS, "ensemble"], "accuracy",
                                unit=plan.unit)
        wide = per_split.pivot_table(index=[*GAIN_KEYS, *plan.unit], columns="ensemble",
                                     values="accuracy") * 100
        mixes = [c for c in wide.columns if is_heterogeneous(c)]
        rows += [row for key, g in wide.groupby(level=GAIN_KEYS, sort=False) for mix in mixes
                 if (row := _gain_row(dict(zip(GAIN_KEYS, key)), g, mix, test, plan))]
    if not rows:
        return pd.DataFrame()
    out = decide(pd.DataFrame(rows), test)
    # per combiner, M and ε the data sets from easiest to hardest: the claim reads down a block
    # (a data set's heterogeneous mixes share its homogeneous accuracy: by name among them)
    order = out.assign(_k=out["model"].map(model_sort_key), _d=-out["homogeneous_accuracy"])
    return (order.sort_values(["_k", "n_members", "epsilon", "_d", "heterogeneous"])
            .drop(columns=["_k", "_d"]).reset_index(drop=True))


def _gain_row(key: dict, g: pd.DataFrame, mix: str, test: PairedTest,
              plan: Design) -> dict | None:
    """One row of heterogeneity_gain for one (data set, combiner, M, ε) and heterogeneous mix,
    or None when that mix or every homogeneous mix is missing."""
    homogeneous = [c for c in g.columns if not is_heterogeneous(c) and g[c].notna().any()]
    g = g.dropna(subset=[mix, *homogeneous])
    if not homogeneous or g.empty:
        return None
    mean = g[homogeneous].mean(axis=1)
    best = max(homogeneous, key=lambda c: g[c].mean())
    mixed = g[mix]
    gain, half, n = planned_interval(mixed - mean, test, plan, LEVEL)
    gain_best, half_best, _ = planned_interval(mixed - g[best], test, plan, LEVEL)
    return {**key, "heterogeneous": mix, "homogeneous": " ".join(homogeneous),
            "homogeneous_accuracy": mean.mean(),
            "heterogeneous_accuracy": mixed.mean(), "gain_vs_mean": gain, "half_width": half,
            **planned_test(mixed, mean, test, plan), "best_homogeneous": best,
            "gain_vs_best": gain_best, "half_width_best": half_best, "n_splits": n,
            "size_ratio": plan.ratio}


def heterogeneity_view(gain: pd.DataFrame, test: PairedTest = PairedTest()) -> pd.DataFrame:
    signed = lambda m, h: f"{m:+.2f}" + ("" if h != h else f" ± {h:.2f}")
    return pd.DataFrame({
        "dataset": gain["dataset"], "combiner": gain["model"].map(model_label),
        "M": gain["n_members"], "ε": gain["epsilon"],
        "heterogeneous mix": gain["heterogeneous"].map(ensemble_label),
        "homogeneous (%)": gain["homogeneous_accuracy"].map("{:.2f}".format),
        "heterogeneous (%)": gain["heterogeneous_accuracy"].map("{:.2f}".format),
        "− homogeneous mean (pts)": list(map(signed, gain["gain_vs_mean"], gain["half_width"])),
        **test_cells(gain, test),
        "− best homogeneous (pts)": [f"{signed(m, h)} ({ensemble_label(b)})" for m, h, b in zip(
            gain["gain_vs_best"], gain["half_width_best"], gain["best_homogeneous"])],
        "splits": gain["n_splits"]})


def diagnostics_by_epsilon(ok: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in DIAGNOSTICS["classification"] if c in ok]
    if not cols:
        return pd.DataFrame()
    once = ok.drop_duplicates(["sweep", "trial_id", "fold"])   # one row per (trial, split)
    group = [g for g in ("dataset", "ensemble", "epsilon") if g in ok]
    out = once.groupby(group, sort=True)[cols].mean()
    out["n"] = once.groupby(group, sort=True).size()
    return out.reset_index()
