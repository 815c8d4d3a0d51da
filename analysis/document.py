"""A report as a list of blocks, rendered to Markdown (PNG links) and to one self-contained HTML
file (PNG embedded as base64). Tables are also written as CSV with their full precision."""

import base64
import html
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


@dataclass
class Figure:
    name: str
    title: str
    path: Path | None          # None: skipped, `caption` says why
    caption: str


def fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "–" if np.isnan(v) else f"{v:.4g}"
    return "–" if v is None else str(v)


def _cells(table: Table) -> pd.DataFrame:
    view = table.view if table.view is not None else table.data
    return view.map(fmt) if not view.empty else view


def markdown(blocks: list, out: Path) -> str:
    lines = []
    for b in blocks:
        if isinstance(b, Heading):
            lines += ["#" * b.level + " " + b.text, ""]
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
.notes{font-size:0.85em;color:#444}figcaption{font-size:0.9em}"""


def html_page(blocks: list, title: str) -> str:
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body>"]
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, Text):
            parts.append(f"<p>{html.escape(b.text)}</p>")
        elif isinstance(b, Table):
            parts.append(f"<h4>{html.escape(b.title)}</h4>")
            parts.append(_cells(b).to_html(index=False, escape=True) if not _cells(b).empty
                         else "<p>(no rows)</p>")
            if b.notes:
                items = "".join(f"<li>{html.escape(n)}</li>" for n in b.notes)
                parts.append(f"<ol class='notes'>{items}</ol>")
        elif isinstance(b, Figure):
            parts.append(_html_figure(b))
    parts.append(_IMAGE_CHECK + "</body></html>")
    return "\n".join(parts)


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
