"""The commands a sweep prints for what to do next (open the MLflow UI, build the report, log
what MLflow missed), runnable when pasted into a shell in the directory the sweep ran from.

`python -m ...` fails where `python` is not on PATH or is another interpreter than the one with
the project installed (the README runs everything as .venv/bin/python), so a command names the
interpreter that ran the sweep -- relative to the current directory when inside it, as the
README writes it -- and its console scripts beside it; every argument is shell-quoted.
"""

import os
import shlex
import sys


def interpreter() -> str:
    """This interpreter's path as a user would type it: .venv/bin/python inside the project.
    Not resolved: a virtual environment's python is a link to the base interpreter, which
    lacks the environment's packages."""
    path = os.path.abspath(sys.executable)
    relative = os.path.relpath(path)
    if relative.startswith(os.pardir):
        return path
    return relative if os.sep in relative else os.path.join(os.curdir, relative)  # not PATH's


def python_module(module: str, *args: str) -> str:
    """`<interpreter> -m module args...`, quoted for a shell."""
    return shlex.join([interpreter(), "-m", module, *map(str, args)])


def console_script(name: str, *args: str) -> str:
    """A package's command installed beside this interpreter (.venv/bin/mlflow), else the bare
    name (on PATH), quoted for a shell."""
    return shlex.join([installed(name) or name, *map(str, args)])


def installed(name: str) -> str | None:
    """The console script `name` beside this interpreter, if the package is installed."""
    beside = os.path.join(os.path.dirname(interpreter()), name)
    return beside if os.path.exists(beside) else None
