"""docs/tutorial-your-images.md runs as written (issue 23): its fenced bash blocks, in order, each
in a bash of its own (`-e`: a failing line fails the block), in an empty folder, with this
environment's python first on PATH and no PYTHONPATH (the tutorial says its network module is
imported from the current folder, by the driver and the Ray workers alike). Each block exits
0, the sweep records the ensembles the tutorial names, and the report is written."""

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
    assert len(blocks) == 4      # the images, the network, the sweep, the report
    run_blocks(blocks, work, tutorial_env(tmp_path), tmp_path, timeout=400)
    table = pd.read_parquet(work / SWEEP / "results.parquet")
    assert (table["status"] == "ok").all()
    assert set(table["dataset"]) == {f"folder:{work / 'shapes'}"}
    assert set(table["ensemble"]) == {"simple_cnn,mynets:build", "mynets:build"}
    assert set(table["n_members"]) == {2, 3} and set(table["epsilon"]) == {0.0, 0.5}
    report = (work / SWEEP / "report" / "report.md").read_text()
    assert "Het. simple_cnn + mynets:build" in report and "Homo. mynets:build" in report
