"""The README and docs/ hold together: every relative link (``[text](path)``, ``![alt](path)``,
with an optional ``#anchor``) names a file that exists and, where it names an anchor, a
heading of that file that GitHub gives that slug; and the README lists every docs page.

Links inside fenced code blocks and inline code are not links; http(s) and mailto links are
not checked (no network here).
"""

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

PROJ_ROOT = Path(__file__).resolve().parents[1]

# [text](target) or ![alt](target), the target optionally in <...> and followed by a "title".
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]+(?:\([^\s()]*\)[^\s()]*)*)(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


def markdown_files() -> list[Path]:
    return [PROJ_ROOT / "README.md", *sorted((PROJ_ROOT / "docs").rglob("*.md"))]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) for every line outside fenced code blocks."""
    out, fence = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
        elif fence is not None and m and m.group(1).startswith(fence):
            fence = None
        elif fence is None:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger): the rendered text lower-cased,
    every character but letters, marks, digits, connector punctuation, spaces and hyphens
    dropped, spaces turned into hyphens."""
    text = INLINE_CODE.sub(lambda m: m.group(2).strip(), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = re.sub(r"(\*\*|__|\*)", "", text)  # emphasis markers
    text = text.lower()
    kept = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link in the file's prose."""
    out = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in LINK.finditer(INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)):
            out.append((number, m.group(1).strip("<>")))
    return out


def broken_links(path: Path) -> list[str]:
    """What is wrong with the file's relative links, one line each (empty: nothing)."""
    problems = []
    for number, target in links(path):
        if re.match(r"(?i)(https?|mailto):", target):
            continue
        file_part, _, anchor = target.partition("#")
        where = f"{path.relative_to(PROJ_ROOT) if path.is_relative_to(PROJ_ROOT) else path.name}:{number}"
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{where}: {target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and unquote(anchor).lower() not in anchors(dest):
            problems.append(f"{where}: {target}: no heading with anchor #{anchor} in {dest.name}")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(PROJ_ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_readme_lists_every_docs_page():
    listed = {(PROJ_ROOT / target.partition("#")[0]).resolve() for _, target in links(PROJ_ROOT / "README.md")}
    pages = set((PROJ_ROOT / "docs").rglob("*.md"))
    assert pages, "no docs pages"
    assert sorted(str(p.relative_to(PROJ_ROOT)) for p in pages - listed) == []


def test_every_docs_page_opens_with_a_summary_and_a_way_back():
    for page in sorted((PROJ_ROOT / "docs").rglob("*.md")):
        first = [line for line in page.read_text(encoding="utf-8").splitlines() if line.strip()][:2]
        assert first[0].startswith("# "), page
        assert "(../README.md)" in first[1], page


def test_the_checker_finds_broken_links(tmp_path):
    """The checker itself: a missing file, a missing anchor and a missing image are reported;
    code, external links and good anchors are not."""
    (tmp_path / "img.png").write_bytes(b"")
    (tmp_path / "other.md").write_text("# Other page\n\n## Bi-LambdaMART, decided: the `study`\n\n## Notes\n\n## Notes\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[ok](other.md) [ok](other.md#bi-lambdamart-decided-the-study) [ok](other.md#notes-1) "
        "![ok](img.png) [ok](#page) [web](https://example.org/x) [mail](mailto:a@b.c)\n"
        "`[code](missing.md)`\n\n```\n[code](missing.md)\n```\n\n"
        "[gone](missing.md)\n![gone](missing.png)\n[gone](other.md#no-such-heading)\n[gone](#nowhere)\n",
        encoding="utf-8")
    problems = broken_links(page)
    assert [p.split(": ")[1] for p in problems] == [
        "missing.md", "missing.png", "other.md#no-such-heading", "#nowhere"]


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Bi-LambdaMART's neural competitors", "bi-lambdamarts-neural-competitors"),
    ("Shared tuning studies and `tune-worker`", "shared-tuning-studies-and-tune-worker"),
    ("Your own collections: MSLR-WEB10K/30K, Istella-S, Yahoo LTRC", "your-own-collections-mslr-web10k30k-istella-s-yahoo-ltrc"),
    ("What DS2′ holds", "what-ds2-holds"),
    ("λMART vs Bi-λMART", "λmart-vs-bi-λmart"),
])
def test_slug_follows_github(heading, anchor):
    assert slug(heading) == anchor


# --------------------------------------------------------------------------- ltrlib names

DOTTED = re.compile(r"\bltrlib(?:\.[A-Za-z_]\w*)+")
IMPORT = re.compile(r"from (ltrlib[\w.]*) import ([\w, ]+)")


def _resolves(dotted: str) -> bool:
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.relative_to(PROJ_ROOT).as_posix())
def test_every_ltrlib_name_the_docs_give_exists(path):
    """A dotted ``ltrlib.x.y`` or a ``from ltrlib.x import y`` in the docs names something the
    package has, so a move or a rename cannot leave the docs behind (the README's "What
    changed" table in docs/changes.md, whose first column names the old paths on purpose, aside:
    its second column, the new paths, is checked)."""
    text = path.read_text(encoding="utf-8")
    if path.name == "changes.md":
        # each table row's first cell blanked, so the line numbers below stay the file's
        text = re.sub(r"^\|[^|\n]*\|", "||", text, flags=re.M)
    stale = []
    for number, line in enumerate(text.splitlines(), start=1):
        names = [m.group(0).rstrip(".") for m in DOTTED.finditer(line)]
        names += [f"{m.group(1)}.{n.strip()}" for m in IMPORT.finditer(line) for n in m.group(2).split(",") if n.strip()]
        stale += [f"line {number}: {n}" for n in names if not _resolves(n)]
    assert not stale, f"{path.name} names what ltrlib does not have: " + "; ".join(stale)


def test_every_ltrlib_name_the_code_mentions_exists():
    """The same for the package's docstrings and comments, the notebooks' prose and the
    benchmarks: a ``ltrlib.x.y`` they name is there (file names such as ``ltrlib/x.py`` aside)."""
    sources = [*sorted((PROJ_ROOT / "ltrlib").rglob("*.py")), *sorted((PROJ_ROOT / "notebooks").glob("*.py")),
               *sorted((PROJ_ROOT / "bench").glob("*.py"))]
    stale = []
    for path in sources:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            stale += [f"{path.relative_to(PROJ_ROOT)}:{number}: {m.group(0)}" for m in DOTTED.finditer(line)
                      if not m.group(0).endswith((".py", ".md", ".csv", ".json")) and not _resolves(m.group(0))]
    assert not stale, "names ltrlib does not have: " + "; ".join(stale)
