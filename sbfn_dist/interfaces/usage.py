"""What the command lines share with their users, for every sbfn-dist command: the help layout
(defaults shown), the one spelling of list flags, the settings that KEY=VALUE and `--set`
accept (`--list-fields`), and "did you mean" for a misspelt one.

Torch-free: it reads only the settings table (`sbfn_dist.settings.fields`).
"""

import argparse

from sbfn_dist.errors import DataError, did_you_mean  # noqa: F401 - commands import it here too
from sbfn_dist.settings.fields import BY_NAME, FIELDS, LIST_FIELDS_COMMAND, Ctx, Maybe

# The three kinds of trial a default or an allowed value can differ by (fields.py's scopes).
SCOPES = (("tabular", "regression"), ("tabular", "classification"), ("image", "classification"))


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps a description's own line breaks (they hold usage examples) and ends each option's
    help with its default, unless the help already says it or there is none to say."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.default is None
                or action.default is False or action.default == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)".lstrip()


def scope_ctx(modality: str, task: str) -> Ctx:
    """A default trial of one kind, as far as it is known without a data set: its task's
    combiners all run (so a combiner's settings apply), SGD is the image optimizer."""
    ctx = Ctx({"task": task, "modality": modality, "optimizer": "sgd"})
    ctx.values["combiners"] = BY_NAME["combiners"].default_for(ctx)
    return ctx


def applies(f, ctx: Ctx) -> bool:
    """Whether `f` applies to this kind of trial; True where that needs the data set."""
    try:
        return bool(f.when(ctx))
    except (KeyError, DataError):
        return True


def per_scope(f, describe) -> str | None:
    """describe(ctx) in each kind of trial the field applies to (every kind, if none is known),
    labelled by kind where the answers differ; None where every answer needs the data set
    itself (the task of a csv:PATH, its augmentation)."""
    contexts = {f"{m} {t}": scope_ctx(m, t) for m, t in SCOPES}
    contexts = {k: c for k, c in contexts.items() if applies(f, c)} or contexts
    answers: dict[str, list[str]] = {}
    for scope, ctx in contexts.items():
        try:
            answers.setdefault(describe(ctx), []).append(scope)
        except (KeyError, DataError):
            continue
    if len(answers) <= 1:          # the same wherever it applies ("applies to" says where)
        return next(iter(answers), None)
    return "; ".join(f"{' and '.join(scopes)}: {answer}" for answer, scopes in answers.items())


def default_text(f) -> str:
    """A field's default in words: a value, one per kind of trial, or what None stands for."""
    def describe(ctx):
        value = f.default_for(ctx)
        if value is None and isinstance(f.check, Maybe):
            return f"None ({f.check.none})"
        if isinstance(value, tuple):
            return ",".join(map(str, value)) or "none"
        return str(value) if value != "" else '""'
    text = per_scope(f, describe)
    return "set by the data set" if text is None else text


def allowed_text(f) -> str:
    text = per_scope(f, f.check.text)
    return "depends on the data set" if text is None else text


def field_listing() -> str:
    """Every trial field: name = default, where it applies, what it allows, what it is."""
    blocks = []
    for f in (f for f in FIELDS if f.trial):
        lines = [f"{f.name} = {default_text(f)}",
                 f"    applies to: {f.where or 'every trial'}",
                 f"    allowed: {allowed_text(f)}"]
        blocks.append("\n".join(lines + ([f"    {f.doc}"] if f.doc else [])))
    head = ("Trial settings, as KEY=VALUE (python -m sbfn_dist) or --set KEY=VALUE (sweeps); "
            "lists as a,b,c. A setting is refused where it does not apply.")
    return "\n\n".join([head, *blocks])


class ListOf(argparse.Action):
    """Every list flag's one spelling: the values after the flag, space-separated (`--epsilons
    0 0.5`); a repeated flag adds to the list. A comma inside a value separates too (`--epsilons
    0,0.5`), as earlier commands took it. `item` parses one value, `whole` checks each value as
    given, before the commas split it (ValueError: not allowed)."""

    def __init__(self, option_strings, dest, item=str, whole=None, **kwargs):
        super().__init__(option_strings, dest, nargs="+", **kwargs)
        self.item, self.whole = item, whole

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            for text in values if self.whole else ():
                self.whole(text)
            parsed = [self.item(v) for text in values for v in text.split(",") if v]
        except ValueError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        setattr(namespace, self.dest, (getattr(namespace, self.dest) or []) + parsed)


def number_of(kind, what: str):
    """A list item: one `kind` number; `what` names the values in errors. Its range is the
    setting's, checked where the plan is made with every other value (one check, one text)."""
    def parse(text: str):
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"'{text}' is not one of the {what} (numbers, space-separated)"
                             ) from None
    return parse


def bounded(kind, lo, hi, what: str):
    """A list item: one `kind` number within [lo, hi]; `what` names the values in errors."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"'{text}' is not one of the {what} (numbers in [{lo}, {hi}], "
                             "space-separated)") from None
        if not lo <= value <= hi:
            raise ValueError(f"{what} must lie in [{lo}, {hi}]; got {text}")
        return value
    return parse


class ListFields(argparse.Action):
    """`--list-fields`: print the listing and exit 0, like argparse's --version."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print every setting KEY=VALUE / --set accepts, with its default, "
                         "where it applies and what it allows, and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(field_listing())
        parser.exit()


def add_list_fields(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--list-fields", action=ListFields)
