"""The report as a newcomer reads it (issue 48, "What the newcomer tripped on" 3 and 4): it opens
with the answer the sweep's end table printed (each model at its best configuration, best
first), says what its model ranking averages, names the quartile table's first column by what
it holds, and names a data set given as a path by its folder's or file's name, saying once
where it was read, never the machine's absolute path."""

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from analysis.collect import place_names
from analysis.report import write_report
from sbfn_dist.experiment import run_trial
from sbfn_dist.interfaces.summary import comparison_table
from sweeps.engine.summary import _labelled

LAMBDAS = ('{"lambda2": 0.0}', '{"lambda2": 3.0}')


def regression_rows() -> list:
    """3 folds of an s-BFN over M x eps x lambda2, SVM-RBF at two grid points and the M = 1
    reference at two learning rates; the scores made up so that the best configuration (SVM's
    C=10) is not the model whose average over its configurations is best (the reference)."""
    base = {"sweep": "reg", "dataset": "diabetes", "task": "regression", "seed": 0,
            "status": "ok"}
    rows = []
    for m, eps, (k, params), fold in itertools.product((2, 3), (0.0, 0.3), enumerate(LAMBDAS),
                                                       range(3)):
        rows.append({**base, "trial_id": f"M{m}_eps{eps}", "model": "sbfn_ls_linear",
                     "role": "ensemble", "n_members": m, "epsilon": eps, "lambda2": 3.0 * k,
                     "model_params": params, "fold": fold,
                     "rmse": 55 + 4 * (m == 3) + 3 * eps + k + fold})
    for c, fold in itertools.product((1, 10), range(3)):
        rows.append({**base, "trial_id": "svm", "model": "svm_rbf", "role": "competitors",
                     "model_params": json.dumps({"C": c}), "fold": fold,
                     "rmse": 54 + 20 * (c == 1) + fold})
    for lr, fold in itertools.product((0.003, 0.03), range(3)):
        rows.append({**base, "trial_id": f"ref{lr}", "model": "arithmetic", "role": "reference",
                     "n_members": 1, "epsilon": 0.0, "lr": lr, "model_params": "{}",
                     "fold": fold, "rmse": 56.5 + fold})
    return rows


@pytest.fixture(scope="module")
def regression_report(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("results") / "reg"
    home.mkdir()
    pd.DataFrame(regression_rows()).to_parquet(home / "results.parquet")
    (home / "sweep.json").write_text(json.dumps({"name": "reg", "objective": "sbfn_ls_linear"}))
    return write_report([home])


def end_table() -> pd.DataFrame:
    """The sweep's end table of these rows, made as sweeps/engine/summary.py makes it."""
    axes = ["n_members", "epsilon"]
    rows = _labelled(pd.DataFrame(regression_rows()), axes)
    return comparison_table(rows.to_dict("records"), "rmse", ["model_params", *axes])


def test_the_report_opens_with_the_sweep_s_best_configuration_answer(regression_report):
    md = (regression_report / "report.md").read_text()
    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings[:3] == ["Contents", "Best configurations", "Verdicts"], headings
    opening = md.split("\n## Best configurations\n")[1].split("\n## ")[0]
    said = end_table()
    top = said.index[0]
    assert top == "svm_rbf" and f"best {top} (params={{\"C\": 10}}) at RMSE " \
        f"{said['rmse_mean'].iloc[0]:.4g} over 3 folds" in opening, opening
    assert "the sweep's objective sbfn_ls_linear (M=2, ε=0, λ2=0) at RMSE 56 over 3 folds, " \
           "2nd of 3" in opening, opening
    best = pd.read_csv(regression_report / "tables" / "best_per_model.csv")
    assert list(best["model"]) == list(said.index)
    np.testing.assert_allclose(best["mean"], said["rmse_mean"])


def test_the_model_ranking_says_what_it_averages(regression_report):
    md = (regression_report / "report.md").read_text()
    before = md.split("**Model ranking by rmse**")[0].rstrip().splitlines()[-1]
    assert before.startswith("The model ranking averages each model over all of its "
                             "configurations on each split"), before
    ranking = pd.read_csv(regression_report / "tables" / "ranking_rmse.csv")
    assert ranking["model"].iloc[0] == "single_network_M1"    # the average: another question


def test_the_quartile_table_names_its_first_column_by_what_it_holds(regression_report):
    md = (regression_report / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| model | best config"))
    assert header.startswith("| model | best configuration's mean | Std dev. |"), header
    assert "1st model |" not in md


# --- data sets given as paths -----------------------------------------------------------------
def image_folder(root: Path) -> Path:
    """Three classes of six 8x8 images."""
    rng = np.random.default_rng(0)
    for k, shape in enumerate(("discs", "squares", "stripes")):
        (root / shape).mkdir(parents=True)
        for i in range(6):
            pixels = rng.normal(60 * k + 40, 20, (8, 8, 3)).clip(0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / shape / f"{i}.png")
    return root


@pytest.fixture(scope="module")
def folder_sweeps(tmp_path_factory):
    """Two sweeps of one image trial each, on two folders both named shapes."""
    base = tmp_path_factory.mktemp("folders")
    homes = []
    for place in ("a", "b"):
        folder = image_folder(base / place / "shapes")
        records = run_trial({"dataset": f"folder:{folder}", "n_members": 2, "epsilon": 0.2,
                             "ensemble": "simple_cnn", "epochs": 1, "fold": 0,
                             "combiners": ["sbfn", "logit_mean"], "sweep": f"s{place}",
                             "trial_id": f"t{place}"})
        home = base / "runs" / f"s{place}"
        home.mkdir(parents=True)
        pd.DataFrame(records).to_parquet(home / "results.parquet")
        homes.append(home)
    return base, homes


def test_a_folder_data_set_is_named_by_its_folder_never_by_the_machine_s_path(folder_sweeps):
    base, homes = folder_sweeps
    out = write_report(homes[:1], base / "report")
    md = (out / "report.md").read_text()
    assert "### folder:shapes" in md
    written = [p for p in out.rglob("*") if p.suffix in (".md", ".html", ".csv")]
    assert [p.name for p in written if str(base) in p.read_text()] == []
    assert [p.name for p in (out / "figures").iterdir() if "tmp" in p.name] == []
    assert any(p.name.endswith("_folder_shapes.png") for p in (out / "figures").iterdir())
    assert md.count("Data sets given as a path are named by their folder or file") == 1


def test_where_a_folder_was_read_is_said_once_relative_to_the_report_in_its_tree(folder_sweeps,
                                                                                 monkeypatch):
    base, homes = folder_sweeps
    monkeypatch.chdir(base)          # the working tree: the report and the data lie in it
    out = write_report(homes[:1], base / "report-here")
    md = (out / "report.md").read_text()
    assert md.count("folder:shapes from ../a/shapes (relative to this report)") == 1, md


def test_two_folders_of_one_name_stay_two_data_sets():
    names = place_names(["folder:/x/a/shapes", "folder:/y/b/shapes", "csv:/x/mine.csv", "iris"])
    assert names == {"folder:/x/a/shapes": "folder:a/shapes",
                     "folder:/y/b/shapes": "folder:b/shapes", "csv:/x/mine.csv": "csv:mine.csv"}


def test_two_sweeps_of_same_named_folders_are_reported_apart(folder_sweeps):
    base, homes = folder_sweeps
    out = write_report(homes, base / "both")
    best = pd.read_csv(out / "tables" / "best_per_model.csv")
    assert set(best["dataset"]) == {"folder:a/shapes", "folder:b/shapes"}


def test_a_combiner_two_trials_computed_on_the_same_splits_counts_each_split_once():
    """A head_calibration axis leaves ensemble selection as it is: both trials fit it on the
    same members and splits. The end table counts its 6 splits (2 seeds x 3 folds), not 12 rows,
    with the same mean and the spread over the 6 splits (duplicated rows would shrink it)."""
    base = {"sweep": "cal", "dataset": "wine", "task": "classification", "status": "ok",
            "role": "ensemble", "n_members": 5, "epsilon": 0.5, "model_params": "{}"}
    scores = {(s, f): 0.9 + 0.01 * f + 0.003 * s for s in (0, 1) for f in range(3)}
    rows = [{**base, "trial_id": f"cal{calibration}", "model": "ensemble_selection",
             "seed": s, "fold": f, "accuracy": a}
            for calibration in ("none", "temperature") for (s, f), a in scores.items()]
    table = comparison_table(rows, "accuracy", ["model_params", "n_members", "epsilon"])
    assert table.loc["ensemble_selection", "folds"] == len(scores)
    values = np.array(list(scores.values()))
    np.testing.assert_allclose(table.loc["ensemble_selection", "accuracy_mean"], values.mean())
    np.testing.assert_allclose(table.loc["ensemble_selection", "accuracy_std"], values.std(ddof=1))
