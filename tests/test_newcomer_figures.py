"""The figures a newcomer squinted at (issue 48, "What the newcomer tripped on" 5): the s-BFN
objectives and the reference lines of the (M, ε) figure in strong colours, no "best tenth" band
of a single configuration, and a log axis whose labels do not overlap."""

import numpy as np
import pandas as pd
import pytest

from analysis import figures


def luminance(rgb) -> float:
    """Relative luminance of an sRGB colour, Rec. 709 weights (0 black, 1 white)."""
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]


# tab20's pale twins lie at 0.68-0.89; its strong colours at 0.30-0.70.
PALE = 0.72


@pytest.fixture
def drawn(monkeypatch):
    """The axes of each figure drawn, kept after it is saved."""
    axes = []
    save = figures._save
    monkeypatch.setattr(figures, "_save", lambda fig, path: axes.append(fig.axes[0]) or
                        save(fig, path))
    return axes


@pytest.mark.parametrize("model", ["sbfn_ls_linear", "sbfn_ls", "sbfn", "sbfn_stacked"])
def test_the_s_bfn_forms_are_drawn_in_strong_colours(model):
    """sbfn_ls_linear, the regression sweeps' objective, was tab20's pale blue."""
    assert luminance(figures.colour(model)) < PALE, figures.colour(model)


def m_eps_rows() -> pd.DataFrame:
    rows = [{"model": model, "n_members": m, "epsilon": e, "mean": 55.0 + k, "ci_low": 50.0 + k,
             "ci_high": 60.0 + k}
            for k, model in enumerate(("sbfn_ls", "sbfn_ls_linear", "g1"))
            for m in (2, 3) for e in (0.0, 0.35)]
    return pd.DataFrame(rows)


def test_the_reference_lines_are_drawn_no_paler_than_a_strong_colour(drawn, tmp_path):
    refs = pd.DataFrame([{"dataset": "d", "model": "svm_rbf", "mean": 57.0, "kind": "competitor"},
                         {"dataset": "d", "model": "single_network_M1", "mean": 70.0,
                          "kind": "single network"}])
    figures.by_m_eps(m_eps_rows(), "RMSE", tmp_path / "m.png", refs=refs)
    lines = [line for line in drawn[0].get_lines() if "best configuration" in line.get_label()]
    assert len(lines) == 2
    for line in lines:
        rgb = line.get_color()
        assert luminance(rgb) <= figures.LINE_LUMINANCE + 1e-9, (line.get_label(), rgb)


def points(values) -> pd.DataFrame:
    """One configuration per value of lr, scored so that the lowest lr is best."""
    values = np.asarray(values, dtype=float)
    return pd.DataFrame({"lr": values, "mean": 50 + 10 * np.argsort(np.argsort(values)),
                         "complete": True, "model": "sbfn_ls_linear", "dataset": "d"})


def bands(ax) -> list:
    """The shaded spans and band lines drawn across the axes (axvspan: a polygon; axvline)."""
    spans = [p for p in ax.patches if "best tenth" in p.get_label()]
    lines = [line for line in ax.get_lines() if "best tenth" in line.get_label()]
    return spans + lines


def test_four_draws_get_no_best_tenth_band_of_one_value(drawn, tmp_path):
    figures.score_against(points([2e-4, 1.5e-3, 9e-3, 0.06]), "lr", "regression", "lr", "RMSE",
                          tmp_path / "s.png", log=True)
    assert bands(drawn[0]) == []


def test_thirty_draws_shade_the_range_of_their_best_three(drawn, tmp_path):
    values = np.geomspace(1e-4, 1e-1, 30)
    figures.score_against(points(values), "lr", "regression", "lr", "RMSE", tmp_path / "s.png",
                          log=True)
    [band] = bands(drawn[0])
    assert band.get_label() == f"best tenth: η_θ in [{values[0]:.3g}, {values[2]:.3g}]"


# 4 draws from loguniform(1e-4, 1e-1) (seeded search): matplotlib's labels of 2, 3, 4, 6 x 1e-4
# and 2, 3, 4 x 1e-3 ran into each other; and other spans.
@pytest.mark.parametrize("values", [[1.3e-4, 1.5e-4, 2.39e-3, 3.85e-3], [2e-4, 1.5e-3, 9e-3, 0.06],
                                    [2.1e-3, 3.3e-3, 5.2e-3, 8.7e-3], [1.1e-4, 0.095]],
                         ids=["a decade and a half", "two decades", "within one", "ends"])
def test_the_log_axis_labels_do_not_overlap(drawn, tmp_path, values):
    """Each visible tick label's box, as rendered, clear of the next one's."""
    figures.score_against(points(values), "lr", "regression", "lr", "RMSE", tmp_path / "s.png",
                          log=True)
    ax = drawn[0]
    ax.figure.canvas.draw()
    low, high = ax.get_xlim()
    boxes = sorted((label.get_window_extent() for label in ax.get_xticklabels(minor=False)
                    + ax.get_xticklabels(minor=True)
                    if label.get_text() and low <= label.get_position()[0] <= high),
                   key=lambda b: b.x0)
    assert len(boxes) >= 2, [t.get_text() for t in ax.get_xticklabels()]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), \
        [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
