"""Every setting of sbfn-dist, declared once: what it allows, its default, where it applies.

`TrialConfig` (one `run_trial` call), the scikit-learn estimators and the records schema all read
this table; no other module holds a default. A field applies to a trial only where its `when`
holds: an image setting never applies to a table, an iterative combiner's step size only when an
iterative combiner runs. `TrialConfig` refuses a field that does not apply (naming it and where it
does), and the records leave it out, so a record holds only settings that were used.

The table is in resolution order: `when` and context-dependent defaults and choices may read
any field above them. Defaults that depend on the trial are keyed by scope, most specific first:
"tabular regression" / "tabular classification" / "image classification", then the task, then
the modality. `est` is the scikit-learn estimators' default where it differs, with the reason.
Regression defaults follow the paper's Table "hyper"; image defaults its section "Deep Base
Learners" (T = 3, eta_alpha = 0.1) with a CPU-friendly recipe; docs/method.md has the reasons.

Torch-free on purpose: the analysis layer reads it through `sbfn_dist.records`.
"""

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

from sbfn_dist import catalog
from sbfn_dist.errors import DataError, did_you_mean
from sbfn_dist.settings.tasks import (CLOSED_FORM, ESTIMATORS, ITERATIVE, LEARNED_HEADS,
                                      PLUGIN_HEADS, SBFN_HEADS, STACKED, STACKED_HEADS,
                                      TASKS)
from sbfn_dist.user_code import (estimator_class, import_estimator, import_factory,
                                 is_factory_path)

# ------------------------------------------------------------------------- vocabularies
# The command that prints this table (sbfn_dist/interfaces/usage.py), named in errors.
LIST_FIELDS_COMMAND = "python -m sbfn_dist --list-fields"
SPLITS = ("kfold", "holdout", "fixed", "fixed_train_kfold")
ACTIVATIONS = ("tanh", "relu")
INIT_SCHEMES = ("scaled_default", "scaled_normal")
DTYPES = ("float32", "float64")
DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("auto", "fp32", "bf16")           # sbfn_dist.learners.steps resolves "auto" per device
STEP_ENGINES = ("auto", "eager", "cuda_graph")
STEP_COMPILES = ("auto", "off", "on")          # sbfn_dist.learners.steps resolves "auto" per device
ARCHITECTURES = ("simple_cnn", "resnet_tiny1", "resnet_tiny2")
HETEROGENEOUS = "mixed"       # the paper's heterogeneous kind: the architectures alternate
HOMOGENEOUS = {"cnn": "simple_cnn", "resnet": "resnet_tiny2"}   # the paper's homogeneous kinds
ENSEMBLE_KINDS = (HETEROGENEOUS, *HOMOGENEOUS, *ARCHITECTURES)
# An ensemble given as a list of architectures is stored joined by this: one value, so that it
# is one point of a sweep's axis and one records column (a factory path holds no comma).
MEMBER_SEPARATOR = ","
OPTIMIZERS = ("sgd", "adam")
REGIMES = ("on_the_fly", "plug_in")
BASES = ("member", "kmeans")
G3_BASES = ("exp", "quadratic")
ROW_NORMS = ("layernorm", "sum", "none")
CENTRE_INITS = ("kmeans++", "random")
CENTRE_STEPS = ("bounded", "plain")
HEAD_FALLBACKS = ("prior", "none")
HEAD_CALIBRATIONS = ("none", "temperature")
HEAD_OPTIMIZERS = ("sgd", "adam")
COMPETITOR_GRIDS = ("default", "small")
PLUGIN_TUNINGS = ("default", "inner_cv")
RBF_WIDTHS = ("nearest", "rms")
SELECTION_METRICS = ("log_loss", "accuracy")
SEED_LIMIT = 2 ** 32        # numpy's range for integer seeds; keeps torch's derived seeds in range


# ------------------------------------------------------------------------- constraints
def _integral(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and type(v).__name__ != "bool_"


def _real(v) -> bool:
    return (isinstance(v, numbers.Real) and not isinstance(v, bool)
            and type(v).__name__ != "bool_" and math.isfinite(v))


# The records hold integers as Parquet's int64: a larger one (n_members: 10**20 in a sweep file)
# passed every check, then failed each trial's records and every --resume with an OverflowError.
INT64_LIMIT = 2 ** 63


class Int:
    def __init__(self, lo: int, hi: int | None = None, note: str = ""):
        self.lo, self.hi, self.note = lo, hi, note

    def ok(self, v, ctx) -> bool:
        return _integral(v) and self.lo <= v < (INT64_LIMIT if self.hi is None else self.hi)

    def why(self, v, ctx) -> str:
        """What an integer beyond the records' int64 is told (the text omits the bound)."""
        if _integral(v) and self.hi is None and v >= INT64_LIMIT:
            return f"{v} is beyond the records' 64-bit integers (at most {INT64_LIMIT - 1})"
        return ""

    def text(self, ctx) -> str:
        span = f">= {self.lo}" if self.hi is None else f"in [{self.lo}, {self.hi})"
        return f"an integer {span}" + (f" ({self.note})" if self.note else "")


class Real:
    def __init__(self, lo: float, hi: float = math.inf, lo_open: bool = False, hi_open=False,
                 note: str = ""):
        self.lo, self.hi, self.lo_open, self.hi_open, self.note = lo, hi, lo_open, hi_open, note

    def ok(self, v, ctx) -> bool:
        if not _real(v):
            return False
        above = v > self.lo if self.lo_open else v >= self.lo
        below = v < self.hi if self.hi_open else v <= self.hi
        return above and below

    def text(self, ctx) -> str:
        if self.hi == math.inf:
            span = f"{'>' if self.lo_open else '>='} {self.lo:g}"
        else:
            span = (f"in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}"
                    f"{')' if self.hi_open else ']'}")
        return f"a finite number {span}" + (f" ({self.note})" if self.note else "")


class OneOf:
    """One of a fixed tuple, or of a tuple that depends on the trial (a function of ctx)."""

    def __init__(self, choices, note: str = ""):
        self.choices, self.note = choices, note

    def allowed(self, ctx) -> tuple:
        return self.choices(ctx) if callable(self.choices) else self.choices

    def ok(self, v, ctx) -> bool:
        return isinstance(v, str) and v in self.allowed(ctx)

    def text(self, ctx) -> str:
        return f"one of {self.allowed(ctx)}" + (f" ({self.note})" if self.note else "")


class Bool:
    def ok(self, v, ctx) -> bool:
        return isinstance(v, bool) or type(v).__name__ == "bool_"

    def text(self, ctx) -> str:
        return "True or False"


class Text:
    def ok(self, v, ctx) -> bool:
        return isinstance(v, str)

    def text(self, ctx) -> str:
        return "a string"


class Labels:
    def ok(self, v, ctx) -> bool:
        return isinstance(v, dict)

    def text(self, ctx) -> str:
        return "a dict of labels carried into every record"


class Maybe:
    def __init__(self, inner, none: str):
        self.inner, self.none = inner, none

    def ok(self, v, ctx) -> bool:
        return v is None or self.inner.ok(v, ctx)

    def why(self, v, ctx) -> str:
        inner_why = getattr(self.inner, "why", None)
        return inner_why(v, ctx) if inner_why and v is not None else ""

    def text(self, ctx) -> str:
        return f"None ({self.none}) or {self.inner.text(ctx)}"


class Items:
    """A tuple of items (a list or one item is accepted and becomes a tuple)."""

    def __init__(self, inner, min_len: int = 0, unique: bool = True):
        self.inner, self.min_len, self.unique = inner, min_len, unique

    def ok(self, v, ctx) -> bool:
        return (isinstance(v, tuple) and len(v) >= self.min_len
                and all(self.inner.ok(x, ctx) for x in v)
                and (not self.unique or len(set(v)) == len(v)))

    def why(self, v, ctx) -> str:
        """The first item's reason to be refused, where its check can say one."""
        inner_why = getattr(self.inner, "why", None)
        if inner_why is None or not isinstance(v, tuple):
            return ""
        return next((inner_why(x, ctx) for x in v if not self.inner.ok(x, ctx)), "")

    def text(self, ctx) -> str:
        least = f"at least {self.min_len} " if self.min_len else ""
        each = " (each at most once)" if self.unique else ""
        return f"a list of {least}values, each {self.inner.text(ctx)}{each}"


def refusal(check, value, ctx) -> str:
    """What `check` allows, led by why `value` is not that where the check can say (an import
    path names the error its import raised)."""
    why = getattr(check, "why", None)
    reason = why(value, ctx) if why else ""
    return f"{reason}; allowed: {check.text(ctx)}" if reason else check.text(ctx)


# ------------------------------------------------------------------------- context
class Ctx:
    """The values resolved so far for one trial (or estimator), with the questions `when` asks."""

    def __init__(self, values: dict, estimator: bool = False):
        self.values, self.estimator = values, estimator

    def __getitem__(self, name):
        return self.values[name]

    def get(self, name, default=None):
        return self.values.get(name, default)

    @property
    def data(self) -> catalog.DataSet:
        return catalog.lookup(self.values["dataset"])

    @property
    def task(self) -> str:
        return self.values["task"]

    @property
    def modality(self) -> str:
        return self.values.get("modality") or self.data.modality

    @property
    def tabular(self) -> bool:
        return self.modality == "tabular"

    @property
    def image(self) -> bool:
        return self.modality == "image"

    @property
    def regression(self) -> bool:
        return self.task == "regression"

    @property
    def combined(self) -> bool:
        """Some combiner runs (competitor-only trials have none)."""
        return self.estimator or bool(self.values.get("combiners"))

    @property
    def members(self) -> bool:
        """Members are trained: some combiner runs, over M >= 1 members (n_members = 0: the
        plug-ins alone are the hypotheses)."""
        return self.combined and self.values.get("n_members") != 0

    def uses(self, *combiners) -> bool:
        """Some combiner of the trial (or the estimator's one) is among `combiners`."""
        ran = (self.values.get("combiner"),) if self.estimator else self.values.get("combiners", ())
        return any(c in combiners for c in ran)

    def stacks(self) -> bool:
        """A classification combiner fits on a validation part held out from the members
        (regression's combiners of the same names fit on the training part's D), or a learned
        head's temperature does (head_calibration)."""
        calibrated = self.get("head_calibration") == "temperature" and self.uses(*LEARNED_HEADS)
        return not self.regression and (self.uses(*STACKED) or calibrated)

    def scopes(self) -> tuple:
        return (f"{self.modality} {self.task}", self.task, self.modality)


# ------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Field:
    name: str
    check: Any                          # a constraint above
    default: Any = None                 # a value, a dict keyed by scope, or a function of ctx
    when: Callable = lambda ctx: True   # where the field applies
    where: str = ""                     # where it applies, in words (for the refusal)
    est: Any = "same"                   # the estimators' default where it differs ("same": not)
    hyper: bool = True                  # a model hyper-parameter (analysis compares over it)
    record: bool = True                 # recorded as a column of every record that used it
    trial: bool = True                  # a TrialConfig field (False: estimator-only)
    doc: str = ""

    def default_for(self, ctx: Ctx):
        value = self.default if not ctx.estimator or self.est == "same" else self.est
        if callable(value) and not isinstance(value, type):
            return value(ctx)
        if isinstance(value, dict) and not isinstance(self.check, Labels):
            for scope in ctx.scopes():
                if scope in value:
                    return value[scope]
            raise KeyError(f"no default of {self.name} for {ctx.scopes()}")
        return value


def _combiner_choices(ctx):
    return TASKS[ctx.task].allowed


def _estimator_combiners(ctx):
    return TASKS[ctx.task].combiners


class Estimator:
    """A name of the estimators registry, or the import path of a scikit-learn model of the
    trial's task (imported here, so a typo is refused before any work starts)."""

    def ok(self, v, ctx) -> bool:
        if not isinstance(v, str):
            return False
        if v in ESTIMATORS:
            return True
        return "." in v and estimator_class(v, ctx.task) is not None

    def why(self, v, ctx) -> str:
        """Why an import path is refused: its import's own error, or what the class lacks."""
        if not isinstance(v, str) or "." not in v:
            return ""
        return f"{v!r}: {import_estimator(v, ctx.task)[1]}"

    def text(self, ctx) -> str:
        kind = "regressor" if ctx.regression else "classifier with predict_proba"
        return (f"one of {ESTIMATORS}, or the import path of a scikit-learn-compatible {kind} "
                "that builds with no arguments (package.module.ClassName)")


class Members:
    """An ensemble kind, the import path of a member factory (package.module:build), or a list of
    architectures and factory paths assigned to the members cyclically (as mixed's are). A
    factory is imported here, so a typo is refused with its import's own error before any work
    starts; what it builds is checked on a dummy batch where the data's shape is known
    (sbfn_dist.learners.factories.check_factory)."""

    def normalise(self, v):
        """A list (or tuple) is stored joined by MEMBER_SEPARATOR."""
        if isinstance(v, (list, tuple)):
            return MEMBER_SEPARATOR.join(str(item).strip() for item in v)
        return v

    def ok(self, v, ctx) -> bool:
        return isinstance(v, str) and (v in ENSEMBLE_KINDS or not self.why(v, ctx))

    def why(self, v, ctx) -> str:
        """The first item's reason to be refused (a factory's import error), "" if none."""
        if not isinstance(v, str) or v in ENSEMBLE_KINDS:
            return ""
        items = v.split(MEMBER_SEPARATOR)
        return next(filter(None, (member_refusal(item, len(items) > 1) for item in items)), "")

    def text(self, ctx) -> str:
        return (f"one of {ENSEMBLE_KINDS}, the import path of your factory build(in_channels, "
                "n_classes) -> torch.nn.Module (package.module:build; importing it runs its "
                f"code), or a list of architectures {ARCHITECTURES} and factory paths (cycled "
                "over the members)")


def member_refusal(item: str, in_list: bool = False) -> str:
    """Why one ensemble value, or one item of a list (`in_list`), names no member network (""
    if it names one). A list's items are members' networks, so a misspelt one is matched
    against the architectures alone."""
    if item in ARCHITECTURES:
        return ""
    if is_factory_path(item):
        why = import_factory(item)[1]
        return f"{item!r}: {why}" if why else ""
    if item in ENSEMBLE_KINDS:
        return kind_in_a_list(item)
    known = ARCHITECTURES if in_list else ENSEMBLE_KINDS
    return f"{item!r} is no architecture and no factory path{did_you_mean(item, known)}"


def kind_in_a_list(kind: str) -> str:
    """Why a kind (mixed, cnn, resnet) is no item of a list, and the architectures it stands
    for: a kind is a whole ensemble, a list's items are its members' networks."""
    kinds = (HETEROGENEOUS, *HOMOGENEOUS)
    means = ARCHITECTURES if kind == HETEROGENEOUS else (HOMOGENEOUS[kind],)
    return (f"{kind!r} is an ensemble kind ({', '.join(kinds)}), which cannot be an item of a "
            f"list: only architectures ({', '.join(ARCHITECTURES)}) and factory paths "
            f"(package.module:build) can; for {kind}'s members list {', '.join(means)}")


def _split_choices(ctx):
    return SPLITS if ctx.tabular else ("holdout",)


class TaskOf:
    """A task the data set's target supports."""

    def ok(self, v, ctx) -> bool:
        return v in ctx.data.tasks

    def text(self, ctx) -> str:
        # both fixes: the data set's own task, or a data set of the other one (it said "a table
        # with a class column is csv:PATH with task='classification'", to a regression too)
        data = ctx.data
        others = [task for task in TASKS if task not in data.tasks]
        instead = "".join(f", or name a {t} data set: {', '.join(catalog.names('tabular', t))}, "
                          "or csv:PATH with target=COLUMN" for t in others)
        return (f"one of {data.tasks}: '{ctx['dataset']}' is a {data.task} data set: leave task "
                f"out (the data set's own){instead}")


TABULAR = "tabular data sets (MLP members)"
IMAGES = "image data sets (CNN members)"
MEMBERS = "trials that train members (at least one combiner, n_members >= 1)"

FIELDS = [
    # --- what runs: the data set, its task, what is evaluated
    Field("dataset", Text(), "diabetes", hyper=False,
          doc="a catalog name, csv:PATH, npz:PATH or folder:PATH"),
    Field("task", TaskOf(), lambda ctx: ctx.data.task, hyper=False,
          doc="regression | classification (the data set's own by default; csv: both)"),
    Field("combiners", Items(OneOf(_combiner_choices)), lambda ctx: TASKS[ctx.task].combiners,
          record=False, doc="every combiner fitted on the same trained members"),
    Field("competitors", Items(Estimator()), (), lambda ctx: ctx.tabular,
          "tabular data sets", record=False,
          doc="scikit-learn models run on the same folds (the paper's three, the registry's "
              "others, or an import path)"),
    # --- data and split
    Field("target", Maybe(Text(), "required"), None, lambda ctx: ctx.data is catalog.CSV,
          "csv:PATH data sets (the built-in ones have a fixed target)", hyper=False, record=False,
          doc="the CSV's target column (records carry the used target as `target`)"),
    Field("data_dir", Maybe(Text(), "SBFN_DATA_DIR, then the cache"), None,
          lambda ctx: ctx.data.files, "data sets read from files (not bundled ones)",
          hyper=False, record=False),
    Field("include_random_vars", Bool(), False, lambda ctx: ctx["dataset"] == "appliances",
          "the appliances data set (its noise columns rv1, rv2)"),
    Field("n_samples", Maybe(Int(10), "all rows"), None, lambda ctx: ctx.tabular, TABULAR,
          doc="a seeded random subset of rows (sincos: rows generated)"),
    Field("split", OneOf(_split_choices, "images: stratified holdout splits"),
          {"tabular": "kfold", "image": "holdout"},
          hyper=False, doc="tables: k-fold, holdout, a published split; images: holdout"),
    Field("folds", Int(1, note=">= 2 for k-fold splits"),
          {"tabular": 10, "image": 5}, lambda ctx: ctx["split"] != "fixed",
          "split schemes other than 'fixed' (a published split is one split)", hyper=False,
          doc="folds, or holdout splits"),
    Field("fold", Maybe(Int(0), "every fold"), None, hyper=False, record=False,
          doc="run one fold only (a sweep's unit of work); records carry `fold` anyway"),
    Field("test_fraction", Real(0, 1, lo_open=True, hi_open=True), 0.2,
          lambda ctx: ctx.tabular and ctx["split"] == "holdout",
          "tabular data with split='holdout' (images take n_test)", hyper=False),
    Field("seed", Int(0, SEED_LIMIT), 0, hyper=False),
    Field("n_train", Maybe(Int(10), "the rest"), None, lambda ctx: ctx.image, IMAGES,
          hyper=False, record=False, doc="member-training images per split"),
    Field("n_test", Maybe(Int(10), "the official test-set size, else 20%; at least one image "
                             "of every class"), None, lambda ctx: ctx.image,
          IMAGES, hyper=False, record=False),
    # A folder's images are resized to one shape (members take one input shape); npz arrays
    # and the built-in sets keep theirs. >= learners/cnn.MIN_SIZE (tests/test_image_files.py).
    Field("image_size", Maybe(Int(4), "the images' own size, the same for all"), None,
          lambda ctx: ctx.data is catalog.FOLDER, "folder:PATH data sets", hyper=False,
          doc="resize every image of the folder to N x N pixels"),
    Field("augment", Bool(), lambda ctx: ctx.data.augment, lambda ctx: ctx.image and ctx.members,
          "image trials that train members", doc="crop (+ flip) augmentation of training images"),
    # --- the M members (paper, Table "hyper"; Algorithms 1 and 2)
    Field("n_members", Int(0, note="M = 1 is the single-hypothesis model; 0: the plug-ins "
                                   "alone, with plugin_members"), 5,
          lambda ctx: ctx.combined, "trials that train members or combine plug-ins (at least one "
          "combiner)"),
    Field("epsilon", Real(0, 1, note="0 = pure winner-takes-all"),
          {"regression": 0.1, "classification": 0.5}, lambda ctx: ctx.members, MEMBERS),
    Field("lr", Real(0, lo_open=True), {"tabular regression": 0.03,
                                        "tabular classification": 0.1, "image": 1e-3},
          lambda ctx: ctx.members, MEMBERS, doc="eta_theta"),
    # The estimator trains by mini-batches (b = 16, 20 epochs) where a trial follows
    # Algorithm 1 (b = 1): a scikit-learn user expects fit to take seconds, not minutes.
    # Images: a trial's 2 epochs are ~700 Adam steps on the paper's 45-60k images; an
    # estimator's set may be digits' 1,257 (8 steps an epoch). Stacked s-BFN on digits (8x8,
    # 30% held out, 5 splits): 2 epochs 0.946 (worst 0.930), 5 epochs 0.978 (worst 0.967)
    # (docs/method.md, "The scikit-learn estimators' defaults").
    # With n_members = 0 it is still the plug-in regime's passes of G1/G2/G3 over D.
    Field("epochs", Int(1), {"tabular regression": 10, "tabular classification": 50,
                             "image": 2},
          lambda ctx: ctx.members or ctx.uses(*ITERATIVE),
          "trials that train members, and the iterative combiners g1, g2, g3",
          est={"tabular regression": 20, "tabular classification": 50, "image": 5}),
    # With n_members = 0 it is still the stacked heads' SGD batch.
    Field("batch_size", Int(1, note="1 = online, Algorithm 1"),
          {"tabular regression": 1, "tabular classification": 16, "image": 128},
          lambda ctx: ctx.members or ctx.uses(*STACKED_HEADS),
          "trials that train members, and the stacked heads sbfn_stacked, moe_stacked",
          est={"tabular regression": 16, "tabular classification": 16, "image": 128}),
    # MLP members (paper, "Models Performance & Comparisons")
    Field("width", Int(1), 50, lambda ctx: ctx.members and ctx.tabular, TABULAR, doc="kappa"),
    # chi = 0.1 (paper's grid 1e-4 .. 1) barely moves two tanh layers in 20 mini-batch epochs
    # (R^2 < 0.5 on scikit-learn's linear check problem); the estimator starts at chi = 1.
    # Cross-entropy members need chi = 1 too: at 0.1 wine and iris stay near chance
    # (logit-mean accuracy 0.40 / 0.75 vs 0.97 / 0.95, docs/method.md).
    Field("init_scale", Real(0, lo_open=True), {"regression": 0.1, "classification": 1.0},
          lambda ctx: ctx.members and ctx.tabular, TABULAR, est=1.0, doc="chi"),
    Field("lambda1", Real(0), 0.0, lambda ctx: ctx.members and ctx.tabular, TABULAR,
          doc="L1 penalty, lambda1 / N per step"),
    Field("activation", OneOf(ACTIVATIONS), "tanh", lambda ctx: ctx.members and ctx.tabular,
          TABULAR),
    Field("init_scheme", OneOf(INIT_SCHEMES), "scaled_default",
          lambda ctx: ctx.members and ctx.tabular, TABULAR),
    # float64 makes an estimator's predictions independent of how rows are batched
    # (scikit-learn checks this to 1e-7).
    Field("dtype", OneOf(DTYPES), "float32", lambda ctx: ctx.members and ctx.tabular, TABULAR,
          est="float64", hyper=False),
    # CNN members (paper, "Deep Base Learners")
    Field("ensemble", Members(), HETEROGENEOUS, lambda ctx: ctx.members and ctx.image,
          IMAGES, doc="mixed (heterogeneous) | cnn | resnet | an architecture | your factory "
                      "package.module:build | a list of these architectures and factories"),
    Field("optimizer", OneOf(OPTIMIZERS), "adam", lambda ctx: ctx.members and ctx.image, IMAGES),
    Field("momentum", Real(0, 1), 0.9,
          lambda ctx: ctx.members and ctx.image and ctx["optimizer"] == "sgd",
          "image trials with optimizer='sgd'"),
    Field("weight_decay", Real(0), 0.0, lambda ctx: ctx.members and ctx.image, IMAGES),
    # How the CNN step runs (sbfn_dist.learners.steps); records carry the resolved value, and the engine
    # that actually ran. Not a hyper-parameter, but bf16 changes numbers: a column of its own.
    Field("precision", OneOf(PRECISIONS), "auto", lambda ctx: ctx.members and ctx.image, IMAGES,
          hyper=False, doc="auto: bf16 autocast (+ channels_last) on CUDA, fp32 elsewhere"),
    Field("step_engine", OneOf(STEP_ENGINES), "auto", lambda ctx: ctx.members and ctx.image,
          IMAGES, hyper=False, doc="auto: the step captured as a CUDA graph on CUDA, eager "
                                   "elsewhere; eager keeps the step in Python"),
    Field("step_compile", OneOf(STEP_COMPILES), "auto", lambda ctx: ctx.members and ctx.image,
          IMAGES, hyper=False, doc="the members' forward through torch.compile (on) or not "
                                   "(off); auto: as measured to pay on the trial's device"),
    # --- combiner settings, each where its combiners run
    Field("lambda2", Items(Real(0), min_len=1, unique=False), (0.0,),
          lambda ctx: ctx.uses(*CLOSED_FORM, *ITERATIVE, "sbfn_rbf"),
          "the s-BFN regression combiners", est=0.0, record=False,    # est: one path value
          doc="every value is evaluated on the same members (sbfn_rbf: its inner-CV grid)"),
    Field("lr_alpha", Real(0, lo_open=True), {"regression": 0.03, "classification": 0.1},
          lambda ctx: ctx.uses(*ITERATIVE, *LEARNED_HEADS),
          "iterative s-BFN (g1, g2, g3) and learned heads (sbfn, moe and their stacked forms)",
          doc="eta_alpha"),
    Field("window", Int(2, note="G2/G3 need a spread"), 100, lambda ctx: ctx.uses("g2", "g3"),
          "the g2 and g3 combiners", doc="k, G2/G3's recent-prediction window"),
    # Without members there is no training stream to replay: the frozen D (the plug-ins').
    Field("online_regime", OneOf(lambda ctx: REGIMES if ctx.members else REGIMES[1:],
                                 "n_members = 0: plug_in, there is no member stream"),
          lambda ctx: REGIMES[0] if ctx.members else REGIMES[1],
          lambda ctx: ctx.uses(*ITERATIVE), "the iterative combiners g1, g2, g3",
          doc="on_the_fly: replay the members' training stream (Algorithm 1); plug_in: the "
              "frozen D, for `epochs` shuffled passes"),
    Field("sbfn_basis", OneOf(BASES), "member", lambda ctx: ctx.uses(*CLOSED_FORM),
          "the closed-form combiners sbfn_ls, sbfn_ls_linear"),
    Field("sbfn_intercept", Bool(), False, lambda ctx: ctx.uses("sbfn_ls"),
          "the sbfn_ls combiner (sbfn_ls_linear always has an intercept)"),
    Field("g3_basis", OneOf(G3_BASES), "exp", lambda ctx: ctx.uses("g3"), "the g3 combiner"),
    Field("plugin_members", Items(Estimator()), (),
          lambda ctx: ctx.combined and not ctx.estimator and ctx.tabular
          and (ctx.regression or ctx.uses(*PLUGIN_HEADS)),
          "tabular regression trials with a combiner, and tabular classification trials "
          f"with a combiner that reads them ({', '.join(PLUGIN_HEADS)})", record=False,
          doc="fitted predictors joining the M members as hypotheses of D (classification: "
              "their class probabilities)"),
    Field("plugin_folds", Int(2, note="inner folds of the plug-ins"), 5,
          lambda ctx: bool(ctx.get("plugin_members")), "trials with plugin_members"),
    Field("plugin_tuning", OneOf(PLUGIN_TUNINGS), "default",
          lambda ctx: bool(ctx.get("plugin_members")), "trials with plugin_members",
          doc="default: each plug-in's default setting; inner_cv: the setting of its small grid "
              "with the lowest out-of-fold error on the training part"),
    # sbfn_rbf (docs/method.md, "Heterogeneous s-BFN"): K multivariate units, K and lambda2
    # chosen jointly by inner CV on the training part's D.
    Field("rbf_units", Items(Int(1), min_len=1), (2, 4, 8, 16, 32), lambda ctx: ctx.uses("sbfn_rbf"),
          "the sbfn_rbf combiner", record=False, doc="the K values its inner CV chooses from"),
    Field("rbf_width", OneOf(RBF_WIDTHS), "nearest", lambda ctx: ctx.uses("sbfn_rbf"),
          "the sbfn_rbf combiner",
          doc="nearest: a unit's width is the distance to its nearest other centre; rms: its "
              "cluster's RMS radius"),
    Field("inner_folds", Int(2), 5, lambda ctx: ctx.uses("sbfn_rbf"), "the sbfn_rbf combiner",
          doc="inner folds of the training part that choose sbfn_rbf's K and lambda2"),
    # ensemble_selection (docs/method.md, "The practitioners' combiners"): Caruana et al.'s
    # rounds R; 50 is auto-sklearn's ensemble_size. Regression minimises the squared error.
    Field("selection_rounds", Int(1), 50, lambda ctx: ctx.uses("ensemble_selection"),
          "the ensemble_selection combiner",
          doc="R, the greedy rounds (with replacement): weights are selection counts / R"),
    Field("selection_metric", OneOf(SELECTION_METRICS), "log_loss",
          lambda ctx: ctx.uses("ensemble_selection") and not ctx.regression,
          "classification trials with the ensemble_selection combiner",
          doc="the loss its greedy rounds minimise on the validation part: log_loss, or "
              "accuracy (its error rate)"),
    Field("temperature", Real(0, lo_open=True), 3.0, lambda ctx: ctx.uses(*SBFN_HEADS),
          "the s-BFN classification heads (sbfn, sbfn_stacked)", doc="T"),
    Field("sbfn_units_per_member", Int(1, note="K = k * M"), 4, lambda ctx: ctx.uses(*SBFN_HEADS),
          "the s-BFN classification heads (sbfn, sbfn_stacked)"),
    Field("row_norm", OneOf(ROW_NORMS), "layernorm", lambda ctx: ctx.uses(*SBFN_HEADS),
          "the s-BFN classification heads (sbfn, sbfn_stacked)"),
    Field("centre_init", OneOf(CENTRE_INITS), "kmeans++", lambda ctx: ctx.uses(*SBFN_HEADS),
          "the s-BFN classification heads (sbfn, sbfn_stacked)"),
    Field("centre_step", OneOf(CENTRE_STEPS), "bounded", lambda ctx: ctx.uses(*SBFN_HEADS),
          "the s-BFN classification heads (sbfn, sbfn_stacked)",
          doc="bounded: a centre moves at most one RBF width gamma per step; plain: Algorithm "
              "2's step, unbounded"),
    Field("head_optimizer", OneOf(HEAD_OPTIMIZERS), "sgd", lambda ctx: ctx.uses(*LEARNED_HEADS),
          "the learned heads (sbfn, moe and their stacked forms)"),
    Field("head_fallback", OneOf(HEAD_FALLBACKS), "prior", lambda ctx: ctx.uses(*LEARNED_HEADS),
          "the learned heads (sbfn, moe and their stacked forms)",
          doc="prior: a head right on no more of the rows it was fitted on than their majority "
              "class predicts their class prior (the constant guess); none: its own output"),
    Field("head_calibration", OneOf(HEAD_CALIBRATIONS), "none", lambda ctx: ctx.uses(*LEARNED_HEADS),
          "the learned heads (sbfn, moe and their stacked forms)",
          doc="temperature: their probabilities temperature-scaled (Guo et al. 2017), tau fitted "
              "on the validation part (a stacked head's out-of-fold there); none: as trained"),
    Field("head_epochs", Maybe(Int(1), ">= 10 epochs and >= 1000 steps"), None,
          lambda ctx: ctx.uses(*STACKED_HEADS), "the stacked heads"),
    # --- the validation part that stacked combiners fit on
    Field("n_val", Maybe(Int(1), "10% of the official training images, at least one of every "
                            "class"), None,
          lambda ctx: ctx.image and ctx.stacks(),
          f"image trials with a stacked combiner ({', '.join(STACKED)})",
          hyper=False, record=False),
    Field("val_fraction", Real(0, 1, lo_open=True, hi_open=True), 0.2,
          lambda ctx: ctx.tabular and ctx.stacks(),
          "tabular classification with a stacked combiner", hyper=False,
          doc="share of each training part held out for the stacked combiners"),
    # --- competitors
    Field("competitor_grid", OneOf(COMPETITOR_GRIDS), "small",
          lambda ctx: bool(ctx.get("competitors")), "trials with competitors"),
    # --- where it runs and what it is labelled
    Field("device", OneOf(DEVICES), "auto", lambda ctx: ctx.members, MEMBERS, est="cpu",
          hyper=False, doc="auto: CUDA when present; records carry the device used"),
    Field("sweep", Text(), "", hyper=False),
    Field("trial_id", Text(), "", hyper=False),
    Field("extra", Labels(), {}, hyper=False, record=False,
          doc="free-form labels carried into every record"),
    # --- estimator-only parameters
    # Images: the head stacked on held-out member outputs beats the on-the-fly one (docs/results,
    # claim (3)); tables: on the fly, as good or better at the bundled sets' sizes (iris 0.96 vs
    # 0.92: stacking holds out a fifth of 120 rows; docs/method.md).
    Field("combiner", OneOf(_estimator_combiners), {"regression": "sbfn_ls_linear",
                                                 "tabular classification": "sbfn",
                                                 "image classification": "sbfn_stacked"},
          trial=False, doc="the estimator's one combiner"),
    Field("random_state", Maybe(Int(0, SEED_LIMIT), "seed 0: fits are deterministic"), None,
          trial=False),
]
BY_NAME = {f.name: f for f in FIELDS}
TRIAL_FIELDS = tuple(f.name for f in FIELDS if f.trial)


def field(name: str) -> Field:
    return BY_NAME[name]


def defaults(task: str, modality: str, estimator: bool = False) -> dict:
    """Every default that is fixed by the task and modality alone (not by a data set's name)."""
    ctx = Ctx({"task": task, "modality": modality, "optimizer": "sgd"}, estimator=estimator)
    out = {}
    for f in FIELDS:
        try:
            out[f.name] = f.default_for(ctx)
        except (KeyError, DataError):
            continue          # a default that depends on the data set itself
    return out
