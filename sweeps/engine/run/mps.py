"""Trials that share a GPU, run under CUDA MPS (`--mps`, docs/sweeps.md "Sharing a GPU").

Ray's fractional GPUs are logical: four 0.25-GPU trials are four processes on one card. Without
MPS their CUDA contexts take turns on the GPU, one at a time, and four trials of the fast image
step (a CUDA graph of small kernels) train no faster together than one alone; under MPS their
kernels run at once: 1.56-1.76x the member-images/s on an H200 (docs/benchmarks.md 9.7).

A sweep that starts its own Ray with GPUs shared between trials starts an MPS control daemon of
its own first: its pipe and log directories in a new temporary folder, exported to the Ray it
starts (whose workers inherit them), so that no other process on the machine connects to it. It
runs as a child of the sweep's process (in the foreground, `-f`), quits when the process exits
(after the local Ray's shutdown), and dies with the process if that is killed (the kernel's
parent-death signal). A machine whose user already runs MPS
(CUDA_MPS_PIPE_DIRECTORY set) keeps that daemon. On a cluster (--address) the nodes' own set-up
starts MPS (docs/cluster.md): the sweep starts nothing there.
"""

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from sbfn_dist.errors import SbfnError


CONTROL = "nvidia-cuda-mps-control"
PIPE, LOG = "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"
READY_S = 10.0            # for the daemon's pipe to appear


class MpsError(SbfnError):
    pass


def wanted(mode: str, num_gpus: float, gpus_per_trial: float, address: str | None) -> bool:
    """Whether this sweep runs its trials under an MPS daemon of its own: where trials share a
    GPU of a Ray it starts (auto: where the daemon exists too; on: or a one-line refusal)."""
    why_not = _why_not(num_gpus, gpus_per_trial, address)
    if mode == "off" or (mode == "auto" and why_not):
        return False
    if why_not:
        raise MpsError(f"--mps on: {why_not}; leave out --mps (auto) or pass --mps off")
    return True


def under_mps(opts) -> bool:
    """Whether a sweep of these run options (SweepOptions) shares its GPUs under a daemon of
    its own; --mps on where it cannot: MpsError."""
    return wanted(opts.mps, opts.num_gpus, opts.gpus_per_trial, opts.address)


def _why_not(num_gpus: float, gpus_per_trial: float, address: str | None) -> str:
    if address:
        return "a cluster's nodes run MPS from their own set-up (docs/cluster.md)"
    if not num_gpus or not 0 < gpus_per_trial < 1:
        return "no trials share a GPU here (--num-gpus N with --gpus-per-trial below 1)"
    if os.environ.get(PIPE):
        return f"this machine's own MPS daemon runs ({PIPE} is set): the trials use it"
    if shutil.which(CONTROL) is None:
        return f"no {CONTROL} on this machine's PATH (it comes with NVIDIA's driver)"
    return ""


class Daemon:
    """An MPS control daemon of this process's own, in the foreground (`-f`) as its child, its
    directories exported to the processes started from now on; stop() quits it."""

    def __init__(self):
        self.folder, self.stopped = tempfile.mkdtemp(prefix="sbfn-mps-"), False
        env = {PIPE: os.path.join(self.folder, "pipe"), LOG: os.path.join(self.folder, "log")}
        self.saved = {name: os.environ.get(name) for name in env}
        for path in env.values():
            os.makedirs(path)
        os.environ.update(env)
        self.process = subprocess.Popen([CONTROL, "-f"], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        preexec_fn=_die_with_parent)
        self._wait_ready(env[PIPE])

    def _wait_ready(self, pipe: str) -> None:
        deadline = time.monotonic() + READY_S
        while not os.path.exists(os.path.join(pipe, "control")):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise MpsError(f"the MPS daemon ({CONTROL} -f) did not start; pass --mps off "
                               "to share the GPU without it")
            time.sleep(0.05)

    def stop(self) -> None:
        """Quit (its servers first, once their clients are gone), remove its folder, and give
        the environment back; once."""
        if self.stopped:
            return
        self.stopped = True
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([CONTROL], input="quit\n", text=True, timeout=10,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.process.wait(timeout=10)
        if self.process.poll() is None:
            self.process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
        for name, value in self.saved.items():
            os.environ.pop(name, None) if value is None else os.environ.update({name: value})


def _die_with_parent() -> None:
    """In the daemon's process: SIGTERM when the sweep's process dies, even by SIGKILL."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_ours: list = []          # the daemon serving the local Ray of this process, if any


def start_for_this_process() -> Daemon:
    """A daemon for the Ray this process starts next, in place of one that served an earlier
    Ray (shut down since); it quits when the process exits, its clients gone first."""
    stop_for_this_process()
    if not _ours:
        atexit.register(_at_exit)
    _ours[:] = [Daemon()]
    return _ours[0]


def _at_exit() -> None:
    # Ray's own exit handler (registered when ray was imported, before this one) would run
    # after this one: shut the trials' workers down first, so that the daemon quits at once.
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    stop_for_this_process()


def stop_for_this_process() -> None:
    """Quit the daemon start_for_this_process started, if it still runs."""
    for daemon in _ours:
        daemon.stop()


@contextlib.contextmanager
def daemon_while():
    """A daemon for the block's processes (a benchmark's side)."""
    daemon = Daemon()
    try:
        yield daemon
    finally:
        daemon.stop()
