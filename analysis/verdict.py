"""The verdict a reader can quote: per data set, the s-BFN combiner the sweep searched by (its
objective) against each of the practitioners' combiners (records.ANCHORS: Caruana's ensemble
selection, NNLS stacking, the ridge / logistic stacker) and the best single hypothesis
(records.BEST_SINGLE), each read at its own best configuration and paired over the (seed, fold)
splits (resampling.design). The report puts it first (`verdicts`, `verdict_view`, NOTES); a
sweep prints it after its end table (`verdict_lines`, sweeps/engine/summary.py).
"""

import pandas as pd

from analysis.configs import best_configuration, fold_values
from analysis.labels import model_label
from analysis.resampling import (DESIGN_UNIT, design, design_names, planned_interval,
                                 planned_test, with_design)
from analysis.stats import PairedTest, decide, same, test_cells
from analysis.tables import objective_model
from sbfn_dist.records import ANCHORS, BEST_SINGLE, TASKS

LEVEL = 0.95

NOTES = [
    "Per data set: the s-BFN combiner the sweep searched by (sweep.json's objective; without "
    "one the task's first combiner present) against each practitioners' combiner (ensemble "
    "selection, NNLS stacking, ridge or logistic stacking) and the best single hypothesis.",
    "Each model is read at its own best configuration by the tables' rule (the best mean over "
    "folds, the quartile table's \"best configuration's mean\"), among its configurations with "
    "every fold. The "
    "s-BFN's λ2 is chosen by that rule too, on the test folds, while the anchors choose their "
    "settings inside their fit, on training rows: the verdict favours the model with more "
    "configurations. The setting an anchor or the best single hypothesis records as chosen in "
    "its fit (RidgeCV's alpha, the column) is each fold's own, not a configuration. same "
    "members: both configurations' rows come from the same trials (the same members; only the "
    "combiner differs).",
    "difference: the mean over the (seed, fold) pairs of the s-BFN's score minus the other's "
    "(RMSE: the other's minus the s-BFN's), so positive = s-BFN better, in the metric's units "
    "(accuracy as a fraction: 0.01 is one point); interval: its 95% interval that goes with the "
    "test (corrected: mean ± t_{0.975, J−1} · sqrt((1/J + n2/n1) · s²)).",
    "The interval is each comparison's own (95%, not adjusted for the data set's family), so "
    "an interval that excludes 0 can stand beside a tie at p (Holm).",
    "verdict: win or loss where the test calls the difference (Holm over the data set's "
    "comparisons), tie otherwise; no test with one split. better / worse / equal: the pairs "
    "where the s-BFN scored better, worse or the same.",
]


def comparators(task: str) -> tuple:
    """What the s-BFN is judged against: the task's anchors, then the best single hypothesis."""
    return (*ANCHORS[task], BEST_SINGLE)


def verdicts(ok: pd.DataFrame, test: PairedTest = PairedTest(), objectives=None) -> pd.DataFrame:
    """Every data set's verdict (`data_set_verdict`); `objectives`: sweep -> the model it
    searched by (collect.Searched)."""
    parts = [data_set_verdict(rows, task, objective_model(rows, task, objectives or {}), test)
             for (task, _), rows in ok.groupby(["task", "dataset"], sort=True)]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def data_set_verdict(rows: pd.DataFrame, task: str, model: str | None,
                     test: PairedTest = PairedTest()) -> pd.DataFrame:
    """One data set's ok rows: `model` against each comparator it has rows of (NOTES); empty
    when it has none, or no row of `model`."""
    present = set(rows["model"])
    others = [m for m in comparators(task) if m in present and m != model]
    if model not in present or not others:
        return pd.DataFrame()
    whole, metric = design(rows), TASKS[task].metric
    ours_conf, ours = best_configuration(rows[rows["model"] == model], task)
    out = []
    for other in others:
        their_conf, theirs = best_configuration(rows[rows["model"] == other], task)
        plan = _compared_design(whole, ours, theirs)
        a, b = (fold_values(with_design(r), [], metric, unit=plan.unit)
                .set_index(list(plan.unit))[metric] for r in (ours, theirs))
        a, b = a.align(b, join="inner")
        if not TASKS[task].higher_is_better:            # positive = the s-BFN better
            a, b = b, a
        mean, half, n = planned_interval(a - b, test, plan, LEVEL)
        tie = same(a, b)
        out.append({"dataset": rows["dataset"].iloc[0], "task": task, "metric": metric,
                    "sbfn": model, "against": other, "mean_difference": mean,
                    "ci_low": mean - half, "ci_high": mean + half, "level": LEVEL,
                    "test": test.name, **planned_test(a, b, test, plan), "n_pairs": n,
                    "n_better": int(((a > b) & ~tie).sum()),
                    "n_worse": int(((a < b) & ~tie).sum()), "n_equal": int(tie.sum()),
                    "same_members": _calls(ours) == _calls(theirs), "size_ratio": plan.ratio,
                    "no_test": plan.note, "design": _tested_within(whole, ours, theirs),
                    "sbfn_config": ours_conf["config"],
                    "against_config": their_conf["config"]})
    table = decide(pd.DataFrame(out), test)
    return table.assign(verdict=_verdicts(table, test))


def _compared_design(whole, ours: pd.DataFrame, theirs: pd.DataFrame):
    """The design of two best configurations' rows where the data set holds several (`whole`):
    both within one design are tested within it, else no test; one design's data set keeps
    its own (its n2/n1 from all its splits)."""
    return whole if whole.unit != DESIGN_UNIT else design(pd.concat([ours, theirs]))


def _tested_within(whole, ours: pd.DataFrame, theirs: pd.DataFrame) -> str:
    """The design(s) a comparison's pairs come from, where the data set holds several ("" where
    it holds one: nothing to tell apart)."""
    if whole.unit != DESIGN_UNIT:
        return ""
    return "; ".join(sorted(set(design_names(pd.concat([ours, theirs])))))


def design_notes(rows: pd.DataFrame, table: pd.DataFrame) -> list:
    """A line per data set of several designs: which it holds, that they are never pooled, and
    that each comparison is paired within its `design`."""
    said = []
    for dataset in table.loc[table["design"] != "", "dataset"].unique():
        found = sorted(set(design_names(rows[rows["dataset"] == dataset])))
        said.append(f"{dataset} holds rows of {len(found)} resampling designs "
                    f"({'; '.join(found)}), never pooled: each comparison pairs and tests "
                    "only the splits of the design its two best configurations lie in (column "
                    "design); one spanning designs has no test.")
    return said


def _calls(rows: pd.DataFrame) -> set:
    """The trials (and their splits) a configuration's rows come from: the same set for two
    combiners means the same members."""
    ids = rows["trial_id"] if "trial_id" in rows else pd.Series("", index=rows.index)
    return set(zip(ids, rows["seed"], rows["fold"]))


def _verdicts(table: pd.DataFrame, test: PairedTest) -> list:
    tested = table["p_rope"].notna() if test.bayesian else table["p"].notna()
    return ["no test" if not t else ("tie" if not s else ("win" if m > 0 else "loss"))
            for t, s, m in zip(tested, table["significant"], table["mean_difference"])]


def verdict_view(table: pd.DataFrame, test: PairedTest) -> pd.DataFrame:
    """The report's cells: differences to four significant digits, the interval, the verdict."""
    num = lambda v: f"{v:+.4g}"
    return pd.DataFrame({
        "dataset": table["dataset"], "metric": table["metric"],
        "s-BFN": table["sbfn"].map(model_label), "against": table["against"].map(model_label),
        "difference (+: s-BFN better)": table["mean_difference"].map(num),
        f"{LEVEL:.0%} interval": [f"[{num(lo)}, {num(hi)}]" if hi == hi else "–"
                                  for lo, hi in zip(table["ci_low"], table["ci_high"])],
        "verdict": table["verdict"], **test_cells(table, test),
        "better / worse / equal": [f"{b} / {w} / {e}" for b, w, e in zip(
            table["n_better"], table["n_worse"], table["n_equal"])],
        "same members": table["same_members"].map({True: "yes", False: "no"}),
        "s-BFN configuration": table["sbfn_config"],
        "its configuration": table["against_config"],
        **({"design": table["design"]} if table["design"].ne("").any() else {})})


def verdict_lines(table: pd.DataFrame, test: PairedTest) -> list:
    """The verdict in a few lines, as a sweep prints it after its end table."""
    if table.empty:
        return []
    several = table["dataset"].nunique() > 1
    lines = []
    for r in table.itertuples(index=False):
        where = f" on {r.dataset}" if several else ""
        lines.append(f"verdict ({test.short} over {r.n_pairs} split{'s' if r.n_pairs != 1 else ''}"
                     f"{where}, {r.metric}, + = s-BFN better): {r.sbfn} vs {r.against} "
                     f"{r.mean_difference:+.4g}{_tested(r, test)}")
    return lines


def _tested(r, test: PairedTest) -> str:
    """' [lo, hi] verdict (b better / w worse; p)', or ' no test (...)' where one split gives
    the test no variance to work with (its interval and p are NaN, not numbers to print)."""
    counts = f"{r.n_better} better / {r.n_worse} worse{f' / {r.n_equal} equal' if r.n_equal else ''}"
    if r.verdict == "no test":
        why = "one split" if r.n_pairs == 1 else "the differences do not vary"
        return f" no test ({counts}; {why}: no spread to test against)"
    decided = f"P(better) {r.p_right:.2f}" if test.bayesian else f"p (Holm) {r.p_holm:.2g}"
    return f" [{r.ci_low:+.4g}, {r.ci_high:+.4g}] {r.verdict} ({counts}; {decided})"


def missing_note(ok: pd.DataFrame, table: pd.DataFrame) -> str:
    """The line for the data sets without a verdict, per task (no rows of its comparators:
    sweeps older than them, or run without them); "" when every data set has one."""
    judged = set(table["dataset"]) if not table.empty else set()
    said = []
    for task, rows in ok.groupby("task", sort=True):
        left = sorted(set(rows["dataset"]) - judged)
        if left:
            said.append(f"No verdict for {', '.join(left)}: no rows of "
                        f"{', '.join(comparators(task))}, or none of the s-BFN.")
    return " ".join(said + ["(Sweeps older than the practitioners' combiners, or run without "
                            "them.)"] if said else [])
