"""docs/tutorial-search-and-serve.md runs as written (issue 24): its bash blocks, in order, in an
empty folder (tests/tutorials.py), with PORT set to a free port. Optuna draws ε and the
learning rate from their ranges, the report draws the ε scatter, the exported model served over
HTTP answers what the model loaded in Python predicts, the server is stopped when its block
ends (whether it passes or fails), and both stackings are scored."""

import json
import math
import os
import re
import socket
from pathlib import Path

import pandas as pd
import pytest

from sbfn_dist.interfaces.estimators import SBFNRegressor
from tests.sweep_helpers import free_port
from tests.tutorials import bash_blocks, run_block, run_blocks, tutorial_env

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial-search-and-serve.md"
SWEEP = Path("results", "search")       # the tutorial's name:, under the default storage
# the file, the sweep, the report, the export, loading, serving, stacking
STEPS = 7

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """(the folder it ran in, each block's output, the server's port)."""
    tmp = tmp_path_factory.mktemp("tutorial")
    work = tmp / "mine"
    work.mkdir()
    blocks = bash_blocks(TUTORIAL.read_text())
    assert len(blocks) == STEPS
    port = free_port()
    outputs = run_blocks(blocks, work, tutorial_env(tmp, PORT=str(port)), tmp, timeout=300)
    return work, outputs, port


def test_optuna_drew_epsilon_and_lr_from_their_ranges(tutorial):
    work, _, _ = tutorial
    spec = json.loads((work / SWEEP / "sweep.json").read_text())
    assert spec["search"] == "optuna"
    assert spec["ranges"] == {"epsilon": "uniform(0, 1)", "lr": "loguniform(0.0001, 0.1)"}
    table = pd.read_parquet(work / SWEEP / "results.parquet")
    assert (table["status"] == "ok").all()
    drawn = table.groupby("trial_id")[["epsilon", "lr"]].first()
    assert len(drawn) == 4 and drawn["epsilon"].nunique() == 4     # drawn, not a grid's values
    assert drawn["epsilon"].between(0, 1).all() and drawn["lr"].between(1e-4, 1e-1).all()


def test_the_report_draws_the_epsilon_scatter(tutorial):
    work, _, _ = tutorial
    report = work / SWEEP / "report"
    assert "](figures/epsilon_scatter_diabetes.png)" in (report / "report.md").read_text()
    assert (report / "figures" / "epsilon_scatter_diabetes.png").stat().st_size > 0


def test_the_served_answer_is_what_the_loaded_model_predicts(tutorial):
    work, _, _ = tutorial
    request = json.loads((work / "request.json").read_text())["dataframe_split"]
    rows = pd.DataFrame(request["data"], columns=request["columns"])
    predicted = SBFNRegressor.load(work / "best-model").predict(rows)
    served = json.loads((work / "served.json").read_text())["predictions"]
    assert len(rows) == 5
    assert served == pytest.approx(list(predicted), rel=1e-12)   # JSON floats: repr's digits


def test_the_server_is_stopped_when_its_block_ends(tutorial):
    _, _, port = tutorial
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_both_stackings_are_scored(tutorial):
    _, outputs, _ = tutorial
    scores = re.findall(r"^(s-BFN stacking|StackingRegressor) +test RMSE ([\d.]+) +R\^2 (\S+)$",
                        outputs[-1], flags=re.M)
    assert [name for name, _, _ in scores] == ["s-BFN stacking", "StackingRegressor"]
    for _, rmse, r2 in scores:    # both better than predicting the mean: they learned something
        assert math.isfinite(float(rmse)) and float(r2) > 0


BACKGROUND = "sleep 300 &\necho $! > bg.pid\n"      # a server's stand-in, its pid kept


@pytest.mark.parametrize("block, timeout, code", [(BACKGROUND + "false\n", 60, 1),
                                                  (BACKGROUND + "wait\n", 2, None)],
                         ids=["a failing block", "a block out of time"])
def test_what_a_block_left_running_is_stopped(tmp_path, block, timeout, code):
    """The guarantee the serving block relies on when it fails before its own `kill`."""
    assert run_block(block, tmp_path, tutorial_env(tmp_path), tmp_path / "log", timeout) == code
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "bg.pid").read_text()), 0)
