"""A sweep against Ray's real autoscaler: cluster-fake.yaml (the fake multi-node provider, workers
of 1 CPU + 1 logical GPU, none at the start). The sweep's demand adds the workers, every
configuration and fold runs once, and the idle workers are removed after the sweep."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.sweep_helpers import assert_each_fold_once, config_keys, results, run_tiny
from tests.sweep_helpers import free_port

pytestmark = [pytest.mark.own_ray, pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]
IDLE_TIMEOUT_S = 6      # the autoscaler checks every second here (AUTOSCALER_UPDATE_INTERVAL_S)


def fake_cluster_config(gcs_port: int) -> dict:
    """The committed cluster-fake.yaml, on a free port and with a short idle timeout."""
    config = yaml.safe_load((ROOT / "cluster-fake.yaml").read_text())
    config["provider"]["gcs_address"] = f"127.0.0.1:{gcs_port}"
    config["idle_timeout_minutes"] = IDLE_TIMEOUT_S / 60
    return config


def start_head(config_file: Path, gcs_port: int, temp_dir: str, log: Path) -> subprocess.Popen:
    """`ray start --head --block` in a session of its own, as docs/cluster.md shows it (free ports
    and a private temp dir so that it meets no other Ray on this machine)."""
    env = dict(os.environ, RAY_FAKE_CLUSTER="1", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               AUTOSCALER_UPDATE_INTERVAL_S="1")
    command = [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
               "--port", str(gcs_port),
               "--dashboard-agent-listen-port", str(free_port()), "--node-ip-address", "127.0.0.1",
               "--num-cpus", "0", "--include-dashboard", "false", "--disable-usage-stats",
               "--object-store-memory", "100000000", "--temp-dir", temp_dir,
               f"--autoscaling-config={config_file}"]
    with open(log, "w") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_for_port(port: int, head: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert head.poll() is None, f"ray start exited:\n{log.read_text()[-3000:]}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"no head after {timeout} s:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)


def session_pids(sid: int) -> list[int]:
    """The processes of session `sid`: the head's, and the fake workers the autoscaler started
    (the provider runs them as children of the head's monitor)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue    # exited meanwhile
        if int(fields[3]) == sid:
            pids.append(int(stat.parent.name))
    return pids


def stop_head(head: subprocess.Popen) -> None:
    """Never `ray stop`: it stops every Ray of this user on the machine. SIGTERM makes `ray start
    --block` stop its processes; whatever of its session is left gets SIGKILL."""
    head.terminate()
    try:
        head.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    for pid in session_pids(head.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    head.wait()


@pytest.fixture
def autoscaling_cluster(tmp_path):
    """The address of a running fake autoscaling cluster; ray.shutdown and stop_head after."""
    import ray
    port, config_file, log = free_port(), tmp_path / "cluster.yaml", tmp_path / "head.log"
    config_file.write_text(yaml.safe_dump(fake_cluster_config(port)))
    temp_dir = tempfile.mkdtemp(prefix="rayfake", dir="/tmp")  # short: Ray's socket paths
    head = start_head(config_file, port, temp_dir, log)
    try:
        wait_for_port(port, head, log)
        yield f"127.0.0.1:{port}"
    finally:
        ray.shutdown()
        stop_head(head)
        shutil.rmtree(temp_dir, ignore_errors=True)


def alive_workers() -> int:
    import ray
    return sum(1 for n in ray.nodes() if n["Alive"]
               and "node:__internal_head__" not in n["Resources"])


class Watch(threading.Thread):
    """While the sweep runs: the most worker nodes alive at once, and each fold part's
    modification time when first seen (a fold computed twice rewrites its part)."""

    def __init__(self, parts: Path):
        super().__init__(daemon=True)
        self.parts, self.peak_workers, self.first_seen = parts, 0, {}
        self.done = threading.Event()

    def run(self):
        import ray
        while not self.done.wait(0.5):
            if ray.is_initialized():       # the sweep connects itself (--address)
                self.peak_workers = max(self.peak_workers, alive_workers())
            self.look()
        self.look()     # the parts written since the last look (the sweep's last half second)

    def look(self):
        for part in self.parts.glob("*.parquet"):
            self.first_seen.setdefault(part, part.stat().st_mtime_ns)

    def stop(self):
        self.done.set()
        self.join()


def test_a_gpu_sweep_adds_workers_runs_each_fold_once_and_its_idle_workers_go(
        tmp_path, autoscaling_cluster, capsys):
    watch = Watch(tmp_path / "fake" / "parts")
    watch.start()
    try:
        # A whole logical GPU per trial: each trial needs a worker of its own. Two at once
        # (--max-concurrent, which also sizes the packs): 6 configurations in 3 trials. The
        # packs' plug-in waits until two workers run trials: trials used to be given a pace
        # (epochs=20) to outlast the second worker's start, which a fast CPU beat (one at a time).
        outcome = run_tiny(tmp_path, "--address", autoscaling_cluster, "--gpus-per-trial", "1",
                           "--max-concurrent", "2", "--no-mlflow", "--set",
                           "plugin_members=tests.test_sweep_scheduling.WaitsForTwoWorkers",
                           name="fake")
    finally:
        watch.stop()
    assert "waiting up to 600 s for the cluster's autoscaler" in capsys.readouterr().out
    # From none to two: the sweep itself asked for one node (its first trial's bundle, while
    # it waited); the second came for the pending trials (cluster-fake.yaml allows two).
    assert watch.peak_workers == 2
    assert outcome.max_running == 2

    table = results(outcome.root)
    keys = config_keys(outcome)
    assert len(keys) == 6 and len(outcome.trials) == 3
    assert (table["status"] == "ok").all()
    assert_each_fold_once(table, keys, range(3))
    parts = {p: p.stat().st_mtime_ns for p in (tmp_path / "fake" / "parts").glob("*.parquet")}
    assert len(parts) == 6 * 3
    assert {p: watch.first_seen.get(p) for p in parts} == parts    # each written once

    deadline = time.monotonic() + 90
    while alive_workers():
        assert time.monotonic() < deadline, "idle workers were not removed within 90 s"
        time.sleep(1)
