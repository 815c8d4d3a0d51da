"""The report from real run_trial records written as a sweep's results directory: partial and
failed sweeps, several sweeps at once, bad inputs, the HTML in a headless browser, and the
analysis layer's independence from torch and ray."""

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.collect import ResultsError, load_results
from analysis.report import main, write_report
from sbfn_dist.experiment import run_trial

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


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
    failed = {"sweep": "reg", "trial_id": "m5-e0.3-f0", "dataset": "diabetes", "task": "regression",
              "fold": 0, "seed": 0, "n_members": 5, "status": "failed", "model": None,
              "error": "RuntimeError: worker died (after 3 retries)"}
    return recs + [failed]


def image_records() -> list:
    recs = []
    for ens, eps, fold in itertools.product(["mixed", "cnn"], [0.2, 0.6], range(2)):
        recs += run_trial({"dataset": "digits", "n_members": 2, "epsilon": eps, "ensemble": ens,
                           "epochs": 1, "fold": fold, "n_train": 200, "n_val": 60, "n_test": 100,
                           "sweep": "img", "trial_id": f"{ens}-{eps}-{fold}"})
    return recs


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    reg = write_parts(base / "reg", regression_records(), expected=20)
    img = write_parts(base / "img", image_records(), expected=None)
    return reg, img


@pytest.fixture(scope="module")
def report(sweeps):
    return write_report(list(sweeps))


def test_partial_sweep_counts_found_missing_and_failed(sweeps):
    res = load_results(sweeps[0])
    info = res.sweeps[0]
    assert (info.n_trials, info.n_trials_expected, info.n_missing) == (16, 20, 4)
    assert info.status_counts["failed"] == 1 and len(res.not_ok) == 1


def test_report_has_every_table_as_csv_and_says_what_is_missing(report):
    md = (report / "report.md").read_text()
    assert "16 of 20 trials have results; 4 are missing" in md
    assert "Sweep 'img' has no sweep.json" in md
    problems = pd.read_csv(report / "tables" / "problems.csv")
    assert problems.loc[0, "trial_id"] == "m5-e0.3-f0" and "worker died" in problems.loc[0, "error"]
    q = pd.read_csv(report / "tables" / "quartiles_diabetes.csv").set_index("model")
    assert set(q.index) == {"sbfn_ls", "sbfn_ls_linear", "arithmetic", "svm_rbf"}
    assert q.loc["sbfn_ls", "n_configurations"] == 8        # M x eps x lambda2
    assert q.loc["arithmetic", "n_configurations"] == 4     # M x eps (lambda2 does not apply)
    for name in ("rmse_m_eps_diabetes", "ranking_rmse", "pairs_accuracy", "accuracy_overall",
                 "best_configurations", "efficiency", "epsilon_sensitivity", "diagnostics_epsilon"):
        assert len(pd.read_csv(report / "tables" / f"{name}.csv")) > 0, name


def test_figures_are_written_or_skipped_with_a_reason(report):
    md = (report / "report.md").read_text()
    for png in re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", md):
        assert (report / png).stat().st_size > 1000
    assert len(list((report / "figures").glob("*.png"))) == 7
    # every image trial used M = 2: the accuracy-by-M figure says why it is missing
    assert "digits: accuracy by M:* ['n_members'] take a single value" in md


def test_cli_writes_the_report_to_the_out_dir(sweeps, tmp_path, capsys):
    assert main([str(sweeps[0]), "--out", str(tmp_path / "r"), "--test", "wilcoxon"]) == 0
    assert "Wilcoxon signed-rank" in (tmp_path / "r" / "report.md").read_text()


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


def loaded_figures(html: Path, profile: Path) -> tuple[int, int]:
    """(decoded images, images) of a page, counted by the page's own script in headless Chromium."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (apt-get install chromium)")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", html.as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    found = re.search(r'id="figure-check" data-total="(\d+)" data-loaded="(\d+)"', dom)
    assert found, "the page's figure check did not run"
    return int(found.group(2)), int(found.group(1))


def test_html_opens_in_a_headless_browser_with_every_figure(report, tmp_path):
    n_png = len(list((report / "figures").glob("*.png")))
    assert loaded_figures(report / "report.html", tmp_path / "p1") == (n_png, n_png)
    broken = tmp_path / "broken.html"           # one image with a corrupt payload must show up
    html = (report / "report.html").read_text()
    broken.write_text(html.replace("base64,iVBOR", "base64,!!!!", 1))
    assert loaded_figures(broken, tmp_path / "p2") == (n_png - 1, n_png)


def test_report_imports_neither_torch_nor_ray():
    code = "import sys, analysis.report, analysis.appendix; print(sorted({'torch', 'ray'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"
