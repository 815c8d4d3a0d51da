"""Packaging: every command the docs run comes from the installed package, and every
third-party module the code imports is a declared dependency."""

import ast
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
    allowed = set(installed_packages()) | CHECKOUT_ONLY
    outside = {m: sorted(files) for m, files in commands.items()
               if is_ours(m) and m.split(".")[0] not in allowed}
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


# ------------------------------------------------------------------ declared dependencies
def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """'ray[tune]>=2.60,<3' -> 'ray'."""
    return normalised(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement).group())


def declared(*extras: str) -> set[str]:
    project = PYPROJECT["project"]
    requirements = project["dependencies"] + [r for e in extras
                                              for r in project["optional-dependencies"][e]]
    return {requirement_name(r) for r in requirements}


def in_checkout(module: str) -> bool:
    """One of this project's folders (sbfn_dist, tests, benchmarks...), not a distribution."""
    return (ROOT / module).is_dir() or (ROOT / f"{module}.py").exists()


def third_party_imports(*folders: str) -> dict[str, set[str]]:
    """Top-level modules imported anywhere under `folders` that are neither the standard library
    nor this project: module -> the files importing it."""
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for top in {n.split(".")[0] for n in names}:
                    if top not in sys.stdlib_module_names and not in_checkout(top):
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


# The `bench` extra is not installed by `make test`: its modules whose distribution has another
# name (the rest, like torchensemble, count as provided by the distribution of their own name).
NOT_INSTALLED = {"pynvml": "nvidia-ml-py"}


def undeclared(imports: dict[str, set[str]], allowed: set[str]) -> dict[str, list[str]]:
    """The imports no allowed distribution provides (mlflow: any of mlflow, mlflow-skinny...)."""
    def providers(module: str) -> set[str]:
        fallback = [NOT_INSTALLED.get(module, module)]
        return {normalised(d) for d in distributions().get(module, fallback)}
    return {module: sorted(files) for module, files in imports.items()
            if not providers(module) & allowed}


def test_every_import_of_the_package_is_a_declared_dependency():
    imports = third_party_imports(*installed_packages())
    assert {"torch", "ray", "yaml", "scipy"} <= set(imports)
    assert not undeclared(imports, declared()), "add to pyproject's dependencies (a range)"


def test_tests_and_benchmarks_import_only_their_extras():
    assert not undeclared(third_party_imports("tests"), declared("test"))
    assert not undeclared(third_party_imports("benchmarks"), declared("bench"))


def test_pyproject_holds_ranges_and_constraints_pin_every_declared_distribution():
    project = PYPROJECT["project"]
    every = project["dependencies"] + [r for rs in project["optional-dependencies"].values()
                                       for r in rs]
    assert not [r for r in every if "==" in r], "exact pins belong in constraints.txt"
    pins = {requirement_name(line): line for line in (ROOT / "constraints.txt").read_text()
            .splitlines() if "==" in line}
    assert not {requirement_name(r) for r in every} - set(pins)


# ------------------------------------------------------------------ make test
def test_make_test_escalates_no_privileges_and_ci_provides_the_browser():
    """Every recipe `make test` would run from scratch (-B: as on a fresh clone)."""
    recipes = subprocess.run(["make", "-n", "-B", "test"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
    assert "pytest" in recipes
    assert not [w for w in ("sudo", "apt-get", "apt ") if w in recipes]
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("apt-get install -y chromium") < ci.rindex("\nmake test")


def test_pyproject_reads_without_a_setuptools_deprecation_warning():
    """The `project.license` table warned three times per install (issue 21); an SPDX string
    needs setuptools >= 77, which the build requires."""
    code = ("import warnings\n"
            "from setuptools.config.pyprojecttoml import apply_configuration\n"
            "from setuptools.dist import Distribution\n"
            "warnings.simplefilter('error')\n"
            "dist = apply_configuration(Distribution(), 'pyproject.toml')\n"
            "print(dist.metadata.license_expression)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "MIT", run.stderr[-2000:]
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]
