"""Headless Chromium for the tests that open a page. `make test` installs no system package, so
where there is no browser those tests skip and say how to get one; `.ci/run` installs it."""

import os
import shutil

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    """The browser's path (SBFN_CHROMIUM, else the first of NAMES on PATH); skips without one."""
    path = os.environ.get("SBFN_CHROMIUM") or next(filter(None, map(shutil.which, NAMES)), None)
    if not path:
        pytest.skip(f"no headless Chromium: none of {', '.join(NAMES)} is on PATH and "
                    "SBFN_CHROMIUM is unset; install one (Debian: apt-get install chromium, "
                    "as .ci/run does) to run this test")
    return path
