"""Connecting to Ray, checking before any trial starts that the cluster can run them, and
filling every trial slot (stopping on a signal as on Ctrl-C: interruption.py).

A trial asking for a resource no node has stays PENDING forever without an error, so every
request is checked against what the nodes offer and refused with a clear message.
"""

import os
import socket
import time

import ray
from ray.autoscaler.sdk import request_resources
from ray.exceptions import RayError
from ray.tune.schedulers import FIFOScheduler
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from sbfn_dist.errors import SbfnError
from sweeps.engine.run.mps import start_for_this_process


class ResourceError(SbfnError):
    pass


# Each worker of a Ray the sweep starts runs this first (Ray's worker_process_setup_hook): Tune's
# INFO lines from trials ("Restored on 127.0.0.1 from checkpoint: ...", once per trial a --resume
# continues) reached the terminal through Ray's log forwarding, after the sweep's summary.
QUIET_WORKERS = {"worker_process_setup_hook": "sweeps.engine.run.trainable.quiet_trial_logs"}


def connect(address: str | None, num_cpus: int | None, num_gpus: float,
            verbose: bool = False, mps: bool = False) -> tuple[str, str | None]:
    """Use a running Ray (already initialised here, or at --address), else start one on loopback.
    Returns where, and the session directory of a Ray started here (None for one not ours).
    `verbose` (--verbose): Ray's INFO lines too; `mps`: a Ray started here runs its trials
    under an MPS daemon of this process (sweeps/engine/run/mps.py)."""
    level = "INFO" if verbose else "ERROR"
    if ray.is_initialized():
        return "the Ray instance already initialised in this process", None
    if address:
        _check_reachable(address)
        ray.init(address=address, logging_level=level, log_to_driver=True)
        return f"the Ray cluster at {address}", None
    # (--num-gpus beyond this machine's: refused before Ray, sweeps/engine/checks.py)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")   # bind 127.0.0.1
    # "local": a new Ray of our own. Without it ray.init joins the cluster named in Ray's temp
    # folder (ray_current_cluster: a live `ray start --head`, or one stopped by a signal) and
    # refuses num_cpus there.
    if mps:
        start_for_this_process()
    # A cluster's job may carry a runtime_env of its own: there its workers' INFO lines stay.
    quiet = {} if verbose else {"runtime_env": QUIET_WORKERS}
    started = ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus,
                       include_dashboard=False, logging_level=level, **quiet)
    return ("a local Ray instance on 127.0.0.1" + (", its GPU shared under CUDA MPS" if mps
                                                   else ""), started.address_info["session_dir"])


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """ray.init retries an unreachable address for minutes; test the TCP port first."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ResourceError(f"--address '{address}' is not HOST:PORT (e.g. 10.0.0.5:6379, "
                            "ray://head:10001, or auto for the cluster on this node)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ResourceError(f"cannot reach a Ray cluster at {address} ({exc.strerror or exc}). "
                            "Check that `ray start --head` runs there and the port is open, or "
                            "leave out --address (and unset RAY_ADDRESS, which stands in for it) "
                            "to start Ray on this machine") from None


def node_resources() -> list[dict]:
    return [n["Resources"] for n in ray.nodes() if n.get("Alive")]


def check_trial_fits(cpus: float, gpus: float, wait_s: float = 0.0) -> None:
    """Refuse requests no node can meet. With wait_s > 0 (a cluster, which may autoscale from
    zero workers: cluster.yaml's head has no CPU), ask the autoscaler for a node first."""
    nodes = node_resources()
    if _fits(nodes, cpus, gpus):
        return
    if wait_s <= 0:
        raise ResourceError(_explain(nodes, cpus, gpus))
    _wait_for_a_node(cpus, gpus, wait_s)


def other_nodes_see(path: str, timeout_s: float = 60.0) -> dict[str, bool]:
    """Whether each alive node of the cluster but this one sees the local `path`: a zero-CPU
    task pinned to each (it needs no free slot). {} on a cluster of one machine, where no task
    starts. A node that does not answer within timeout_s, or goes meanwhile (an autoscaler
    removing an idle worker), is left out."""
    exists = ray.remote(num_cpus=0, max_retries=0)(os.path.exists)
    asked = {_pinned(exists, n).remote(path): n["NodeManagerAddress"] for n in _other_nodes()}
    if not asked:
        return {}
    answered, _ = ray.wait(list(asked), num_returns=len(asked), timeout=timeout_s)
    seen = {}
    for ref in answered:
        try:
            seen[asked[ref]] = ray.get(ref)
        except RayError:
            pass
    return seen


def on_another_node(function, *args, timeout_s: float = 180.0) -> tuple[str, object] | None:
    """(the node's address, `function(*args)`) run as a zero-CPU task on one alive node but
    this one, a worker with CPUs where there is one (where trials run); None on a cluster of
    one machine, or if that node does not answer within timeout_s (a worker's first task
    starts a Python there; an image set loads in seconds) or goes meanwhile."""
    nodes = sorted(_other_nodes(), key=lambda n: not n["Resources"].get("CPU"))
    if not nodes:
        return None
    ref = _pinned(ray.remote(num_cpus=0, max_retries=0)(function), nodes[0]).remote(*args)
    try:
        return nodes[0]["NodeManagerAddress"], ray.get(ref, timeout=timeout_s)
    except (RayError, TimeoutError):        # GetTimeoutError is both
        ray.cancel(ref, force=True)
        return None


def _other_nodes() -> list[dict]:
    here = ray.get_runtime_context().get_node_id()
    return [n for n in ray.nodes() if n["Alive"] and n["NodeID"] != here]


def _pinned(remote_function, node: dict):
    """The remote function as a task that runs on `node` or not at all."""
    return remote_function.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        node["NodeID"], soft=False))


def _fits(nodes: list[dict], cpus: float, gpus: float) -> bool:
    return any(n.get("CPU", 0) >= cpus and n.get("GPU", 0) >= gpus for n in nodes)


def _wait_for_a_node(cpus: float, gpus: float, wait_s: float) -> None:
    """Request one trial's bundle from the autoscaler and wait up to wait_s for a node that fits.

    The request is withdrawn as soon as the wait ends: Ray keeps a request_resources() until it
    is overridden, so a standing one would hold a worker up forever after the sweep (the
    autoscaler never scales below it). Once a node is there, the sweep's own pending trials are
    the demand that adds and keeps nodes."""
    bundle = {"CPU": cpus, **({"GPU": gpus} if gpus else {})}
    print(f"no node fits a trial ({cpus:g} CPU, {gpus:g} GPU) yet: waiting up to {wait_s:g} s "
          "for the cluster's autoscaler to add one", flush=True)
    request_resources(bundles=[bundle])
    deadline = time.monotonic() + wait_s
    try:
        while True:
            time.sleep(min(2.0, wait_s))
            nodes = node_resources()
            if _fits(nodes, cpus, gpus):
                return
            if time.monotonic() >= deadline:
                raise ResourceError(_explain(nodes, cpus, gpus) + f" (waited {wait_s:g} s for "
                                    "the autoscaler)")
    finally:
        request_resources(bundles=[])


def _explain(nodes: list[dict], cpus: float, gpus: float) -> str:
    have = "; ".join(f"CPU {n.get('CPU', 0):g}, GPU {n.get('GPU', 0):g}" for n in nodes) or "no nodes"
    if gpus and not any(n.get("GPU", 0) for n in nodes):
        return (f"the sweep asks {gpus:g} GPU per trial, but the Ray cluster has no GPU (nodes: "
                f"{have}). Use --num-gpus 0 to run on CPUs, or add GPU nodes")
    return (f"no node can run a trial needing {cpus:g} CPU and {gpus:g} GPU (nodes: {have}). "
            "Lower --cpus-per-trial / --gpus-per-trial or add larger nodes")


# ------------------------------------------------------------------ filling the trial slots
def filling_slots(scheduler=None):
    """`scheduler` (Tune's FIFO when None; ASHA is one too) starting, of the pending trials,
    the first whose own worker is not being started.

    With reuse_actors, a trial that ends leaves its worker to the next pending trial, and Tune
    then cancels the worker it was starting for that trial. FIFO picks the trial whose worker
    is starting (it was requested first), so while trials take less time than a worker's start
    (~2.5 s: torch's import) every second worker is cancelled, and one trial runs at a time
    whatever the slots (seen: 200 one-configuration trials on 2 CPUs, max 1 running). Picking
    a trial that waits for resources instead lets the starting worker come up and take a
    trial of its own. Reads Tune's private state (Ray 2.60): without it, FIFO's choice."""
    scheduler = scheduler or FIFOScheduler()
    if type(scheduler).choose_trial_to_run is FIFOScheduler.choose_trial_to_run:
        scheduler.choose_trial_to_run = _first_pending_not_starting
    return scheduler


def _first_pending_not_starting(controller):
    """FIFO's choice (a pending, else a paused trial), skipping pending trials whose worker is
    starting unless every pending trial's is (the end of a sweep: the idle worker takes one)."""
    tune = getattr(controller, "_tune_controller", controller)    # past Tune's access wrapper
    try:
        live = set(tune._actor_manager.live_actors)
        starting = {trial for trial, actor in tune._trial_to_actor.items() if actor in live}
    except AttributeError:       # another Tune: its own choice
        starting = set()
    for trial in tune.get_trials():
        if trial.status == "PENDING" and trial not in starting:
            return trial
    return FIFOScheduler.choose_trial_to_run(None, controller)
