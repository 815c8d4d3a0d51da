"""A report as a list of blocks, rendered to Markdown (PNG links) and to one self-contained HTML
file (PNG embedded as base64). Tables are also written as CSV with their full precision.

A `Contents` block lists the headings at levels 2 and 3, linked by the anchors GitHub gives
them in Markdown (`anchors`), which the HTML headings carry as ids. A table marked `detail`
belongs to the report's closing "Detailed tables" section (report.py puts it there); in the
HTML every table longer than LONG_ROWS folds into a <details> element, its title still shown.
"""

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Text:
    text: str


@dataclass
class Table:
    name: str                  # file stem of the CSV
    title: str
    data: pd.DataFrame         # written to CSV as is
    view: pd.DataFrame | None = None   # what the report shows (formatted); data when None
    notes: list = field(default_factory=list)
    detail: bool = False       # shown in the closing "Detailed tables" section


@dataclass
class Contents:
    """The linked list of the headings (levels 2 and 3), rendered under its own heading."""
    title: str = "Contents"


CONTENTS_LEVELS = (2, 3)
LONG_ROWS = 25                 # an HTML table with more rows is folded (<details>)


@dataclass
class Figure:
    name: str
    title: str
    path: Path | None          # None: skipped, `caption` says why
    caption: str


# A cell whose number is missing: no test (one split), no spread, a column an older sweep lacks.
MISSING = "–"


def fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return MISSING if np.isnan(v) else f"{v:.4g}"
    return MISSING if v is None else str(v)


def fixed(values: pd.Series, spec: str) -> pd.Series:
    """Numbers in the format `spec`, MISSING where there is none (a view's own precision; fmt
    gives a table without a view its)."""
    return values.map(lambda v: MISSING if pd.isna(v) else format(v, spec))


def _cells(table: Table) -> pd.DataFrame:
    """The formatted cells; a wide table's name for its columns (pandas' `columns.name`, e.g.
    "status" after an unstack) is dropped: HTML would show it as an extra, empty column."""
    view = table.view if table.view is not None else table.data
    view = view.rename_axis(columns=None)
    return view.map(fmt) if not view.empty else view


def slug(text: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped (letters of any
    script, digits, '_' and '-' kept), spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(blocks: list) -> dict:
    """id(heading block) -> its anchor, numbered as GitHub numbers repeats (x, x-1, x-2)."""
    seen, out = {}, {}
    for b in blocks:
        if isinstance(b, (Heading, Contents)):
            base = slug(_heading_text(b))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out[id(b)] = base if n == 0 else f"{base}-{n}"
    return out


def _heading_text(b) -> str:
    return b.title if isinstance(b, Contents) else b.text


def contents(blocks: list) -> list:
    """(level, text, anchor) of every heading the Contents block lists."""
    ids = anchors(blocks)
    return [(b.level, b.text, ids[id(b)]) for b in blocks
            if isinstance(b, Heading) and b.level in CONTENTS_LEVELS]


def markdown(blocks: list, out: Path) -> str:
    lines = []
    for b in blocks:
        if isinstance(b, Heading):
            lines += ["#" * b.level + " " + b.text, ""]
        elif isinstance(b, Contents):
            lines += [f"## {b.title}", ""]
            lines += [f"{'  ' * (level - 2)}- [{text}](#{anchor})"
                      for level, text, anchor in contents(blocks)] + [""]
        elif isinstance(b, Text):
            lines += [b.text, ""]
        elif isinstance(b, Table):
            lines += [f"**{b.title}** (`tables/{b.name}.csv`)", "", *_md_table(_cells(b)), ""]
            lines += [f"[{i}] {n}  " for i, n in enumerate(b.notes, 1)] + ([""] if b.notes else [])
        elif isinstance(b, Figure):
            if b.path is None:
                lines += [f"*Figure skipped — {b.title}:* {b.caption}", ""]
            else:
                rel = b.path.relative_to(out).as_posix()
                lines += [f"![{b.title}]({rel})", "", f"*{b.title}.* {b.caption}", ""]
    return "\n".join(lines)


def _md_table(df: pd.DataFrame) -> list:
    if df.empty:
        return ["(no rows)"]
    esc = lambda s: str(s).replace("|", "\\|")
    head = "| " + " | ".join(esc(c) for c in df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(esc(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return [head, rule, *body]


STYLE = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}td,th{border:1px solid #bbb;
padding:2px 6px;text-align:right}th{background:#eee}figure{margin:1em 0}img{max-width:100%}
.notes{font-size:0.85em;color:#444}figcaption{font-size:0.9em}
summary{margin:0.8em 0;cursor:pointer}"""


def html_page(blocks: list, title: str) -> str:
    ids = anchors(blocks)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body>"]
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"<h{b.level} id='{ids[id(b)]}'>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, Contents):
            parts.append(_html_contents(b, blocks, ids[id(b)]))
        elif isinstance(b, Text):
            parts.append(f"<p>{html.escape(b.text)}</p>")
        elif isinstance(b, Table):
            parts.append(_html_table(b))
        elif isinstance(b, Figure):
            parts.append(_html_figure(b))
    parts.append(_IMAGE_CHECK + "</body></html>")
    return "\n".join(parts)


def _html_contents(b: Contents, blocks: list, anchor: str) -> str:
    """Nested lists: each level-3 heading inside the item of the level-2 heading above it."""
    items = []                                    # (text, anchor, [(text, anchor) of level 3])
    for level, text, target in contents(blocks):
        if level == 2 or not items:
            items.append((text, target, []))
        else:
            items[-1][2].append((text, target))
    link = lambda text, target: f"<a href='#{target}'>{html.escape(text)}</a>"
    nested = lambda kids: "<ul>" + "".join(f"<li>{link(*k)}</li>" for k in kids) + "</ul>"
    lis = "".join(f"<li>{link(text, target)}{nested(kids) if kids else ''}</li>"
                  for text, target, kids in items)
    return f"<h2 id='{anchor}'>{html.escape(b.title)}</h2><ul class='contents'>{lis}</ul>"


def _html_table(b: Table) -> str:
    """Title, cells and notes; a table longer than LONG_ROWS folds under its title."""
    cells = _cells(b)
    body = (cells.to_html(index=False, escape=True) if not cells.empty else "<p>(no rows)</p>")
    if b.notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in b.notes)
        body += f"<ol class='notes'>{items}</ol>"
    title = html.escape(b.title)
    if len(cells) <= LONG_ROWS:
        return f"<h4>{title}</h4>{body}"
    return (f"<details><summary><b>{title}</b> ({len(cells)} rows: click to show)</summary>"
            f"{body}</details>")


def _html_figure(b: Figure) -> str:
    if b.path is None:
        return f"<p><em>Figure skipped — {html.escape(b.title)}:</em> {html.escape(b.caption)}</p>"
    data = base64.b64encode(Path(b.path).read_bytes()).decode("ascii")
    return (f"<figure><img class='figure' alt='{html.escape(b.title)}' "
            f"src='data:image/png;base64,{data}'><figcaption><b>{html.escape(b.title)}.</b> "
            f"{html.escape(b.caption)}</figcaption></figure>")


# Writes how many figures decoded into the page, so a headless browser can check it (tests).
_IMAGE_CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.figure'), ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) ok++; });
  var p = document.createElement('p'); p.id = 'figure-check';
  p.setAttribute('data-total', imgs.length); p.setAttribute('data-loaded', ok);
  p.style.display = 'none'; document.body.appendChild(p);
});
</script>"""


def write_tables(blocks: list, out: Path) -> None:
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for b in blocks:
        if isinstance(b, Table):
            b.data.to_csv(out / "tables" / f"{b.name}.csv", index=False)
