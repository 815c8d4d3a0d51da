"""A sweep's results directory on any pyarrow filesystem (local path, NFS, s3://...).

    <root>/sweep.json            what the sweep is (grid, trials, command) - checked on --resume
    <root>/parts/<key>-f<k>.parquet   one fold/split of one trial, written by the trial itself
    <root>/parts/<key>-failed.parquet a trial that failed after its retries (status "failed")
    <root>/results.parquet       every part in one table, merged by the driver when a run ends
                                 (finished, interrupted or failed); while a run goes on, parts/
                                 is the table (analysis.collect reads it)
    <root>/mlflow-unlogged.json  MLflow logging that did not reach the store
                                 (engine/tracking/mlflow_runs.py)
    <root>/tune/                 Ray Tune's experiment: its saved state, read back by --resume
    <root>/superseded/parts/     folds a --resume set aside: an earlier version computed them
                                 without a model this one writes (engine/results/outdated.py)

Parts are named by the trial's stable key and fold, so a rerun (retry, resume) overwrites
instead of duplicating, and a trial that finds its fold's part already there skips the work.
Each file is written under a temporary name and renamed, so a crash never leaves half a file,
nor a full disk (the temporary file goes; StorageError says so in one line). A file that
cannot be read back (a part cut by a copy, a damaged sweep.json) is named in one line with
its fix, in analysis.collect's words.
"""

import contextlib
import errno
import io
import json
import posixpath
import uuid

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

# The directory's names, and whether its merge is current, as its reader (the report) has them
from sbfn_dist.results_dir import (PART_NAME, PARTS_DIR, RESULTS_FILE,  # noqa: F401
                                   SWEEP_FILE as SPEC_FILE, ResultsError, merge_is_current,
                                   merged_parts_metadata, parse_json, read_parquet)
from sbfn_dist.errors import SbfnError

FULL = (errno.ENOSPC, errno.EDQUOT)     # no space left on the disk; the user's quota spent
TUNE_DIR = "tune"                       # Ray Tune's experiment (sweeps/engine/tune.py)
TUNE_STATE = "experiment_state-"        # its saved states, experiment_state-<time>.json
# Folds a resume set aside, kept as they were: an earlier version's, short of a model this one
# writes (sweeps/engine/results/outdated.py)
SUPERSEDED = f"superseded/{PARTS_DIR}"
# What to do about a part that cannot be read back (check_parts, the merge)
PART_FIX = ("it holds one fold's records, cut or damaged: put back a good copy, or move it "
            "aside (e.g. into a folder of its own) and continue with --resume, which computes "
            "that fold again")
SPEC_FIX = ("put back a good copy of it, or pass --name for a new sweep (this folder's parts/ "
            "keep the finished folds)")


class StorageError(SbfnError):
    pass


def open_filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """A local path (made absolute) or any URI pyarrow understands (s3://, gs://, hdfs://)."""
    if "://" not in uri:
        import os
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, OSError) as exc:
        raise StorageError(f"cannot open storage '{uri}': {exc}. Use a local directory or a "
                           "pyarrow URI such as s3://bucket/prefix") from None


class ResultStore:
    def __init__(self, uri: str):
        self.uri = uri
        self.fs, self.root = open_filesystem(uri)

    @property
    def location(self) -> str:
        """Where Ray and workers find the store: the URI, or the absolute local path."""
        return self.uri if "://" in self.uri else self.root

    # --- writing -----------------------------------------------------------------------
    def create(self) -> None:
        """Make the directory and prove it is writable before any trial starts."""
        try:
            self.fs.create_dir(f"{self.root}/{PARTS_DIR}", recursive=True)
            self._write_bytes(f"{self.root}/.write-test", b"ok")
            self.fs.delete_file(f"{self.root}/.write-test")
        except OSError as exc:
            raise StorageError(f"cannot write to the results storage '{self.uri}': {exc}. "
                               "Pass --storage a writable directory or URI") from None

    def check_shared(self, other_nodes_see) -> None:
        """A directory on a cluster of several machines must be one that every machine sees at
        the same path (a shared file system): each trial writes its parts from the node it runs
        on, and a node-local directory fails them there with a bare FileNotFoundError, or
        scatters the results over the machines. A marker written here must be seen by every
        other node (`other_nodes_see(path) -> {node: seen}`,
        sweeps.engine.run.resources.other_nodes_see); object stores (s3://) are shared by nature."""
        if not isinstance(self.fs, pafs.LocalFileSystem):
            return
        marker = f"{self.root}/.shared-check-{uuid.uuid4().hex[:8]}"
        self._write_bytes(marker, b"")
        try:
            blind = sorted(node for node, seen in other_nodes_see(marker).items() if not seen)
        finally:
            self.fs.delete_file(marker)
        if blind:
            raise StorageError(
                f"--storage {self.uri} is not shared: the cluster's machines {', '.join(blind)} do "
                "not see it (a directory of this machine only), so trials there could not write "
                "their results. Pass --storage a directory that every machine mounts at the same "
                "path (NFS; $SBFN_RESULTS on cluster-local.yaml), or s3://BUCKET/PREFIX")

    def write_part(self, key: str, fold, records: list[dict]) -> None:
        self._write_table(self.part_path(key, fold), pd.DataFrame(records))

    def write_failed(self, key: str, record: dict) -> None:
        self._write_table(self.part_path(key, "failed"), pd.DataFrame([record]))

    def clear_failed(self, key: str) -> None:
        path = self.part_path(key, "failed")
        if self._exists(path):
            self.fs.delete_file(path)

    def write_spec(self, spec: dict) -> None:
        self.write_json(SPEC_FILE, spec)

    def write_json(self, relative: str, value) -> None:
        self._write_bytes(f"{self.root}/{relative}", json.dumps(value, indent=1).encode())

    def delete(self, relative: str) -> None:
        if self.has(relative):
            self.fs.delete_file(f"{self.root}/{relative}")

    def consolidate(self) -> pd.DataFrame:
        """Rewrite results.parquet from every part, naming them in its metadata (a part written
        later makes it stale: sbfn_dist.results_dir.merge_is_current); returns the table. It reads
        every part: the driver calls it once per run, never per trial (docs/sweeps.md)."""
        paths = self._part_paths()
        table = self._read_tables(paths)
        if len(table):
            self._write_table(f"{self.root}/{RESULTS_FILE}", table, merged_parts_metadata(paths))
        return table

    # --- reading -----------------------------------------------------------------------
    def part_path(self, key: str, fold) -> str:
        suffix = "failed" if fold == "failed" else f"f{fold}"
        return f"{self.root}/{PARTS_DIR}/{key}-{suffix}.parquet"

    def has_part(self, key: str, fold) -> bool:
        return self._exists(self.part_path(key, fold))

    def read_part(self, key: str, fold) -> list[dict] | None:
        path = self.part_path(key, fold)
        if not self._exists(path):
            return None
        return self._read_part_table(path).to_pandas().to_dict("records")

    def part_models(self) -> dict[str, dict[int, set]]:
        """trial key -> fold -> the models whose records its part in parts/ holds (their model
        column alone is read)."""
        stored: dict = {}
        for key, fold, path in self._fold_parts():
            models = self._read_part_table(path, columns=["model"]).column("model")
            stored.setdefault(key, {})[fold] = set(models.to_pylist())
        return stored

    def set_aside(self, parts: list[tuple[str, int]]) -> None:
        """Move the parts of these (trial key, fold) pairs into <root>/superseded/parts/: out of
        the sweep (its table, a resume's read-back), kept as they were."""
        aside = f"{self.root}/{SUPERSEDED}"
        self.fs.create_dir(aside, recursive=True)
        for key, fold in parts:
            path = self.part_path(key, fold)
            self.fs.move(path, f"{aside}/{posixpath.basename(path)}")

    def check_parts(self) -> None:
        """Every part readable (its footer), for --resume before Ray starts: the merge at the
        end reads them all, and a 0-byte or cut one failed it with Arrow's traceback."""
        for path in self._part_paths():
            self._read_part_table(path, footer_only=True)

    def _read_part_table(self, path: str, footer_only: bool = False, columns=None):
        try:
            return read_parquet(self.fs, path, footer_only, columns)
        except ResultsError as exc:
            raise StorageError(f"{exc}: {PART_FIX}") from None

    def read_parts(self, key: str = "") -> pd.DataFrame:
        """Every part, or only those of one trial."""
        return self._read_tables(self._part_paths(key))

    def stored_folds(self, folder: str = PARTS_DIR) -> dict:
        """trial key -> the folds whose part is in parts/ now (one listing): what a resume
        trusts, whatever Tune's saved state says was done. (`folder`: the parts set aside
        there, SUPERSEDED.)"""
        stored: dict = {}
        for key, fold, _ in self._fold_parts(folder):
            stored.setdefault(key, set()).add(fold)
        return stored

    def _fold_parts(self, folder: str = PARTS_DIR):
        """(trial key, fold, path) of each fold's part in `folder` (a failed trial's is none)."""
        for path in self._part_paths(folder=folder):
            match = PART_NAME.fullmatch(posixpath.basename(path))
            if match and match["fold"] is not None:
                yield match["key"], int(match["fold"]), path

    def has_parts(self) -> bool:
        """Some fold's records were written (in parts/, or merged in results.parquet)."""
        return bool(self._part_paths()) or self.has(RESULTS_FILE)

    def strays(self) -> list[str]:
        """The names of the .parquet files in parts/ that no trial writes (zz-notes.parquet): a
        merge leaves them out (they were merged into results.parquet, without a word)."""
        return [name for name in self._parquet_names() if not PART_NAME.fullmatch(name)]

    def _parquet_names(self, folder: str = PARTS_DIR) -> list[str]:
        selector = pafs.FileSelector(f"{self.root}/{folder}", allow_not_found=True)
        return sorted(i.base_name for i in self.fs.get_file_info(selector)
                      if i.base_name.endswith(".parquet"))

    def _part_paths(self, key: str = "", folder: str = PARTS_DIR) -> list:
        return [f"{self.root}/{folder}/{name}" for name in self._parquet_names(folder)
                if PART_NAME.fullmatch(name) and name.startswith(f"{key}-" if key else "")]

    def _read_tables(self, paths: list) -> pd.DataFrame:
        tables = [self._read_part_table(p) for p in paths]
        if not tables:
            return pd.DataFrame()
        try:
            # One conversion to pandas, not one per part: those took 90% of merging 600 parts
            # (4.7 s against 1.6 s; parts hold only the columns their models use).
            return pa.concat_tables(tables, promote_options="permissive").to_pandas()
        except (pa.ArrowInvalid, pa.ArrowTypeError):     # types Arrow does not unify: pandas'
            return pd.concat([t.to_pandas() for t in tables], ignore_index=True)

    def read_records(self) -> pd.DataFrame:
        """The sweep's records: results.parquet, else (a run stopped before the driver merged
        them, or a part written after it did) every part; empty when there are none."""
        if merge_is_current(self.fs, self.root):      # False without a results.parquet
            return pq.read_table(f"{self.root}/{RESULTS_FILE}", filesystem=self.fs).to_pandas()
        return self.read_parts()

    def tune_state_problem(self) -> str | None:
        """Why Ray Tune cannot read back its newest saved state of the sweep (the one it
        restores), or None: cut by a full disk (Tune copies it into the results directory
        without a rename) or damaged. Tune itself logs a traceback and goes on with none of
        the sweep's trials, so that those unfinished were never run again."""
        selector = pafs.FileSelector(f"{self.root}/{TUNE_DIR}", allow_not_found=True)
        states = sorted(i.path for i in self.fs.get_file_info(selector)
                        if i.base_name.startswith(TUNE_STATE) and i.base_name.endswith(".json"))
        if not states:
            return None
        with self.fs.open_input_stream(states[-1]) as f:
            data = f.read()
        try:
            parse_json(data, states[-1])
        except ResultsError as exc:
            return str(exc)
        return None

    def read_spec(self) -> dict | None:
        return self.read_json(SPEC_FILE, SPEC_FIX)

    def require_spec(self) -> dict:
        """sweep.json, or StorageError where the directory holds no sweep (a mistyped path, a
        sweep's parent folder): the commands that read a finished sweep say so, not "nothing
        to do"."""
        spec = self.read_spec()
        if spec is None:
            raise StorageError(f"{self.root} holds no sweep (no {SPEC_FILE}): pass a sweep's "
                               "results directory, <storage>/<name> (e.g. results/demo-...)")
        return spec

    def read_json(self, relative: str, fix: str):
        """<root>/<relative> parsed, or None when there is no such file; StorageError naming
        it and `fix` (what to do, in the words of the file's reader) when it does not parse."""
        path = f"{self.root}/{relative}"
        if not self._exists(path):
            return None
        with self.fs.open_input_stream(path) as f:
            data = f.read()
        try:
            return parse_json(data, path)
        except ResultsError as exc:
            raise StorageError(f"{exc}: {fix}") from None

    def exists(self) -> bool:
        return self.has(SPEC_FILE)

    def has(self, relative: str) -> bool:
        """Whether <root>/<relative> (a file or a directory) exists."""
        return self._exists(f"{self.root}/{relative}")

    # --- plumbing ----------------------------------------------------------------------
    def _exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def _write_table(self, path: str, df: pd.DataFrame, metadata: dict | None = None) -> None:
        table = pa.Table.from_pandas(df, preserve_index=False)
        if metadata:
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
        buf = io.BytesIO()
        pq.write_table(table, buf)
        self._write_bytes(path, buf.getvalue())

    def _write_bytes(self, path: str, data: bytes) -> None:
        tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            with self.fs.open_output_stream(tmp) as f:
                f.write(data)
            self.fs.move(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                self.fs.delete_file(tmp)        # no half file left; `path` is as it was
            if exc.errno in FULL:
                raise self._full_disk(exc, path) from None
            raise

    def _full_disk(self, exc: OSError, path: str) -> StorageError:
        """A full disk (or quota) under the results directory, in one line: the trials' parts,
        Tune's state and the merge each met it, in five or six tracebacks."""
        return StorageError(
            f"no space left on the disk of the results storage '{self.uri}' ([Errno "
            f"{exc.errno}] writing {path.rpartition('/')[2]}): free space there, or pass "
            "--storage a disk with room; a sweep that started continues with its command plus "
            "--resume (every fold already written is kept)")
