"""The fidelity ledger of a run: ``fidelity.md``, ``fidelity_claims.csv`` and ``fidelity.csv``.

One section per paper whose notebooks the run executed (`PAPERS`), each with its claims
decided on the run's tables and on the paper's printed numbers, and a head table that
counts, per paper, the checks that hold, do not hold or are not available, beside the
data, scale and seed, and the median Effect Ratio of its comparative checks. A check is
one claim in one scope (a table, a split, a ranker).

Outputs in the run directory, written atomically (the runner calls `write_fidelity` after
the notebooks; ``ltrlib fidelity RUN_DIR`` rebuilds them):

* ``fidelity_claims.csv``: every check of every paper (`ltrlib.fidelity.claims.CLAIM_COLUMNS`);
* ``fidelity.csv``: the non-IID paper's printed numbers beside ours (`ltrlib.fidelity.noniid`);
* ``fidelity.md``: provenance, the head table, then the sections.

`across_runs` follows every check over runs that differ in their seed only (``ltrlib
fidelity RUN RUN ...``): its verdict per seed, how many seeds it holds in, and the Effect
Ratio's mean with a 95 % interval over the seeds. A claim decided on one seed is not decided.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ltrlib import provenance as run_provenance
from ltrlib.atomic import atomic_path, atomic_write_text
from ltrlib.fidelity import bilambdamart, foltr, noniid, xgboost_tutorial
from ltrlib.fidelity.claims import CLAIM_COLUMNS, Section
from ltrlib.fidelity.sources import one_setup_at_several_seeds
from ltrlib.report import RUN_MANIFEST, table_to_markdown

__all__ = ["FIDELITY_CLAIMS_CSV", "FIDELITY_CSV", "FIDELITY_MD", "FIDELITY_PUBLISHED_CSV", "PAPERS", "Ledger", "Paper",
           "across_runs", "executed_papers", "fidelity_report", "summary_table", "write_fidelity"]

FIDELITY_MD = "fidelity.md"
FIDELITY_CSV = "fidelity.csv"
FIDELITY_CLAIMS_CSV = "fidelity_claims.csv"
FIDELITY_PUBLISHED_CSV = "fidelity_published.csv"
#: An Effect Ratio in this range counts as the paper's effect reproduced in size.
ER_RANGE = (0.5, 2.0)


@dataclass(frozen=True)
class Paper:
    """A paper the ledger follows: its title, the notebooks that reproduce it, and the
    function that builds its section from a run directory and its provenance."""

    title: str
    notebooks: tuple[str, ...]
    section: Callable[[Path, dict[str, Any]], Section]


PAPERS: dict[str, Paper] = {
    # Notebooks 00-02 describe the data the paper's Istella-S statistics calibrate the twin on.
    noniid.SOURCE: Paper("Learning to Rank for Non-IID Datasets", ("00_dataset_overview", "01_category_analysis",
                                                                    "02_split_stats", "03_client_models",
                                                                    "04_linear_merge", "05_stacking"),
                         noniid.section),
    bilambdamart.SOURCE: Paper("Learning bivariate scoring functions for ranking (Bi-LambdaMART)",
                               ("06_bilambdamart", "06_neural_competitors"), bilambdamart.section),
    foltr.SOURCE: Paper("Is Non-IID Data a Threat in Federated Online Learning to Rank?", ("07_foltr_noniid",),
                        foltr.section),
    xgboost_tutorial.SOURCE: Paper("XGBoost's learning-to-rank tutorial", ("08_xgboost_backends",),
                                   xgboost_tutorial.section),
}


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


def _manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _provenance(run_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    held = run_provenance.read_run(run_dir)  # written by the notebooks: the data fingerprint
    data = {"data fingerprint": held["fingerprint"]} if held else {}
    if not manifest:
        return {"run_id": run_dir.name, **data}
    out = {"run_id": manifest.get("run_id", run_dir.name), **manifest.get("params", {}), **data,
           "ltrlib_version": manifest.get("ltrlib_version"), "created": manifest.get("created")}
    if manifest.get("paper_dataset_queries"):  # what the declaration was checked against
        out["paper_dataset_queries"] = manifest["paper_dataset_queries"]
    for name, entry in manifest.get("notebooks", {}).items():
        out[f"{name} status"] = entry.get("status")
        if "n_trials" in (entry.get("parameters") or {}):
            out[f"{name} n_trials"] = entry["parameters"]["n_trials"]
    return out


def executed_papers(run_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """The papers whose notebooks the run executed (an entry in ``run.json``, or, for a
    folder without one, tables on disk), in `PAPERS`' order."""
    ran = set(manifest.get("notebooks", {}))
    ran |= {p.name for p in (run_dir / "tables").glob("*") if p.is_dir()}
    return [key for key, paper in PAPERS.items() if ran & set(paper.notebooks)]


def fidelity_report(run_dir: str | os.PathLike) -> Ledger:
    """Read a run directory's tables and build the ledger (nothing is written)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run directory {run_dir} does not exist")
    manifest = _manifest(run_dir)
    prov = _provenance(run_dir, manifest)
    return Ledger(prov, [PAPERS[key].section(run_dir, prov) for key in executed_papers(run_dir, manifest)])


def summary_table(ledger: Ledger) -> pd.DataFrame:
    """The ledger's head: per paper, the checks that hold, do not hold and are not
    available, the data, scale and seed, and the Effect Ratios of its comparative checks
    (their median, and how many lie in `ER_RANGE`)."""
    prov = ledger.provenance
    rows = []
    for s in ledger.sections:
        c = s.claims
        er = c.effect_ratio.astype(float).dropna() if not c.empty else pd.Series(dtype=float)
        paper = PAPERS[s.source]
        rows.append({"paper": paper.title, "notebooks": ", ".join(nb[:2] for nb in paper.notebooks),
                     "data": prov.get("dataset", ""), "scale": prov.get("scale", ""), "seed": prov.get("seed", ""),
                     "holds": int((c.ours == "holds").sum()), "does not hold": int((c.ours == "does not hold").sum()),
                     "not available": int((c.ours == "not available").sum()),
                     "median effect ratio": float(er.median()) if len(er) else math.nan,
                     "effect ratios in [0.5, 2]": f"{int(er.between(*ER_RANGE).sum())} of {len(er)}"})
    return pd.DataFrame(rows)


def _fmt(v: Any) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"


def _section_markdown(s: Section) -> list[str]:
    paper = PAPERS[s.source]
    c = s.claims
    lines = [f"## {paper.title}", "", f"Notebooks {', '.join(paper.notebooks)}.", ""]
    if s.intro:
        lines += [s.intro, ""]
    if s.missing:
        lines += ["Not in this run (their claims are `not available`): " + ", ".join(f"`{m}`" for m in s.missing)
                  + ".", ""]
    lines += [f"- `{r.claim}`: {r.statement}" for r in c.drop_duplicates("claim").itertuples()] + [""]
    shown = c.assign(effect_ratio=c.effect_ratio.map(_fmt), delta_ri=c.delta_ri.map(_fmt))
    lines += [table_to_markdown(shown[["claim", "scope", "ours", "paper", "effect_ratio", "delta_ri", "evidence"]]), ""]
    return lines + s.lines


def _markdown(ledger: Ledger) -> str:
    prov = ledger.provenance
    lines = [f"# Fidelity ledger: run {prov.get('run_id', '')}", "",
             "Claim by claim, whether each paper's findings hold on this run's data, with the evidence beside "
             "the paper's. Nothing is tuned to make a claim hold. `ours`: the verdict on this run; `paper`: on "
             "the paper's printed numbers (or where the paper states it). For comparative claims, the Effect "
             "Ratio is our mean improvement over the paper's (1: the same effect, 0: none, below 0: reversed) "
             "and ΔRI the paper's relative improvement minus ours (Breuer et al., SIGIR 2020).", "",
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
        head["median effect ratio"] = head["median effect ratio"].map(_fmt)
        lines += ["Counts are checks: a claim in one scope.", "", table_to_markdown(head), ""]
    lines += ["Files: [fidelity_claims.csv](fidelity_claims.csv) (every check)"
              + (", [fidelity.csv](fidelity.csv) (every number of the non-IID paper)" if ledger.numbers is not None
                 else "") + ".", ""]
    for s in ledger.sections:
        lines += _section_markdown(s)
    return "\n".join(lines)


def write_fidelity(run_dir: str | os.PathLike) -> Path:
    """Write ``fidelity.md``, ``fidelity_claims.csv`` and, when the non-IID paper's section
    is there, ``fidelity.csv`` into ``run_dir`` from the tables on disk; return the Markdown
    path. Works on a partial run."""
    run_dir = Path(run_dir)
    ledger = fidelity_report(run_dir)
    if ledger.numbers is not None:
        with atomic_path(run_dir / FIDELITY_CSV) as tmp:
            ledger.numbers.to_csv(tmp, index=False)
    with atomic_path(run_dir / FIDELITY_CLAIMS_CSV) as tmp:
        ledger.claims.to_csv(tmp, index=False)
    if ledger.published is not None:
        with atomic_path(run_dir / FIDELITY_PUBLISHED_CSV) as tmp:
            ledger.published.to_csv(tmp, index=False)
    return atomic_write_text(run_dir / FIDELITY_MD, _markdown(ledger))


def across_runs(run_dirs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every check over runs that differ in their seed only (`one_setup_at_several_seeds`).

    Returns ``(per_run, summary)``. ``per_run``: every run's claim rows (`CLAIM_COLUMNS`)
    with its ``seed``. ``summary``, one row per check (``source, claim, scope``): ``seeds``,
    how many it ``holds`` in, ``does not hold`` in and is ``not available`` in, and for a
    comparative check the Effect Ratio's mean over the seeds with a 95 % t-interval
    (``effect_ratio_low``, ``effect_ratio_high``; NaN with fewer than two seeds that have one).
    """
    from scipy import stats

    dirs = [Path(d) for d in run_dirs]
    seeds = one_setup_at_several_seeds(dirs)
    per_run = pd.concat([fidelity_report(d).claims.assign(seed=seed) for seed, d in zip(seeds, dirs)],
                        ignore_index=True)
    rows = []
    for (source, claim, scope), g in per_run.groupby(["source", "claim", "scope"], sort=False):
        er = g.effect_ratio.astype(float).dropna().to_numpy()
        low = high = math.nan
        if len(er) >= 2:
            half = stats.t.ppf(0.975, len(er) - 1) * er.std(ddof=1) / math.sqrt(len(er))
            low, high = er.mean() - half, er.mean() + half
        rows.append({"source": source, "claim": claim, "scope": scope, "seeds": len(g),
                     "holds": int((g.ours == "holds").sum()), "does not hold": int((g.ours == "does not hold").sum()),
                     "not available": int((g.ours == "not available").sum()),
                     "effect_ratio_mean": er.mean() if len(er) else math.nan,
                     "effect_ratio_low": low, "effect_ratio_high": high})
    return per_run, pd.DataFrame(rows)
