"""--pack auto: which configurations of a grid share a Ray trial (sweeps.engine.plan.packing)."""

import pytest

from sbfn_dist.errors import ConfigError
from sweeps.engine.plan.grid_trials import image_sweep, regression_sweep
from sweeps.engine.plan.packing import PACK_MAX_PARAMETERS, member_weights, packs
from sweeps.engine.plan.planning import SweepOptions, plan


def planned(spec, **overrides):
    return plan(spec, SweepOptions(name="p", overrides=overrides))


def test_regression80_packs_its_mlp_sets_into_one_trial_per_slot_and_keeps_competitors_apart():
    configs = planned(regression_sweep("diabetes", "regression80"))
    trials = packs(configs, "auto", slots=2)
    roles = [{configs[i]["extra"]["role"] for i in t} for t in trials]
    assert sorted(map(sorted, roles)) == [["competitors"]] * 3 + [["ensemble", "reference"]] * 2
    mlp = [t for t, r in zip(trials, roles) if "ensemble" in r]
    assert sorted(i for t in mlp for i in t) == [i for i, c in enumerate(configs)
                                                   if c["extra"]["role"] != "competitors"]
    loads = [sum(member_weights(configs[i]) for i in t) for t in mlp]
    assert max(loads) - min(loads) <= max(member_weights(c) for c in configs)   # balanced


def test_more_slots_make_more_packs_and_off_makes_none():
    configs = planned(regression_sweep("diabetes", "regression80"))
    assert len([t for t in packs(configs, "auto", slots=8) if len(t) > 1]) == 8
    assert packs(configs, "off", slots=2) == [[i] for i in range(len(configs))]


def test_a_pack_never_outgrows_the_cache_budget_unless_one_configuration_does():
    configs = planned(regression_sweep("diabetes", "regression80"), width=200)
    for t in packs(configs, "auto", slots=1):
        load = sum(member_weights(configs[i]) for i in t)
        assert load <= PACK_MAX_PARAMETERS or len(t) == 1


def test_only_configurations_that_share_folds_and_kernels_share_a_pack():
    spec = regression_sweep("diabetes", "paper-full")
    configs = planned(spec)[:60]
    for t in packs(configs, "auto", slots=1):
        assert len({(configs[i].get("width"), configs[i]["seed"]) for i in t}) == 1


def test_image_sweeps_are_not_packed():
    configs = planned(image_sweep("digits", splits=1))
    assert packs(configs, "auto", slots=2) == [[i] for i in range(len(configs))]


def test_an_unknown_pack_mode_is_refused():
    with pytest.raises(ConfigError, match="--pack"):
        SweepOptions(name="p", pack="always").validate()
