"""Running a tutorial's commands as written (docs/tutorial-*.md; tests/test_tutorial_*.py): its
fenced bash blocks, in order, each in a `bash -e` of its own (a failing line fails the block),
in a user's shell: this environment's scripts first on PATH, no PYTHONPATH, a cache of its own."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from tests.sweep_helpers import free_port

BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", flags=re.S | re.M)
GRACE_S = 15        # how long what a block left running gets to stop on SIGTERM


def bash_blocks(text: str) -> list[str]:
    return BASH_BLOCK.findall(text)


CHECKOUT = Path(__file__).resolve().parents[1]


def tutorial_env(tmp_path: Path, **extra: str) -> dict:
    """A user's shell: the environment's python (and mlflow, uvicorn) first on PATH, their own
    cache, no PYTHONPATH (a tutorial's own module is imported from the current folder) beyond
    the checkout under test (this_checkout)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SBFN_CACHE_DIR"] = str(tmp_path / "cache")
    return {**env, **this_checkout(), **extra}


def this_checkout() -> dict:
    """PYTHONPATH naming the checkout under test where the environment's installed sbfn-dist is
    another checkout's (a git worktree tested with its main checkout's .venv): else the
    commands would run the other checkout's code. Empty where it is this one's."""
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    installed = subprocess.run([sys.executable, "-c", "import sbfn_dist; print(sbfn_dist.__file__)"],
                               capture_output=True, text=True, cwd="/", env=plain).stdout.strip()
    if installed and Path(installed).resolve().is_relative_to(CHECKOUT):
        return {}
    return {"PYTHONPATH": str(CHECKOUT)}


def run_block(block: str, cwd: Path, env: dict, log: Path, timeout: float) -> int | None:
    """Run one block; its exit status, None if it ran out of time; its output in `log`.

    The block runs in a process group of its own, ended when it ends, so what it started in the
    background (a model server) is stopped even when the block fails or times out. Its output
    goes to a file, not a pipe: a server it left running would hold a pipe open."""
    with open(log, "w") as out:
        block_process = subprocess.Popen(["bash", "-e", "-c", block], cwd=cwd, env=env,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
    try:
        return block_process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        end_group(block_process)


def end_group(leader: subprocess.Popen) -> None:
    """SIGTERM to the leader's group, SIGKILL to what is left after GRACE_S."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _signal_group(leader.pid, sig):
            break
        leader.poll()          # reaped, so a finished leader does not keep the group alive
        deadline = time.monotonic() + GRACE_S
        while _signal_group(leader.pid, 0) and time.monotonic() < deadline:
            time.sleep(0.2)
            leader.poll()
    leader.wait()


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when no process is left in it."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


def run_blocks(blocks: list[str], cwd: Path, env: dict, logs: Path, timeout: float) -> list[str]:
    """Run the blocks in order, asserting that each exits 0; their outputs."""
    outputs = []
    for k, block in enumerate(blocks):
        log = logs / f"block{k + 1}.log"
        code = run_block(block, cwd, env, log, timeout)
        how = "ran out of time" if code is None else f"exited {code}"
        assert code == 0, f"block {k + 1} {how}:\n{block}\n--- its output's end:\n" \
                          f"{log.read_text()[-4000:]}"
        outputs.append(log.read_text())
    return outputs
