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

import re
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


def artifacts_beside(uri: str) -> str | None:
    """Where a new experiment of the store `uri` keeps its artifacts: a sqlite file's in
    mlartifacts/ beside it, as the sweep's own store in its results directory (MLflow's default,
    ./mlruns, is the folder the command ran in, wherever the file is); None for a server's, which
    it chooses. SQLAlchemy's form: sqlite:///relative.db, sqlite:////absolute.db."""
    if not uri.startswith("sqlite:///"):
        return None
    path = Path(unquote(uri[len("sqlite:///"):].split("?")[0]))
    return (path.resolve().parent / "mlartifacts").as_uri()


def check_tracking_uri(uri: str) -> None:
    """Refuse a URI no MLflow tracking store takes, before Ray starts, by MLflow's own lookup
    of the store for a URI's scheme (it knows the schemes of installed plug-ins too)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking._tracking_service.utils import _tracking_store_registry
    try:
        _tracking_store_registry.get_store_builder(uri)
    except MlflowException as exc:
        known = getattr(exc, "supported_uri_schemes", None)
        schemes = ", ".join(f"{s}://" for s in known if s) if known else "http://, sqlite://"
        raise SbfnError(
            f"--mlflow-uri '{mask(uri)}': MLflow has no tracking store for the scheme "
            f"'{urlsplit(uri).scheme}' (it takes {schemes} or a local path; e.g. "
            "http://127.0.0.1:5000 for a server, sqlite:///ABSOLUTE/PATH.db for a file). Fix "
            "--mlflow-uri, or leave it out for the sqlite store in the results directory"
        ) from None
