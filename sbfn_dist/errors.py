"""Error types that carry a message a user can act on (what is wrong, and the fix)."""


class SbfnError(ValueError):
    """Base class: bad input to sbfn-dist. The message names the problem and the fix."""


class ConfigError(SbfnError):
    """A configuration field has a value that is not allowed."""

    def __init__(self, field: str, value, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(f"config field '{field}' = {value!r} is not allowed: {allowed}")


class DataError(SbfnError):
    """A data set is missing, unreadable or unsuitable for the requested experiment."""
