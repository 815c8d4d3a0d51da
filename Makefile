# The two set-up commands of the README. Each creates .venv on first use and installs the
# pinned set (constraints.txt) before running.
PY := .venv/bin/python
# The interpreter the venv is made from (pyproject: Python 3.11): the operating system's own
# where it has one that can make a venv (Debian: python3.11-venv), else python3;
# `make PYTHON=...` chooses. Debian builds its Python with profile-guided and link-time
# optimisation, which pyenv's default build leaves out: on this project's 2-core machines, whose
# python3 is such a pyenv build, the suite took 10-12% less CPU and time under Debian's
# (docs/benchmarks.md §11.5). An existing .venv is kept: `rm -r .venv` to make it again.
PYTHON ?= $(or $(shell /usr/bin/python3.11 -c 'import ensurepip' 2>/dev/null && echo /usr/bin/python3.11),python3)
DATA ?= $(abspath ../shared/data)
# The pinned set is installed by uv (itself pinned in constraints.txt, installed by the venv's
# pip): the same packages pip resolves, in 109 s where pip took 212 s on a fresh clone (the CUDA
# build of torch and its NVIDIA libraries are most of it; docs/benchmarks.md §11.3). Compiled to
# bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set (this machine kind) every process
# would compile what it imports again (torch's import: 6.7 CPU-s instead of 3.4).
# `$(INSTALL) '.[x,y]'` installs the project with its extras x and y.
INSTALL := .venv/bin/uv pip install --quiet --compile-bytecode --python $(PY) -c constraints.txt -e

.PHONY: demo test test-cluster bench

.venv/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv .venv
	.venv/bin/pip install --quiet -c constraints.txt uv
	$(INSTALL) '.[test]'
	touch $@

demo: .venv/.installed
	$(PY) -m sweeps.demo

# No system packages, no sudo: a test that needs a browser skips, saying why (-rs prints the
# reasons); .ci/run installs Chromium first.
# Three groups of tests at a time on the 2 cores (pytest-xdist); tests/conftest.py forms the
# groups, each run whole in one process so that its module and shared fixtures (a finished
# sweep, a Ray, an MLflow server) run once. Much of a sweep test's time is waiting for processes
# to start or stop (a driver, Ray's daemons, a trial worker importing torch): with two groups
# the cores were idle ~15% of the time, and a third fills it (625 -> 503 s; four: 509 s,
# docs/benchmarks.md §11). Every test holds beside others: each process has a Ray of its own
# (the sweep tests run in a process share it: tests/sweep_helpers.py, a_ray).
test: .venv/.installed
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m pytest -q -rs -n 3 --dist loadfile

# The many-machines tests (tests/test_cluster_hosts.py; docs/cluster.md, "Testing it"): a head
# and two workers made on this machine with network, mount and PID namespaces, docs/cluster.md's
# walkthrough run on them as written (`--connect`, `ray up` of cluster-local.yaml over real SSH,
# the sweep, the tunnel, the report), `--connect` on each broken host, and a sweep per scenario
# (a host lost, a partition, the driver killed, storage or data that is not shared, an image
# sweep). Root only, for the namespaces; the SSH server, rsync and iptables (a firewall rule
# inside a host) they need are installed when absent, as .ci/run installs Chromium. -v names
# each scenario as it starts. `make test` skips these tests.
CLUSTER_PACKAGES := openssh-server rsync iptables
test-cluster: .venv/.installed
	@[ "$$(id -u)" -eq 0 ] || { echo "make test-cluster needs root: its test hosts are network and mount namespaces"; exit 1; }
	@[ -x /usr/sbin/sshd ] && command -v rsync >/dev/null && command -v iptables >/dev/null || \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y $(CLUSTER_PACKAGES) || \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(CLUSTER_PACKAGES); }
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m pytest -v -rs -p no:cacheprovider --run-cluster tests/test_cluster_hosts.py

bench: .venv/.installed
	$(INSTALL) '.[test,bench]'
	SBFN_DATA_DIR=$${SBFN_DATA_DIR:-$(DATA)} $(PY) -m benchmarks
