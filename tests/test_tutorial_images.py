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
    assert_the_held_out_accuracy_is_the_export_s_beside_the_majority_class(exported, loaded)
    predicted = re.search(r"predicted: (.*)", loaded).group(1).split()
    labelled = re.search(r"labelled: (.*)", loaded).group(1).split()
    assert len(predicted) == 6 and set(predicted) <= {"discs", "squares", "stripes"}
    assert sorted(labelled) == sorted(["discs", "squares", "stripes"] * 2)    # a mixed sample
    served = LOAD_FROM_MLFLOW.format(uri=re.search(r"models:/m-\w+", exported).group(0),
                                     images=work / "shapes")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    answer = subprocess.run([sys.executable, "-c", served], cwd=elsewhere, text=True,
                            capture_output=True, timeout=300,
                            env={**env, "MLFLOW_TRACKING_URI": f"sqlite:///{work}/models.db"})
    assert answer.returncode == 0, answer.stderr[-3000:]
    assert answer.stdout.split() == predicted


def assert_the_held_out_accuracy_is_the_export_s_beside_the_majority_class(exported: str,
                                                                           loaded: str) -> None:
    """The tutorial's accuracy on the held-out images is the one the export checked against the
    record, and both set it beside answering the majority class (1/3: balanced classes). The
    tutorial once printed six images, all discs, six of six right, of a model that answered
    discs for 116 of 120."""
    accuracy, majority = map(float, re.search(
        r"held-out rows: accuracy ([\d.]+) .*; always answering the majority class: accuracy "
        r"([\d.]+)",
        exported).groups())
    said = re.search(r"held-out accuracy ([\d.]+) on (\d+) images; always answering the "
                     r"majority class: ([\d.]+)", loaded)
    assert said, loaded
    assert float(said.group(1)) == pytest.approx(accuracy, abs=5e-4)
    assert float(said.group(3)) == pytest.approx(majority, abs=5e-4) == pytest.approx(1 / 3, abs=0.01)


# What `mlflow models serve` does with the logged model, in a folder that has no mynets.py: the
# tutorial's sample of the held-out images.
LOAD_FROM_MLFLOW = """
import mlflow
import numpy as np
from sbfn_dist.data.images import holdout_splits, load_images
model = mlflow.pyfunc.load_model("{uri}")
images = load_images("folder:{images}", image_size=16)
held_out = holdout_splits(images, n_splits=1)[0].test
labels = np.asarray(images.classes)[images.y[held_out]]
sample = np.concatenate([np.flatnonzero(labels == c)[:2] for c in images.classes])
print(*model.predict(images.x[held_out][sample])["label"])
"""
