"""cluster.yaml, cluster-local.yaml and the KubeRay example: Ray's own validation, the mistakes
it must catch, and the promises the files make (security, storage, install, MLflow)."""

import copy
import os
import pathlib
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
