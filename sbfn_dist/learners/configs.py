"""What the members train with, as plain settings: MLPConfig (tables), CNNConfig (images) and
PACK_SHARED, what the sets of one pack must share. No torch here: a sweep's driver keys its packs
with them (sbfn_dist.folds.pack_key) without loading it; the trainers are
sbfn_dist.learners.training."""

from dataclasses import dataclass

from sbfn_dist.settings.fields import defaults

_MLP = defaults("regression", "tabular")
_CNN = defaults("classification", "image")


# What the hypothesis sets of one pack must share: the visit order (seed, epochs, batch size,
# shuffle) and one kernel per layer (width, activation, dtype, device, loss); everything else
# of an MLPConfig may differ from set to set.
PACK_SHARED = ("width", "epochs", "batch_size", "activation", "seed", "device", "dtype",
               "geometry", "shuffle")


@dataclass(frozen=True)
class MLPConfig:
    """What train_mlp uses; defaults: the tabular-regression ones of sbfn_dist.settings.fields."""
    n_members: int = _MLP["n_members"]
    epsilon: float = _MLP["epsilon"]
    width: int = _MLP["width"]              # kappa: neurons per hidden layer
    init_scale: float = _MLP["init_scale"]  # chi
    lambda1: float = _MLP["lambda1"]        # L1 penalty, applied as lambda1 / N per step
    lr: float = _MLP["lr"]                  # eta_theta
    epochs: int = _MLP["epochs"]
    batch_size: int = _MLP["batch_size"]    # b = 1 is exactly Algorithm 1
    activation: str = _MLP["activation"]
    init_scheme: str = _MLP["init_scheme"]
    seed: int = 0
    device: str = "cpu"
    dtype: str = _MLP["dtype"]
    geometry: str = "squared"               # the loss: squared (regression), cross_entropy
    shuffle: bool = True


@dataclass(frozen=True)
class CNNConfig:
    """What train_cnn uses; defaults: the image-classification ones of sbfn_dist.settings.fields."""
    ensemble: str = _CNN["ensemble"]        # mixed | cnn | resnet | an architecture | a factory
                                            # path | a list of these, joined by ","
    n_members: int = _CNN["n_members"]
    epsilon: float = _CNN["epsilon"]
    epochs: int = _CNN["epochs"]
    batch_size: int = _CNN["batch_size"]
    optimizer: str = _CNN["optimizer"]
    lr: float = _CNN["lr"]
    momentum: float = _CNN["momentum"]      # SGD only
    weight_decay: float = _CNN["weight_decay"]
    seed: int = 0
    # How the step runs (sbfn_dist.learners.steps), as resolved for the device: trials pass theirs.
    precision: str = "fp32"                 # fp32 | bf16 (autocast, channels_last on CUDA)
    engine: str = "eager"                   # eager | cuda_graph
    compile: str = "off"                    # off | on: the members' forward through torch.compile


def mlp_settings(cfg, seed: int, geometry: str) -> MLPConfig:
    """The MLP members' settings of a trial's or an estimator's `cfg` (a TrialConfig), seeded by
    a fold's seed: the one place member settings are read for tables. Its device as configured
    ("auto" unresolved: which device that is, only torch on the machine that trains can say)."""
    return MLPConfig(n_members=cfg.n_members, epsilon=cfg.epsilon, width=cfg.width,
                     init_scale=cfg.init_scale, lambda1=cfg.lambda1, lr=cfg.lr,
                     epochs=cfg.epochs, batch_size=cfg.batch_size, activation=cfg.activation,
                     init_scheme=cfg.init_scheme, seed=seed, device=cfg.device, dtype=cfg.dtype,
                     geometry=geometry)
