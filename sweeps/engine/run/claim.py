"""A sweep's claim on its results directory, and the Ray processes its runs started.

    <storage>/<name>/sweep.lock    "pid P on HOST since TIME[, its Ray's session DIR]" of the run
                                   that holds the sweep (the Ray: one the run started itself)

**One run at a time.** Two runs of one sweep would write the same parts, results.parquet and
MLflow experiment, so a run holds an exclusive lock on sweep.lock (fcntl.flock) from before it
reads sweep.json until it ends, and a second run is refused naming the first. The kernel drops
the lock of a process that dies, even by SIGKILL, so a killed run never blocks `--resume` (no
stale lock to judge by pid, which another process may have reused). A run that ends clears the
file's text; text found by the next run means the last one was killed, and it says so.

**Leftover processes.** A driver killed by SIGKILL takes its gcs and raylet with it, but Ray's
dashboard and runtime-env agents, reparented to init, outlived it here for over a minute, and a
worker in the middle of a fold may go on writing. A run that starts its own local Ray names that
Ray's session directory in sweep.lock (`Claim.record_ray`); the text stays there when the run
is killed, and the next run of the sweep and `python -m sweeps.cleanup` stop exactly the
processes of that Ray: this user's Ray processes with a file open in its session directory
(every gcs, raylet, agent and worker keeps its logs there). Other Ray instances on the machine,
a Ray the sweep connected to but did not start (a notebook's, a cluster's) and a run that ended
are never touched; `ray stop` would stop every Ray of the user on the machine. (Marks in the
processes' environment are not enough: Ray's Python processes write their title over the start
of their environment, and an agent was seen here with every mark erased.)

**A run refused before it starts** (Ray cannot give its trials' resources, the data is not
where the machines read it, ...: before it writes sweep.json) takes away the folders and the
lock its claim made (Claim.unmake): a refusal leaves nothing behind. A run that locks the file
checks that it is still the one at the path, as such a run may have removed it meanwhile.

Remote storage (s3://...) takes no lock: there, sweep.json alone refuses a second sweep of the
same name once the first has started. Leftovers are found through /proc (Linux).
"""

import contextlib
import fcntl
import importlib.util
import os
import re
import shutil
import signal
import socket
import time
from dataclasses import dataclass, field

from sbfn_dist.errors import SbfnError
from sweeps.engine.common.store import PARTS_DIR, ResultStore, StorageError


LOCK_FILE = "sweep.lock"
RAY_NOTE = ", its Ray's session "     # "pid P on HOST since TIME, its Ray's session DIR"
STOP_WAIT_S = 5.0          # SIGTERM, then SIGKILL what is still there after this long


class SweepBusy(SbfnError):
    pass


@dataclass
class Claim:
    fd: int | None          # the locked sweep.lock; None for remote storage
    previous: str = ""      # the text a killed run left in it
    stopped: dict = field(default_factory=dict)   # pid -> command: leftovers take_over stopped
    made: list = field(default_factory=list)      # the folders and lock claim() created

    def record_ray(self, session: str) -> None:
        """Name the local Ray this run started (its session directory) in sweep.lock: if the
        run is killed, the next one stops what is left of that Ray (stop_leftovers)."""
        if self.fd is not None:
            text = _text(self.fd) + f"{RAY_NOTE}{os.path.realpath(session)}"
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text.encode(), 0)

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)          # closing drops the lock
            self.fd = None

    def unmake(self) -> None:
        """Take away what claim() created, for a run that never started (refused before its
        first trial): no results folder, parts/ or sweep.lock of its own is left behind. In a
        sweep's folder it made, what the run wrote goes too (the MLflow store it opened),
        while the lock is still held; the folders go last, each only if empty (a run of
        another sweep may have filled the one above meanwhile)."""
        if self.fd is None:
            return
        lock = [p for p in self.made if os.path.basename(p) == LOCK_FILE]
        folders = [p for p in self.made if p not in lock]
        for root in (f for f in folders if os.path.join(f, LOCK_FILE) in lock):
            for entry in os.scandir(root):
                if entry.name != LOCK_FILE:
                    _remove(entry.path)
        for path in lock:
            os.unlink(path)
        self.release()
        for folder in reversed(folders):            # innermost first
            with contextlib.suppress(OSError):
                os.rmdir(folder)

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def claim(store: ResultStore, name: str) -> Claim:
    """Hold the sweep's lock, or refuse (SweepBusy) while another run holds it. The Claim
    lists what this made (Claim.unmake)."""
    if "://" in store.uri:
        return Claim(None)
    path = os.path.join(store.root, LOCK_FILE)
    made = _missing([*_ancestors(store.root), os.path.join(store.root, PARTS_DIR), path])
    while True:
        store.create()      # the directory exists and is writable (else StorageError)
        fd = _open_lock(path)
        _lock(fd, store, name)
        if _is_the_file(fd, path):
            break
        os.close(fd)        # a run that never started took its lock away meanwhile: again
    previous = _text(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since "
                  f"{time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
    return Claim(fd, previous, made=made)


def _open_lock(path: str) -> int:
    """sweep.lock opened to write (a run writes its holder there), or StorageError: the
    folder is writable (ResultStore.create) while the file is not (copied read-only)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(f"cannot write the sweep's lock file {path} ({exc.strerror}): make "
                           f"it writable (chmod u+w {path}), or delete it when no run of the "
                           "sweep is going on") from None


def _ancestors(root: str) -> list[str]:
    """`root` and the folders above it, outermost first."""
    parts = os.path.abspath(root).split(os.sep)
    return [os.sep.join(parts[:i]) for i in range(2, len(parts) + 1)]


def _missing(paths: list[str]) -> list[str]:
    return [p for p in paths if not os.path.lexists(p)]


def _is_the_file(fd: int, path: str) -> bool:
    """Whether the locked `fd` is the file at `path` still (Claim.unmake removes it)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def refuse_while_running(store: ResultStore, name: str) -> None:
    """claim()'s refusal (SweepBusy) while a run holds the sweep's lock, creating nothing: a
    --resume of a sweep whose first run is still starting finds no sweep.json yet, and would
    otherwise be told there is no sweep."""
    path = os.path.join(store.root, LOCK_FILE)
    if "://" in store.uri or not os.path.exists(path):
        return
    fd = os.open(path, os.O_RDONLY)     # flock needs no write: a read-only folder is claim()'s
    _lock(fd, store, name)              # to refuse, in one line
    os.close(fd)                        # closing drops the lock


def _lock(fd: int, store: ResultStore, name: str) -> None:
    """The sweep's lock on `fd`; while another run holds it, `fd` is closed and SweepBusy says
    whose run it is."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _run_of(_text(fd))
        os.close(fd)
        raise SweepBusy(f"the sweep '{name}' is running now ({holder or 'its run is starting'}"
                        f"): its results at {store.root} stay its own. Wait for it to end (then "
                        "--resume continues it), or pass --name for a new sweep") from None


def _text(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace").strip()


def _run_of(text: str) -> str:
    """"pid P on HOST since TIME": the run a sweep.lock text names, for a person to read."""
    return text.partition(RAY_NOTE)[0]


def ray_session(text: str) -> str | None:
    """The session directory of the local Ray a run's sweep.lock text names, if that run was on
    this machine (the text of another host's run, on shared storage, names none here)."""
    host = re.match(r"pid \d+ on (\S+) since ", text)
    session = text.partition(RAY_NOTE)[2]
    return session if host and session and host[1] == socket.gethostname() else None


def ray_processes(session: str) -> dict[int, str]:
    """pid -> command line of this user's Ray processes with a file open in `session`."""
    if not os.path.isdir("/proc"):
        return {}
    inside = os.path.realpath(session) + os.sep
    return {pid: cmd for pid in _pids() if pid != os.getpid()
            and _is_ray(cmd := _command(pid)) and any(f.startswith(inside) for f in _files(pid))}


def _is_ray(command: str) -> bool:
    """A Ray process: titled "ray::..." (workers, agents), or running a program from Ray's
    package (gcs_server, raylet, an agent before it sets its title). Not, say, `tail -f` on a
    log in the session directory."""
    return command.startswith("ray::") or bool(_RAY_DIR and _RAY_DIR in command)


def _ray_dir() -> str | None:
    spec = importlib.util.find_spec("ray")      # finds the package without importing it
    return os.path.join(spec.submodule_search_locations[0], "") if spec else None


_RAY_DIR = _ray_dir()


def _files(pid: int) -> list[str]:
    """What the process's open descriptors point at, if it is this user's (else nothing)."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return []
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []                # ended meanwhile, or not ours to read
    links = []
    for fd in fds:
        with contextlib.suppress(OSError):
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return links


def stop_leftovers(previous: str) -> dict[int, str]:
    """Stop what the killed run whose sweep.lock text is `previous` left of its Ray: SIGTERM,
    then SIGKILL those still there after STOP_WAIT_S. Returns the ones found. Looks again after
    each round: a raylet may start a worker while its agents are being stopped."""
    session = ray_session(previous)
    stopped: dict = {}
    for _ in range(3 if session else 0):
        found = {pid: cmd for pid, cmd in ray_processes(session).items() if pid not in stopped}
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
    # A stopped process (SIGSTOP, Ctrl-Z) takes the SIGTERM only once continued: it would sit
    # out STOP_WAIT_S and then be SIGKILLed, without the chance to end cleanly.
    _signal(running(), signal.SIGCONT)
    deadline = time.monotonic() + STOP_WAIT_S
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal(running(), signal.SIGKILL)
    deadline = time.monotonic() + STOP_WAIT_S      # stopped means gone when this returns
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)


def _identity(pid: int) -> str | None:
    """"pid:start time" of a running process (a reused pid starts at another time), else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()     # the name may hold ") "
    except OSError:
        return None
    return None if fields[0] == "Z" else f"{pid}:{fields[19]}"     # a zombie has ended


def _signal(pids: list[int], sig) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def take_over(store: ResultStore, name: str, out) -> Claim:
    """claim(), then stop what earlier runs of the sweep left running, saying so."""
    held = claim(store, name)
    if held.fd is None:
        return held
    held.stopped = stop_leftovers(held.previous)
    if held.previous:
        print(f"[{name}] its last run ({_run_of(held.previous)}) ended without "
              "finishing (killed?)", file=out)
    if held.stopped:
        print(f"[{name}] stopped {len(held.stopped)} Ray processes its earlier run left: "
              + "; ".join(f"{pid} {cmd[:50]}" for pid, cmd in held.stopped.items()), file=out)
    return held
