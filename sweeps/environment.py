"""The environment a sweep gives Ray while it runs, and nowhere else: importing sweeps changes
nothing (a notebook that imports it keeps its own settings).

    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0   a local Ray binds 127.0.0.1 (Linux too), not the
                                          machine's network address
    RAY_AUTH_MODE=disabled                no auth-token notice, no ~/.ray/auth_token written
    RAY_AIR_NEW_OUTPUT=0                  Tune's legacy output, which honours verbose=0: the
                                          sweep's own progress line replaces Tune's tables

Ray reads the first when `ray` is first imported (ray._private.ray_constants), so the sweep
plans without importing Ray and sets these before it connects; a process that imported Ray
before the sweep binds wherever that import decided (set the variable yourself then). The other
two are read by ray.init and Tuner.fit. A variable the user set is never changed.
"""

import contextlib
import os

RAY_DEFAULTS = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
                "RAY_AIR_NEW_OUTPUT": "0"}


def ray_environment():
    """RAY_DEFAULTS while the sweep runs. The Ray processes started inside keep the values:
    they inherited them at start."""
    return defaults_while(RAY_DEFAULTS)


@contextlib.contextmanager
def defaults_while(values: dict):
    """`values` for the variables not set, for the duration of the block; afterwards those the
    block set (and nothing else changed since) are removed again."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key, value in added.items():
            if os.environ.get(key) == value:
                del os.environ[key]
