"""Saved models (sbfn_dist/interfaces/saved.py): an estimator saved and loaded predicts to the
bit as before, for every combiner of both estimators, tables and images; the directory holds
its settings as text and its weights as tensors that load without running code; scikit-learn
objects load only when their types are trusted."""

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_digits, load_wine
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import Bunch

from sbfn_dist.interfaces import saved
from sbfn_dist.interfaces.estimators import COMBINERS, SBFNClassifier, SBFNRegressor
from sbfn_dist.learners.competitors import build_competitor, competitor_configs
from sbfn_dist.settings.tasks import ESTIMATORS

FAST = dict(n_members=3, epochs=2)
CNN = dict(n_members=2, epochs=1, batch_size=64)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return X[:200], y[:200]


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return X, np.array(["barolo", "grignolino", "barbera"])[y]     # labels kept as text


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:300].reshape(-1, 8, 8), y[:300]


def round_trip(model, tmp_path):
    model.save(tmp_path / "model")
    return type(model).load(tmp_path / "model")


@pytest.mark.parametrize("combiner", COMBINERS["regression"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_loaded_regressor_predicts_to_the_bit(diabetes, tmp_path, combiner, dtype):
    X, y = diabetes
    model = SBFNRegressor(**FAST, combiner=combiner, dtype=dtype).fit(X, y)
    loaded = round_trip(model, tmp_path)
    assert np.array_equal(loaded.predict(X), model.predict(X))
    assert np.array_equal(loaded.predict_members(X), model.predict_members(X))


def test_the_k_means_basis_and_a_non_default_setting_survive(diabetes, tmp_path):
    X, y = diabetes
    model = SBFNRegressor(**FAST, combiner="sbfn_ls", sbfn_basis="kmeans", sbfn_intercept=True,
                          lambda2=0.5).fit(X, y)
    loaded = round_trip(model, tmp_path)
    assert np.array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params() == model.get_params()


@pytest.mark.parametrize("combiner", COMBINERS["classification"])
def test_a_loaded_classifier_on_tables_predicts_to_the_bit(wine, tmp_path, combiner):
    X, y = wine
    model = SBFNClassifier(**FAST, combiner=combiner).fit(X, y)
    loaded = round_trip(model, tmp_path)
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert list(loaded.predict(X)) == list(model.predict(X))
    assert list(loaded.classes_) == ["barbera", "barolo", "grignolino"]


@pytest.mark.parametrize("ensemble, combiner", [("cnn", "sbfn_stacked"),
                                                ("cnn", "logit_mean_tuned"),
                                                ("mixed", "moe")])
def test_a_loaded_image_classifier_predicts_to_the_bit(digits, tmp_path, ensemble, combiner):
    """SimpleCNN member stacks, and the mixed ensemble (ResNets: BatchNorm running statistics,
    the stacks' member order) with a learned head."""
    X, y = digits
    n = 3 if ensemble == "mixed" else CNN["n_members"]
    model = SBFNClassifier(**{**CNN, "n_members": n}, ensemble=ensemble,
                           combiner=combiner).fit(X, y)
    loaded = round_trip(model, tmp_path)
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert loaded.image_shape_ == model.image_shape_


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_model_fitted_on_cuda_loads_on_cuda_and_predicts_to_the_bit(digits, tmp_path):
    X, y = digits
    model = SBFNClassifier(**CNN, ensemble="cnn", device="cuda").fit(X, y)
    loaded = round_trip(model, tmp_path)
    assert next(loaded.members_.model.parameters()).is_cuda
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_cuda_tensors_go_to_the_cpu_where_there_is_no_cuda():
    here = saved.Loaded({}, {}, cuda=False)
    assert (here.device("cuda:0"), here.device("cpu")) == ("cpu", "cpu")
    assert saved.Loaded({}, {}, cuda=True).device("cuda:0") == "cuda:0"


def test_a_loaded_estimator_is_an_ordinary_one(diabetes, tmp_path):
    X, y = diabetes
    model = SBFNRegressor(**FAST).fit(X, y)
    loaded = round_trip(model, tmp_path)
    assert clone(loaded).get_params() == model.get_params()
    assert np.array_equal(loaded.fit(X, y).predict(X), model.predict(X))   # fits again alike


def test_a_path_under_home_is_saved_there(diabetes, tmp_path, monkeypatch):
    """save("~/m") made a folder named "~" in the current one."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    model = SBFNRegressor(**FAST).fit(*diabetes)
    assert model.save("~/m") == tmp_path / "home" / "m" and not (tmp_path / "~").exists()
    assert np.array_equal(SBFNRegressor.load("~/m").predict(diabetes[0]),
                          model.predict(diabetes[0]))


# ------------------------------------------------------------------------- the format
def test_the_settings_are_text_and_the_weights_are_tensors_only(diabetes, tmp_path):
    X, y = diabetes
    model = SBFNRegressor(**FAST, lambda2=2.0).fit(X, y)
    model.save(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["estimator"] == "SBFNRegressor" and manifest["task"] == "regression"
    assert saved.decode(manifest["params"], None) == model.get_params()
    scaler = manifest["fitted"]["scaler_"]["attributes"]
    assert scaler["mean_"]["array"]["values"] == model.scaler_.mean_.tolist()   # exact, as text
    assert scaler["y_std_"] == model.scaler_.y_std_
    tensors = torch.load(tmp_path / "m" / "tensors.pt", weights_only=True)
    assert all(isinstance(t, torch.Tensor) for t in tensors.values())
    assert torch.equal(tensors["members_.model.flat"], model.members_.model.flat)


def test_every_kind_of_value_comes_back_as_itself(diabetes, tmp_path):
    """The encoding's table (saved.py's docstring), on a fitted attribute holding each kind."""
    X, y = diabetes
    model = SBFNRegressor(**FAST).fit(X, y)
    model.extras_ = {"dtype": torch.float64, "named": Bunch(rf=1), "big": np.arange(1000.0),
                     "nan": float("nan"), "pair": (1, "x"), "scalar": np.float32(1.5),
                     "text": np.array(["a", "bc"]), "cells": np.array([[1, 2]], np.int16),
                     "weights": torch.arange(3.0)}
    model.save(tmp_path / "m")
    back = SBFNRegressor.load(tmp_path / "m").extras_
    assert back["dtype"] is torch.float64 and back["named"].rf == 1 and back["pair"] == (1, "x")
    assert np.isnan(back["nan"]) and back["scalar"] == 1.5 and type(back["scalar"]) is np.float32
    for name in ("big", "text", "cells"):
        assert back[name].dtype == model.extras_[name].dtype
        assert np.array_equal(back[name], model.extras_[name])
    assert torch.equal(back["weights"], model.extras_["weights"])


class _RunsCode:
    """A pickle payload: unpickling it would create the file `marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_tensors_file_holding_code_is_refused_without_running_it(diabetes, tmp_path):
    X, y = diabetes
    SBFNRegressor(**FAST).fit(X, y).save(tmp_path / "m")
    marker = tmp_path / "ran"
    # protocol 2: torch.load's own (a later one only adds a warning before the refusal)
    (tmp_path / "m" / "tensors.pt").write_bytes(pickle.dumps({"x": _RunsCode(marker)}, 2))
    with pytest.raises(saved.SavedModelError, match="not a file of tensors only"):
        SBFNRegressor.load(tmp_path / "m")
    assert not marker.exists()


def test_a_manifest_naming_another_class_is_refused(diabetes, tmp_path):
    X, y = diabetes
    SBFNRegressor(**FAST).fit(X, y).save(tmp_path / "m")
    path = tmp_path / "m" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["fitted"]["scaler_"]["object"] = "Popen"
    path.write_text(json.dumps(manifest))
    with pytest.raises(saved.SavedModelError, match="'Popen' that saved models may not hold"):
        SBFNRegressor.load(tmp_path / "m")


def test_the_other_estimator_s_directory_names_the_right_call(wine, tmp_path):
    X, y = wine
    SBFNClassifier(**FAST).fit(X, y).save(tmp_path / "m")
    with pytest.raises(saved.SavedModelError, match=r"SBFNClassifier.load\(DIR\)"):
        SBFNRegressor.load(tmp_path / "m")
    assert isinstance(saved.load(tmp_path / "m"), SBFNClassifier)


def test_save_and_load_refuse_what_is_no_saved_model(diabetes, tmp_path):
    X, y = diabetes
    model = SBFNRegressor(**FAST).fit(X, y)
    with pytest.raises(saved.SavedModelError, match="holds no saved model"):
        SBFNRegressor.load(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(saved.SavedModelError, match="new or empty directory"):
        model.save(tmp_path)
    with pytest.raises(NotFittedError):
        SBFNRegressor().save(tmp_path / "unfitted")


def test_a_damaged_manifest_and_an_unwritable_target_are_one_line_naming_the_path(diabetes,
                                                                                 tmp_path):
    """Before issue 32: json's JSONDecodeError without the file, and tempfile's
    FileNotFoundError for a folder no file can be made in."""
    X, y = diabetes
    model = SBFNRegressor(**FAST).fit(X, y)
    model.save(tmp_path / "m")
    (tmp_path / "m" / "manifest.json").write_text("{not json")
    with pytest.raises(saved.SavedModelError, match=f"{tmp_path / 'm' / 'manifest.json'} is not "
                       "readable JSON .*save or export it again"):
        SBFNRegressor.load(tmp_path / "m")
    (tmp_path / "m" / "manifest.json").write_text("[1, 2]")
    with pytest.raises(saved.SavedModelError, match="is not an sbfn-dist saved model"):
        SBFNRegressor.load(tmp_path / "m")
    (tmp_path / "a_file").write_text("")
    for target, message in [(tmp_path / "a_file" / "m", "a_file is a file, not a folder"),
                            (Path("/proc/sbfn-model"), "cannot write in /proc")]:
        if not target.parent.exists():
            continue            # /proc: Linux only
        with pytest.raises(saved.SbfnError, match=f"cannot save a model to {target}: .*"
                           f"{message}"):
            model.save(target)


def test_saving_over_a_saved_model_replaces_it(diabetes, tmp_path):
    X, y = diabetes
    SBFNRegressor(**{**FAST, "n_members": 2}).fit(X, y).save(tmp_path / "m")
    newer = SBFNRegressor(**FAST).fit(X, y)
    newer.save(tmp_path / "m")
    assert SBFNRegressor.load(tmp_path / "m").n_members == 3
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["manifest.json", "tensors.pt"]


def test_member_factories_load_only_when_trusted(digits, tmp_path):
    """Rebuilding your own member networks imports your factory: its code runs."""
    X, y = digits
    model = SBFNClassifier(**CNN, ensemble="tests.nets_for_tests:small_bn_net",
                           combiner="logit_mean").fit(X, y)
    model.save(tmp_path / "m")
    path = tmp_path / "m" / "manifest.json"
    manifest = json.loads(path.read_text())
    assert manifest["code"] == ["tests.nets_for_tests:small_bn_net"]
    path.write_text(json.dumps({**manifest, "code": []}))     # what it lists is not what counts
    with pytest.raises(saved.SavedModelError, match="tests.nets_for_tests:small_bn_net"):
        SBFNClassifier.load(tmp_path / "m")
    loaded = SBFNClassifier.load(tmp_path / "m", trust_plugins=True)
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))


# ------------------------------------------------------------------------- scikit-learn objects
def with_plugin(X, y, plugin):
    """A fitted estimator holding a fitted scikit-learn object, as a stacking estimator holds
    its base models (a fitted attribute, by scikit-learn's naming)."""
    model = SBFNRegressor(**FAST).fit(X, y)
    model.plugins_ = [plugin]
    return model


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("task", ["regression", "classification"])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_registry_model_loads_without_trust(diabetes, tmp_path, task, name):
    """TRUSTED_TYPES covers the estimators registry: a plug-in of any name loads as is."""
    X, y = diabetes
    y = y if task == "regression" else (y > np.median(y)).astype(int)
    params = competitor_configs(name, "default", task)[0]
    plugin = build_competitor(name, params, 0, task).fit(X, y)
    with_plugin(X, y, plugin).save(tmp_path / "m")
    loaded = saved.load(tmp_path / "m").plugins_[0]
    predict = "predict" if task == "regression" else "predict_proba"
    assert np.array_equal(getattr(loaded, predict)(X), getattr(plugin, predict)(X))


def doubled(X):
    return 2 * X


def test_a_scikit_learn_object_of_an_untrusted_type_needs_trust(diabetes, tmp_path):
    X, y = diabetes
    with_plugin(X, y, FunctionTransformer(doubled).fit(X)).save(tmp_path / "m")
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    function = f"{doubled.__module__}.doubled"
    assert manifest["sklearn"]["plugins_.0"]["untrusted_types"] == [function]
    manifest["sklearn"]["plugins_.0"]["untrusted_types"] = []      # the file's types count
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(saved.SavedModelError, match=function):
        saved.load(tmp_path / "m")
    loaded = saved.load(tmp_path / "m", trust_plugins=True)
    assert np.array_equal(loaded.plugins_[0].transform(X), 2 * X)


def test_labels_a_saved_model_cannot_hold_are_refused_naming_them(wine, tmp_path):
    """Datetime labels fit, then save raised torch's TypeError."""
    X, y = wine
    days = np.datetime64("2026-01-01") + np.unique(y, return_inverse=True)[1].astype(
        "timedelta64[D]")
    model = SBFNClassifier(**FAST).fit(X, days)
    with pytest.raises(saved.SavedModelError, match=r"cannot save classes_: an array of "
                                                    r"datetime64\[D\] values .*y.astype\(str\)"):
        model.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_what_no_other_process_can_import_is_refused_at_save(diabetes, tmp_path):
    """A lambda, a script's own class: saved, then a 12-frame traceback at every load."""
    X, y = diabetes
    script = type("Scaled", (FunctionTransformer,), {"__module__": "__main__"})
    for plugin, kind in ((FunctionTransformer(lambda z: 2 * z), "<lambda>"),
                         (script(doubled), "__main__.Scaled")):
        with pytest.raises(saved.SavedModelError, match=f"holds .*{kind}.*, which no other "
                                                        "process can import"):
            with_plugin(X, y, plugin.fit(X)).save(tmp_path / "m")
        assert not (tmp_path / "m").exists()


def test_every_loadable_estimator_is_the_one_the_package_exports():
    """saved.ESTIMATORS (the fixed table a manifest may name) and sbfn_dist's lazy exports
    agree, so a saved model loads as the class users import."""
    import sbfn_dist
    for name, module in saved.ESTIMATORS.items():
        assert sbfn_dist._EXPORTS[name] == module and getattr(sbfn_dist, name).__module__ == module
