"""A setting's road (docs/design.md, "A setting's road"): its type, range and choices are
declared once (sbfn_dist/settings/fields.py); a command's flag for it parses the values and
leaves their check to the plan, so a value out of range is refused in the field's own words,
whichever command or sweep file gives it."""

import argparse

import pytest

from sbfn_dist.settings.fields import Ctx, field
from sweeps.commands import image_sweeps, tabular
from sweeps.commands.cli import AXIS_FLAGS, SMOKE_KEEPS
from sweeps.engine.plan.grid_trials import RIDE_ALONG

PARSERS = {"regression": tabular.parser("regression", ""),
           "classification": tabular.parser("classification", ""),
           "images": image_sweeps.parser_for(image_sweeps.ANY)}


def setting_actions():
    """(command, flag, setting) of every flag that lists a setting's values."""
    lists = {**AXIS_FLAGS, **{name: name for task in RIDE_ALONG for name in RIDE_ALONG[task]}}
    for command, parser in PARSERS.items():
        for action in parser._actions:
            if action.dest in lists:
                yield command, action, lists[action.dest]


@pytest.mark.parametrize("command, action, setting", list(setting_actions()),
                         ids=lambda v: getattr(v, "dest", v))
def test_no_flag_declares_a_range_or_choices_of_its_own(command, action, setting):
    """A flag that lists a setting's values carries no choices, and takes a value the
    setting's constraint refuses (the plan refuses it, in the field's words)."""
    assert action.choices is None, f"{command} --{action.dest} lists choices of its own"
    if action.dest == "ensembles":
        return                                  # names; the setting's choices check them
    check = field(setting).check
    inner = getattr(check, "inner", check)
    outside = inner.lo - 1
    assert not check.ok([outside] if hasattr(check, "inner") else outside, Ctx({}))
    parsed = argparse.Namespace(**{action.dest: None})
    action(PARSERS[command], parsed, [str(outside)], f"--{action.dest}")
    assert getattr(parsed, action.dest) == [outside]


def test_smoke_keeps_every_axis_a_flag_lists_by_the_axis_own_name():
    assert {SMOKE_KEEPS[flag] for flag in AXIS_FLAGS} == set(AXIS_FLAGS.values())
    assert all(field(setting) for setting in AXIS_FLAGS.values())


def test_m_zero_without_plug_ins_is_refused_naming_what_it_needs(capsys):
    """M's range is the setting's (>= 0: 0 is the plug-ins alone); 0 without plug-ins names
    plugin_members, not the epsilon that then does not apply."""
    from sweeps.regression import main as regression
    assert regression(["--dataset", "diabetes", "--grid", "demo", "--members", "0",
                       "--dry-run", "--no-mlflow"]) == 2
    err = capsys.readouterr().err
    assert "'n_members' = 0" in err and "plugin_members" in err and "epsilon" not in err


def test_a_planned_epsilon_reaches_the_trainer_as_planned_and_is_not_checked_again(
        tmp_path, monkeypatch):
    """The road after the plan: `--epsilons 0 0.5` planned into TrialConfigs (the one check),
    the plan pickled as Ray hands it to a worker, one fold of one pack run by the worker's code
    (trainable._fold_parts -> trial.run_fold -> run_trials) into a store: the worker runs the
    planned TrialConfigs themselves on their fold, nothing validates a configuration again,
    and each set's epsilon reaches the trainer's MLPConfig as the planned float."""
    import pickle

    from sbfn_dist.combiners import ensembles
    from sbfn_dist.settings import config as config_module
    from sbfn_dist.settings.config import TrialConfig
    from sweeps.commands.cli import given_to_smoke
    from sweeps.engine.common.store import ResultStore
    from sweeps.engine.plan.grid_trials import smoke
    from sweeps.engine.plan.planning import plan_sweep
    from sweeps.engine.run import trainable, trial

    build, _ = tabular.command("regression", "")
    spec, args, opts = build(["--dataset", "diabetes", "--grid", "demo", "--members", "2",
                              "--epsilons", "0", "0.5", "--storage", str(tmp_path),
                              "--no-mlflow", "--pack", "on"])
    spec = smoke(spec, given_to_smoke(args))
    planned = plan_sweep(spec, opts)
    assert all(isinstance(c, TrialConfig) for c in planned.configs)
    pack = [i for i, c in enumerate(planned.configs) if c.extra["role"] == "ensemble"]
    assert sorted(planned.configs[i].epsilon for i in pack) == [0.0, 0.5]

    def refused(*args, **kwargs):
        raise AssertionError("a planned configuration was validated again after the plan")
    monkeypatch.setattr(config_module, "resolve", refused)
    handed, trained = [], []
    real_run_trials, real_train = trial.run_trials, ensembles.train_mlp_pack
    monkeypatch.setattr(trial, "run_trials",
                        lambda runs, keep=None: handed.append(runs) or real_run_trials(runs, keep))
    monkeypatch.setattr(ensembles, "train_mlp_pack", lambda X, y, cfgs, *a, **k:
                        trained.append(cfgs) or real_train(X, y, cfgs, *a, **k))

    shipped = pickle.loads(pickle.dumps(planned))     # the plan as a worker unpacks it
    configs = shipped.configs_of(planned.tune_config(pack))
    assert configs == [planned.configs[i] for i in pack]
    assert all(isinstance(c, TrialConfig) for c in configs)
    store = ResultStore(str(tmp_path / "store"))
    store.create()
    failed: dict = {}
    parts, computed = trainable._fold_parts(store, configs, 0, failed, trial.run_fold)

    assert failed == {} and computed
    [runs] = handed
    assert runs == [c.with_values(fold=0) for c in configs]
    assert all(type(r) is TrialConfig for r in runs)
    [sets] = trained                                  # one member stack for the pack
    assert [s.epsilon for s in sets] == [c.epsilon for c in configs]
    assert all(type(s.epsilon) is float for s in sets)
    for c in configs:
        rows = store.read_part(c.trial_id, 0)
        assert rows and {r["epsilon"] for r in rows if r["family"] == "sbfn"} == {c.epsilon}
