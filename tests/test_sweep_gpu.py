"""Fractional GPUs: trials at 0.25 GPU share one (logical) GPU four at a time."""

import pytest

from tests.sweep_helpers import results, run_tiny

pytestmark = [pytest.mark.own_ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module", autouse=True)
def ray_with_a_logical_gpu():
    import ray
    ray.init(address="local", num_cpus=4, num_gpus=1, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_four_quarter_gpu_trials_run_at_the_same_time(tmp_path):
    # Each trial's plug-in member waits until four workers run trials: four at once, at any
    # pace (it was 40 epochs, to outlast the workers' start: ~12 CPU-s of training).
    outcome = run_tiny(tmp_path, "--members", "2", "3", "--no-mlflow", "--competitors", "none",
                       "--num-gpus", "1", "--gpus-per-trial", "0.25", "--set",
                       "plugin_members=tests.test_sweep_scheduling.WaitsForFourWorkers",
                       name="gpu")
    assert outcome.max_running == 4        # 4 trials (5 configurations): 1 GPU / 0.25 at once
    assert results(outcome.root)["trial_id"].nunique() == 5
