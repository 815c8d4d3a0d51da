"""Where data files come from: an explicit data dir, $SBFN_DATA_DIR, or a download cache.

Resolution order for a file ``<relative>`` (e.g. ``uci_air_quality/AirQualityUCI.csv``):

1. ``<data_dir>/<relative>`` for the explicit ``data_dir`` argument, else for ``$SBFN_DATA_DIR``;
2. ``<cache_dir>/<relative>`` (``$SBFN_CACHE_DIR`` or ``~/.cache/sbfn_dist``), downloading it
   there from the canonical address first when it is missing.

A gzipped copy ``<relative>.gz`` is accepted wherever ``<relative>`` is (pandas reads both).
Downloads go to a temporary file in the cache and are renamed into place only when complete,
so an interrupted run never leaves a half file that later runs would trust.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
import urllib.request
import zipfile
from typing import Callable

from sbfn_dist.catalog import offline_instead
from sbfn_dist.errors import DataError

DOWNLOAD_TIMEOUT_S = 10.0  # short: offline machines must fail fast, not hang a run

AIR_QUALITY_FILE = "uci_air_quality/AirQualityUCI.csv"
APPLIANCES_FILE = "uci_appliances_energy/energydata_complete.csv"
APPLIANCES_TEST_DATES_FILE = "uci_appliances_energy/candanedo2017_test_dates.txt"

# Canonical addresses, keyed by the relative path they produce. Tests point an entry at a
# dead loopback port to exercise the offline path honestly (a real refused connection).
URLS: dict[str, str] = {
    AIR_QUALITY_FILE: "https://archive.ics.uci.edu/static/public/360/air+quality.zip",
    APPLIANCES_FILE: "https://archive.ics.uci.edu/static/public/374/appliances+energy+prediction.zip",
    APPLIANCES_TEST_DATES_FILE: (
        "https://raw.githubusercontent.com/LuisM78/Appliances-energy-prediction-data/master/testing.csv"
    ),
}


def cache_dir() -> pathlib.Path:
    """The download cache: ``$SBFN_CACHE_DIR`` or ``~/.cache/sbfn_dist``."""
    return pathlib.Path(os.environ.get("SBFN_CACHE_DIR") or "~/.cache/sbfn_dist").expanduser()


def fetch(url: str, dest: pathlib.Path, timeout: float = DOWNLOAD_TIMEOUT_S) -> None:
    """Download ``url`` to ``dest`` (the single place that touches the network)."""
    with urllib.request.urlopen(url, timeout=timeout) as response, open(dest, "wb") as out:
        shutil.copyfileobj(response, out)


def _extract_zip_member(raw: pathlib.Path, out: pathlib.Path, name: str) -> None:
    # UCI zips have moved members into sub-folders before, so match on the base name.
    with zipfile.ZipFile(raw) as archive:
        members = [m for m in archive.namelist() if pathlib.PurePosixPath(m).name == name]
        if not members:
            raise DataError(f"downloaded archive has no member '{name}': the upstream file changed; "
                            f"download it by hand and pass --data-dir")
        with archive.open(members[0]) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)


def _test_dates_from_testing_csv(raw: pathlib.Path, out: pathlib.Path) -> None:
    # The authors' testing.csv holds the whole test table; only its timestamps are kept.
    import pandas as pd

    dates = pd.to_datetime(pd.read_csv(raw, usecols=["date"])["date"])
    out.write_text("\n".join(dates.dt.strftime("%Y-%m-%d %H:%M:%S")) + "\n")


# How a downloaded file becomes the cached file.
CONVERTERS: dict[str, Callable[[pathlib.Path, pathlib.Path], None]] = {
    AIR_QUALITY_FILE: lambda raw, out: _extract_zip_member(raw, out, "AirQualityUCI.csv"),
    APPLIANCES_FILE: lambda raw, out: _extract_zip_member(raw, out, "energydata_complete.csv"),
    APPLIANCES_TEST_DATES_FILE: _test_dates_from_testing_csv,
}


def _existing(directory: pathlib.Path, relative: str) -> pathlib.Path | None:
    for candidate in (directory / relative, directory / (relative + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def _download_to_cache(relative: str, target: pathlib.Path) -> None:
    """Download and convert into a temp dir next to ``target``, then rename atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".partial-") as tmp:
        raw, out = pathlib.Path(tmp) / "download", pathlib.Path(tmp) / "converted"
        fetch(URLS[relative], raw)
        CONVERTERS[relative](raw, out)
        os.replace(out, target)


def _explicit_dir(data_dir: str | None) -> tuple[pathlib.Path | None, str]:
    """The data dir to search first and where it came from (for messages)."""
    if data_dir is not None:
        return pathlib.Path(data_dir).expanduser(), "--data-dir"
    env = os.environ.get("SBFN_DATA_DIR")
    return (pathlib.Path(env).expanduser(), "SBFN_DATA_DIR") if env else (None, "")


def _missing_message(dataset: str, relative: str, searched: list[pathlib.Path], reason: str) -> str:
    where = ", ".join(str(d) for d in searched)
    return (f"data set '{dataset}' needs the file {relative}, which is not in {where} and could not be "
            f"downloaded from {URLS.get(relative, '(no known address)')} ({reason}). Fix: put the file at "
            f"DIR/{relative} and pass --data-dir DIR (or set SBFN_DATA_DIR=DIR), or run once with network "
            f"access to download it into the cache dir {cache_dir()} (set SBFN_CACHE_DIR to move it)"
            f"{offline_instead(dataset)}.")


def resolve_data_file(dataset: str, relative: str, data_dir: str | None = None) -> pathlib.Path:
    """Path of ``relative`` for ``dataset``: data dir first, then cache, then download into cache.

    Raises DataError if an explicit data dir does not exist, or the file is nowhere and the
    download fails (always the case offline).
    """
    explicit, origin = _explicit_dir(data_dir)
    searched = []
    if explicit is not None:
        if not explicit.is_dir():
            raise DataError(f"data dir {explicit} (from {origin}) does not exist: pass an existing "
                            f"directory that holds {relative}, or leave it unset to use the cache {cache_dir()}")
        searched.append(explicit)
        if found := _existing(explicit, relative):
            return found
    cache = cache_dir()
    searched.append(cache)
    if found := _existing(cache, relative):
        return found
    if relative not in URLS:
        raise DataError(_missing_message(dataset, relative, searched, "no download address is known"))
    try:
        _download_to_cache(relative, cache / relative)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:  # URLError is an OSError
        raise DataError(_missing_message(dataset, relative, searched, f"{type(exc).__name__}: {exc}")) from exc
    return cache / relative


def find_optional_file(dataset: str, relative: str, data_dir: str | None = None) -> pathlib.Path | None:
    """Like resolve_data_file, but None when the file cannot be had (for optional extras)."""
    try:
        return resolve_data_file(dataset, relative, data_dir)
    except DataError:
        return None
