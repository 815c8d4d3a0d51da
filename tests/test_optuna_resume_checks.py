"""A resumed Optuna sweep goes on with its own study only (issue 48, item 9): another sweep's
study of the same name, drawn over another space, was accepted and mixed into this one."""

import optuna
import pytest

from sbfn_dist.errors import SbfnError
from sweeps.engine.common.store import ResultStore
from sweeps.engine.plan.ranges import parse_range
from sweeps.engine.tracking.study import check_study, open_study


def a_study_drawn_over(tmp_path, distributions: dict) -> ResultStore:
    store = ResultStore(str(tmp_path / "s"))
    storage = open_study(store, "s", "min", resume=False, labels={})
    study = optuna.load_study(study_name="s", storage=storage)
    study.tell(study.ask(distributions), 1.0)
    return store


def test_a_study_drawn_over_another_space_is_refused_on_resume(tmp_path):
    store = a_study_drawn_over(tmp_path, {
        "epsilon": optuna.distributions.CategoricalDistribution((0.0, 0.5))})
    with pytest.raises(SbfnError, match=r"--resume: the Optuna study in .* was drawn over "
                                        r"another space than this sweep's axes \(epsilon: "
                                        r"\[0.0, 0.5\], not \[0.0, 0.35\]\): it is another "
                                        r"sweep's study of the name 's'"):
        check_study(store, "s", resume=True, axes={"epsilon": (0.0, 0.35)})
    with pytest.raises(SbfnError, match=r"\(n_members: not drawn, not \[3, 2\]\)"):
        check_study(store, "s", resume=True, axes={"epsilon": (0.0, 0.5), "n_members": (3, 2)})


def test_a_study_drawn_over_the_sweeps_own_axes_resumes(tmp_path):
    lr = parse_range("lr", "loguniform(0.001, 0.1)")
    store = a_study_drawn_over(tmp_path, {
        "epsilon": optuna.distributions.CategoricalDistribution((0.0, 0.35)),
        "lr": optuna.distributions.FloatDistribution(0.001, 0.1, log=True)})
    assert check_study(store, "s", resume=True, axes={"epsilon": (0.0, 0.35), "lr": lr})
