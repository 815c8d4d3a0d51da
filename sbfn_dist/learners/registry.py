"""Member architectures by name, the paper's ensemble kinds (Table "ensemble configs"), and the
Ensemble that holds the members of any mix of them.

"mixed" is the heterogeneous ensemble: architectures alternate cyclically over the members
(simple_cnn, resnet_tiny1, resnet_tiny2, simple_cnn, ...). "cnn" and "resnet" are the
homogeneous ones (all SimpleCNN; all ResNetTiny2, the paper's default ResNet); an architecture
name gives a homogeneous ensemble of that architecture. Beyond the paper, a member may be your
own network, a factory named by its import path (package.module:build, learners/factories.py),
and an ensemble may be a list of architectures and factories, cycled over the members as
mixed's are (stored joined by MEMBER_SEPARATOR). Members of one architecture share one stack:
a built-in's MemberStack (grouped layers), a factory's GenericStack (vmap / functional_call).
"""

import functools

import torch
from torch import nn

from sbfn_dist.errors import ConfigError, DataError
from sbfn_dist.settings.fields import (ENSEMBLE_KINDS, HETEROGENEOUS, HOMOGENEOUS,
                                       MEMBER_SEPARATOR, Members, member_refusal, refusal)
from sbfn_dist.learners.cnn import (ARCHITECTURES, MIN_SIZE, STRATEGIES, MemberStack,
                                    build_member, check_images, member_seed)
from sbfn_dist.learners.factories import GenericStack, check_factory, factory_name

__all__ = ["ARCHITECTURES", "ENSEMBLE_KINDS", "STRATEGIES", "Ensemble", "GenericStack",
           "MemberStack", "build_ensemble", "build_member", "check_ensemble", "ensemble_archs"]


def ensemble_archs(kind, n_members: int) -> list:
    """archs[j] = member j's architecture: the kind's architectures cycled over the members."""
    if isinstance(n_members, bool) or not isinstance(n_members, int) or n_members < 1:
        raise ConfigError("n_members", n_members, "a positive integer")
    cycle = kind_archs(kind)
    return [cycle[j % len(cycle)] for j in range(n_members)]


def kind_archs(kind) -> list:
    """The architectures an ensemble kind cycles over: the built-ins (mixed), one (a homogeneous
    kind, an architecture, a factory), or a list's own items (a list, or them joined)."""
    if callable(kind):
        return [kind]
    if isinstance(kind, (list, tuple)):
        items = list(kind)
    elif kind == HETEROGENEOUS or kind in HOMOGENEOUS:
        return list(ARCHITECTURES) if kind == HETEROGENEOUS else [HOMOGENEOUS[kind]]
    else:
        items = str(kind).split(MEMBER_SEPARATOR)
    names = [a for a in items if not callable(a)]
    if not items or any(map(member_refusal, names)):
        raise ConfigError("ensemble", kind,
                          refusal(Members(), MEMBER_SEPARATOR.join(names), None))
    return items


def check_ensemble(kind, in_channels: int, n_classes: int, size, device) -> None:
    """Refuse, in one line, a factory of the kind that cannot give members for images
    (in_channels, *size) of n_classes classes on `device` (checked on a dummy batch), and
    images too small for the built-in architectures."""
    require_member_size(kind, tuple(size))
    for arch in dict.fromkeys(kind_archs(kind)):
        if arch not in ARCHITECTURES:
            why = _checked_factory(arch, in_channels, n_classes, tuple(size), str(device))
            if why:
                raise ConfigError("ensemble", factory_name(arch), why)


def require_member_size(kind, size: tuple) -> None:
    """Images large enough for the kind's built-in architectures (two stride-2 reductions:
    MIN_SIZE), refused as a sweep is planned: 3x3 images were refused inside each trial ("1
    configurations with results, 1 failed", issue 48). Your own networks decide for
    themselves (check_factory)."""
    built_in = [arch for arch in dict.fromkeys(kind_archs(kind)) if arch in ARCHITECTURES]
    if built_in and min(size) < MIN_SIZE:
        raise DataError(f"the images are {'x'.join(map(str, size))} pixels, smaller than the "
                        f"{MIN_SIZE}x{MIN_SIZE} the {', '.join(built_in)} members need (two "
                        "stride-2 reductions): use larger images (a folder: takes "
                        f"image_size=N, N >= {MIN_SIZE}), or members of your own "
                        "(ensemble=package.module:build)")


@functools.lru_cache(maxsize=64)
def _checked_factory(arch, in_channels: int, n_classes: int, size: tuple, device: str) -> str:
    """check_factory once per process and shape: a sweep's planning checks every configuration
    of a factory, and the check builds three members and runs a training step."""
    return check_factory(arch, in_channels, n_classes, size, torch.device(device))


def build_ensemble(kind, n_members: int, in_channels: int, n_classes: int, seed: int,
                   strategy: str = "auto", size=None) -> "Ensemble":
    """The ensemble model: forward (B, in_channels, H, W) -> (B, n_members, n_classes).

    strategy: how each member stack computes ("auto", "grouped", "per_member"); see cnn.py.
    size: the images' (H, W), which a factory's lazy modules take their shapes from.
    """
    return Ensemble(ensemble_archs(kind, n_members), in_channels, n_classes,
                    [member_seed(seed, j) for j in range(n_members)], strategy, size)


def member_stack(arch, in_channels: int, n_classes: int, seeds: list, strategy: str, size):
    """The stack of the members of one architecture: a built-in's, or a factory's."""
    if arch in ARCHITECTURES:
        return MemberStack(arch, in_channels, n_classes, len(seeds), seeds, strategy)
    return GenericStack(arch, in_channels, n_classes, seeds, strategy, size)


class Ensemble(nn.Module):
    """A (possibly heterogeneous) ensemble: archs[j] is member j's architecture (a built-in
    name, a factory path or a factory function), seeds[j] its seed; size, the images' (H, W),
    where a factory's network has lazy modules (GenericStack).

    Members of one architecture share a stack. A packed ensemble (several hypothesis sets
    side by side, sbfn_dist.learners.training.train_cnn_pack) is one Ensemble too; `subset` takes
    one set back out as an ensemble of its own.
    forward: (B, C_in, H, W) -> (B, M, n_classes) in member order j = 0..M-1.
    """

    def __init__(self, archs: list, in_channels: int, n_classes: int, seeds: list[int],
                 strategy: str = "auto", size=None):
        super().__init__()
        if not archs:
            raise ConfigError("archs", archs, "at least one member architecture")
        if len(seeds) != len(archs):
            raise ConfigError("seeds", seeds, f"one seed per member ({len(archs)} members)")
        self.archs, self.seeds, self.in_channels = list(archs), list(seeds), in_channels
        self.n_classes, self.strategy = n_classes, strategy
        self.size = tuple(size) if size is not None else None
        groups = {a: [j for j, b in enumerate(archs) if b == a] for a in archs}
        self.member_ids = groups     # arch -> the member indices its stack holds, in order
        # a module name holds no '.': a factory's stack is named by its place
        self.keys = {a: a if a in ARCHITECTURES else f"factory{k}" for k, a in enumerate(groups)}
        self.stacks = nn.ModuleDict({
            self.keys[a]: member_stack(a, in_channels, n_classes, [seeds[j] for j in ids],
                                       strategy, self.size)
            for a, ids in groups.items()})
        order = torch.tensor([j for ids in groups.values() for j in ids])
        # stacks' outputs concatenated are in `order`; this gather puts them back in j order
        self.register_buffer("gather", torch.argsort(order), persistent=False)

    @property
    def n_members(self) -> int:
        return len(self.archs)

    def forward(self, x):
        check_images(x, self.in_channels)
        out = torch.cat([stack(x) for stack in self.stacks.values()], dim=1)
        return out if len(self.stacks) == 1 else out[:, self.gather]

    def stack_of(self, arch):
        return self.stacks[self.keys[arch]]

    def member(self, j: int) -> nn.Module:
        arch = self.archs[j]
        return self.stack_of(arch).member(self.member_ids[arch].index(j))

    def subset(self, start: int, stop: int) -> "Ensemble":
        """Members [start, stop) as an ensemble of their own: their current weights and
        BatchNorm statistics, on this ensemble's device, dtype and memory format."""
        ref = next(self.parameters())
        part = Ensemble(self.archs[start:stop], self.in_channels, self.n_classes,
                        self.seeds[start:stop], self.strategy, self.size)
        part = part.to(device=ref.device, dtype=ref.dtype).train(self.training)
        for j in range(start, stop):
            arch = self.archs[j]
            part.stack_of(arch).load_member(part.member_ids[arch].index(j - start),
                                            self.member(j))
        return _like(part, self)


def _like(model: nn.Module, ref: nn.Module) -> nn.Module:
    """`model` in the memory format of ref's first convolution weight (channels_last stays)."""
    conv = next((p for p in ref.parameters() if p.ndim == 4), None)
    if conv is not None and conv.is_contiguous(memory_format=torch.channels_last):
        return model.to(memory_format=torch.channels_last)
    return model
