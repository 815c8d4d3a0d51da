"""The trial configuration: the settings of one run_trial call that apply to it, each validated.

    cfg = TrialConfig.from_dict({"dataset": "iris", "n_members": 5, "epsilon": 0.35})
    cfg.epsilon, cfg.task, cfg.to_dict()

What each field allows, its default and where it applies are declared once, in
`sbfn_dist.settings.fields`. A field that does not apply to the trial (an image setting on a table,
a step size of a combiner that does not run) is refused with an error naming it and where it does
apply; reading it from the config raises the same error, so no code can use a setting the trial
does not have. `to_dict()` holds only the fields that apply, so the records do too.

A TrialConfig is checked once, where it is made (`from_dict`: a user's dict, a sweep's plan),
and trusted after: `with_values` changes what its maker knows keeps it valid (a planned trial's
fold, the device "auto" resolved to) without checking it again, and it pickles as its values
(Ray's crossing to a worker) and comes back unchecked. Its fields read as attributes, or as a
read-only mapping (`cfg["epsilon"]`, `{**cfg}`) where a table of them is read; `to_dict()` is
the one way to a plain dict, for what writes one (JSON, MLflow's params).
"""

import os
from collections.abc import Mapping

from sbfn_dist import catalog
from sbfn_dist.errors import ConfigError, did_you_mean
from sbfn_dist.settings.fields import (BY_NAME, FIELDS, LIST_FIELDS_COMMAND, TRIAL_FIELDS, Ctx,
                                       Items, refusal)
from sbfn_dist.settings.tasks import PLUGIN_HEADS, TASKS, Task


class TrialConfig(Mapping):
    """Immutable: the resolved values of the fields that apply (fields.py), read as attributes
    (or as a read-only mapping). `TrialConfig(values)` trusts `values`: only from_dict checks."""

    def __init__(self, values: dict):
        object.__setattr__(self, "_values", dict(values))

    @classmethod
    def from_dict(cls, config: dict, optional=()) -> "TrialConfig":
        """Validate `config` and fill every applicable default.

        optional: keys that are dropped, not refused, where they do not apply -- the settings a
        sweep shares among trials of different kinds (a competitor trial trains no members)."""
        if isinstance(config, TrialConfig):
            return config
        return cls(resolve(config, frozenset(optional)))

    @classmethod
    def trusted(cls, config) -> "TrialConfig":
        """`config` as a TrialConfig, not checked: itself, or the values of a config checked
        before (a plain dict of one, as to_dict gave it to a reader or a test)."""
        return config if isinstance(config, TrialConfig) else cls(config)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        if name in BY_NAME:
            raise ConfigError(name, None, f"it does not apply to this trial; it applies to "
                              f"{BY_NAME[name].where or 'other trials'}")
        raise AttributeError(f"TrialConfig has no field {name!r}")

    def __setattr__(self, name, value):
        raise AttributeError("TrialConfig is immutable: build a new one with from_dict, or "
                             "with_values")

    def __getitem__(self, name: str):
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"TrialConfig({self._values!r})"

    def __reduce__(self):
        # Its values, rebuilt unchecked: what crosses to a Ray worker inside a sweep's plan
        # (sweeps/engine/plan/planning.py, Planned.__reduce__) comes back as it was planned.
        return TrialConfig, (self._values,)

    def with_values(self, **values) -> "TrialConfig":
        """This config with some of its fields set anew, trusted, not checked again: for values
        its maker knows keep it valid (one of a planned trial's own folds, its key, what "auto"
        resolved to). A field it does not hold is refused as reading it would be."""
        for name in values:
            if name not in self._values:
                getattr(self, name)             # raises: it does not apply, or is unknown
        return TrialConfig({**self._values, **values})

    def to_dict(self) -> dict:
        """Every field that applies, with its value; from_dict(to_dict()) gives the same config."""
        return dict(self._values)

    def has(self, name: str) -> bool:
        return name in self._values

    def get(self, name: str, default=None):
        """The field's value where it applies, else `default` (e.g. no competitors on images)."""
        return self._values.get(name, default)

    def non_default(self) -> dict:
        """The fields whose value differs from their default for this trial."""
        ctx = Ctx(self._values)
        return {k: v for k, v in self._values.items() if v != BY_NAME[k].default_for(ctx)}

    @property
    def spec(self) -> Task:
        return TASKS[self.task]

    @property
    def data_set(self) -> catalog.DataSet:
        return catalog.lookup(self.dataset)

    @property
    def modality(self) -> str:
        return self.data_set.modality

    def uses_validation(self) -> bool:
        """Some combiner fits on a validation part held out from the members."""
        return Ctx(self._values).stacks()

    def fold_indices(self) -> list:
        """The folds this trial runs: the one it names, or all of them."""
        if self.fold is not None:
            return [self.fold]
        return [0] if self.split == "fixed" else list(range(self.folds))


def resolve(config: dict, optional: frozenset = frozenset()) -> dict:
    """The applicable fields of `config`, validated and completed with defaults, in table order."""
    config = absolute_paths(config)
    unknown = sorted(set(config) - set(TRIAL_FIELDS))
    if unknown:
        raise ConfigError(unknown[0], config[unknown[0]],
                          f"a known field{did_you_mean(unknown[0], TRIAL_FIELDS)}; the known "
                          f"fields, their defaults and where they apply: {LIST_FIELDS_COMMAND}")
    _members_or_plugins(config)
    values: dict = {}
    ctx = Ctx(values)
    for f in (f for f in FIELDS if f.trial):
        given = config.get(f.name) is not None      # None: not set, the default applies
        if not f.when(ctx):
            if given and f.name not in optional:
                raise ConfigError(f.name, config[f.name],
                                  f"it does not apply to this trial ({_what(ctx)}); it applies "
                                  f"to {f.where}. Remove it")
            continue
        value = _normalise(f, config[f.name]) if given else f.default_for(ctx)
        if not f.check.ok(value, ctx):
            raise ConfigError(f.name, value, refusal(f.check, value, ctx))
        values[f.name] = value
        if f.name == "dataset":
            catalog.lookup(value)          # an unknown data set lists the known ones
    _cross_checks(values)
    return values


def _members_or_plugins(config: dict) -> None:
    """M = 0 stands for the plug-ins alone: without plugin_members a trial of it would have no
    hypothesis, and the fields after n_members would be refused as not applying (epsilon: the
    trial 'trains no members'), which names the wrong setting."""
    if config.get("n_members") != 0 or config.get("plugin_members") or "dataset" not in config \
            or not config.get("combiners", True):
        return
    tabular = catalog.lookup(config["dataset"]).modality == "tabular"   # plug-ins' one home
    _check_no_members({**config, "plugin_members": ()} if tabular else config)


def _no_plugins() -> ConfigError:
    return ConfigError("n_members", 0, "an integer >= 1, or 0 with plugin_members (the "
                       "plug-ins are then the only hypotheses, e.g. plugin_members=ridge,knn)")


def _what(ctx: Ctx) -> str:
    runs = "trains members" if ctx.members else "trains no members"
    return f"{ctx.modality} {ctx.task} on '{ctx['dataset']}', {runs}"


def absolute_paths(config: dict) -> dict:
    """`config` with its paths (data_dir, a csv:, npz: or folder: data set) made absolute
    against the current directory: a trial may run in another one (Ray Tune changes it), so
    paths are fixed where the user gave them."""
    out = dict(config)
    if isinstance(out.get("data_dir"), str):
        out["data_dir"] = os.path.abspath(os.path.expanduser(out["data_dir"]))
    if "dataset" in out:
        out["dataset"] = catalog.absolute(out["dataset"])
    return out


def _normalise(f, value):
    """A list field takes a list, a tuple or one item; it is stored as a tuple. A check with a
    stored form of its own (the ensemble's list) makes it."""
    if hasattr(f.check, "normalise"):
        return f.check.normalise(value)
    if isinstance(f.check, Items):
        if isinstance(value, (str, int, float)):
            return (value,)
        if isinstance(value, (list, tuple)):
            return tuple(value)
    return value


def _cross_checks(v: dict) -> None:
    data = catalog.lookup(v["dataset"])
    if not (v.get("combiners") or v.get("competitors")):
        raise ConfigError("combiners", v.get("combiners"), "at least one combiner or competitor")
    if v["split"] in ("fixed", "fixed_train_kfold") and not data.fixed_split:
        with_split = ", ".join(n for n, d in catalog.CATALOG.items() if d.fixed_split)
        raise ConfigError("split", v["split"], f"kfold or holdout: '{v['dataset']}' has no "
                          f"published test split (data sets with one: {with_split})")
    if v["split"] in ("kfold", "fixed_train_kfold") and v["folds"] < 2:
        # One holdout split is a valid (cheap) run; one "fold" of k-fold is not a split.
        raise ConfigError("folds", v["folds"], f"an integer >= 2 for split={v['split']} "
                          "(split=holdout allows 1)")
    both = [n for n in v.get("competitors", ()) if n in v.get("plugin_members", ())]
    if both:
        raise ConfigError("competitors", v["competitors"], f"models that are not plug-ins of the "
                          f"same trial: {both} already get a competitor row each as plug-ins "
                          "(from the fit that gives their column); drop them from competitors")
    _check_no_members(v)
    n_folds = 1 if v["split"] == "fixed" else v["folds"]
    if v["fold"] is not None and v["fold"] >= n_folds:
        raise ConfigError("fold", v["fold"], f"an index in [0, {n_folds}) or None for all folds")


def _check_no_members(v: dict) -> None:
    """n_members = 0 makes the plug-ins the only hypotheses of D: it needs some, and combiners
    that read them (a classification trial's others combine member logits or steps)."""
    if v.get("n_members") != 0:
        return
    if "plugin_members" not in v:
        raise ConfigError("n_members", 0, "an integer >= 1: this trial takes no plug-ins "
                          f"(plugin_members applies to {BY_NAME['plugin_members'].where})")
    if not v["plugin_members"]:
        raise _no_plugins()
    if v["task"] == "classification":
        alone = [c for c in v["combiners"] if c not in PLUGIN_HEADS]
        if alone:
            raise ConfigError("combiners", v["combiners"], f"combiners that read the plug-ins "
                              f"({', '.join(PLUGIN_HEADS)}) with n_members=0: {alone} combine "
                              "the members alone, and none train; name the combiners, e.g. "
                              f"combiners={','.join(PLUGIN_HEADS)}")
