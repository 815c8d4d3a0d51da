"""docs/tutorial-your-images.md runs as written (issue 23): its fenced bash blocks, in order, each
in a bash of its own (`-e`: a failing line fails the block), in an empty folder, with this
environment's python first on PATH and no PYTHONPATH (the tutorial says its network module is
imported from the current folder, by the driver and the Ray workers alike). Each block exits
0, the sweep records the ensembles the tutorial names, the report is written, and the winner is
exported as the sweep kept it (no refit), logged to MLflow and loaded back -- from another
folder, where only the MLflow model's own copy of the network can be imported."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.tutorials import bash_blocks, run_blocks, tutorial_env

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial-your-images.md"
SWEEP = Path("results", "shapes")       # the tutorial's --name, under the default --storage

pytestmark = pytest.mark.timeout(600)


def test_the_blocks_are_found_as_a_reader_sees_them():
    """The extraction, on a text of known blocks: other languages' blocks are not commands."""
    text = ("a\n```bash\necho 1\necho 2\n```\n```python\nx = 1\n```\n"
            "```bash\ncat <<'EOF'\nb\nEOF\n```\n")
    assert bash_blocks(text) == ["echo 1\necho 2\n", "cat <<'EOF'\nb\nEOF\n"]


def test_the_tutorial_runs_as_written_and_writes_the_report(tmp_path):
    work = tmp_path / "mine"
    work.mkdir()
    blocks = bash_blocks(TUTORIAL.read_text())
    assert len(blocks) == 6      # the images, the network, the sweep, the report, the export
    env = tutorial_env(tmp_path)
    outputs = run_blocks(blocks, work, env, tmp_path, timeout=400)
    table = pd.read_parquet(work / SWEEP / "results.parquet")
    assert (table["status"] == "ok").all()
    assert set(table["dataset"]) == {f"folder:{work / 'shapes'}"}
    assert set(table["ensemble"]) == {"simple_cnn,mynets:build", "mynets:build"}
    assert set(table["n_members"]) == {2, 3} and set(table["epsilon"]) == {0.0, 0.5}
    report = (work / SWEEP / "report" / "report.md").read_text()
    assert "Het. simple_cnn + mynets:build" in report and "Homo. mynets:build" in report
    exported, loaded = outputs[4], outputs[5]
    assert "kept from the sweep (no refit)" in exported and "trust_plugins=True" in exported
    predicted = re.search(r"predicted: (.*)", loaded).group(1).split()
    assert len(predicted) == 6 and set(predicted) <= {"discs", "squares", "stripes"}
    served = LOAD_FROM_MLFLOW.format(uri=re.search(r"models:/m-\w+", exported).group(0),
                                     images=work / "shapes")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    answer = subprocess.run([sys.executable, "-c", served], cwd=elsewhere, text=True,
                            capture_output=True, timeout=300,
                            env={**env, "MLFLOW_TRACKING_URI": f"sqlite:///{work}/models.db"})
    assert answer.returncode == 0, answer.stderr[-3000:]
    assert answer.stdout.split() == predicted


# What `mlflow models serve` does with the logged model, in a folder that has no mynets.py.
LOAD_FROM_MLFLOW = """
import mlflow
from sbfn_dist.data.images import load_images
model = mlflow.pyfunc.load_model("{uri}")
print(*model.predict(load_images("folder:{images}", image_size=16).x[:6])["label"])
"""
