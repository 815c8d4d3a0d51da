"""The layers (docs/design.md): sbfn_dist never imports sweeps, analysis, Ray, MLflow or Optuna;
the modules the analysis layer reads (records and what it imports) never import torch, nor does
the driver of a tabular sweep."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN_IN_LIBRARY = ("sweeps", "analysis", "ray", "mlflow", "optuna")


def imported_modules(path: pathlib.Path) -> set:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_library_imports_no_upper_layer_and_no_service():
    offenders = {}
    for path in (ROOT / "sbfn_dist").rglob("*.py"):
        bad = {m for m in imported_modules(path) if m.split(".")[0] in FORBIDDEN_IN_LIBRARY}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, offenders


def test_the_records_schema_loads_without_torch_or_scikit_learn():
    code = ("import sys, sbfn_dist.settings.records, sbfn_dist.settings.config; "
            "print(sorted(m for m in ('torch', 'sklearn', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout.strip()
    assert out == "[]"


def test_a_tabular_sweeps_driver_plans_and_checks_its_trials_without_torch(tmp_path):
    """The command, its plan (packs keyed by sbfn_dist.folds.pack_key), the data checks made
    before Ray starts and what the driver reads of the trials (progress, MLflow, the trainable
    it hands Tune): ~1.7 CPU-s of torch's import saved per command; trials import it."""
    code = f"""
import sys
from sweeps import regression
from sweeps.engine.plan import planning
from sweeps.engine.tell import tracking
from sweeps.engine.run import progress, trainable
from sweeps.engine.plan.grids import smoke
from sbfn_dist.folds import check_data
args = ["--dataset", "diabetes", "--grid", "demo", "--smoke", "--storage", {str(tmp_path)!r}]
assert regression.main([*args, "--dry-run"]) == 0
spec, _, opts = regression.build(args)
planned = planning.plan_sweep(smoke(spec), opts)
check_data(planned.configs)
print(len(planned.configs), "torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    n, torch_loaded = out.stdout.split()[-2:]
    assert int(n) > 1 and torch_loaded == "False"


def test_every_registered_column_is_documented():
    from sbfn_dist.settings.records import COLUMNS
    text = (ROOT / "docs" / "results-table.md").read_text()
    assert not [c for c in COLUMNS if f"`{c}`" not in text]


# The library's floor plan (docs/design.md): a room imports only rooms on lower floors or its
# own; so no folder-level loop can form.
FLOORS = {"errors": 0, "runtime": 0, "settings": 1, "data": 2, "learners": 3, "evaluation": 4,
          "combiners": 5, "folds": 6, "experiment": 6, "interfaces": 7, "__init__": 8, "__main__": 8}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def library_imports(path: pathlib.Path) -> set:
    """The sbfn_dist modules `path` imports (`from sbfn_dist import x` names the module x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "sbfn_dist":
            found |= {f"sbfn_dist.{a.name}" for a in node.names if a.name != "__version__"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sbfn_dist."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("sbfn_dist.")}
    return found


def test_every_room_of_the_library_imports_only_rooms_below_it_or_itself():
    upward = {}
    for path in (ROOT / "sbfn_dist").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        mine = room(module)
        assert mine in FLOORS, f"{module}: a room the floor plan does not name (docs/design.md)"
        bad = sorted(m for m in library_imports(path) if FLOORS[room(m)] > FLOORS[mine])
        if bad:
            upward[module] = bad
    assert not upward, upward


def test_the_sweeps_engine_imports_no_command():
    """sweeps/ holds the commands users know by name (python -m sweeps.cifar10, ...) and the
    Python API; sweeps/engine/ everything they call, and it never calls back up."""
    upward = {}
    for path in (ROOT / "sweeps" / "engine").rglob("*.py"):
        bad = sorted(m for m in imported_modules(path)
                     if m.startswith("sweeps") and not m.startswith("sweeps.engine"))
        if bad:
            upward[str(path.relative_to(ROOT))] = bad
    assert not upward, upward
    commands = {p.stem for p in (ROOT / "sweeps").glob("*.py")}
    assert commands <= {"__init__", "__main__", "api", "appendix", "cifar10", "classification",
                        "cleanup", "demo", "export", "fashion_mnist", "images", "mnist",
                        "regression", "relog"}
