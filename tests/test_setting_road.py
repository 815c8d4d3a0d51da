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
