"""Start (or find) the cluster's MLflow tracking server on the head node, and stop it.

    python -m sweeps.tools.mlflow_server start --store-dir ~/mlflow --artifact-root s3://BUCKET/sbfn-mlflow
    python -m sweeps.tools.mlflow_server stop --store-dir ~/mlflow

Used by the head's start commands in cluster.yaml, cluster-local.yaml and the KubeRay example,
so every cluster runs the server the same way:
- bound to 127.0.0.1 only: the Tune drivers on the head log every trial (MLflowLoggerCallback),
  workers never call MLflow, and people reach the UI through an SSH tunnel (`ray attach -p 5050`:
  PORT, below);
- sqlite in --store-dir on the head's local disk (sqlite must not live on NFS: its locks are
  unreliable there); artifacts under --artifact-root (S3, or a shared directory);
- MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false: job execution needs extra services and is unused;
- idempotent: a healthy server on the port is left alone, so a second `ray up` starts no second one;
- `start` returns only once /health answers, else it prints the server log and exits 1, so a
  broken server fails `ray up` instead of the first sweep.
"""

from __future__ import annotations

from sweeps.engine.run.interruption import one_line_on_interrupt

one_line_on_interrupt(__name__)     # before the imports below: they take seconds

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.request

from sbfn_dist.errors import Parser
from sbfn_dist.interfaces.usage import HelpFormatter

HOST = "127.0.0.1"
# The head's port (the cluster files pass it too): not MLflow's 5000, which the laptop's own
# `mlflow ui` (the README's) holds; `ray attach -p 5050` forwards the same port on the laptop,
# and with 5000 the browser showed the local runs instead, silently.
PORT = 5050
PID_FILE = "server.pid"
LOG_FILE = "server.log"
# MLflow's job execution: the server starts background job consumers (huey, about ten
# Python processes, ~45 CPU-s on 2 cores) for features no sweep uses.
NO_JOB_EXECUTION = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def healthy(port: int, timeout: float = 2.0) -> bool:
    """True when an MLflow server answers /health on 127.0.0.1:port."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/health", timeout=timeout) as reply:
            return reply.status == 200
    except OSError:
        return False


def server_command(store_dir: pathlib.Path, artifact_root: str, port: int, workers: int) -> list[str]:
    return [
        sys.executable, "-m", "mlflow", "server",
        "--host", HOST, "--port", str(port), "--workers", str(workers),
        "--backend-store-uri", f"sqlite:///{store_dir / 'mlflow.db'}",
        "--default-artifact-root", artifact_root,
    ]


def _log_tail(store_dir: pathlib.Path, lines: int = 30) -> str:
    log = store_dir / LOG_FILE
    return "\n".join(log.read_text().splitlines()[-lines:]) if log.exists() else "(no log)"


def _wait_healthy(process: subprocess.Popen, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(port):
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.5)
    return False


def start(store_dir, artifact_root: str, port: int = PORT, workers: int = 2,
          timeout: float = 90.0) -> int | None:
    """Start the server in its own session; return its pid, or None if one is already healthy."""
    if healthy(port):
        return None
    store_dir = pathlib.Path(store_dir).expanduser().resolve()
    store_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **NO_JOB_EXECUTION}
    with open(store_dir / LOG_FILE, "ab") as log:
        process = subprocess.Popen(
            server_command(store_dir, artifact_root, port, workers), cwd=store_dir, env=env,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    (store_dir / PID_FILE).write_text(str(process.pid))
    if not _wait_healthy(process, port, timeout):
        stop(store_dir)
        raise RuntimeError(f"MLflow server on {HOST}:{port} did not become healthy:\n{_log_tail(store_dir)}")
    return process.pid


def stop(store_dir) -> bool:
    """SIGTERM the server's process group (the mlflow CLI and its web workers); True if one ran."""
    pid_file = pathlib.Path(store_dir).expanduser().resolve() / PID_FILE
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text())
    pid_file.unlink()
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m sweeps.tools.mlflow_server",
                    description=__doc__.split("\n")[0],
                    formatter_class=HelpFormatter, allow_abbrev=False)
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--store-dir", required=True, help="local dir for mlflow.db, server.log, server.pid")
    parser.add_argument("--artifact-root", help="artifact root URI (s3://BUCKET/PREFIX or a shared "
                        "dir); start needs it, there is no default")
    parser.add_argument("--port", type=int, default=PORT, help=f"port on {HOST}")
    parser.add_argument("--workers", type=int, default=2, help="the server's web workers")
    args = parser.parse_args(argv)
    if args.action == "stop":
        print("stopped" if stop(args.store_dir) else "no server was running from this store dir")
        return 0
    if not args.artifact_root:
        parser.error("start needs --artifact-root (for example s3://BUCKET/sbfn-mlflow)")
    try:
        pid = start(args.store_dir, args.artifact_root, args.port, args.workers)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    state = "already running" if pid is None else f"started (pid {pid})"
    print(f"MLflow server {state} on http://{HOST}:{args.port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
