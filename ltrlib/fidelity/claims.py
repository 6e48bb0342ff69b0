"""What a paper's claim is, how it is decided, and how large our effect is beside the paper's.

A `Claim` is one statement of a paper and a check that decides it on a run's tables: a list
of `Finding`s, one per scope (a table, a split, a ranker), each holding, not holding, or not
available (a number it needs is missing), with its evidence in words. The same check runs
on the paper's printed numbers where the paper prints them, so a claim's encoding can be
seen to hold on the paper before it is read on the run; where the paper only states the
finding (a figure, the text), the claim names where.

Comparative claims ("A beats B") also carry an `Effect`: the mean improvement of A over B
over the claim's units (test sets, splits, click models, datasets), and B's mean. Beside
the paper's effect, they give the two measures IR uses for a reproduction on other data
(Breuer et al., "How to Measure the Reproducibility of System-oriented IR Experiments",
SIGIR 2020, §3.2): the **Effect Ratio** (`effect_ratio`), ours over the paper's mean
improvement, where 1 is the same effect, 0 none and below 0 a reversed one; and **ΔRI**
(`delta_ri`), the paper's relative improvement minus ours. Breuer et al. average per-topic
improvements; our units are the claim's cells, whose per-topic scores the papers do not
publish. The ``repro_eval`` package computes these measures from two pairs of TREC run
files, which the papers do not publish either, so they are computed here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CLAIM_COLUMNS", "VERDICTS", "Claim", "Effect", "Finding", "Section", "decide", "delta_ri", "effect_ratio",
           "fmt"]

#: A check's outcome in the reports' words.
VERDICTS = {True: "holds", False: "does not hold", None: "not available"}

#: The columns of every paper's claim table (`decide`), in ``fidelity_claims.csv``'s order:
#: ``source`` is the paper (`ltrlib.fidelity.ledger.PAPERS`), ``ours`` and ``paper`` the
#: verdicts on this run and on the paper's printed numbers.
CLAIM_COLUMNS = ["source", "claim", "statement", "scope", "ours", "paper", "evidence", "paper_evidence",
                 "effect_ratio", "delta_ri"]


@dataclass(frozen=True)
class Effect:
    """How much better A is than B over a claim's units: the mean of A − B, and B's mean."""

    improvement: float
    baseline: float

    @classmethod
    def of(cls, better: Sequence[float], worse: Sequence[float]) -> Effect:
        """From paired values of A (``better``) and B (``worse``), one pair per unit."""
        a, b = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
        if a.shape != b.shape or a.size == 0:
            raise ValueError(f"Effect.of needs as many values of A as of B (at least one), got {a.size} and {b.size}")
        return cls(float(np.mean(a - b)), float(np.mean(b)))

    @property
    def relative(self) -> float:
        """The relative improvement RI = (mean A − mean B) / mean B."""
        return self.improvement / self.baseline if self.baseline else math.nan


def effect_ratio(ours: Effect | None, paper: Effect | None) -> float:
    """Breuer et al.'s Effect Ratio: our mean improvement over the paper's (NaN without both,
    or when the paper's is 0)."""
    if ours is None or paper is None or not paper.improvement:
        return math.nan
    return ours.improvement / paper.improvement


def delta_ri(ours: Effect | None, paper: Effect | None) -> float:
    """Breuer et al.'s ΔRI: the paper's relative improvement minus ours (NaN without both)."""
    if ours is None or paper is None:
        return math.nan
    return paper.relative - ours.relative


@dataclass(frozen=True)
class Finding:
    """A claim decided in one scope: ``holds`` True, False or None (not available)."""

    scope: str
    holds: bool | None
    evidence: str
    effect: Effect | None = None


@dataclass(frozen=True)
class Claim:
    """One statement of a paper and how a run's numbers decide it.

    ``check(numbers)`` returns the `Finding`s; ``numbers`` is whatever the paper's module
    reads a run into. ``on_paper``, when given, decides the claim on the paper's printed
    numbers instead of running ``check`` on them; ``stated`` says where the paper states a
    finding it prints no numbers for (then the paper's verdict is "holds")."""

    name: str
    statement: str
    check: Callable[[Any], list[Finding]]
    on_paper: Callable[[], list[Finding]] | None = None
    stated: str = ""


def fmt(v: float, digits: int = 3) -> str:
    """A number for evidence text: "n/a" when missing."""
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def decide(source: str, claims: Iterable[Claim], ours: Any, paper: Any = None) -> list[dict]:
    """Rows of `CLAIM_COLUMNS` for every claim: its findings on ``ours`` and, scope by
    scope, on the paper (``claim.on_paper()``, else ``check(paper)`` when ``paper`` is given,
    else the place the paper states it). A scope the paper lacks is "not available" there."""
    rows = []
    for c in claims:
        if c.on_paper is not None:
            theirs = c.on_paper()
        elif paper is not None:
            theirs = c.check(paper)
        else:
            theirs = []
        by_scope = {f.scope: f for f in theirs}
        for f in c.check(ours):
            p = by_scope.get(f.scope)
            if p is None and len(theirs) == 1:
                p = theirs[0]  # one paper-wide finding stands for every scope of ours
            if p is not None:
                verdict, said = VERDICTS[p.holds], p.evidence
            elif c.stated:
                verdict, said = "holds", f"stated: {c.stated}"
            else:
                verdict, said = VERDICTS[None], ""
            effect = p.effect if p is not None else None
            rows.append({"source": source, "claim": c.name, "statement": c.statement, "scope": f.scope,
                         "ours": VERDICTS[f.holds], "paper": verdict, "evidence": f.evidence,
                         "paper_evidence": said, "effect_ratio": effect_ratio(f.effect, effect),
                         "delta_ri": delta_ri(f.effect, effect)})
    return rows


@dataclass
class Section:
    """One paper's part of the ledger (`ltrlib.fidelity.ledger`): its claims (rows of
    `CLAIM_COLUMNS`), a word on what they are decided on, the tables it needed and did not
    find, Markdown that follows the claims, and the paper's printed numbers beside ours
    where it compares them."""

    source: str
    claims: pd.DataFrame
    #: What the section's reader needs first: what the claims are decided on.
    intro: str = ""
    missing: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    numbers: pd.DataFrame | None = None
    #: On a run declared one of the paper's datasets: its printed numbers beside ours
    #: (``table, model, metric, paper, ours, diff``; `ltrlib.fidelity.datasets`).
    published: pd.DataFrame | None = None
