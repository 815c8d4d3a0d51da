"""Which configurations of a grid train together (`--pack auto|on|off`): one Ray trial per pack.

Tabular configurations that agree on `sbfn_dist.folds.pack_key` (same data and folds, same
member width, epochs, batch size, activation, dtype) can train their members as one stack per
fold: `sbfn_dist.experiment.run_trials`, equal to training them one after another up to
floating-point rounding. `auto` splits each such group into as many packs as there are trial
slots (so every core works), and into more where a pack would hold more than
PACK_MAX_PARAMETERS member weights, dealing the configurations out largest first to the
lightest pack.

Image configurations that differ only in epsilon (the same kind, M and split) can train as one
CNN stack too, but only with `on`: on an H100 a pack of the grid's five epsilons trained 14%
(SimpleCNN) and 30% (mixed) fewer member-images per second than one set alone, because the
grouped convolutions get slower per group as groups are added (docs/benchmarks.md §9). With
`auto` an image trial is one configuration, as are competitor trials (docs/sweeps.md "Packing").
"""

import math

from sbfn_dist.folds import pack_key
from sbfn_dist.settings.config import TrialConfig


PACK_MODES = ("auto", "on", "off")
# Hidden-to-hidden weights of one pack, at most: 500k float32 weights are 2 MB, the L2 cache of
# one core here; a stack that outgrows it trains slower per member (docs/benchmarks.md §8).
PACK_MAX_PARAMETERS = 500_000


def packs(configs: list[TrialConfig], mode: str, slots: int) -> list[list[int]]:
    """Indices of `configs` per Ray trial; "off": one configuration per trial; "on": image
    configurations pack as well."""
    if mode == "off":
        return [[i] for i in range(len(configs))]
    groups: dict = {}
    for i, config in enumerate(configs):
        key = pack_key(TrialConfig.trusted(config))
        if key is None or (key[0] == "image" and mode != "on"):
            key = ("alone", i)
        groups.setdefault(key, []).append(i)
    out = []
    for key, members in groups.items():
        out += [members] if key[0] in ("alone", "image") else _deal(members, configs, slots)
    return out


def _deal(indices: list[int], configs: list[TrialConfig], slots: int) -> list[list[int]]:
    """Split one packable group into balanced packs: enough to fill `slots`, and none above
    PACK_MAX_PARAMETERS (a single configuration above it is a pack of its own)."""
    weight = {i: member_weights(configs[i]) for i in indices}
    n = max(min(len(indices), slots), math.ceil(sum(weight.values()) / PACK_MAX_PARAMETERS))
    bins, load = [[] for _ in range(min(n, len(indices)))], [0] * min(n, len(indices))
    for i in sorted(indices, key=lambda i: -weight[i]):
        lightest = load.index(min(load))
        bins[lightest].append(i)
        load[lightest] += weight[i]
    return [sorted(b) for b in bins]


def member_weights(config: TrialConfig) -> int:
    """The hidden-to-hidden weights of a configuration's members, M * kappa^2: most of a member
    stack's memory and time at the paper's widths (0: a competitor trains no members)."""
    return config.get("n_members", 0) * config.get("width", 0) ** 2
