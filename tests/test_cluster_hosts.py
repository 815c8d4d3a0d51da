"""The sweeps on a cluster of separate machines (tests/cluster_hosts.py: a head and two workers,
each with its own network address, /tmp, processes and sshd), prepared and brought up as
docs/cluster.md's walkthrough tells a user (its blocks run as written: Cluster.block), and what
a lab does to a sweep.

    p1-p7  before `ray up`: the walkthrough's `--connect` passes the bare hosts, and names in
           one line with its fix, within a bounded time, each host broken once: its sshd down,
           silent, the key's path wrong, a "shared" directory of each host's own, Ray's port
           blocked between two hosts (a firewall rule inside one), another Python on one
    a-i    on the cluster: a tabular sweep on every host (a), storage (e) or data (h, i) of
           one machine refused before any trial, an image sweep (f), the driver killed (d),
           the walkthrough's sweep, tunnel and report as written (w), a host lost (b), the
           network cut (c), `ray down` (g)

Each sweep scenario checks nothing lost and nothing twice: every configuration x fold once in
results.parquet, one MLflow run per configuration on the head's server, and the records equal
to the same sweep run on one machine.

Root only (network and mount namespaces): `make test-cluster`, which names each scenario as it
runs. Under `make test` these tests skip, saying why (conftest.py). One cluster serves every
scenario, in this file's order; a scenario that loses a host boots it again, and the autoscaler
starts Ray there while the next scenario runs on the others.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from sbfn_dist.records import COLUMNS
from tests.cluster_hosts import (FIGURES, ROOT, Cluster, Hosts, HostsUnavailable, host_path,
                                 reachable)
from tests.sweep_helpers import assert_each_fold_once, free_port

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]

# Each host has this machine's 2 CPUs: with 2 CPUs per trial each host runs one trial at a
# time, so every host runs trials (and the one a scenario cuts off runs one), and the three
# hosts share the 2 cores without a trial worker per CPU importing torch at once.
ONE_PER_HOST = ["--cpus-per-trial", "2"]
# The tabular sweep of scenario a: the demo grid at --smoke's size (diabetes, 300 rows, 3 folds,
# 2 epochs) over 3 x 4 (M, eps) and --pack off: 15 trials, the 12 ensembles, the two M = 1
# references and SVM-RBF. The fault scenarios run the demo's own --smoke (6 of those 15
# configurations: M in {10, 5} x eps in {0, 0.35}, the first reference, SVM-RBF; not packed
# either), so one one-machine run of TABULAR is the reference of every tabular scenario.
TABULAR = ["sweeps.regression", "--dataset", "diabetes", "--grid", "demo",
           "--members", "2", "5", "10", "--epsilons", "0", "0.2", "0.35", "0.5",
           "--competitors", "svm_rbf", "--set", "folds=3", "n_samples=300", "epochs=2",
           "--pack", "off", *ONE_PER_HOST]
SMOKE = ["sweeps.regression", "--dataset", "diabetes", "--grid", "demo", "--smoke",
         "--pack", "off", *ONE_PER_HOST]
FOLDS = range(3)
# The image sweep's smoke grid on an npz of scikit-learn's digits that the test writes to the
# shared directory (the documented way data reaches every machine): M = 2, eps in {0, 0.3},
# CNN members, one split: 2 trials, so on two hosts. 20 epochs of the stacked heads, as the
# tabular smoke has (their default took 7 of a trial's 10 s).
DIGITS = "data/digits.npz"          # under the shared directory
IMAGES = ["sweeps.images", "--smoke", "--members", "2", "--epsilons", "0", "0.3",
          "--ensembles", "cnn", "--set", "head_epochs=20", *ONE_PER_HOST]
# Scores are float32 training's: the same sweep on one machine agrees to float32 rounding
# amplified through a few hundred optimiser steps (both sides run on this CPU with the same
# threads per trial, so in practice they agree exactly).
RTOL = 1e-5
# Fitted weights are float64 solves of the same float32 predictions: another host's BLAS
# rounds their last digits differently (599.8517929016695 against ...6591), and a weight
# that is 0 on one host may be 1e-13 on another, so an absolute floor besides RTOL.
ATOL = 1e-9
# The records' columns that hold a JSON object of fitted numbers (member -> weight, name ->
# fitted value): compared number by number, not as text.
JSON_NUMBERS = ("weights", "fitted_params")
SWEEP_TIMEOUT_S = 300
WORKER = "ray::ImplicitFunc"        # the process title of a Tune trial's worker
MLFLOW_PORT = 5050                  # the head's MLflow server (cluster-local.yaml)
# The longest a `--connect` may take here, a silent host included: its own bounds are SSH's
# 5 s connect, 3 s per TCP probe and 30 s per step; it took 3-10 s on 2 shared cores.
PREFLIGHT_S = 45


def sweep_command(args: list[str], name: str, storage: str = "$SBFN_RESULTS") -> str:
    """docs/cluster.md's command for a sweep on the cluster (cluster-local.yaml's env file sets
    SBFN_RESULTS and SBFN_MLFLOW_URI on every machine)."""
    module, *rest = args
    return (f"cd ~/sbfn-dist && python -m {module} {shlex.join(rest)} --address auto "
            f"--storage {storage} --mlflow-uri $SBFN_MLFLOW_URI --name {name}")


class Lab:
    """The cluster, the one-machine reference runs, and the test's looks inside."""

    def __init__(self, hosts: Hosts, cluster: Cluster, references: dict):
        self.hosts, self.cluster, self.references = hosts, cluster, references
        self.head = hosts[0]
        self.results = hosts.shared / "sbfn-results"
        self._read: dict = {}       # part path -> ((trial id, fold, host), mtime read)
        self._tunnel = None         # (ssh -L process, its URL)

    # --- the user's side --------------------------------------------------------------
    def sweep(self, args: list[str], name: str, *extra: str) -> subprocess.CompletedProcess:
        return self.cluster.exec(sweep_command(args, name) + "".join(f" {e}" for e in extra),
                                 timeout=SWEEP_TIMEOUT_S)

    def start_sweep(self, args: list[str], name: str) -> subprocess.Popen:
        return self.cluster.start_exec(sweep_command(args, name))

    # --- the harness's looks ----------------------------------------------------------
    def alive(self) -> set:
        """The addresses of the nodes the head's GCS has alive (asked from the laptop)."""
        from ray._raylet import GcsClient
        from ray.core.generated.gcs_pb2 import GcsNodeInfo
        nodes = GcsClient(address=f"{self.head.address}:6379").get_all_node_info(timeout=10)
        return {n.node_manager_address for n in nodes.values() if n.state == GcsNodeInfo.ALIVE}

    def wait_for_nodes(self, *hosts, timeout: float = 240) -> float:
        """Until the nodes of `hosts` (all by default) are alive (a lost host booted again
        first); the seconds waited."""
        start = time.monotonic()
        hosts = hosts or self.hosts.hosts
        for host in hosts:
            if host.first_pid() is None:
                self.hosts.restart(host)
        want = {h.address for h in hosts}
        while not want <= (alive := self.alive()):
            assert time.monotonic() - start < timeout, f"nodes alive after {timeout} s: {alive}"
            time.sleep(2)
        return time.monotonic() - start

    def parts(self, name: str) -> dict:
        """Each part written so far: (trial id, fold) -> (the host that wrote it, its mtime)."""
        found = {}
        for path in (self.results / name / "parts").glob("*-f*.parquet"):
            try:
                mtime = path.stat().st_mtime
                if self._read.get(path, (None, -1))[1] != mtime:
                    table = pq.read_table(path, columns=["trial_id", "fold", "host"])
                    self._read[path] = ((table["trial_id"][0].as_py(), table["fold"][0].as_py(),
                                         table["host"][0].as_py()), mtime)
            except OSError:
                continue        # replaced meanwhile: read at the next look
            (trial, fold, host), _ = self._read[path]
            found[(trial, fold)] = (host, mtime)
        return found

    def wait_for_a_trial_midway(self, name: str, hosts, timeout: float = 200) -> tuple:
        """A configuration with one fold done on one of `hosts` and two still to do: its trial
        is running there now (a fold takes a second or more). (Its trial id, that host.)"""
        names = {h.name: h for h in hosts}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            parts = self.parts(name)
            done = Counter(trial for trial, _ in parts)
            for (trial, _), (where, _) in parts.items():
                if where in names and done[trial] == 1:
                    return trial, names[where]
            time.sleep(0.1)
        raise AssertionError(f"no trial ran on {sorted(names)} within {timeout} s")

    def driver(self, name: str) -> int:
        """The sweep's driver process on the head (its PID outside the head)."""
        pids = [pid for pid, line in self.head.commands().items()
                if re.match(r"\S*python\S* -m sweeps\.", line) and f"--name {name}" in line]
        assert len(pids) == 1, self.head.commands()
        return pids[0]

    def trial_workers(self) -> dict:
        """Tune trial workers per host name."""
        return {h.name: [p for p, line in h.commands().items() if line.startswith(WORKER)]
                for h in self.hosts.hosts}

    def tune_hosts(self, name: str, configuration: str) -> set:
        """The hosts that reported results of the trial that ran `configuration` (Tune's own
        record of each report, result.json)."""
        hosts = set()
        for path in (self.results / name / "tune").glob("*/result.json"):
            for line in path.read_text().splitlines():
                result = json.loads(line)
                if configuration in result.get("trial_keys", ()):
                    hosts.add(result["hostname"])
        return hosts

    def table(self, name: str) -> pd.DataFrame:
        return pd.read_parquet(self.results / name / "results.parquet")

    def mlflow_runs(self, name: str, uri: str | None = None) -> list[dict]:
        """The sweep's runs on the head's MLflow server (127.0.0.1:5050 there), asked through an
        SSH tunnel (the harness's own, or `uri`: the walkthrough's `ray attach -p 5050`): tags,
        status, and the steps of each run's per-fold scores."""
        from mlflow import MlflowClient
        client = MlflowClient(uri or self.tunnel())
        experiment = client.get_experiment_by_name(name)
        runs = client.search_runs([experiment.experiment_id], max_results=1000)
        return [{"trial_id": r.data.tags.get("trial_id"), "role": r.data.tags.get("role"),
                 "status": r.info.status,
                 "steps": sorted(m.step for m in client.get_metric_history(
                     r.info.run_id, next((k for k in r.data.metrics if k.endswith("/by_fold")),
                                         "none")))}
                for r in runs]

    def tunnel(self) -> str:
        """http://127.0.0.1:PORT on the laptop, forwarded to the head's MLflow server."""
        if self._tunnel is None or self._tunnel[0].poll() is not None:
            port = free_port()
            process = self.hosts.forward(self.head, port, MLFLOW_PORT)
            deadline = time.monotonic() + 20
            while not reachable("127.0.0.1", port):
                assert time.monotonic() < deadline and process.poll() is None, "no tunnel"
                time.sleep(0.2)
            self._tunnel = (process, f"http://127.0.0.1:{port}")
        return self._tunnel[1]

    # --- the checks every scenario makes ----------------------------------------------
    def check(self, name: str, reference: str, hosts_at_least: int = 2) -> pd.DataFrame:
        """Nothing lost, nothing twice, the same records as on one machine; the table."""
        table = self.table(name)
        planned = json.loads((self.results / name / "sweep.json").read_text())["trial_ids"]
        expected = self.references[reference]()
        expected = expected[expected["trial_id"].map(setting).isin({setting(t) for t in planned})]
        folds = sorted(set(expected["fold"]))
        assert_each_fold_once(table, planned, folds)
        assert set(expected["trial_id"].map(setting)) == set(map(setting, planned))
        assert (table["status"] == "ok").all(), table[table["status"] != "ok"][["trial_id", "error"]]
        assert table["host"].nunique() >= hosts_at_least, table["host"].value_counts()
        assert_same_records(table, expected)
        runs = self.mlflow_runs(name)
        configurations = [r for r in runs if r["role"] != "sweep"]
        assert sorted(r["trial_id"] for r in configurations) == sorted(planned)   # one run each
        assert [r["status"] for r in runs] == ["FINISHED"] * len(runs)
        assert not [r for r in configurations if r["steps"] != folds]     # each fold logged once
        return table


def setting(trial_id: str) -> str:
    """A configuration's key without its hash, which covers the sweep's name too:
    M10_eps0.2_s0_492266fb -> M10_eps0.2_s0, the same configuration in any sweep."""
    return trial_id.rsplit("_", 1)[0]


def assert_same_records(table: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Row for row (configuration, fold, model, setting) the same values; timings, the host
    and the sweep's name (and so the trial ids' hashes) aside."""
    key = ["configuration", "fold", "model", "model_params"]
    skip = {c for c, col in COLUMNS.items() if col.kind == "timing"} | {"host", "sweep",
                                                                         "trial_id"}
    assert len(table) == len(expected)
    left, right = (t.assign(configuration=t["trial_id"].map(setting)).set_index(key).sort_index()
                   for t in (table, expected))
    assert left.index.equals(right.index)
    assert set(left.columns) == set(right.columns)
    for column in sorted(set(left.columns) - skip):
        a, b = left[column], right[column]
        if pd.api.types.is_float_dtype(a) and pd.api.types.is_float_dtype(b):
            np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=RTOL, equal_nan=True,
                                       err_msg=column)
        elif column in JSON_NUMBERS:
            for x, y in zip(a, b):
                assert pd.isna(x) == pd.isna(y), column
                if not pd.isna(x):
                    assert json.loads(x).keys() == json.loads(y).keys(), column
                    np.testing.assert_allclose(list(json.loads(x).values()),
                                               list(json.loads(y).values()), rtol=RTOL,
                                               atol=ATOL, err_msg=column)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), column


def reference_runs(runs: dict, storage: Path) -> dict:
    """The same sweeps on this one machine (a local Ray of 2 CPUs, no MLflow: one trial at a
    time, beside the cluster on the same cores), one after the other in the background: name ->
    a function that waits for that run and returns its records; and their process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    commands = [shlex.join([sys.executable, "-m", *args, "--storage", str(storage), "--name",
                            name, "--no-mlflow", "--num-cpus", "2"])
                for name, args in runs.items()]
    log = storage / "one-machine.log"
    process = subprocess.Popen(["sh", "-c", " && ".join(commands)], cwd=storage, env=env,
                               stdout=open(log, "w"), stderr=subprocess.STDOUT,
                               start_new_session=True)

    def records(name: str):
        def get() -> pd.DataFrame:
            path = storage / name / "results.parquet"
            deadline = time.monotonic() + 2 * SWEEP_TIMEOUT_S
            while not path.exists():
                assert process.poll() in (None, 0), log.read_text()[-3000:]
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(1)
            return pd.read_parquet(path)
        return get
    return process, {name: records(name) for name in runs}


@dataclass
class Bare:
    """The hosts before `ray up`: the walkthrough's filled cluster file, checked offline, and
    what the sweep scenarios compare with (the one-machine runs, going on in the background)."""
    hosts: Hosts
    cluster: Cluster
    references: dict            # name -> a function returning that run's records
    images: list                # the image sweep's arguments (its npz on the shared directory)
    local: Path                 # the one-machine runs' storage
    other_python: tuple | None  # (interpreter, prefix) of another Python release, if any


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    other = other_python()
    try:
        hosts = Hosts(3, also_shared=[other[1]] if other else [])
    except HostsUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    one_machine = None
    try:
        digits = hosts.shared / DIGITS
        digits.parent.mkdir(parents=True)
        write_digits(digits)
        images = [*IMAGES, "--dataset", f"npz:{digits}"]
        local = tmp_path_factory.mktemp("one-machine")
        one_machine, references = reference_runs({"tabular": TABULAR, "images": images}, local)
        cluster = Cluster(hosts)
        check = cluster.run_block("check", timeout=120)
        assert check.returncode == 0, check.stdout               # as docs/cluster.md says
        yield Bare(hosts, cluster, references, images, local, other)
    finally:
        if one_machine is not None and one_machine.poll() is None:
            os.killpg(one_machine.pid, signal.SIGTERM)   # a sweep stops on it as on Ctrl-C
            one_machine.wait(60)
        hosts.close()


@pytest.fixture(scope="module")
def lab(bare):
    """The walkthrough's `ray up` of the hosts, every node alive."""
    start = time.monotonic()
    bare.cluster.up()
    lab = Lab(bare.hosts, bare.cluster, bare.references)
    try:
        lab.wait_for_nodes()
        FIGURES["ray up to a ready cluster (3 hosts), s"] = round(time.monotonic() - start, 1)
        lab.images, lab.local = bare.images, bare.local
        yield lab
    finally:
        if lab._tunnel is not None:
            lab._tunnel[0].kill()


def other_python() -> tuple[str, str] | None:
    """(the interpreter, its prefix) of a Python of another minor release than this one, on
    this machine (this machine kind has pyenv's 3.10, 3.12 and 3.13; pyenv's shims answer only
    for its chosen version), or None."""
    names = [shutil.which(n) for n in ("python3.12", "python3.13", "python3.10")]
    pyenv = sorted(Path("~/.pyenv/versions").expanduser().glob("3.*/bin/python3"))
    for found in [*filter(None, names), *map(str, pyenv)]:
        said = subprocess.run([found, "-c", "import sys; print(sys.version_info[1], "
                               "sys.base_prefix, sys.executable)"], capture_output=True,
                              text=True)
        if said.returncode == 0:
            minor, prefix, executable = said.stdout.split()
            if int(minor) != sys.version_info[1]:
                return executable, prefix
    return None


def write_digits(path: Path) -> None:
    """scikit-learn's digits (1,797 8x8 images) as an npz of `x` (N, 1, 8, 8) and `y`."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    np.savez(path, x=digits.images.astype("float32")[:, None], y=digits.target)


# ------------------------------------------------------------------ the bare hosts: --connect
def preflight(bare: Bare, file: Path | None = None) -> tuple[list[str], str]:
    """The walkthrough's `--connect` (on `file`, a broken copy of the filled one): its problem
    lines (notes aside) and its whole output, once it has passed or failed within PREFLIGHT_S."""
    start = time.monotonic()
    done = bare.cluster.run_block("preflight", timeout=120, file=file)
    took = time.monotonic() - start
    assert took < PREFLIGHT_S, f"--connect took {took:.0f} s:\n{done.stdout}"
    assert "Traceback" not in done.stdout, done.stdout
    problems = [line.strip() for line in done.stdout.splitlines()
                if line.startswith("  ") and ": note: " not in line]
    verdict = done.stdout.strip().splitlines()[-1]
    assert (done.returncode == 0) == (not problems) == (": --connect OK: " in verdict), done.stdout
    return problems, done.stdout


def broken_file(bare: Bare, name: str, old: str, new: str) -> Path:
    """The filled cluster file with `old` (which it holds) replaced by `new`."""
    text = bare.cluster.file.read_text()
    assert old in text
    path = bare.hosts.dir / name
    path.write_text(text.replace(old, new))
    return path


def test_p1_the_walkthroughs_preflight_passes_the_three_bare_hosts(bare):
    """Before `ray up`: SSH, Python, Ray, the shared directory and every port between the
    hosts. Fails on: a check that refuses a good host (the probe's listeners closing before
    the others have probed them did: "Connection refused" on good ports)."""
    start = time.monotonic()
    problems, said = preflight(bare)
    FIGURES["--connect on the three bare hosts, s"] = round(time.monotonic() - start, 1)
    assert not problems, said
    assert "3 of 3 machines answer" in said and "6379" in said and "shared" in said


def test_p2_a_host_whose_sshd_is_down_is_named_with_the_fix(bare):
    """Its address up, nothing listening on 22 (every process of the host killed)."""
    down = bare.hosts[2]
    bare.hosts.kill(down)
    try:
        [problem], said = preflight(bare)
    finally:
        bare.hosts.restart(down)
    assert problem.startswith(f"{down.address}: SSH refused at {down.address}:22"), said
    assert "openssh-server" in problem


def test_p3_a_host_that_never_answers_costs_seconds_not_a_hang(bare):
    """Its cable out: SSH through the head times out (5 s) and says so; preflight() bounds
    the whole run."""
    silent = bare.hosts[1]
    bare.hosts.link(silent, False)
    try:
        [problem], said = preflight(bare)
    finally:
        bare.hosts.link(silent, True)
    assert problem.startswith(f"{silent.address}: no answer from {silent.address}:22 within"), said


def test_p4_a_key_path_that_is_wrong_is_named_before_any_login(bare):
    file = broken_file(bare, "wrong-key.yaml", str(bare.hosts.key), f"{bare.hosts.key}-old")
    [problem], said = preflight(bare, file)
    assert problem.startswith(f"auth.ssh_private_key: the key {bare.hosts.key}-old does not "
                              "exist"), said
    assert "ssh-keygen -t ed25519" in problem and "ssh-copy-id" in problem
    assert "no machine asked" in said


def test_p5_a_shared_directory_that_each_host_has_of_its_own_is_named(bare):
    """The scratch directory: one path, a tmpfs of its own on each host (a local disk where
    NFS was meant to be mounted): the head writes there, no worker sees it."""
    file = broken_file(bare, "private.yaml", str(bare.hosts.shared), str(bare.hosts.scratch))
    problems, said = preflight(bare, file)
    assert len(problems) == 2, said
    for worker, problem in zip(bare.hosts.hosts[1:], problems):
        assert problem.startswith(f"{worker.address} ({worker.name}): {bare.hosts.scratch} is "
                                  "not shared"), said
        assert "mount it at" in problem


def test_p6_rays_port_blocked_between_two_hosts_is_named_with_the_ports_to_open(bare):
    """A firewall rule inside a worker's namespace drops what it sends to the head's GCS."""
    head, worker = bare.hosts[0], bare.hosts[1]
    bare.hosts.firewall(worker, "-A", "OUTPUT", "-p", "tcp", "-d", head.address, "--dport",
                        "6379", "-j", "DROP")
    try:
        [problem], said = preflight(bare)
    finally:
        bare.hosts.flush(worker)
    assert problem.startswith(f"{worker.address} ({worker.name}): cannot reach {head.address} "
                              f"({head.name}) on TCP 6379 (timed out"), said
    assert "open these ports between the machines" in problem


def test_p7_a_host_with_another_python_is_named_with_the_fix(bare):
    """A venv of another Python release stands where the shared venv is, on one worker (a
    machine whose own venv was made with its own python3.12)."""
    if bare.other_python is None:
        pytest.skip("no Python of another release than this one on this machine")
    other = bare.hosts.dir / "other-venv"
    subprocess.run([bare.other_python[0], "-m", "venv", "--without-pip", str(other)], check=True)
    odd = bare.hosts[2]
    bare.hosts.bind(odd, other, sys.prefix)
    try:
        [problem], said = preflight(bare)
    finally:
        bare.hosts.unbind(odd, sys.prefix)
    assert problem.startswith(f"{odd.address} ({odd.name}): {sys.prefix}/bin/python is Python "
                              "3."), said
    assert "the project needs" in problem and "3.11" in problem


# ------------------------------------------------------------------------------ scenarios
def test_a_tabular_sweep_runs_on_every_host_and_logs_to_the_heads_mlflow(lab):
    """Fails on: cluster-local.yaml's start commands without --node-ip-address (each node
    registers as 127.0.0.1 and no worker joins: the wait for three nodes fails), or records
    that do not name their host."""
    done = lab.sweep(TABULAR, "a")
    assert done.returncode == 0, done.stdout[-3000:]
    table = lab.check("a", "tabular", hosts_at_least=3)
    FIGURES["trials per host (15 trials)"] = table.groupby("host")["trial_id"].nunique().to_dict()
    FIGURES["between two trials of a slot, s (median), by host (the driver on sbfn-h0)"] = \
        scheduling_gaps(lab.results / "a")
    lab.references["tabular"]()
    FIGURES["the same on one machine"] = scheduling_gaps(lab.local / "tabular")


def assert_refused_before_any_trial(done, name: str, folder: Path) -> str:
    """One `error:` line, no traceback, no trial, and no `folder` (the sweep's results folder,
    or the storage its refused run made): the line."""
    assert done.returncode != 0, done.stdout[-3000:]
    errors = [line for line in done.stdout.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stdout[-3000:]
    assert "Traceback" not in done.stdout and f"[{name}] configurations" not in done.stdout
    assert not folder.exists(), sorted(folder.rglob("*"))
    return errors[0]


def test_e_a_results_directory_of_one_machine_is_refused_before_any_trial_runs(lab):
    """--storage a path of the head's own /tmp on the three-host cluster. Fails on: the
    engine without ResultStore.check_shared (the sweep starts; trials on the workers fail with
    a bare FileNotFoundError and are retried onto the head), or a refusal that leaves the
    folders it made (parts/, sweep.lock) behind."""
    lab.wait_for_nodes()
    done = lab.cluster.exec(sweep_command(TABULAR, "e", storage="/tmp/sbfn-results"),
                            timeout=SWEEP_TIMEOUT_S)
    error = assert_refused_before_any_trial(done, "e", host_path(lab.head, "/tmp/sbfn-results"))
    assert "is not shared" in error and "s3://" in error and "mounts" in error
    assert all(h.address in error for h in lab.hosts.hosts[1:])
    assert not any(host_path(h, "/tmp/sbfn-results").exists() for h in lab.hosts.hosts[1:])


def walkthrough_name(lab: Lab) -> str:
    """The walkthrough's sweep's --name."""
    return re.search(r"--name (\S+)'", lab.cluster.block("sweep"))[1]


def test_h_the_walkthroughs_sweep_without_its_data_dir_is_refused_before_any_trial(lab):
    """The sweep of docs/cluster.md without `--data-dir`: the hosts have no internet and the
    head no copy. Fails on: a sweep with --address that does not check the data before Ray
    (each trial failed at each retry, ~20 times the same long error, and the summary said 6
    configurations with results, 6 failed)."""
    name = walkthrough_name(lab)
    done = lab.cluster.run_block("sweep", edit=lambda t: t.replace(" --data-dir /mnt/sbfn/data",
                                                                   ""))
    error = assert_refused_before_any_trial(done, name, lab.results / name)
    assert "error: the data as this machine of the cluster reads it: data set 'air_quality' " \
           "needs the file uci_air_quality/AirQualityUCI.csv" in error
    assert "on the shared file system" in error and "--data-dir" in error


def test_i_data_that_only_the_head_has_is_refused_before_any_trial(lab):
    """`--data-dir` a folder of the head's own /tmp, the file there: the head's check passes,
    a worker's (once joined) does not. Fails on: the data checked on the driver's machine
    alone (every trial on a worker would fail, and be retried onto the head)."""
    lab.wait_for_nodes()
    local = host_path(lab.head, "/tmp/sbfn-data/uci_air_quality")
    local.mkdir(parents=True)
    shutil.copy(Path(os.environ["SBFN_DATA_DIR"]) / "uci_air_quality" / "AirQualityUCI.csv",
                local)
    name = walkthrough_name(lab)
    done = lab.cluster.run_block("sweep", edit=lambda t: t.replace(
        "/mnt/sbfn/data", "/tmp/sbfn-data").replace(f"--name {name}", "--name i"))
    error = assert_refused_before_any_trial(done, "i", lab.results / "i")
    workers = [h.address for h in lab.hosts.hosts[1:]]
    assert any(f"error: the data as the machine {w} of the cluster reads it: data dir "
               "/tmp/sbfn-data (from --data-dir) does not exist" in error for w in workers), error
    assert "on the shared file system" in error


def test_f_an_image_sweep_reads_its_npz_from_the_shared_directory_on_the_workers(lab):
    """The smoke grid on an npz in the shared directory. Fails on: data given as a path of the
    head alone (the workers' trials cannot load it), or image records that differ from one
    machine's."""
    lab.wait_for_nodes()
    done = lab.sweep(lab.images, "f")
    assert done.returncode == 0, done.stdout[-3000:]
    table = lab.check("f", "images")
    assert set(table["host"]) - {lab.head.name}       # a worker read the npz


def test_d_the_driver_killed_on_the_head_then_resume_finishes_without_recomputing(lab):
    """Fails on: a resume that recomputes finished folds (their parts are rewritten), or one
    that cannot take over the dead driver's claim (sweeps/engine/claim.py)."""
    lab.wait_for_nodes()
    sweep = lab.start_sweep(SMOKE, "d")
    deadline = time.monotonic() + 200
    while len(lab.parts("d")) < 3:
        assert time.monotonic() < deadline, "the sweep wrote fewer than 3 parts in 200 s"
        time.sleep(0.2)
    os.kill(lab.driver("d"), signal.SIGKILL)
    lab.cluster.note("driver killed")
    deadline = time.monotonic() + 60
    while any(lab.trial_workers().values()):        # Ray ends the dead driver's trials
        assert time.monotonic() < deadline, lab.trial_workers()
        time.sleep(0.5)
    lab.cluster.note("its trial workers gone")
    before = lab.parts("d")
    assert len(before) < 3 * 6
    done = lab.sweep(SMOKE, "d", "--resume")
    assert done.returncode == 0, done.stdout[-3000:]
    lab.check("d", "tabular")
    after = lab.parts("d")
    assert {k: after[k] for k in before} == before      # not one finished fold computed again
    assert sweep.wait(60) != 0          # the killed run's `ray exec` said it failed


def test_w_the_walkthroughs_data_sweep_tunnel_and_report_run_as_written(lab):
    """docs/cluster.md's steps 9-12 as a user runs them: the data onto the shared directory,
    the sweep (the first trial of the walkthrough, on every host that has room), its runs
    through `ray attach -p 5050` and the report from a copy on the laptop. Fails on: a command
    of the walkthrough that does not work as written."""
    lab.wait_for_nodes()
    name = walkthrough_name(lab)
    data = lab.cluster.run_block("data", timeout=120)
    assert data.returncode == 0, data.stdout[-3000:]
    assert (lab.hosts.shared / "data" / "uci_air_quality" / "AirQualityUCI.csv").exists()
    done = lab.cluster.run_block("sweep", timeout=SWEEP_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:]
    table = lab.table(name)
    planned = json.loads((lab.results / name / "sweep.json").read_text())["trial_ids"]
    assert_each_fold_once(table, planned, FOLDS)
    assert (table["status"] == "ok").all() and table["host"].nunique() >= 2
    assert f"{len(planned)} configurations with results, 0 failed" in done.stdout
    runs = walkthrough_runs(lab, name)
    assert sorted(r["trial_id"] for r in runs if r["role"] != "sweep") == sorted(planned)
    report = lab.cluster.run_block("report", timeout=180)
    assert report.returncode == 0, report.stdout[-3000:]
    assert (lab.hosts.laptop_home / "sbfn-results" / name / "report" / "report.html").exists()


def walkthrough_runs(lab: Lab, name: str) -> list[dict]:
    """The sweep's MLflow runs through the walkthrough's own tunnel (its `ray attach -p 5050`,
    held open while it is asked)."""
    uri = f"http://127.0.0.1:{MLFLOW_PORT}"
    assert not reachable("127.0.0.1", MLFLOW_PORT), f"something on this machine holds {uri}"
    attach = lab.cluster.start_block("mlflow")
    try:
        deadline = time.monotonic() + 60
        while not reachable("127.0.0.1", MLFLOW_PORT):
            assert time.monotonic() < deadline and attach.poll() is None, "no tunnel"
            time.sleep(0.3)
        return lab.mlflow_runs(name, uri)
    finally:
        attach.stdin.close()            # the shell on the head ends, and the tunnel with it
        try:
            attach.wait(30)
        except subprocess.TimeoutExpired:
            attach.kill()
            attach.wait()


def test_b_a_host_lost_mid_sweep_loses_nothing_and_its_trial_finishes_elsewhere(lab):
    """A worker host loses power mid-sweep (its link down, then every process SIGKILLed).
    Fails on: --max-failures 0 (the lost trials fail), or parts keyed by attempt instead of by
    configuration and fold (the lost trial's finished folds would come twice). The worker
    lost is the first midway through a trial (c says why)."""
    lab.wait_for_nodes()
    sweep = lab.start_sweep(SMOKE, "b")
    _, lost = lab.wait_for_a_trial_midway("b", lab.hosts.hosts[1:])
    lab.hosts.link(lost, False)
    lab.hosts.kill(lost)
    loss = time.time()
    try:
        finishes_elsewhere(lab, sweep, lost, loss)
    finally:
        lab.hosts.restart(lost)     # booted again: the autoscaler starts Ray there meanwhile


def finishes_elsewhere(lab: Lab, sweep: subprocess.Popen, lost, loss: float) -> None:
    """Scenario b after the loss: the sweep finishes on the other hosts, whole, and the trial
    cut short on the lost one goes on elsewhere."""
    # Trials cut short on it: a fold done there, others not (nothing writes there any more).
    parts = lab.parts("b")
    done = Counter(trial for trial, _ in parts)
    cut = {t for (t, _), (host, _) in parts.items() if host == lost.name and done[t] < len(FOLDS)}
    assert cut
    assert sweep.wait(SWEEP_TIMEOUT_S) == 0, lab.cluster.log.read_text()[-3000:]
    lab.check("b", "tabular")
    parts = lab.parts("b")
    assert all(mtime < loss for host, mtime in parts.values() if host == lost.name)
    elsewhere = [mtime for (t, _), (host, mtime) in parts.items() if t in cut and host != lost.name]
    assert elsewhere
    FIGURES["a host lost -> the next fold of its trial done on another host, s"] = round(
        min(elsewhere) - loss, 1)


def test_c_a_partition_longer_than_the_node_timeout_records_a_trial_of_both_sides_once(lab):
    """A worker's link down until the head has declared it dead, then up again: its trial
    went on on its side (the shared directory stays writable here) while Tune ran it again on
    the other. Fails on: parts written under a name of their own per attempt (the fold done on
    both sides would be recorded twice), or a store that skips a fold only when its part was
    read at the trial's start (the retry would recompute the folds the cut side wrote).
    The tabular sweep of a, and the worker cut the first that is midway through a trial: with
    the demo's --smoke, on a quiet machine, one worker ran all 6 trials in 4 s, before the
    others' trial workers had started (the host lost in b may still be on its way back)."""
    lab.wait_for_nodes(lab.head)
    sweep = lab.start_sweep(TABULAR, "c")
    trial, cut = lab.wait_for_a_trial_midway("c", lab.hosts.hosts[1:])
    lab.hosts.link(cut, False)
    start = time.monotonic()
    try:
        while cut.address in lab.alive():
            assert time.monotonic() - start < 180, "the head never gave the cut host up"
            time.sleep(1)
        FIGURES["a silent host declared dead by the head after, s"] = round(
            time.monotonic() - start, 1)
    finally:
        lab.hosts.link(cut, True)
    assert sweep.wait(SWEEP_TIMEOUT_S) == 0, lab.cluster.log.read_text()[-3000:]
    lab.check("c", "tabular")
    # The trial cut mid-way wrote a fold on the cut host, and Tune ran it again on another
    # one: it ran on both sides of the partition, and each of its folds is in the results
    # once (lab.check).
    assert lab.tune_hosts("c", trial) - {cut.name}


def test_g_ray_down_stops_ray_on_every_host_and_the_hosts_stay_up(lab):
    """Fails on: cluster-local.yaml's worker start without `ray start --block` (the workers'
    log monitor outlives `ray down` for good)."""
    start = time.monotonic()
    lab.cluster.down()
    assert not ray_processes(lab.head)
    while left := {h.name: ray_processes(h) for h in lab.hosts.hosts if ray_processes(h)}:
        assert time.monotonic() - start < 150, left
        time.sleep(1)
    FIGURES["ray down -> no Ray process left on any host, s"] = round(time.monotonic() - start)
    assert all(h.first_pid() for h in lab.hosts.hosts)


def ray_processes(host) -> list[str]:
    """Ray's processes on `host`: its binaries and Python modules, and its workers' titles."""
    return [c for c in host.commands().values()
            if "site-packages/ray/" in c or c.startswith("ray::")]


# ------------------------------------------------------------------------------ measures
def scheduling_gaps(root: Path) -> dict:
    """Per host, the median time a trial slot stood between two trials: from a trial's end (the
    last part it wrote) to the start of the next trial on the same worker (that trial's end less
    its own time in the trainable, Tune's time_total_s): Tune choosing it, handing the reused
    worker its configuration, the trial reading its plan. Workers are named by host and
    process (Tune's result.json)."""
    trials = []
    for path in (root / "tune").glob("*/result.json"):
        last = json.loads(path.read_text().splitlines()[-1])
        end = max(p.stat().st_mtime for key in last["trial_keys"]
                  for p in (root / "parts").glob(f"{key}-f*.parquet"))
        trials.append({"host": last["hostname"], "worker": (last["hostname"], last["pid"]),
                       "start": end - last["time_total_s"], "end": end})
    slots = pd.DataFrame(trials).sort_values("start")
    slots["gap"] = slots["start"] - slots.groupby("worker")["end"].shift()
    return {h: round(float(g), 2) for h, g in slots.dropna().groupby("host")["gap"].median().items()}
