"""Write tests/durations.json from a pytest log of `--durations=0`: seconds per test group
(conftest.group_of), which `make test` schedules longest first (tests/conftest.py).

    .venv/bin/python -m pytest -q -n 3 --dist loadfile --durations=0 --durations-min=0 > LOG
    .venv/bin/python -m tests.durations LOG
"""

import json
import re
import sys
from collections import defaultdict

from tests.conftest import DURATIONS, group_of

# "12.34s call     tests/test_x.py::test_y[param]": setup and teardown count too (fixtures).
LINE = re.compile(r"^\s*([\d.]+)s\s+(?:setup|call|teardown)\s+(\S+)")


def group_seconds(lines) -> dict:
    seconds = defaultdict(float)
    for line in lines:
        if found := LINE.match(line):
            seconds[group_of(found[2])] += float(found[1])
    return {group: round(total, 1) for group, total in sorted(seconds.items())}


def main(argv: list[str]) -> int:
    with open(argv[0]) as log:
        seconds = group_seconds(log)
    if not seconds:
        print(f"{argv[0]}: no --durations=0 lines in it; run pytest with --durations=0")
        return 1
    DURATIONS.write_text(json.dumps(seconds, indent=1) + "\n")
    print(f"{DURATIONS}: {len(seconds)} groups, {sum(seconds.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
