"""The paper's figures from the results table (matplotlib, Agg): one style, labelled axes with
units, one colour per model everywhere. Each function returns the PNG path it wrote, or raises
Skip with the reason when the data lack the needed columns or variation."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)
from matplotlib import ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.configs import configurations  # noqa: E402
from analysis.image_tables import split_interval  # noqa: E402
from analysis.labels import (COLOUR_ORDER, ensemble_label, model_label,  # noqa: E402
                             model_sort_key, param_label)
from analysis.tables import top_decile  # noqa: E402
from sbfn_dist.records import DIAGNOSTICS  # noqa: E402

# tab20's ten strong colours first, then their pale twins: in registry order the s-BFN forms and
# the references come first (the pale blue of tab20's second entry drew sbfn_ls_linear, the
# regression objective, as the faintest series of the (M, ε) figure; and sbfn, 21 mod 20).
PALETTE = plt.get_cmap("tab20").colors[0::2] + plt.get_cmap("tab20").colors[1::2]
# A reference line is one thin line across the axes: a pale colour there reads as a grid line.
# Drawn no lighter than this relative luminance (tab20's strong colours: 0.3-0.7).
LINE_LUMINANCE = 0.5
LINESTYLES = ("-", "--", ":", "-.")
STYLE = {"figure.dpi": 110, "savefig.dpi": 110, "font.size": 9, "axes.grid": True,
         "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
         "legend.fontsize": 8, "legend.frameon": False}


class Skip(Exception):
    """The data cannot make this figure; the message says why (printed in the report)."""


def colour(model: str):
    i = COLOUR_ORDER.index(model) if model in COLOUR_ORDER else len(COLOUR_ORDER) + hash(model) % 4
    return PALETTE[i % len(PALETTE)]


def _models(df: pd.DataFrame) -> list:
    return sorted(df["model"].unique(), key=model_sort_key)


def _need(df: pd.DataFrame, cols, varying=()) -> None:
    missing = [c for c in cols if c not in df.columns or df[c].isna().all()]
    if missing:
        raise Skip(f"the results lack the column(s) {missing}")
    flat = [c for c in varying if df[c].nunique() < 2]
    if flat:
        raise Skip(f"{flat} take a single value in these results, so there is nothing to compare")


def _legend(ax, ncol: int = 3, last=()) -> None:
    """Above the axes, so it never hides data; the entries labelled in `last` (reference
    lines, which matplotlib lists first) after the others."""
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] in last)
    ax.legend([handles[i] for i in order], [labels[i] for i in order], ncol=ncol,
              loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=7)


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def by_m_eps(iv: pd.DataFrame, ylabel: str, path: Path, scale: float = 1.0,
             refs: pd.DataFrame | None = None) -> Path:
    """The metric with its interval for every (M, ε) pair, one series per model (values x scale);
    `refs` (tables.reference_scores) as horizontal lines to read the ensembles against."""
    if iv.empty:
        raise Skip("no ensemble-combiner rows with status ok")
    pairs = iv[["n_members", "epsilon"]].drop_duplicates().sort_values(["n_members", "epsilon"])
    if len(pairs) < 2:
        raise Skip("a single (M, ε) pair: nothing to compare")
    pos = {p: i for i, p in enumerate(map(tuple, pairs.to_numpy()))}
    models = _models(iv)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(pos) * max(1, len(models) / 3)), 3.8))
        width = 0.8 / len(models)
        for k, model in enumerate(models):
            sub = iv[iv["model"] == model]
            x = np.array([pos[(m, e)] for m, e in zip(sub["n_members"], sub["epsilon"])])
            x = x - 0.4 + width * (k + 0.5)
            err = scale * np.vstack([sub["mean"] - sub["ci_low"], sub["ci_high"] - sub["mean"]])
            ax.errorbar(x, scale * sub["mean"], yerr=np.nan_to_num(err), fmt="o", ms=4, capsize=2,
                        color=colour(model), label=model_label(model))
        references = reference_lines(ax, refs, scale)
        ax.set_xticks(range(len(pos)), [f"M={m:g}\nε={e:g}" for m, e in pos])
        ax.set_xlabel("(M, ε): number of hypotheses and diversity parameter")
        ax.set_ylabel(ylabel)
        _legend(ax, last=references)
        return _save(fig, path)


REFERENCE_STYLE = {"competitor": "--", "single network": ":"}
REFERENCE_LEGEND = {"competitor": "{} (competitor), best configuration",
                    "single network": "{}, best configuration"}


def reference_lines(ax, refs: pd.DataFrame | None, scale: float = 1.0) -> list:
    """One horizontal line per reference model (dashed: a competitor, dotted: the single
    network), its legend entry saying what it is; returns those entries."""
    labels = []
    for ref in ([] if refs is None else refs.itertuples(index=False)):
        labels.append(REFERENCE_LEGEND[ref.kind].format(model_label(ref.model)))
        ax.axhline(scale * ref.mean, color=legible(colour(ref.model)),
                   ls=REFERENCE_STYLE[ref.kind], lw=1.2, label=labels[-1])
    return labels


def legible(rgb) -> tuple:
    """The colour, darkened (its hue kept) to at most LINE_LUMINANCE."""
    luminance = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    factor = min(1.0, LINE_LUMINANCE / luminance) if luminance else 1.0
    return tuple(factor * c for c in rgb[:3])


def score_against(points: pd.DataFrame, setting: str, task: str, xlabel: str, ylabel: str,
                  path: Path, scale: float = 1.0, log: bool = False) -> Path:
    """A continuous setting (drawn from a range): each configuration's score (objective_points:
    its model's mean over folds) against its value of `setting` (values x scale), the best
    complete configuration as a star and the range of the setting among the best tenth
    (tables.top_decile) shaded (a line where that is one value); configurations stopped early
    (fewer folds) hollow. `log`: a log x axis (configs.log_scaled)."""
    _need(points, [setting], varying=[setting])
    top = top_decile(points, task)
    if top.empty:
        raise Skip("no configuration has every fold: nothing ranks")
    best, model = top.iloc[0], points["model"].iloc[0]
    full, early = points[points["complete"]], points[~points["complete"]]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 3.8))
        best_region(ax, top, setting, colour(model))
        ax.scatter(full[setting], scale * full["mean"], s=16, color=colour(model),
                   label=f"{model_label(model)}: one configuration each")
        if len(early):
            ax.scatter(early[setting], scale * early["mean"], s=16, facecolors="none",
                       edgecolors=colour(model), label="stopped early (fewer folds)")
        ax.scatter([best[setting]], [scale * best["mean"]], s=140, marker="*", color="black",
                   zorder=3, label=f"best: {best[setting]:.4g} ({scale * best['mean']:.4g})")
        if log:
            log_axis(ax.xaxis)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        _legend(ax, ncol=2)
        return _save(fig, path)


# A region of one configuration is no region: 4 draws gave a "best tenth" of one value.
REGION_MIN = 2


def best_region(ax, top: pd.DataFrame, setting: str, rgb) -> None:
    """The range of `setting` among the best tenth (`top`), shaded, where that tenth holds
    REGION_MIN configurations or more (from 11 configurations on) and spans a range."""
    low, high = top[setting].min(), top[setting].max()
    if len(top) >= REGION_MIN and low < high:
        ax.axvspan(low, high, color=rgb, alpha=0.15,
                   label=f"best tenth: {param_label(setting)} in [{low:.3g}, {high:.3g}]")


def log_axis(axis) -> None:
    """A log x scale labelled at the powers of ten, or at 1, 3 (or 1, 2, 5) times them where
    the axis spans two decades or less (one or less), each label a plain number: matplotlib's
    own labels its minor ticks where the values span less than a decade or two, and those
    overlapped (lr drawn from loguniform(1e-4, 1e-1), 4 draws)."""
    axis.axes.set_xscale("log")
    low, high = axis.axes.get_xlim()
    decades = np.log10(high / low)
    subs = (1.0,) if decades > 2 else (1.0, 3.0) if decades > 1 else (1.0, 2.0, 5.0)
    axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def accuracy_by(ok: pd.DataFrame, by: str, xlabel: str, path: Path) -> Path:
    """Accuracy (%) with 95% intervals across splits against M or ε, one line per combiner."""
    _need(ok, [by, "accuracy"], varying=[by])
    iv = split_interval(ok, ["model", by], "accuracy")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for model in _models(iv):
            sub = iv[iv["model"] == model].sort_values(by)
            ax.errorbar(sub[by], 100 * sub["mean"], yerr=100 * sub["half_width"].fillna(0),
                        marker="o", ms=3, capsize=2, color=colour(model), label=model_label(model))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy (%)")
        _legend(ax)
        return _save(fig, path)


def accuracy_by_architecture(ok: pd.DataFrame, path: Path) -> Path:
    """Grouped bars: accuracy (%) per architecture mix and combiner, 95% intervals across splits."""
    _need(ok, ["ensemble", "accuracy"], varying=["ensemble"])
    iv = split_interval(ok, ["ensemble", "model"], "accuracy")
    mixes, models = sorted(iv["ensemble"].unique()), _models(iv)
    width = 0.8 / len(models)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(mixes)), 3.8))
        for k, model in enumerate(models):
            sub = iv[iv["model"] == model].set_index("ensemble").reindex(mixes)
            ax.bar(np.arange(len(mixes)) - 0.4 + width * (k + 0.5), 100 * sub["mean"], width,
                   yerr=100 * sub["half_width"].fillna(0), capsize=2, color=colour(model),
                   label=model_label(model))
        ax.set_xticks(range(len(mixes)), [ensemble_label(m) for m in mixes])
        ax.set_xlabel("architecture mix of the members")
        ax.set_ylabel("test accuracy (%)")
        _legend(ax)
        return _save(fig, path)


def violins(ok: pd.DataFrame, metric: str, ylabel: str, path: Path) -> Path:
    """Distribution over configurations of each model's per-configuration mean metric."""
    _need(ok, [metric])
    conf = configurations(ok, metric)
    models = [m for m in _models(conf) if conf.loc[conf["model"] == m, "mean"].notna().any()]
    data = [conf.loc[conf["model"] == m, "mean"].dropna().to_numpy() for m in models]
    if max(len(d) for d in data) < 2:
        raise Skip("every model has a single configuration: no distribution to show")
    scale = 100 if metric == "accuracy" else 1
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(models)), 3.8))
        parts = ax.violinplot([scale * d for d in data], showmedians=True)
        for body, m in zip(parts["bodies"], models):
            body.set_facecolor(colour(m))
            body.set_alpha(0.6)
        ax.set_xticks(range(1, len(models) + 1), [model_label(m) for m in models], rotation=30,
                      ha="right")
        ax.set_ylabel(ylabel)
        return _save(fig, path)


def time_vs_accuracy(ok: pd.DataFrame, path: Path) -> Path:
    """Each configuration's mean training time (log scale) against its mean accuracy."""
    _need(ok, ["train_seconds", "accuracy"])
    conf = configurations(ok, "accuracy", extra=("train_seconds",))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for model in _models(conf):
            sub = conf[conf["model"] == model]
            ax.scatter(sub["train_seconds"], 100 * sub["mean"], s=14, alpha=0.8,
                       color=colour(model), label=model_label(model))
        ax.set_xscale("log")
        ax.set_xlabel("training time per split (s, members + combiner, log scale)")
        ax.set_ylabel("test accuracy (%)")
        _legend(ax)
        return _save(fig, path)


# Both tasks' Bregman terms (left panel); what only the classifiers' votes have (right panel).
BREGMAN = DIAGNOSTICS["regression"]
PAC = tuple(d for d in DIAGNOSTICS["classification"] if d not in BREGMAN)


def diagnostics_vs_eps(diag: pd.DataFrame, path: Path) -> Path:
    """Bregman terms (left, nats) and PAC-Bayes quantities (right, fractions) against ε."""
    if diag.empty:
        raise Skip("the results have no diagnostics columns (bregman_*, gibbs_risk, ...)")
    _need(diag, ["epsilon"], varying=["epsilon"])
    mixes = sorted(diag["ensemble"].unique()) if "ensemble" in diag else [None]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for ax, cols, unit in ((axes[0], BREGMAN, "cross-entropy terms (nats)"),
                               (axes[1], PAC, "risk / disagreement / bound (fraction)")):
            for i, col in enumerate(c for c in cols if c in diag and diag[c].notna().any()):
                for j, mix in enumerate(mixes):
                    sub = diag if mix is None else diag[diag["ensemble"] == mix]
                    sub = sub.sort_values("epsilon")
                    ax.plot(sub["epsilon"], sub[col], marker="o", ms=3, color=PALETTE[2 * i],
                            ls=LINESTYLES[j % 4],
                            label=col if mix is None else f"{col}, {ensemble_label(mix)}")
            ax.set_xlabel("ε (diversity parameter)")
            ax.set_ylabel(unit)
            _legend(ax, ncol=2)
        return _save(fig, path)


def reliability_diagram(curves: pd.DataFrame, path: Path) -> Path:
    """Accuracy against mean confidence per reliability bin (calibration.reliability_curves:
    bins summed over the folds of each model's best configuration), one line per combiner,
    the diagonal (perfect calibration) dashed; empty bins left out."""
    if curves.empty:
        raise Skip("no row has the reliability column (sweeps recorded before it), or the "
                   "data set has none of the combiners drawn")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(4.8, 4.4))
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect calibration")
        for model in _models(curves):
            sub = curves[(curves["model"] == model) & (curves["count"] > 0)]
            ax.plot(sub["mean_confidence"], sub["accuracy"], marker="o", ms=3,
                    color=colour(model),
                    label=f"{model_label(model)} (ECE {100 * sub['ece'].iloc[0]:.1f}%)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("mean confidence in the bin (max class probability)")
        ax.set_ylabel("accuracy in the bin (fraction right)")
        _legend(ax, ncol=2)
        return _save(fig, path)
