import contextlib
import io
import json
import os
import pathlib

# Tests are small, and three test processes share two cores (Makefile): one thread for BLAS and
# OpenMP, as Ray gives a trial, set before numpy loads OpenBLAS. With two, their idle threads spin
# waiting for work: tests/test_stacking_estimators.py took 85.6 CPU-s with two, 67.6 with one, in
# the same wall time (docs/benchmarks.md §11.2). The commands the tests start inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402 - after the thread setting above

from sweeps.engine.common.collector import import_then_freeze
from sweeps.engine.common.environment import RAY_DEFAULTS

# Tests that start Ray themselves (ray.init in a fixture) do so outside a sweep's
# ray_environment: give them the same loopback, token-free Ray, before anything imports ray.
for _key, _value in RAY_DEFAULTS.items():
    os.environ.setdefault(_key, _value)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """The test modules import torch, Ray, MLflow and scikit-learn: with the collector paused,
    then frozen, as a trial worker does (sweeps/engine/common/collector.py): 1.5 CPU-s less per
    test process to collect, and the tests' collections skip what was imported."""
    with import_then_freeze():
        return (yield)


def pytest_collection_finish(session):
    """torch reads OMP_NUM_THREADS at import; one thread even where the shell set another
    value. Here, in the processes that run tests: xdist's controller collects nothing and never
    needs torch (2 CPU-s of imports it paid at every run)."""
    import torch
    torch.set_num_threads(1)


SHARED_DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_data_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("SBFN_DATA_DIR", SHARED_DATA))


@pytest.fixture
def data_dir():
    d = shared_data_dir()
    if not (d / "uci_air_quality" / "AirQualityUCI.csv").exists():
        pytest.skip(f"real UCI data not found under {d}; set SBFN_DATA_DIR to ../shared/data")
    return str(d)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A real `mlflow server` on 127.0.0.1 (sqlite store, local artifacts), for the session."""
    from sweeps.tools import mlflow_server as server
    from tests.sweep_helpers import free_port
    store = tmp_path_factory.mktemp("mlflow-server")
    for attempt in range(3):
        # A free port can be taken in the seconds the server takes to bind it (another test
        # process's Ray took one once: "[Errno 98] ... address already in use"): another port.
        port = free_port()
        try:
            server.start(store, str(store / "artifacts"), port=port, workers=1)
            break
        except RuntimeError as exc:
            if "address already in use" not in str(exc) or attempt == 2:
                raise
    yield f"http://127.0.0.1:{port}"
    server.stop(store)


# `make test` runs three groups of tests at a time (pytest-xdist --dist loadfile), each group
# whole in one process: a test file is a group, so that its module fixtures run once, and the
# files that share session fixtures (mlflow_server above, shared_sweeps below) are one group,
# so that each of those runs once.
SHARED_FIXTURE_FILES = ("test_sweep_credentials.py", "test_sweep_mlflow.py",
                        "test_sweep_optuna.py", "test_sweep_run.py")
# Seconds each group took (tests/durations.json, written by `python -m tests.durations LOG` from
# a run with --durations=0): the longest groups start first, so that the processes end
# together rather than one running the last long file alone (in the test-count order xdist
# used, 3 of the 8 minutes were one process's tail). Stale figures only cost speed.
DURATIONS = pathlib.Path(__file__).with_name("durations.json")


def group_of(nodeid: str) -> str:
    """The group a test runs in: its file, or "shared fixtures"."""
    file = nodeid.split("::", 1)[0]
    return "shared fixtures" if file.rpartition("/")[2] in SHARED_FIXTURE_FILES else file


def pytest_collection_modifyitems(config, items):
    """Under --dist loadfile, the groups in order of their last measured time, longest first
    (a new file, not yet measured, counts as long); each group's own tests keep their order.
    The workers collect, and xdist sets their --dist to "no" (its scheduler, FileGroups below,
    sends the groups in the order the workers collected them)."""
    if config.getvalue("dist") != "loadfile" and not hasattr(config, "workerinput"):
        return
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    unmeasured = max(seconds.values(), default=0.0)
    items.sort(key=lambda item: -seconds.get(group_of(item.nodeid), unmeasured))


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile in the order collected (the hook above), with SHARED_FIXTURE_FILES as one
    file. (Markers and --dist loadgroup would not do: xdist 3.8 renames the marked tests through
    an attribute pytest 9.2 no longer reads, and the groups fall apart.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling
    config.option.loadscopereorder = False      # xdist's own order: most tests first

    class FileGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return FileGroups(config, log)


@pytest.fixture(scope="module", autouse=True)
def no_ray_left_behind(request):
    """A test file marked own_ray starts without a Ray in its process (the suite's is stopped
    first: it starts or joins its own, or checks that a sweep starts one); after any file, a
    Ray other than the suite's is stopped (a sweep leaves the Ray it started running, as a
    notebook would want, and the next file would find it)."""
    import sys

    from tests.sweep_helpers import suite_ray_is_up
    own = request.node.get_closest_marker("own_ray") is not None
    if own and "ray" in sys.modules:
        sys.modules["ray"].shutdown()
    yield
    if "ray" in sys.modules and sys.modules["ray"].is_initialized() and not suite_ray_is_up():
        sys.modules["ray"].shutdown()


@pytest.fixture
def ray_connects(monkeypatch) -> list:
    """The calls a sweep run in this test makes to start or join Ray (engine.tune.connect_ray),
    for the checks that a refusal comes before Ray: with the suite's Ray up in this process,
    ray.is_initialized() would not tell."""
    from sweeps.engine import tune
    calls, real = [], tune.connect_ray

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(tune, "connect_ray", spy)
    return calls


@pytest.fixture(scope="session")
def shared_sweeps(tmp_path_factory):
    """Tiny sweeps that several test files read and never change, each run once per test
    process (SHARED_FIXTURE_FILES): shared_sweeps(*run_tiny's arguments) -> (its storage, its
    outcome, what it printed). A sweep runs when first asked for, in the suite's Ray."""
    from tests.sweep_helpers import a_ray, run_tiny
    done: dict = {}

    def sweep(*extra: str) -> tuple:
        if extra not in done:
            storage, out = tmp_path_factory.mktemp("shared"), io.StringIO()
            with a_ray(), contextlib.redirect_stdout(out):
                outcome = run_tiny(storage, *extra)
            done[extra] = storage, outcome, out.getvalue()
        return done[extra]

    return sweep


# ------------------------------------------------------------------ the many-machines tests
def pytest_addoption(parser):
    parser.addoption("--run-cluster", action="store_true",
                     help="run the tests marked cluster: separate hosts made with network and "
                          "mount namespaces on this machine, root only (`make test-cluster`)")


def pytest_runtest_setup(item):
    """The cluster tests run under `make test-cluster` only: they need root, and take minutes."""
    if item.get_closest_marker("cluster") and not item.config.getoption("--run-cluster"):
        if os.geteuid() != 0:
            pytest.skip("separate test hosts need root (network and mount namespaces): "
                        "`make test-cluster` as root runs them")
        pytest.skip("a cluster of separate test hosts: `make test-cluster` runs these")


def pytest_terminal_summary(terminalreporter):
    """What the cluster tests measured (docs/cluster.md, "Measured")."""
    import sys
    hosts = sys.modules.get("tests.cluster_hosts")
    if hosts is not None and hosts.FIGURES:
        terminalreporter.write_sep("-", "measured on the test hosts")
        for name, value in hosts.FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")
