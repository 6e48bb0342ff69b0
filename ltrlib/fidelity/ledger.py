"""The fidelity ledger of a run: ``fidelity.md``, ``fidelity_claims.csv`` and ``fidelity.csv``.

One section per paper whose notebooks the run executed (`PAPERS`), each with its claims
decided on the run's tables and on the paper's printed numbers, and a head table that
counts, per paper, the checks of its claims that hold, do not hold, are not decided or are
not available, beside the data, scale and seed. A check is one claim in one scope (a table,
a split, a ranker). Only the paper's claims in the scopes it ran are counted: notes on its
numbers, exact checks of our code, our controls and scopes beyond the paper are reported in
their own tables (`ltrlib.fidelity.claims.KINDS`). A run is one seed: its verdicts decide
nothing on their own (`ONE_SEED`).

Outputs in the run directory, written atomically (the runner calls `write_fidelity` after
the notebooks; ``ltrlib fidelity RUN_DIR`` rebuilds them):

* ``fidelity_claims.csv``: every check of every paper (`ltrlib.fidelity.claims.CLAIM_COLUMNS`);
* ``fidelity_effects.csv``: every comparison's Effect Ratio and ΔRI (`EFFECT_COLUMNS`);
* ``fidelity.csv``: the non-IID paper's printed numbers beside ours (`ltrlib.fidelity.noniid`);
* ``fidelity.md``: provenance, the head table, then the sections;
* ``fidelity.html`` and ``fidelity_section.html`` (`ltrlib.report.LEDGER_SECTION`, which the
  run's ``index.html`` embeds): the same numbers to look at (`ledger_html`), a verdict chart,
  each paper's Effect Ratios as a forest, then its claims with the evidence folded.

Across seeds, `ltrlib.fidelity.across` decides every check by a rule written before the
runs (``ltrlib fidelity RUN RUN ...`` and ``ltrlib study ledger``).
"""

from __future__ import annotations

import html
import io
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ltrlib import provenance as run_provenance
from ltrlib.atomic import atomic_path, atomic_write_text
from ltrlib.fidelity import bilambdamart, foltr, noniid, xgboost_tutorial
from ltrlib.fidelity.claims import CLAIM_COLUMNS, KINDS, NOT_DECIDED, UNSTABLE_BELOW, Section, effect_rows
from ltrlib.fidelity.sources import reads_of
from ltrlib.manifest import RunManifest
from ltrlib.report import LEDGER_SECTION, embedded_png, html_page, table_to_markdown

__all__ = ["FIDELITY_CLAIMS_CSV", "FIDELITY_CSV", "FIDELITY_EFFECTS_CSV", "FIDELITY_HTML", "FIDELITY_MD",
           "FIDELITY_PUBLISHED_CSV", "ONE_SEED", "PAPERS", "Ledger", "Paper", "executed_papers",
           "fidelity_report", "ledger_html", "notebook_tables", "summary_table", "verdict_frame", "write_fidelity"]

FIDELITY_MD = "fidelity.md"
#: The ledger as a page to look at: its pictures, then each paper's claims (`ledger_html`).
FIDELITY_HTML = "fidelity.html"
FIDELITY_CSV = "fidelity.csv"
FIDELITY_CLAIMS_CSV = "fidelity_claims.csv"
FIDELITY_PUBLISHED_CSV = "fidelity_published.csv"
FIDELITY_EFFECTS_CSV = "fidelity_effects.csv"
#: What every section says of its verdicts: a run is one seed.
ONE_SEED = ("One run is one seed: these verdicts are this seed's and decide nothing on their own. Every check is "
            "decided across seeds by a rule written before the runs (docs/fidelity.md, \"The rule across seeds\"): "
            "`ltrlib study ledger --seeds 0-4` runs the batch at five seeds and decides them (its summary, "
            "`reports/ledger-<scale>/study.md`), as `ltrlib fidelity RUN RUN ...` does over runs of several seeds.")


@dataclass(frozen=True)
class Paper:
    """A paper the ledger follows, registered once in `PAPERS`: its title and the short name
    the studies' headlines give it, the notebooks that reproduce it, the function that builds
    its section from a run directory and its provenance, every `Claim` the section decides
    (its module's ``ALL_CLAIMS``: what the guard test reads) and the tables its checks read
    (its module's ``READS``, ``{notebook: (table, ...)}``, among these notebooks).
    tests/fidelity/test_registration.py fails on a claims module, notebook or table that
    no paper registers."""

    title: str
    short_name: str
    notebooks: tuple[str, ...]
    section: Callable[[Path, dict[str, Any]], Section]
    claims: tuple = ()
    reads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


PAPERS: dict[str, Paper] = {
    # Notebooks 00-02 describe the data the paper's Istella-S statistics calibrate the twin on.
    noniid.SOURCE: Paper("Learning to Rank for Non-IID Datasets", "non-IID",
                         ("00_dataset_overview", "01_category_analysis", "02_split_stats", "03_client_models",
                          "04_linear_merge", "05_stacking"), noniid.section, noniid.ALL_CLAIMS, noniid.READS),
    bilambdamart.SOURCE: Paper("Learning bivariate scoring functions for ranking (Bi-LambdaMART)", "Bi-LambdaMART",
                               ("06_bilambdamart", "06_neural_competitors"), bilambdamart.section,
                               bilambdamart.ALL_CLAIMS, bilambdamart.READS),
    foltr.SOURCE: Paper("Is Non-IID Data a Threat in Federated Online Learning to Rank?", "FOLTR",
                        ("07_foltr_noniid",), foltr.section, foltr.ALL_CLAIMS, foltr.READS),
    xgboost_tutorial.SOURCE: Paper("XGBoost's learning-to-rank notes", "XGBoost's notes",
                                   ("08_xgboost_backends", "09_click_bias"), xgboost_tutorial.section,
                                   xgboost_tutorial.ALL_CLAIMS, xgboost_tutorial.READS),
}


def notebook_tables(papers: Mapping[str, Paper] | None = None) -> dict[str, tuple[str, ...]]:
    """Every table the ledger reads, ``{notebook: (table, ...)}``: the registered papers'
    `Paper.reads` together (what `ltrlib.fidelity.sources.require_numbers` checks a record
    for)."""
    return reads_of(*((notebook, name) for paper in (PAPERS if papers is None else papers).values()
                      for notebook, names in paper.reads.items() for name in names))


@dataclass
class Ledger:
    """What `write_fidelity` writes: the run's provenance and one section per executed paper."""

    provenance: dict[str, Any]
    sections: list[Section] = field(default_factory=list)

    @property
    def claims(self) -> pd.DataFrame:
        frames = [s.claims for s in self.sections]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CLAIM_COLUMNS)

    @property
    def effects(self) -> pd.DataFrame:
        return effect_rows(s.effects for s in self.sections)

    @property
    def numbers(self) -> pd.DataFrame | None:
        found = [s.numbers for s in self.sections if s.numbers is not None]
        return found[0] if found else None

    @property
    def published(self) -> pd.DataFrame | None:
        """The papers' printed numbers for the declared dataset beside ours, every paper's."""
        found = [s.published.assign(source=s.source) for s in self.sections if s.published is not None]
        return pd.concat(found, ignore_index=True) if found else None

    @property
    def missing(self) -> list[str]:
        return [m for s in self.sections for m in s.missing]


def _provenance(run_dir: Path, manifest: RunManifest | None) -> dict[str, Any]:
    held = run_provenance.read_run(run_dir)  # written by the notebooks: the data fingerprint
    data = {"data fingerprint": held["fingerprint"]} if held else {}
    if manifest is None:
        return {"run_id": run_dir.name, **data}
    out = {"run_id": manifest.run_id, **manifest.params, **data,
           "ltrlib_version": manifest.ltrlib_version, "created": manifest.created}
    if manifest.paper_dataset_queries:  # what the declaration was checked against
        out["paper_dataset_queries"] = manifest.paper_dataset_queries
    for name, entry in manifest.notebooks.items():
        out[f"{name} status"] = entry.status
        if "n_trials" in entry.parameters:
            out[f"{name} n_trials"] = entry.parameters["n_trials"]
    return out


def executed_papers(run_dir: Path, manifest: RunManifest | None) -> list[str]:
    """The papers whose notebooks the run executed (an entry in ``run.json``, or, for a
    folder without one, tables on disk), in `PAPERS`' order."""
    ran = set(manifest.notebooks) if manifest else set()
    ran |= {p.name for p in (run_dir / "tables").glob("*") if p.is_dir()}
    return [key for key, paper in PAPERS.items() if ran & set(paper.notebooks)]


def fidelity_report(run_dir: str | os.PathLike) -> Ledger:
    """Read a run directory's tables and build the ledger (nothing is written)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run directory {run_dir} does not exist")
    manifest = RunManifest.read(run_dir)
    prov = _provenance(run_dir, manifest)
    return Ledger(prov, [PAPERS[key].section(run_dir, prov) for key in executed_papers(run_dir, manifest)])


def _beyond(claims: pd.DataFrame) -> pd.Series:
    """The paper's claims in scopes it did not run."""
    return (claims.kind == "claim") & claims.beyond.astype(bool)


def _counted(claims: pd.DataFrame) -> pd.Series:
    """The checks a paper's tally counts: its claims, in scopes it ran."""
    return (claims.kind == "claim") & ~claims.beyond.astype(bool)


def summary_table(ledger: Ledger) -> pd.DataFrame:
    """The ledger's head: per paper, its claims' checks that hold, do not hold, are not
    decided and are not available (only the paper's claims in the scopes it ran), the data,
    scale and seed, and how many checks stand outside the tally (beyond the paper, notes,
    exact checks, controls)."""
    prov = ledger.provenance
    rows = []
    for s in ledger.sections:
        c = s.claims
        counted = c[_counted(c)]
        paper = PAPERS[s.source]
        outside = {"beyond the paper": int(_beyond(c).sum()),
                   **{KINDS[k]: int((c.kind == k).sum()) for k in KINDS if k != "claim"}}
        rows.append({"paper": paper.title, "notebooks": ", ".join(nb[:2] for nb in paper.notebooks),
                     "data": prov.get("dataset", ""), "scale": prov.get("scale", ""), "seed": prov.get("seed", ""),
                     "holds": int((counted.ours == "holds").sum()),
                     "does not hold": int((counted.ours == "does not hold").sum()),
                     NOT_DECIDED: int((counted.ours == NOT_DECIDED).sum()),
                     "not available": int((counted.ours == "not available").sum()),
                     "outside the tally": ", ".join(f"{k} {v}" for k, v in outside.items() if v) or "none"})
    return pd.DataFrame(rows)


def verdict_frame(ledger: Ledger) -> pd.DataFrame:
    """The head table's counts, tidy (columns ``paper, verdict, checks``): per paper, its
    counted checks by verdict, and the checks outside the tally; what `ltrlib.plots.verdict_counts`
    draws."""
    rows = []
    for s in ledger.sections:
        c, title = s.claims, PAPERS[s.source].title
        counted = c[_counted(c)]
        rows += [(title, v, int((counted.ours == v).sum()))
                 for v in ("holds", "does not hold", NOT_DECIDED, "not available")]
        rows.append((title, "outside the tally", int((~_counted(c)).sum())))
    return pd.DataFrame(rows, columns=["paper", "verdict", "checks"])


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()


def _claims_html(c: pd.DataFrame) -> str:
    """A paper's checks in short columns, each check's statement, evidence and test folded
    in its last cell."""
    esc = html.escape

    def fold(r) -> str:
        parts = [("claim", r.statement), ("ours", r.evidence), ("paper", r.paper_evidence),
                 ("source", f"{r.place}: \u201c{r.quote}\u201d"), ("test", r.test), ("threshold", r.threshold)]
        said = "".join(f"<p><b>{k}</b>: {esc(str(v))}</p>" for k, v in parts if isinstance(v, str) and v)
        return f"<details><summary>evidence</summary>{said}</details>"

    rows = "".join(f'<tr class="v-{esc(str(r.ours)).replace(" ", "-")}"><td>{esc(r.claim)}</td>'
                   f"<td>{esc(str(r.scope))}</td><td>{esc(str(r.ours))}</td><td>{esc(str(r.paper))}</td>"
                   f"<td>{fold(r)}</td></tr>" for r in c.itertuples())
    return ('<table class="claims"><tr><th>claim</th><th>scope</th><th>ours</th><th>paper</th><th></th></tr>'
            f"{rows}</table>")


def _paper_html(s: Section) -> list[str]:
    from ltrlib import plots

    esc, paper, c = html.escape, PAPERS[s.source], s.claims
    out = [f'<h3 id="ledger-{esc(s.source)}">{esc(paper.title)}</h3>',
           f"<p><small>Notebooks {esc(', '.join(paper.notebooks))}.</small></p>"]
    if s.missing:
        out.append("<p>Not in this run (their claims are <i>not available</i>): "
                   f"{esc(', '.join(s.missing))}.</p>")
    if not s.effects.empty:
        out.append(f'<figure><img src="{embedded_png(_png(plots.effect_ratios(s.effects, paper.title)))}" '
                   f'alt="Effect Ratios: {esc(paper.title)}"><figcaption>{esc(EFFECTS_TEXT)}</figcaption></figure>')
    out.append(_claims_html(c[_counted(c)]))
    rest = c[~_counted(c)]
    if not rest.empty:
        out.append(f"<details><summary>{len(rest)} checks outside the tally (beyond the paper, notes, exact checks, "
                   f"controls)</summary>{_claims_html(rest)}</details>")
    return out


def ledger_html(ledger: Ledger) -> str:
    """The ledger to look at, from the same frames as ``fidelity.md``: the verdict chart
    (`ltrlib.plots.verdict_counts`) and the head table, then per paper its Effect Ratios
    (`ltrlib.plots.effect_ratios`) and its claims. An HTML fragment, figures embedded: the
    run's index and ``fidelity.html`` both show it."""
    from ltrlib import plots

    esc = html.escape
    out = [f"<p>{esc(ONE_SEED)}</p>"]
    if not ledger.sections:
        return "\n".join([*out, "<p>This run executed none of the papers' notebooks (00-08).</p>"])
    out.append(f'<figure><img src="{embedded_png(_png(plots.verdict_counts(verdict_frame(ledger))))}" '
               'alt="Verdicts per paper"><figcaption>Checks of each paper\'s claims by verdict on this run (a check: '
               "a claim in one scope the paper ran); checks beyond the paper, notes, exact checks and controls "
               "stand outside the tally.</figcaption></figure>")
    out.append('<figure class="table">' + summary_table(ledger).to_html(index=False, border=0) + "</figure>")
    for s in ledger.sections:
        out += _paper_html(s)
    return "\n".join(out)


def _two_decimals_or_blank(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"


def _claim_table(c: pd.DataFrame) -> str:
    return table_to_markdown(c[["claim", "scope", "ours", "paper", "evidence"]])


EFFECTS_TEXT = ("Each row is one comparison: one cell against one baseline, on one of the paper's datasets "
                "(`dataset`, where it prints several). `effect_ratio` = our improvement / the paper's (Breuer et "
                "al., SIGIR 2020; 1: the same effect, 0: none, below 0: reversed), never pooled over cells; "
                f"\"unstable\" where the paper's effect is below {UNSTABLE_BELOW} (ours: about the seed-to-seed "
                "spread of a difference between two tuned models on the twin). `delta_ri` = the paper's relative "
                "improvement minus ours.")


def _section_markdown(s: Section) -> list[str]:
    paper = PAPERS[s.source]
    c = s.claims
    lines = [f"## {paper.title}", "", f"Notebooks {', '.join(paper.notebooks)}.", "", ONE_SEED, ""]
    if s.intro:
        lines += [s.intro, ""]
    if s.missing:
        lines += ["Not in this run (their claims are `not available`): " + ", ".join(f"`{m}`" for m in s.missing)
                  + ".", ""]
    counted = c[_counted(c)]
    lines += ["### The paper's claims", ""]
    lines += [f"- `{r.claim}`: {r.statement} ({r.place}: \"{r.quote}\"; test: {r.test}; threshold: "
              f"{r.threshold})" for r in counted.drop_duplicates("claim").itertuples()] + [""]
    lines += [_claim_table(counted), ""]
    beyond = c[_beyond(c)]
    if not beyond.empty:
        lines += ["### Beyond the paper", "", "Scopes the paper did not run: reported, not counted as its "
                  "findings.", "", _claim_table(beyond), ""]
    for kind in [k for k in KINDS if k != "claim"]:
        part = c[c.kind == kind]
        if not part.empty:
            lines += [f"### {KINDS[kind][0].upper()}{KINDS[kind][1:]} (not counted)", ""]
            lines += [f"- `{r.claim}`: {r.statement}" for r in part.drop_duplicates("claim").itertuples()] + [""]
            lines += [_claim_table(part), ""]
    if not s.effects.empty:
        e = s.effects
        shown = e.assign(**{col: e[col].map(_two_decimals_or_blank) for col in ("effect_ratio", "delta_ri")},
                         **{col: e[col].map(lambda v: "" if pd.isna(v) else f"{v:+.4f}")
                            for col in ("ours_improvement", "paper_improvement")})
        lines += ["### Effect Ratios, comparison by comparison", "", EFFECTS_TEXT, "",
                  table_to_markdown(shown[["claim", "scope", "comparison", "dataset", "ours_improvement",
                                           "paper_improvement", "effect_ratio", "delta_ri", "stability"]]), ""]
    return lines + s.lines


def _markdown(ledger: Ledger) -> str:
    prov = ledger.provenance
    lines = [f"# Fidelity ledger: run {prov.get('run_id', '')}", "",
             "Claim by claim, whether each paper's findings hold on this run's data, with the evidence beside "
             "the paper's. Nothing is tuned to make a claim hold. `ours`: the verdict on this run; `paper`: on "
             "the paper's printed numbers (or where the paper states it). Every claim names its source's "
             "sentence and place, its test and where its threshold comes from (the paper's, or ours and why). "
             "\"Not decided\": the check ran but its test had too few units, or the models' budgets were not "
             "equal. Each comparison's Effect Ratio and ΔRI are in its section.", "", ONE_SEED, "",
             "Provenance (from `run.json` and `provenance.json`):", ""]
    lines += [f"- {k}: `{v}`" for k, v in prov.items() if k != "run_id"] or ["- no run.json"]
    if prov.get("scale") == "tiny":
        lines += ["", "Tiny scale (a smoke test): a few dozen test queries per set, so most differences and "
                  "claims below are noise."]
    lines += ["", "## Summary", ""]
    if not ledger.sections:
        lines += ["This run executed none of the papers' notebooks (00-08).", ""]
    else:
        head = summary_table(ledger)
        lines += ["Counts are checks of the paper's claims (a claim in one scope the paper ran); notes, exact "
                  "checks, controls and scopes beyond the paper stand outside the tally.", "",
                  table_to_markdown(head), ""]
    lines += ["Files: [fidelity_claims.csv](fidelity_claims.csv) (every check), "
              "[fidelity_effects.csv](fidelity_effects.csv) (every comparison's Effect Ratio)"
              + (", [fidelity.csv](fidelity.csv) (every number of the non-IID paper)" if ledger.numbers is not None
                 else "") + ".", ""]
    for s in ledger.sections:
        lines += _section_markdown(s)
    return "\n".join(lines)


def write_fidelity(run_dir: str | os.PathLike) -> Path:
    """Write ``fidelity.md``, ``fidelity.html`` (its section of the run's index beside it),
    ``fidelity_claims.csv`` and, when the non-IID paper's section is there, ``fidelity.csv``
    into ``run_dir`` from the tables on disk; return the Markdown path. Works on a partial run."""
    run_dir = Path(run_dir)
    ledger = fidelity_report(run_dir)
    if ledger.numbers is not None:
        with atomic_path(run_dir / FIDELITY_CSV) as tmp:
            ledger.numbers.to_csv(tmp, index=False)
    with atomic_path(run_dir / FIDELITY_CLAIMS_CSV) as tmp:
        ledger.claims.to_csv(tmp, index=False)
    with atomic_path(run_dir / FIDELITY_EFFECTS_CSV) as tmp:
        ledger.effects.to_csv(tmp, index=False)
    if ledger.published is not None:
        with atomic_path(run_dir / FIDELITY_PUBLISHED_CSV) as tmp:
            ledger.published.to_csv(tmp, index=False)
    section = ledger_html(ledger)
    atomic_write_text(run_dir / LEDGER_SECTION, section)
    atomic_write_text(run_dir / FIDELITY_HTML,
                      html_page(f"Fidelity ledger: run {ledger.provenance.get('run_id', '')}", section))
    return atomic_write_text(run_dir / FIDELITY_MD, _markdown(ledger))
