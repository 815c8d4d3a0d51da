"""An exported model logged to MLflow: a pyfunc model (its code: serving.py) of the saved
directory, under the sweep's run, with its signature, input example, requirements and the code
of your member factories."""

import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from sbfn_dist.interfaces import saved
from sweeps.engine.common.environment import values_while
from sweeps.engine.common.tracking_uri import artifacts_beside, login
from sweeps.engine.results.recorded import Finished
from sweeps.engine.results.refit import Refit
from sweeps.engine.tracking.mlflow_runs import SweepTracker, client_environment
from sweeps.engine.tracking.serving import ARTIFACT, MODEL_CODE, TRUSTED, SavedSBFN


@dataclass
class Logged:
    uri: str                 # models:/<id>
    tracking_uri: str
    run_id: str


def log_model(finished: Finished, directory: Path, refit_: Refit, name: str, tags: dict,
              tracking_uri: str) -> Logged:
    """The saved directory as an MLflow pyfunc model of the sweep's run (found by its role tag,
    or opened: sweeps.engine.tracking.mlflow_runs), with its signature and an input example."""
    import mlflow
    from mlflow.models import Model, infer_signature
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    spec = finished.spec
    sweep = {k: spec[k] for k in ("name", "grid", "dataset", "task")}
    artifacts = artifacts_beside(tracking_uri)
    example = refit_.example
    with warnings.catch_warnings():
        # MLflow's hint that an integer column cannot hold a missing value: a csv: file's
        # integer columns are those pandas read without one (refit._inputs).
        warnings.filterwarnings("ignore", "Hint: Inferred schema contains integer", UserWarning)
        signature = infer_signature(example, _predicted(refit_.estimator, example))
    with client_environment(tracking_uri), _use_tracking_uri(login(tracking_uri).uri), \
            values_while(QUIET_MLFLOW), tempfile.TemporaryDirectory() as code:
        tracker = SweepTracker(tracking_uri, sweep, finished.store, artifacts)
        run = tracker.parent_id
        # Made here, in the sweep's experiment: Model.log would make it in MLflow's active
        # experiment (Default, its artifacts under ./mlruns), whatever run it names.
        model = tracker.client.create_logged_model(
            tracker.experiment_id, name, source_run_id=run, tags=tags,
            params={k: str(v) for k, v in refit_.estimator.get_params().items()})
        Path(code, "sbfn_pyfunc.py").write_text(MODEL_CODE)
        factories = saved.read_manifest(directory).get("code", [])
        Model.log(artifact_path=None, name=name, flavor=mlflow.pyfunc, run_id=run,
                  model_id=model.model_id, python_model=str(Path(code, "sbfn_pyfunc.py")),
                  artifacts={ARTIFACT: str(directory)}, signature=signature,
                  input_example=example, pip_requirements=requirements(),
                  model_config={TRUSTED: factories}, code_paths=factory_code(factories) or None)
    return Logged(f"models:/{model.model_id}", tracking_uri, run)


def factory_code(factories: list) -> list[str]:
    """The files of your member factories' top-level modules (a module, or a package's folder)
    that an MLflow model carries (code_paths: on sys.path where it loads, so that a server
    started anywhere imports them); installed packages' are requirements, not copied."""
    import importlib.util
    import sysconfig
    installed = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib",
                                                                    "stdlib")}
    out = []
    for top in dict.fromkeys(f.split(":")[0].split(".")[0] for f in factories):
        spec = importlib.util.find_spec(top)
        package = spec.submodule_search_locations        # a package's folder(s), else None
        where = Path(list(package)[0] if package else spec.origin).resolve()
        if not any(where.is_relative_to(i) for i in installed):
            out.append(str(where))
    return out


# What loading the model imports, pinned as installed here. Given, not inferred: MLflow's
# inference loads the model in a subprocess (seconds) and lists whatever the exporting process
# had imported (psutil, through Ray). sbfn-dist is this project (pip install -e . where it runs).
REQUIREMENTS = ("sbfn-dist", "torch", "numpy", "pandas", "scikit-learn", "skops", "mlflow")


def requirements() -> list[str]:
    from importlib.metadata import PackageNotFoundError, version
    out = []
    for name in REQUIREMENTS:
        try:
            out.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            out.append(name)
    return out


# MLflow draws a progress bar on stderr for every artifact it copies.
QUIET_MLFLOW = {"MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}


def _predicted(estimator, example):
    """What the pyfunc model answers for `example` (its signature's output)."""
    wrapper = SavedSBFN()
    wrapper.model = estimator
    return wrapper.predict(None, example)
