"""The analysis layer reads results tables, the results directory's layout, the records registry
and the data-set catalogue, nothing else of the library: a report renders on a machine without
torch, ray or scikit-learn."""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "ray", "sklearn")


def test_the_report_imports_neither_torch_nor_ray_nor_sklearn():
    code = ("import sys, analysis.report, analysis.basis_comparison; "
            f"print(sorted(set({HEAVY!r}) & {{m.split('.')[0] for m in sys.modules}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


def library_imports(path: Path) -> list:
    """Every module of sbfn_dist that `path` imports (`from sbfn_dist import x` counts as
    sbfn_dist.x)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "sbfn_dist":
            found += [f"sbfn_dist.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
    return [m for m in found if m.split(".")[0] == "sbfn_dist"]


def test_analysis_imports_only_the_records_the_catalogue_and_the_results_directory():
    files = sorted((ROOT / "analysis").glob("*.py"))
    assert len(files) > 5
    used = {f.name: library_imports(f) for f in files}
    schema = {"sbfn_dist.records", "sbfn_dist.catalog", "sbfn_dist.results_dir",
              "sbfn_dist.errors"}      # errors: the commands' one-line refusals (Parser)
    assert {name: mods for name, mods in used.items() if set(mods) - schema} == {}
    assert any(used.values())       # the scan sees the imports that are there
