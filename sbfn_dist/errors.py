"""Error types that carry a message a user can act on (what is wrong, and the fix).

They survive pickling (a sweep's trial raises them in a Ray worker and the driver reports them):
an exception is rebuilt from its constructor's arguments, so a class whose constructor takes
other arguments than the message says which in `__reduce__`.
"""

import argparse
import difflib
import tempfile


def near_misses(name: str, known, cutoff: float = 0.6) -> list[str]:
    """Up to three of `known` that `name` is a near miss of, closest first (difflib's ratio of
    at least `cutoff`)."""
    return difflib.get_close_matches(name, list(known), n=3, cutoff=cutoff)


def did_you_mean(name: str, known) -> str:
    """' (did you mean 'epochs'?)' for a near miss of `name` among `known`, else ''."""
    close = near_misses(name, known)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


class SbfnError(ValueError):
    """Base class: bad input to sbfn-dist. The message names the problem and the fix."""


def require_writable(directory, what: str) -> None:
    """Refuse `what` (the flag or target being written) unless a file can be made in the
    existing `directory`: tried, not inferred from permissions (/proc, a read-only mount, a
    full disk all say no only when asked), before any work whose result would be lost."""
    try:
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as exc:
        raise SbfnError(f"{what}: cannot write in {directory} ({exc.strerror or exc}); "
                        "choose a writable directory") from None


class UninformativeWarning(UserWarning):
    """A fitted combiner predicts no better than the constant guess on the rows it was fitted
    on (scikit-learn's ConvergenceWarning says the like of a solver): the fit succeeded, but
    its predictions carry nothing the class prior does not."""


class ConfigError(SbfnError):
    """A configuration field has a value that is not allowed."""

    def __init__(self, field: str, value, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"config field '{field}' = {value!r} is not allowed: {allowed}")

    def __reduce__(self):
        # Without it, unpickling calls ConfigError(message) and fails with a TypeError that
        # hides the message (seen as a trial's error in a sweep).
        return type(self), (self.field, self.value, self.allowed)


class DataError(SbfnError):
    """A data set is missing, unreadable or unsuitable for the requested experiment."""


class Parser(argparse.ArgumentParser):
    """Every command's parser (sub-commands' too: argparse makes them of their parent's class)."""

    def error(self, message):
        """argparse's refusal without its usage block (26 lines for a sweep command, above the
        line that says what is wrong): that line, and where the options are. After a `;`, not in
        parentheses: the message often ends in its own (a did-you-mean, argparse's "choose
        from"), and two in a row read as one doubled."""
        self.exit(2, f"error: {message}; --help lists every option\n")
