"""A sweep's axis given as a range instead of a list (docs/sweeps.md, "Continuous search spaces"):

    axes:
      epsilon: uniform(0, 1)            # any value in [0, 1]
      lr: loguniform(1e-4, 1e-1)        # uniform in log(lr)
      n_members: randint(2, 11)         # an integer in 2..10 (b excluded, as Tune's)
      width: quniform(20, 200, 20)      # a multiple of 20 in [20, 200]

The four are Ray Tune's functions of the same name and meaning (tune.uniform, ...): a random
search draws from them as Tune does, and OptunaSearch turns them into Optuna's Float and Int
distributions (sweeps/engine/run/search.py). A range is parsed once, where a sweep file or dict is
checked (sweeps/engine/plan/sweepfile.py), and checked against what its setting allows
(sbfn_dist/settings/fields.py: ε in [0, 1], a positive learning rate, an integer M >= 1), so a
bound outside it is refused in one line naming the axis, the bound and the fix, before Ray
starts. A grid has no points to list in a range: planning.py refuses `--search grid` over one.

Ray-free: the plan, the dry run and the checks import it before any Ray is wanted.
"""

import math
import re
from dataclasses import dataclass

from sbfn_dist.errors import SbfnError
from sbfn_dist.settings.fields import BY_NAME, Int, Maybe, Real


# Each kind's arguments and an example of it (shown where one is refused).
KINDS = {"uniform": ("a, b", "uniform(0, 1)"),
         "loguniform": ("a, b", "loguniform(0.0001, 0.1)"),
         "randint": ("a, b", "randint(2, 11)"),
         "quniform": ("a, b, q", "quniform(0, 1, 0.25)")}
RANGES = ("uniform(a, b), loguniform(a, b), randint(a, b) (integers, b excluded) or "
          "quniform(a, b, q) (multiples of q)")
_CALL = re.compile(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", re.DOTALL)
# The start of a range's text, whole or cut at its comma (YAML's [..] and a list on the command
# line split there): how a range is told where it cannot stand.
_OPENING = re.compile(rf"\s*({'|'.join(KINDS)})\s*\(")
# Where a range stands, for the refusal of one anywhere else (a list's item, a shared setting, a
# flag): every configuration draws its own value, so a range is a whole axis.
RANGES_GO = ("a range is drawn anew for each configuration, so it is a whole axis: give it "
             "under `axes:` of a sweep file (python -m sweeps run FILE) or of the dict given "
             "to Sweep.from_dict, with search: optuna or random")


@dataclass(frozen=True)
class Range:
    """One axis' range: `kind` is the name of Tune's function that samples it, `args` its
    arguments ((a, b), or (a, b, q) for quniform)."""
    kind: str
    args: tuple

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(f'{a:g}' for a in self.args)})"

    @property
    def low(self):
        return self.args[0]

    @property
    def high(self):
        """The largest value a draw can take: randint's b is excluded, the others' included."""
        return self.args[1] - 1 if self.kind == "randint" else self.args[1]

    def bounds(self) -> tuple:
        """The lowest and the highest value a draw can take (one value if they are the same):
        the configurations a sampled sweep plans ahead of its draws (planning.py)."""
        return (self.low,) if self.low == self.high else (self.low, self.high)

    def size(self) -> float:
        """How many distinct values a draw can take (math.inf for uniform and loguniform)."""
        if self.kind == "randint":
            return self.args[1] - self.args[0]
        if self.kind == "quniform":
            a, b, q = self.args
            return round((b - a) / q) + 1
        return math.inf


def is_range(axis) -> bool:
    """An axis given as a range (a Range), not as a list of values."""
    return isinstance(axis, Range)


def has_ranges(axes: dict) -> bool:
    """Some axis of `axes` (name -> values) is a range: the sweep draws its configurations."""
    return any(map(is_range, axes.values()))


def looks_like_range(value) -> bool:
    """`value` is a range's text (uniform(0, 1), ...), whole or cut at its comma ('uniform(0')."""
    return isinstance(value, str) and _OPENING.match(value) is not None


def refuse_range_in_settings(where: str, settings: dict) -> None:
    """A shared setting (`where`: settings, preset, --set) holds one value for every trial, so a
    range there (or in its list) is refused, naming where ranges go."""
    for key, value in settings.items():
        if any(map(looks_like_range, value if isinstance(value, list) else [value])):
            raise SbfnError(f"{where.format(key=key)} = {value!r} is a range, but a shared "
                            f"setting is one value for every trial; {RANGES_GO}, e.g. "
                            f"axes: {{{key}: {_example(key, value)}}}")


def refuse_range_in_list(axis: str, values: list) -> None:
    """A range is a whole axis, never an item of an axis' list."""
    given = next((v for v in values if looks_like_range(v)), None)
    if given is not None:
        raise SbfnError(f"axes.{axis} = {values!r} holds a range as an item of a list (YAML's "
                        f"[..] also cuts one at its comma); {RANGES_GO}: `{axis}: "
                        f"{_example(axis, given)}` alone, or a list of values only")


def refuse_range_flag(text: str) -> None:
    """A list flag's (--epsilons ...) value as given (usage.ListOf's `whole`): a range is
    refused, naming where ranges go, not cut at its comma (argparse names the flag)."""
    if looks_like_range(text):
        raise ValueError(f"'{text}' is a range, but the flag lists values (space-separated); "
                         f"{RANGES_GO}")


def _example(axis: str, given) -> str:
    """The range as given where it is whole, else one in the form `axis` takes (randint for an
    integer setting)."""
    if isinstance(given, str) and _CALL.fullmatch(given):
        return given.strip()
    return KINDS["randint" if isinstance(_constraint(axis), Int) else "uniform"][1]


def _constraint(axis: str):
    """The constraint of the setting `axis` (its inner one where None is allowed too), or None
    for an unknown setting."""
    declared = BY_NAME.get(axis)
    if declared is None:
        return None
    return declared.check.inner if isinstance(declared.check, Maybe) else declared.check


def axis_size(axis) -> float:
    """How many distinct values an axis holds: a list's length, a range's size."""
    return axis.size() if is_range(axis) else len(axis)


def space_size(axes: dict) -> float:
    """How many distinct points the axes hold together (inf with a continuous range)."""
    return math.prod(axis_size(values) for values in axes.values())


def parse_range(axis: str, text: str) -> Range:
    """`text` (a sweep file's `axes.AXIS` value) as a Range checked against what the setting
    `axis` allows; else SbfnError naming the axis, what is wrong and how to write it."""
    call = _CALL.fullmatch(text)
    if not call or call[1] not in KINDS:
        raise SbfnError(f"axes.{axis} = {text!r} is neither a list of values nor a range; write "
                        f"a list ([0.1, 0.35]) or a range: {RANGES}")
    kind = call[1]
    found = _numbers(call[2], integers=kind == "randint")
    arity, example = KINDS[kind]
    if found is None or len(found) != arity.count(",") + 1:
        whole = " integers" if kind == "randint" else " finite numbers"
        raise SbfnError(f"axes.{axis} = {text!r}: {kind} takes the{whole} {arity}, e.g. "
                        f"{example}")
    given = Range(kind, tuple(found))
    _check_shape(axis, given)
    _check_setting(axis, given)
    return given


def _numbers(text: str, integers: bool) -> list | None:
    """The comma-separated numbers of `text` (integers only where asked), None if any is not."""
    out = []
    for word in text.split(","):
        try:
            value = int(word) if integers else float(word)
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
        out.append(value)
    return out


def _check_shape(axis: str, given: Range) -> None:
    """What the kind itself needs: a < b, a > 0 for a log scale, bounds on the grid of q (Tune
    refuses a quniform whose bounds are not multiples of q)."""
    a, b = given.args[:2]
    example = KINDS[given.kind][1]
    if given.kind == "loguniform" and a <= 0:
        raise SbfnError(f"axes.{axis} = {given}: a log-uniform range needs 0 < a < b, e.g. "
                        f"{example}; a range that starts at 0 is uniform(0, b)")
    if not a < b:
        raise SbfnError(f"axes.{axis} = {given}: a range needs a < b, e.g. {example}")
    if given.kind == "quniform":
        q = given.args[2]
        if q <= 0 or not all(math.isclose(v / q, round(v / q)) for v in (a, b)):
            raise SbfnError(f"axes.{axis} = {given}: quniform needs q > 0 and a and b "
                            f"multiples of q (draws are rounded to them), e.g. {example}")


def _check_setting(axis: str, given: Range) -> None:
    """A range's every value must be one the setting allows (its constraint in
    sbfn_dist/settings/fields.py): integers for an integer setting, both bounds inside the
    setting's interval. An unknown setting is left to the plan, which names it with a
    did-you-mean as it does for a list's."""
    check = _constraint(axis)
    if check is None:
        return
    if not isinstance(check, (Int, Real)):
        raise SbfnError(f"axes.{axis} = {given}: {axis} is not a number, so it has no range; "
                        "give its values as a list")
    # Int's and Real's text and check read nothing of the trial (ctx): an interval is fixed.
    allowed = check.text(None)
    if isinstance(check, Int) and given.kind != "randint":
        raise SbfnError(f"axes.{axis} = {given}: {axis} is {allowed}; draw it with "
                        f"randint(a, b) (b excluded), or give its values as a list")
    for bound in given.bounds():
        if not check.ok(bound, None):
            raise SbfnError(f"axes.{axis} = {given}: {axis} allows {allowed}, and the bound "
                            f"{bound:g} is not; give a range inside it")
