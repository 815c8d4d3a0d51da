"""Files a sweep reads or writes that are cut, damaged, not text, read-only or on a full disk:
one line naming the file and the fix instead of a traceback, and nothing already stored lost
(issue 48, item 7)."""

import contextlib
import errno
import io
import json
import os
import sqlite3
import subprocess
import traceback
from pathlib import Path

import pandas as pd
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sweeps import __main__ as sweeps_main
from sweeps.regression import main as regression
from sweeps.relog import main as relog
from tests.sweep_helpers import ONE_AT_A_TIME, TINY, a_ray, assert_each_fold_once, results

SWEEP_FILE = "dataset: diabetes\ngrid: demo\nsmoke: true\nmlflow: false\n"


def one_error_line(out) -> str:
    assert "Traceback" not in out.err + out.out, out
    [line] = [line for line in out.err.splitlines() if line.startswith("error: ")]
    return line


# ------------------------------------------------------------------------ sweep files
@pytest.mark.parametrize("content, says", [
    (SWEEP_FILE.replace("smoke", "# café\nsmoke").encode("latin-1"),
     "not UTF-8 text (byte 0xe9 at offset 34: invalid continuation byte; latin-1 or another "
     "8-bit encoding?): save it as UTF-8"),
    (SWEEP_FILE.encode("utf-16-le"), "holds the character U+0000 at offset 1, which YAML does "
                                     "not allow (UTF-16 without its byte-order mark?): save it "
                                     "as UTF-8"),
], ids=["latin-1", "UTF-16 without its mark"])
def test_a_sweep_file_that_is_no_utf8_text_is_refused_in_one_line(content, says, tmp_path,
                                                                   capsys):
    path = tmp_path / "sweep.yaml"
    path.write_bytes(content)
    code = sweeps_main.main(["run", str(path), "--storage", str(tmp_path / "results")])
    assert code == 2
    line = one_error_line(capsys.readouterr())
    assert line == f"error: {path}: {says}", line
    assert not (tmp_path / "results").exists()


def test_a_utf16_sweep_file_with_its_byte_order_mark_is_read(tmp_path, capsys):
    """What a Windows editor's 'Unicode' writes, which YAML allows: planned as the UTF-8 one."""
    plans = []
    for name, encoding in (("utf8.yaml", "utf-8"), ("utf16.yaml", "utf-16")):
        (tmp_path / name).write_bytes(SWEEP_FILE.encode(encoding))
        assert sweeps_main.main(["run", str(tmp_path / name), "--dry-run"]) == 0
        plans.append(capsys.readouterr().out.replace(name[:-5], "FILE"))
    assert plans[0] == plans[1]


# ------------------------------------------------------------------------ a sweep's folder
NAME = "tiny"


def a_sweep(tmp_path) -> Path:
    """A sweep's results folder as --resume finds it (its sweep.json, a good part): the checks
    below come before anything compares the sweep with the command."""
    root = tmp_path / "results" / NAME
    (root / "parts").mkdir(parents=True)
    (root / "sweep.json").write_text(json.dumps({"name": NAME, "trial_ids": []}))
    pd.DataFrame({"fold": [0], "rmse": [1.0]}).to_parquet(root / "parts" / "M2_s0_1-f0.parquet")
    return root


def contents(root: Path) -> dict:
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def resume(root: Path, capsys, *extra) -> str:
    """--resume of the sweep at `root`: refused (exit 2) in one line, Ray never asked for."""
    code = regression([*TINY, "--storage", str(root.parent), "--name", NAME, "--resume",
                       *extra])
    assert code == 2
    return one_error_line(capsys.readouterr())


def parquet_bytes() -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame({"fold": [1] * 50, "rmse": [2.0] * 50}).to_parquet(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("content", [b"", parquet_bytes()[:300], b"PAR1" + b"x" * 200],
                         ids=["0 bytes", "cut", "overwritten"])
def test_a_part_that_cannot_be_read_back_stops_the_resume_in_one_line(content, tmp_path,
                                                                       capsys, ray_connects):
    """ArrowInvalid's traceback came after the trials, from the merge; the report's words."""
    root = a_sweep(tmp_path)
    part = root / "parts" / "M2_s0_1-f1.parquet"
    part.write_bytes(content)
    before = contents(root)
    line = resume(root, capsys)
    assert line.startswith(f"error: {part} is not a readable parquet table (ArrowInvalid: ")
    assert line.endswith("it holds one fold's records, cut or damaged: put back a good copy, "
                         "or move it aside (e.g. into a folder of its own) and continue with "
                         "--resume, which computes that fold again"), line
    assert not ray_connects and contents(root) == before


def test_a_cut_sweep_json_stops_the_resume_in_one_line(tmp_path, capsys, ray_connects):
    root = a_sweep(tmp_path)
    (root / "sweep.json").write_text('{"name": "tiny", "trial_ids": ["M2_')
    before = contents(root)
    line = resume(root, capsys)
    assert line.startswith(f"error: {root / 'sweep.json'} is not valid JSON, cut or damaged "
                           "(Unterminated string starting at: line 1"), line
    assert line.endswith(": put back a good copy of it, or pass --name for a new sweep (this "
                         "folder's parts/ keep the finished folds)"), line
    assert not ray_connects and contents(root) == before


def damaged_sqlite(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("create table runs (name text)")
        db.executemany("insert into runs values (?)", [("x" * 200,)] * 500)
    db.close()
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])


@pytest.mark.parametrize("damage, says", [
    (damaged_sqlite, "is a damaged SQLite database (database disk image is malformed)"),
    (lambda p: p.write_text("a,b\n1,2\n"), "is not an SQLite database (it begins b'a,b"),
], ids=["cut", "not SQLite"])
def test_a_damaged_mlflow_db_stops_the_resume_in_one_line(damage, says, tmp_path, capsys,
                                                          ray_connects):
    """A thread's traceback, then the logger's, once Ray ran; the store is left as it is."""
    root = a_sweep(tmp_path)
    damage(root / "mlflow.db")
    before = contents(root)
    line = resume(root, capsys)
    assert line.startswith(f"error: the sweep's MLflow store: {root / 'mlflow.db'} {says}"), line
    assert "Restore it from a copy, or move it aside" in line and "--no-mlflow" in line
    assert not ray_connects and contents(root) == before


def test_a_cut_unlogged_list_stops_relog_in_one_line(tmp_path, capsys):
    root = a_sweep(tmp_path)
    (root / "mlflow-unlogged.json").write_text('{"tracking_uri": "sqlite:///x.db", "ops": [{')
    before = contents(root)
    assert relog([str(root)]) == 2
    line = one_error_line(capsys.readouterr())
    assert line.startswith(f"error: {root / 'mlflow-unlogged.json'} is not valid JSON, cut or "
                           "damaged ("), line
    assert line.endswith("put back a good copy of it, or delete it: what it listed is then not "
                         "logged to MLflow (results.parquet keeps every record)"), line
    assert contents(root) == before


@contextlib.contextmanager
def read_only(folder: Path):
    """`folder` and what it holds read-only: by their permissions, or (for root, whom they do
    not stop) by a read-only bind mount over it; skipped where neither holds."""
    modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
    for path in modes:
        path.chmod(0o555 if path.is_dir() else 0o444)
    mounted = False
    try:
        if os.access(folder, os.W_OK):          # root
            done = subprocess.run(f"mount --bind {folder} {folder} && mount -o "
                                  f"remount,ro,bind {folder}", shell=True, capture_output=True)
            mounted = done.returncode == 0
            if not mounted:
                pytest.skip(f"permissions do not stop this user, nor can it mount: "
                            f"{done.stderr.decode().strip()}")
        yield
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        for path, mode in modes.items():
            path.chmod(mode)


def test_a_read_only_results_folder_is_refused_in_one_line(tmp_path, capsys, ray_connects):
    """sweep.lock's PermissionError (EROFS on a read-only mount) was a traceback. (An empty
    sweep.json: a resume of another command is refused before the claim, which says this.)"""
    root = a_sweep(tmp_path)
    (root / "sweep.json").write_text("{}")
    (root / "sweep.lock").touch()
    before = contents(root)
    with read_only(root):
        line = resume(root, capsys, "--no-mlflow")
    assert line.startswith(f"error: cannot write to the results storage '{root}': "), line
    assert line.endswith("Pass --storage a writable directory or URI"), line
    assert not ray_connects and contents(root) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens a read-only file to write anyway")
def test_a_read_only_lock_file_is_refused_in_one_line(tmp_path, capsys, ray_connects):
    root = a_sweep(tmp_path)
    (root / "sweep.json").write_text("{}")
    lock = root / "sweep.lock"
    lock.touch()
    lock.chmod(0o444)
    line = resume(root, capsys, "--no-mlflow")
    assert line == (f"error: cannot write the sweep's lock file {lock} (Permission denied): "
                    f"make it writable (chmod u+w {lock}), or delete it when no run of the "
                    "sweep is going on"), line
    assert not ray_connects


# ------------------------------------------------------------------------ a full disk
class FullDisk(pafs.LocalFileSystem):
    """The local filesystem, but a file written there meets ENOSPC after ROOM bytes, as on a
    full disk (what pyarrow's stream raises there: OSError, errno 28)."""
    ROOM = 10

    @contextlib.contextmanager
    def open_output_stream(self, path):
        with super().open_output_stream(path) as stream:
            class Stream:
                def write(_, data):
                    stream.write(data[:self.ROOM])
                    if len(data) > self.ROOM:
                        raise OSError(errno.ENOSPC, "No space left on device")
            yield Stream()


def test_a_full_disk_is_one_line_and_leaves_every_file_as_it_was(tmp_path):
    from sweeps.engine.common.store import ResultStore, StorageError
    store = ResultStore(str(tmp_path / "sweep"))
    store.create()
    store.write_part("M2", 0, [{"fold": 0, "rmse": 1.0}])
    before = contents(tmp_path)
    store.fs = FullDisk()
    for write in (lambda: store.write_part("M2", 0, [{"fold": 0, "rmse": 2.0}]),
                  lambda: store.write_spec({"name": "sweep"}), store.consolidate):
        with pytest.raises(StorageError) as refused:
            write()
        assert str(refused.value).startswith(f"no space left on the disk of the results storage "
                                             f"'{tmp_path / 'sweep'}' ([Errno 28] writing ")
        assert "--resume (every fold already written is kept)" in str(refused.value)
        assert contents(tmp_path) == before         # no temporary file; the part as it was


def test_a_full_disk_met_in_a_tune_callback_is_the_stores_line():
    """Tune raises a callback's error (the driver writing a failed trial's part) as a
    TuneError holding the traceback as text: the store's line is found in its chain."""
    from ray.tune.error import TuneError

    from sweeps.engine import tune
    from sweeps.engine.common.store import ResultStore, StorageError
    full = StorageError("no space left on the disk of the results storage ...")
    try:
        try:
            raise full
        except StorageError:
            raise TuneError(traceback.format_exc())
    except TuneError as exc:
        assert tune._storage_problem(exc, ResultStore("/r")) is full
    disk = OSError(errno.ENOSPC, "Error writing bytes to file")
    line = str(tune._storage_problem(disk, ResultStore("/r")))
    assert line.startswith("no space left on a disk Ray Tune writes to ([Errno 28]): the "
                           "results storage '/r' or Ray's session folder")
    assert tune._storage_problem(ValueError("other"), ResultStore("/r")) is None


@pytest.fixture
def small_disk(tmp_path):
    """A disk of 250 KiB (a tmpfs: root only), too small for a tiny sweep's results: it fills
    after the first five folds' parts. Made larger by room(); unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small disk needs root; test_a_full_disk_is_one_line_... "
                    "checks the store's side as any user")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=250k", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def room(disk: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)


def test_a_sweep_that_fills_its_disk_stops_in_one_line_and_resumes_once_there_is_room(
        small_disk, capsys):
    """5-6 tracebacks of [Errno 28] before (the trials' parts, the driver's failed part inside
    Tune's callback, the merge), a results.parquet.*.tmp left, and Tune's state cut, so that
    a --resume ran none of the trials it held: now the store's one line, nothing half-written,
    and the resume computes every fold once."""
    argv = [*TINY, "--no-mlflow", "--storage", str(small_disk), "--name", NAME, *ONE_AT_A_TIME,
            "--max-failures", "0"]
    with a_ray():
        code = regression(argv)
        out = capsys.readouterr()
        assert code in (1, 2) and "Traceback" not in out.err + out.out, out
        assert "no space left on the disk of the results storage" in out.err, out.err
        if code == 2:
            assert one_error_line(out).startswith("error: no space left on ")
        assert not list(small_disk.rglob("*.tmp"))
        for part in (small_disk / NAME / "parts").glob("*.parquet"):
            pq.read_table(part)                     # each written whole
        room(small_disk)
        assert regression([*argv, "--resume"]) == 0, capsys.readouterr()
    planned = json.loads((small_disk / NAME / "sweep.json").read_text())["trial_ids"]
    assert_each_fold_once(results(small_disk / NAME), planned, range(3))
