"""Nothing of Ray's prints after a sweep's summary (issue 48, "What the newcomer tripped on" 5):
after --resume each restored trial's worker logged Tune's "Restored on 127.0.0.1 from
checkpoint: ..." at INFO, which Ray forwarded to the terminal after the final summary (and, the
sweep's environment gone by then, in colour into a file)."""

import logging
import subprocess
import sys

# A fresh interpreter: the Ray a sweep starts (resources.connect), quiet and then --verbose,
# asked each time for the level of Tune's trainable logger in one of its workers.
WORKER_LEVELS = """
import logging, ray
from sweeps.engine.run.resources import connect
from sweeps.engine.run.trainable import TRIAL_LOGGER
for verbose in (False, True):
    connect(None, 1, 0, verbose=verbose)
    level = ray.get(ray.remote(lambda: logging.getLogger(TRIAL_LOGGER).getEffectiveLevel())
                    .remote())
    print("verbose", verbose, "level", level)
    ray.shutdown()
"""


def test_a_sweep_s_workers_log_no_info_line_of_tune_unless_verbose():
    done = subprocess.run([sys.executable, "-c", WORKER_LEVELS], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stdout.splitlines() if line.startswith("verbose ")]
    assert said == [f"verbose False level {logging.WARNING}",
                    f"verbose True level {logging.INFO}"], done.stdout + done.stderr[-2000:]
