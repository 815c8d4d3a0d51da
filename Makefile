# The two set-up commands of the README. Each creates .venv on first use and installs the
# pinned set (constraints.txt) before running.
PY := .venv/bin/python
DATA ?= $(abspath ../shared/data)

.PHONY: demo test bench

.venv/.installed: pyproject.toml constraints.txt
	python3 -m venv .venv
	.venv/bin/pip install --quiet --upgrade pip
	.venv/bin/pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

demo: .venv/.installed
	$(PY) -m sweeps.demo

# No system packages, no sudo: a test that needs a browser skips, saying why (-rs prints the
# reasons); .ci/run installs Chromium first.
test: .venv/.installed
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m pytest -q -rs

bench: .venv/.installed
	.venv/bin/pip install --quiet -c constraints.txt -e '.[test,bench]'
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m benchmarks
