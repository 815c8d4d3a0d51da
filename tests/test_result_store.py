"""A sweep's results directory read back whole: results.parquet is the driver's merge of parts/,
made once as a run ends; a part written after it (seen on an H200: a trial finishing its fold one
second after an interrupted run merged) must not be left out by the sweeps' readers
(ResultStore.read_records: export, SweepResult) nor by the report's (analysis.collect)."""

import os

import pandas as pd

from analysis.collect import find_source, read_table
from sweeps.engine.common.store import RESULTS_FILE, ResultStore


def part(trial: str, accuracy: float) -> list:
    return [{"trial_id": trial, "fold": 0, "model": "sbfn", "status": "ok", "accuracy": accuracy}]


def merged_store(tmp_path) -> ResultStore:
    store = ResultStore(str(tmp_path / "sweep"))
    store.create()
    store.write_part("a", 0, part("a", 0.5))
    store.consolidate()
    return store


def both_readers(store: ResultStore) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    source = find_source(store.root)
    return store.read_records(), read_table(source), source.files


def accuracies(table: pd.DataFrame) -> dict:
    return dict(zip(table["trial_id"], table["accuracy"]))


def test_a_current_merge_is_read_alone(tmp_path):
    store = merged_store(tmp_path)
    records, report, files = both_readers(store)
    assert files == [f"{store.root}/{RESULTS_FILE}"]
    assert accuracies(records) == accuracies(report) == {"a": 0.5}


def test_a_part_written_after_the_merge_is_read_with_the_others(tmp_path):
    store = merged_store(tmp_path)
    store.write_part("b", 0, part("b", 0.75))
    records, report, files = both_readers(store)
    assert RESULTS_FILE not in " ".join(files)
    assert accuracies(records) == accuracies(report) == {"a": 0.5, "b": 0.75}


def test_a_part_rewritten_after_the_merge_replaces_the_merged_row(tmp_path):
    store = merged_store(tmp_path)
    store.write_part("a", 0, part("a", 0.9))
    merged = os.stat(f"{store.root}/{RESULTS_FILE}").st_mtime
    os.utime(store.part_path("a", 0), (merged + 5, merged + 5))   # whatever the clock's grain
    records, report, _ = both_readers(store)
    assert accuracies(records) == accuracies(report) == {"a": 0.9}


def test_a_merge_written_before_it_listed_its_parts_is_judged_by_its_time(tmp_path):
    store = merged_store(tmp_path)
    store.read_parts().to_parquet(f"{store.root}/{RESULTS_FILE}", index=False)  # no list
    merged = os.stat(f"{store.root}/{RESULTS_FILE}").st_mtime
    os.utime(store.part_path("a", 0), (merged - 5, merged - 5))
    assert both_readers(store)[2] == [f"{store.root}/{RESULTS_FILE}"]
    os.utime(store.part_path("a", 0), (merged + 5, merged + 5))
    assert RESULTS_FILE not in " ".join(both_readers(store)[2])


def test_a_directory_another_machine_does_not_see_is_refused_naming_the_fix(tmp_path):
    """ResultStore.check_shared: a marker in the directory, looked for from every other node
    (on real separate hosts: tests/test_cluster_hosts.py, scenario e)."""
    import pytest

    from sweeps.engine.common.store import StorageError
    store = ResultStore(str(tmp_path / "sweep"))
    store.create()
    looked: list = []

    def nodes_see(path: str) -> dict:
        looked.append((path, os.path.exists(path)))
        return {"198.18.0.4": True, "198.18.0.3": False}

    with pytest.raises(StorageError, match=r"is not shared: the cluster's machines 198\.18\.0\.3 "
                                           r"do not see it .*mounts at the same path .*s3://"):
        store.check_shared(nodes_see)
    (marker, existed), = looked
    assert existed and marker.startswith(store.root) and not os.path.exists(marker)
    store.check_shared(lambda path: {"198.18.0.3": True})       # every machine sees it
    store.check_shared(lambda path: {})                         # a cluster of one machine
