"""A saved model's manifest names the format it was written in; one this version cannot read is
refused with what to do (issue 48, item 9): an upgrade only where a newer sbfn-dist wrote it."""

import json

import pytest

from sbfn_dist import __version__
from sbfn_dist.interfaces.saved import FORMAT, FORMAT_VERSION, MANIFEST, read_manifest
from sbfn_dist.errors import SbfnError


def saved(tmp_path, **manifest):
    (tmp_path / MANIFEST).write_text(json.dumps({"format": FORMAT, **manifest}))
    return tmp_path


def test_a_format_this_very_version_never_wrote_is_not_told_to_upgrade(tmp_path):
    """format_version 999 beside this version's own number was told to "upgrade sbfn-dist
    (this is 0.2.0)", the version it ran."""
    path = saved(tmp_path, format_version=999, library_version=__version__)
    with pytest.raises(SbfnError, match="gives format_version 999, which no sbfn-dist writes "
                                        "beside library_version") as refused:
        read_manifest(path)
    assert "upgrade" not in str(refused.value) and "edited or damaged" in str(refused.value)


def test_a_format_of_text_is_refused_in_one_line(tmp_path):
    with pytest.raises(SbfnError, match="gives format_version 'x'"):       # a TypeError before
        read_manifest(saved(tmp_path, format_version="x", library_version=__version__))


def test_a_newer_versions_format_is_told_to_upgrade(tmp_path):
    path = saved(tmp_path, format_version=FORMAT_VERSION + 1, library_version="99.0.0")
    with pytest.raises(SbfnError, match=f"saved by sbfn-dist 99.0.0 in a newer format; upgrade "
                                        f"sbfn-dist \\(this is {__version__}\\)"):
        read_manifest(path)
    assert read_manifest(saved(tmp_path, format_version=FORMAT_VERSION,
                               library_version=__version__))["format_version"] == FORMAT_VERSION
