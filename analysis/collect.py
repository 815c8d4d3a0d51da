"""Results directories -> one tidy table, with what is missing and what went wrong kept visible.

A sweep's directory (a local path or a URI such as the sweeps' --storage takes: s3://, gs://,
file://) holds `results.parquet`: one file, or a directory of part files (one per finished
trial); or, before the driver first merged them, only `parts/`; and optionally `sweep.json`
with the grid and `n_trials_expected`. Rows are `sbfn_dist.experiment.run_trial` records (built
by `sbfn_dist.records`, whose registry names every column) with the sweep columns `sweep`
and `trial_id` filled in by the sweeps runner.
"""

import json
import math
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.fs as pafs

from sbfn_dist.catalog import prefix_of
from sbfn_dist.records import COLUMNS, REFERENCE_MODEL, STATUSES, TASKS, metric_of
from sbfn_dist.results_dir import (PART_NAME, PARTS_DIR, RESULTS_FILE, SWEEP_FILE,  # noqa: F401
                                   ResultsError, merge_is_current, parse_json, read_parquet)

# column -> what writes it, for the error message when it is missing
REQUIRED = {"dataset": "run_trial", "task": "run_trial", "model": "run_trial",
            "fold": "run_trial", "seed": "run_trial", "status": "run_trial"}
PRODUCER = {"run_trial": "sbfn_dist.experiment.run_trial (docs/results-table.md)"}


@dataclass
class SweepInfo:
    name: str
    path: str                      # as given, or as published_location shows it
    n_rows: int
    n_trials: int
    n_trials_expected: int | None = None
    status_counts: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def n_missing(self) -> int | None:
        """Configurations planned without results. A sampled search's draws repeat points of a
        small space, one configuration each: it plans at most its space's points (n_points)."""
        if self.n_trials_expected is None:
            return None
        planned = min(self.n_trials_expected, self.meta.get("n_points") or math.inf)
        return max(planned - self.n_trials, 0)

    @property
    def partial(self) -> str:
        """What a partial sweep (fewer trials with results than its sweep.json planned: killed,
        interrupted, failed) lacks, in words; "" for a whole one or an unknown plan. The
        report's line, and the export's (sweeps/engine/model_export.py)."""
        missing = self.n_missing
        if not missing:
            return ""
        return (f"Partial sweep '{self.name}': {self.n_trials} of {self.n_trials + missing} "
                f"trials have results; {missing} are missing (not finished, or never started)")


def sweep_info(name: str, path: str, table: pd.DataFrame, meta: dict) -> SweepInfo:
    """What the report (and the export) say about a sweep: its records and its sweep.json."""
    return SweepInfo(name=name, path=path, n_rows=len(table), n_trials=table["trial_id"].nunique(),
                     n_trials_expected=meta.get("n_trials_expected"),
                     status_counts=table["status"].value_counts().to_dict(), meta=meta)


@dataclass(frozen=True)
class Searched:
    """What the sweeps' sweep.json files say of their search, for the report: the settings
    drawn from a range (`ranges`: setting -> the range, e.g. "uniform(0, 1)") and the model each
    sweep ranked its configurations by (`objectives`: sweep -> model). Empty for sweeps that
    wrote neither (older ones, a bare results table)."""
    ranges: dict = field(default_factory=dict)
    objectives: dict = field(default_factory=dict)


@dataclass
class Results:
    table: pd.DataFrame            # every row, whatever its status
    sweeps: list
    # data set given as a path, by the name the report gives it -> where it was read (read_from)
    read_from: dict = field(default_factory=dict)

    @property
    def searched(self) -> Searched:
        return Searched({k: v for s in self.sweeps for k, v in s.meta.get("ranges", {}).items()},
                        {s.name: s.meta["objective"] for s in self.sweeps
                         if s.meta.get("objective")})

    @property
    def ok(self) -> pd.DataFrame:
        return self.table[self.table["status"] == "ok"]

    @property
    def not_ok(self) -> pd.DataFrame:
        return self.table[self.table["status"] != "ok"]

    def task(self, task: str) -> pd.DataFrame:
        return self.table[self.table["task"] == task]


@dataclass
class Source:
    """Where one sweep's rows are: the filesystem, the parquet files, the sweep's directory."""
    fs: pafs.FileSystem
    files: list
    home: str                      # the directory that may hold sweep.json
    name: str                      # the sweep's name when neither sweep.json nor the rows say


def open_location(given: str) -> tuple[pafs.FileSystem, str]:
    """A local path, or a URI as the sweeps' --storage takes it (s3://, gs://, file://, ...)."""
    try:                           # pyarrow reads an absolute path as a local one
        return pafs.FileSystem.from_uri(given if "://" in given else os.path.abspath(given))
    except (pa.ArrowInvalid, OSError) as exc:
        raise ResultsError(f"cannot open '{given}' ({exc}); pass a local path or a URI such as "
                           "s3://bucket/prefix/<sweep>") from None


def is_remote(given: str) -> bool:
    """A URI of another filesystem than this machine's (s3://, gs://, ...; not file://)."""
    return "://" in given and not given.startswith("file:")


def find_source(given: str) -> Source:
    """The parquet behind a sweep directory (results.parquet: a file or a directory of parts;
    else parts/, the trials' own files before the driver merged them) or a direct parquet path."""
    fs, path = open_location(given)
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.NotFound:
        raise ResultsError(f"{given} does not exist: pass a sweep's results directory "
                           f"(results/<sweep>, or the same URI as the sweep's --storage/<name>) "
                           f"or a {RESULTS_FILE} path")
    parent, stem = posixpath.split(path)
    if kind == pafs.FileType.File or stem == RESULTS_FILE:     # a table, not its sweep's directory
        name = posixpath.basename(parent) if stem == RESULTS_FILE else posixpath.splitext(stem)[0]
        return Source(fs, _parquet_files(fs, path), parent, name)
    merged, parts = f"{path}/{RESULTS_FILE}", f"{path}/{PARTS_DIR}"
    stale = (fs.get_file_info(merged).type != pafs.FileType.NotFound
             and not merge_is_current(fs, path))
    for where in ((parts,) if stale else (merged, path, parts)):
        files = _parquet_files(fs, where)
        if where == parts:      # a file no trial wrote there is no part (zz-notes.parquet)
            files = [f for f in files if PART_NAME.fullmatch(posixpath.basename(f))]
        if files:
            return Source(fs, files, path, stem)
    if fs.get_file_info(f"{path}/{SWEEP_FILE}").type == pafs.FileType.File:
        raise ResultsError(f"{given} is a sweep with no finished fold yet (it was interrupted "
                           "before one, or is starting): continue it with its command plus "
                           "--resume, then report it")
    raise ResultsError(f"{given} holds no {RESULTS_FILE} (found: {_listing(fs, path)}); pass "
                       "a sweep's results directory, written by the sweeps runner, or a parquet "
                       "file")


def sweep_directory(given: str) -> str:
    """The sweep a path names: a sweep's parts/ folder (part files there, or a sweep.json beside
    it) names its sweep, as a results.parquet path does (find_source), so that the sweep's
    sweep.json, name, location and default report directory are the sweep's, not parts/'s;
    any other path as given."""
    fs, path = open_location(given)
    parent, stem = posixpath.split(path)
    if stem != PARTS_DIR or fs.get_file_info(path).type != pafs.FileType.Directory:
        return given
    parts = [f for f in _parquet_files(fs, path) if PART_NAME.fullmatch(posixpath.basename(f))]
    if parts or fs.get_file_info(f"{parent}/{SWEEP_FILE}").type == pafs.FileType.File:
        return posixpath.dirname(given.rstrip("/")) or "."
    return given


def _parquet_files(fs: pafs.FileSystem, path: str) -> list:
    """A parquet file, or the parquet files directly inside a directory (sorted); [] if none."""
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File:
        return [path]
    listing = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(i.path for i in listing if i.is_file and i.path.endswith(".parquet"))


def _listing(fs: pafs.FileSystem, path: str) -> str:
    names = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(path)))[:8]
    return ", ".join(names) if names else "nothing, the directory is empty"


def read_table(source: Source) -> pd.DataFrame:
    """Every file of the source in one table (parts may differ in columns: rows hold only what
    their model used)."""
    frames = [read_parquet(source.fs, f).to_pandas() for f in source.files]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if table.empty:
        raise ResultsError(f"{source.home} has no rows: no trial of the sweep has finished yet")
    return table


def check_columns(table: pd.DataFrame, where: str) -> None:
    missing = [c for c in REQUIRED if c not in table.columns]
    if table.get("task") is not None:
        for task in table["task"].dropna().unique():
            if task in TASKS and metric_of(task) not in table.columns:
                missing.append(metric_of(task))
    if missing:
        raise ResultsError(f"{where} lacks the columns {missing}: they are written by "
                           f"{PRODUCER['run_trial']}; is this a results table of sbfn-dist?")


def _trial_key(table: pd.DataFrame) -> pd.Series:
    """A stable key per run_trial call where the writer left trial_id empty: its config + fold.

    Rows hold only the settings their own model used, so a combiner's setting (the s-BFN head's
    temperature) is missing from its siblings' rows; the key takes, per data set and family, the
    registered config columns every such row carries (for ensembles: the members' settings).
    """
    keys = pd.Series("", index=table.index, dtype=object)
    by = [table[c].fillna("") if c in table else pd.Series("", index=table.index)
          for c in ("dataset", "family")]
    for (_, family), rows in table.groupby(by, sort=False):
        shared = [c for c in rows.columns if _trial_column(c) and rows[c].notna().all()]
        hashed = pd.util.hash_pandas_object(rows[shared].assign(family=family), index=False)
        keys[rows.index] = hashed.map("{:016x}".format)
    return keys


def _trial_column(column: str) -> bool:
    """What a run_trial call and its fold are: the config columns and the fold (not the model)."""
    return column == "fold" or (column in COLUMNS and COLUMNS[column].kind == "config")


def normalise(table: pd.DataFrame, sweep_name: str) -> pd.DataFrame:
    """Fill the sweep columns, and give failed rows (which may lack them) a model and task."""
    table = table.copy()
    if "sweep" not in table.columns:
        table["sweep"] = ""
    table["sweep"] = table["sweep"].fillna("").replace("", sweep_name)
    if "trial_id" not in table.columns:
        table["trial_id"] = ""
    empty = table["trial_id"].fillna("") == ""
    if empty.any():
        table.loc[empty, "trial_id"] = _trial_key(table[empty])
    table["model"] = table["model"].fillna("(whole trial)")
    if "role" in table.columns:  # the sweeps' M = 1 reference is its own row, not an M setting
        table.loc[table["role"] == "reference", "model"] = REFERENCE_MODEL
    table["status"] = table["status"].fillna("failed")
    if "error" not in table.columns:
        table["error"] = ""
    unknown = sorted(set(table["status"]) - set(STATUSES))
    if unknown:
        raise ResultsError(f"unknown status values {unknown}; expected {STATUSES}")
    return table


def load_sweep(path, relative_to: Path | None = None,
               source: Source | None = None) -> tuple[pd.DataFrame, SweepInfo]:
    """One sweep's rows and what the report says about it; with `relative_to` (the report's
    directory) its location is shown as `published_location` gives it. `source`: the path's
    find_source, where the caller found it already."""
    given = str(path)
    source = source or find_source(given)
    table = read_table(source)
    check_columns(table, source.home)
    meta = _sweep_meta(source)
    name = meta.get("name") or _own_name(table) or source.name
    table = normalise(table, name)
    shown = published_location(given, relative_to) if relative_to is not None else given
    return table, sweep_info(name, shown, table, meta)


def published_location(given: str, report_dir: Path) -> str:
    """Where a sweep is, as a published report shows it (no path of the machine that ran it):
    a remote URI as given; a local path relative to the report's directory when both lie in
    one working tree (`working_tree`); else only the sweep directory's name, since a path
    climbing out of the tree (to /tmp, another user's home) means nothing on another machine."""
    if is_remote(given):
        return given
    local = os.path.abspath(open_location(given)[1])
    report = os.path.abspath(report_dir)
    tree = working_tree(report)
    if _under(local, tree) and _under(report, tree):
        return os.path.relpath(local, report)
    parent, stem = os.path.split(local)
    return os.path.basename(parent) if stem == RESULTS_FILE else stem


def working_tree(path: str) -> str:
    """The git work tree holding `path` (the nearest ancestor with a .git entry), else the
    working directory: what "the same repository" means for a report's links."""
    here = path
    while not os.path.isdir(here):                # the report's directory may not exist yet
        here = os.path.dirname(here)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        if os.path.dirname(here) == here:
            return os.getcwd()
        here = os.path.dirname(here)


def _under(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _own_name(table: pd.DataFrame) -> str:
    """The sweep name the rows carry, when they all carry the same one."""
    names = set(table["sweep"].dropna()) - {""} if "sweep" in table else set()
    return names.pop() if len(names) == 1 else ""


def _sweep_meta(source: Source) -> dict:
    meta_file = f"{source.home}/{SWEEP_FILE}"
    if source.fs.get_file_info(meta_file).type != pafs.FileType.File:
        return {}
    with source.fs.open_input_stream(meta_file) as f:
        data = f.read()
    try:
        return parse_json(data, meta_file)
    except ResultsError as exc:
        raise ResultsError(f"{exc}; fix or delete it") from None


def load_results(paths, relative_to: Path | None = None) -> Results:
    """One Results over one or more sweeps (e.g. the three image data sets side by side): local
    paths or URIs; `relative_to` as in `load_sweep`."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not paths:
        raise ResultsError("no results path given: pass at least one results/<sweep> directory")
    tables, infos, read = [], [], {}
    for p in map(sweep_directory, map(str, paths)):
        source = find_source(str(p))
        if source.home in read:     # its rows twice: the counts doubled, the means unchanged
            raise ResultsError(f"{p} is the sweep {read[source.home]} again: give each sweep once")
        read[source.home] = p
        table, info = load_sweep(p, relative_to, source)
        tables.append(table)
        infos.append(info)
    table = pd.concat(tables, ignore_index=True)
    names = place_names(table["dataset"].dropna().unique())
    table["dataset"] = table["dataset"].map(lambda d: names.get(d, d))
    table = _apart_by_target(table)
    _check_one_precision(table)
    return Results(table, infos, {name: read_from(path, relative_to)
                                  for path, name in names.items()})


def place_names(datasets) -> dict:
    """Data sets given as paths (csv:, npz:, folder:) -> the name a report gives them: the
    prefix and the file's or folder's name (folder:shapes), with as many folders above it as
    tell two apart (folder:a/shapes, folder:b/shapes). A report named them by the machine's
    absolute path, in headings and figure files (figures/accuracy_by_eps_folder_tmp_..._shapes.png)."""
    paths = {d: Path(d[len(prefix_of(d)):]).parts for d in datasets if prefix_of(d)}
    names, left = {}, dict(paths)
    for depth in range(1, max(map(len, paths.values()), default=0) + 1):
        tails = {d: prefix_of(d) + "/".join(parts[-depth:]) for d, parts in left.items()}
        told = [d for d, tail in tails.items() if list(tails.values()).count(tail) == 1]
        names.update({d: tails[d] for d in told})
        left = {d: parts for d, parts in left.items() if d not in told}
    return {**names, **{d: d for d in left}}      # two spellings of one place: as given


def read_from(dataset: str, report_dir: Path | None) -> str:
    """Where a data set given as a path was read, as a published report may say it: relative
    to the report where both lie in one working tree (working_tree), else not at all (a
    path of the machine that ran the sweep)."""
    local = os.path.abspath(os.path.expanduser(dataset[len(prefix_of(dataset)):]))
    report = os.path.abspath(report_dir if report_dir is not None else os.getcwd())
    tree = working_tree(report)
    if _under(local, tree) and _under(report, tree):
        return os.path.relpath(local, report)
    return ""


def _apart_by_target(table: pd.DataFrame) -> pd.DataFrame:
    """A data set swept for two targets (a CSV's columns y and c) is two data sets: named
    "csv:PATH (target y)" where its rows have more than one target, else the report would
    average their scores as one data set's."""
    if "target" not in table:
        return table
    targets = table.dropna(subset=["target"]).groupby("dataset")["target"].nunique()
    several = table["dataset"].isin(targets[targets > 1].index) & table["target"].notna()
    table = table.copy()
    table.loc[several, "dataset"] = (table.loc[several, "dataset"] + " (target "
                                     + table.loc[several, "target"].astype(str) + ")")
    return table


def _check_one_precision(table: pd.DataFrame) -> None:
    """The report averages a data set's rows over splits and repeats: rows of members trained in
    different precisions (an fp32 twin of a bf16 sweep) would be averaged as one setting."""
    if "precision" not in table:
        return
    for dataset, rows in table.dropna(subset=["precision"]).groupby("dataset"):
        used = rows.groupby("precision")["sweep"].unique()
        if len(used) > 1:
            where = "; ".join(f"{p}: {', '.join(map(str, s))}" for p, s in used.items())
            raise ResultsError(f"the {dataset} rows were trained in {len(used)} precisions "
                               f"({where}), which a report would average together; report "
                               "each precision's sweeps on their own")
