"""What a --resume trusts is the parts on disk, not Tune's saved state (issue 48, items 3 and
9): a part deleted after its trial finished was never computed again, yet the resume said
every fold was done, and the end table ranked a configuration short of a fold; a file in
parts/ that no trial wrote was merged into results.parquet without a word."""

import contextlib
import io
from pathlib import Path

import pandas as pd
import pytest

from analysis.collect import find_source, read_table
from sweeps.engine.common.store import ResultStore
from tests.sweep_helpers import ONE_AT_A_TIME, a_ray, assert_each_fold_once, results, run_tiny

SMALL = ("--members", "2", "--competitors", "none", "--no-mlflow", *ONE_AT_A_TIME)
NOTES = pd.DataFrame({"note": ["my notes"], "fold": [9]})


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A finished tiny sweep whose part of one fold and results.parquet were deleted, and a
    table of notes put in its parts/, then resumed: (root, its configurations, the deleted
    part, what the resume printed)."""
    storage = tmp_path_factory.mktemp("lost")
    with a_ray():
        root = Path(run_tiny(storage, *SMALL, name="lost").root)
        keys = set(results(root)["trial_id"])
        [lost] = (root / "parts").glob("M2_eps0_s0_*-f1.parquet")
        lost.unlink()
        (root / "results.parquet").unlink()
        NOTES.to_parquet(root / "parts" / "zz-notes.parquet")
        with contextlib.redirect_stdout(io.StringIO()) as out:
            run_tiny(storage, *SMALL, "--resume", name="lost")
    return root, keys, lost, out.getvalue()


def test_a_deleted_part_is_computed_again_and_counted_as_stored(resumed):
    root, keys, lost, out = resumed
    key = lost.name.removesuffix("-f1.parquet")
    assert f"parts/ lacks 1 fold of {key} that Tune's saved state has done" in out, out
    assert lost.exists()
    assert_each_fold_once(results(root), keys, range(3))
    progress = [line for line in out.splitlines() if "| folds " in line]
    assert f"configurations {len(keys)}/{len(keys)} done" in progress[-1], progress
    assert f"folds {3 * len(keys)}/{3 * len(keys)}" in progress[-1], progress
    assert "fewer folds than planned" not in out


def test_a_file_in_parts_that_no_trial_wrote_is_left_out_in_one_line(resumed):
    root, keys, _, out = resumed
    assert "[lost] parts/ holds 1 file no trial wrote (zz-notes.parquet; a trial's part is " \
           "<trial>-f<fold>.parquet): left out of results.parquet" in out, out
    assert "note" not in results(root) and set(results(root)["trial_id"]) == keys
    store = ResultStore(str(root))
    assert store.strays() == ["zz-notes.parquet"] and "note" not in store.read_parts()
    (root / "results.parquet").unlink()           # the report reads parts/ alone then
    assert "note" not in read_table(find_source(str(root)))
