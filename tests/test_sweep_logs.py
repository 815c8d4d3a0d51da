"""What a sweep prints by default: its own lines, the libraries' warnings and errors, no INFO
chatter from MLflow or Optuna and no colour codes when the output is a file or a pipe;
SweepOptions.verbose brings the chatter back. (A whole sweep's output is checked in
tests/test_sweep_credentials.py.)"""

import os
import subprocess
import sys
import tempfile
import textwrap

from sweeps.engine.common.environment import RAY_DEFAULTS, ray_environment
from sweeps.engine.common.tracking_uri import artifacts_beside
from sweeps.engine.plan.planning import SweepOptions
from sweeps.engine.tracking.mlflow_runs import open_experiment


def test_mlflow_creating_its_store_says_nothing_in_a_quiet_sweep(tmp_path, capfd):
    with ray_environment():
        uri = f"sqlite:///{tmp_path}/mlflow.db"
        open_experiment(uri, "quiet", artifacts_beside(uri))      # not ./mlruns
    assert "INFO" not in capfd.readouterr().err          # "Creating initial MLflow database ..."


OPTUNA_STUDY = textwrap.dedent("""
    import logging, sys
    import optuna
    from sweeps.engine.common.environment import ray_environment
    before = logging.getLogger("optuna").level
    with ray_environment(verbose=sys.argv[1] == "verbose"):
        optuna.create_study()
    assert logging.getLogger("optuna").level == before
""")


def optuna_says(mode: str) -> str:
    """What a study's creation prints to a real stderr (a pipe) inside a sweep's environment."""
    done = subprocess.run([sys.executable, "-c", OPTUNA_STUDY, mode], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


def test_optuna_is_quiet_unless_verbose_and_its_level_is_restored():
    assert "A new study created" not in optuna_says("quiet")
    assert "A new study created" in optuna_says("verbose")
    assert SweepOptions(name="s").verbose is False


RAY_PRINT = textwrap.dedent("""
    import sys, threading
    class Pipe:                      # stdout as a pipe, recording what Ray forwards to it
        def __init__(self): self.text, self.seen = "", threading.Event()
        def write(self, s):
            self.text += s
            if "from-a-trial" in self.text: self.seen.set()
        def flush(self): pass
        def isatty(self): return False
    pipe, out = Pipe(), sys.stdout
    sys.stdout = pipe
    from sweeps.engine.common.environment import ray_environment
    with ray_environment():
        import ray
        ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")
        ray.get(ray.remote(lambda: print("from-a-trial")).remote())
        assert pipe.seen.wait(60), "Ray never forwarded the trial's line"
        raylet = ray._private.worker.global_worker.node.all_processes["raylet"][0].process.pid
        environ = open(f"/proc/{raylet}/environ").read().split("\\0")
        ray.shutdown()
    environ = dict(v.split("=", 1) for v in environ if "=" in v)
    out.write(repr((pipe.text, environ.get("RAY_prestart_worker_first_driver"))))
""")


def test_the_ray_a_sweep_starts_forwards_trials_lines_without_colour_codes_in_a_pipe():
    """... and starts workers as trials need them (its raylet's settings, environment.py)."""
    # The sweep's environment alone sets them (conftest gives this process RAY_DEFAULTS).
    env = {k: v for k, v in os.environ.items() if k not in {"RAY_COLOR_PREFIX", *RAY_DEFAULTS}}
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as ray_tmp:   # short socket paths
        done = subprocess.run([sys.executable, "-c", RAY_PRINT], capture_output=True, text=True,
                              env={**env, "RAY_TMPDIR": ray_tmp}, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    forwarded, prestart = eval(done.stdout)       # noqa: S307 - our own repr
    assert "from-a-trial" in forwarded and "\x1b[" not in forwarded
    assert prestart == "0"
