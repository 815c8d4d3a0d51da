"""A sweep stopped by a signal as by Ctrl-C (Ray-free: the sweep holds it before Ray starts)."""

import contextlib
import functools
import signal
import sys
import threading


class Interruption:
    """SIGTERM (a scheduler's time limit, `timeout`, `kill`) and SIGINT stop a sweep as Ctrl-C
    does: Tune ends its trials and saves its state (finished folds are in the parts), and the
    sweep then raises KeyboardInterrupt. A second signal interrupts at once.

    ray.init installs Ray's own SIGTERM handler (a C++ stack dump, exit -6), so `arm` comes
    after it; Tune's graceful stop is its SIGUSR1 handler, installed while Tuner.fit runs (its
    SIGINT one is switched off: TUNE_DISABLE_SIGINT_HANDLER, tune.fit). The handlers in place
    before are restored at the end: a notebook keeps its own. Signals reach the main thread
    only: elsewhere this does nothing."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)

    def __init__(self):
        self.received: list[int] = []
        self.main = threading.current_thread() is threading.main_thread()
        self.before = {s: signal.getsignal(s) for s in self.SIGNALS} if self.main else {}

    def __enter__(self) -> "Interruption":
        return self

    def arm(self) -> None:
        if self.main:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        self.received.append(signum)
        stop = signal.getsignal(signal.SIGUSR1)
        if len(self.received) > 1 or stop is self.before[signal.SIGUSR1] or not callable(stop):
            raise KeyboardInterrupt       # a second signal, or Tune is not running
        stop(signum, frame)               # Tune's graceful stop

    def check(self) -> None:
        """Raise KeyboardInterrupt if a signal stopped the run."""
        if self.received:
            raise KeyboardInterrupt

    def __exit__(self, *exc) -> None:
        for sig, handler in self.before.items():
            if handler is not None:       # None: set outside Python, cannot be put back
                signal.signal(sig, handler)


@contextlib.contextmanager
def sigterm_as_ctrl_c():
    """SIGTERM while a command plans and checks its sweep, before Ray starts (the run's
    Interruption takes it over then): a KeyboardInterrupt, told in one line as Ctrl-C is (it
    exited 143 without a word). SIGINT is left as it is: a background job ignores it. The
    handler in place before comes back; off the main thread, nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def one_line_on_interrupt(name: str) -> None:
    """Called by a command's module (`python -m sweeps.<name>`, name == "__main__") before its
    imports, which take 1-5 s (pandas, Ray, MLflow): Ctrl-C or SIGTERM while they load, or
    in a command with no handling of its own (relog, export, cleanup, the tools), ends it in
    one line with status 130 -- it printed a KeyboardInterrupt traceback, or exited 143
    without a word. The sweep commands say what they kept themselves (commands/cli.py).
    Imported from Python (a test, a notebook: name is the module's), nothing changes."""
    if name != "__main__":
        return
    signal.signal(signal.SIGTERM, _interrupt)
    command = sys.modules["__main__"].__dict__      # the command's module, as it is run
    sys.excepthook = functools.partial(_told_in_one_line, sys.excepthook, command)


def _told_in_one_line(before, command: dict, kind, exc, tb) -> None:
    if not issubclass(kind, KeyboardInterrupt):
        return before(kind, exc, tb)
    what = ("the command stopped before it finished" if _ran(command, tb) else
            "the command had not started; nothing was written")
    print(f"\ninterrupted: {what}", file=sys.stderr)


def _ran(command: dict, tb) -> bool:
    """Whether a function of the command's module was running (its main): else it was still
    importing what it needs."""
    while tb is not None:
        if tb.tb_frame.f_globals is command and tb.tb_frame.f_code.co_name != "<module>":
            return True
        tb = tb.tb_next
    return False
