"""The layers (docs/design.md): sbfn_dist never imports sweeps, analysis, Ray, MLflow or Optuna;
the modules the analysis layer reads (records and what it imports) never import torch."""

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
    code = ("import sys, sbfn_dist.records, sbfn_dist.config; "
            "print(sorted(m for m in ('torch', 'sklearn', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout.strip()
    assert out == "[]"


def test_every_registered_column_is_documented():
    from sbfn_dist.records import COLUMNS
    text = (ROOT / "docs" / "results-table.md").read_text()
    assert not [c for c in COLUMNS if f"`{c}`" not in text]
