"""A password in --mlflow-uri reaches the tracking server and nothing else.

One real sweep (`python -m sweeps.regression`, Optuna + ASHA, its own local Ray) logs to a real
`mlflow server` behind a loopback proxy that demands HTTP basic auth, as nginx in front of
MLflow would. Its output, every file under its storage, Ray's session directory and the
server's params and tags are then searched for the password; the same run shows what a user
sees by default (no INFO chatter, no colour codes in a pipe), and that the next steps it
prints run as printed. One sweep for these checks keeps the suite fast.
"""

import base64
import json
import http.server
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import asdict
from pathlib import Path

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

from sweeps.engine.plan.planning import SweepOptions
from sweeps.engine.common.tracking_uri import login
from tests.sweep_helpers import ONE_AT_A_TIME, TINY, mlflow_runs

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[1]
USER, SECRET = "sbfn", "secretpw-7Qz"
FOLDS = 3                                   # the smoke grid's CV (ASHA stops after 2 of them)


class BasicAuthProxy(http.server.ThreadingHTTPServer):
    """Forwards requests that carry USER:SECRET to the MLflow server; answers others 401."""

    def __init__(self, upstream: str):
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.upstream, self.passed, self.refused = upstream, 0, 0
        self.expected = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
        self.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    def _forward(self):
        proxy = self.server
        if self.headers.get("Authorization") != proxy.expected:
            proxy.refused += 1
            self._reply(401, b"", {"WWW-Authenticate": 'Basic realm="mlflow"'})
            return
        proxy.passed += 1
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
        headers = {k: v for k, v in self.headers.items() if k.lower() == "content-type"}
        request = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                status, data, kind = reply.status, reply.read(), reply.headers.get("Content-Type")
        except urllib.error.HTTPError as exc:
            status, data, kind = exc.code, exc.read(), exc.headers.get("Content-Type")
        self._reply(status, data, {"Content-Type": kind or "application/json"})

    def _reply(self, status: int, data: bytes, headers: dict) -> None:
        self.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(data))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def proxy(mlflow_server):
    server = BasicAuthProxy(mlflow_server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def sweep(proxy, tmp_path_factory):
    """The sweep's storage, Ray's temporary directory and what the command printed."""
    storage = tmp_path_factory.mktemp("credentials")
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")   # short: Ray's socket paths
    uri = proxy.url.replace("http://", f"http://{USER}:{SECRET}@")
    command = [sys.executable, "-m", "sweeps.regression", *TINY, "--search", "optuna",
               "--num-samples", "4", "--storage", str(storage), "--name", "cred",
               "--num-cpus", "2", *ONE_AT_A_TIME, "--mlflow-uri", uri]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    done = subprocess.run(command, cwd=REPO, env={**env, "RAY_TMPDIR": ray_tmp},
                          capture_output=True, text=True, timeout=500)
    yield storage, Path(ray_tmp), done
    shutil.rmtree(ray_tmp, ignore_errors=True)


def test_the_sweep_logs_to_a_server_that_demands_the_password(sweep, proxy, mlflow_server):
    storage, _, done = sweep
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MLflow logging failed" not in done.stdout, done.stdout[-3000:]
    assert proxy.passed > 0 and proxy.refused == 0
    _, runs = mlflow_runs(mlflow_server, "cred")
    logged = {r.data.tags["trial_id"] for r in runs}
    assert logged == set(pd.read_parquet(storage / "cred" / "results.parquet")["trial_id"])


def test_the_password_is_in_no_output_file_or_logged_value(sweep, mlflow_server):
    storage, ray_tmp, done = sweep
    assert SECRET not in done.stdout + done.stderr
    files = [p for root in (storage, ray_tmp) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "tuner.pkl" for p in files) and any(p.name == "sweep.json" for p in files)
    assert [str(p) for p in files if SECRET.encode() in p.read_bytes()] == []
    client, runs = mlflow_runs(mlflow_server, "cred")
    experiment = client.get_experiment_by_name("cred")
    parent = client.search_runs([experiment.experiment_id], "tags.role = 'sweep'")[0]
    assert "--mlflow-uri" in parent.data.params["command"]        # the command is recorded...
    values = [v for r in [parent, *runs] for v in (*r.data.params.values(), *r.data.tags.values())]
    assert [v for v in values if SECRET in v] == []               # ...without the password


def test_the_output_is_quiet_and_has_no_colour_codes_in_a_pipe(sweep):
    _, _, done = sweep
    printed = done.stdout + done.stderr
    assert "\x1b[" not in printed
    chatter = [line for line in printed.splitlines()
               if re.match(r"(\S+ \S+ INFO |\[I \d)", line)]   # MLflow's and Optuna's INFO
    assert chatter == []
    assert "[cred] finished in" in done.stdout


def test_the_printed_report_command_runs_as_pasted(sweep, tmp_path):
    _, _, done = sweep
    line = next(l for l in done.stdout.splitlines() if l.startswith("report:"))
    command = shlex.split(line.removeprefix("report:"))
    assert os.path.samefile(REPO / command[0], sys.executable)    # the README's .venv/bin/python
    ran = subprocess.run([*command, "--out", str(tmp_path / "report")], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert (tmp_path / "report" / "report.md").exists()


def test_only_configurations_that_ran_every_fold_are_complete_in_the_study(sweep):
    """ASHA stops some configurations after fewer folds: the study holds them PRUNED, so its
    best trial is the best full CV (checked against the records)."""
    storage, _, _ = sweep
    trials = optuna.load_study(study_name="cred",
                               storage=f"sqlite:///{storage}/cred/optuna.db").trials
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    assert len(complete) + len(pruned) == 4 and complete
    assert all(sorted(t.intermediate_values) == list(range(1, FOLDS + 1)) for t in complete)
    assert all(sorted(t.intermediate_values) == list(range(1, len(t.intermediate_values) + 1))
               and len(t.intermediate_values) < FOLDS for t in pruned)
    table = pd.read_parquet(storage / "cred" / "results.parquet")
    best = min(complete, key=lambda t: t.value)
    objective = json.loads((storage / "cred" / "sweep.json").read_text())["objective"]
    rows = table[(table["model"] == objective) & (table["n_members"] == best.params["n_members"])
                 & (table["epsilon"] == best.params["epsilon"])]
    assert sorted(set(rows["fold"])) == list(range(FOLDS))
    assert best.value == pytest.approx(rows.groupby("model_params")["rmse"].mean().min())


# --- the options themselves, without a sweep ---------------------------------------------------
def test_options_keep_only_the_public_uri_and_a_masked_command():
    uri = f"http://{USER}:{SECRET}@127.0.0.1:5000"
    opts = SweepOptions(name="s", mlflow_uri=uri,
                        command=f"python -m sweeps.demo --mlflow-uri {uri}")
    assert opts.mlflow_uri == "http://127.0.0.1:5000"
    assert SECRET not in repr(opts) and SECRET not in str(asdict(opts))
    assert login(opts.mlflow_uri).env == {"MLFLOW_TRACKING_USERNAME": USER,
                                          "MLFLOW_TRACKING_PASSWORD": SECRET}
    database = SweepOptions(name="s", mlflow_uri=f"postgresql://{USER}:{SECRET}@db:5432/mlflow")
    assert database.mlflow_uri == f"postgresql://{USER}:***@db:5432/mlflow"
    assert login(database.mlflow_uri).uri == f"postgresql://{USER}:{SECRET}@db:5432/mlflow"


def test_an_unknown_tracking_uri_scheme_stops_the_sweep_in_one_line_before_ray(tmp_path, capsys,
                                                                               ray_connects):
    from sweeps import regression
    argv = [*TINY, "--storage", str(tmp_path), "--mlflow-uri", f"foo://{USER}:{SECRET}@bar"]
    assert regression.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --mlflow-uri 'foo://{USER}:***@bar': MLflow has no tracking "
                          "store for the scheme 'foo' (it takes ") and "\n" not in err
    assert "http://" in err and "sqlite://" in err and SECRET not in err
    assert not ray_connects and list(tmp_path.iterdir()) == []
