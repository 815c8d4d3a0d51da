"""A sweep's Optuna study, kept in a sqlite file so it outlives the driver (`--search optuna`).

    <storage>/<name>/optuna.db    local storage (a path or file://): beside the results
    <cache>/sweeps/<scheme>/<bucket/prefix>/<name>/optuna.db    remote storage (s3://, gs://, ...)

sqlite needs a local file with working locks, so with remote storage the study stays on the
driver's machine ($SBFN_CACHE_DIR or ~/.cache/sbfn_dist) and a copy goes to
<storage>/<name>/optuna.db when the sweep ends. The study is named after the sweep; open it with
`optuna.load_study(study_name=NAME, storage=URL)` or `optuna-dashboard URL` (docs/sweeps.md).
It imports Ray and Optuna: the runner imports it only for `--search optuna`.
"""

import re
from pathlib import Path

import optuna
import pyarrow.fs as pafs
from optuna.trial import TrialState
from ray.tune.search.optuna import OptunaSearch

from sbfn_dist.data.sources import cache_dir
from sbfn_dist.errors import SbfnError
from sweeps.engine.common.environment import quiet_libraries
from sweeps.engine.common.store import ResultStore
from sweeps.engine.run.search import sampled_space


STUDY_FILE = "optuna.db"


def is_local(store: ResultStore) -> bool:
    return isinstance(store.fs, pafs.LocalFileSystem)


def study_file(store: ResultStore) -> Path:
    """Beside the results when they are local files, else under the local cache (above)."""
    if is_local(store):
        return Path(store.root, STUDY_FILE)
    scheme = store.uri.split("://", 1)[0]
    return cache_dir() / "sweeps" / scheme / store.root.strip("/") / STUDY_FILE


def study_url(store: ResultStore) -> str:
    return f"sqlite:///{study_file(store)}"


def check_study(store: ResultStore, name: str, resume: bool, axes: dict | None = None) -> str:
    """Before Ray starts: a new sweep must not inherit an old study, a resumed one needs its own
    (drawn over the sweep's `axes`, where given). Returns where the study is, for sweep.json
    (whose "study" also tells a sweep that kept its study in a file from an older one, whose
    searcher Tune restores in memory)."""
    path, old = study_file(store), store.read_spec() or {}
    if path.exists() and not resume:
        raise SbfnError(f"an Optuna study of an earlier sweep '{name}' is in {path}; delete that "
                        "file, or pass --name for a new sweep")
    if resume and not path.exists() and "study" in old and store.has("tune"):
        where = "" if is_local(store) else (
            f" (kept on the machine that ran the sweep; a finished sweep left a copy at "
            f"{store.uri}/{STUDY_FILE})")
        raise SbfnError(f"--resume: the sweep's Optuna study {path} is missing{where}. Put it "
                        "back there, or pass --name for a new sweep")
    if resume and path.exists():
        check_readable(path, name)
        if axes is not None:
            check_same_space(path, name, axes)
    return str(path)


def check_same_space(path: Path, name: str, axes: dict) -> None:
    """A resumed study drawn over the sweep's own axes, as Tune's searcher draws them: another
    sweep's study of the same name (copied in, or the name's sweep on other storage) was
    accepted and its draws mixed into this one's TPE and its study (issue 48)."""
    space = OptunaSearch.convert_search_space(sampled_space(axes, {}))
    study = optuna.load_study(study_name=name, storage=f"sqlite:///{path}")
    for trial in study.get_trials(deepcopy=False):
        drawn = trial.distributions
        other = next((k for k in {*drawn, *space} if drawn.get(k) != space.get(k)), None)
        if drawn and other is not None:
            raise SbfnError(f"--resume: the Optuna study in {path} was drawn over another space "
                            f"than this sweep's axes ({other}: {_drawn(drawn.get(other))}, not "
                            f"{_drawn(space.get(other))}): it is another sweep's study of the "
                            f"name '{name}'. Put back this sweep's own, or pass --name for a new "
                            "sweep")


def _drawn(distribution) -> str:
    """An Optuna distribution as an axis is written: [0.0, 0.35], loguniform(0.001, 0.1)."""
    if distribution is None:
        return "not drawn"
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        return str(list(distribution.choices))
    kind = "randint" if isinstance(distribution, optuna.distributions.IntDistribution) \
        else "uniform"
    return f"{'log' if distribution.log else ''}{kind}({distribution.low}, {distribution.high})"


def check_readable(path: Path, name: str) -> None:
    """A resumed sweep's study file must hold its study, readable to the last trial: a damaged
    file (a disk that filled up, a copy cut short) is refused here, in one line, not with a
    traceback from the searcher once Ray has started."""
    quiet_libraries()
    try:
        optuna.load_study(study_name=name, storage=f"sqlite:///{path}").get_trials(deepcopy=False)
    except KeyError:
        reason = f"it holds no study named '{name}'"
    except Exception as exc:  # noqa: BLE001 - sqlite, SQLAlchemy and Optuna's schema checks
        text = str(exc).strip()     # SQLAlchemy's first line: "(sqlite3.DatabaseError) why"
        reason = re.sub(r"^\([\w.]+\) ", "", text.splitlines()[0]) if text else type(exc).__name__
    else:
        return
    raise SbfnError(f"--resume: cannot read the Optuna study file {path} ({reason}). Put back a "
                    "good copy of it (a finished sweep on remote storage left one beside its "
                    "results), or pass --name for a new sweep")


def where_note(store: ResultStore) -> str:
    """What the sweep says at its start when the study cannot live beside remote results."""
    if is_local(store):
        return ""
    return (f"\n  note: the Optuna study stays on this machine in {study_file(store)} (sqlite "
            f"cannot live on {store.uri.split('://', 1)[0]}://); a copy goes to "
            f"{store.uri}/{STUDY_FILE} when the sweep ends")


def open_study(store: ResultStore, name: str, mode: str, resume: bool, labels: dict):
    """The sweep's study, created (or loaded on --resume) before Tune's searcher loads it."""
    quiet_libraries()       # no "A new study created" line unless --verbose
    path = study_file(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    storage = optuna.storages.RDBStorage(study_url(store))
    study = optuna.create_study(storage=storage, study_name=name, load_if_exists=resume,
                                direction="minimize" if mode == "min" else "maximize")
    for key, value in labels.items():      # shown by optuna-dashboard beside the trials
        study.set_user_attr(key, value)
    if resume:
        # No Tune state to restore (the driver died before Tune first saved it): no Tune trial
        # owns the trials the study still marks running, and none will ever tell them.
        settle(study, asked={}, completed=set())
    return storage


def settle(study, asked: dict, completed: set) -> None:
    """Make a restored searcher agree with its study file.

    Tune pickles the searcher with its experiment state (at most every ~10 s) while the study
    file changes at every ask and tell, so after a killed driver the file can be ahead: a trial
    already told there is marked completed in the searcher (Tune reruns it, reading its folds
    back, and it must not be told twice), and a trial asked after the last pickle, which no Tune
    trial owns, is told FAIL (it will never report). One told after the last pickle is taken over
    by a new Tune trial (SweepOptunaSearch.suggest)."""
    owner = {trial.number: tune_id for tune_id, trial in asked.items()}
    for trial in study.get_trials(deepcopy=False):
        if trial.number in owner and trial.state.is_finished():
            completed.add(owner[trial.number])
        elif trial.number not in owner and trial.state == TrialState.RUNNING:
            study.tell(trial.number, state=TrialState.FAIL)


class SweepOptunaSearch(OptunaSearch):
    """Ray's OptunaSearch on the sweep's study, settled with the study file on Tune's restore,
    and honest about ASHA: a configuration stopped before its last fold is told PRUNED (its
    running CV mean after each fold kept as intermediate values), never COMPLETE with a mean
    over fewer folds, so the study's best_trial (and optuna-dashboard) ranks only full CVs."""

    def __init__(self, *args, folds: int, **kwargs):
        super().__init__(*args, **kwargs)
        self._folds = folds          # the folds of a full CV: fewer means stopped early

    def restore(self, checkpoint_path: str):
        super().restore(checkpoint_path)
        settle(self._ot_study, self._ot_trials, self._completed_trials)

    def suggest(self, trial_id: str):
        if trial_id not in self._ot_trials:
            self._take_over_an_unowned_sample(trial_id)
        return super().suggest(trial_id)

    def _take_over_an_unowned_sample(self, trial_id: str) -> None:
        """A sample asked and told after Tune's last save of the searcher has no Tune trial, so
        the resumed Tune samples anew to reach --num-samples. The next new Tune trial takes that
        sample over instead (its parameters, its value already told), so the study holds each of
        the sweep's samples once rather than --num-samples plus the ones the kill orphaned."""
        owned = {trial.number for trial in self._ot_trials.values()}
        told = (TrialState.COMPLETE, TrialState.PRUNED)
        for trial in self._ot_study.get_trials(deepcopy=False, states=told):
            if trial.number not in owned:
                self._ot_trials[trial_id] = optuna.trial.Trial(self._ot_study, trial._trial_id)
                self._completed_trials.add(trial_id)
                return

    # A completed trial (rerun after a restore, or a sample taken over) is told once: its reports
    # are dropped quietly (OptunaSearch would log a warning for each).
    def on_trial_result(self, trial_id: str, result: dict):
        if trial_id not in self._completed_trials:
            self._report(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False):
        if trial_id in self._completed_trials:
            return
        if result and not error:
            # Tune hands the last result (the one ASHA stopped at, or at max_t) only here.
            self._report(trial_id, result)
            if folds_done(result) < self._folds:
                self._ot_study.tell(self._ot_trials[trial_id], state=TrialState.PRUNED)
                self._completed_trials.add(trial_id)
                return
        super().on_trial_complete(trial_id, result, error)

    def _report(self, trial_id: str, result: dict) -> None:
        """The running CV mean after k folds as the intermediate value at step k: what ASHA
        compared, and what optuna-dashboard plots. A step already in the study (a trial rerun
        after a restore reads its folds back) is left as it is."""
        trial, step = self._ot_trials[trial_id], folds_done(result)
        if step not in trial.storage.get_trial(trial._trial_id).intermediate_values:
            trial.report(result[self.metric], step)


def folds_done(result: dict) -> int:
    """The folds a configuration's result covers (a result without the count: its iteration)."""
    return int(result.get("folds_done", result.get("training_iteration", 0)))


def searcher(storage, name: str, seed: int, folds: int) -> SweepOptunaSearch:
    return SweepOptunaSearch(sampler=optuna.samplers.TPESampler(seed=seed), storage=storage,
                             study_name=name, folds=folds)


def publish_copy(store: ResultStore) -> str | None:
    """Copy the study beside remote results when the sweep ends; its location, or None."""
    if is_local(store):
        return None
    pafs.copy_files(str(study_file(store)), f"{store.root}/{STUDY_FILE}",
                    source_filesystem=pafs.LocalFileSystem(), destination_filesystem=store.fs)
    return f"{store.uri}/{STUDY_FILE}"
