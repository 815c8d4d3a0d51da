"""torch.compile for the image members' stacks (`--set step_compile=on`): what compiling costs a
sweep and what it saves per step, for each (kind, M) stack of the default image grid, and what
that makes of one default CIFAR-10 split (issue 35 item 1).

    python -m benchmarks.bench_compile [--kinds cnn mixed resnet] [--members 2 5 10]
        [--parallel 3] [--steps 60] [--json FILE] [--cache DIR]

Every stack is measured in new processes (`--child`), as a sweep's trial workers meet it, with
the library's loop (`train_cnn_pack`: the fast path, bf16 + the CUDA graph, both on-the-fly
heads) on random CIFAR-shaped images, `--steps` full batches of 128 an epoch:

  cold   the first process to compile the stack, the shared cache directory holding no entry
         for it (`--parallel` stacks at once, as a sweep's first trials are: their steps are
         not reported, only what compiling cost);
  warm   a new process after that, reading inductor's FX graph cache, AOTAutograd's cache and
         Triton's kernels from the directory (sbfn_dist.learners.steps.share_compile_cache,
         which a sweep points at its results directory), measured one stack at a time (a lock
         on the GPU; the next processes start up meanwhile);
  again  a second stack of the same shape in the warm process (a reused trial worker).

A compile cost is a compiled run's first epoch minus its steady epoch, less the same difference
of an uncompiled run (warm-up steps, graph capture): what compiling adds. Steady step times are
the median of epochs 2-3 of each side, warm processes only. The split estimate adds, per stack,
its five epsilon configurations' steps at the steady rate, one cold compile and four warm ones
(every compile counted, none hidden behind another trial's GPU work); the members' training
only (data loading, evaluation and Ray's overhead are the same either way).
"""

import argparse
import concurrent.futures
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

from benchmarks.bench_image_gpu import BATCH, N_CLASSES, random_images, train_rate
from benchmarks.common import table, target
from sbfn_dist.learners.steps import share_compile_cache

KINDS, MEMBERS, EPSILONS = ("cnn", "mixed", "resnet"), (2, 5, 10), 5
TRIAL_IMAGES, TRIAL_EPOCHS = 45_000, 10           # a default CIFAR-10 trial: 45k images x 10
RESULT = "BENCH_COMPILE "                          # a child's result line on stdout


def overhead_and_step(run: dict, steps: int) -> tuple[float, float]:
    """(first epoch minus a steady one, seconds per steady step) of a train_rate run."""
    first, *rest = run["epoch_seconds"]
    steady = statistics.median(rest)
    return first - steady, steady / steps


def child(kind: str, m: int, steps: int, cache: str, alone: bool) -> dict:
    """One process's measurements of one stack (the module docstring's cold/warm/again);
    `alone`: measured while holding the GPU lock (the processes' start-ups still overlap)."""
    share_compile_cache(cache)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    side = "fast" if device == "cuda" else "today"
    images = random_images(steps * BATCH + 2 * N_CLASSES, device)
    with open(os.path.join(cache, ".gpu.lock"), "w") as lock:
        if alone:
            fcntl.flock(lock, fcntl.LOCK_EX)
        train_rate(images, kind, m, side, 1)                # cuDNN's choices
        return measured(images, kind, m, side, steps) | {"device": device}


def measured(images, kind: str, m: int, side: str, steps: int) -> dict:
    """Uncompiled, compiled (the process's first), compiled again: costs and steady steps."""
    plain = overhead_and_step(train_rate(images, kind, m, side, 3), steps)
    first = overhead_and_step(train_rate(images, kind, m, side, 3, compiled=True), steps)
    again = overhead_and_step(train_rate(images, kind, m, side, 3, compiled=True), steps)
    return {"kind": kind, "m": m, "compile_s": first[0] - plain[0],
            "again_s": again[0] - plain[0], "step_plain_s": plain[1],
            "step_compiled_s": statistics.mean([first[1], again[1]])}


def spawn(kind: str, m: int, steps: int, cache: str, alone: bool) -> dict:
    """child() in a new process; its result, or its error as one line."""
    cmd = [sys.executable, "-m", "benchmarks.bench_compile", "--child", kind, str(m),
           "--steps", str(steps), "--cache", cache, *(["--alone"] if alone else [])]
    done = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in done.stdout.splitlines() if l.startswith(RESULT)]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"kind": kind, "m": m, "error": f"exit {done.returncode}: {tail[:200]}"}
    return json.loads(lines[-1][len(RESULT):])


def measure(opts) -> list:
    stacks = [(k, m) for k in opts.kinds for m in opts.members]
    cache = opts.cache or tempfile.mkdtemp(prefix="sbfn-compile-cache-")
    with concurrent.futures.ThreadPoolExecutor(opts.parallel) as pool:
        cold = list(pool.map(lambda s: spawn(*s, opts.steps, cache, False), stacks))
        warm = list(pool.map(lambda s: spawn(*s, opts.steps, cache, True), stacks))
    return [{**w, "cold_compile_s": c.get("compile_s"), "cold_error": c.get("error")}
            for c, w in zip(cold, warm)]


def split_seconds(rows: list, steps_per_trial: int) -> tuple[float, float]:
    """(uncompiled, compiled with every compile counted) member-training seconds of a split."""
    plain = compiled = 0.0
    for r in rows:
        plain += EPSILONS * steps_per_trial * r["step_plain_s"]
        compiled += (EPSILONS * steps_per_trial * r["step_compiled_s"] + r["cold_compile_s"]
                     + (EPSILONS - 1) * r["compile_s"])
    return plain, compiled


def report(rows: list, opts) -> dict:
    good = [r for r in rows if "error" not in r and r.get("cold_compile_s") is not None]
    steps_per_trial = TRIAL_EPOCHS * -(-TRIAL_IMAGES // BATCH)
    out = []
    for r in rows:
        if r not in good:
            out.append([r["kind"], str(r["m"]), "failed", r.get("error") or r["cold_error"],
                        "", "", "", "", ""])
            continue
        saved = steps_per_trial * (r["step_plain_s"] - r["step_compiled_s"])
        out.append([r["kind"], str(r["m"]), f"{r['cold_compile_s']:.1f}", f"{r['compile_s']:.1f}",
                    f"{r['again_s']:.1f}", f"{r['step_plain_s'] * 1e3:.2f}",
                    f"{r['step_compiled_s'] * 1e3:.2f}",
                    f"{r['step_plain_s'] / r['step_compiled_s']:.2f}x", f"{saved:.1f}"])
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    table(f"{name}: compiling each stack (s) and its steps (ms, batch {BATCH}, bf16 + CUDA graph "
          f"on CUDA); saved = a default trial's {steps_per_trial} steps",
          ["kind", "M", "cold compile", "warm, new process", "again, same process",
           "step plain", "step compiled", "speed-up", "saved a trial (s)"], out)
    summary = {"device": name, "steps_per_trial": steps_per_trial, "rows": rows}
    if len(good) == len(rows):
        plain, compiled = split_seconds(good, steps_per_trial)
        summary.update(split_plain_s=plain, split_compiled_s=compiled)
        print(f"a default split's member training: {plain:.0f} s uncompiled, {compiled:.0f} s "
              f"compiled with every compile counted")
        target("default split, compiled vs not (every compile counted)", plain / compiled, 1.2)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--members", nargs="+", type=int, default=list(MEMBERS))
    parser.add_argument("--parallel", type=int, default=3, help="cold stacks compiled at once")
    parser.add_argument("--steps", type=int, default=60, help="full batches an epoch")
    parser.add_argument("--cache", help="the compile cache directory (default: a new one)")
    parser.add_argument("--json", help="also write the measurements to this file")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "M"), help=argparse.SUPPRESS)
    parser.add_argument("--alone", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(RESULT + json.dumps(child(opts.child[0], int(opts.child[1]), opts.steps,
                                        opts.cache, opts.alone)), flush=True)
        return
    summary = report(measure(opts), opts)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
