"""A sweep stopped by a signal as by Ctrl-C (Ray-free: the sweep holds it before Ray starts)."""

import contextlib
import signal
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
