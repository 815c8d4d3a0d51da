"""A sweep's claim on its results directory, and the Ray processes its runs started.

    <storage>/<name>/sweep.lock    "pid P on HOST since TIME" of the run that holds the sweep

**One run at a time.** Two runs of one sweep would write the same parts, results.parquet and
MLflow experiment, so a run holds an exclusive lock on sweep.lock (fcntl.flock) from before it
reads sweep.json until it ends, and a second run is refused naming the first. The kernel drops
the lock of a process that dies, even by SIGKILL, so a killed run never blocks `--resume` (no
stale lock to judge by pid, which another process may have reused). A run that ends clears the
file's text; text found by the next run means the last one was killed, and it says so.

**Leftover processes.** A local Ray started by a run carries SBFN_SWEEP=<results directory> and
SBFN_SWEEP_DRIVER=<the driver's pid and start time> in the environment of each of its processes
(gcs, raylet, agents and workers inherit them; `marked`). A driver killed by SIGKILL takes its
gcs and raylet with it, but Ray's dashboard and runtime-env agents, reparented to init, outlived
it here for over a minute, and a worker in the middle of a fold may go on writing. The next run
of the sweep and `python -m sweeps.cleanup` stop exactly those: processes of this user, on this
machine, marked with this sweep's directory, whose driver is dead (a notebook whose sweep ended
keeps its Ray). `ray stop` would stop every Ray of the user on the machine, other sweeps' too.
Ray's Python processes write their title over part of their environment (setproctitle), so an
agent or worker may have lost its driver mark: it counts as left over once its parent is no
longer of the sweep's Ray (`_orphaned`; the tests once saw a stopped agent missed without this).

Remote storage (s3://...) takes no lock: there, sweep.json alone refuses a second sweep of the
same name once the first has started. Leftovers are found through /proc (Linux).
"""

import contextlib
import fcntl
import os
import signal
import socket
import time
from dataclasses import dataclass, field

from sbfn_dist.errors import SbfnError
from sweeps.store import ResultStore

LOCK_FILE = "sweep.lock"
ENV = "SBFN_SWEEP"
DRIVER_ENV = "SBFN_SWEEP_DRIVER"
STOP_WAIT_S = 5.0          # SIGTERM, then SIGKILL what is still there after this long


class SweepBusy(SbfnError):
    pass


@dataclass
class Claim:
    fd: int | None          # the locked sweep.lock; None for remote storage
    previous: str = ""      # the text a killed run left in it
    stopped: dict = field(default_factory=dict)   # pid -> command: leftovers take_over stopped

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)          # closing drops the lock
            self.fd = None

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def claim(store: ResultStore, name: str) -> Claim:
    """Hold the sweep's lock, or refuse (SweepBusy) while another run holds it."""
    if "://" in store.uri:
        return Claim(None)
    store.create()      # the directory exists and is writable (else StorageError)
    fd = os.open(os.path.join(store.root, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _text(fd)
        os.close(fd)
        raise SweepBusy(f"the sweep '{name}' is running now ({holder or 'its run is starting'}"
                        f"): its results at {store.root} stay its own. Wait for it to end (then "
                        "--resume continues it), or pass --name for a new sweep") from None
    previous = _text(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since "
                  f"{time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
    return Claim(fd, previous)


def _text(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace").strip()


@contextlib.contextmanager
def marked(root: str):
    """Processes started inside the block (a local Ray) carry this sweep's and driver's marks."""
    marks = {ENV: root, DRIVER_ENV: _identity(os.getpid()) or ""}    # "": no /proc here
    saved = {k: os.environ.get(k) for k in marks}
    os.environ.update(marks)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def sweep_processes(root: str, orphaned: bool = False) -> dict[int, str]:
    """pid -> command line of this user's processes marked with the sweep at `root` (orphaned:
    only those whose driver has ended)."""
    if not os.path.isdir("/proc"):
        return {}
    found = {}
    for pid in _pids():
        marks = _marks(pid)
        if marks.get(ENV) == root and (not orphaned or _orphaned(pid, marks)):
            found[pid] = _command(pid)
    return found


def leftovers(root: str) -> dict[int, str]:
    """The processes earlier runs of the sweep at `root` left running: their driver has ended."""
    return sweep_processes(root, orphaned=True)


def _orphaned(pid: int, marks: dict) -> bool:
    """Marked by a driver ("pid:start time") that has ended. Ray's Python processes (agents,
    workers) write their title over the start of their environment (setproctitle), and which
    variables that erases varies with their order: without a driver mark, a process is left
    over once its parent is no longer a process of this sweep's Ray (the raylet is gone)."""
    driver = marks.get(DRIVER_ENV, "")
    if driver:
        return _identity(int(driver.partition(":")[0])) != driver
    fields = _stat(pid)
    return fields is not None and _marks(int(fields[1])).get(ENV) != marks.get(ENV)   # ppid


def _marks(pid: int) -> dict:
    """The sweep marks in the environment of `pid`, if it is this user's (else none)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return {}
        with open(f"/proc/{pid}/environ", "rb") as f:
            entries = f.read().decode(errors="replace").split("\0")
    except OSError:
        return {}                # ended meanwhile
    pairs = (e.partition("=") for e in entries)
    return {k: v for k, _, v in pairs if k in (ENV, DRIVER_ENV)}


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the name (state, ppid, ...), None once it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()     # the name may hold ") "
    except OSError:
        return None
    return None if fields[0] == "Z" else fields


def _identity(pid: int) -> str | None:
    """"pid:start time" of a running process (a reused pid starts at another time), else None."""
    fields = _stat(pid)
    return None if fields is None else f"{pid}:{fields[19]}"


def stop_leftovers(root: str) -> dict[int, str]:
    """Stop the leftovers of earlier runs of the sweep at `root`: SIGTERM, then SIGKILL those
    still there after STOP_WAIT_S. Returns the ones found. Looks again after each round: a
    stopped raylet's children count as left over only once it is gone."""
    stopped: dict = {}
    for _ in range(3):
        found = {pid: cmd for pid, cmd in leftovers(root).items() if pid not in stopped}
        if not found:
            break
        _stop(found)
        stopped.update(found)
    return stopped


def _stop(found: dict) -> None:
    identities = {pid: _identity(pid) for pid in found}

    def running() -> list[int]:       # the same processes, not others that took their pids
        return [pid for pid, ident in identities.items() if ident and _identity(pid) == ident]

    _signal(running(), signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal(running(), signal.SIGKILL)


def _signal(pids: list[int], sig) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:80]
    except OSError:
        return "?"


def take_over(store: ResultStore, name: str, out) -> Claim:
    """claim(), then stop what earlier runs of the sweep left running, saying so."""
    held = claim(store, name)
    if held.fd is None:
        return held
    held.stopped = stop_leftovers(store.root)
    if held.previous:
        print(f"[{name}] its last run ({held.previous}) ended without finishing (killed?)",
              file=out)
    if held.stopped:
        print(f"[{name}] stopped {len(held.stopped)} Ray processes its earlier run left: "
              + "; ".join(f"{pid} {cmd[:50]}" for pid, cmd in held.stopped.items()), file=out)
    return held
