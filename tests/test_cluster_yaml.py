"""cluster.yaml, cluster-local.yaml and the KubeRay example: Ray's own validation, the mistakes
it must catch, and the promises the files make (security, storage, install, MLflow)."""

import copy
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from sweeps.tools import check_cluster_yaml as checker
from sweeps.tools import mlflow_server

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = ["cluster.yaml", "cluster-local.yaml"]


def load(name):
    return yaml.safe_load((ROOT / name).read_text())


def commands(config, *keys):
    return [cmd for key in keys for cmd in config.get(key, [])]


def all_commands(config):
    keys = ["setup_commands", "head_setup_commands", "worker_setup_commands",
            "head_start_ray_commands", "worker_start_ray_commands", "initialization_commands"]
    per_type = [c for t in config.get("available_node_types", {}).values()
                for c in t.get("initialization_commands", [])]
    return commands(config, *keys) + per_type


# ---- Ray's own validation ---------------------------------------------------------------

@pytest.mark.parametrize("name", CONFIGS)
def test_shipped_configs_pass_rays_own_validation(name):
    config = load(name)
    validate_config(prepare_config(copy.deepcopy(config)))  # raises on any schema error
    summary, notes = checker.check(ROOT / name)
    assert summary.startswith("provider ")
    assert notes, "the shipped examples carry placeholders the check must point out"


def broken(mutate, name="cluster.yaml"):
    config = load(name)
    mutate(config)
    return config


def misspell_node_key(c):
    gpu = c["available_node_types"]["sbfn.gpu1"]
    gpu["min_worker"] = gpu.pop("min_workers")


def bad_head_type(c):
    c["head_node_type"] = "sbfn.headnode"


def misspell_top_key(c):
    c["idle_timeout_minute"] = c.pop("idle_timeout_minutes")


def min_above_global_max(c):
    c["available_node_types"]["sbfn.gpu1"]["min_workers"] = 9


@pytest.mark.parametrize("mutate, expected", [
    (misspell_node_key, "min_worker"),
    (misspell_top_key, "idle_timeout_minute"),
    (bad_head_type, "head_node_type"),
    (min_above_global_max, "max_workers"),
])
def test_ray_rejects_broken_copies(mutate, expected):
    config = broken(mutate)
    with pytest.raises(checker.ClusterConfigError, match=expected):
        checker.ray_validate(config)


def min_above_type_max(c):
    c["available_node_types"]["sbfn.cpu"].update(min_workers=3, max_workers=2)


def no_region(c):
    del c["provider"]["region"]


def zone_outside_region(c):
    c["provider"]["availability_zone"] = "us-east-1a,us-west-2b"


@pytest.mark.parametrize("mutate, expected", [
    (min_above_type_max, "min_workers 3 > max_workers 2"),
    (no_region, "provider.region is missing"),
    (zone_outside_region, "us-west-2b"),
])
def test_project_check_catches_what_ray_accepts_silently(mutate, expected):
    config = broken(mutate)
    checker.ray_validate(config)  # Ray lets these through ...
    with pytest.raises(checker.ClusterConfigError, match=expected):
        checker.project_checks(config)  # ... `ray up` or the autoscaler would not


def test_local_provider_without_head_ip_fails():
    config = broken(lambda c: c["provider"].pop("head_ip"), "cluster-local.yaml")
    with pytest.raises(checker.ClusterConfigError, match="head_ip"):
        checker.ray_validate(config)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "sweeps.tools.check_cluster_yaml", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_cli_reports_ok_placeholders_and_the_broken_key_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(broken(misspell_node_key)))
    ok, strict, failed = run_cli("cluster.yaml"), run_cli("--strict", "cluster.yaml"), run_cli(str(bad))
    assert ok.returncode == 0 and "cluster.yaml: OK" in ok.stdout
    assert "your-sbfn-bucket" in ok.stdout and "123456789012" in ok.stdout
    assert strict.returncode == 1       # and says so: it printed "OK" before issue 21
    assert "cluster.yaml: FAILED (--strict): 6 placeholder values left" in strict.stdout
    assert ": OK" not in strict.stdout and "your-sbfn-bucket" in strict.stdout
    assert failed.returncode == 1
    assert "FAILED" in failed.stdout and "available_node_types.sbfn.gpu1" in failed.stdout


# ---- the promises cluster.yaml makes -------------------------------------------------------

@pytest.mark.parametrize("name", CONFIGS)
def test_dashboard_and_mlflow_are_bound_to_loopback_only(name):
    config = load(name)
    cmds = all_commands(config)
    assert not [c for c in cmds if "0.0.0.0" in c]
    head_start = " ".join(config["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head_start
    assert "python -m sweeps.tools.mlflow_server start" in head_start
    assert mlflow_server.HOST == "127.0.0.1"
    assert "sqlite:///" in " ".join(mlflow_server.server_command(pathlib.Path("/s"), "s3://b/p", 5000, 2))


def test_aws_security_group_opens_no_extra_ports():
    provider = load("cluster.yaml")["provider"]
    assert "IpPermissions" not in provider["security_group"]  # Ray's defaults: SSH + intra-cluster


def test_results_and_mlflow_artifacts_go_to_s3():
    config = load("cluster.yaml")
    env = " ".join(config["setup_commands"])
    assert "export SBFN_RESULTS=s3://" in env
    assert "--artifact-root s3://" in " ".join(config["head_start_ray_commands"])


@pytest.mark.parametrize("name", CONFIGS)
def test_setup_installs_this_repo_with_the_pinned_set(name):
    config = load(name)
    (remote,) = [r for r, local in config["file_mounts"].items() if local == "."]
    installs = [c for c in config["setup_commands"] if "pip install" in c and "-e ." in c]
    assert installs, "no setup command installs the project"
    cmd = installs[0]
    assert f"cd {remote.replace('/home/ray/', '~/')}" in cmd  # installs the mounted tree
    assert "-c constraints.txt" in cmd and '"ray[default]==2.60.0"' in cmd


def test_image_matches_the_pinned_ray_and_python():
    import ray
    docker = load("cluster.yaml")["docker"]
    constraints = (ROOT / "constraints.txt").read_text().split()
    assert f"ray=={ray.__version__}" in constraints
    for image in [docker["image"], docker["head_image"]]:
        assert image.startswith(f"rayproject/ray:{ray.__version__}-py311-")


def test_every_worker_can_write_s3_and_gpu_types_are_current():
    types = load("cluster.yaml")["available_node_types"]
    for name, spec in types.items():
        assert "instance-profile/" in spec["node_config"]["IamInstanceProfile"]["Arn"], name
        assert not spec["node_config"]["InstanceType"].startswith(("p2.", "p3.")), name
    assert types["sbfn.head"]["resources"] == {"CPU": 0}


def test_worker_prefetch_loads_every_data_set(data_dir, monkeypatch):
    (cmd,) = load("cluster.yaml")["worker_setup_commands"]
    code = cmd.split('python -c "', 1)[1].split('"', 1)[0]
    monkeypatch.setenv("SBFN_DATA_DIR", data_dir)
    exec(code, {})  # the same loaders a trial calls; raises DataError if a name is wrong


@pytest.mark.slow
def test_mlflow_server_starts_once_on_loopback_and_stops(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tmp_path / "mlflow"
    pid = mlflow_server.start(store, str(tmp_path / "artifacts"), port=port, workers=1)
    try:
        assert pid and mlflow_server.healthy(port)
        assert mlflow_server.start(store, str(tmp_path / "artifacts"), port=port) is None
        assert (store / "mlflow.db").exists()
    finally:
        assert mlflow_server.stop(store)
    os.waitpid(pid, 0)
    assert not mlflow_server.healthy(port)


# ---- KubeRay ------------------------------------------------------------------------------

def test_kuberay_rayjob_is_a_v1_rayjob_for_this_ray():
    job = load("docs/kuberay-rayjob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    spec = job["spec"]
    assert spec["rayClusterSpec"]["rayVersion"] == "2.60.0"
    assert "--storage s3://" in spec["entrypoint"] and "--address auto" in spec["entrypoint"]
    groups = {g["groupName"]: g for g in spec["rayClusterSpec"]["workerGroupSpecs"]}
    for group in groups.values():
        assert group["minReplicas"] <= group["maxReplicas"]
    gpu_limits = groups["gpu"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert gpu_limits["nvidia.com/gpu"] == "1"


# ---- --connect: what it reads from the file, and its verdicts ------------------------------
# The machines themselves are checked on three test hosts (tests/test_cluster_hosts.py, p1-p7:
# `make test-cluster`); here, what needs no machine.

from sweeps.tools import cluster_preflight as pre  # noqa: E402


def test_connect_reads_the_machines_venv_shared_directory_and_every_port_from_the_file():
    plan = pre.plan_of(load("cluster-local.yaml"))
    assert (plan.head, plan.workers, plan.user) == ("192.0.2.10", ["192.0.2.11", "192.0.2.12"],
                                                    "YOUR_USER")
    assert (plan.venv, plan.maker, plan.shared) == ("~/sbfn-venv", "python3.11", "/mnt/sbfn")
    assert not plan.random_ports                    # no port left to chance: a firewall can
    assert set(plan.ports["192.0.2.10"]) == set(plan.ports["192.0.2.11"]) | {6379}


def test_the_walkthroughs_port_table_is_the_files_ports():
    """docs/cluster.md step 5 says which ports to open: exactly those the start commands fix."""
    text = (ROOT / "docs" / "cluster.md").read_text()
    table = text.split("### 5. The ports between the machines", 1)[1].split("\n\n", 3)[2]
    listed = set()
    for row in table.splitlines()[2:]:
        for field in row.split("|")[1].replace(",", " ").split():
            low, _, high = field.partition("-")
            listed |= {int(low), int(high)} if high else {int(low)}
    ports = {p for ports in pre.plan_of(load("cluster-local.yaml")).ports.values() for p in ports}
    assert listed == ports | {22}


def test_connect_on_a_file_with_placeholders_asks_no_machine():
    done = run_cli("--connect", "cluster-local.yaml")
    assert done.returncode == 1 and "FAILED (--strict): 4 placeholder values left" in done.stdout
    assert "--connect" not in done.stdout          # 192.0.2.x is never tried


@pytest.fixture
def key(tmp_path):
    if not shutil.which("ssh-keygen"):
        pytest.skip("no ssh-keygen (Debian's openssh-client) on this machine")

    def make(passphrase: str = "") -> pathlib.Path:
        path = tmp_path / f"key{len(list(tmp_path.iterdir()))}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(path)],
                       check=True)
        return path
    return make


def plan_with_key(path) -> pre.Plan:
    return pre.Plan("10.0.0.1", [], "me", str(path), None, None, None, {}, [])


def test_connect_names_what_keeps_ssh_from_the_key(key, tmp_path):
    assert pre.key_problem(plan_with_key(key())) is None
    said = {name: pre.key_problem(plan_with_key(path)).text for name, path in {
        "missing": tmp_path / "nope", "passphrase": key("secret"),
        "open": (lambda p: (p.chmod(0o644), p)[1])(key())}.items()}
    assert "does not exist: make a dedicated key without a passphrase: ssh-keygen" in \
        said["missing"]
    assert "has a passphrase: Ray's launcher and the head's autoscaler log in unattended" in \
        said["passphrase"] and "ray_bootstrap_key.pem" in said["passphrase"]
    assert "can be read by others" in said["open"] and "chmod 600" in said["open"]


@pytest.mark.parametrize("stderr, hop, says", [
    ("ssh: connect to host 10.0.0.1 port 22: Connection refused", "", "SSH refused at"),
    ("stdio forwarding failed\nkex_exchange_identification: Connection closed by remote host",
     "bash: connect: Connection refused", "SSH refused at"),
    ("Connection timed out during banner exchange", "", "no answer from"),
    ("me@10.0.0.2: Permission denied (publickey).", "ok", "does not take the key"),
])
def test_connect_says_why_ssh_failed_and_the_fix(stderr, hop, says):
    plan = pre.Plan("10.0.0.1", ["10.0.0.2"], "me", "/k", None, None, None, {}, [])
    assert says in pre.ssh_problem(plan, "10.0.0.2", stderr, hop)


def test_a_clock_read_within_the_round_trip_is_not_off():
    assert pre.clock_offset(100.5, 100.0, 101.0) == 0
    assert pre.clock_offset(104.0, 100.0, 101.0) == 3.0
    assert pre.clock_offset(97.0, 100.0, 101.0) == -3.0


def machines(facts: dict, probes: dict, maker=None) -> pre.Machines:
    """What the steps found on head 10.0.0.1 and workers .2 and .3 (a venv, /mnt/sbfn)."""
    plan = pre.Plan("10.0.0.1", ["10.0.0.2", "10.0.0.3"], "me", "/k", "/mnt/sbfn/venv", maker,
                    "/mnt/sbfn", {"10.0.0.1": {6379: "the GCS", 6380: "n"},
                                  "10.0.0.2": {6380: "n"}, "10.0.0.3": {6380: "n"}}, [])
    import ray
    good = {"python": "3.11.2", "ray": ray.__version__, "project": "ok",
            "tool": {"rsync", "ssh", "tmux"}, "shared": {"dir", "writable"}, "free_kb": "9999999"}
    seen = {"seen": {"home": False, "shared": True}, "busy": [], "reached": {}}
    return pre.Machines(plan, {a: {**good, **facts.get(a, {})} for a in plan.machines},
                        probes={a: {**seen, **probes.get(a, {})} for a in plan.machines})


def problems(found: pre.Machines) -> list[str]:
    return [f.line() for f in pre.verdicts(found) if f.fatal]


def test_connect_passes_machines_that_can_run_a_sweep():
    assert problems(machines({}, {})) == []


@pytest.mark.parametrize("facts, probes, maker, says", [
    ({"10.0.0.3": {"python": "3.11.7"}}, {}, None, "10.0.0.3: /mnt/sbfn/venv/bin/python is "
     "Python 3.11.7, the head's 3.11.2: Ray refuses a node"),
    ({"10.0.0.2": {"ray": "2.50.0"}}, {}, None, "has Ray 2.50.0, the laptop's `ray up`"),
    ({"10.0.0.2": {"ray_error": "ModuleNotFoundError: No module named 'ray'"}}, {}, None,
     "cannot import what a sweep needs (ModuleNotFoundError"),
    ({"10.0.0.1": {"free_kb": "1000"}}, {}, None, "/mnt/sbfn has 0.00 GB free"),
    ({}, {"10.0.0.2": {"seen": {"home": False, "shared": False}}}, None,
     "10.0.0.2: /mnt/sbfn is not shared: a file the head wrote there is not seen here"),
    ({}, {"10.0.0.2": {"seen": {"home": True, "shared": True}}}, "python3.11",
     "10.0.0.2: its home is the head's (NFS), and setup_commands install the venv there"),
    ({}, {"10.0.0.3": {"reached": {"10.0.0.1:6379": "timed out", "10.0.0.1:6380": "ok"}}}, None,
     "10.0.0.3: cannot reach 10.0.0.1 on TCP 6379 (timed out"),
    ({}, {"10.0.0.1": {"busy": [6379]}}, None, "10.0.0.1: port(s) 6379 already taken"),
    ({"10.0.0.2": {"tool": {"ssh"}}}, {}, None, "10.0.0.2: no rsync"),
])
def test_connect_names_each_problem_in_one_line_with_its_fix(facts, probes, maker, says):
    found = machines(facts, probes, maker)
    [line] = problems(found)
    assert line.strip().startswith(says) or says in line, line


# ---- docs/cluster.md's tables against what they describe ----------------------------------

WALKTHROUGH = (ROOT / "docs" / "cluster.md").read_text()


def _numbers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d+", text)}


def test_the_walkthroughs_port_table_and_firewall_lines_are_the_files_ports():
    """Step 5's table and its ufw lines open what cluster-local.yaml's start commands listen
    on (as the preflight reads them), and SSH: a port changed in the file and not the doc
    (or back) fails."""
    step = WALKTHROUGH.split("### 5. The ports between the machines")[1].split("\n### ")[0]
    table = set().union(*(_numbers(row.split("|")[1])
                          for row in re.findall(r"^\| [\d, -]+ \|.*$", step, re.M)))
    ufw = set().union(*(_numbers(line) for line in re.findall(r"any port (\S+)", step)))
    plan = pre.plan_of(load("cluster-local.yaml"))
    listened = {22} | {port for ports in plan.ports.values() for port in ports}
    assert table == listened, "docs/cluster.md step 5's table"
    assert ufw == listened, "docs/cluster.md step 5's ufw lines"


def test_the_walkthroughs_scenario_table_names_each_host_test_once():
    """'What a sweep survives there' lists a scenario letter for each sweep test of
    tests/test_cluster_hosts.py (test_<letter>_...), and no letter without its test."""
    section = WALKTHROUGH.split("### What a sweep survives there")[1].split("\n## ")[0]
    listed = re.findall(r"\| ([a-z]) \|$", section, re.M)
    tests = re.findall(r"^def test_([a-z])_", (ROOT / "tests" / "test_cluster_hosts.py")
                       .read_text(), re.M)
    assert sorted(listed) == sorted(set(listed)), "a scenario listed twice"
    assert sorted(listed) == sorted(tests)


# ---- what Ray accepts and `ray up` or the cluster would not (issue 48) ----------------------

def filled(tmp_path, mutate=lambda c: None) -> pathlib.Path:
    """cluster-local.yaml with its placeholders filled in as a user would (addresses, user, a
    key that exists), changed by `mutate`, written to a file: what a user checks before
    `ray up`."""
    key = tmp_path / "id_ed25519"
    key.write_text("a key\n")
    key.chmod(0o600)
    text = (ROOT / "cluster-local.yaml").read_text().replace("192.0.2.", "10.0.0.")
    config = yaml.safe_load(text.replace("YOUR_USER", "me"))
    config["auth"]["ssh_private_key"] = str(key)
    mutate(config)
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(config))
    assert not checker.placeholders(config)
    return path


def head_as_a_worker(c):
    c["provider"]["worker_ips"][0] = c["provider"]["head_ip"]


def a_worker_twice(c):
    c["provider"]["worker_ips"][1] = c["provider"]["worker_ips"][0]


@pytest.mark.parametrize("mutate, says", [
    (lambda c: c["auth"].pop("ssh_user"), "auth.ssh_user is missing: `ray up` logs in to every "
                                          "machine as this user"),
    (head_as_a_worker, "provider.worker_ips lists the head 10.0.0.10 (head_ip): its worker "
                       "start command would run `ray stop` on the head"),
    (a_worker_twice, "provider.worker_ips lists 10.0.0.11 twice: one machine is one worker"),
    (lambda c: c["provider"].update(head_ip="not an ip!"),
     "provider.head_ip 'not an ip!' is neither an IP address nor a host name"),
    (lambda c: c["provider"]["worker_ips"].__setitem__(1, "10.0.0.300"),
     "provider.worker_ips[1] '10.0.0.300' is neither an IP address nor a host name"),
    (lambda c: c["auth"].update(ssh_private_key="/nowhere/id_ed25519"),
     "auth.ssh_private_key: the key /nowhere/id_ed25519 does not exist: make a dedicated key"),
], ids=["no ssh_user", "the head as a worker", "a worker twice", "a head that is no address",
        "a worker that is no address", "no key file"])
def test_a_cluster_file_ray_accepts_but_its_machines_would_not_is_refused(mutate, says,
                                                                          tmp_path, capsys):
    """Each said OK before: `ray up` then failed on the missing user, or the cluster lost its
    head to its own worker start. (main() in this process: a CLI run imports Ray, ~4 s.)"""
    assert checker.main([str(filled(tmp_path))]) == 0       # the file as filled in passes
    assert checker.main([str(filled(tmp_path, mutate))]) == 1
    out = capsys.readouterr().out
    assert f"mine.yaml: FAILED: {says}" in out, out


def test_the_aws_file_without_its_ssh_user_is_refused():
    config = broken(lambda c: c["auth"].pop("ssh_user"))
    with pytest.raises(checker.ClusterConfigError, match="auth.ssh_user is missing"):
        checker.project_checks(config)


@pytest.mark.parametrize("content, says", [
    (b"# caf\xe9\n", "not UTF-8 text (byte 0xe9 at offset 5: invalid continuation byte; "
                     "latin-1 or another 8-bit encoding?): save it as UTF-8"),
    ("cluster_name: x\n".encode("utf-16-le"), "holds the character U+0000 at offset 1, which "
                                               "YAML does not allow (UTF-16 without its "
                                               "byte-order mark?)"),
    (None, "a folder, not a file; pass the path of a cluster YAML"),
    (b"provider:\n\ttype: local\n", "line 2, column 1: not valid YAML: a tab in the indentation"),
], ids=["latin-1", "UTF-16 without its mark", "a folder", "a tab"])
def test_a_cluster_file_that_is_no_text_or_a_folder_fails_in_one_line(content, says, tmp_path,
                                                                     capsys):
    path = tmp_path / "bad.yaml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content + (ROOT / "cluster-local.yaml").read_bytes())
    assert checker.main([str(path)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{path}: FAILED: ") and says in line, line


def test_a_utf16_cluster_file_with_its_byte_order_mark_is_read(tmp_path):
    """What a Windows editor's 'Unicode' writes: YAML's own encodings include it."""
    path = tmp_path / "windows.yaml"
    path.write_bytes((ROOT / "cluster-local.yaml").read_text().encode("utf-16"))
    summary, notes = checker.check(path)
    assert summary.startswith("provider local, head 192.0.2.10") and notes


def test_connect_names_a_missing_key_once_in_its_own_words(tmp_path, capsys):
    """The offline check refuses a missing key; with --connect the preflight asks it first,
    among its findings (no machine asked), not the offline line that would stop before it
    (make test-cluster's p4 met the offline line)."""
    text = (ROOT / "cluster-local.yaml").read_text().replace("YOUR_USER", "lab") \
        .replace("192.0.2.", "127.0.9.").replace("~/.ssh/id_ed25519", str(tmp_path / "gone"))
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    assert checker.main(["--connect", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("does not exist") == 1 and ": FAILED:" not in out
    assert "no machine asked" in out
    assert checker.main([str(path)]) == 1
    assert ": FAILED: auth.ssh_private_key: the key" in capsys.readouterr().out
