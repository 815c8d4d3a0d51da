"""Ray Tune sweeps over sbfn_dist trials (spaces, trainable, runner, CLIs; docs/sweeps.md)."""

import os

# Local Ray stays on loopback and quiet: bind 127.0.0.1 (Linux) and skip the auth-token notice.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
# Our own progress line replaces Tune's console output (the legacy reporter honours verbose=0).
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
