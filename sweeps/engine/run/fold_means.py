"""What a trial reports to Tune after each fold, and the driver reads back (the progress line,
MLflow): each configuration's running means over its folds done, and errors as one line.
"""

import json
import re

from sbfn_dist.settings.tasks import TASKS
from sweeps.engine.plan.grid_trials import axis_text


def summarise(records: list[dict], objective: str) -> dict:
    """Running means over the folds done: metric/model (best setting) and metric/model/setting.

    `objective` is the model whose best mean drives search and "best so far" (falls back to
    the best model present, e.g. in the competitors trial)."""
    task = TASKS[records[0]["task"]]
    metric, sign = task.metric, task.sign()
    means: dict = {}
    for r in records:
        if r["status"] == "ok":
            means.setdefault((r["model"], r.get("model_params", "{}")), []).append(r[metric])
    out = {"folds_done": len({r["fold"] for r in records}),
           "not_ok": sum(r["status"] != "ok" for r in records)}
    best: dict = {}
    for (model, params), values in means.items():
        mean = sum(values) / len(values)
        out[f"{metric}/{model}/{setting_label(params)}"] = mean
        if model not in best or sign * mean < sign * best[model]:
            best[model] = mean
    out.update({f"{metric}/{model}": v for model, v in best.items()})
    pick = objective if objective in best else min(best, key=lambda m: sign * best[m], default=None)
    out["objective"] = best[pick] if pick else float("nan")
    out["objective_model"] = pick or ""
    return out


def summarise_pack(records: dict, objective: str, on_record: dict | None = None) -> dict:
    """The pack's result: each configuration's running summary (under "configs", by key; one
    that failed has none; with `on_record`, key -> the folds it has in the store, their count as
    its "folds_recorded"), the folds done by all of them together, and the best objective among
    them (Tune's metric). trial_keys: every configuration of the pack, in its order."""
    per = {key: summarise(recs, objective) for key, recs in records.items() if recs}
    for key in per.keys() & (on_record or {}).keys():
        per[key]["folds_recorded"] = len(on_record[key])
    task = TASKS[next(recs for recs in records.values() if recs)[0]["task"]]
    scored = [k for k, s in per.items() if s["objective"] == s["objective"]]   # not NaN
    # The sweep's objective model where a configuration has it (not an M = 1 reference's mean)
    scored = [k for k in scored if per[k]["objective_model"] == objective] or scored
    best = min(scored, key=lambda k: task.sign() * per[k]["objective"], default=None)
    return {"configs": per, "trial_keys": list(records),
            "folds_done": sum(s["folds_done"] for s in per.values()),
            "not_ok": sum(s["not_ok"] for s in per.values()),
            "objective": per[best]["objective"] if best else float("nan"),
            "objective_model": per[best]["objective_model"] if best else "",
            "objective_key": best or ""}


# An error line's length at most: a refusal of this project, which names the problem and the
# fix, runs to about 700 characters with its paths (a missing data file's); what is longer is
# a dump (an array's repr), cut at a word with "...".
ERROR_LINE_CHARS = 2000


def error_line(exc: BaseException) -> str:
    """An error as one line: its type and the last line of its message, whole up to
    ERROR_LINE_CHARS (it was cut at 500, mid-word, in the middle of the fix)."""
    lines = str(exc).strip().splitlines() or [""]
    line = lines[-1]
    if len(line) > ERROR_LINE_CHARS:
        line = line[:ERROR_LINE_CHARS].rsplit(" ", 1)[0] + " ..."
    return f"{type(exc).__name__}: {line}"


def setting_label(params: str) -> str:
    values = json.loads(params) if params else {}
    if not values:
        return "default"
    label = "_".join(f"{k}-{axis_text(v)}" for k, v in sorted(values.items()))
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:120]  # MLflow's metric-name characters
