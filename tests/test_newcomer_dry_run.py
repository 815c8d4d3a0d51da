"""A dry run of an image grid on a CPU says how long its members will train (issue 48, "What
the newcomer tripped on" 5): it printed no time at all, so a newcomer could not tell a
minute's sweep from a night's."""

import io
import re

import pytest

from sweeps.api import Sweep
from sweeps.engine.run import estimate

GRID = {"dataset": "digits", "folds": 2, "axes": {"n_members": [2, 3], "epsilon": [0.2],
                                                  "ensemble": ["cnn", "mixed"]},
        "settings": {"epochs": 2, "n_train": 200, "combiners": ["logit_mean"]},
        "resources": {"num_cpus": 2}}


def dry_run(tmp_path, **options) -> str:
    printed = io.StringIO()
    Sweep.from_dict({**GRID, "storage": str(tmp_path), **options}).dry_run(printed)
    return printed.getvalue()


def test_the_estimate_is_each_trial_s_members_images_and_epochs_at_the_measured_rate(
        tmp_path, monkeypatch):
    """Per member, training image and epoch: 12 ms for cnn, 40 ms for mixed (as if measured);
    8 trials (2 splits x 2 M x 2 kinds) of 200 images and 2 epochs, 2 at a time: 104 s."""
    rates = {"cnn": 0.012, "mixed": 0.04}
    monkeypatch.setattr(estimate, "member_seconds", lambda config, threads: rates[config["ensemble"]])
    seconds = sum(rate * m * 200 * 2 for rate in rates.values() for m in (2, 3)) * 2 / 2
    line = next(l for l in dry_run(tmp_path).splitlines() if "time on this machine's CPU" in l)
    assert f"about {seconds / 60:.1f} min for the members' training (8 trials, 2 at a time;" in line
    assert "cnn 12 ms, mixed 40 ms" in line and re.search(r"load [\d.]+ on \d+ cores", line)
    assert not list(tmp_path.iterdir())                       # a dry run writes nothing


def test_the_rate_is_measured_on_a_short_trial_of_the_mix():
    config = Sweep.from_dict(GRID).trials()[0]
    seconds = estimate.member_seconds(config, threads=1)
    assert 0 < seconds < 1                         # per member and 8x8 image: far below a second
    assert estimate.training_images(config) == 200


@pytest.mark.parametrize("options", [{"resources": {"num_gpus": 1, "gpus_per_trial": 0.5}},
                                     {"search": "random", "num_samples": 2, "folds": 1}],
                         ids=["gpu", "random"])
def test_no_cpu_estimate_where_the_trials_do_not_run_a_grid_on_this_cpu(options):
    from sweeps.engine.sweep import timed_on_this_cpu
    sweep = Sweep.from_dict({**GRID, **options})
    assert not timed_on_this_cpu(sweep.trials(), sweep.options)


def test_a_small_folder_s_rate_is_measured_too(tmp_path, monkeypatch):
    """The tutorial's folder (3 classes of 40 images): its dry run ended in "error: config field
    'n_test' = 3 is not allowed", a setting the user never set -- the probe tested on one image
    of each class, below n_test's floor of 10; it tests on the trial's own test part now."""
    from tests.test_image_files import write_folder
    monkeypatch.setenv("SBFN_CACHE_DIR", str(tmp_path / "cache"))
    folder = write_folder(tmp_path / "shapes", {"circle": 40, "square": 40, "triangle": 40})
    sweep = Sweep.from_dict({"dataset": f"folder:{folder}", "folds": 1,
                             "axes": {"n_members": [2], "ensemble": ["cnn"]},
                             "settings": {"epochs": 1, "combiners": ["logit_mean"]}})
    assert 0 < estimate.member_seconds(sweep.trials()[0], threads=1) < 1
