"""The report from real run_trial records written as a sweep's results directory: partial and
failed sweeps, several sweeps at once (regression, image and tabular classification), bad
inputs, the HTML in a headless browser. The analysis layer's imports: test_analysis_layers.py."""

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import figures, tables
from analysis.collect import ResultsError, load_results
from analysis.document import LONG_ROWS, Table, html_page
from analysis.report import OutError, default_out, main, write_report
from sbfn_dist.experiment import run_trial
from sbfn_dist.settings.tasks import PRACTITIONERS
from tests.browser import chromium


def write_parts(home: Path, records: list, expected: int | None) -> Path:
    """A results dir as the sweeps runner writes it: one part file per trial, sweep.json."""
    parts = home / "results.parquet"
    parts.mkdir(parents=True)
    df = pd.DataFrame(records)
    for key, rows in df.groupby("trial_id"):
        rows.to_parquet(parts / f"part-{key}.parquet")
    if expected is not None:
        (home / "sweep.json").write_text(json.dumps({"name": home.name, "n_trials_expected": expected}))
    return home


def regression_records() -> list:
    recs = []
    for m, eps, fold in itertools.product([2, 3], [0.0, 0.3], range(3)):
        recs += run_trial({"dataset": "diabetes", "n_members": m, "epsilon": eps, "folds": 3,
                           "fold": fold, "epochs": 1, "n_samples": 150, "lambda2": [0.0, 1.0],
                           "combiners": ["sbfn_ls", "sbfn_ls_linear", "arithmetic"],
                           "sweep": "reg", "trial_id": f"m{m}-e{eps}-f{fold}"})
    for fold in range(3):
        recs += run_trial({"dataset": "diabetes", "folds": 3, "fold": fold, "n_samples": 150,
                           "combiners": [], "competitors": ["svm_rbf"], "sweep": "reg",
                           "trial_id": f"svm-f{fold}"})
        recs += run_trial({"dataset": "diabetes", "n_members": 1, "epsilon": 0.0, "folds": 3,
                           "fold": fold, "epochs": 1, "n_samples": 150, "combiners": ["arithmetic"],
                           "extra": {"role": "reference"}, "sweep": "reg",
                           "trial_id": f"reference-f{fold}"})      # the sweeps' M = 1 network
    failed = {"sweep": "reg", "trial_id": "m5-e0.3-f0", "dataset": "diabetes", "task": "regression",
              "fold": 0, "seed": 0, "n_members": 5, "status": "failed", "model": None,
              "error": "RuntimeError: worker died (after 3 retries)"}
    return recs + [failed]


def image_records() -> list:
    recs = []
    # head_epochs: the report reads the records, not how well the stacked heads learned (the
    # default gives 60 validation images a thousand steps: 1.1 s a trial here, 0.12 s at 30)
    for ens, eps, fold in itertools.product(["mixed", "cnn"], [0.2, 0.6], range(2)):
        recs += run_trial({"dataset": "digits", "n_members": 2, "epsilon": eps, "ensemble": ens,
                           "epochs": 1, "fold": fold, "n_train": 200, "n_val": 60, "n_test": 100,
                           "head_epochs": 30, "sweep": "img", "trial_id": f"{ens}-{eps}-{fold}"})
    return recs


# stack_logistic: a practitioners' anchor, so the report has a verdict of real records
TABULAR_COMBINERS = ["sbfn", "moe", "logit_mean", "prob_mean", "base_avg", "stack_logistic"]


def tabular_records() -> list:
    """Iris, 3 folds, M x ε = 2 x 2, and random forest (grid "small", 4 points) on the same folds;
    written as run_trial returns them (no trial_id: the analysis keys the trials)."""
    recs = []
    for m, eps in itertools.product([2, 3], [0.2, 0.6]):
        recs += run_trial({"dataset": "iris", "folds": 3, "n_members": m, "epsilon": eps,
                           "epochs": 5, "combiners": TABULAR_COMBINERS})
    return recs + run_trial({"dataset": "iris", "folds": 3, "combiners": [],
                             "competitors": ["random_forest"]})


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    reg = write_parts(base / "reg", regression_records(), expected=23)
    img = write_parts(base / "img", image_records(), expected=None)
    tab = base / "tab"
    tab.mkdir()
    pd.DataFrame(tabular_records()).to_parquet(tab / "results.parquet")
    return reg, img, tab


@pytest.fixture(scope="module")
def report(sweeps):
    return write_report(list(sweeps))


def test_partial_sweep_counts_found_missing_and_failed(sweeps):
    res = load_results(sweeps[0])
    info = res.sweeps[0]
    assert (info.n_trials, info.n_trials_expected, info.n_missing) == (19, 23, 4)
    assert info.status_counts["failed"] == 1 and len(res.not_ok) == 1


def test_one_csv_swept_for_two_targets_is_two_data_sets(tmp_path):
    """The report averaged the two sweeps' scores as one data set's (its M = 1 row 1.541: the
    mean of 2.123 for y and 0.958 for c)."""
    def rows(target: str, rmse: float) -> list:
        return [dict(sweep=f"s_{target}", trial_id=f"t{fold}", fold=fold, seed=0,
                     dataset="csv:/d/mine.csv", target=target, task="regression",
                     model="arithmetic", status="ok", rmse=rmse, n_members=2, epsilon=0.0)
                for fold in range(2)]
    homes = [write_parts(tmp_path / f"s_{t}", rows(t, r), expected=2)
             for t, r in (("y", 2.0), ("c", 1.0))]
    table = load_results(homes).table
    means = table.groupby("dataset")["rmse"].mean().to_dict()
    # named by the file, not the machine's path (issue 48: tests/test_newcomer_report.py)
    assert means == {"csv:mine.csv (target y)": 2.0, "csv:mine.csv (target c)": 1.0}
    one = load_results(homes[0]).table                    # one target: the name alone
    assert set(one["dataset"]) == {"csv:mine.csv"}


def test_a_sweep_without_a_finished_fold_is_told_so(tmp_path):
    """It was told to "pass a sweep's results directory", which it was."""
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "sweep.json").write_text('{"name": "cut"}')
    with pytest.raises(ResultsError, match="cut is a sweep with no finished fold yet .*--resume"):
        load_results(tmp_path / "cut")


def test_a_sweep_given_twice_is_refused_in_one_line(sweeps):
    """Read twice, its trials counted twice in the sweeps' table and status.csv."""
    again = f"{sweeps[0]}/./"
    with pytest.raises(ResultsError, match=f"{re.escape(again)} is the sweep .* again: give "
                                           "each sweep once"):
        load_results([sweeps[0], again])


def test_report_has_every_table_as_csv_and_says_what_is_missing(report):
    md = (report / "report.md").read_text()
    assert "19 of 23 trials have results; 4 are missing" in md
    assert "Sweep 'img' has no sweep.json" in md
    problems = pd.read_csv(report / "tables" / "problems.csv")
    assert problems.loc[0, "trial_id"] == "m5-e0.3-f0" and "worker died" in problems.loc[0, "error"]
    q = pd.read_csv(report / "tables" / "quartiles_diabetes.csv").set_index("model")
    assert set(q.index) == {"sbfn_ls", "sbfn_ls_linear", "arithmetic", "svm_rbf",
                            "single_network_M1"}
    assert q.loc["sbfn_ls", "n_configurations"] == 8        # M x eps x lambda2
    assert q.loc["arithmetic", "n_configurations"] == 4     # M x eps (lambda2 does not apply)
    for name in ("rmse_m_eps_diabetes", "ranking_rmse", "pairs_accuracy", "accuracy_overall",
                 "best_configurations", "efficiency", "epsilon_sensitivity", "diagnostics_epsilon",
                 "heterogeneity_gain"):
        assert len(pd.read_csv(report / "tables" / f"{name}.csv")) > 0, name
    # the image section holds the image rows only: the tabular ones have a section of their own
    assert set(pd.read_csv(report / "tables" / "accuracy_overall.csv")["dataset"]) == {"digits"}
    assert set(pd.read_csv(report / "tables" / "ranking_accuracy.csv")["dataset"]) == {"digits"}


def test_figures_are_written_or_skipped_with_a_reason(report):
    md = (report / "report.md").read_text()
    for png in re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", md):
        assert (report / png).stat().st_size > 1000
    assert len(list((report / "figures").glob("*.png"))) == 11
    # every image trial used M = 2: the accuracy-by-M figure says why it is missing
    assert "digits: accuracy by M:* ['n_members'] take a single value" in md


@pytest.fixture(scope="module")
def iris(sweeps) -> pd.DataFrame:
    """The tabular rows as the report read them, for the direct computations below."""
    return pd.read_parquet(sweeps[2] / "results.parquet")


def per_fold(rows: pd.DataFrame, keys: list) -> pd.DataFrame:
    return rows.groupby([*keys, "fold"], dropna=False)["accuracy"].mean().reset_index()


def test_tabular_trials_are_counted_per_call_and_fold(sweeps):
    info = load_results(sweeps[2]).sweeps[0]
    assert (info.name, info.n_trials) == ("tab", 4 * 3 + 3)      # 4 ensemble calls + RF, 3 folds


def test_tabular_configurations_are_the_fold_mean_and_spread_of_the_rows(report, iris):
    csv = pd.read_csv(report / "tables" / "tabular_accuracy_configurations.csv")
    assert set(csv["model"]) == {*TABULAR_COMBINERS, "random_forest"}
    # a combiner's configuration is its (M, ε); random forest's are its grid's points
    key = np.where(iris["family"] == "sbfn", iris["n_members"].astype(str) + "/" +
                   iris["epsilon"].astype(str), iris["model_params"])
    direct = per_fold(iris.assign(key=key), ["model", "key"]).groupby(["model", "key"])["accuracy"]
    direct = direct.agg(["mean", "std", "count"]).reset_index()
    for model, sub in direct.groupby("model"):
        mine = csv[csv["model"] == model]
        assert len(mine) == len(sub) == 4 and (mine["n_folds"] == 3).all() and (sub["count"] == 3).all()
        assert sorted(mine["mean"]) == pytest.approx(sorted(sub["mean"]), abs=1e-12)
        by_mean = lambda d: d.sort_values(["mean", "std"])["std"].to_numpy()
        assert by_mean(mine) == pytest.approx(by_mean(sub), abs=1e-12)
    assert csv.groupby("model")["mean"].apply(lambda m: m.is_monotonic_decreasing).all()  # best first


def test_tabular_overall_accuracy_puts_competitors_beside_the_combiners(report, iris):
    csv = pd.read_csv(report / "tables" / "tabular_accuracy_overall.csv").set_index("model")
    direct = 100 * per_fold(iris, ["model"]).groupby("model")["accuracy"].mean()
    assert csv["mean"].to_dict() == pytest.approx(direct.to_dict(), abs=1e-9)
    assert csv.loc["random_forest", "gain_vs_base_avg"] == pytest.approx(
        direct["random_forest"] - direct["base_avg"])
    assert list(csv.index)[-1] == "random_forest"               # listed after the combiners


def test_tabular_m_eps_interval_is_the_t_interval_over_folds(report, iris):
    csv = pd.read_csv(report / "tables" / "tabular_accuracy_m_eps.csv")
    # random forest has no (M, ε); the (M, ε) tables show the task's default combiners only
    # (stack_logistic among them: the practitioners' combiners are in every default list)
    assert len(csv) == 4 * len(TABULAR_COMBINERS)
    row = csv[(csv["model"] == "sbfn") & (csv["n_members"] == 3) & (csv["epsilon"] == 0.6)].iloc[0]
    folds = iris[(iris["model"] == "sbfn") & (iris["n_members"] == 3) & (iris["epsilon"] == 0.6)]
    acc = folds.sort_values("fold")["accuracy"].to_numpy()
    half = stats.t.ppf(0.975, 2) * acc.std(ddof=1) / np.sqrt(3)
    assert (row["mean"], row["ci_high"] - row["mean"]) == pytest.approx((acc.mean(), half))


def test_tabular_ranking_orders_by_fold_mean_and_tests_pairs(report, iris):
    ranks = pd.read_csv(report / "tables" / "ranking_accuracy_tabular.csv")
    pairs = pd.read_csv(report / "tables" / "pairs_accuracy_tabular.csv")
    wide = per_fold(iris, ["model"]).pivot(index="fold", columns="model", values="accuracy")
    assert list(ranks["mean"]) == pytest.approx(sorted(wide.mean(), reverse=True))
    assert len(pairs) == 7 * 6 / 2
    pair = pairs[(pairs["better"] == "random_forest") & (pairs["worse"] == "base_avg")].iloc[0]
    # the corrected resampled t test, n2/n1 from the records (training part: members + validation)
    splits = iris.drop_duplicates(["seed", "fold"])
    ratio = splits["n_test"].mean() / (splits["n_train"] + splits["n_val"]).mean()
    d = (wide["random_forest"] - wide["base_avg"]).to_numpy()
    t = d.mean() / np.sqrt((1 / 3 + ratio) * d.var(ddof=1))
    assert pair["size_ratio"] == pytest.approx(0.5, rel=0.1)        # 3 folds: about 1/(3 - 1)
    assert pair["p"] == pytest.approx(2 * stats.t.sf(abs(t), 2))


def test_the_verdict_reads_each_model_at_its_best_configuration_paired_by_fold(report, iris):
    """Iris's s-BFN (the tabular default objective) against stack_logistic, from the records:
    each at the (M, ε) with the best mean accuracy over folds. The digits trials ran the task's
    default combiners, the practitioners' among them: a verdict against each."""
    verdict = pd.read_csv(report / "tables" / "verdicts.csv")
    assert verdict[["dataset", "sbfn", "against"]].values.tolist() == [
        *[["digits", "sbfn", a] for a in PRACTITIONERS["classification"]],
        ["iris", "sbfn", "stack_logistic"]]
    def best(model):
        rows = iris[iris["model"] == model]
        means = rows.groupby(["n_members", "epsilon"])["accuracy"].mean()
        m, eps = means.idxmax()
        chosen = rows[(rows["n_members"] == m) & (rows["epsilon"] == eps)]
        return chosen.set_index("fold")["accuracy"].sort_index()
    d = best("sbfn") - best("stack_logistic")
    row = verdict[verdict["dataset"] == "iris"].iloc[0]
    assert (row["mean_difference"], row["n_pairs"]) == (pytest.approx(d.mean(), abs=1e-12), 3)
    assert (row["n_better"], row["n_worse"]) == ((d > 0).sum(), (d < 0).sum())
    md = (report / "report.md").read_text()
    assert md.index("## Verdicts") < md.index("## Regression")
    assert "No verdict for diabetes: no rows of ensemble_selection, stack_nnls, stack_ridge, " \
           "best_single" in md and "No verdict for digits" not in md


def test_every_table_with_a_test_takes_the_bayesian_one(sweeps):
    """Its three probabilities where the others show p; no Holm; the notes name the rope."""
    from analysis.report import table_blocks
    from analysis.stats import paired_test_of
    blocks = table_blocks(load_results(list(sweeps)), paired_test_of("bayes", 0.01))
    shown = {b.name: b for b in blocks if isinstance(b, Table)}
    pairs = shown["pairs_accuracy_tabular"].data
    assert {"p_left", "p_rope", "p_right"} <= set(pairs) and "p_holm" not in pairs
    assert pairs[["p_left", "p_rope", "p_right"]].sum(axis=1).to_numpy() == pytest.approx(1)
    for name in ("heterogeneity_gain", "verdicts"):
        assert {"P(left)", "P(rope)", "P(right)"} <= set(shown[name].view), name
        assert any("region of practical equivalence ±0.01" in n for n in shown[name].notes)


def test_cli_writes_the_report_to_the_out_dir(sweeps, tmp_path, capsys):
    assert main([str(sweeps[0]), "--out", str(tmp_path / "r"), "--test", "wilcoxon"]) == 0
    assert "Wilcoxon signed-rank" in (tmp_path / "r" / "report.md").read_text()


def machine_paths(report: Path, *bases) -> list:
    """The report's files that show an absolute path of this machine or climb out of it."""
    written = [p for p in report.rglob("*") if p.suffix in (".md", ".html", ".csv")]
    assert len(written) > 5
    return [p.name for p in written for text in [p.read_text()]
            if any(str(b) in text for b in bases) or "../../" in text]


def test_a_report_names_sweeps_outside_its_tree_by_name_alone(report, sweeps):
    """The module's sweeps lie in pytest's temporary folder: in no repository, not under the
    working directory; a relative path from the report would climb out into it."""
    summary = pd.read_csv(report / "tables" / "sweeps.csv")
    assert list(summary["sweep"]) == ["reg", "img", "tab"]
    assert list(summary["location"]) == ["reg", "img", "tab"]
    assert machine_paths(report, sweeps[0].parent) == []


def test_a_sweep_in_the_report_s_repository_is_located_relative_to_it(sweeps, tmp_path,
                                                                       monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)              # what marks a git work tree
    inside = repo / "runs" / "tab-copy"
    shutil.copytree(sweeps[2], inside)
    monkeypatch.chdir(tmp_path)                      # the working directory plays no part here
    out = repo / "docs" / "results" / "tab"
    write_report([inside, sweeps[2]], out)
    located = pd.read_csv(out / "tables" / "sweeps.csv").set_index("sweep")["location"]
    assert located.to_dict() == {"tab-copy": "../../../runs/tab-copy", "tab": "tab"}
    assert (out / located["tab-copy"]).resolve() == inside.resolve()


def test_outside_any_repository_the_working_directory_is_the_tree(sweeps, tmp_path,
                                                                   monkeypatch):
    monkeypatch.chdir(sweeps[2].parent)
    out = write_report([sweeps[2]], tmp_path / "elsewhere")      # the report outside it
    assert pd.read_csv(out / "tables" / "sweeps.csv")["location"].tolist() == ["tab"]
    out = write_report([sweeps[2]])                               # the default, tab/report
    assert pd.read_csv(out / "tables" / "sweeps.csv")["location"].tolist() == [".."]
    shutil.rmtree(out)                                            # the module's sweeps stay as made


PUBLISHED = Path(__file__).resolve().parents[1] / "docs" / "results"
MACHINE_PATH = re.compile(r"(^|[\s|(`'\",])/(tmp|work|home|root|Users|var|mnt)/")


@pytest.mark.parametrize("home", sorted(p.parents[1] for p in
                                         PUBLISHED.glob("*/tables/sweeps.csv")),
                         ids=lambda p: p.name)
def test_published_reports_show_no_path_of_the_machine_that_ran_them(home):
    located = pd.read_csv(home / "tables" / "sweeps.csv")["location"]
    repository = PUBLISHED.parents[1]
    for where in located:
        assert not where.startswith("/"), where
        climbs = ".." in where.split("/")
        assert not climbs or (home / where).resolve().is_relative_to(repository), where
    for name in ("report.md", "report.html", "tables/sweeps.csv"):
        text = (home / name).read_text()
        assert not MACHINE_PATH.search(text) and "../../../../" not in text, name


MACHINES = ("AMD EPYC", "Intel Xeon", "NVIDIA H100", "NVIDIA H200", "CPU not recorded")


def test_every_published_run_names_the_machine_that_measured_it():
    """docs/results/README.md's runs table: a machine for each run, as its text recorded it."""
    text = (PUBLISHED / "README.md").read_text()
    table = text.split("| run | command | wall time | machine | report |")[1].split("\n\n")[0]
    rows = [row.split(" | ") for row in table.strip().splitlines()[1:]]
    assert len(rows) >= 20
    for row in rows:
        assert len(row) == 5 and row[3].startswith(MACHINES), row[0]
        assert row[4].endswith("|") and "report.md" in row[4], row[0]


@pytest.mark.parametrize("case", ["an existing file", "under a file", "unwritable"])
def test_an_out_that_cannot_hold_the_report_is_one_line_and_writes_nothing(sweeps, tmp_path,
                                                                            capsys, case):
    kept = tmp_path / "notes.txt"
    kept.write_text("keep me")
    # /proc takes no new directory, for root too (os.access would say yes to root)
    out = {"an existing file": kept, "under a file": kept / "report",
           "unwritable": Path("/proc/sbfn-report")}[case]
    assert main([str(sweeps[2]), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: ") and err.count("\n") == 1 and str(out) in err, err
    assert "--out" in err and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == [kept] and kept.read_text() == "keep me"
    assert not out.exists() or out == kept
    with pytest.raises(OutError):
        write_report([sweeps[2]], out)


def test_the_report_opens_on_its_contents_and_figures_and_ends_on_the_long_tables(report):
    md = (report / "report.md").read_text()
    headings = re.findall(r"^(##+) (.+)$", md, re.M)
    # the answer first: each model at its best configuration, then the verdicts (issue 48)
    assert headings[:4] == [("##", "Contents"), ("##", "Best configurations"),
                            ("##", "Verdicts"), ("##", "Sweeps")]
    listed = re.findall(r"^( *)- \[(.+)\]\(#(.+)\)$", md.split("\n## Best configurations")[0],
                        re.M)
    assert [(len(indent) // 2 + 2, text) for indent, text, _ in listed] == \
        [(len(h), text) for h, text in headings[1:]]
    anchors = dict((text, anchor) for _, text, anchor in listed)
    assert anchors["Regression: comparisons"] == "regression-comparisons"   # GitHub's anchors
    assert anchors["Tabular classification"] == "tabular-classification"
    html = (report / "report.html").read_text()
    assert all(f"id='{a}'" in html for a in anchors.values())
    # each section's figures come before its tables; the long tables close the report
    assert md.index("![diabetes: RMSE by (M, ε)]") < md.index("tables/quartiles_diabetes.csv")
    assert md.index("![digits: accuracy by ε]") < md.index("tables/accuracy_overall.csv")
    details = md.index("\n## Detailed tables")
    for name in ("pairs_rmse", "pairs_accuracy", "rmse_m_eps_diabetes", "efficiency", "status",
                 "tabular_accuracy_configurations", "problems"):
        assert md.index(f"(`tables/{name}.csv`)") > details, name
    assert md.index("(`tables/ranking_rmse.csv`)") < details


def test_html_tables_have_a_header_for_every_column(report):
    html = (report / "report.html").read_text()
    assert "<th></th>" not in html
    for table in re.findall(r"<table.*?</table>", html, re.S):
        head, body = table.split("</thead>")
        columns = len(re.findall(r"<th>", head))
        assert all(len(re.findall(r"<t[dh]>", row)) == columns
                   for row in re.findall(r"<tr>(.*?)</tr>", body, re.S))
    status = html.split("<h4>Rows by status</h4>")[1]
    assert re.search(r"<thead>\s*<tr[^>]*>\s*<th>sweep</th>", status)


def test_a_long_table_folds_in_the_html_under_its_title():
    rows = pd.DataFrame({"a": range(LONG_ROWS + 1)})
    page = html_page([Table("long", "A long one", rows), Table("short", "A short one", rows[:3])],
                     "t")
    assert f"<summary><b>A long one</b> ({LONG_ROWS + 1} rows" in page
    assert page.count("<details>") == 1 and "<h4>A short one</h4>" in page


def test_the_m_eps_figures_draw_the_competitors_and_the_single_network(sweeps, iris, tmp_path,
                                                                       monkeypatch):
    drawn = []
    save = figures._save
    monkeypatch.setattr(figures, "_save",
                        lambda fig, path: drawn.append(fig.axes[0]) or save(fig, path))
    rows = load_results(sweeps[0]).ok
    figures.by_m_eps(tables.interval_by_m_eps(rows, "regression"), "RMSE", tmp_path / "r.png",
                     refs=tables.reference_scores(rows, "regression"))
    raw = pd.concat(pd.read_parquet(p) for p in (sweeps[0] / "results.parquet").glob("*"))
    svm = raw[raw["model"] == "svm_rbf"].groupby(["model_params", "fold"])["rmse"].mean()
    single = raw[raw["role"] == "reference"].groupby("fold")["rmse"].mean().mean()  # one config.
    assert lines_of(drawn[0]) == pytest.approx({
        "SVM-RBF (competitor), best configuration": svm.groupby(level=0).mean().min(),
        "Single network (M = 1), best configuration": single})
    forest = iris[iris["model"] == "random_forest"].groupby(["model_params", "fold"])["accuracy"]
    rows = load_results(sweeps[2]).ok
    figures.by_m_eps(tables.interval_by_m_eps(rows, "classification"), "accuracy (%)",
                     tmp_path / "c.png", scale=100,
                     refs=tables.reference_scores(rows, "classification"))
    assert lines_of(drawn[1]) == pytest.approx({
        "Random forest (competitor), best configuration":
            100 * forest.mean().groupby(level=0).mean().max()})


def lines_of(ax) -> dict:
    """Legend label -> height of each horizontal line (axhline: constant y across the axes)."""
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    return {line.get_label(): line.get_ydata()[0] for line in ax.get_lines()
            if line.get_label() in labels and len(set(line.get_ydata())) == 1
            and list(line.get_xdata()) == [0, 1]}


def test_the_report_reads_the_same_uris_as_the_sweeps_storage(sweeps, tmp_path):
    local = write_report(str(sweeps[0]), out=tmp_path / "local")
    assert main([sweeps[0].as_uri(), "--out", str(tmp_path / "uri")]) == 0
    for csv in sorted((local / "tables").glob("*.csv")):
        via_uri = tmp_path / "uri" / "tables" / csv.name
        pd.testing.assert_frame_equal(pd.read_csv(csv), pd.read_csv(via_uri))
    assert default_out("s3://bucket/runs/aq") == Path("aq-report")     # written locally
    with pytest.raises(ResultsError, match="cannot open 'nosuch://x'"):
        load_results("nosuch://x")


def test_a_sweep_whose_parts_were_never_merged_is_read_from_parts(sweeps, tmp_path):
    home = tmp_path / "unmerged"
    (home / "parts").mkdir(parents=True)
    for part in (sweeps[0] / "results.parquet").glob("*.parquet"):
        (home / "parts" / part.name).write_bytes(part.read_bytes())
    (home / "parts" / "half-written.parquet.1a2b.tmp").write_text("not parquet")
    merged, unmerged = load_results(sweeps[0]), load_results(home.as_uri())
    assert len(unmerged.table) == len(merged.table)
    assert unmerged.sweeps[0].n_trials == merged.sweeps[0].n_trials == 19


def test_a_sweep_s_parts_folder_is_read_as_its_sweep_saying_so(sweeps, tmp_path, capsys,
                                                                monkeypatch):
    """Read as a sweep, parts/ wrote its report inside parts/, located the sweep as `..` and
    lost its sweep.json (trials expected blank): it is read as its sweep, as a results.parquet
    path is, in one line saying so."""
    home = tmp_path / "sweep"
    (home / "parts").mkdir(parents=True)
    for part in (sweeps[0] / "results.parquet").glob("*.parquet"):
        (home / "parts" / part.name).write_bytes(part.read_bytes())
    (home / "sweep.json").write_text((sweeps[0] / "sweep.json").read_text())
    monkeypatch.chdir(tmp_path)                 # one tree: the location is relative
    assert main([str(home / "parts")]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0] == f"note: {home / 'parts'} is the parts/ folder of the sweep {home}: " \
        f"reading the sweep {home}"
    assert not (home / "parts" / "report").exists()
    listed = pd.read_csv(home / "report" / "tables" / "sweeps.csv")
    assert listed.loc[0, "location"] == ".." and listed.loc[0, "trials_expected"] == 23
    assert load_results(home / "parts").sweeps[0].n_trials_expected == 23


def test_a_results_parquet_directory_s_report_lies_beside_it(sweeps):
    assert default_out(str(sweeps[0] / "results.parquet")) == sweeps[0] / "report"


@pytest.mark.parametrize("case, message", [
    ("missing", "does not exist"), ("empty", "the directory is empty"),
    ("foreign", "lacks the columns"), ("corrupt", "not a readable parquet")])
def test_bad_inputs_are_clear_errors(tmp_path, capsys, case, message):
    path = tmp_path / case
    if case != "missing":
        path.mkdir()
    if case == "foreign":
        pd.DataFrame({"a": [1], "b": [2]}).to_parquet(path / "results.parquet")
    if case == "corrupt":
        (path / "results.parquet").write_text("not parquet")
    with pytest.raises(ResultsError, match=message):
        load_results(path)
    assert main([str(path)]) == 2
    assert message in capsys.readouterr().err


def test_rows_of_two_precisions_are_not_averaged_together(sweeps, tmp_path):
    """An fp32 twin of a bf16 sweep: the same data set and trials, another precision."""
    rows = pd.concat([pd.read_parquet(p) for p in (sweeps[1] / "results.parquet").glob("*")])
    twin = tmp_path / "img-bf16"
    twin.mkdir()
    rows.assign(precision="bf16", sweep="img-bf16").to_parquet(twin / "results.parquet")
    with pytest.raises(ResultsError, match=r"digits rows were trained in 2 precisions \(bf16: "
                                           r"img-bf16; fp32: img\)"):
        load_results([sweeps[1], twin])
    assert len(load_results(twin).table) == len(rows)         # each on its own is fine


@pytest.fixture(scope="module")
def browser() -> str:
    """Asked before the report fixture, so a machine without a browser skips at once."""
    return chromium()


def loaded_figures(browser: str, html: Path, profile: Path) -> tuple[int, int]:
    """(decoded images, images) of a page, counted by the page's own script in headless Chromium."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", html.as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    found = re.search(r'id="figure-check" data-total="(\d+)" data-loaded="(\d+)"', dom)
    assert found, "the page's figure check did not run"
    return int(found.group(2)), int(found.group(1))


def test_html_opens_in_a_headless_browser_with_every_figure(browser, report, tmp_path):
    n_png = len(list((report / "figures").glob("*.png")))
    assert loaded_figures(browser, report / "report.html", tmp_path / "p1") == (n_png, n_png)
    broken = tmp_path / "broken.html"           # one image with a corrupt payload must show up
    html = (report / "report.html").read_text()
    broken.write_text(html.replace("base64,iVBOR", "base64,!!!!", 1))
    assert loaded_figures(browser, broken, tmp_path / "p2") == (n_png - 1, n_png)


def test_uninformative_rows_are_counted_by_model_and_named_in_the_overview(sweeps, tmp_path):
    """A combiner that did not beat the constant guess (the records' `uninformative`): counted
    in 'Rows by status' and named once above the sections."""
    from analysis.sections import overview_blocks
    rows = pd.read_parquet(sweeps[2] / "results.parquet")
    flagged = rows["model"].eq("moe") & rows["status"].eq("ok")
    rows["uninformative"] = rows["uninformative"].astype(object).where(~flagged, True)
    (tmp_path / "tab").mkdir()
    rows.to_parquet(tmp_path / "tab" / "results.parquet")
    res = load_results(tmp_path / "tab")
    counts = tables.status_counts(res.table).set_index("model")["uninformative"]
    expected = rows[rows["uninformative"].eq(True)].groupby("model").size()
    assert counts["moe"] == flagged.sum() > 0
    assert counts.sum() == expected.sum()
    texts = [b.text for b in overview_blocks(res) if hasattr(b, "text")]
    assert any(t.startswith(f"{expected.sum()} ok rows come from a combiner that did not beat")
               for t in texts), texts
