import os
import pathlib

import pytest
import torch

from sweeps.engine.environment import RAY_DEFAULTS

# Tests that start Ray themselves (ray.init in a fixture) do so outside a sweep's
# ray_environment: give them the same loopback, token-free Ray, before anything imports ray.
for _key, _value in RAY_DEFAULTS.items():
    os.environ.setdefault(_key, _value)

# Tests are small: one thread avoids oversubscribing the 2 cores (as in a Ray trial).
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
    import socket

    from sweeps.tools import mlflow_server as server
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = tmp_path_factory.mktemp("mlflow-server")
    server.start(store, str(store / "artifacts"), port=port, workers=1)
    yield f"http://127.0.0.1:{port}"
    server.stop(store)
