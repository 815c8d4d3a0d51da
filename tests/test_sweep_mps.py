"""Trials sharing a GPU under CUDA MPS (sweeps/engine/run/mps.py): where it applies, its refusals
before Ray, and -- on a machine with a CUDA GPU and NVIDIA's daemon -- a sweep whose trials are
the clients of the daemon it started."""

import shutil
import subprocess

import pytest
import torch

from sweeps.engine.run.mps import CONTROL, PIPE, MpsError, stop_for_this_process, wanted
from tests.sweep_helpers import results, run_tiny

pytestmark = [pytest.mark.own_ray, pytest.mark.timeout(600)]


def test_mps_applies_where_trials_share_a_gpu_of_a_ray_the_sweep_starts(monkeypatch):
    monkeypatch.delenv(PIPE, raising=False)
    monkeypatch.setenv("PATH", "")                    # no daemon on this PATH
    assert not wanted("off", 1, 0.25, None)
    assert not wanted("auto", 1, 0.25, None)          # auto: where the daemon exists
    assert not wanted("auto", 1, 1.0, None)           # a GPU per trial: nothing to share
    assert not wanted("auto", 1, 0.25, "10.0.0.5:6379")
    with pytest.raises(MpsError, match="no nvidia-cuda-mps-control on this machine's PATH"):
        wanted("on", 1, 0.25, None)
    with pytest.raises(MpsError, match="no trials share a GPU"):
        wanted("on", 0, 0.0, None)
    with pytest.raises(MpsError, match="a cluster's nodes run MPS from their own set-up"):
        wanted("on", 1, 0.25, "10.0.0.5:6379")
    monkeypatch.setenv(PIPE, "/run/their-mps")        # the user's own daemon serves the trials
    assert not wanted("auto", 1, 0.25, None)


def test_mps_on_where_it_cannot_run_is_refused_before_ray(tmp_path, monkeypatch, capsys):
    from sweeps.regression import main
    monkeypatch.setenv("PATH", "")
    code = main(["--dataset", "diabetes", "--grid", "demo", "--smoke", "--num-gpus", "1",
                 "--mps", "on", "--storage", str(tmp_path), "--no-mlflow"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --mps on: no {CONTROL} on this machine's PATH (it comes with "
                   "NVIDIA's driver); leave out --mps (auto) or pass --mps off"]
    assert not any(tmp_path.iterdir())                # nothing started, nothing written


@pytest.mark.skipif(not (torch.cuda.is_available() and shutil.which(CONTROL)),
                    reason="needs a CUDA GPU and NVIDIA's MPS control daemon")
def test_trials_sharing_a_gpu_are_the_clients_of_the_sweeps_mps_daemon(tmp_path, monkeypatch):
    import ray
    monkeypatch.delenv(PIPE, raising=False)
    try:
        outcome = run_tiny(tmp_path, "--members", "2", "3", "--no-mlflow", "--competitors",
                           "none", "--num-gpus", "1", "--mps", "on", "--set", "device=cuda",
                           name="mps")
        assert set(results(outcome.root)["device"]) == {"cuda"}
        # a server runs only once a client connected: the trials, the daemon's only clients
        servers = subprocess.run([CONTROL], input="get_server_list\n", text=True,
                                 capture_output=True, timeout=10).stdout.split()
        assert servers and all(s.isdigit() for s in servers)
    finally:
        ray.shutdown()
        stop_for_this_process()
