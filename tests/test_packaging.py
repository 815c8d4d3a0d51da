"""Packaging: every command the docs run comes from the installed package, and every
third-party module the code imports is a declared dependency."""

import functools
import importlib.metadata
import importlib.util
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Developer commands that measure a checkout (`make bench`, docs/benchmarks.md): not installed.
CHECKOUT_ONLY = {"benchmarks"}
COMMAND = re.compile(r"(?:python3?|\$\(PY\)) -m ([A-Za-z_][\w.]*)")


def installed_packages() -> list[str]:
    """The top-level packages pyproject installs (its packages.find include list)."""
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted({pattern.rstrip("*").rstrip(".") for pattern in include})


def documented_commands() -> dict[str, set[str]]:
    """`python -m X` in the README, the cluster YAMLs, docs/ and the Makefile: module -> files."""
    files = [ROOT / "README.md", ROOT / "Makefile", *ROOT.glob("cluster*.yaml"),
             *(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*.yaml")]
    found: dict[str, set[str]] = {}
    for path in files:
        for module in COMMAND.findall(path.read_text()):
            found.setdefault(module, set()).add(path.name)
    return found


@functools.cache
def distributions() -> dict[str, list[str]]:
    """Top-level module -> the installed distributions that provide it."""
    return importlib.metadata.packages_distributions()


def is_ours(module: str) -> bool:
    """Not the standard library's nor another distribution's (pip, venv, pytest)."""
    top = module.split(".")[0]
    others = set(distributions().get(top, [])) - {"sbfn-dist"}
    return top not in sys.stdlib_module_names and not others


def test_every_documented_command_lives_in_an_installed_package():
    commands = documented_commands()
    assert "sweeps.tools.check_cluster_yaml" in commands and "sweeps.regression" in commands
    outside = {m: sorted(files) for m, files in commands.items()
               if is_ours(m) and m.split(".")[0] not in installed_packages() + sorted(CHECKOUT_ONLY)}
    assert not outside, f"run from a checkout only, not installed by pyproject: {outside}"


def test_every_documented_command_resolves_outside_the_checkout(tmp_path):
    """find_spec from another directory: what a cluster node with the wheel installed finds."""
    ours = sorted(m for m in documented_commands() if is_ours(m) and m.split(".")[0]
                  not in CHECKOUT_ONLY)
    code = ("import importlib.util, sys\n"
            "def found(m):\n"
            "    try:\n"
            "        return importlib.util.find_spec(m) is not None\n"
            "    except ModuleNotFoundError:\n"       # its parent package is missing
            "        return False\n"
            "print([m for m in sys.argv[1:] if not found(m)])")
    out = subprocess.run([sys.executable, "-c", code, *ours], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == "[]", f"not importable from an installed sbfn-dist: {out}"
