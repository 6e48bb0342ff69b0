"""A run folder's pages, built from what is on disk: ``index.html`` (one page: contents,
then a section per notebook, its figures embedded), ``index.md`` and ``pages/<NN_topic>.md``
(the same as Markdown, for JupyterLab), and a page per table. `write_index` builds them; the
runner calls it after each notebook, ``ltrlib index RUN`` on demand."""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from ltrlib import provenance
from ltrlib.atomic import atomic_write_text
from ltrlib.manifest import FILE as MANIFEST_FILE
from ltrlib.manifest import RunManifest
from ltrlib.report.outputs import LEDGER_SECTION, METRICS_FILE, RUN_LEVEL_FILES, table_to_markdown

__all__ = ["PAGES_DIR", "embedded_png", "html_page", "write_index"]


def _href(path: Path, run_dir: Path) -> str:
    return quote(path.relative_to(run_dir).as_posix())


def _collect(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Per notebook: status from run.json, executed notebook, tables and figures on disk."""
    manifest = RunManifest.read(run_dir)
    statuses = manifest.statuses() if manifest else {}

    names = set(statuses)
    for sub in ("tables", "figures"):
        if (run_dir / sub).is_dir():
            names.update(p.name for p in (run_dir / sub).iterdir() if p.is_dir())
    nb_dir = run_dir / "notebooks"
    if nb_dir.is_dir():
        names.update(p.name.split(".")[0] for p in nb_dir.glob("*.ipynb") if not p.name.startswith("."))

    entries = {}
    for name in sorted(names):
        executed = nb_dir / f"{name}.ipynb"
        failed = nb_dir / f"{name}.failed.ipynb"
        tables_dir = run_dir / "tables" / name
        figures_dir = run_dir / "figures" / name
        as_html = nb_dir / f"{name}.html"
        entries[name] = {
            "status": statuses.get(name),
            "notebook": executed if executed.exists() else None,
            "notebook_html": as_html if as_html.exists() and executed.exists() else None,
            "failed_notebook": failed if failed.exists() else None,
            "tables": sorted(tables_dir.glob("[!.]*.csv")) if tables_dir.is_dir() else [],
            "figures": sorted(figures_dir.glob("[!.]*.png")) if figures_dir.is_dir() else [],
        }
    return entries


#: The per-notebook Markdown pages of a run (``pages/<NN_topic>.md``), which ``index.md``
#: lists: JupyterLab renders them with their figures (its Markdown preview fetches images as
#: the app itself, where its HTML viewer's sandbox is refused them).
PAGES_DIR = "pages"


@dataclass(frozen=True)
class _TableView:
    """One table as both indexes show it, read once: its caption, its first
    `INDEX_TABLE_ROWS` rows (or why it could not be read) and how many rows it has beyond."""

    csv: Path
    caption: str
    head: Any = None  # a DataFrame, None when unreadable
    error: str = ""
    more: int = 0
    frame: Any = None  # the whole table, for its HTML page and the index's fold


@dataclass(frozen=True)
class _NotebookView:
    name: str
    status: str
    notebook: Path | None
    notebook_html: Path | None
    failed_notebook: Path | None
    tables: tuple[_TableView, ...]
    figures: tuple[tuple[Path, str], ...]  # (png, caption)


def _table_view(csv: Path) -> _TableView:
    import pandas as pd

    caption = _table_caption(csv) or csv.stem.replace("_", " ")
    try:
        frame = pd.read_csv(csv)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        return _TableView(csv, caption, error=str(exc))
    return _TableView(csv, caption, frame.head(INDEX_TABLE_ROWS), more=len(frame) - INDEX_TABLE_ROWS, frame=frame)


def _run_view(run_dir: Path) -> tuple[list[_NotebookView], list[tuple[str, str]]]:
    """What both indexes show, gathered once: each notebook's view (`_collect`, its tables
    read and its captions found) and the run-level files as (label, file)."""
    notebooks = [_NotebookView(name, e["status"] or "", e["notebook"], e["notebook_html"], e["failed_notebook"],
                               tuple(_table_view(csv) for csv in e["tables"]),
                               tuple((png, _figure_caption(png)) for png in e["figures"]))
                 for name, e in _collect(run_dir).items()]
    links = [("Metrics", METRICS_FILE)] if (run_dir / METRICS_FILE).exists() else []
    if (run_dir / MANIFEST_FILE).exists():
        links.append(("Run manifest", MANIFEST_FILE))
    links += [(label, f) for f, label in RUN_LEVEL_FILES if (run_dir / f).exists()]
    return notebooks, links


def _index_markdown(run_dir: Path, notebooks: list[_NotebookView], links: list[tuple[str, str]]) -> str:
    """``index.md``: the run's files and one line per notebook, linking its page."""
    lines = [f"# Report {run_dir.name}", ""]
    held = provenance.read_run(run_dir)
    if held:
        lines += [f"Data: {provenance.summary(held)}", ""]
    if links:
        lines += [" · ".join(f"{label}: [{f}]({f})" for label, f in links), ""]
    if notebooks:
        lines += ["| notebook | status | tables | figures |", "|---|---|--:|--:|"]
        lines += [f"| [{nb.name}]({PAGES_DIR}/{quote(nb.name)}.md) | {nb.status} | {len(nb.tables)} | "
                  f"{len(nb.figures)} |" for nb in notebooks]
        lines.append("")
    return "\n".join(lines)


def _page_markdown(nb: _NotebookView, run_dir: Path) -> str:
    """``pages/<name>.md``: one notebook's executed notebook, figures (the paper's first) and
    tables (their first `INDEX_TABLE_ROWS` rows), every link relative to the page."""
    def href(path: Path) -> str:
        return "../" + _href(path, run_dir)

    status = f" ({nb.status})" if nb.status else ""
    lines = [f"# {nb.name}{status}", "", f"[Report {run_dir.name}](../index.md)", ""]
    if nb.notebook:
        page = f" ([as a page]({href(nb.notebook_html)}))" if nb.notebook_html else ""
        lines.append(f"- Executed notebook: [{nb.notebook.name}]({href(nb.notebook)}){page}")
    if nb.failed_notebook:
        lines.append(f"- Failed notebook (partial): [{nb.failed_notebook.name}]({href(nb.failed_notebook)})")
    lines.append("")
    for png, caption in _papers_figures_first(nb.figures):
        lines += [f"## Figure `{png.stem}`", "", caption, "", f"![{png.stem}]({href(png)})", ""]
    for t in nb.tables:
        lines += [f"## Table `{t.csv.stem}`", "", t.caption, ""]
        if t.head is None:
            lines += [f"unreadable: {t.error}", ""]
            continue
        rest = f"; {t.more} more rows there" if t.more > 0 else ""
        lines += [table_to_markdown(t.head), "", f"[csv]({href(t.csv)}){rest}", ""]
    return "\n".join(lines)


#: Rows of a table in the Markdown pages; the CSV holds them all.
INDEX_TABLE_ROWS = 25
#: Rows of a table index.html shows open; all of them (up to `FOLDED_TABLE_ROWS` more) one click
#: away in a fold, which its "table" link opens, and every row on the table's own page.
OPEN_TABLE_ROWS = 5
FOLDED_TABLE_ROWS = 500


def _table_caption(csv: Path) -> str:
    """The caption `Reporter.table` wrote above the Markdown table, or ""."""
    md = csv.with_suffix(".md")
    if not md.exists():
        return ""
    head = md.read_text(encoding="utf-8").split("\n\n", 1)[0]
    return "" if head.lstrip().startswith("|") else head.strip()


def _figure_caption(png: Path) -> str:
    """The caption given to `Reporter.figure`, else the figure's name in words."""
    path = png.with_suffix(".caption.txt")
    return path.read_text(encoding="utf-8").strip() if path.exists() else png.stem.replace("_", " ")


def _frame_html(frame) -> str:
    return frame.to_html(index=False, border=0, na_rep="", float_format=lambda v: f"{v:.4g}")


_STYLE = ("body{font-family:sans-serif;max-width:75em;margin:auto;padding:0 1em}"
          "img{max-width:100%;border:1px solid #ddd}figure{margin:1.2em 0}"
          "figcaption{margin:.3em 0;color:#333}table{border-collapse:collapse;font-size:90%}"
          "th,td{padding:.15em .6em;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}"
          "figure.table{overflow-x:auto}summary{cursor:pointer}summary h2{display:inline}"
          "details{margin:.6em 0}details.section{border-top:1px solid #ddd;padding-top:.4em}"
          "table.claims td{text-align:left}table.claims details{margin:0;max-width:40em}"
          "table.claims details p{margin:.2em 0}tr.v-holds td:nth-child(3){color:#2e7d3a}"
          "tr.v-does-not-hold td:nth-child(3){color:#b23b2a}"
          # Two figures, or two tables, side by side: a section shows its results in half the height.
          ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(34em,1fr));gap:0 1.5em}"
          ".grid>figure{margin:.8em 0;min-width:0}"
          # A table's fold of all its rows, open, replaces its first rows above it.
          "figure.table:has(>details[open])>.head{display:none}"
          # A link to a table's rows shows its caption above them.
          "figure.table [id]{scroll-margin-top:4em}")

#: Links into the page open what they name and every fold around it: a closed <details> ignores
#: a link to it (Chromium opens the folds around a link's target, but not the target itself).
_OPEN_ON_LINK = ("<script>function ltrOpen(id){var d=document.getElementById(id);if(!d)return;"
                 "for(var p=d;p;p=p.parentElement)if(p.tagName==='DETAILS')p.open=true;d.scrollIntoView();}"
                 "document.addEventListener('click',function(e){var a=e.target.closest('a[href^=\"#\"]');"
                 "if(a)ltrOpen(decodeURIComponent(a.getAttribute('href').slice(1)));});"
                 "window.addEventListener('hashchange',function(){ltrOpen(decodeURIComponent(location.hash.slice(1)));});"
                 "if(location.hash)ltrOpen(decodeURIComponent(location.hash.slice(1)));</script>")


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page in the report's style: ``body`` under an ``<h1>`` of
    ``title`` (escaped here; ``body`` is HTML)."""
    esc = html.escape(title)
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{esc}</title><style>{_STYLE}</style></head>'
            f"<body><h1>{esc}</h1>\n{body}\n{_OPEN_ON_LINK}</body></html>\n")


def _table_page_path(csv: Path) -> Path:
    return csv.with_suffix(".html")


def _write_table_page(t: _TableView, run_dir: Path) -> None:
    """``<name>.html`` beside the table's CSV: every row, readable where a CSV link would
    download. Rewritten only when older than its CSV (the index is rebuilt after every notebook)."""
    page = _table_page_path(t.csv)
    if t.frame is None or (page.exists() and page.stat().st_mtime >= t.csv.stat().st_mtime):
        return
    back = "../" * len(t.csv.relative_to(run_dir).parts[:-1]) + "index.html"
    body = (f"<p>{html.escape(t.caption)}</p><p><small>{len(t.frame)} rows · "
            f'<a href="{quote(t.csv.name)}" download>csv</a> · <a href="{back}">report</a></small></p>'
            f'<figure class="table">{_frame_html(t.frame)}</figure>')
    atomic_write_text(page, html_page(f"{t.csv.parent.name} / {t.csv.stem}", body))


def _table_id(t: _TableView) -> str:
    """The id of a table's rows in the index, which its "table" link names."""
    return f"table-{t.csv.parent.name}-{t.csv.stem}"


def _table_html(t: _TableView, run_dir: Path) -> str:
    """A table in the index: its first `OPEN_TABLE_ROWS` rows, then a fold of all its rows (up
    to `OPEN_TABLE_ROWS` + `FOLDED_TABLE_ROWS`; a longer table's fold links its page, which
    has every row), and links to those rows, its CSV (a download) and its Markdown.

    The "table" link is a link into the page (``#table-<notebook>-<name>``), not to the
    table's page: inside JupyterLab's HTML viewer the index is a ``blob:`` document whose
    ``<base>`` is ``files/.../index.html?_xsrf=...``, and a relative link to another file
    loses that ``_xsrf`` and, from a ``blob:`` document, any Referer, so the Jupyter server
    refuses it (403 "Blocking request from unknown origin"). A link to ``#id`` keeps the
    base's query; the viewer's frame reloads the index from the server at that id, and
    Chromium opens the closed folds around the target of a fragment link, even with scripts
    off (the viewer's sandbox). In a browser the page's script opens them. From there the
    server sends no other file (the page it serves is sandboxed: its links carry no login),
    so the link to a long table's page opens a new tab, which the viewer blocks without
    replacing the report.
    """
    esc = html.escape
    if t.head is None:
        return f"<p>Table <code>{esc(t.csv.stem)}</code>: unreadable ({esc(t.error)})</p>"
    rows_id = _table_id(t)
    links = (f'<a href="#{quote(rows_id)}">table</a> · '
             f'<a href="{_href(t.csv, run_dir)}" download>csv</a>')
    md = t.csv.with_suffix(".md")
    if md.exists():
        links += f' · <a href="{_href(md, run_dir)}">md</a>'
    n = len(t.frame)
    if n <= OPEN_TABLE_ROWS:
        body = f'<div id="{esc(rows_id)}">{_frame_html(t.frame)}</div>'
    else:
        shown = t.frame.head(OPEN_TABLE_ROWS + FOLDED_TABLE_ROWS)
        whole = ""
        if len(shown) < n:
            page = _href(_table_page_path(t.csv), run_dir)
            whole = (f"<p><small>The first {len(shown)} of {n} rows; every row on the table's page, "
                     f'<a href="{page}" target="_blank">{esc(unquote(page))}</a> (in JupyterLab, open it from '
                     "the file browser).</small></p>")
        body = (f'<div class="head">{_frame_html(t.frame.head(OPEN_TABLE_ROWS))}</div>'
                f'<details><summary>all {n} rows</summary><div id="{esc(rows_id)}">{_frame_html(shown)}{whole}'
                "</div></details>")
    return (f'<figure class="table"><figcaption><b>{esc(t.csv.stem)}</b>: {esc(t.caption)} '
            f"<small>({links}; {n} rows)</small></figcaption>{body}</figure>")


def embedded_png(png: Path | bytes) -> str:
    """A figure (a PNG file, or its bytes) as a ``data:`` URI. JupyterLab's HTML viewer shows
    a page in a sandbox whose requests for files the server refuses (403, no referer), and a
    browser opening the page as a file cannot always read its neighbours: inside the page,
    the figure shows anywhere."""
    data = png if isinstance(png, bytes) else png.read_bytes()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _papers_figures_first(figures: tuple[tuple[Path, str], ...]) -> list[tuple[Path, str]]:
    """The paper's figures (their captions name a figure of it: "Figure 3: ...") first, each
    group in its own order."""
    def paper_first(item):
        return not item[1].lstrip().lower().startswith(("figure", "fig.", "paper's figure"))

    return sorted(figures, key=paper_first)


def _section_html(nb: _NotebookView, run_dir: Path) -> list[str]:
    """One notebook's collapsible section: its links, its figures (the paper's first), then
    its tables."""
    esc = html.escape
    status = f" <small>({esc(nb.status)})</small>" if nb.status else ""
    out = [f'<details class="section" id="{esc(nb.name)}"><summary><h2>{esc(nb.name)}{status}</h2></summary>']
    items = []
    if nb.notebook:
        page = (f'<a href="{_href(nb.notebook_html, run_dir)}">as a page</a>, ' if nb.notebook_html else "")
        items.append(f'Executed notebook: {page}<a href="{_href(nb.notebook, run_dir)}">{esc(nb.notebook.name)}</a>')
    if nb.failed_notebook:
        fn = nb.failed_notebook
        items.append(f'Failed notebook (partial): <a href="{_href(fn, run_dir)}">{esc(fn.name)}</a>')
    if items:
        out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    out.append('<div class="grid">')
    for png, caption in _papers_figures_first(nb.figures):
        out.append(f'<figure><img src="{embedded_png(png)}" alt="{esc(png.stem)}">'
                   f"<figcaption><b>{esc(png.stem)}</b>: {esc(caption)} "
                   f'<small>(<a href="{_href(png, run_dir)}">png</a>)</small></figcaption></figure>')
    out.append('</div><div class="grid">')
    out.extend(_table_html(t, run_dir) for t in nb.tables)
    out.append("</div></details>")
    return out


def _index_html(run_dir: Path, notebooks: list[_NotebookView], links: list[tuple[str, str]]) -> str:
    """``index.html``: one self-contained page, a contents table first, the fidelity ledger
    (`LEDGER_SECTION`, when the run has one) and then one collapsible section per notebook
    (closed: a whole run's figures make a very long page; a contents link opens its section)."""
    esc = html.escape
    out = []
    held = provenance.read_run(run_dir)
    if held:
        out.append(f"<p>Data: {esc(provenance.summary(held))}</p>")
    if links:
        out.append("<p>" + " &middot; ".join(f'{esc(label)}: <a href="{f}">{f}</a>' for label, f in links) + "</p>")
    ledger = run_dir / LEDGER_SECTION
    if notebooks:
        rows = "".join(f'<tr><td style="text-align:left"><a href="#{esc(nb.name)}">{esc(nb.name)}</a></td>'
                       f"<td>{esc(nb.status)}</td><td>{len(nb.tables)}</td><td>{len(nb.figures)}</td></tr>"
                       for nb in notebooks)
        first = ('<tr><td style="text-align:left"><a href="#ledger">fidelity ledger</a></td>'
                 "<td></td><td></td><td></td></tr>" if ledger.exists() else "")
        out.append("<table><tr><th>notebook</th><th>status</th><th>tables</th><th>figures</th></tr>"
                   f"{first}{rows}</table><p><small>Each section opens on a click.</small></p>")
    if ledger.exists():
        out += ['<details class="section" id="ledger"><summary><h2>Fidelity ledger</h2></summary>',
                ledger.read_text(encoding="utf-8"), "</details>"]
    for nb in notebooks:
        out += _section_html(nb, run_dir)
    return html_page(f"Report {run_dir.name}", "\n".join(out))


def write_index(run_dir: str | os.PathLike) -> Path:
    """Write ``index.html``, ``index.md`` and its ``pages/`` for a run directory; return
    the HTML path.

    Built from what is on disk (plus statuses from ``run.json``), so it also describes a
    partial or failed run. All links are relative and the HTML page carries its figures:
    the directory can be moved or zipped, and both indexes read inside JupyterLab.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run directory {run_dir} does not exist")
    notebooks, links = _run_view(run_dir)
    pages = run_dir / PAGES_DIR
    if notebooks:
        pages.mkdir(exist_ok=True)
    for nb in notebooks:
        atomic_write_text(pages / f"{nb.name}.md", _page_markdown(nb, run_dir))
        for t in nb.tables:
            _write_table_page(t, run_dir)
    names = {nb.name for nb in notebooks}
    for stale in pages.glob("[!.]*.md") if pages.is_dir() else ():
        if stale.stem not in names:
            stale.unlink()
    atomic_write_text(run_dir / "index.md", _index_markdown(run_dir, notebooks, links))
    return atomic_write_text(run_dir / "index.html", _index_html(run_dir, notebooks, links))
