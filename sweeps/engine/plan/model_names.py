"""The model names a user gives a sweep, checked against what its trials compute before Ray
starts, with a did-you-mean: --objective, and the combiners, competitors and plug-ins named
by --set, --competitors or a sweep file's settings and axes.

A misspelt objective is no error to the trials (they fall back to their best model), so
without this check TPE would optimise another model than the one the study records. The names
a trial may take are the library's (sbfn_dist.settings.tasks: a task's combiners, the estimators
registry); the models a trial computes are its config's fields that name them.
"""

from sbfn_dist.errors import ConfigError, did_you_mean
from sbfn_dist.settings.tasks import ESTIMATORS, TASKS


# The config fields whose names are the models of a trial's records (sbfn_dist.experiment:
# one model per combiner, competitor and plug-in).
MODEL_FIELDS = ("combiners", "competitors", "plugin_members")


def check_model_names(spec, base: dict) -> None:
    """Every model name of the sweep's trials, before they are planned; their objective once
    they are (check_objective, sweeps.engine.plan.planning.plan_sweep)."""
    trials = spec.trials(base)
    for i in distinct_trials(trials, base):
        check_names({**base, **trials[i]}, spec.task)


def distinct_trials(trials: list[dict], base: dict) -> list[int]:
    """The index of one trial of each kind (role and model fields): what they compute is all
    there is to check, and a grid of thousands holds only a few kinds."""
    kinds: dict = {}
    for i, trial in enumerate(trials):
        merged = {**base, **trial}
        key = (trial.get("role"), *(repr(merged.get(f)) for f in MODEL_FIELDS))
        kinds.setdefault(key, i)
    return list(kinds.values())


def known_names(field: str, task: str) -> tuple:
    """The names `field` takes for a task: its combiners, else the estimators registry (an
    estimator may also be an import path, which the config check imports)."""
    return TASKS[task].allowed if field == "combiners" else ESTIMATORS


def check_names(settings: dict, task: str) -> None:
    for field in MODEL_FIELDS:
        known = known_names(field, task)
        for name in _names(settings.get(field)):
            if name not in known and "." not in name:
                raise ConfigError(field, name, f"one of {', '.join(known)}"
                                  f"{did_you_mean(name, known)}" + _import_path_note(field))


def _import_path_note(field: str) -> str:
    return "" if field == "combiners" else (", or the import path of a scikit-learn estimator "
                                            "(package.module.ClassName)")


def _names(value) -> list:
    """A field's names as given: one name, or a list of them (other values: the config's check)."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def computed_models(config: dict) -> list:
    """The models whose records a trial of this (full) config writes."""
    return [name for field in MODEL_FIELDS for name in config.get(field, ())]


def ranked(configs: list[dict]) -> list[dict]:
    """The configurations the objective ranks (Optuna searches, "best" names): the ensembles;
    a sweep of competitors only, those."""
    ensembles = [c for c in configs if c["extra"].get("role") == "ensemble"]
    return ensembles or configs


def check_objective(objective: str, default: str, configs: list[dict]) -> None:
    """The objective must be a model every ranked configuration computes. The task's default
    (sbfn_ls, sbfn) may be absent (a grid without it): its trials fall back to their best model."""
    if not objective or objective == default:
        return
    models = [computed_models(c) for c in ranked(configs)]
    common = [m for m in models[0] if all(m in other for other in models[1:])]
    if objective in common:
        return
    elsewhere = any(objective in computed_models(c) for c in configs)
    raise ConfigError("--objective", objective, f"one of the models every configuration it "
                      f"ranks computes: {', '.join(common) or 'none'}"
                      f"{did_you_mean(objective, common)}" + (
                          f"; {own_trials(objective)}, compared in the sweep's table"
                          if elsewhere else ""))


def own_trials(model: str) -> str:
    """Why a model that is no ensemble's combiner ranks no configuration."""
    return f"{model} runs in trials of its own (competitors, the M = 1 reference)"
