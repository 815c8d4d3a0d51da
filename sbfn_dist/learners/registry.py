"""Names of the deep base learners and of the paper's ensemble kinds (Table "ensemble configs").

"mixed" is the heterogeneous ensemble: architectures alternate cyclically over the members
(simple_cnn, resnet_tiny1, resnet_tiny2, simple_cnn, ...). "cnn" and "resnet" are the
homogeneous ones (all SimpleCNN; all ResNetTiny2, the paper's default ResNet); an architecture
name gives a homogeneous ensemble of that architecture.
"""

from sbfn_dist.errors import ConfigError
from sbfn_dist.settings.fields import ENSEMBLE_KINDS, HETEROGENEOUS, HOMOGENEOUS
from sbfn_dist.learners.cnn import (ARCHITECTURES, STRATEGIES, Ensemble, MemberStack,
                                    build_member, member_seed)

__all__ = ["ARCHITECTURES", "ENSEMBLE_KINDS", "STRATEGIES", "Ensemble", "MemberStack",
           "build_ensemble", "build_member", "ensemble_archs"]


def ensemble_archs(kind: str, n_members: int) -> list[str]:
    """archs[j] = member j's architecture for an ensemble kind."""
    if isinstance(n_members, bool) or not isinstance(n_members, int) or n_members < 1:
        raise ConfigError("n_members", n_members, "a positive integer")
    if kind == HETEROGENEOUS:
        return [ARCHITECTURES[j % len(ARCHITECTURES)] for j in range(n_members)]
    arch = HOMOGENEOUS.get(kind, kind)
    if arch not in ARCHITECTURES:
        raise ConfigError("ensemble", kind, f"one of {ENSEMBLE_KINDS}")
    return [arch] * n_members


def build_ensemble(kind: str, n_members: int, in_channels: int, n_classes: int, seed: int,
                   strategy: str = "auto") -> Ensemble:
    """The ensemble model: forward (B, in_channels, H, W) -> (B, n_members, n_classes).

    strategy: how each MemberStack computes ("auto", "grouped", "per_member"); see cnn.py.
    """
    return Ensemble(ensemble_archs(kind, n_members), in_channels, n_classes,
                    [member_seed(seed, j) for j in range(n_members)], strategy)
