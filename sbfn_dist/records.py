"""The records of a trial -- one per (fold, model, setting) -- and the registry of their columns.

Every record is built here: `base` (what all rows of a fold share), `for_model` (the settings
one model used), `scored`, `diverged`, and `failed` (a sweep's trial that ran out of retries).
Every column is registered in COLUMNS with its kind; the sweeps' progress and the analysis ask
the registry (is this column a hyper-parameter? a score?) instead of keeping lists of their own,
and a test checks that run_trial emits no column the registry does not know.

Torch-free on purpose: the analysis layer reads the library through this module (and through it
the settings' fields and tasks), the data-set catalogue (catalog.py) and the results directory's
layout (results_dir.py), nothing else. A room of floor 2 of the library (docs/design.md): above
settings/, below everything that writes a record. The columns are documented in
docs/results-table.md.
"""

import json
import math
import platform
from collections.abc import Mapping
from dataclasses import dataclass

from sbfn_dist import __version__
from sbfn_dist.settings.fields import (  # noqa: F401 (analysis)
    FIELDS, HETEROGENEOUS, MEMBER_SEPARATOR, Ctx)
from sbfn_dist.settings.tasks import (  # noqa: F401 (analysis)
    ANCHORS, BEST_SINGLE, CLOSED_FORM, ESTIMATORS, ITERATIVE, SBFN_HEADS, TASKS)

STATUSES = ("ok", "diverged", "failed")
FAMILIES = ("sbfn", "competitor")
# The sweeps' M = 1 reference trial: reported as its own model, never an M setting of "arithmetic".
REFERENCE_MODEL = "single_network_M1"

# One display name per model (the names the paper's tables use).
MODEL_LABELS = {
    # regression (paper, Tables "tableauc_test" / "tableenergy_test")
    "sbfn_ls": "s-BFN least squares", "sbfn_ls_linear": "s-BFN least squares + linear",
    "g1": "s-BFN G1", "g2": "s-BFN G2", "g3": "s-BFN G3", "arithmetic": "Arithmetic combiner",
    REFERENCE_MODEL: "Single network (M = 1)",
    # heterogeneous hypothesis sets (beyond the paper, docs/method.md)
    "sbfn_rbf": "s-BFN multivariate RBF (K by inner CV)", "stack_ridge": "Stacking (RidgeCV)",
    "stack_nnls": "Stacking (NNLS)", "stack_logistic": "Stacking (logistic)",
    "ensemble_selection": "Ensemble selection (Caruana)",
    "best_single": "Best single (inner CV)",
    # the estimators registry: the paper's competitors, then the others
    "svm_rbf": "SVM-RBF", "random_forest": "Random forest", "gradient_boosting": "Gradient boosting",
    "extra_trees": "Extra trees", "hist_gradient_boosting": "Hist. gradient boosting",
    "knn": "k-NN", "ridge": "Ridge / logistic", "mlp": "MLP (scikit-learn)",
    # classification (paper, Table "tab:ensemble_variants")
    "sbfn": "s-BFN", "sbfn_stacked": "s-BFN (stacked)", "moe": "MoE", "moe_stacked": "MoE (stacked)",
    "logit_mean": "Mean", "logit_mean_tuned": "Mean (tuned T)", "prob_mean": "Prob. mean",
    "base_avg": "Base avg.",
}


@dataclass(frozen=True)
class Column:
    name: str
    # identity | config | setting | fitted | data | score | diagnostic | member | timing | size |
    # status
    kind: str
    doc: str = ""
    hyper: bool = False   # a hyper-parameter: configurations are compared over it


def _columns() -> dict:
    cols = [
        Column("fold", "identity", "the fold (or split) this row was tested on"),
        Column("model", "identity", "combiner or competitor name (MODEL_LABELS)"),
        Column("family", "identity", "sbfn (a combiner of the members) or competitor"),
        Column("role", "identity", "sweeps: ensemble, reference (M = 1) or competitors"),
        Column("package_version", "identity", "sbfn-dist version that produced the row"),
        Column("host", "identity", "the machine that computed the row (its hostname)"),
        Column("model_params", "setting", "JSON of the model's own setting", hyper=True),
        Column("lambda2", "setting", "the regression combiner's lambda2 (NaN where none)", True),
        Column("lambda2_grid", "config", "the lambda2 values the trial evaluated (JSON)"),
        Column("plugin_members", "config", "JSON list of plug-in hypotheses in D", hyper=True),
        Column("target", "data", "the target column; regression scores are in its unit"),
        Column("target_unit", "data", "the target's unit ('' if unknown)"),
        Column("n_classes", "data", "classes of a classification target"),
        Column("n_train", "data", "rows (images) that trained the members"),
        Column("n_val", "data", "held-out rows the stacked combiners fitted on"),
        Column("n_test", "data", "rows every model is scored on"),
        Column("status", "status", "ok, diverged or failed"),
        Column("error", "status", "why the status is not ok"),
        Column("weights", "fitted", "the combiner's fitted weight of each hypothesis, JSON "
               "{column: weight} (ensemble_selection: selection counts / rounds; stack_nnls; "
               "best_single: 1 on its column)"),
        Column("fitted_params", "fitted", "JSON of what a combiner's fit chose on the fold's "
               "own rows, which may differ from fold to fold (stack_ridge: RidgeCV's alpha)"),
        Column("calibration_temperature", "fitted", "a learned head's post-hoc temperature tau "
               "(head_calibration: temperature; fitted on the validation part)"),
        Column("reliability", "fitted", "classification rows: the test part's confidence bins "
               "(Guo et al. 2017), JSON of count, summed confidence and rows right per bin"),
        Column("uninformative", "status", "classification combiners: right on no more of the "
               "rows it was fitted on than the constant guess (docs/method.md)"),
        Column("members_train_seconds", "timing", "training the M members once (in a pack: "
               "its time times this set's share of the packed members)"),
        Column("packed_members", "size", "members trained together in one stack (its own M "
               "when trained alone)"),
        Column("plugin_seconds", "timing", "fitting the plug-ins (inner folds + refits)"),
        Column("train_seconds", "timing", "members + plug-ins + this model's fit"),
        Column("eval_seconds", "timing", "member forward pass on the test part + prediction"),
        Column("n_params", "size", "trainable parameters of the members + the combiner"),
        Column("n_params_members", "size", "trainable parameters of the members"),
        Column("flops_per_example", "size", "forward FLOPs of the M members per example"),
    ]
    for task in TASKS.values():
        cols += [Column(s, "score", f"{task.name} test score") for s in task.scores]
        cols += [Column(f"member_{task.metric}_{stat}", "member",
                        f"{stat} of the individual members' test {task.metric}")
                 for stat in ("mean", "min", "max")]
    cols += [Column(d, "diagnostic", "ensemble diagnostic on the test part (docs/diagnostics.md)")
             for d in DIAGNOSTICS["classification"]]
    cols += [Column(f.name, "config", f.doc, f.hyper) for f in FIELDS if f.trial and f.record]
    return {c.name: c for c in cols}


DIAGNOSTICS = {
    "regression": ("bregman_ensemble_loss", "bregman_avg_member_loss", "bregman_diversity",
                   "bregman_bias"),
    "classification": ("bregman_ensemble_loss", "bregman_avg_member_loss", "bregman_diversity",
                       "bregman_bias", "gibbs_risk", "disagreement", "mv_risk", "c_bound"),
}
COLUMNS = _columns()


def is_hyperparameter(column: str) -> bool:
    """Registered as a hyper-parameter; unregistered columns (a user's labels) never are."""
    return column in COLUMNS and COLUMNS[column].hyper


def metric_of(task: str) -> str:
    return TASKS[task].metric


def model_label(name: str) -> str:
    return MODEL_LABELS.get(name, name)


# ------------------------------------------------------------------------- the best of ties
# Two means of a metric tie when they differ by at most this relative amount: the same scores
# averaged in another order (a sweep's running means, its end table, the report) differ in
# their last bits, and 2 of 3 images right is 66.67% in every configuration that got them.
TIE = 1e-9
# The model's own setting (its combiner's lambda2, a competitor's grid point: model_params)
# breaks a tie last, after the configuration's settings, since the sweep's progress line ranks
# configurations by their objective's best setting without naming it.
OWN_SETTING = ("lambda2", "model_params")


def best_position(means, settings, higher_is_better: bool):
    """The position of the best of `means` (NaN never), one configuration each with its
    `settings` (a mapping: setting -> value); None when none is a number. Means that tie (TIE)
    go to the first in `tie_order`: the one rule of the sweep's progress line, its end table and
    the report (docs/sweeps.md, "Ties")."""
    sign = -1.0 if higher_is_better else 1.0
    keys = [sign * float(m) for m in means]
    scored = [k for k in keys if k == k]
    if not scored:
        return None
    top = min(scored)
    tied = [i for i, k in enumerate(keys) if k == k and k - top <= TIE * abs(top)]
    return min(tied, key=lambda i: tie_order(settings[i]))


def tie_order(settings: Mapping) -> tuple:
    """How tied configurations are ordered: fewer members first (the cheaper ensemble to train
    and serve), then every other setting by name, lower values first (numbers, also as text
    "0.5", by value; text alphabetically; unset or "-" first), the model's own setting last
    (OWN_SETTING; model_params' JSON read as its settings)."""
    flat = {k: v for k, v in settings.items() if k != "model_params"}
    own = _json_settings(settings.get("model_params"))
    first = lambda name: (name != "n_members", name in OWN_SETTING, name)
    return (*((n, _value_order(flat[n])) for n in sorted(flat, key=first)),
            *((n, _value_order(own[n])) for n in sorted(own)))


def _json_settings(text) -> dict:
    """model_params' JSON as a mapping ({} for none, or for a label that is not JSON)."""
    try:
        parsed = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {"model_params": text}
    return parsed if isinstance(parsed, dict) else {"model_params": text}


def _value_order(value) -> tuple:
    """A total order of setting values: unset, then numbers by value, then text."""
    if value is None or value in ("", "-") or (isinstance(value, float) and value != value):
        return (0, 0.0, "")
    try:
        return (1, float(value), "")
    except (TypeError, ValueError):
        return (2, 0.0, json.dumps(value, sort_keys=True, default=str)
                if not isinstance(value, str) else value)


# ------------------------------------------------------------------------- building records
def model_names(config: Mapping) -> set[str]:
    """The models whose records a trial writes on each fold: its combiners, its competitors and
    its plug-in members, each under its own name (tests/test_experiment.py holds run_trial to
    it)."""
    return {*config.get("combiners", ()), *config.get("competitors", ()),
            *config.get("plugin_members", ())}


def used_settings(config: Mapping, combiners=(), competitors=()) -> dict:
    """The recorded config fields that a model running alone in the trial would use."""
    values = {**config, "combiners": tuple(combiners), "competitors": tuple(competitors)}
    ctx = Ctx(values)
    out = {}
    for f in FIELDS:
        if f.trial and f.record and f.name in config and f.when(ctx):
            out[f.name] = config[f.name]
    if "lambda2" in config and ctx.uses(*CLOSED_FORM, *ITERATIVE):
        out["lambda2_grid"] = json.dumps(list(config["lambda2"]))
    if "plugin_members" in config and combiners:
        out["plugin_members"] = json.dumps(list(config["plugin_members"]))
    out.update(config.get("extra", {}))
    return out


def base(config: Mapping, fold: int, data: dict) -> dict:
    """What every record of a fold shares: identity, where it was computed, data sizes and
    units, the run labels."""
    rec = {"dataset": config["dataset"], "task": config["task"], "seed": config["seed"],
           "sweep": config["sweep"], "trial_id": config["trial_id"], "fold": fold,
           "package_version": __version__, "host": platform.node(), **data}
    rec.update(config.get("extra", {}))
    return rec


def for_model(base_rec: dict, config: Mapping, model: str, family: str) -> dict:
    """The base plus every setting `model` used (competitors use no member or combiner field)."""
    settings = (used_settings(config, combiners=(model,)) if family == "sbfn"
                else used_settings(config, competitors=(model,)))
    return {**base_rec, **settings, "model": model, "family": family}


def scored(rec: dict, params: dict, scores: dict, status_error: str = "", **extra) -> dict:
    """A finished row: its setting (`params`, JSON), its scores and timings."""
    status = "ok" if not status_error else "diverged"
    return {**rec, "model_params": json.dumps(params), **extra, "status": status,
            "error": status_error, **scores}


def diverged(rec: dict, params: dict, task: str, error: str) -> dict:
    """A row whose members (or combiner) produced non-finite values: NaN scores."""
    nan = {s: math.nan for s in TASKS[task].scores}
    return {**rec, "model_params": json.dumps(params), "status": "diverged", "error": error, **nan}


def failed(config: dict, error: str) -> dict:
    """A sweep trial that ran out of retries: one row, no model, and no host (the driver writes
    it; where the attempts ran is in Tune's trial logs)."""
    rec = base(config, math.nan if config.get("fold") is None else config["fold"], {})
    del rec["host"]
    return {**rec,
            **used_settings(config, config.get("combiners", ()), config.get("competitors", ())),
            "model": "", "family": "", "status": "failed", "error": error}


def check(record: dict) -> None:
    """Raise if a record holds a column the registry does not know (labels from `extra` aside)."""
    unknown = [k for k in record if k not in COLUMNS]
    if unknown:
        raise KeyError(f"record columns {unknown} are not registered in "
                       "sbfn_dist.records.COLUMNS")
