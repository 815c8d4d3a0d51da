"""The MLflow tracking URI a user gives (--mlflow-uri): checked before Ray starts, and its
credentials kept out of everything a sweep prints or stores.

    http://USER:PASSWORD@HOST:PORT    the sweep uses, prints and stores http://HOST:PORT; the
                                      user and password reach MLflow as its environment
                                      variables MLFLOW_TRACKING_USERNAME / _PASSWORD (read at
                                      each request), only in this process, only while it logs
    postgresql://USER:PASSWORD@HOST/DB   printed and stored as postgresql://USER:***@HOST/DB;
                                      MLflow alone is given the URI with the password

Why: sweep.json, Tune's experiment state (its pickled callbacks), the MLflow run's params and
the printed next steps all hold the tracking URI or the command line; with the credentials
taken out here, at the boundary, none of them can hold a password. The URI MLflow needs is
looked up (login) where a client is made, in this process only. docs/cluster.md tells users
to pass credentials through MLflow's environment variables in the first place.
"""

import contextlib
import re
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from sbfn_dist.errors import SbfnError


HTTP = ("http", "https")
CREDENTIAL_VARIABLES = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
# A URI with a user part (scheme://USERINFO@...), wherever it appears in a text.
URI_WITH_USER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@'\"]*@[^\s'\"]*")
HIDDEN = "***"


@dataclass(frozen=True)
class Login:
    """How MLflow reaches a tracking store: the URI it is given and the environment variables
    it reads at each request."""
    uri: str
    env: dict = field(default_factory=dict)


_logins: dict[str, Login] = {}      # public URI -> its Login; this process only, never saved


def public(uri: str) -> str:
    """`uri` as it may be printed and stored: an HTTP server's without its user part, any
    other's password replaced by ***."""
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.netloc.rpartition("@")[2]
    if parts.scheme.lower() in HTTP:
        return urlunsplit(parts._replace(netloc=host))
    user = f"{parts.username}:{HIDDEN}" if parts.password is not None else HIDDEN
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def hide(uri: str | None) -> str | None:
    """`uri`'s public form; how to log in to it is remembered in this process (login)."""
    if not uri:
        return uri
    shown = public(uri)
    if shown != uri:
        _logins[shown] = _login_of(uri, shown)
    return shown


def _login_of(uri: str, shown: str) -> Login:
    parts = urlsplit(uri)
    if parts.scheme.lower() not in HTTP:
        return Login(uri)
    values = (unquote(parts.username or ""), unquote(parts.password or ""))
    return Login(shown, dict(zip(CREDENTIAL_VARIABLES, values)))


def login(uri: str) -> Login:
    """The URI and environment MLflow needs for the public `uri` (itself, when it held no
    credentials or they come from the environment already)."""
    return _logins.get(uri, Login(uri))


def mask(text: str) -> str:
    """`text` (a command line, an error) with every URI in it in its public form."""
    return URI_WITH_USER.sub(lambda m: public(m.group()), text)


def sqlite_path(uri: str) -> Path | None:
    """The file of a sqlite URI in SQLAlchemy's form (sqlite:///relative.db,
    sqlite:////absolute.db), None for any other URI."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(unquote(uri[len("sqlite:///"):].split("?")[0]))


def artifacts_beside(uri: str) -> str | None:
    """Where a new experiment of the store `uri` keeps its artifacts: a sqlite file's in
    mlartifacts/ beside it, as the sweep's own store in its results directory (MLflow's default,
    ./mlruns, is the folder the command ran in, wherever the file is); None for a server's, which
    it chooses."""
    path = sqlite_path(uri)
    return None if path is None else (path.resolve().parent / "mlartifacts").as_uri()


# SQLAlchemy's databases, as MLflow reaches them (its SQLAlchemy store)
DATABASES = ("postgresql", "mysql", "mssql")
# The pip package of each database driver SQLAlchemy 2.1 may import (its dialects' pages):
# a module's name is not always its package's (MySQLdb comes with mysqlclient).
DRIVER_PACKAGES = {"psycopg": "'psycopg[binary]'", "psycopg2": "psycopg2-binary",
                   "MySQLdb": "mysqlclient", "pymysql": "PyMySQL", "pyodbc": "pyodbc",
                   "pymssql": "pymssql", "asyncpg": "asyncpg", "pg8000": "pg8000"}
SQLITE_HEADER = b"SQLite format 3\x00"      # the first 16 bytes of every SQLite database
# A scheme written without its "://" (http//host:5000, https:/host): MLflow reads it as a folder.
MISTYPED_SCHEME = re.compile(r"^(https?|sqlite|postgresql|mysql|mssql)(//.*)$", re.IGNORECASE)
INSTEAD = "Fix --mlflow-uri, or leave it out for the sqlite store in the results directory"


def own_store(root: str) -> str:
    """The tracking URI of a sweep's own store: mlflow.db in its results directory `root`."""
    return f"sqlite:///{root}/mlflow.db"


def check_tracking_uri(uri: str, instead: str = INSTEAD) -> None:
    """Refuse, before Ray starts and before the sweep claims its folder, a URI whose store
    MLflow would fail to open once the sweep runs, in one line each: a scheme no store takes, a
    folder (MLflow's file store), a sqlite URI that names no writable database file, a database
    whose driver is not installed. `instead`: the fix, in the command's words."""
    _require_a_store(uri, instead)
    scheme = urlsplit(uri).scheme.lower().partition("+")[0]
    if scheme in ("", "file"):
        raise SbfnError(f"--mlflow-uri '{mask(uri)}': {_file_store(uri, instead)}")
    if scheme == "sqlite":
        _check_sqlite_uri(uri, instead)
    elif scheme in DATABASES:
        _require_driver(uri, instead)


def _require_a_store(uri: str, instead: str) -> None:
    """A URI no MLflow tracking store takes, by MLflow's own lookup of the store for a URI's
    scheme (it knows the schemes of installed plug-ins too)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry
    try:
        _tracking_store_registry.get_store_builder(uri)
    except MlflowException as exc:
        known = getattr(exc, "supported_uri_schemes", None)
        # file:// and a plain path name MLflow's file store, which it no longer opens
        schemes = ", ".join(f"{s}://" for s in known if s and s != "file") if known else \
            "http://, sqlite://"
        raise SbfnError(
            f"--mlflow-uri '{mask(uri)}': MLflow has no tracking store for the scheme "
            f"'{urlsplit(uri).scheme}' (it takes {schemes}; e.g. "
            "http://127.0.0.1:5000 for a server, sqlite:///ABSOLUTE/PATH.db for a file). "
            f"{instead}") from None


def _file_store(uri: str, instead: str) -> str:
    """Why a folder (file://..., or a path: MLflow's file store) is refused. MLflow 3.13 made
    its file store refuse to open (in maintenance mode) unless MLFLOW_ALLOW_FILE_STORE is set,
    and the sweep's logging (the UI's runs table, logged models) is tested on sqlite and a
    server only: a database file keeps the same runs on the same disk."""
    typo = MISTYPED_SCHEME.match(uri)
    if typo:
        meant = f"{typo[1].lower()}:{typo[2]}"
        return (f"no scheme (did you mean {meant}?), so MLflow would read it as a folder of "
                f"files. {instead}")
    return ("a folder of files (MLflow's file store), which MLflow 3.13 and later no longer "
            "opens (in maintenance mode): log to a database file instead, e.g. "
            "sqlite:////ABSOLUTE/PATH/mlflow.db (mlflow migrate-filestore moves an old ./mlruns "
            f"into one). {instead}")


def _check_sqlite_uri(uri: str, instead: str) -> None:
    path = sqlite_path(uri)
    if path is None or not str(path):       # sqlite://rel.db: SQLAlchemy reads rel.db as a host
        rest = uri.partition("://")[2].lstrip("/")
        raise SbfnError(
            f"--mlflow-uri '{mask(uri)}': a sqlite file's URI has three slashes before a "
            f"relative path and four before an absolute one (sqlite:///{rest or 'mlflow.db'}, "
            f"sqlite:////ABSOLUTE/PATH/{Path(rest).name or 'mlflow.db'}). {instead}")
    problem = _no_file(path) or sqlite_file_problem(path)
    if problem:
        raise SbfnError(f"--mlflow-uri '{mask(uri)}': {problem}. {instead}")


def _no_file(path: Path) -> str | None:
    """A sqlite path that names no file of its own: SQLAlchemy's in-memory database (each
    connection's own, gone when the sweep ends), or one under ~, which no URI expands (MLflow
    made a folder named ~ in the working one)."""
    if str(path) == ":memory:":
        return "an in-memory database, whose runs are gone when the sweep ends: name a file"
    if path.parts and path.parts[0].startswith("~"):
        return (f"'~' is not expanded in a URI (MLflow would make a folder named {path.parts[0]} "
                f"here): write the path, e.g. sqlite:///{path.expanduser()}")
    return None


def sqlite_file_problem(path: Path) -> str | None:
    """What keeps MLflow from keeping its runs in the sqlite file `path`, in words; None if
    nothing. MLflow makes the file and its missing folders itself; on a folder or a file of
    other contents it fails with a traceback after the sweep started (on a folder after
    minutes of retries)."""
    return _a_folder(path) or sqlite_content_problem(path) or _not_writable(path)


def sqlite_content_problem(path: Path) -> str | None:
    """What an existing file holds that MLflow cannot open as its store; None if nothing."""
    return _not_a_database(path) or _damaged(path)


def _a_folder(path: Path) -> str | None:
    if path.is_dir():
        return (f"{path} is a folder, not a database file (a file in it: "
                f"sqlite:///{path.absolute() / 'mlflow.db'})")
    return None


def _not_a_database(path: Path) -> str | None:
    """An existing file that is not SQLite's (a CSV, a cut copy): MLflow would not open it,
    and no sweep should write into it."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except (FileNotFoundError, NotADirectoryError):    # none yet; a file above: _not_writable
        return None
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror})"
    if not head or head == SQLITE_HEADER:        # an empty file: sqlite makes it a database
        return None
    return f"{path} is not an SQLite database (it begins {head[:12]!r})"


def _damaged(path: Path) -> str | None:
    """An SQLite database sqlite itself cannot read (cut, overwritten): read-only, through its
    own consistency check, which reads every page (milliseconds for a sweep's store)."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True, timeout=10)) as db:
            verdict = db.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.OperationalError:    # locked by a writer, unreadable: not this fact
        return None
    except sqlite3.DatabaseError as exc:
        verdict = str(exc)
    if verdict == "ok":
        return None
    return f"{path} is a damaged SQLite database ({verdict.splitlines()[0]})"


def _not_writable(path: Path) -> str | None:
    """The file, or the nearest folder above it that exists (MLflow makes the rest), cannot
    be written: tried, not read from its permissions (root writes whatever they say; /proc
    refuses even root)."""
    if path.is_file():
        try:
            with path.open("r+b"):
                return None
        except OSError as exc:
            return f"{path} cannot be written ({exc.strerror})"
    folder = next(p for p in path.absolute().parents if p.exists())
    if not folder.is_dir():
        return f"{folder} is a file, not a folder, so {path} cannot be made in it"
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as exc:
        return f"{path} cannot be made: {folder} takes no new file ({exc.strerror})"


def _require_driver(uri: str, instead: str) -> None:
    """A database URI whose SQLAlchemy driver is not installed (psycopg for postgresql://):
    MLflow imports it only when the sweep first logs."""
    from sqlalchemy.engine import make_url    # MLflow's own dependency; only for a database
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError
    try:
        make_url(uri).get_dialect().import_dbapi()
    except (ArgumentError, NoSuchModuleError) as exc:
        raise SbfnError(f"--mlflow-uri '{mask(uri)}': SQLAlchemy cannot read it "
                        f"({first_words(exc)}). {instead}") from None
    except ImportError as exc:
        module = exc.name or first_words(exc)
        package = DRIVER_PACKAGES.get(module, module)
        raise SbfnError(f"--mlflow-uri '{mask(uri)}': the database driver {module} is not "
                        f"installed: pip install {package} (or name another driver in the "
                        f"URI, e.g. {urlsplit(uri).scheme.partition('+')[0]}+DRIVER://...)"
                        ) from None


def first_words(exc: Exception) -> str:
    return mask(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
