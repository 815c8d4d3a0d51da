"""A sweep's results directory, as the sweeps runner writes it and the report reads it: the
names of its files, and reading them back in one line each (sweeps/engine/common/store.py
writes; analysis/collect.py reads; docs/design.md, "One sweep's results directory"). Below
both, so that the code that writes results does not depend on the report that reads them.
"""

import json
import posixpath
import re

import pyarrow.fs as pafs
import pyarrow.parquet as pq

RESULTS_FILE = "results.parquet"
PARTS_DIR = "parts"                # the sweeps runner's per-fold files (sweeps/engine/common/store.py)
# A part's name, as the runner makes it: <trial key>-f<fold>.parquet (one fold's records) or
# <trial key>-failed.parquet (a configuration that failed after its retries); a key may hold '-'.
PART_NAME = re.compile(r"(?P<key>.+)-(?:f(?P<fold>\d+)|failed)\.parquet")
MERGED_KEY = b"sbfn.merged_parts"  # results.parquet's metadata: the names of the parts it merged
SWEEP_FILE = "sweep.json"


class ResultsError(ValueError):
    """A results path that cannot be read as a results table; the message says how to fix it."""


def merged_parts_metadata(part_paths: list) -> dict:
    """The metadata results.parquet carries (merge_is_current reads it)."""
    return {MERGED_KEY: json.dumps(sorted(posixpath.basename(p) for p in part_paths)).encode()}


def merge_is_current(fs: pafs.FileSystem, home: str) -> bool:
    """Whether <home>/results.parquet holds every part now in <home>/parts/. The driver merges
    once, as a run ends; a trial still finishing its fold then (a run stopped by a signal: Tune
    returns before every worker has) writes its part after the merge. A part the merge did not
    list, or one written after it, makes the merge stale: the parts are the table then."""
    merged = fs.get_file_info(f"{home}/{RESULTS_FILE}")
    if merged.type != pafs.FileType.File:
        return merged.type == pafs.FileType.Directory    # a directory of part files: as it is
    selector = pafs.FileSelector(f"{home}/{PARTS_DIR}", allow_not_found=True)
    parts = [i for i in fs.get_file_info(selector)
             if i.is_file and PART_NAME.fullmatch(i.base_name)]
    if merged.mtime is not None and any(p.mtime and p.mtime > merged.mtime for p in parts):
        return False
    try:
        listed = (pq.read_schema(merged.path, filesystem=fs).metadata or {}).get(MERGED_KEY)
    except Exception:      # not parquet: reading it says so (read_parquet), not this check
        return True
    # A merge written before the list existed: its time alone tells
    return listed is None or {p.base_name for p in parts} <= set(json.loads(listed))


def read_parquet(fs: pafs.FileSystem, path: str, footer_only: bool = False, columns=None):
    """The parquet file at `path` (a pyarrow Table, of `columns` only if given; its metadata
    alone with `footer_only`: a 0-byte, cut or overwritten file has no footer), or ResultsError
    naming it in one line. The sweeps read their parts through this too
    (sweeps/engine/common/store.py)."""
    try:
        if footer_only:
            with fs.open_input_file(path) as f:
                return pq.read_metadata(f)
        return pq.read_table(path, filesystem=fs, columns=columns)
    except Exception as exc:       # pyarrow raises several types; the message is what matters
        raise ResultsError(f"{path} is not a readable parquet table ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200]})") from None


def parse_json(data: bytes, path: str):
    """A JSON file of a sweep's directory (sweep.json, ...) parsed, or ResultsError naming it:
    a copy or a full disk can cut one, an editor damage it."""
    try:
        return json.loads(data.decode())
    except ValueError as exc:       # JSONDecodeError, UnicodeDecodeError
        raise ResultsError(f"{path} is not valid JSON, cut or damaged ({exc})") from None
