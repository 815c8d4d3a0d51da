"""Separate machines on one Linux machine, for the many-machines tests (tests/test_cluster_hosts.py;
docs/cluster.md, "Testing it: separate hosts on one machine").

    Hosts(3) as hosts:       hosts[0] the head, hosts[1:] the workers, each:
      network  a namespace of its own: one address on a bridge of the root namespace (the
               "laptop", which holds the bridge's address), `lo`, and no default route: a host
               reaches only the other hosts and the laptop, and nothing leaves the bridge
      mounts   a namespace of its own: private /tmp, /run, /dev/shm, home (/root: a directory of
               the run, kept across a restart like a disk) and scratch directory (the same path
               on every host, a different tmpfs on each); everything else, the venv and the
               shared directory (`hosts.shared`, the lab's NFS) included, is the same on every
               host. A shared path that lies under a private one (a clone in /tmp) is bound back
      PIDs     a namespace of its own whose first process (an init that reaps orphans, as a
               machine's does) runs the host's sshd: `ray stop` there stops that host's Ray
               only, and killing that first process ends the whole host
      hostname its own (UTS namespace), so the records name their host
      SSH      Debian's sshd on the host's address, the run's host key, the run's client key
               (its own authorized_keys file: root's own is never touched)
    hosts.laptop(args)       a command run as on the user's laptop: in the root network
                             namespace, with a /tmp of its own (Ray's launcher keeps its cluster
                             state and SSH sockets there) and a PID namespace that ends with it
                             (Cluster gives it a home of the run's, hosts.laptop_home)
    Cluster(hosts).block(name), run_block(name)   docs/cluster.md's walkthrough block `name`
                             (marked "make test-cluster runs this block"), run as written on
                             the filled cluster-local.yaml
    hosts.kill(host), hosts.link(host, up), hosts.restart(host)   a host lost, cut off, back
    hosts.firewall(host, rule)   an iptables rule inside a host's network namespace (flush())
    hosts.bind(host, source, target)   a directory of the host's own over a shared one (unbind)
    hosts.close()            everything down: every host's processes (SIGKILL of its first
                             process ends its namespace), the namespaces, the bridge, the files

Root only, never under `make test`: Hosts() refuses in one line where it cannot run (HostsUnavailable).
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"
# A range reserved for network tests (RFC 2544), inside the hosts' namespaces and the bridge only.
TEST_RANGE = ipaddress.ip_network("198.18.0.0/16")
PRIVATE_ROOTS = ("/tmp", "/root")      # what each host has of its own, under which shared paths hide
FIGURES: dict = {}                     # what the cluster tests measured (conftest.py prints it)
NEEDED = {"ip": "iproute2", "unshare": "util-linux", SSHD: "openssh-server",
          "ssh-keygen": "openssh-client", "rsync": "rsync", "iptables": "iptables"}


class HostsUnavailable(Exception):
    """Why separate hosts cannot be made here, in one line."""


def check_can_run() -> None:
    """Root, the tools, and `ip netns` that works; else HostsUnavailable saying which is missing."""
    if os.geteuid() != 0:
        raise HostsUnavailable("separate test hosts need root (network and mount namespaces): "
                               "run `make test-cluster` as root")
    missing = sorted({pkg for tool, pkg in NEEDED.items() if not shutil.which(tool)})
    if missing:
        raise HostsUnavailable(f"separate test hosts need the Debian packages {', '.join(missing)} "
                               "(`make test-cluster` installs them when absent)")
    probe = f"sbfn-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if made.returncode:
        raise HostsUnavailable(f"`ip netns add` fails here ({made.stderr.strip()}): separate test "
                               "hosts need network namespaces")


@dataclass
class Host:
    name: str                   # its hostname too
    address: str
    netns: str
    veth: str                   # its link's end on the bridge (the root namespace's side)
    home: Path                  # its /root
    process: subprocess.Popen | None = None     # `unshare`, whose child is the host's first process

    def first_pid(self) -> int | None:
        """The host's first process (its init, PID 1 inside), as the root namespace numbers it."""
        if self.process is None or self.process.poll() is not None:
            return None
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        try:
            pids = children.read_text().split()
        except OSError:
            return None
        return int(pids[0]) if pids else None

    def pids(self) -> list[int]:
        """Every process of the host (its PID namespace), as the root namespace numbers them."""
        first = self.first_pid()
        if first is None:
            return []
        try:
            ns = os.readlink(f"/proc/{first}/ns/pid")
        except OSError:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.readlink(entry / "ns" / "pid") == ns:
                        found.append(int(entry.name))
                except OSError:
                    pass            # exited meanwhile
        return found

    def commands(self) -> dict[int, str]:
        """The command line of each of its processes (Ray's processes set their titles)."""
        lines = {}
        for pid in self.pids():
            try:
                lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ") \
                    .decode(errors="replace").strip()
            except OSError:
                pass
        return lines


class Hosts:
    """`count` hosts on a bridge; the first is meant as the head. A context manager."""

    def __init__(self, count: int, base: str = "/var/tmp", also_shared: tuple = ()):
        """`also_shared`: more paths every host sees as this machine does (another Python's
        prefix under /root)."""
        check_can_run()
        subnet = _free_subnet()
        run_id = f"{os.getpid() % 100000}"
        # Not under /tmp: the hosts' own /tmp hides it, and every host needs the run's files.
        self.dir = Path(tempfile.mkdtemp(prefix=f"sbfn-hosts-{run_id}-", dir=base))
        self.shared = self.dir / "shared"        # the lab's NFS: the same directory everywhere
        self.scratch = self.dir / "scratch"      # the same path everywhere, its own on each host
        self.also_shared = list(also_shared)
        self.laptop_home = self.dir / "laptop-home"     # the laptop's ~ (not this machine's)
        self.key = self.dir / "ssh" / "id_ed25519"
        self.bridge = f"sbbr{run_id}"
        addresses = list(subnet.hosts())
        self.laptop_address = str(addresses[0])
        self.prefix = subnet.prefixlen
        self.hosts = [Host(f"sbfn-h{i}", str(addresses[i + 1]), f"sbfn-{run_id}-h{i}",
                           f"sbv{run_id}h{i}", self.dir / f"h{i}" / "home") for i in range(count)]
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    # --- making -----------------------------------------------------------------------
    def _make(self) -> None:
        for d in (self.shared, self.scratch, self.key.parent, self.dir / "laptop-tmp",
                  self.laptop_home):
            d.mkdir(parents=True)
        _keys(self.key.parent)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.laptop_address}/{self.prefix}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for host in self.hosts:
            host.home.mkdir(parents=True)
            _ip("netns", "add", host.netns)
            _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns",
                host.netns)
            _ip("link", "set", host.veth, "master", self.bridge, "up")
            _ip("-n", host.netns, "addr", "add", f"{host.address}/{self.prefix}", "dev", "eth0")
            _ip("-n", host.netns, "link", "set", "eth0", "up")
            _ip("-n", host.netns, "link", "set", "lo", "up")
            self.start(host)
        for host in self.hosts:
            self.wait_for_ssh(host)

    def start(self, host: Host) -> None:
        """Boot `host`: its namespaces and its sshd (its link as it is)."""
        hostdir = host.home.parent
        config = hostdir / "sshd_config"
        config.write_text(_sshd_config(host.address, self.key.parent, hostdir))
        script = _boot_script(host, self.scratch, hostdir / "hold", config,
                              _shared_paths(self.shared, self.also_shared))
        log = open(hostdir / "boot.log", "a")
        host.process = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--pid", "--uts", "--fork",
             "--mount-proc", "--propagation", "private", "sh", "-c", script],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()

    def wait_for_ssh(self, host: Host, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if host.process.poll() is not None:
                raise RuntimeError(f"{host.name} did not boot: "
                                   f"{(host.home.parent / 'boot.log').read_text()[-2000:]}")
            probe = subprocess.run(self.ssh(host, "true"), capture_output=True)
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"no SSH to {host.name} after {timeout} s: "
                                   f"{probe.stderr.decode()[-500:]}")
            time.sleep(0.3)

    def ssh(self, host: Host, command: str, *options: str) -> list[str]:
        """An SSH command line from the laptop to `host` (the harness's own look inside)."""
        return ["ssh", "-i", str(self.key), "-o", "IdentitiesOnly=yes", "-o",
                "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o",
                "LogLevel=ERROR", "-o", "ConnectTimeout=5", "-o", "BatchMode=yes", *options,
                f"root@{host.address}", command]

    def forward(self, host: Host, port: int, to: int) -> subprocess.Popen:
        """127.0.0.1:`port` of the laptop forwarded to 127.0.0.1:`to` of `host`, as `ray attach
        -p` does (the caller ends the process)."""
        return subprocess.Popen(self.ssh(host, "", "-N", "-L", f"127.0.0.1:{port}:127.0.0.1:{to}"),
                                stdin=subprocess.DEVNULL)

    # --- what happens to machines ------------------------------------------------------
    def kill(self, host: Host) -> None:
        """Every process of `host` ends at once (SIGKILL of its first process: the kernel kills
        the rest of its PID namespace), as when it loses power."""
        first = host.first_pid()
        if first is not None:
            os.kill(first, signal.SIGKILL)
        if host.process is not None:
            host.process.wait()
        deadline = time.monotonic() + 10
        while host.pids():
            assert time.monotonic() < deadline, f"{host.name}'s processes outlived it"
            time.sleep(0.1)

    def link(self, host: Host, up: bool) -> None:
        """Its network cable in or out (the bridge's end of its link)."""
        _ip("link", "set", host.veth, "up" if up else "down")

    def firewall(self, host: Host, *rule: str) -> None:
        """`iptables RULE` in the host's network namespace (its own tables: nothing else's)."""
        subprocess.run(["ip", "netns", "exec", host.netns, "iptables", *rule], check=True,
                       capture_output=True)

    def flush(self, host: Host) -> None:
        self.firewall(host, "-F")

    def bind(self, host: Host, source: Path, target: str) -> None:
        """`source` over `target` in the host's mount namespace alone (as a machine whose own
        directory stands where the others have the shared one)."""
        done = subprocess.run(self.ssh(host, f"mount --bind {shlex.quote(str(source))} "
                                             f"{shlex.quote(target)}"), capture_output=True)
        assert done.returncode == 0, done.stderr

    def unbind(self, host: Host, target: str) -> None:
        subprocess.run(self.ssh(host, f"umount {shlex.quote(target)}"), capture_output=True)

    def restart(self, host: Host) -> None:
        """A lost host booted again: a fresh /tmp and processes, the same home, its link up."""
        self.kill(host)
        self.link(host, True)
        self.start(host)
        self.wait_for_ssh(host)

    def laptop(self, args: list[str], cwd: str | Path, timeout: float, env: dict | None = None,
               log: Path | None = None) -> subprocess.CompletedProcess:
        """`args` as run on the user's laptop: the root network namespace, a /tmp of its own
        (kept across commands, as a laptop's), and a PID namespace whose end ends whatever the
        command left behind (SSH control masters)."""
        return subprocess.run(self.laptop_command(args), cwd=cwd, env=env, timeout=timeout,
                              stdin=subprocess.DEVNULL, text=True, stderr=subprocess.STDOUT,
                              stdout=open(log, "a") if log else subprocess.PIPE)

    def laptop_command(self, args: list[str]) -> list[str]:
        """The laptop's /tmp is its own, with what of the run lies under it bound back (a clone
        in /tmp: its venv, the repository the commands run in)."""
        under_tmp = _under([str(ROOT), *_shared_paths(self.shared, self.also_shared)], ("/tmp",))
        own_tmp = f"mount --bind {shlex.quote(str(self.dir / 'laptop-tmp'))} /tmp"
        script = ["set -e", *_bound_back(under_tmp, self.dir / "laptop-hold", [own_tmp]),
                  "exec " + shlex.join(args)]
        return ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--propagation",
                "private", "sh", "-c", "\n".join(script)]

    # --- teardown ----------------------------------------------------------------------
    def keep_logs(self, to: Path) -> None:
        """The laptop's log, each host's boot log and Ray's logs (from the host's own /tmp),
        copied to `to` (SBFN_TEST_HOSTS_LOGS: what to read when a cluster test fails)."""
        to.mkdir(parents=True, exist_ok=True)
        for log in self.dir.glob("*.log"):
            shutil.copy(log, to)
        for host in self.hosts:
            mine = to / host.name
            mine.mkdir(exist_ok=True)
            shutil.copy(host.home.parent / "boot.log", mine)
            if host.first_pid():
                for logs in host_path(host, "/tmp/ray").glob("session_2*/logs"):
                    shutil.copytree(logs, mine / logs.parent.name, dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("*.sock", "events", "old"))

    def close(self) -> None:
        if os.environ.get("SBFN_TEST_HOSTS_LOGS"):
            try:
                self.keep_logs(Path(os.environ["SBFN_TEST_HOSTS_LOGS"]))
            except OSError as exc:
                print(f"teardown: logs not kept: {exc}", file=sys.stderr)
        for host in self.hosts:
            try:
                self.kill(host)
            except Exception as exc:  # noqa: BLE001 - tear down the rest whatever happens
                print(f"teardown: {host.name}: {exc}", file=sys.stderr)
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Hosts":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getitem__(self, i: int) -> Host:
        return self.hosts[i]


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 of TEST_RANGE that no address or route of this machine touches (another run's
    bridge holds one)."""
    seen = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout + \
        subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    for subnet in TEST_RANGE.subnets(new_prefix=24):
        if f"{subnet.network_address}"[:-1] not in seen:    # "198.18.7." not seen
            return subnet
    raise HostsUnavailable(f"every /24 of {TEST_RANGE} is in use on this machine")


def _keys(d: Path) -> None:
    """The run's host key and client key; the client's public key is the hosts' only login."""
    for name in ("host_ed25519", "id_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "sbfn-test-hosts",
                        "-f", str(d / name)], check=True)
    shutil.copy(d / "id_ed25519.pub", d / "authorized_keys")


def _sshd_config(address: str, keys: Path, hostdir: Path) -> str:
    return "\n".join([
        f"ListenAddress {address}", "Port 22", f"HostKey {keys / 'host_ed25519'}",
        f"AuthorizedKeysFile {keys / 'authorized_keys'}", f"PidFile {hostdir / 'sshd.pid'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
        # Ray's launcher and autoscaler open many sessions at once over one connection.
        "MaxSessions 100", "MaxStartups 100:30:200", "LogLevel ERROR", ""])


def _shared_paths(shared: Path, also: list = ()) -> list[str]:
    """What every host must see as the laptop does, though it may lie under a private root: the
    venv (this interpreter's prefix), the Python it was made from, the shared directory, the
    data directory of the tests, and `also`."""
    paths = {sys.prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
             str(shared), *map(str, also)}
    data = os.environ.get("SBFN_DATA_DIR")
    if data and os.path.isdir(data):
        paths.add(os.path.realpath(data))
    return _under(paths, PRIVATE_ROOTS)


def _under(paths, roots) -> list[str]:
    """Those of `paths` that lie under one of `roots` (or are one), sorted, each once."""
    return sorted({p for p in paths if any(p == r or p.startswith(r + "/") for r in roots)})


def _boot_script(host: Host, scratch: Path, hold: Path, sshd_config: Path,
                 bound_back: list[str]) -> str:
    """Inside the host's new namespaces: its hostname, its private directories, the shared paths
    that lie under them bound back, then its init, which runs sshd."""
    q = shlex.quote
    private = ["mount -t tmpfs -o mode=1777 tmpfs /tmp", "mount -t tmpfs tmpfs /run",
               "mkdir -p /run/sshd", "mount -t tmpfs -o mode=1777 tmpfs /dev/shm",
               f"mount --bind {q(str(host.home))} /root",
               f"mount -t tmpfs -o mode=1777 tmpfs {q(str(scratch))}"]
    lines = ["set -e", f"hostname {host.name}", *_bound_back(bound_back, hold, private),
             f"exec {q(sys.executable)} -c {q(INIT)} {SSHD} -D -e -f {q(str(sshd_config))}"]
    return "\n".join(lines)


def _bound_back(paths: list[str], hold: Path, private: list[str]) -> list[str]:
    """Shell lines: each of `paths` held at hold/N, the `private` mounts that hide them, then
    each path bound back from its hold."""
    q = shlex.quote
    lines = [f"mkdir -p {q(str(hold))}"]
    for i, path in enumerate(paths):
        lines += [f"mkdir -p {q(str(hold))}/{i}", f"mount --rbind {q(path)} {q(str(hold))}/{i}"]
    lines += private
    for i, path in enumerate(paths):
        lines += [f"mkdir -p {q(path)}", f"mount --rbind {q(str(hold))}/{i} {q(path)}"]
    return lines


# The host's first process: it starts sshd and reaps every process left to it, as a machine's
# init does. Without it, a Ray process whose parent had exited stayed a zombie, and the agents
# that watch it (the dashboard and runtime-env agents) ran on for good after `ray down`.
INIT = """import os, subprocess, sys
sshd = subprocess.Popen(sys.argv[1:])
while os.wait()[0] != sshd.pid:
    pass
sys.exit(1)"""


def reachable(address: str, port: int, timeout: float = 1.0) -> bool:
    try:
        socket.create_connection((address, port), timeout=timeout).close()
        return True
    except OSError:
        return False


# ------------------------------------------------------------------------- the cluster on them
ROOT = Path(__file__).resolve().parents[1]
VENV_IN_FILE = "~/sbfn-venv"        # cluster-local.yaml's venv, where the file says to fill it in
SHARED_IN_FILE = "/mnt/sbfn"        # its shared directory
INSTALLS = ("python3.11 -m venv", "pip install")     # its install commands


def filled_cluster_file(hosts: Hosts, template: Path = ROOT / "cluster-local.yaml") -> str:
    """cluster-local.yaml filled in where it says to: the machines' addresses, the SSH user and
    key, the shared directory, and the venv already on it (this interpreter's, so no install
    commands: the hosts have no internet)."""
    import yaml
    config = yaml.safe_load(template.read_text())
    config["provider"]["head_ip"] = hosts[0].address
    config["provider"]["worker_ips"] = [h.address for h in hosts.hosts[1:]]
    config["auth"] = {"ssh_user": "root", "ssh_private_key": str(hosts.key)}
    config["setup_commands"] = [c for c in config["setup_commands"]
                                if not any(i in c for i in INSTALLS)]
    text = yaml.safe_dump(config, sort_keys=False, width=1000)
    return text.replace(VENV_IN_FILE, sys.prefix).replace(SHARED_IN_FILE, str(hosts.shared))


# docs/cluster.md's walkthrough: the blocks `make test-cluster` runs, each marked by name
WALKTHROUGH = ROOT / "docs" / "cluster.md"
BLOCK = re.compile(r"<!-- make test-cluster runs this block: (\S+) -->\n```bash\n(.*?)\n```", re.S)


def walkthrough() -> dict[str, str]:
    """name -> the text of each block of docs/cluster.md that the tests run as written."""
    blocks = dict(BLOCK.findall(WALKTHROUGH.read_text()))
    assert blocks, f"no block of {WALKTHROUGH} is marked for the tests"
    return blocks


class Cluster:
    """The filled cluster-local.yaml, and docs/cluster.md's walkthrough run on it from the
    laptop (`block`): `ray up`, the sweep, the tunnel, `ray down`, ... each from the repository
    root, as the docs say; and the harness's own `ray exec` of other commands."""

    def __init__(self, hosts: Hosts):
        self.hosts = hosts
        self.file = hosts.dir / "cluster-local.yaml"
        self.file.write_text(filled_cluster_file(hosts))
        self.log = hosts.dir / "laptop.log"
        # Ray's usage statistics off: nothing of the run may leave this machine (`ray up` passes
        # the setting on to every node's Ray). The laptop's data as the test run's
        # (SBFN_DATA_DIR: the walkthrough's `ray rsync-up` reads it).
        self.env = {"PATH": f"{sys.prefix}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "HOME": str(hosts.laptop_home), "LANG": "C.UTF-8",
                    "RAY_USAGE_STATS_ENABLED": "0",
                    **{k: os.environ[k] for k in ("SBFN_DATA_DIR",) if k in os.environ}}

    def block(self, name: str, file: Path | None = None, edit=None) -> str:
        """The walkthrough's block `name` as the tests run it: the filled file (or `file`) for
        cluster-local.yaml and the run's shared directory for /mnt/sbfn; `edit(text)` a
        test's own change (asserted to change something)."""
        text = walkthrough()[name]
        if edit is not None:
            edited = edit(text)
            assert edited != text, f"the edit does not apply to the block {name!r}: {text}"
            text = edited
        return text.replace("cluster-local.yaml", str(file or self.file)) \
            .replace(SHARED_IN_FILE, str(self.hosts.shared))

    def run_block(self, name: str, timeout: float = 300, **how) -> subprocess.CompletedProcess:
        """The block in bash on the laptop, stopping at a failing command; its output in .stdout
        and in the laptop's log."""
        text = self.block(name, **how)
        self.note(f"the walkthrough's block {name!r}")
        done = self.hosts.laptop(["bash", "-e", "-o", "pipefail", "-c", text], cwd=ROOT,
                                 timeout=timeout, env=self.env)
        with open(self.log, "a") as log:
            log.write(f"\n$ {text}\n{done.stdout}")
        return done

    def start_block(self, name: str) -> subprocess.Popen:
        """The block in the background, its stdin a pipe the caller holds (`ray attach`'s
        shell stays open while it is) and its output in the laptop's log."""
        text = self.block(name)
        log = open(self.log, "a")
        log.write(f"\n$ {text} &\n")
        log.flush()
        return subprocess.Popen(self.hosts.laptop_command(["bash", "-c", text]), cwd=ROOT,
                                env=self.env, stdin=subprocess.PIPE, stdout=log,
                                stderr=subprocess.STDOUT)

    def ray(self, *args: str, timeout: float = 300, capture: bool = False):
        with open(self.log, "a") as log:
            log.write(f"\n$ ray {shlex.join(args)}\n")
        return self.hosts.laptop([f"{sys.prefix}/bin/ray", *args], cwd=ROOT, timeout=timeout,
                                 env=self.env, log=None if capture else self.log)


    def note(self, text: str) -> None:
        """A line in the laptop's log, with the time: what the test did, between the commands."""
        with open(self.log, "a") as log:
            log.write(f"\n# {time.strftime('%H:%M:%S')} {text}\n")

    def up(self) -> None:
        done = self.run_block("up")
        assert done.returncode == 0, f"ray up failed:\n{self.log.read_text()[-4000:]}"

    def exec(self, command: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """`ray exec cluster-local.yaml COMMAND`: COMMAND in a login shell of the head; its
        output (and the launcher's) in .stdout, and in the laptop's log."""
        done = self.ray("exec", str(self.file), command, timeout=timeout, capture=True)
        with open(self.log, "a") as log:
            log.write(done.stdout)
        return done

    def start_exec(self, command: str) -> subprocess.Popen:
        """`ray exec` in the background: its output goes to the laptop's log."""
        with open(self.log, "a") as log:
            log.write(f"\n$ ray exec {shlex.quote(command)} &\n")
            return subprocess.Popen(self.hosts.laptop_command(
                [f"{sys.prefix}/bin/ray", "exec", str(self.file), command]), cwd=ROOT,
                env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def down(self) -> None:
        done = self.run_block("down", timeout=120)
        assert done.returncode == 0, done.stdout[-3000:]


def host_path(host: Host, path: str) -> Path:
    """`path` as `host` sees it (its private /tmp included), read from the laptop."""
    return Path(f"/proc/{host.first_pid()}/root{path}")
