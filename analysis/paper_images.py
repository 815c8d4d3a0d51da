"""The paper's image results beside ours: the report's `paper_comparison` table.

The paper's numbers are transcribed from sbfn-paper.tex, Tables "overall_all", "best_configs"
and "sensitivity_eps_all" (tests/test_paper_images.py checks the transcription against the
LaTeX source when it is present). What is compared with what (docs/analysis.md):
- The paper's "sRBF" is the s-BFN head trained on the fly with the members, its procedure: our
  `sbfn`; our `sbfn_stacked` (the same head on the frozen members' validation outputs) is shown
  beside it. Its "MoE" is our `moe`, its "Base" our `base_avg` (the members' mean accuracy).
- "Heterogeneous" is our mix `mixed`; "Homogeneous" pools every other mix (CNN, ResNet), as the
  ε-sensitivity table does.
- "overall_all" averages over all of a data set's settings; ours averages over the settings our
  runs cover, which the row lists (ε, M, splits, training images × epochs): a smaller budget or
  grid shows there.
- The paper's MNIST rows repeat its CIFAR-10 rows digit for digit in all three tables: they are
  shown, flagged, and no difference is computed for them.
"""

import numpy as np
import pandas as pd

from analysis.image_tables import LEVEL, split_interval, with_kind
from analysis.labels import ensemble_label

KINDS = ("heterogeneous", "homogeneous")       # image_tables.with_kind's names
QUANTITIES = {"sbfn": "sRBF", "moe": "MoE", "base_avg": "Base"}   # our model -> the paper's name
STACKED = "sbfn_stacked"
NAN = float("nan")

# Table "overall_all": (data set, kind) -> accuracy (%) of sRBF, MoE, Base
OVERALL = {
    ("mnist", "heterogeneous"): (49.10, 47.96, 39.71),
    ("mnist", "homogeneous"): (32.70, 33.45, 30.38),
    ("fashion_mnist", "heterogeneous"): (69.81, 63.10, 54.19),
    ("fashion_mnist", "homogeneous"): (63.70, 61.57, 53.02),
    ("cifar10", "heterogeneous"): (49.10, 47.96, 39.71),
    ("cifar10", "homogeneous"): (32.70, 33.45, 30.38),
}
# Table "best_configs": (data set, kind) -> (architecture mix, M, sRBF, MoE, Base) in %
BEST = {
    ("mnist", "heterogeneous"): ("mixed", 10, 68.94, 66.99, 60.28),
    ("mnist", "homogeneous"): ("resnet", 5, 71.72, 66.27, 64.33),
    ("fashion_mnist", "heterogeneous"): ("mixed", 5, 83.54, 82.38, 75.99),
    ("fashion_mnist", "homogeneous"): ("cnn", 10, 83.01, 81.02, 80.25),
    ("cifar10", "heterogeneous"): ("mixed", 10, 68.94, 66.99, 60.28),
    ("cifar10", "homogeneous"): ("resnet", 5, 71.72, 66.27, 64.33),
}
# Table "sensitivity_eps_all": (data set, ε) -> sRBF accuracy (%), heterogeneous and homogeneous
SENSITIVITY = {
    ("cifar10", 0.0): (26.59, 16.86), ("cifar10", 0.5): (59.84, 42.89),
    ("cifar10", 0.8): (60.87, 38.36),
    ("fashion_mnist", 0.0): (51.25, 40.25), ("fashion_mnist", 0.5): (79.48, 75.00),
    ("fashion_mnist", 0.8): (78.71, 75.86),
    ("mnist", 0.0): (26.59, 16.86), ("mnist", 0.5): (59.84, 42.89), ("mnist", 0.8): (60.87, 38.36),
}
COPIED = {"mnist": "its CIFAR-10 row, digit for digit: not compared"}

NOTES = [
    "The paper's image rows (sbfn-paper.tex, Tables overall_all, best_configs and "
    "sensitivity_eps_all) beside ours on the same data set. sRBF = the s-BFN head trained on the "
    "fly (ours: s-BFN; s-BFN stacked beside it), MoE = our on-the-fly MoE, Base = the members' "
    "mean accuracy (Base avg.). Heterogeneous = the mixes whose members differ in architecture "
    "('mixed', or a list of different architectures or factories); homogeneous = every other "
    "mix pooled.",
    "ours: mean over splits of each split's mean over the rows in the cell ± the half width of "
    "the 95% Student-t interval across splits; ours − paper in points. 'ours covers' lists the "
    "settings our rows span: the paper averages over its whole grid at its budget, so a "
    "difference is a like-for-like comparison only where those match.",
    "best_configs: the paper's best configuration against our best s-BFN configuration (mix, M, "
    "ε) of that kind; MoE and Base are read at the same configuration. The paper's MNIST rows "
    "repeat its CIFAR-10 rows: shown, not compared.",
]


def paper_comparison(ok: pd.DataFrame) -> pd.DataFrame:
    """One row per paper cell that our rows can answer (same data set and kind); empty when
    none can."""
    ok = ok[ok["dataset"].isin({d for d, _ in OVERALL}) & ok["model"].isin([*QUANTITIES, STACKED])]
    if ok.empty:
        return pd.DataFrame()
    ok = with_kind(ok)
    rows = [*_overall_rows(ok), *_sensitivity_rows(ok), *_best_rows(ok)]
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["ours_minus_paper"] = out["ours"] - out["paper"]
    out.loc[out["dataset"].isin(COPIED), "ours_minus_paper"] = NAN
    out["paper_note"] = out["dataset"].map(COPIED).fillna("")
    return out


def _cells(ok: pd.DataFrame, keys: list) -> pd.DataFrame:
    """Accuracy (%) per keys + model: mean over splits, 95% t half width, n splits."""
    acc = split_interval(ok, [*keys, "model"], "accuracy", LEVEL)
    acc[["mean", "half_width"]] *= 100
    return acc.set_index([*keys, "model"])


def _overall_rows(ok: pd.DataFrame) -> list[dict]:
    cells = _cells(ok, ["dataset", "kind"])
    rows = []
    for (dataset, kind), paper in OVERALL.items():
        sub = ok[(ok["dataset"] == dataset) & (ok["kind"] == kind)]
        rows += _quantity_rows("overall_all", dataset, kind, "all settings", paper, cells,
                               (dataset, kind), sub)
    return rows


def _sensitivity_rows(ok: pd.DataFrame) -> list[dict]:
    cells = _cells(ok, ["dataset", "kind", "epsilon"])
    rows = []
    for (dataset, eps), papers in SENSITIVITY.items():
        for kind, paper in zip(KINDS, papers):
            sub = ok[(ok["dataset"] == dataset) & (ok["kind"] == kind) & (ok["epsilon"] == eps)]
            rows += _quantity_rows("sensitivity_eps_all", dataset, kind, f"ε = {eps:g}",
                                   (paper,), cells, (dataset, kind, eps), sub)
    return rows


def _best_rows(ok: pd.DataFrame) -> list[dict]:
    """The paper's best configuration per kind against our best s-BFN configuration of it."""
    keys = ["dataset", "kind", "ensemble", "n_members", "epsilon"]
    cells = _cells(ok, keys)
    if "sbfn" not in cells.index.get_level_values("model"):
        return []
    sbfn = cells.xs("sbfn", level="model")["mean"]
    rows = []
    for (dataset, kind), (mix, m, *paper) in BEST.items():
        ours = sbfn[[k[:2] == (dataset, kind) for k in sbfn.index]]
        if ours.empty:
            continue
        best = ours.idxmax()
        sub = ok[np.logical_and.reduce([ok[k] == v for k, v in zip(keys, best)])]
        setting = (f"paper: {ensemble_label(mix)} M = {m}; ours: {ensemble_label(best[2])} "
                   f"M = {best[3]} ε = {best[4]:g}")
        rows += _quantity_rows("best_configs", dataset, kind, setting, paper, cells, best, sub)
    return rows


def _quantity_rows(table: str, dataset: str, kind: str, setting: str, paper, cells,
                   key: tuple, sub: pd.DataFrame) -> list[dict]:
    """The rows of one paper cell group: each of the paper's quantities (sRBF, MoE, Base: as
    many as `paper` holds) that our rows have, with s-BFN stacked beside sRBF."""
    if sub.empty:
        return []
    covered, rows = covers(sub), []
    for model, value in zip(QUANTITIES, paper):
        if (*key, model) not in cells.index:
            continue
        ours = cells.loc[(*key, model)]
        stacked = cells["mean"].get((*key, STACKED), NAN) if model == "sbfn" else NAN
        rows.append({"table": table, "dataset": dataset, "kind": kind, "setting": setting,
                     "quantity": QUANTITIES[model], "paper": value, "ours": ours["mean"],
                     "half_width": ours["half_width"], "n_splits": int(ours["n_splits"]),
                     "ours_stacked": stacked, "ours_covers": covered})
    return rows


def covers(sub: pd.DataFrame) -> str:
    """The settings rows span, for a reader to weigh a comparison: ε, M, splits, budget."""
    values = lambda col: ", ".join(f"{v:g}" for v in sorted(sub[col].dropna().unique()))
    parts = [f"ε {values('epsilon')}", f"M {values('n_members')}",
             f"{sub['fold'].nunique()} split(s)"]
    if {"n_train", "epochs"} <= set(sub):       # the image records carry their budget
        parts.append(", ".join(f"{n:,.0f} images × {e:g} epochs" for n, e in sub[
            ["n_train", "epochs"]].drop_duplicates().itertuples(index=False)))
    return "; ".join(parts)


def paper_view(table: pd.DataFrame) -> pd.DataFrame:
    signed = lambda v: "–" if v != v else f"{v:+.2f}"
    ours = [f"{m:.2f}" + ("" if h != h else f" ± {h:.2f}")
            for m, h in zip(table["ours"], table["half_width"])]
    return pd.DataFrame({
        "paper table": table["table"], "dataset": table["dataset"], "kind": table["kind"],
        "setting": table["setting"], "quantity": table["quantity"],
        "paper (%)": table["paper"].map("{:.2f}".format), "ours (%)": ours,
        "ours − paper (pts)": table["ours_minus_paper"].map(signed),
        "s-BFN stacked (%)": table["ours_stacked"].map(lambda v: "" if v != v else f"{v:.2f}"),
        "ours covers": table["ours_covers"], "note": table["paper_note"]})
