"""A YAML file a person wrote (a sweep file, a cluster YAML) that is not text the YAML reader
takes, said in one line with its fix.

The files are read as bytes and handed to PyYAML, which decodes them as YAML allows: UTF-8,
or UTF-16 with its byte-order mark (what a Windows editor's "Unicode" writes). What it cannot
decode raises yaml.reader.ReaderError: a byte that is not UTF-8 (a latin-1 file's 0xe9), or
a character YAML forbids (the NULs of UTF-16 written without its mark)."""

import yaml


def not_text(exc: yaml.reader.ReaderError) -> str:
    """The reader's error in words, with the fix."""
    if exc.encoding != "unicode":              # a byte it could not decode (PyYAML's reader)
        return (f"not UTF-8 text (byte 0x{exc.character:02x} at offset {exc.position}: "
                f"{exc.reason}; latin-1 or another 8-bit encoding?): save it as UTF-8")
    return (f"holds the character U+{exc.character:04X} at offset {exc.position}, which YAML "
            "does not allow (UTF-16 without its byte-order mark?): save it as UTF-8")


# ------------------------------------------------------------------ YAML that does not parse
# PyYAML's own message is 5-7 lines of parser states ("expected <block end>, but found
# '<block mapping start>'", `in "<byte string>"`) that name no fix. A person's mistakes are a
# few: each is matched on YAML's problem and said in plain words, at the place to fix.

def load_error(exc: yaml.YAMLError) -> str:
    """Why YAML refused the file, in one line: where, what, and the fix."""
    if isinstance(exc, yaml.reader.ReaderError):
        return not_text(exc)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None) or ""
    for in_problem, in_context, explain in _EXPLAINED:
        if in_problem in problem and in_context in context:
            # a text is said where YAML found the problem; a function places its own words
            mark, text = (exc.problem_mark, explain) if isinstance(explain, str) else explain(exc)
            return f"{_place(mark)}not valid YAML: {text}"
    return (f"{_place(getattr(exc, 'problem_mark', None))}not valid YAML: {problem}: "
            "check that line's indentation (spaces, as far as the keys beside it) and quote "
            "a value that holds ': ', '#', [ ] { } or starts with a quote")


def _place(mark) -> str:
    # PyYAML counts lines and columns from 0; an editor counts them from 1
    return "" if mark is None else f"line {mark.line + 1}, column {mark.column + 1}: "


def _lines(mark) -> list[str]:
    """The file's lines up to the mark's (PyYAML keeps the decoded text when read from bytes)."""
    return (mark.buffer or "").split("\n")[:mark.line + 1]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _spaces(n: int) -> str:
    return f"{n} space{'' if n == 1 else 's'}"


def _tab(exc):
    mark = exc.problem_mark
    if _lines(mark)[-1][:mark.column].strip(" ") == "":
        return mark, "a tab in the indentation: indent with spaces only (YAML does not allow tabs)"
    return mark, "a tab where YAML takes only spaces: replace it with a space"


def _key_out_of_line(exc):
    mark, block = exc.problem_mark, exc.context_mark or _first_key(exc.problem_mark)
    return mark, (f"a key indented differently from the keys beside it ({_spaces(mark.column)}; "
                  f"the mapping it falls in, from line {block.line + 1}, has "
                  f"{_spaces(block.column)}): line it up with the keys it belongs with, "
                  "in spaces")


class _Start:
    """A place YAML did not name: the start of a key."""

    def __init__(self, line, column):
        self.line, self.column = line, column


def _first_key(mark) -> _Start:
    """Where the file's top-level mapping began: YAML names no mapping when the first key is
    indented and a later one is not (`expected '<document start>'`)."""
    lines = _lines(mark)
    first = next((i for i, line in enumerate(lines)
                  if line.strip() and not line.lstrip().startswith("#")), 0)
    return _Start(first, _indent(lines[first]))


def _colon_in_value(exc):
    mark = exc.problem_mark
    lines = _lines(mark)
    above = [line for line in lines[:-1] if line.strip() and not line.lstrip().startswith("#")]
    if above and _indent(lines[-1]) > _indent(above[-1]):
        return _Start(mark.line, _indent(lines[-1])), (
            f"a key indented further than the line above it ({_spaces(_indent(lines[-1]))}; "
            f"that line has {_spaces(_indent(above[-1]))}), so YAML reads it as part of that "
            "line's value: line it up with the keys beside it")
    return mark, "a ': ' inside a value: quote the value ('...')"


def _no_colon(exc):
    return exc.context_mark, ("a line that is neither `key: value` nor a list item ('- ...'): "
                              "add the ':' (and a space) after its key, or indent it under "
                              "the key it continues")


def _unclosed(exc):
    bracket = "[" if "sequence" in exc.context else "{"
    close = {"[": "]", "{": "}"}[bracket]
    return exc.context_mark, (f"a '{bracket}' not closed (YAML expected ',' or '{close}' at "
                              f"line {exc.problem_mark.line + 1}, column "
                              f"{exc.problem_mark.column + 1}): close it with '{close}', or "
                              "quote an item that holds ', ', ': ' or a bracket")


def _open_quote(exc):
    return exc.context_mark, "a quote not closed: end the text with the same quote it opens with"


# YAML's words for each mistake: (in its problem, in its context, explained: a text said where
# YAML found the problem, or a function that places its words); first match wins
_EXPLAINED = [
    ("found character '\\t'", "", _tab),
    ("but found '<block mapping start>'", "", _key_out_of_line),
    ("but found '-'", "while parsing a block mapping",
     "a list item ('- ...') among the keys of a mapping: put the list under its "
     "key (`key:` then `  - item` lines), or write the item as `key: value`"),
    ("mapping values are not allowed here", "", _colon_in_value),
    ("could not find expected ':'", "", _no_colon),
    ("expected ','", "while parsing a flow", _unclosed),
    ("escape", "double-quoted",
     "a backslash inside \"...\" starts an escape (as in a Windows path): write the text "
     "in single quotes ('C:\\data'), or each backslash twice"),
    ("", "quoted scalar", _open_quote),
    ("found undefined alias", "",
     "a value starting with '*' names an anchor (&name) that is not defined above it: "
     "quote the value ('*...'), or define the anchor"),
    ("but found another document", "",
     "a second document (a '---' line): the file holds one; remove the '---' "
     "and what follows, or move it to a file of its own"),
    ("could not determine a constructor for the tag", "",
     "a value starting with '!' is a YAML tag, which the file may not use: quote the value "
     "('!...'), or remove the tag"),
    ("that cannot start any token", "",
     "a value starting with '@' or '`' (YAML reserves both): quote the value ('...')"),
]
