"""Finished folds of a resumed sweep that an earlier version computed without models this one
fits.

A configuration's trial id keys only what differs from the defaults (plan/planning.py,
trial_key), so a default that grew -- the practitioners' combiners joined every trial's in issue
46 -- leaves the ids as they were, and --resume read the earlier folds back as done: the end
table and the report then set configurations with the new models beside configurations without
them (the GPU kit's Fashion-MNIST sweep: 36 of its 90 configurations, computed before issue 46).
A stored fold is current when it holds the records of every model its configuration now writes
(records.model_names); a resumed grid moves the others into superseded/parts/ (kept, out of the
sweep's table) and computes them again; a sampled search cannot run a finished draw again, and
is refused in one line.
"""

from sbfn_dist import records
from sbfn_dist.errors import SbfnError
from sweeps.engine.common.store import SUPERSEDED, ResultStore


def outdated_folds(store: ResultStore, configs: list) -> dict[str, tuple[list[int], set]]:
    """trial key -> (its stored folds that lack a model it writes now, the models they lack).
    A sampled search's draws are not planned configurations: each is held to the models every
    planned configuration with members writes (the draws vary the axes, not the combiners)."""
    fits = {c.trial_id: records.model_names(c) for c in configs}
    with_members = [fits[c.trial_id] for c in configs if c.get("combiners")]
    any_draw = set.intersection(*with_members) if with_members else set()
    outdated = {}
    for key, folds in store.part_models().items():
        wanted = fits.get(key, any_draw)
        lacking = {fold: wanted - models for fold, models in folds.items() if wanted - models}
        if lacking:
            outdated[key] = (sorted(lacking), set().union(*lacking.values()))
    return outdated


def outdated_text(outdated: dict) -> str:
    """'2 finished folds of 1 configuration lack ensemble_selection, ...'."""
    folds, n = sum(len(f) for f, _ in outdated.values()), len(outdated)
    lacking = sorted(set().union(*(models for _, models in outdated.values())))
    return (f"{folds} finished fold{'s' * (folds > 1)} of {n} configuration{'s' * (n > 1)} "
            f"lack{'s' * (folds == 1)} {', '.join(lacking)}, which this version writes (an "
            "earlier version computed them)")


def outdated_on_resume(store: ResultStore, opts, configs: list) -> dict:
    """The outdated folds a --resume finds ({} without --resume or a sweep in the store); a
    sampled search with any is refused in one line."""
    if not opts.resume or store.read_spec() is None:
        return {}
    outdated = outdated_folds(store, configs)
    if outdated and opts.search != "grid":
        raise SbfnError(f"--resume: {outdated_text(outdated)}; a sampled search cannot run a "
                        "finished draw again: pass --name for a new sweep")
    return outdated


def set_aside_outdated(store: ResultStore, opts, configs: list, out) -> None:
    """--resume of a grid: its outdated folds moved into superseded/ and said in one line, so
    that their trials compute them again (Tune's finished ones too: tune.py, _lost_folds)."""
    outdated = outdated_on_resume(store, opts, configs)
    if outdated:
        store.set_aside([(key, fold) for key, (folds, _) in outdated.items() for fold in folds])
        print(f"[{opts.name}] {outdated_text(outdated)}: they are computed again; their "
              f"earlier records are in {store.root}/{SUPERSEDED}/", file=out, flush=True)
