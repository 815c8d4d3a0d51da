"""The layers and floors (docs/design.md): sbfn_dist never imports sweeps, analysis, Ray, MLflow
or Optuna; the modules the analysis layer reads (records and what it imports) never import torch,
nor does the driver of a tabular sweep; no module of the house imports a floor above its own or
joins an import circle; torch, Ray and Optuna load only in their rooms of the sweeps."""

import ast
import functools
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN_IN_LIBRARY = ("sweeps", "analysis", "ray", "mlflow", "optuna")


@functools.lru_cache(maxsize=None)
def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text())        # each file once, however many tests read it


def _import_statements(path: pathlib.Path, top_level: bool = False):
    """(module, names) of each absolute import in `path`: `import a.b` gives (a.b, ()), `from a
    import b, c` (a, (b, c)). top_level: only what runs on import (not inside a function)."""
    tree = _tree(path)
    for node in _module_level(tree) if top_level else ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, tuple(alias.name for alias in node.names)


def imported_modules(path: pathlib.Path, top_level: bool = False) -> set:
    """The modules `path` imports (see _import_statements)."""
    return {module for module, _ in _import_statements(path, top_level)}


def test_the_library_imports_no_upper_layer_and_no_service():
    offenders = {}
    for path in (ROOT / "sbfn_dist").rglob("*.py"):
        bad = {m for m in imported_modules(path) if m.split(".")[0] in FORBIDDEN_IN_LIBRARY}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert not offenders, offenders


def test_the_records_schema_loads_without_torch_or_scikit_learn():
    code = ("import sys, sbfn_dist.records, sbfn_dist.settings.config; "
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
from sbfn_dist.folds import check_data
from sweeps import regression
from sweeps.engine.plan import planning
from sweeps.engine.plan.grid_trials import smoke
from sweeps.engine.run import progress, trainable
from sweeps.engine.tracking import mlflow_runs
args = ["--dataset", "diabetes", "--grid", "demo", "--smoke", "--storage", {str(tmp_path)!r}]
assert regression.main([*args, "--dry-run"]) == 0
spec, _, opts = regression.build(args)
planned = planning.plan_sweep(smoke(spec), opts)
check_data(planned.configs)
print(len(planned.configs), "torch" in sys.modules)
# A worker's first trial imports torch with the collector paused, then freezes what it holds
# (sweeps/engine/common/collector.py); the collector is as it was, a later trial freezes nothing.
import gc
trainable._trial_module()
frozen = gc.get_freeze_count()
trainable._trial_module()
print(gc.isenabled(), frozen, gc.get_freeze_count() - frozen)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    n, torch_loaded, enabled, frozen, again = out.stdout.split()[-5:]
    assert int(n) > 1 and torch_loaded == "False"
    assert enabled == "True" and int(frozen) > 100_000 and int(again) == 0


def test_every_registered_column_is_documented():
    from sbfn_dist.records import COLUMNS
    text = (ROOT / "docs" / "results-table.md").read_text()
    assert not [c for c in COLUMNS if f"`{c}`" not in text]


# The library's floor plan (docs/design.md): a room imports only rooms on lower floors or its
# own; so no folder-level loop can form.
FLOORS = {"errors": 0, "runtime": 0, "results_dir": 0, "catalog": 0, "user_code": 0, "settings": 1,
          "records": 2, "data": 2, "learners": 3, "evaluation": 4, "combiners": 5, "folds": 6,
          "experiment": 6, "interfaces": 7, "__init__": 8, "__main__": 8}


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


# The whole house's floor plan (docs/design.md): the library, the analysis, then the sweeps'
# floors, each a folder or two. A module imports its own floor and lower ones, never one above --
# imports inside functions included. The one numbering: every docstring that names a floor
# quotes these.
HOUSE = ("sbfn_dist", "analysis", "sweeps")
ENGINE_FLOORS = {"common": 2, "plan": 3, "run": 4, "results": 5, "tracking": 5}
ENGINE_ROOT, COMMANDS, SWEEPS = 6, 7, 8
# The commands users type (python -m sweeps.NAME): public names, so sweeps/ holds them whatever
# its size; every other folder holds at most MAX_FILES.
COMMANDS_BY_NAME = {"__main__", "appendix", "cifar10", "classification", "cleanup", "demo",
                    "export", "fashion_mnist", "images", "mnist", "regression", "relog"}
MAX_FILES = 12


@functools.lru_cache(maxsize=None)
def house_modules() -> dict[str, pathlib.Path]:
    found = {}
    for top in HOUSE:
        for path in (ROOT / top).rglob("*.py"):
            found[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] \
                = path
    return found


def house_floor(module: str) -> int:
    parts = module.split(".")
    if parts[0] != "sweeps":
        return HOUSE.index(parts[0])
    if parts[1:2] == ["engine"]:
        return ENGINE_FLOORS.get(parts[2] if len(parts) > 2 else "", ENGINE_ROOT)
    return COMMANDS if parts[1:2] in (["commands"], ["tools"]) else SWEEPS


def house_imports(path: pathlib.Path, modules, *, top_level: bool = False) -> set:
    """The house's modules `path` imports (`from a.b import c` names the module a.b.c where it
    is one). top_level: only what runs on import (not inside a function's body)."""
    found = set()
    for module, names in _import_statements(path, top_level):
        found |= {f"{module}.{n}" if f"{module}.{n}" in modules else module for n in names} \
            or {module}
    return found & modules.keys()


def _module_level(tree):
    """Every node that runs when the module is imported: all but the bodies of functions."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=None)
def import_graph(top_level: bool = False) -> dict[str, set]:
    modules = house_modules()
    return {m: house_imports(p, modules, top_level=top_level) for m, p in modules.items()}


def test_no_module_of_the_house_imports_a_floor_above_its_own():
    upward = {m: sorted(i for i in imported if house_floor(i) > house_floor(m))
              for m, imported in import_graph().items()}
    assert not {m: bad for m, bad in upward.items() if bad}


def test_no_import_circle_anywhere_in_the_house():
    graph = import_graph()
    circles = [c for c in _strongly_connected(graph) if len(c) > 1]
    assert not circles


def _strongly_connected(graph: dict[str, set]) -> list[list[str]]:
    """Tarjan's components, iteratively (the graph has a few hundred modules)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]; counter[0] += 1; stack.append(root); on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]; counter[0] += 1
                    stack.append(child); on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop(); on.discard(member); component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle():
    assert [["a", "b"]] == [c for c in _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}})
                            if len(c) > 1]


def test_the_house_is_fewer_than_ten_floors_and_no_folder_crowded():
    floors = {house_floor(m) for m in house_modules()}
    assert floors == set(range(SWEEPS + 1)) and len(floors) < 10
    crowded = {}
    for folder in [ROOT / "sweeps", *(p for p in (ROOT / "sweeps").rglob("*") if p.is_dir())]:
        files = [p for p in folder.glob("*.py")
                 if not (folder == ROOT / "sweeps" and p.stem in COMMANDS_BY_NAME)]
        if len(files) > MAX_FILES:
            crowded[str(folder.relative_to(ROOT))] = len(files)
    assert not crowded
    commands = {p.stem for p in (ROOT / "sweeps").glob("*.py")} - {"__init__", "api"}
    assert commands <= COMMANDS_BY_NAME, "a new module at sweeps/'s top: a command? (docs/design.md)"


def test_each_floor_s_docstring_quotes_its_number():
    """One numbering: each folder's __init__.py names its floor as the constants above do, and the
    engine's table and docs/design.md's number the floors alike."""
    def doc(path):
        return " ".join(ast.get_docstring(_tree(ROOT / path)).split())
    rooms = {**{f"sweeps/engine/{f}": n for f, n in ENGINE_FLOORS.items()},
             "sweeps/commands": COMMANDS, "sweeps/tools": COMMANDS}
    assert not {r: n for r, n in rooms.items()
                if f"Floor {n} of the house" not in doc(f"{r}/__init__.py")}
    assert f"{ENGINE_ROOT} engine/ (this)" in doc("sweeps/engine/__init__.py")
    assert f"house's top floor ({SWEEPS})" in doc("sweeps/__init__.py")
    design = (ROOT / "docs" / "design.md").read_text()
    rows = {SWEEPS: "sweeps/ ", COMMANDS: "sweeps/commands/", ENGINE_ROOT: "sweeps/engine/",
            **{n: f"engine/{f}/" for f, n in ENGINE_FLOORS.items() if f != "tracking"},
            HOUSE.index("analysis"): "analysis/", HOUSE.index("sbfn_dist"): "sbfn_dist/"}
    assert not {n: room for n, room in rows.items() if f"\n{n}      {room}" not in design}


def repeated_names(root: pathlib.Path = ROOT) -> dict[str, list[str]]:
    """Each module or folder name used at two places inside one top package of the house
    (__init__ and __main__ aside): a name says one job. A grid folder, sweeps/grids/<task>/,
    may carry the name of its task's public command (sweeps/<task>.py), its data."""
    repeated = {}
    for top in HOUSE:
        places: dict[str, list[pathlib.Path]] = {}
        for path in (root / top).rglob("*"):
            if "__pycache__" in path.parts or path.stem in ("__init__", "__main__"):
                continue
            if path.is_dir() or path.suffix == ".py":
                places.setdefault(path.stem if path.is_file() else path.name, []).append(path)
        for name, paths in places.items():
            if name in COMMANDS_BY_NAME:
                paths = [p for p in paths if p != root / "sweeps" / "grids" / name]
            if len(paths) > 1:
                repeated[f"{top}: {name}"] = sorted(str(p.relative_to(root)) for p in paths)
    return repeated


def test_no_module_or_folder_name_is_used_twice_inside_a_top_package():
    assert not repeated_names()


def test_the_name_check_finds_a_name_used_twice(tmp_path):
    for made in ("sweeps/commands/images.py", "sweeps/images.py", "sweeps/grids/images/x.yaml",
                 "sweeps/grids/regression/x.yaml", "sweeps/regression.py", "analysis/a.py",
                 "sbfn_dist/x/stacking.py", "sbfn_dist/y/stacking.py"):
        (tmp_path / made).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / made).touch()
    assert repeated_names(tmp_path) == {
        "sweeps: images": ["sweeps/commands/images.py", "sweeps/images.py"],
        "sbfn_dist: stacking": ["sbfn_dist/x/stacking.py", "sbfn_dist/y/stacking.py"]}


# The doors: the only imports of the house inside a function in sweeps/, each from a light room
# into a heavy one, for a reason its comment gives (docs/design.md, "Torch and Ray by where
# things stand"). Anything else is imported at the top of its module.
DOORS = {
    ("sweeps.engine.sweep", "sweeps.engine.tune"),                # Ray, in the sweep's environment
    ("sweeps.engine.run.trainable", "sweeps.engine.run.trial"),   # torch, on the trial's worker
    ("sweeps.api", "sweeps.engine.results.refit"),                # torch, when a model is asked for
    ("sweeps.api", "sweeps.engine.model_export"),
    ("sweeps.engine.sweep", "sweeps.engine.tracking.study"),      # Optuna, for an Optuna sweep
    ("sweeps.engine.checks", "sweeps.engine.tracking.study"),
    ("sweeps.engine.tune", "sweeps.engine.tracking.study"),
    ("sweeps.engine.plan.grid_trials", "sbfn_dist.data.image_files"),     # torch, images only
    ("sweeps.engine.sweep", "sweeps.engine.run.estimate"),        # torch, an image dry run's probes
}
# What loads torch, Ray and Optuna on import (drawn from the module-level imports): every other
# module of sweeps/ loads none of them, which the tabular driver and a dry run rely on.
TORCH_ROOMS = {"sweeps.engine.run.trial", "sweeps.engine.results.refit",
               "sweeps.engine.tracking.serving", "sweeps.engine.tracking.mlflow_model",
               "sweeps.engine.model_export", "sweeps.commands.basis_trials", "sweeps.appendix",
               "sweeps.export", "sweeps.engine.run.estimate"}
RAY_ROOMS = {"sweeps.engine.run.trainable", "sweeps.engine.run.progress",
             "sweeps.engine.run.resources", "sweeps.engine.run.search",
             "sweeps.engine.tracking.study", "sweeps.engine.tracking.mlflow_logger",
             "sweeps.engine.tune"}
OPTUNA_ROOMS = {"sweeps.engine.tracking.study"}


def test_the_only_imports_inside_functions_in_the_sweeps_are_the_documented_doors():
    modules = house_modules()
    hidden = set()
    for m, path in modules.items():
        if m.startswith("sweeps"):
            inside = house_imports(path, modules) - house_imports(path, modules, top_level=True)
            hidden |= {(m, i) for i in inside}
    assert hidden == DOORS


def loading(package: str) -> set:
    """The sweeps modules whose import loads `package`: it, or a module of the house it imports
    at its top that does, imports the package at its top."""
    modules = house_modules()
    graph = import_graph(top_level=True)
    direct = {m for m, p in modules.items()
              if any(n == package or n.startswith(package + ".")
                     for n in imported_modules(p, top_level=True))}
    loads, changed = set(direct), True
    while changed:
        more = {m for m, imported in graph.items() if imported & loads} - loads
        loads |= more
        changed = bool(more)
    return {m for m in loads if m.startswith("sweeps")}


def test_torch_ray_and_optuna_load_only_in_their_rooms():
    assert loading("torch") == TORCH_ROOMS
    assert loading("ray") == RAY_ROOMS
    assert loading("optuna") == OPTUNA_ROOMS


def test_every_other_room_of_the_sweeps_imports_neither_torch_nor_ray_nor_optuna():
    """The drawing above checked by Python itself: every light room imported in one fresh
    interpreter (their modules load third-party packages the drawing does not follow)."""
    light = sorted(m for m in house_modules() if m.startswith("sweeps")
                   and m not in TORCH_ROOMS | RAY_ROOMS | OPTUNA_ROOMS)
    code = ("import importlib, sys\n"
            f"for m in {light!r}: importlib.import_module(m)\n"
            "print(sorted(p for p in ('torch', 'ray', 'optuna') if p in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert len(light) > 30 and out.stdout.split("\n")[-2] == "[]"


# Parts of torch a trial worker would load on import for a few functions (docs/benchmarks.md
# §11.6): each is imported inside the functions that use it, never at a module's top.
IMPORTED_WHERE_USED = {"torch.utils.flop_counter"}     # loads triton: ~0.15 CPU-s a process


def test_costly_parts_of_torch_are_imported_only_inside_the_functions_that_use_them():
    modules = house_modules()
    used = {m for m, p in modules.items() if imported_modules(p) & IMPORTED_WHERE_USED}
    on_import = {m for m, p in modules.items()
                 if imported_modules(p, top_level=True) & IMPORTED_WHERE_USED}
    assert used and not on_import, on_import


def test_no_test_imports_a_benchmark():
    """What tests and benchmarks both use lies in references/ (docs/design.md): a test that
    imports benchmarks/ makes a benchmark's edit break the suite."""
    offenders = {p.name: sorted(m for m in imported_modules(p) if m.split(".")[0] == "benchmarks")
                 for p in (ROOT / "tests").glob("*.py")}
    assert not {name: bad for name, bad in offenders.items() if bad}


def test_the_engines_lower_floors_import_nothing_from_the_analysis():
    """The code that writes results does not depend on the report that reads them: the
    results directory's layout lies below both (sbfn_dist/results_dir.py)."""
    lower = {m: sorted(i for i in imported if i.split(".")[0] == "analysis")
             for m, imported in import_graph().items()
             if m.startswith("sweeps.engine.") and m.split(".")[2] in ENGINE_FLOORS}
    assert not {m: bad for m, bad in lower.items() if bad}
