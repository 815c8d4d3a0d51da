"""What `python -m sweeps.tools.check_cluster_yaml --connect FILE` checks on the machines of an
on-prem cluster file (provider: local) before anything is started there: from the laptop,
with the file's own SSH user and key, one line per problem, each with its fix (Finding).

    the key      exists, is yours alone and has no passphrase: Ray's launcher and the head's
                 autoscaler log in unattended (the head gets a copy, ~/ray_bootstrap_key.pem)
    SSH          the head, and each worker through the head (as the head's autoscaler will
                 reach it), answer within CONNECT_S and take the key
    Python       the venv's (`source VENV/bin/activate` in setup_commands) is the project's
                 3.11 at one release on every machine (Ray refuses a node whose Python
                 differs from the head's) and imports Ray at the laptop's version and the
                 project; where `ray up` makes the venv, the interpreter it makes it with
    tools        rsync everywhere (`ray up` copies with it), ssh on the head (its autoscaler),
                 tmux on the head (a note: `ray exec --tmux` needs it)
    shared       the directory of SBFN_SHARED (setup_commands) writable on the head with
                 MIN_FREE_GB free, and a file the head wrote there seen by each worker
    homes        one home on every machine (NFS) while the setup still installs into it
    ports        every port the file's `ray start` commands name, listened on at each
                 machine's address and reached from each other machine (a short TCP probe),
                 and SSH from the head to each worker
    clocks       within CLOCK_S of the laptop's (a note)

Each step has a time limit: an address that never answers costs CONNECT_S, never a hang.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import queue
import re
import shlex
import stat
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

CONNECT_S = 5           # SSH's connect and banner timeout, per machine
STEP_S = 30             # one step's commands on a machine (a loaded machine imports Ray in ~3 s)
PROBE_S = 3             # one TCP probe between two machines
CLOCK_S = 2.0           # clocks further apart: a note (logs and MLflow times disagree)
MIN_FREE_GB = 1.0       # the shared directory's free space below which a sweep is refused here
# The ports `ray start` takes, by the flag that sets each (Ray's "Configuring Ray", Ports); a
# flag the file leaves out means a random port no firewall rule can name (a note).
PORT_FLAGS = {  # the flags of `ray start`, what listens on each port
              "--port": "the GCS", "--node-manager-port": "the node manager",
              "--object-manager-port": "the object manager",
              "--dashboard-agent-grpc-port": "the dashboard agent (gRPC)",
              "--dashboard-agent-listen-port": "the dashboard agent (HTTP)",
              "--min-worker-port": "the first worker port",
              "--max-worker-port": "the last worker port"}
NODE_PORTS = (  # `ray start`'s on every node
              "--node-manager-port", "--object-manager-port", "--min-worker-port",
              "--max-worker-port")
WALKTHROUGH = "docs/cluster.md, \"A lab's machines, step by step\""


@dataclass
class Finding:
    """One problem (fatal: a sweep cannot run) or note, on one machine or the laptop."""
    where: str
    text: str
    fatal: bool = True

    def line(self) -> str:
        return f"  {self.where}: {'' if self.fatal else 'note: '}{self.text}"


@dataclass
class Plan:
    """What the cluster file says the machines are and need."""
    head: str
    workers: list
    user: str
    key: str
    venv: str | None            # the venv's path as the file writes it (~ for the home)
    maker: str | None           # the interpreter setup_commands makes the venv with, if it does
    shared: str | None          # SBFN_SHARED
    ports: dict                 # address -> {port: what listens there}
    random_ports: list          # what the start commands leave to chance

    @property
    def machines(self) -> list:
        return [self.head, *self.workers]


def plan_of(config: dict) -> Plan:
    """The Plan of a cluster file (a local provider's, already validated by Ray)."""
    setup = " ".join(config.get("setup_commands") or [])
    head_ports, head_random = _ports(config.get("head_start_ray_commands"), head=True)
    node_ports, node_random = _ports(config.get("worker_start_ray_commands"), head=False)
    workers = list(config["provider"].get("worker_ips") or [])
    head = config["provider"]["head_ip"]
    return Plan(head=head, workers=workers,
                user=config["auth"]["ssh_user"],
                key=os.path.expanduser(config["auth"].get("ssh_private_key", "")),
                venv=_match(r"source\s+(\S+?)/bin/activate", setup),
                maker=_match(r"(python3(?:\.\d+)?)\s+-m\s+venv", setup),
                shared=_match(r"SBFN_SHARED=([^'\"\s]+)", setup),
                ports={**{w: node_ports for w in workers}, head: head_ports},
                random_ports=sorted(set(head_random) | set(node_random)))


def _match(pattern: str, text: str) -> str | None:
    found = re.search(pattern, text)
    return found[1] if found else None


def _ports(commands, head: bool) -> tuple[dict, list]:
    """{port: what} a machine's `ray start` listens on, and the flags it leaves out."""
    text = " ".join(commands or [])
    wanted = [f for f in PORT_FLAGS if head or f != "--port"]
    ports, random_ = {}, []
    for flag in wanted:
        value = _match(rf"{flag}[= ](\d+)", text)
        if value:
            ports[int(value)] = PORT_FLAGS[flag]
        elif flag in NODE_PORTS or flag == "--port":
            random_.append(flag)
    return ports, random_


# ------------------------------------------------------------------------------ the key
def key_problem(plan: Plan) -> Finding | None:
    """What keeps SSH from using the file's key: key_file_problem, a passphrase, or not a
    key."""
    key, where = plan.key, "auth.ssh_private_key"
    make = _make_a_key(key, plan.user)
    found = key_file_problem(key, plan.user)
    if found:
        return Finding(where, found)
    done = subprocess.run(["ssh-keygen", "-y", "-P", "", "-f", key], capture_output=True,
                          text=True, timeout=STEP_S, stdin=subprocess.DEVNULL)
    if done.returncode == 0:
        return None
    if "passphrase" in done.stderr:
        return Finding(where, f"the key {key} has a passphrase: Ray's launcher and the head's "
                              "autoscaler log in unattended (the head gets a copy of the key, "
                              f"~/ray_bootstrap_key.pem): {make}")
    return Finding(where, f"{key} is not a private key ssh can read ({_last(done.stderr)}): {make}")


def key_file_problem(key: str, user: str) -> str | None:
    """What keeps SSH from using the key file `key` (expanded) on this machine, asking no
    program: missing, unreadable, or readable by others (ssh refuses it). None if nothing.
    The offline check of a cluster file makes this check too (check_cluster_yaml)."""
    if not os.path.isfile(key):
        return f"the key {key} does not exist: {_make_a_key(key, user)}"
    if not os.access(key, os.R_OK):
        return f"the key {key} cannot be read by you: chmod 600 {key}"
    if os.stat(key).st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"the key {key} can be read by others, and ssh refuses such a key: chmod 600 {key}"
    return None


def _make_a_key(key: str, user: str) -> str:
    return (f"make a dedicated key without a passphrase: ssh-keygen -t ed25519 -N '' -f {key}, "
            f"then ssh-copy-id -i {key}.pub {user}@EACH_MACHINE ({WALKTHROUGH}, step 2)")


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no message"


# ------------------------------------------------------------------------------ SSH
def ssh_command(plan: Plan, address: str, command: str) -> list[str]:
    """ssh to `address` as the file's user with its key alone; a worker through the head, as
    the head's autoscaler reaches it."""
    options = ["-i", plan.key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
               "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "LogLevel=ERROR", "-o", f"ConnectTimeout={CONNECT_S}",
               "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"]
    if address != plan.head:
        # The head's own words on the hop (INFO): "connect failed: Connection refused"
        jump = shlex.join(["ssh", *options, "-o", "LogLevel=INFO", "-W", "%h:%p",
                           f"{plan.user}@{plan.head}"])
        options += ["-o", f"ProxyCommand={jump}"]
    return ["ssh", *options, f"{plan.user}@{address}", command]


def ssh_problem(plan: Plan, address: str, stderr: str, hop: str = "") -> str:
    """What an SSH that failed (exit 255) says, and the fix; `hop`: the head's own try at the
    worker's port 22 (the hop itself says only "stdio forwarding failed")."""
    reason, said = _last(stderr), f"{stderr} {hop}".lower()
    via = "" if address == plan.head else f" (reached through the head {plan.head}, as its " \
                                          "autoscaler will reach it)"
    if "connection refused" in said:
        return (f"SSH refused at {address}:22{via}: no SSH server listens there: start one "
                "(sudo apt install openssh-server; sudo systemctl enable --now ssh)")
    if "permission denied" in said:
        return (f"{address} does not take the key {plan.key} for {plan.user}{via}: "
                f"ssh-copy-id -i {plan.key}.pub {plan.user}@{address}")
    if any(w in said for w in ("timed out", "no route", "unreachable")):
        return (f"no answer from {address}:22 within {CONNECT_S} s{via} ({reason}): check its "
                "address in the file, that it is on, and that a firewall lets SSH (22) in")
    return f"SSH to {plan.user}@{address} failed{via}: {reason}"


def run_on(plan: Plan, address: str, command: str) -> subprocess.CompletedProcess:
    """`command` on `address` over SSH, within STEP_S (a timeout reads as exit 255)."""
    try:
        return subprocess.run(ssh_command(plan, address, command), capture_output=True,
                              text=True, timeout=STEP_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([], 255, "", f"timed out after {STEP_S} s")


# ------------------------------------------------------------------------------ step 1: facts
FACTS_PY = """import platform, sys
print("python=" + platform.python_version())
for name, module in (("ray", "ray"), ("project", "sbfn_dist")):
    try:
        mod = __import__(module)
        print(name + "=" + getattr(mod, "__version__", "ok"))
    except Exception as exc:
        print(name + "_error=" + type(exc).__name__ + ": " + str(exc).splitlines()[0][:200])
"""
MAKER_PY = """import platform
print("python=" + platform.python_version())
try:
    import ensurepip, venv
    print("ray=made by ray up")
except ImportError as exc:
    print("venv_error=" + str(exc))
"""


def _home(path: str) -> str:
    """A path as the file writes it, for a remote shell: ~ expands there."""
    return '"$HOME"' + shlex.quote(path[1:]) if path.startswith("~/") else shlex.quote(path)


def facts_script(plan: Plan, address: str, token: str) -> str:
    """A shell script printing key=value facts of the machine; on the head it also leaves the
    markers the workers look for (step 2)."""
    lines = ["echo time=$(date +%s.%N)", "echo host=$(hostname)",
             "for t in rsync ssh tmux; do command -v $t >/dev/null && echo tool=$t; done"]
    if plan.maker:
        lines.append(f"{plan.maker} -c {shlex.quote(MAKER_PY)} 2>&1 || echo python=missing")
    elif plan.venv:
        python = f"{_home(plan.venv)}/bin/python"
        lines.append(f"if [ -x {python} ]; then {python} -c {shlex.quote(FACTS_PY)} 2>&1; "
                     "else echo python=missing; fi")
    if plan.shared:
        shared = _home(plan.shared)
        lines += [f"[ -d {shared} ] && echo shared=dir", f"[ -w {shared} ] && echo shared=writable"]
        if address == plan.head:
            lines += [f"printf ok > {shared}/.sbfn-preflight-{token} && echo marker=written",
                      f"echo free_kb=$(df -Pk {shared} | tail -1 | awk '{{print $4}}')"]
    if address == plan.head:
        lines.append(f"printf ok > ~/.sbfn-preflight-{token}")
        lines += [_tcp_line(worker, 22) for worker in plan.workers]
    return "\n".join(lines)


def _tcp_line(address: str, port: int) -> str:
    """A shell line printing tcp_ADDRESS:PORT=ok or why not (bash's /dev/tcp within PROBE_S):
    the head's view of a worker's SSH, which a hop through the head does not report."""
    target = f"{address}:{port}"
    return (f"why=$(timeout {PROBE_S} bash -c 'exec 3<>/dev/tcp/{address}/{port}' 2>&1) "
            f"&& echo tcp_{target}=ok || echo tcp_{target}=${{why:-timed out}}")


def parse_facts(stdout: str) -> dict:
    facts: dict = {"tool": set()}
    for line in stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key in ("tool", "shared"):
            facts.setdefault(key, set()).add(value)
        else:
            facts.setdefault(key, value)
    return facts


def gather(plan: Plan, token: str) -> dict:
    """address -> (its facts, the laptop's clock before and after asking) or an SSH problem;
    the workers only once the head answered (they are reached through it)."""
    head = _facts_of(plan, plan.head, token)
    if isinstance(head, str):
        not_checked = (f"not checked: it is reached through the head {plan.head}, which does "
                       "not answer")
        return {plan.head: head, **{w: not_checked for w in plan.workers}}
    hops = {w: head[0].get(f"tcp_{w}:22", "") for w in plan.workers}
    with ThreadPoolExecutor(max(1, len(plan.workers))) as pool:
        workers = dict(zip(plan.workers, pool.map(
            lambda w: _facts_of(plan, w, token, hops[w]), plan.workers)))
    return {plan.head: head, **workers}


def _facts_of(plan: Plan, address: str, token: str, hop: str = ""):
    before = time.time()
    done = run_on(plan, address, facts_script(plan, address, token))
    after = time.time()
    if done.returncode == 255:
        return ssh_problem(plan, address, done.stderr, hop)
    return parse_facts(done.stdout), before, after


# ------------------------------------------------------------------------------ step 2: probes
PROBE_PY = """import json, os, socket, sys, threading
spec = json.loads(sys.argv[1])
listening, busy = [], []
for port in spec["listen"]:
    s = socket.socket()
    try:
        s.bind((spec["address"], port)); s.listen(64); listening.append(s)
    except OSError:
        busy.append(port)
print("busy=" + json.dumps(busy))
print("seen=" + json.dumps({k: os.path.exists(os.path.expanduser(p))
                           for k, p in spec["look"].items()}))
print("listening", flush=True)
sys.stdin.readline()
reached = {}
def probe(address, port):
    try:
        socket.create_connection((address, port), timeout=spec["timeout"]).close()
        reached[address + ":" + str(port)] = "ok"
    except socket.timeout:
        reached[address + ":" + str(port)] = "timed out"
    except OSError as exc:
        reached[address + ":" + str(port)] = exc.strerror or str(exc)
threads = [threading.Thread(target=probe, args=t) for t in spec["reach"]]
for t in threads: t.start()
for t in threads: t.join()
print("reached=" + json.dumps(reached), flush=True)
sys.stdin.readline()
for path in spec["remove"]:
    try: os.remove(os.path.expanduser(path))
    except OSError: pass
"""


class Prober:
    """PROBE_PY on one machine over SSH: it listens on the machine's ports, says so, probes
    the others' once told to go, and listens on until told to end: every machine listens
    before any probes, and until all have."""

    def __init__(self, plan: Plan, address: str, python: str, spec: dict):
        command = f"{python} -c {shlex.quote(PROBE_PY)} {shlex.quote(json.dumps(spec))}"
        self.process = subprocess.Popen(ssh_command(plan, address, command), text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.said: dict = {}

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, word: str, deadline: float) -> bool:
        """Read its lines up to `word` (key=value ones kept), within the deadline."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if line is None:
                return False
            key, sep, value = line.partition("=")
            if sep:
                self.said[key] = json.loads(value)
            if (key if sep else line) == word:
                return True

    def tell(self, word: str, last: bool = False) -> None:
        try:
            self.process.stdin.write(word + "\n")
            self.process.stdin.flush()
            if last:
                self.process.stdin.close()
        except OSError:
            pass                        # it ended already: what it said is what there is

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def probe_spec(plan: Plan, address: str, token: str, reachable: list) -> dict:
    """What `address` listens on, looks for and probes: every port of the others that
    answered, and (the head) SSH on each worker."""
    reach = [(other, port) for other in reachable if other != address
             for port in plan.ports.get(other, {})]
    markers = {"home": f"~/.sbfn-preflight-{token}",
               **({"shared": f"{plan.shared}/.sbfn-preflight-{token}"} if plan.shared else {})}
    head = address == plan.head
    if head:
        reach += [(w, 22) for w in reachable if w != plan.head]
    return {"address": address, "listen": sorted(plan.ports.get(address, {})), "reach": reach,
            "look": {} if head else markers, "remove": list(markers.values()) if head else [],
            "timeout": PROBE_S}


def probe(plan: Plan, pythons: dict, token: str) -> dict:
    """address -> what its Prober said (busy, seen, reached), for the machines with a Python
    (`pythons`: address -> the interpreter to probe with)."""
    spec = {a: probe_spec(plan, a, token, list(pythons)) for a in pythons}
    probers = {a: Prober(plan, a, python, spec[a]) for a, python in pythons.items()}
    try:
        deadline = time.monotonic() + STEP_S
        ready = {a: p.until("listening", deadline) for a, p in probers.items()}
        for p in probers.values():
            p.tell("go")
        deadline = time.monotonic() + STEP_S
        for a, p in probers.items():
            if ready[a]:
                p.until("reached", deadline)
        for p in probers.values():
            p.tell("end", last=True)
        for p in probers.values():      # the head removes its markers as it ends
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.process.wait(timeout=PROBE_S)
        return {a: p.said for a, p in probers.items()}
    finally:
        for p in probers.values():
            p.end()


# ------------------------------------------------------------------------------ verdicts
@dataclass
class Machines:
    """What the steps found, by address; the verdicts read it."""
    plan: Plan
    facts: dict                         # address -> facts dict (answered) or an SSH problem
    clock: dict = field(default_factory=dict)      # address -> seconds off the laptop's
    probes: dict = field(default_factory=dict)     # address -> its Prober's words

    def name(self, address: str) -> str:
        host = self.facts.get(address)
        hostname = host.get("host") if isinstance(host, dict) else None
        return f"{address} ({hostname})" if hostname and hostname != address else address

    def answered(self) -> list:
        return [a for a in self.plan.machines if isinstance(self.facts.get(a), dict)]


def verdicts(found: Machines) -> list[Finding]:
    checks = (ssh_verdicts, python_verdicts, tool_verdicts, shared_verdicts, home_verdicts,
              port_verdicts, clock_verdicts)
    return [finding for check in checks for finding in check(found)]


def ssh_verdicts(found: Machines) -> list[Finding]:
    return [Finding(a, facts) for a, facts in found.facts.items() if isinstance(facts, str)]


def python_verdicts(found: Machines) -> list[Finding]:
    """The venv's Python and packages, each machine against the project, the laptop's Ray and
    the head's release."""
    plan, out = found.plan, []
    if not (plan.venv or plan.maker):
        return [Finding("setup_commands", "no venv named (`source VENV/bin/activate`, as "
                        "cluster-local.yaml writes it): its Python and Ray are not checked",
                        fatal=False)]
    required = importlib.metadata.metadata("sbfn_dist")["Requires-Python"]
    head = found.facts.get(plan.head, {})
    head_python = head.get("python") if isinstance(head, dict) else None
    for address in found.answered():
        out += _python_of(found, address, required, head_python)
    return out


def _python_of(found: Machines, address: str, required: str, head_python) -> list[Finding]:
    plan, facts, name = found.plan, found.facts[address], found.name(address)
    what = plan.maker or f"{plan.venv}/bin/python"
    fix = (f"build the venv with Python 3.11 ({WALKTHROUGH}, step 4)" if not plan.maker else
           f"install {plan.maker} and its venv module (Debian: sudo apt install "
           f"{plan.maker}-venv)")
    python = facts.get("python")
    if python in (None, "missing"):
        return [Finding(name, f"{what} is missing: {fix}")]
    if not _allowed(python, required):
        return [Finding(name, f"{what} is Python {python}; the project needs {required}: {fix}")]
    if head_python and python != head_python:
        return [Finding(name, f"{what} is Python {python}, the head's {head_python}: Ray refuses "
                              "a node whose Python differs from the head's, to the release; "
                              f"one venv on the shared directory for all ({WALKTHROUGH}, step 4)")]
    for problem in ("venv_error", "ray_error", "project_error"):
        if problem in facts:
            return [Finding(name, f"{what} cannot import what a sweep needs "
                                  f"({facts[problem]}): install the pinned set into it: pip "
                                  "install -c constraints.txt -e . \"ray[default]==2.60.0\"")]
    ray_here = importlib.metadata.version("ray")
    if not plan.maker and facts.get("ray") != ray_here:
        return [Finding(name, f"{what} has Ray {facts.get('ray')}, the laptop's `ray up` "
                              f"{ray_here}: one version on every machine: pip install "
                              f"\"ray[default]=={ray_here}\"")]
    return []


def _allowed(version: str, required: str) -> bool:
    """Whether `version` meets a Requires-Python of >= and < clauses (the project's:
    ">=3.11,<3.12")."""
    have = tuple(int(x) for x in version.split(".")[:2])
    for clause in required.replace(" ", "").split(","):
        bound = tuple(int(x) for x in clause.lstrip("<>=").split(".")[:2])
        if (clause.startswith(">=") and have < bound) or (clause.startswith("<") and have >= bound):
            return False
    return True


def tool_verdicts(found: Machines) -> list[Finding]:
    out = []
    for address in found.answered():
        tools, name = found.facts[address]["tool"], found.name(address)
        if "rsync" not in tools:
            out.append(Finding(name, "no rsync: `ray up` copies the working tree with it: "
                                     "sudo apt install rsync"))
        if address == found.plan.head and "ssh" not in tools:
            out.append(Finding(name, "no ssh client: the head's autoscaler starts the workers "
                                     "over SSH: sudo apt install openssh-client"))
        if address == found.plan.head and "tmux" not in tools:
            out.append(Finding(name, "no tmux: `ray exec --tmux` (a sweep that outlives your "
                                     "laptop's session) needs it: sudo apt install tmux",
                               fatal=False))
    return out


def shared_verdicts(found: Machines) -> list[Finding]:
    """The shared directory: there, writable and with room on the head, the head's file seen
    from every worker."""
    plan = found.plan
    if not plan.shared:
        return [Finding("setup_commands", "no shared directory named (export SBFN_SHARED=DIR, as "
                        "cluster-local.yaml writes it): whether the machines share one is not "
                        "checked", fatal=False)]
    mount = f"mount it at {plan.shared} on every machine ({WALKTHROUGH}, step 3)"
    out = []
    for address in found.answered():
        shared, name = found.facts[address].get("shared", set()), found.name(address)
        if "dir" not in shared:
            out.append(Finding(name, f"{plan.shared} does not exist: {mount}"))
        elif address == plan.head and "writable" not in shared:
            out.append(Finding(name, f"{plan.shared} is not writable by {plan.user}: give the "
                                     "user the directory (the same UID on every machine)"))
        elif address == plan.head:
            out += _room(found, name)
        elif not _seen(found, address, "shared"):
            out.append(Finding(name, f"{plan.shared} is not shared: a file the head wrote there "
                                     f"is not seen here (a directory of this machine's own "
                                     f"disk): {mount}"))
    return out


def _room(found: Machines, name: str) -> list[Finding]:
    free = int(found.facts[found.plan.head].get("free_kb") or 0) / 2**20
    if free < MIN_FREE_GB:
        return [Finding(name, f"{found.plan.shared} has {free:.2f} GB free: results, MLflow's "
                              "artifacts and the data need more; free at least "
                              f"{MIN_FREE_GB:g} GB")]
    return []


def _seen(found: Machines, address: str, marker: str) -> bool:
    """Whether `address` saw the head's "home" or "shared" marker file (step 2)."""
    return bool(found.probes.get(address, {}).get("seen", {}).get(marker))


def home_verdicts(found: Machines) -> list[Finding]:
    """One home for all (NFS) while the setup makes and installs the venv there: each machine
    would pip-install into the one venv at once."""
    if not found.plan.maker:
        return []
    shared = [a for a in found.answered() if a != found.plan.head and _seen(found, a, "home")]
    return [Finding(found.name(a), "its home is the head's (NFS), and setup_commands install "
                    "the venv there on every machine at once: build one venv on the shared "
                    f"directory and drop the install commands ({WALKTHROUGH}, step 4)")
            for a in shared]


def port_verdicts(found: Machines) -> list[Finding]:
    """Ports taken on a machine, and every port a machine could not reach on another, one line
    per pair of machines."""
    out = [Finding(found.plan.head, "the start commands leave " + ", ".join(found.plan.random_ports)
                   + " to chance: no firewall rule can name those ports; set them as "
                     "cluster-local.yaml does", fatal=False)] if found.plan.random_ports else []
    listening = {a for a, said in found.probes.items() if "busy" in said}
    for address, said in found.probes.items():
        if address not in listening:
            out.append(Finding(found.name(address), "the port probe did not start there (no "
                               "python3?): its ports are not checked", fatal=False))
        elif said["busy"]:
            out.append(Finding(found.name(address), f"port(s) {_list(said['busy'])} already taken "
                               "(a Ray running there? `ray down` first, or run this before "
                               "`ray up`; another program: choose other ports in the file)"))
        out += _unreached(found, address, said.get("reached", {}), listening)
    return out


def _unreached(found: Machines, address: str, reached: dict, listening: set) -> list[Finding]:
    """One finding per machine `address` could not reach on some port, and why; machines
    whose probe did not listen are left out (nothing answered for them)."""
    failed: dict = {}
    for target, result in reached.items():
        other, port = target.rsplit(":", 1)
        if result != "ok" and (other in listening or port == "22"):
            failed.setdefault((other, result), []).append(int(port))
    return [Finding(found.name(address), f"cannot reach {found.name(other)} on TCP "
                    f"{_list(ports)} ({result}: a firewall between them?): open these ports "
                    f"between the machines ({WALKTHROUGH}, step 5)")
            for (other, result), ports in failed.items()]


def _list(ports) -> str:
    return ", ".join(str(p) for p in sorted(ports))


def clock_verdicts(found: Machines) -> list[Finding]:
    return [Finding(found.name(a), f"its clock is {off:+.1f} s off the laptop's: logs, MLflow's "
                    "times and file ages disagree between machines: run NTP there "
                    "(sudo timedatectl set-ntp true)", fatal=False)
            for a, off in found.clock.items() if abs(off) > CLOCK_S]


def clock_offset(host_time: float, before: float, after: float) -> float:
    """How far a machine's clock read between `before` and `after` (the laptop's) lies
    outside that span: 0 within it, the SSH round trip being all the precision there is."""
    return host_time - min(max(host_time, before), after)


# ------------------------------------------------------------------------------ the run
def preflight(config: dict) -> tuple[list[Finding], str]:
    """Every check, in order; (the findings, a summary of what was checked)."""
    plan = plan_of(config)
    problem = key_problem(plan)
    if problem:
        return [problem], "no machine asked"
    token = uuid.uuid4().hex[:12]
    facts = gather(plan, token)
    found = Machines(plan, {a: f if isinstance(f, str) else f[0] for a, f in facts.items()})
    found.clock = {a: clock_offset(float(f[0].get("time", f[1])), f[1], f[2])
                   for a, f in facts.items() if not isinstance(f, str)}
    found.probes = probe(plan, _probe_pythons(found), token)
    return verdicts(found), _summary(found)


def _probe_pythons(found: Machines) -> dict:
    """The interpreter each machine that answered probes with: the venv's where it runs,
    else the system's python3."""
    plan, out = found.plan, {}
    for address in found.answered():
        good = found.facts[address].get("python") not in (None, "missing")
        out[address] = (plan.maker or f"{_home(plan.venv)}/bin/python") if good and (
            plan.maker or plan.venv) else "python3"
    return out


def _summary(found: Machines) -> str:
    plan = found.plan
    head = found.facts.get(plan.head)
    python = head.get("python") if isinstance(head, dict) else "?"
    free = int(head.get("free_kb") or 0) / 2**20 if isinstance(head, dict) else 0
    ports = sorted({p for ports in plan.ports.values() for p in ports})
    return (f"{len(found.answered())} of {len(plan.machines)} machines answer {plan.user} with "
            f"{plan.key}; Python {python}"
            + (f"; {plan.shared} shared ({free:.1f} GB free)" if plan.shared else "")
            + f"; TCP {_list(ports)} and SSH probed between them")
