"""The tutorials say how long they take as measured, on a named CPU (issue 48, "What the
newcomer tripped on" 5): both said "about a minute" and took about two and three."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
CPUS = ("AMD EPYC", "Intel Xeon", "Apple M")


@pytest.mark.parametrize("name", ["tutorial-your-images.md", "tutorial-search-and-serve.md"])
def test_a_tutorial_s_time_is_a_measurement_on_a_named_cpu(name):
    opening = " ".join((DOCS / name).read_text().split("\n## ")[0].split())   # one line
    claim = re.search(r"in about (\w+) minutes? on two CPU cores \(all its commands took "
                      r"(\d+) s and (\d+) s on 2 cores of an? ([^,]+), as `lscpu` names it",
                      opening)
    assert claim, opening
    said, *measured, cpu = claim.groups()
    minutes = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}[said]
    assert all(abs(int(s) / 60 - minutes) <= 0.75 for s in measured), claim.group(0)
    assert cpu.startswith(CPUS), cpu
