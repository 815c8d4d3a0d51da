"""Which model is best: per data set each model at its best configuration, best first -- the
answer the sweep's end table printed (sweeps/engine/summary.py), which the report opens with.
The report's "Model ranking" answers another question, how a model does over its whole grid
(each model averaged over all its configurations), and said so only in a footnote: a reader of
the demo met `svm_rbf` first in the sweep's table and `single_network_M1` first in the report."""

import pandas as pd

from analysis.configs import best_index, configurations
from analysis.labels import metric_label, model_label
from sbfn_dist.records import TASKS

NOTES = [
    "Each model at its best configuration (the hyper-parameters that vary among its rows of the "
    "data set), best first: each fold's score averaged over seeds, then the mean over folds; "
    "only configurations with as many folds as the model's most complete one compete (one "
    "stopped early has a mean over fewer). The sweep's end table ranks its models the same way, "
    "and breaks ties alike: fewer members, then each setting by name, lower first, the model's "
    "own setting last.",
    "std: the sample standard deviation (ddof = 1) of that configuration's per-fold scores.",
]


def best_per_model(ok: pd.DataFrame) -> pd.DataFrame:
    """One row per data set and model: its best configuration (`config`), `mean` and `std`
    over folds, `n_folds`, and its `rank` within the data set (1: best)."""
    parts = [_ranked(sub, task) for (_, task), sub in ok.groupby(["dataset", "task"], sort=True)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _ranked(rows: pd.DataFrame, task: str) -> pd.DataFrame:
    """One data set's models at their best configurations, best first."""
    conf = configurations(rows, TASKS[task].metric)
    conf = conf[conf["n_folds"] == conf.groupby("model")["n_folds"].transform("max")]
    best = conf.loc[best_index(conf.sort_values("model"), task, "model")]
    best = best.sort_values("mean", ascending=not TASKS[task].higher_is_better, kind="stable")
    return best.assign(task=task, rank=range(1, len(best) + 1))[
        ["dataset", "task", "rank", "model", "config", "mean", "std", "n_folds"]]


def view(best: pd.DataFrame) -> pd.DataFrame:
    """The table as the report shows it: labels, the metric named, accuracy in %."""
    scale = best["task"].map(lambda t: 100.0 if TASKS[t].higher_is_better else 1.0)
    metric = best["task"].map(lambda t: metric_label(TASKS[t].metric)
                              + (" (%)" if TASKS[t].higher_is_better else ""))
    shown = best.assign(model=best["model"].map(model_label), metric=metric,
                        mean=scale * best["mean"], std=scale * best["std"])
    return shown[["dataset", "rank", "model", "config", "metric", "mean", "std", "n_folds"]] \
        .rename(columns={"config": "best configuration", "n_folds": "folds"})


def headline(best: pd.DataFrame, objectives: dict) -> list[str]:
    """One line per data set: its best model at its best configuration, and where the model its
    sweep ranked configurations by (`objectives`: data set -> model) stands."""
    lines = []
    for dataset, rows in best.groupby("dataset", sort=True):
        top, task = rows.iloc[0], rows["task"].iloc[0]
        line = f"{dataset}: best {_said(top, task)}"
        own = rows[rows["model"] == objectives.get(dataset)]
        if len(own) and own["rank"].iloc[0] != 1:
            line += (f"; the sweep's objective {_said(own.iloc[0], task)}, "
                     f"{_ordinal(int(own['rank'].iloc[0]))} of {len(rows)}")
        lines.append(line + ".")
    return lines


def _said(row: pd.Series, task: str) -> str:
    """`svm_rbf (params=…) at RMSE 53.88 over 5 folds`."""
    metric = TASKS[task].metric
    value = f"{100 * row['mean']:.2f}%" if TASKS[task].higher_is_better else f"{row['mean']:.4g}"
    folds = int(row["n_folds"])
    config = row["config"] if str(row["config"]).startswith("(") else f"({row['config']})"
    return (f"{row['model']} {config} at {metric_label(metric)} {value} over {folds} "
            f"fold{'s' if folds != 1 else ''}")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
