"""Results directories -> one tidy table, with what is missing and what went wrong kept visible.

A sweep's directory holds `results.parquet`: one file, or a directory of part files (one per
finished trial), and optionally `sweep.json` with the grid and `n_trials_expected`. Rows are
`sbfn_dist.experiment.run_trial` records (built by `sbfn_dist.records`, whose registry names
every column) with the sweep columns `sweep` and `trial_id` filled in by the sweeps runner.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sbfn_dist.records import COLUMNS, REFERENCE_MODEL, STATUSES, TASKS, metric_of

RESULTS_FILE = "results.parquet"
SWEEP_FILE = "sweep.json"
# column -> what writes it, for the error message when it is missing
REQUIRED = {"dataset": "run_trial", "task": "run_trial", "model": "run_trial",
            "fold": "run_trial", "seed": "run_trial", "status": "run_trial"}
PRODUCER = {"run_trial": "sbfn_dist.experiment.run_trial (docs/results-table.md)"}


class ResultsError(ValueError):
    """A results path that cannot be read as a results table; the message says how to fix it."""


@dataclass
class SweepInfo:
    name: str
    path: str
    n_rows: int
    n_trials: int
    n_trials_expected: int | None = None
    status_counts: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def n_missing(self) -> int | None:
        if self.n_trials_expected is None:
            return None
        return max(self.n_trials_expected - self.n_trials, 0)


@dataclass
class Results:
    table: pd.DataFrame            # every row, whatever its status
    sweeps: list

    @property
    def ok(self) -> pd.DataFrame:
        return self.table[self.table["status"] == "ok"]

    @property
    def not_ok(self) -> pd.DataFrame:
        return self.table[self.table["status"] != "ok"]

    def task(self, task: str) -> pd.DataFrame:
        return self.table[self.table["task"] == task]


def results_path(path: Path) -> Path:
    """The parquet file or part directory behind a sweep directory or a direct parquet path."""
    if not path.exists():
        raise ResultsError(f"{path} does not exist: pass a sweep's results directory "
                           f"(results/<sweep>) or a {RESULTS_FILE} path")
    if path.is_dir() and (path / RESULTS_FILE).exists():
        return path / RESULTS_FILE
    if path.is_file() or any(path.glob("*.parquet")):
        return path
    raise ResultsError(f"{path} holds no {RESULTS_FILE} (found: {_listing(path)}); pass a sweep's "
                       f"results directory, written by the sweeps runner, or a parquet file")


def _listing(path: Path) -> str:
    names = sorted(p.name for p in path.iterdir())[:8]
    return ", ".join(names) if names else "nothing, the directory is empty"


def read_table(path: Path) -> pd.DataFrame:
    try:
        table = pd.read_parquet(path)
    except Exception as exc:       # pyarrow raises several types; the message is what matters
        raise ResultsError(f"{path} is not a readable parquet table ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0][:200]})") from None
    if table.empty:
        raise ResultsError(f"{path} has no rows: no trial of the sweep has finished yet")
    return table


def check_columns(table: pd.DataFrame, where: Path) -> None:
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


def load_sweep(path) -> tuple[pd.DataFrame, SweepInfo]:
    path = Path(path)
    source = results_path(path)
    table = read_table(source)
    check_columns(table, source)
    home = source.parent if source.name == RESULTS_FILE or source.is_file() else source
    meta = _sweep_meta(home)
    name = meta.get("name") or _own_name(table) or (home.name if source.name == RESULTS_FILE
                                                     else source.stem)
    table = normalise(table, name)
    info = SweepInfo(name=name, path=str(path), n_rows=len(table),
                     n_trials=table["trial_id"].nunique(),
                     n_trials_expected=meta.get("n_trials_expected"),
                     status_counts=table["status"].value_counts().to_dict(), meta=meta)
    return table, info


def _own_name(table: pd.DataFrame) -> str:
    """The sweep name the rows carry, when they all carry the same one."""
    names = set(table["sweep"].dropna()) - {""} if "sweep" in table else set()
    return names.pop() if len(names) == 1 else ""


def _sweep_meta(home: Path) -> dict:
    meta_file = home / SWEEP_FILE
    if not meta_file.exists():
        return {}
    try:
        return json.loads(meta_file.read_text())
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{meta_file} is not valid JSON ({exc}); fix or delete it") from None


def load_results(paths) -> Results:
    """One Results over one or more sweeps (e.g. the three image data sets side by side)."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not paths:
        raise ResultsError("no results path given: pass at least one results/<sweep> directory")
    tables, infos = [], []
    for p in paths:
        table, info = load_sweep(p)
        tables.append(table)
        infos.append(info)
    return Results(pd.concat(tables, ignore_index=True), infos)
