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
from sbfn_dist.errors import SbfnError
from sweeps.engine.common.store import ResultStore
from tests.sweep_helpers import ONE_AT_A_TIME, a_ray, assert_each_fold_once, results, run_tiny

SMALL = ("--members", "2", "--competitors", "none", "--no-mlflow", *ONE_AT_A_TIME)
NOTES = pd.DataFrame({"note": ["my notes"], "fold": [9]})


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A finished tiny sweep whose part of one fold and results.parquet were deleted, a table
    of notes put in its parts/, and another part rewritten as a version before issue 46 wrote
    it (no ensemble_selection), then resumed: (root, its configurations, the deleted part, what
    the resume printed)."""
    storage = tmp_path_factory.mktemp("lost")
    with a_ray():
        root = Path(run_tiny(storage, *SMALL, name="lost").root)
        keys = set(results(root)["trial_id"])
        [lost] = (root / "parts").glob("M2_eps0_s0_*-f1.parquet")
        lost.unlink()
        (root / "results.parquet").unlink()
        NOTES.to_parquet(root / "parts" / "zz-notes.parquet")
        [earlier] = (root / "parts").glob("M2_eps0.35_s0_*-f2.parquet")
        part = pd.read_parquet(earlier)
        assert "ensemble_selection" in set(part["model"])
        part[part["model"] != "ensemble_selection"].to_parquet(earlier)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            run_tiny(storage, *SMALL, "--resume", "--dry-run", name="lost")
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


def test_a_fold_an_earlier_version_computed_without_a_model_is_computed_again(resumed):
    """An earlier version's fold, short of a model this one writes (the practitioners'
    combiners, added to every trial's defaults under the same trial ids), was read back as
    done: the end table set configurations with ensemble_selection beside one without it."""
    root, keys, _, out = resumed
    [earlier] = (root / "parts").glob("M2_eps0.35_s0_*-f2.parquet")
    key = earlier.name.removesuffix("-f2.parquet")
    assert ("[lost] 1 finished fold of 1 configuration lacks ensemble_selection, which this "
            "version writes (an earlier version computed them): they are computed again; their "
            f"earlier records are in {root}/superseded/parts/") in out, out
    assert ("  --resume: 1 finished fold of 1 configuration lacks ensemble_selection, which "
            "this version writes (an earlier version computed them): the run sets them aside "
            "(superseded/) and computes them again") in out       # the dry run before
    aside = pd.read_parquet(root / "superseded" / "parts" / earlier.name)
    assert "ensemble_selection" not in set(aside["model"]) and set(aside["trial_id"]) == {key}
    table = results(root)
    assert_each_fold_once(table, keys, range(3))
    chosen = table[table["model"] == "ensemble_selection"]
    assert len(chosen) == 3 * len(set(table.loc[table["n_members"] > 1, "trial_id"]))


def test_a_file_in_parts_that_no_trial_wrote_is_left_out_in_one_line(resumed):
    root, keys, _, out = resumed
    assert "[lost] parts/ holds 1 file no trial wrote (zz-notes.parquet; a trial's part is " \
           "<trial>-f<fold>.parquet): left out of results.parquet" in out, out
    assert "note" not in results(root) and set(results(root)["trial_id"]) == keys
    store = ResultStore(str(root))
    assert store.strays() == ["zz-notes.parquet"] and "note" not in store.read_parts()
    (root / "results.parquet").unlink()           # the report reads parts/ alone then
    assert "note" not in read_table(find_source(str(root)))


def test_a_sampled_search_with_an_earlier_version_s_fold_is_refused_in_one_line(tmp_path):
    """A draw cannot be run again: its fold short of a model is refused, not kept."""
    from sweeps.api import Sweep
    from sweeps.engine.results.outdated import outdated_on_resume
    sweep = Sweep.from_dict({"dataset": "diabetes", "folds": 2, "search": "random",
                             "num_samples": 2, "storage": str(tmp_path), "name": "drawn",
                             "axes": {"epsilon": "uniform(0, 1)"}, "mlflow": False})
    configs = sweep.trials()
    store = ResultStore(str(tmp_path / "drawn"))
    store.create()
    store.write_spec({"name": "drawn"})
    store.write_part("drawn_1a2b3c4d", 0, [{"model": "sbfn_ls", "fold": 0}])
    options = sweep.options.__class__(**{**vars(sweep.options), "resume": True})
    with pytest.raises(SbfnError, match=r"^--resume: 1 finished fold of 1 configuration lacks "
                       r"arithmetic, .*a sampled search cannot run a finished draw again: pass "
                       r"--name for a new sweep$"):
        outdated_on_resume(store, options, configs)
