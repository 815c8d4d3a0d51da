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

# The report test opens report.html in headless Chromium (Debian package `chromium`); installed
# once, only when /usr/bin/chromium is absent (about 1 minute).
.venv/.chromium: .venv/.installed
	@test -x /usr/bin/chromium || { SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium || \
	  { $$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }; }
	touch $@

test: .venv/.installed .venv/.chromium
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m pytest -q

bench: .venv/.installed
	.venv/bin/pip install --quiet -c constraints.txt -e '.[test,bench]'
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m benchmarks
