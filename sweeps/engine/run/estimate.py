"""How long an image sweep's members take to train on this machine's CPU, measured for its dry
run: `--dry-run` printed no time for an image grid, so a newcomer could not tell a minute's
sweep from a night's before starting it.

    per mix  one short trial of its smallest M (run_trial: the configuration itself, one epoch,
             PROBE_IMAGES training images, a combiner that fits nothing), on as many threads as a
             trial gets: its members' training seconds per member, training image and epoch
             (M members cost M times one: on a CPU a stack computes per member at 28x28 and
             larger, docs/design.md "CNN members are member stacks")
    a trial  that times its M, its training images and its epochs
    a sweep  the trials' sum over the trials that run at once (planning.trial_slots)

What comes on top, and the line says so: Ray's start, a worker's imports, the combiners' fits
and the evaluation. The dry run imports this only for such a sweep (torch).
"""

import json
import os

import torch

from sbfn_dist.data.images import smallest_part
from sbfn_dist.experiment import run_trial
from sbfn_dist.folds import load_data, make_parts
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.fields import field
from sweeps.engine.plan.grid_trials import setting_text

# Four batches of the default 128: the first step's set-up (oneDNN's kernels, channels_last
# weights) is then a quarter of the time, not a half. The CIFAR-10 grid's three kinds at M = 2:
# 35 s of its dry run (90 s in all) on 2 cores at load 8.5, 2026-12-02.
PROBE_IMAGES = 512


def estimate_line(configs: list[dict], threads: int, slots: int) -> str:
    """The plan's line: the members' training time of the sweep on this CPU, per mix measured."""
    per_image = {mix: member_seconds(probe, threads) for mix, probe in probes(configs).items()}
    total = sum(trial_seconds(c, per_image[c["ensemble"]]) for c in configs)
    measured = ", ".join(f"{setting_text('ensemble', mix)} {1e3 * s:.2g} ms"
                         for mix, s in per_image.items())
    return (f"  time on this machine's CPU: about {_minutes(total / slots)} for the members' "
            f"training ({len(configs)} trials, {slots} at a time; measured now, {_load()}, per "
            f"member, training image and epoch: {measured}); Ray's start, the combiners and the "
            "evaluation come on top")


def probes(configs: list[dict]) -> dict:
    """mix -> the configuration of it with the smallest M (the quickest to time)."""
    out: dict = {}
    for c in configs:
        if c["ensemble"] not in out or c["n_members"] < out[c["ensemble"]]["n_members"]:
            out[c["ensemble"]] = c
    return out


def member_seconds(config: TrialConfig, threads: int) -> float:
    """Seconds one member takes per training image and epoch: the members of a one-epoch trial
    of `config` on PROBE_IMAGES of its training images (fewer where it has fewer), tested on as
    few images as hold every class (CIFAR-10's 10,000 took minutes to evaluate), timed on
    `threads` threads as its trial would be."""
    images = min(PROBE_IMAGES, training_images(config))
    on_cpu = {"device": "cpu"} if "device" in config else {}     # as a trial without a GPU
    tested = smallest_part(load_data(TrialConfig.trusted(config)))
    if tested < field("n_test").check.inner.lo:     # a small set (3 classes: 3): n_test's
        tested = config.get("n_test")               # floor refused it; its own test part then
    probe = TrialConfig.from_dict({**config, **on_cpu, "epochs": 1, "n_train": images,
                                   "n_test": tested, "fold": 0, "combiners": ["logit_mean"]},
                                  optional=set(config))      # a new config: checked here
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        record = run_trial(probe)[0]
    finally:
        torch.set_num_threads(before)
    return record["members_train_seconds"] / (config["n_members"] * images)


def trial_seconds(config: dict, per_image: float) -> float:
    """A trial's members' training: seconds per member, image and epoch times its M, its
    training images and its epochs."""
    return per_image * config["n_members"] * training_images(config) * config["epochs"]


def training_images(config: dict) -> int:
    """The images a configuration's members train on (its first split's training part), by the
    settings the parts' sizes depend on: a grid's configurations share them, and a data set is
    loaded once for all of them."""
    key = json.dumps({k: v for k, v in config.items() if k not in PER_TRIAL}, sort_keys=True,
                     default=str)
    if key not in _SIZES:
        cfg = TrialConfig.trusted(config)
        _SIZES[key] = len(make_parts(cfg, load_data(cfg))[0].train)
    return _SIZES[key]


# What differs between an image grid's configurations but not their parts' sizes (a split's
# seed and index choose which images, not how many).
PER_TRIAL = ("trial_id", "n_members", "epsilon", "ensemble", "extra", "fold", "seed")
_SIZES: dict = {}           # training_images' answers, by the settings they depend on


def _load() -> str:
    """This machine's load as the measurement met it: another job's work slows it."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def _minutes(seconds: float) -> str:
    """Seconds as a person reads a duration: 40 s, 12.5 min, 7.2 h, 39 days."""
    for unit, size, upto in (("s", 1, 90), ("min", 60, 90 * 60), ("h", 3600, 48 * 3600)):
        if seconds < upto:
            return f"{seconds / size:.0f} s" if unit == "s" else f"{seconds / size:.1f} {unit}"
    return f"{seconds / 86400:.0f} days"
