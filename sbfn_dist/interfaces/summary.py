"""A compact comparison of models from run_trial records (the demo's table).

For each model and setting: mean and std of the test metric across its splits (seed, fold);
each model is then represented by its best setting (lowest mean), as in the paper's "1st model"
column. The full analysis (quartiles, intervals, tests) lives in the analysis layer.
"""

import pandas as pd

from sbfn_dist.records import best_position, model_label
from sbfn_dist.settings.tasks import HIGHER_IS_BETTER


def comparison_table(records: list[dict], metric: str = "rmse",
                     settings: tuple = ("model_params",)) -> pd.DataFrame:
    """`settings`: the columns that make a configuration (a sweep adds its axes, e.g. M, ε)."""
    df = pd.DataFrame(records)
    # groupby drops NaN keys: a missing or empty setting is "{}", never a vanished row.
    df["model_params"] = df["model_params"].fillna("{}") if "model_params" in df else "{}"
    settings = list(settings)
    ok = per_split(df[df["status"] == "ok"], ["model", *settings], metric)
    per_setting = (ok.groupby(["model", *settings])[metric]
                   .agg(["mean", "std", "count"]).reset_index())
    chosen = _best_settings(per_setting, settings, metric)
    per_setting["model_params"] = per_setting["model_params"].replace("{}", "")   # none: blank
    axes = [c for c in settings if c != "model_params"]
    if axes and len(per_setting):  # a label per configuration: "n_members=10 epsilon=0.35 {…}"
        labels = [per_setting[c].map(lambda v, c=c: f"{c}={v}" if v != "-" else "") for c in axes]
        per_setting["model_params"] = pd.concat(labels + [per_setting["model_params"]],
                                                axis=1).agg(lambda r: " ".join(filter(None, r)), axis=1)
    per_setting = per_setting.drop(columns=axes)
    sign = -1 if metric in HIGHER_IS_BETTER else 1
    best = per_setting.loc[chosen]
    settings = per_setting.groupby("model").size().rename("settings")
    failed = df[df["status"] != "ok"].groupby("model").size().rename("not_ok")
    # Outer join: a model whose every row diverged still gets a line (mean NaN, not_ok > 0).
    table = (best.set_index("model").join(settings).join(failed, how="outer")
             .fillna({"not_ok": 0, "settings": 0}).sort_values("mean", ascending=sign > 0))
    table.insert(0, "label", [model_label(m) for m in table.index])
    return table.rename(columns={"mean": f"{metric}_mean", "std": f"{metric}_std",
                                 "count": "folds", "model_params": "best_setting"})


def _best_settings(per_setting: pd.DataFrame, settings: list, metric: str) -> list:
    """Each model's best setting (its index), ties by records.best_position's rule, as the
    report and the sweep's progress line break them."""
    chosen = []
    for _, rows in per_setting.groupby("model", sort=True):
        points = rows[settings].to_dict("records")
        at = best_position(rows["mean"], points, metric in HIGHER_IS_BETTER)
        chosen.append(rows.index[at if at is not None else 0])   # every row diverged: NaN
    return chosen


SPLIT = ("seed", "fold")     # a split: a fold of one seed's splitting of the data


def per_split(ok: pd.DataFrame, keys: list, metric: str) -> pd.DataFrame:
    """One score per configuration and split: a configuration that more than one trial computed
    on the same split (a combiner that a sweep's head_calibration axis does not change is fitted
    in each of its trials, on the same members) counts that split once, its mean over them."""
    split = [c for c in SPLIT if c in ok]
    if not split or not len(ok):
        return ok
    return ok.groupby([*keys, *split], dropna=False)[metric].mean().reset_index()
