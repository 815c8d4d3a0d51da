"""--mlflow-uri values MLflow cannot keep runs in, refused in one line before Ray starts and
before the sweep claims its results folder (issue 48): each failed after the claim, and the
corrected rerun was refused as "already holds the sweep ... Pass --resume"."""

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from sweeps.engine.common.tracking_uri import check_tracking_uri
from sweeps.regression import main as regression
from tests.sweep_helpers import TINY

SECRET = "s3cret-pw"
HAS_PSYCOPG = importlib.util.find_spec("psycopg") is not None
LINUX = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")

# (id, URI with {tmp} for the test's folder, words the one line must hold)
BAD_URIS = [
    # MLflow 3.13+ refuses its file store ("maintenance mode"), 89 lines after the claim
    ("file store", "file://./mlruns", ["a folder of files (MLflow's file store)",
                                       "sqlite:////ABSOLUTE/PATH/mlflow.db",
                                       "mlflow migrate-filestore"]),
    ("a path, not writable either", "file:///proc/mlruns", ["MLflow's file store"]),
    ("http without its colon", "http//127.0.0.1:5000",
     ["no scheme (did you mean http://127.0.0.1:5000?)", "read it as a folder"]),
    ("relative sqlite with two slashes", "sqlite://rel.db",
     ["three slashes before a relative path", "sqlite:///rel.db"]),
    ("sqlite naming a CSV", "sqlite:///{tmp}/data.csv",
     ["data.csv is not an SQLite database (it begins b'a,b"]),
    # 208 s of MLflow's retries, then a traceback
    ("sqlite naming a folder", "sqlite:///{tmp}/folder",
     ["folder is a folder, not a database file", "folder/mlflow.db"]),
    ("sqlite under a file", "sqlite:///{tmp}/data.csv/mlflow.db",
     ["data.csv is a file, not a folder"]),
    ("sqlite under ~", "sqlite:///~/mlflow.db", ["'~' is not expanded in a URI (MLflow would "
                                                 "make a folder named ~ here)",
                                                 f"sqlite:///{Path.home()}/mlflow.db"]),
    ("sqlite in memory", "sqlite:///:memory:", ["an in-memory database, whose runs are gone "
                                                "when the sweep ends"]),
    pytest.param("sqlite where no file can be made", "sqlite:////proc/mlflow.db",
                 ["/proc/mlflow.db cannot be made: /proc takes no new file"], marks=LINUX),
    pytest.param("postgresql without its driver", f"postgresql://bob:{SECRET}@127.0.0.1/db",
                 ["the database driver psycopg is not installed: pip install 'psycopg[binary]'",
                  "postgresql://bob:***@127.0.0.1/db"],
                 marks=pytest.mark.skipif(HAS_PSYCOPG, reason="psycopg is installed here")),
]


@pytest.fixture
def places(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    (tmp_path / "folder").mkdir()
    return tmp_path


@pytest.mark.parametrize("name, uri, words", BAD_URIS)
def test_a_tracking_uri_mlflow_cannot_use_is_refused_before_the_folder_is_claimed(
        name, uri, words, places, capsys, ray_connects):
    storage = places / "results"
    code = regression([*TINY, "--storage", str(storage),
                       "--mlflow-uri", uri.format(tmp=places)])
    out = capsys.readouterr()
    assert code == 2, out
    assert "Traceback" not in out.err + out.out and SECRET not in out.err + out.out
    [line] = [line for line in out.err.splitlines() if line.startswith("error: ")]
    assert all(word in line for word in words), line
    assert not ray_connects
    assert not storage.exists()     # the corrected rerun is a new sweep, not "already holds"


def test_the_sqlite_files_mlflow_opens_pass(tmp_path):
    """A new file (its folders MLflow makes), an empty one and an SQLite database."""
    (tmp_path / "empty.db").touch()
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("create table t (x)")
    for name in ("new/deeper/mlflow.db", "empty.db", "runs.db"):
        check_tracking_uri(f"sqlite:///{tmp_path / name}")
    check_tracking_uri("http://127.0.0.1:5000")
