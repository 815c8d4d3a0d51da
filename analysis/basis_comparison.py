"""The appendix "Comparison of Basis Function Strategies": its table and both figures from the
tables `python -m sweeps.appendix` writes (results.parquet, centres.parquet, points.parquet)."""

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from analysis.collect import load_results
from analysis.document import Figure, Heading, Table, Text, html_page, markdown, write_tables
from analysis.figures import STYLE, _save

BASIS_LABELS = {"member": "GBF", "kmeans": "RBF-KMeans"}
COLOURS = {"member": "tab:blue", "kmeans": "tab:red"}        # as in the paper's RMSE figure
CROSSES = {"member": "red", "kmeans": "green"}               # as in the paper's centre figure
NOTES = ["mean and std: over the runs (run r: data and members drawn from seed r) of the test "
         "RMSE on the 1000 test points; std is the sample standard deviation (ddof = 1).",
         "GBF: K = M univariate Gaussian units, one per member at that member's mean prediction "
         "(sbfn_basis member); RBF-KMeans: K = M multivariate Gaussian units in R^M at k-means "
         "centres (sbfn_basis kmeans); both s-BFN least squares, λ2 as in the results."]


def rmse_table(ok: pd.DataFrame) -> pd.DataFrame:
    g = ok.groupby(["n_members", "sbfn_basis"])["rmse"]
    out = pd.DataFrame({"mean": g.mean(), "std": g.std(), "n_runs": g.count()}).reset_index()
    out["basis"] = out["sbfn_basis"].map(BASIS_LABELS)
    return out


def table_view(table: pd.DataFrame) -> pd.DataFrame:
    cell = table["mean"].map("{:.4f}".format) + " ± " + table["std"].map("{:.4f}".format)
    wide = table.assign(cell=cell).pivot(index="n_members", columns="basis", values="cell")
    return wide.reset_index().rename(columns={"n_members": "M"})


def rmse_figure(table: pd.DataFrame, path: Path) -> Path:
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        for basis, sub in table.groupby("sbfn_basis"):
            ax.errorbar(sub["n_members"], sub["mean"], yerr=sub["std"].fillna(0), marker="o",
                        capsize=3, color=COLOURS.get(basis), label=BASIS_LABELS.get(basis, basis))
        ax.set_xscale("log")
        ax.set_xticks(sorted(table["n_members"].unique()),
                      [str(m) for m in sorted(table["n_members"].unique())])
        ax.set_xlabel("M (number of basis functions = hypotheses, log scale)")
        ax.set_ylabel("test RMSE (y units)")
        ax.legend()
        return _save(fig, path)


def centres_figure(centres: pd.DataFrame, points: pd.DataFrame, path: Path) -> Path:
    ms = sorted(centres["n_members"].unique())
    bases = [b for b in BASIS_LABELS if b in set(centres["sbfn_basis"])]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(bases), len(ms), figsize=(2.3 * len(ms), 2.4 * len(bases)),
                                 squeeze=False, sharex=True, sharey=True)
        for i, basis in enumerate(bases):
            for j, m in enumerate(ms):
                ax = axes[i][j]
                ax.scatter(points["x1"], points["x2"], c=points["y"], s=4, cmap="Greys", alpha=0.5)
                c = centres[(centres["sbfn_basis"] == basis) & (centres["n_members"] == m)]
                ax.scatter(c["x1"], c["x2"], marker="x", s=30, color=CROSSES[basis])
                ax.set_title(f"{BASIS_LABELS[basis]}, M={m}", fontsize=8)
                ax.set_xlabel("x1" if i == len(bases) - 1 else "")
                ax.set_ylabel("x2" if j == 0 else "")
        return _save(fig, path)


def write_appendix(results_dir, out: Path | None = None) -> Path:
    results_dir = Path(results_dir)
    out = Path(out) if out else results_dir / "report"
    ok = load_results(results_dir).ok
    table = rmse_table(ok)
    centres = pd.read_parquet(results_dir / "centres.parquet")
    points = pd.read_parquet(results_dir / "points.parquet")
    blocks = [Heading("Appendix: comparison of basis function strategies", 1),
              Text("y = sin(x1) + cos(x2) + ε, ε ~ N(0, 0.1²), x ~ U[-3, 3]²; 300 training and 1000 "
                   "test points (data set sincos); produced by python -m sweeps.appendix."),
              Table("appendix_rmse", "Test RMSE by M and basis strategy (mean ± std over runs)",
                    table, table_view(table), NOTES),
              Figure("appendix_rmse", "Average test RMSE by M",
                     rmse_figure(table, out / "figures" / "appendix_rmse.png"),
                     "Average RMSE on the test set for the s-BFN with Gaussian basis functions (GBF, "
                     "blue) and RBF-KMeans (red) as M grows; error bars: standard deviation across runs."),
              Figure("appendix_centres", "Basis function centre locations",
                     centres_figure(centres, points, out / "figures" / "appendix_centres.png"),
                     "Receptive-field centres of the units (activation-weighted mean of the training "
                     "inputs; the units themselves live in the members' output space) for GBF (top, "
                     "red crosses) and RBF-KMeans (bottom, green crosses), run 0, over the training "
                     "points shaded by y.")]
    write_tables(blocks, out)
    (out / "report.md").write_text(markdown(blocks, out))
    (out / "report.html").write_text(html_page(blocks, "sbfn-dist appendix"))
    return out
