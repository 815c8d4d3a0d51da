"""Errors keep their message across processes: a trial raises them in a Ray worker and the
driver reports them (a ConfigError once arrived as a TypeError about its constructor)."""

import pickle

import pytest

from sbfn_dist.errors import ConfigError, DataError, SbfnError
from sbfn_dist.interfaces.estimators import FitDivergedError
from sweeps.engine.run.claim import SweepBusy
from sweeps.engine.run.resources import ResourceError
from sweeps.engine.common.store import StorageError
from tests.sweep_helpers import a_ray

EVERY_ERROR = [ConfigError("epochs", 0, "an integer >= 1"), DataError("too few rows"),
               SbfnError("bad input"), FitDivergedError("lower lr"), ResourceError("no GPU"),
               StorageError("read-only"), SweepBusy("running now")]


@pytest.mark.parametrize("error", EVERY_ERROR, ids=lambda e: type(e).__name__)
def test_every_error_survives_pickling_as_itself(error):
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error)
    assert vars(again) == vars(error)


def test_a_config_error_keeps_its_field_value_and_what_is_allowed():
    again = pickle.loads(pickle.dumps(ConfigError("epsilon", 1.5, "a number in [0, 1]")))
    assert (again.field, again.value, again.allowed) == ("epsilon", 1.5, "a number in [0, 1]")


def test_a_config_error_raised_in_a_ray_task_reaches_the_caller_as_itself():
    import ray

    @ray.remote(num_cpus=0)
    def trial():
        raise ConfigError("epochs", 0, "an integer >= 1")

    with a_ray(), pytest.raises(ConfigError) as caught:
        ray.get(trial.remote())
    assert "config field 'epochs' = 0 is not allowed: an integer >= 1" in str(caught.value)
    assert caught.value.field == "epochs"
