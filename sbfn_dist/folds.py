"""A trial's data, its folds and which trials may train as one pack -- what a sweep's driver
plans and checks before Ray starts, without torch (a tabular trial's; images load it):

    load_data(cfg)           the data set a config names (tables or images)
    make_parts(cfg, data)    its folds' (train, test) parts, each checked for what is fitted on it
    check_data(configs)      what run_trial would refuse about the data, found without training
    pack_key(cfg)            trials with one key train their members as one stack per fold
    resolved(cfg)            the config with what "auto" chose on this machine

The fold loop that trains on them is sbfn_dist.experiment.
"""

from sbfn_dist.data import checks
from sbfn_dist.data import splits as tabular_splits
from sbfn_dist.learners.configs import PACK_SHARED, mlp_settings
from sbfn_dist.runtime import fold_seed, resolve_device
from sbfn_dist.settings.config import TrialConfig
from sbfn_dist.settings.tasks import TASKS


# What the trials of a pack share beside their members' PACK_SHARED settings: everything their
# folds' parts depend on, so that one fold preparation serves them all.
FOLD_FIELDS = ("dataset", "task", "target", "data_dir", "include_random_vars", "n_samples",
               "split", "folds", "fold", "test_fraction", "seed", "val_fraction", "device")


# What the image trials of a pack may differ in: their epsilon (each set of the stack keeps its
# own delta); everything else (data, split, kind, M, optimizer, heads) is the same.
IMAGE_PACK_FREE = ("epsilon", "trial_id")


def pack_key(cfg: TrialConfig):
    """Trials with the same key may train their members as one pack; None: never packed
    (a competitor-only trial, or one of the plug-ins alone, trains no members)."""
    if not cfg.combiners or not cfg.n_members:
        return None
    if cfg.modality == "image":
        return ("image", *sorted((k, repr(v)) for k, v in cfg.to_dict().items()
                                 if k not in IMAGE_PACK_FREE))
    # The device as configured: the trials of one sweep resolve "auto" alike on a machine.
    mcfg = mlp_settings(cfg, fold_seed(cfg.seed, 0), TASKS[cfg.task].geometry)
    return (tuple(cfg.get(f) for f in FOLD_FIELDS), cfg.uses_validation(),
            tuple(getattr(mcfg, f) for f in PACK_SHARED))


def resolved(cfg: TrialConfig) -> TrialConfig:
    """The config (checked where it was made: trusted here) with what "auto" chose on this
    machine: records carry the device, precision, step engine and compilation used, not
    "auto"."""
    if not cfg.has("device"):
        return cfg
    from sbfn_dist.learners.steps import (resolve_compile, resolve_engine,   # torch: images
                                          resolve_precision)
    device = resolve_device(cfg.device)
    chosen = {"device": device}
    if cfg.has("precision"):
        chosen["precision"] = resolve_precision(cfg.precision, device)
    if cfg.has("step_engine"):
        chosen["step_engine"] = resolve_engine(cfg.step_engine, device)
    if cfg.has("step_compile"):
        chosen["step_compile"] = resolve_compile(cfg.step_compile, device)
    return cfg.with_values(**chosen)


# What load_data reads, by modality: two configs that agree on these load the same data.
LOAD_FIELDS = {"tabular": ("dataset", "task", "target", "data_dir", "include_random_vars",
                           "n_samples", "seed"),
               "image": ("dataset", "data_dir", "image_size")}


def load_data(cfg: TrialConfig):
    if cfg.modality == "image":
        from sbfn_dist.data.images import load_images
        return load_images(cfg.dataset, cfg.get("data_dir"), cfg.get("image_size"))
    from sbfn_dist.data.tabular import load_tabular
    return load_tabular(cfg.dataset, data_dir=cfg.get("data_dir"), target=cfg.get("target"),
                        include_random_vars=cfg.get("include_random_vars", False),
                        n_samples=cfg.n_samples, seed=cfg.seed, task=cfg.task)


def make_parts(cfg: TrialConfig, data) -> list:
    """The trial's (train, test) parts, each checked for what the trial fits on it."""
    if cfg.modality == "image":
        from sbfn_dist.data.images import default_n_val, holdout_splits
        return holdout_splits(data, n_splits=cfg.folds, n_train=cfg.n_train,
                              n_val=default_n_val(cfg.get("n_val"), cfg.uses_validation(), data),
                              n_test=cfg.n_test, seed=cfg.seed)
    parts = tabular_splits.make_splits(data, cfg.split, folds=cfg.get("folds", 1), seed=cfg.seed,
                                       test_fraction=cfg.get("test_fraction", 0.2))
    check_parts(cfg, data, parts)
    return parts


def check_parts(cfg: TrialConfig, data, parts: list) -> None:
    """Each training part of the trial's folds leaves room for what is fitted on it: a target
    that varies (regression), a stratified validation part (stacked combiners) and the inner
    folds of the plug-ins and of sbfn_rbf -- refused here, before any member trains."""
    for k in cfg.fold_indices():
        train, of = parts[k][0], f" (fold {k}'s training part)"
        if data.classes is None:
            checks.require_varying_target(data.y[train], f"target '{data.target_name}'{of}",
                                          "use fewer folds or more rows, or check the target")
        elif cfg.uses_validation():
            train, _ = tabular_splits.validation_part(data.y, train, cfg.val_fraction,
                                                      fold_seed(cfg.seed, k), data.classes)
        for setting in ("plugin_folds", "inner_folds"):
            if cfg.has(setting):
                checks.require_rows(len(train), cfg.get(setting), setting, of)


def check_data(configs) -> None:
    """What run_trial would refuse about the data of each config (a dict is checked first, as
    run_trial checks it; a TrialConfig was), found without training: each data set loaded once,
    every trial's parts made and checked (a sweep's planning)."""
    loaded: dict = {}
    for config in configs:
        cfg = _checked_device(TrialConfig.from_dict(config))
        key = tuple(cfg.get(f) for f in LOAD_FIELDS[cfg.modality])
        if key not in loaded:
            loaded[key] = load_data(cfg)
        make_parts(cfg, loaded[key])
        if cfg.get("ensemble"):     # your member networks, on a dummy batch of the data's shape
            from sbfn_dist.learners.registry import check_ensemble
            x = loaded[key].x
            check_ensemble(cfg.ensemble, x.shape[1], len(loaded[key].classes), x.shape[2:],
                           cfg.device)


def _checked_device(cfg: TrialConfig) -> TrialConfig:
    """The config, with its device settings resolved as run_trial would where that can refuse
    something here (a CUDA device or step on a machine without one). A tabular trial on "auto"
    or "cpu" cannot be refused, and is not resolved: the driver of a tabular sweep plans without
    loading torch (images load it anyway)."""
    if cfg.modality == "image" or cfg.get("device") == "cuda":
        return resolved(cfg)
    return cfg
