"""Saved models: a fitted estimator as a directory whose loading reads data, never runs code.

    DIR/
      manifest.json        the settings as text: the format and library version, the estimator's
                           class and task, get_params(), every fitted attribute (`name_`) encoded
                           below, the scikit-learn objects and what loading them trusts, and
                           where the model came from (`source`, e.g. a sweep's trial and fold)
      tensors.pt           the weights: {name: CPU tensor} written by torch.save and read by
                           torch.load(weights_only=True), whose unpickler builds tensors only
      sklearn/NAME.skops   fitted scikit-learn objects (plug-ins), the one exception: read by
                           skops.io, which builds objects of trusted types only (TRUSTED_TYPES
                           and skops' own defaults); any other type needs trust_plugins=True

A fitted state is params + tensors + (optional) scikit-learn objects. Each fitted attribute is
encoded by what it is, as a JSON node (one key names the kind):

    None, bool, int, str, finite float    as itself; {"float": "nan"} for a non-finite one
    list / tuple / dict (text keys)       [..] / {"tuple": [..]} / {"dict": {..}}, recursively
                                          (scikit-learn's Bunch: {"bunch": {..}})
    numpy array                           {"array": {"dtype", "shape", "values"}} inline when
                                          small (a scaler's moments, classes, feature names),
                                          else {"array": {"dtype", "tensor": NAME}}
    numpy scalar                          {"scalar": value, "dtype": "float64"}
    torch tensor                          {"tensor": NAME, "device": "cuda:0"}
    torch dtype                           {"torch_dtype": "float64"}
    a library object of BAGS              {"object": CLASS, "attributes": {..}}: data only, set
                                          on an instance made without calling its __init__
    a library object of RECIPES           {"built": CLASS, "args": {..}, "tensors": {key: NAME}}:
                                          rebuilt by its constructor from args, then its tensors
                                          filled in (torch modules: load_state_dict, strict)
    a scikit-learn estimator              {"sklearn": NAME}

Loading instantiates only the classes these tables name (never one the file names) and the
estimators of ESTIMATORS. Member networks from your own factory (package.module:build) are
built by importing it, which runs its code: such a model also needs trust_plugins=True.
Tensors go back to the device they were saved from where it exists here, else to the CPU.
docs/models.md describes the format and its safety for users.
"""

import dataclasses
import importlib
import json
import math
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from sbfn_dist import __version__
from sbfn_dist.combiners.basis import KMeansBasis, MemberBasis
from sbfn_dist.combiners.classification import MoEGateHead, SBFNClassifierHead
from sbfn_dist.combiners.ensembles import NoMembers
from sbfn_dist.combiners.mean import ArithmeticCombiner
from sbfn_dist.combiners.online import OnlineSBFN
from sbfn_dist.combiners.sbfn_ls import SBFNLeastSquares
from sbfn_dist.combiners.selection import BestSingle, EnsembleSelection
from sbfn_dist.combiners.stacking import (SBFNRBF, LogisticStack, ProbabilityNNLS, StackNNLS,
                                          StackRidge)
from sbfn_dist.data.preprocess import FoldScaler
from sbfn_dist.errors import SbfnError, require_writable
from sbfn_dist.learners.cnn import ARCHITECTURES
from sbfn_dist.learners.geometry import CrossEntropy, SquaredLoss
from sbfn_dist.learners.mlp import VectorisedMLP
from sbfn_dist.learners.registry import Ensemble
from sbfn_dist.learners.training import TrainedMembers

FORMAT = "sbfn-dist saved model"
FORMAT_VERSION = 1
MANIFEST, TENSORS, SKLEARN_DIR = "manifest.json", "tensors.pt", "sklearn"
# Arrays up to this many items are written into manifest.json as text (readable, and exact:
# a float's repr reads back to the same bits); larger ones go to tensors.pt.
INLINE_MAX = 256
# The estimators a directory may hold, by class name -> the module that defines it (a fixed
# table: the manifest names a row, never a module to import).
ESTIMATORS = {"SBFNRegressor": "sbfn_dist.interfaces.estimators",
              "SBFNClassifier": "sbfn_dist.interfaces.estimators",
              "SBFNStackingRegressor": "sbfn_dist.interfaces.stacking_estimators",
              "SBFNStackingClassifier": "sbfn_dist.interfaces.stacking_estimators"}
# Library classes whose instances are data only (their methods read attributes set by fit):
# restored by setting those attributes on an instance made with object.__new__.
BAGS = {c.__name__: c for c in (FoldScaler, MemberBasis, KMeansBasis, SBFNLeastSquares,
                                SBFNRBF, OnlineSBFN, ArithmeticCombiner, SquaredLoss,
                                CrossEntropy, TrainedMembers, NoMembers, EnsembleSelection,
                                BestSingle, StackNNLS, ProbabilityNNLS, StackRidge,
                                LogisticStack)}
# The types skops must be told to trust for the models of the estimators registry
# (sbfn_dist.learners.competitors, as competitors or plug-ins) beyond its own defaults; a test
# checks that every registry model loads with these alone.
TRUSTED_TYPES = ("sklearn.tree._tree.Tree",
                 "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
                 "sklearn.neighbors._kd_tree.KDTree",
                 "sklearn.metrics._dist_metrics.EuclideanDistance64",
                 "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
                 "sklearn.calibration._CalibratedClassifier",
                 "sklearn.calibration._SigmoidCalibration")
SAFETY = ("tensors.pt holds tensors only (torch.load with weights_only=True); the objects here "
          "are rebuilt from text by sbfn_dist's own classes. Files under sklearn/ are fitted "
          "scikit-learn objects (skops.io): types beyond skops' defaults and "
          "sbfn_dist.interfaces.saved.TRUSTED_TYPES load only with trust_plugins=True.")


class SavedModelError(SbfnError):
    """A directory that is no saved model, or a model this code will not (or cannot) load."""


# ------------------------------------------------------------------------- recipes
@dataclasses.dataclass(frozen=True)
class Recipe:
    """How an object with tensors is rebuilt: args(obj) are its constructor's arguments (text),
    build(args, device) makes it, tensors(obj) are what fit changed, fill(obj, tensors) puts
    them back."""
    args: object
    build: object
    tensors: object = lambda obj: obj.state_dict()
    fill: object = lambda obj, tensors: obj.load_state_dict(tensors, strict=True)


def _module_place(module: torch.nn.Module) -> dict:
    """Where a module's tensors live and how its convolutions lay them out (channels_last changes
    which kernels run, so the bits of a prediction)."""
    ref = next(module.parameters())
    conv = next((p for p in module.parameters() if p.ndim == 4), None)
    last = conv is not None and conv.is_contiguous(memory_format=torch.channels_last)
    return {"dtype": str(ref.dtype).removeprefix("torch."), "device": str(ref.device),
            "channels_last": last, "training": module.training}


def _placed(module: torch.nn.Module, args: dict, device: str) -> torch.nn.Module:
    """A freshly built module in the saved dtype, device, memory format and mode."""
    module = module.to(dtype=_torch_dtype(args["dtype"]), device=device)
    if args["channels_last"]:
        module = module.to(memory_format=torch.channels_last)
    return module.train(args["training"])


def _sbfn_head_args(head: SBFNClassifierHead) -> dict:
    n_units, n_classes = head.alpha.shape
    return {"n_members": head.centres.shape[1] // n_classes, "n_classes": n_classes,
            "n_units": n_units, "temperature": head.temperature, "lr": head.lr,
            "row_norm": head.row_norm, "seed": head.seed, "optimizer": head.optimizer,
            "reseed": head.reseed, "centre_init": head.centre_init, **_module_place(head)}


def _moe_head_args(head: MoEGateHead) -> dict:
    n_members = head.gate.out_features
    return {"n_members": n_members, "n_classes": head.gate.in_features // n_members,
            "temperature": head.temperature, "lr": head.lr, "optimizer": head.optimizer,
            **_module_place(head)}


def _ensemble_args(model: Ensemble) -> dict:
    return {"archs": [str(a) for a in model.archs], "in_channels": model.in_channels,
            "n_classes": model.n_classes, "seeds": list(model.seeds),
            "strategy": model.strategy, "size": model.size, **_module_place(model)}


def _mlp_args(model: VectorisedMLP) -> dict:
    return {"n_features": model.n_features, "n_members": model.m, "width": model.width,
            "n_outputs": model.n_outputs, "activation": model.activation,
            "dtype": str(model.flat.dtype).removeprefix("torch."), "device": str(model.flat.device)}


def _module_args(args: dict, *names) -> dict:
    return {n: args[n] for n in names}


RECIPES = {
    "VectorisedMLP": (VectorisedMLP, Recipe(
        _mlp_args,
        lambda a, device: VectorisedMLP.initialised(
            a["n_features"], a["n_members"], a["width"], 1.0, 0, a["activation"],
            dtype=_torch_dtype(a["dtype"]), device=device, n_outputs=a["n_outputs"]),
        lambda model: {"flat": model.flat},
        lambda model, tensors: model.flat.copy_(tensors["flat"]))),
    "Ensemble": (Ensemble, Recipe(
        _ensemble_args,
        lambda a, device: _placed(Ensemble(**_module_args(
            a, "archs", "in_channels", "n_classes", "seeds", "strategy"),
            size=a.get("size")), a, device))),     # size: lazy layers' shapes (saved since 32)
    "SBFNClassifierHead": (SBFNClassifierHead, Recipe(
        _sbfn_head_args,
        lambda a, device: _placed(SBFNClassifierHead(**_module_args(
            a, "n_members", "n_classes", "n_units", "temperature", "lr", "row_norm", "seed",
            "optimizer", "reseed", "centre_init")), a, device))),
    "MoEGateHead": (MoEGateHead, Recipe(
        _moe_head_args,
        lambda a, device: _placed(MoEGateHead(**_module_args(
            a, "n_members", "n_classes", "temperature", "lr", "optimizer")), a, device))),
}
_RECIPE_OF = {cls: name for name, (cls, _) in RECIPES.items()}


def _code_it_imports(name: str, args: dict) -> list:
    """The factory paths a recipe's constructor imports (your own member networks)."""
    if name != "Ensemble":
        return []
    return sorted({a for a in args["archs"] if a not in ARCHITECTURES})


# ------------------------------------------------------------------------- encoding
@dataclasses.dataclass
class Parts:
    """What encoding a fitted state collects beside its JSON: tensors and scikit-learn objects
    by name, and the code (factory paths) its loading would import."""
    tensors: dict = dataclasses.field(default_factory=dict)
    sklearn: dict = dataclasses.field(default_factory=dict)
    code: list = dataclasses.field(default_factory=list)


def encode(value, at: str, parts: Parts):
    """`value` (found at the attribute path `at`) as a JSON node; tensors and scikit-learn
    objects go to `parts`."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (list, tuple)):
        items = [encode(v, _at(at, i), parts) for i, v in enumerate(value)]
        return items if isinstance(value, list) else {"tuple": items}
    if isinstance(value, Bunch):      # named_estimators_: a dict read by attribute too
        return {"bunch": _encode_dict(value, at, parts)}
    if isinstance(value, dict):
        return {"dict": _encode_dict(value, at, parts)}
    if isinstance(value, np.generic):
        return {"scalar": value.item(), "dtype": value.dtype.str}
    if isinstance(value, np.ndarray):
        return {"array": _encode_array(value, at, parts)}
    if isinstance(value, torch.Tensor):
        parts.tensors[at] = value.detach().cpu()
        return {"tensor": at, "device": str(value.device)}
    if isinstance(value, torch.dtype):
        return {"torch_dtype": str(value).removeprefix("torch.")}
    return _encode_object(value, at, parts)


def _at(at: str, key) -> str:
    """The path of an attribute's part: members_.model.flat names a tensor by where it is."""
    return f"{at}.{key}" if at else str(key)


def _encode_dict(value: dict, at: str, parts: Parts) -> dict:
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise SavedModelError(f"cannot save {at}: a dict with a key {bad[0]!r} that is not text")
    return {k: encode(v, _at(at, k), parts) for k, v in value.items()}


def _encode_array(a: np.ndarray, at: str, parts: Parts) -> dict:
    """Small arrays (and every array of text) inline as their values, others by name."""
    if a.dtype.kind not in "biufcUSO":      # datetime64 labels: torch's TypeError, no path
        raise SavedModelError(f"cannot save {at}: an array of {a.dtype} values (a saved model "
                              "holds numbers, booleans and text): fit on them as text or "
                              "numbers, e.g. y.astype(str)")
    spec = {"dtype": a.dtype.str, "shape": list(a.shape)}
    if a.dtype.kind in "USO" or (a.size <= INLINE_MAX and _finite(a)):
        return {**spec, "values": [_plain(v, at) for v in a.ravel().tolist()]}
    parts.tensors[at] = torch.from_numpy(np.ascontiguousarray(a).copy())
    return {"dtype": a.dtype.str, "tensor": at}


def _finite(a: np.ndarray) -> bool:
    return a.dtype.kind in "biu" or (a.dtype.kind == "f" and bool(np.isfinite(a).all()))


def _plain(v, at: str):
    if isinstance(v, (bool, int, float, str)):
        return v
    raise SavedModelError(f"cannot save {at}: an array holding {type(v).__name__} values")


def _encode_object(value, at: str, parts: Parts):
    kind = type(value)
    if kind.__name__ in BAGS and BAGS[kind.__name__] is kind:
        return {"object": kind.__name__, "attributes": _encode_dict(vars(value), at, parts)}
    if kind in _RECIPE_OF:
        name = _RECIPE_OF[kind]
        recipe = RECIPES[name][1]
        args = recipe.args(value)
        parts.code += _code_it_imports(name, args)
        tensors = {k: encode(t, _at(at, k), parts)["tensor"]
                   for k, t in recipe.tensors(value).items()}
        return {"built": name, "args": encode(args, _at(at, "args"), parts), "tensors": tensors}
    if isinstance(value, BaseEstimator):
        parts.sklearn[at] = value
        return {"sklearn": at}
    raise SavedModelError(f"cannot save {at}: sbfn_dist.interfaces.saved has no encoding for "
                          f"{kind.__module__}.{kind.__qualname__} (add the class to BAGS or "
                          "RECIPES there)")


# ------------------------------------------------------------------------- decoding
@dataclasses.dataclass
class Loaded:
    """What decoding reads from: the tensors, the scikit-learn objects, where tensors go."""
    tensors: dict
    sklearn: dict
    trust: bool = False          # trust_plugins: your member factories may be imported
    factories: tuple = ()        # the member factories trusted by name (trust_factories)
    cuda: bool = dataclasses.field(default_factory=torch.cuda.is_available)

    def device(self, saved: str) -> str:
        """The saved device where it exists here, else the CPU."""
        return saved if not saved.startswith("cuda") or self.cuda else "cpu"

    def tensor(self, name: str) -> torch.Tensor:
        if name not in self.tensors:
            raise SavedModelError(f"the saved model names a tensor {name!r} that {TENSORS} does "
                                  "not hold: the directory is incomplete; save the model again")
        return self.tensors[name]

    def sklearn_object(self, name: str):
        if name not in self.sklearn:
            raise SavedModelError(f"the saved model names a scikit-learn object {name!r} that "
                                  f"its {MANIFEST} does not list: save the model again")
        return self.sklearn[name]


def decode(node, loaded: Loaded):
    """The value a JSON node (from encode) stands for."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [decode(v, loaded) for v in node]
    [kind] = [k for k in node if k in DECODERS] or [None]
    if kind is None:
        raise SavedModelError(f"{MANIFEST} holds a node this version cannot read: "
                              f"{json.dumps(node)[:120]}")
    return DECODERS[kind](node, loaded)


def _decode_array(node: dict, loaded: Loaded) -> np.ndarray:
    spec = node["array"]
    if "tensor" in spec:
        return loaded.tensor(spec["tensor"]).numpy()
    return np.array(spec["values"], dtype=np.dtype(spec["dtype"])).reshape(spec["shape"])


def _decode_bag(node: dict, loaded: Loaded):
    cls = _known(BAGS, node["object"])
    obj = object.__new__(cls)
    obj.__dict__.update(decode({"dict": node["attributes"]}, loaded))
    return obj


def _decode_built(node: dict, loaded: Loaded):
    cls, recipe = _known(RECIPES, node["built"])
    args = decode(node["args"], loaded)
    # From the arguments themselves, not the manifest's list of code: that could understate it.
    code = [c for c in _code_it_imports(node["built"], args) if c not in loaded.factories]
    _refuse_code(code, loaded.trust)
    obj = recipe.build(args, loaded.device(args.get("device", "cpu")))
    with torch.no_grad():
        recipe.fill(obj, {k: loaded.tensor(name) for k, name in node["tensors"].items()})
    return obj


def _known(table: dict, name: str):
    if name not in table:
        raise SavedModelError(f"{MANIFEST} names a class {name!r} that saved models may not "
                              f"hold (known: {', '.join(table)}); it was not saved by sbfn_dist")
    return table[name]


def _torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise SavedModelError(f"{MANIFEST} names a torch dtype {name!r} that torch has not")
    return dtype


DECODERS = {
    "float": lambda node, loaded: float(node["float"]),
    "tuple": lambda node, loaded: tuple(decode(v, loaded) for v in node["tuple"]),
    "dict": lambda node, loaded: {k: decode(v, loaded) for k, v in node["dict"].items()},
    "bunch": lambda node, loaded: Bunch(**decode({"dict": node["bunch"]}, loaded)),
    "scalar": lambda node, loaded: np.dtype(node["dtype"]).type(node["scalar"]),
    "array": _decode_array,
    "tensor": lambda node, loaded: loaded.tensor(node["tensor"]).to(
        loaded.device(node["device"])),
    "torch_dtype": lambda node, loaded: _torch_dtype(node["torch_dtype"]),
    "object": _decode_bag,
    "built": _decode_built,
    "sklearn": lambda node, loaded: loaded.sklearn_object(node["sklearn"]),
}


# ------------------------------------------------------------------------- save
def fitted_attributes(estimator) -> dict:
    """scikit-learn's convention: what fit sets ends with an underscore."""
    return {k: v for k, v in vars(estimator).items() if k.endswith("_") and not k.startswith("_")}


class Saveable:
    """save(DIR) and Class.load(DIR) for an estimator of ESTIMATORS (the one pair of methods)."""

    def save(self, path):
        """Write the fitted estimator to the directory `path`: settings as text, weights as
        tensors that load without running code (docs/models.md). Returns the path."""
        return save(self, path)

    @classmethod
    def load(cls, path, *, trust_plugins: bool = False):
        """The estimator of this class saved at `path`, fitted; it predicts as the saved one
        did. trust_plugins: see load below."""
        return load(path, trust_plugins=trust_plugins, expect=cls)


def save(estimator, path, source: dict | None = None) -> Path:
    """Write the fitted `estimator` to the directory `path` (made, or a saved model there
    replaced); `source`: where it came from (text), kept in the manifest. Returns the path."""
    check_is_fitted(estimator)
    path = Path(path).expanduser()      # "~/m" made a folder named "~" (no shell expands it)
    check_target(path)
    parts = Parts()
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "library_version": __version__, "estimator": _estimator_name(estimator),
                "task": getattr(estimator, "_task", ""),
                "params": encode(estimator.get_params(deep=False), "params", parts),
                "fitted": _encode_dict(fitted_attributes(estimator), "", parts),
                "source": source or {}}
    manifest.update(code=sorted(set(parts.code)), safety=SAFETY)
    with tempfile.TemporaryDirectory(dir=path.parent if path.parent.exists() else None) as tmp:
        staged = Path(tmp, "model")
        staged.mkdir()
        manifest["sklearn"] = _write_sklearn(staged, parts.sklearn)
        torch.save(parts.tensors, staged / TENSORS)
        (staged / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        _replace(staged, path)
    return path


def _estimator_name(estimator) -> str:
    name = type(estimator).__name__
    if name not in ESTIMATORS:
        raise SavedModelError(f"cannot save a {name}: saved models hold {', '.join(ESTIMATORS)}")
    return name


def check_target(path) -> None:
    """Only a new or empty directory, or a saved model, is (re)written: never a user's files;
    and only where the model can be written (its nearest existing folder takes a file)."""
    path = Path(path)
    if path.exists() and (not path.is_dir() or (any(path.iterdir())
                                                and not (path / MANIFEST).exists())):
        raise SavedModelError(f"{path} exists and holds no saved model: save to a new or empty "
                              "directory")
    above = next(p for p in path.absolute().parents if p.exists())   # save makes the rest
    if not above.is_dir():
        raise SavedModelError(f"cannot save a model to {path}: {above} is a file, not a folder; "
                              "choose another path")
    require_writable(above, f"cannot save a model to {path}")


def _replace(staged: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.rmtree(path)
    shutil.move(str(staged), str(path))


def _write_sklearn(directory: Path, objects: dict) -> dict:
    """Each scikit-learn object as sklearn/NAME.skops, listed with the types skops does not
    trust by default (what a reader is asked to trust)."""
    if not objects:
        return {}
    import skops.io as sio
    (directory / SKLEARN_DIR).mkdir()
    listed = {}
    for name, obj in objects.items():
        file = f"{SKLEARN_DIR}/{name}.skops"
        sio.dump(obj, directory / file)
        listed[name] = {"file": file, "untrusted_types": sio.get_untrusted_types(
            file=directory / file)}
        _refuse_unimportable(name, listed[name]["untrusted_types"])
    return listed


def _refuse_unimportable(name: str, types: list) -> None:
    """A type or function skops saves by its module and name that no other process can import
    (a script's own class, a lambda): saved, it never loaded again (a traceback at load)."""
    for kind in types:
        if kind.startswith("__main__.") or "<lambda>" in kind or "<locals>" in kind:
            raise SavedModelError(f"{name} holds {kind}, which no other process can import "
                                  "(defined in a script, a notebook, or as a lambda): define it "
                                  "in a module of its own (e.g. my_plugins.py) and import it "
                                  "from there, then fit and save again")


# ------------------------------------------------------------------------- load
def read_manifest(path) -> dict:
    """The manifest of the saved model at `path`, checked to be one this version reads."""
    file = Path(path) / MANIFEST
    if not file.is_file():
        raise SavedModelError(f"{path} holds no saved model (no {MANIFEST}): save one with "
                              "estimator.save(DIR) or python -m sweeps.export")
    try:
        manifest = json.loads(file.read_text())
    except ValueError as exc:      # not JSON, or not text (UnicodeDecodeError)
        raise SavedModelError(f"{file} is not readable JSON ({exc}): the saved model is "
                              "damaged; save or export it again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SavedModelError(f"{file} is not an sbfn-dist saved model")
    _refuse_another_format(path, manifest)
    return manifest


def _refuse_another_format(path, manifest: dict) -> None:
    """A format this version does not read: a newer sbfn-dist's (upgrade), else a manifest no
    version wrote so (format_version 999 beside this very version was told to upgrade to the
    version it ran, issue 48; a format_version of text raised a TypeError)."""
    version, saved_by = manifest.get("format_version", 0), manifest.get("library_version")
    if _integral(version) and version <= FORMAT_VERSION:
        return
    if _integral(version) and _release(saved_by) > _release(__version__):
        raise SavedModelError(f"{path} was saved by sbfn-dist {saved_by} in a newer format; "
                              f"upgrade sbfn-dist (this is {__version__})")
    raise SavedModelError(f"{Path(path) / MANIFEST} gives format_version {version!r}, which no "
                          f"sbfn-dist writes beside library_version {saved_by!r} (this one, "
                          f"{__version__}, writes and reads format {FORMAT_VERSION}): the "
                          "manifest was edited or damaged; save or export the model again")


def _integral(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _release(version) -> tuple:
    """A version's release numbers (0.2.0 -> (0, 2, 0)); () for none."""
    return tuple(int(n) for n in re.findall(r"\d+", version.split("+")[0])[:3]) \
        if isinstance(version, str) else ()


def load(path, *, trust_plugins: bool = False, expect: type | None = None,
         trust_factories=()):
    """The estimator saved at `path`, fitted as it was saved. trust_plugins: also load what runs
    code when loaded (scikit-learn objects of types beyond TRUSTED_TYPES, your member factories);
    only for models whose source you trust. expect: the class it must be. trust_factories: the
    member factories (package.module:build) that may be imported, by name, where trust_plugins
    is False (a sweep's export trusts those its configuration names, no others)."""
    path = Path(path).expanduser()
    manifest = read_manifest(path)
    cls = _estimator_class(manifest["estimator"], expect, path)
    loaded = Loaded(_read_tensors(path),
                    _read_sklearn(path, manifest.get("sklearn", {}), trust_plugins),
                    trust_plugins, tuple(trust_factories))
    renamed = getattr(cls, "_former_names", {})     # a parameter renamed since it was saved
    params = decode(manifest["params"], loaded)
    estimator = cls(**{renamed.get(name, name): value for name, value in params.items()})
    for name, value in decode({"dict": manifest["fitted"]}, loaded).items():
        setattr(estimator, name, value)
    return estimator


def _estimator_class(name: str, expect: type | None, path) -> type:
    if name not in ESTIMATORS:
        raise SavedModelError(f"{path} holds a {name!r}, not one of {', '.join(ESTIMATORS)}")
    cls = getattr(importlib.import_module(ESTIMATORS[name]), name)
    if expect is not None and cls is not expect:
        raise SavedModelError(f"{path} holds an {name}, not an {expect.__name__}: load it with "
                              f"{name}.load(DIR) or sbfn_dist.interfaces.saved.load(DIR)")
    return cls


def _refuse_code(code: list, trust: bool) -> None:
    if code and not trust:
        raise SavedModelError(f"the saved model's member networks come from the factories "
                              f"{', '.join(code)}, whose import runs their code; load it with "
                              "trust_plugins=True only if you trust that code")


def _read_tensors(path: Path) -> dict:
    try:
        return torch.load(path / TENSORS, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise SavedModelError(f"{path} has no {TENSORS}: the directory is incomplete; save the "
                              "model again") from None
    except Exception as exc:  # noqa: BLE001 - torch's unpickler refuses anything but tensors
        raise SavedModelError(f"{path / TENSORS} is not a file of tensors only and was not "
                              f"loaded ({type(exc).__name__}); save the model again") from None


def _read_sklearn(path: Path, listed: dict, trust: bool) -> dict:
    """The scikit-learn objects, each refused unless every type skops would not trust by
    default is in TRUSTED_TYPES (or trust). The types are read from the file itself, never
    from the manifest, which could understate them."""
    if not listed:
        return {}
    import skops.io as sio
    out = {}
    for name, entry in listed.items():
        file = path / SKLEARN_DIR / f"{name}.skops"      # where save puts it, whatever listed
        untrusted = sio.get_untrusted_types(file=file)
        beyond = [t for t in untrusted if t not in TRUSTED_TYPES]
        if beyond and not trust:
            raise SavedModelError(f"{file} holds scikit-learn objects of types no saved model "
                                  f"is trusted with ({', '.join(beyond)}); their loading may "
                                  "run code: load with trust_plugins=True only if you trust "
                                  "the model's source")
        out[name] = sio.load(file, trusted=untrusted)
    return out
