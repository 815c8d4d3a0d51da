"""The report's comparison with the paper's image tables: the transcription, and hand-computed
values on a small hand-made results table."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import paper_images as pi
from analysis.sections import image_tables
from analysis.stats import PairedTest

PAPER = Path(__file__).resolve().parents[2] / "shared" / "paper" / "sbfn-paper.tex"
NAMES = {"MNIST": "mnist", "FashionMNIST": "fashion_mnist", "F\\_MNIST": "fashion_mnist",
         "CIFAR-10": "cifar10", "Heterogeneous": "heterogeneous", "Homogeneous": "homogeneous",
         "Het.": "heterogeneous", "Homo.": "homogeneous", "Mixed": "mixed", "ResNet": "resnet",
         "CNN": "cnn"}


def paper_rows(label: str) -> list[list[str]]:
    """The data rows of the LaTeX table labelled `label`: its cells, stripped."""
    text = PAPER.read_text()
    body = text[text.index(f"\\label{{{label}}}"):]
    body = body[body.index("\\midrule") + len("\\midrule"):body.index("\\bottomrule")]
    return [[c.strip() for c in line.rstrip("\\ ").split("&")]
            for line in body.strip().splitlines() if "&" in line]


@pytest.mark.skipif(not PAPER.exists(), reason=f"the paper's source is not at {PAPER}")
def test_the_paper_numbers_are_transcribed_from_its_tables():
    overall = {(NAMES[d], NAMES[k]): tuple(map(float, v[:3]))
               for d, k, *v in paper_rows("tab:overall_all")}
    assert overall == pi.OVERALL
    best = {(NAMES[d], NAMES[k]): (NAMES[a], int(m), *map(float, v[:3]))
            for d, k, a, m, *v in paper_rows("tab:best_configs")}
    assert best == pi.BEST
    cells = {}
    for eps, d, het, homo in paper_rows("tab:sensitivity_eps_all"):
        cells[(NAMES[d], float(eps))] = (float(het), float(homo))
    assert cells == pi.SENSITIVITY
    # What COPIED says: the MNIST rows repeat the CIFAR-10 rows in every table.
    assert all(pi.OVERALL[("mnist", k)] == pi.OVERALL[("cifar10", k)] for k in pi.KINDS)
    assert all(pi.BEST[("mnist", k)] == pi.BEST[("cifar10", k)] for k in pi.KINDS)


# Accuracy of each (mix, model) on splits 0 and 1, Fashion-MNIST, M = 5, ε = 0.5.
ACC = {"mixed": {"sbfn": (0.70, 0.74), "sbfn_stacked": (0.80, 0.82), "moe": (0.66, 0.68),
                 "base_avg": (0.60, 0.62), "logit_mean": (0.78, 0.80)},
       "cnn": {"sbfn": (0.60, 0.64), "sbfn_stacked": (0.70, 0.72), "moe": (0.62, 0.60),
               "base_avg": (0.58, 0.56), "logit_mean": (0.70, 0.70)},
       "resnet": {"sbfn": (0.72, 0.76), "sbfn_stacked": (0.82, 0.80), "moe": (0.70, 0.74),
                  "base_avg": (0.64, 0.66), "logit_mean": (0.80, 0.80)}}


def rows(dataset="fashion_mnist", acc=ACC, epsilon=0.5):
    return pd.DataFrame([
        dict(dataset=dataset, task="classification", ensemble=mix, model=model, fold=fold,
             seed=0, epsilon=epsilon, n_members=5, n_train=3000, epochs=3, accuracy=a,
             status="ok", sweep="s", trial_id=f"{mix}-{fold}")
        for mix, models in acc.items() for model, values in models.items()
        for fold, a in enumerate(values)])


def cell(table, name, kind, quantity, setting=None):
    sel = table[(table["table"] == name) & (table["kind"] == kind) & (table["quantity"] == quantity)]
    if setting:
        sel = sel[sel["setting"] == setting]
    [row] = sel.to_dict("records")
    return row


def test_overall_rows_average_each_split_then_the_splits_pooling_the_homogeneous_mixes():
    table = pi.paper_comparison(rows())
    het = cell(table, "overall_all", "heterogeneous", "sRBF")
    assert het["ours"] == pytest.approx(72.0) and het["paper"] == 69.81
    assert het["ours_minus_paper"] == pytest.approx(72.0 - 69.81)
    assert het["ours_stacked"] == pytest.approx(81.0) and het["n_splits"] == 2
    assert het["ours_covers"] == "ε 0.5; M 5; 2 split(s); 3,000 images × 3 epochs"
    # homogeneous: split 0 (0.60 + 0.72) / 2 = 66, split 1 (0.64 + 0.76) / 2 = 70 -> 68 ± t·s/√2
    homo = cell(table, "overall_all", "homogeneous", "sRBF")
    assert homo["ours"] == pytest.approx(68.0)
    assert homo["half_width"] == pytest.approx(12.706 * np.std([66, 70], ddof=1) / np.sqrt(2),
                                               rel=1e-3)
    base = cell(table, "overall_all", "homogeneous", "Base")
    assert base["ours"] == pytest.approx(61.0) and base["paper"] == 53.02
    assert np.isnan(base["ours_stacked"])             # stacked sits beside sRBF only


def test_sensitivity_rows_answer_only_the_epsilons_the_runs_have():
    table = pi.paper_comparison(rows())
    sens = table[table["table"] == "sensitivity_eps_all"]
    assert set(sens["setting"]) == {"ε = 0.5"} and set(sens["quantity"]) == {"sRBF"}
    assert cell(table, "sensitivity_eps_all", "heterogeneous", "sRBF")["paper"] == 79.48
    assert cell(table, "sensitivity_eps_all", "homogeneous", "sRBF")["paper"] == 75.00


def test_best_rows_read_moe_and_base_at_our_best_sbfn_configuration_of_the_kind():
    table = pi.paper_comparison(rows())
    setting = "paper: Homo. CNN M = 10; ours: Homo. ResNet M = 5 ε = 0.5"
    assert cell(table, "best_configs", "homogeneous", "sRBF", setting)["ours"] == pytest.approx(74.0)
    assert cell(table, "best_configs", "homogeneous", "MoE", setting)["ours"] == pytest.approx(72.0)
    assert cell(table, "best_configs", "homogeneous", "Base", setting)["paper"] == 80.25


def test_the_papers_copied_mnist_rows_are_shown_but_not_compared():
    table = pi.paper_comparison(rows("mnist"))
    assert len(table) and table["ours_minus_paper"].isna().all()
    assert table["paper_note"].str.contains("CIFAR-10 row").all()
    assert pi.paper_comparison(rows("cifar10"))["ours_minus_paper"].notna().all()


def test_data_the_paper_has_no_rows_for_get_no_table():
    assert pi.paper_comparison(rows("digits")).empty
    names = [getattr(b, "name", None) for b in image_tables(rows("digits"), PairedTest("t"))]
    assert "paper_comparison" not in names
    names = [getattr(b, "name", None) for b in image_tables(rows(), PairedTest("t"))]
    assert "paper_comparison" in names
    view = pi.paper_view(pi.paper_comparison(rows()))
    assert re.fullmatch(r"\+2\.19", view.iloc[0]["ours − paper (pts)"])
