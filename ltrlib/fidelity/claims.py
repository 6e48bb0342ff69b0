"""What a source's claim is, how it is decided, and how large our effect is beside the source's.

A `Claim` is one statement of a source (a paper, or the XGBoost notes) and a check that
decides it on a run's tables: a list of `Finding`s, one per scope (a table, a split, a
ranker). A finding holds, does not hold, is **not decided** (the check ran, but its test had
too few units to say anything, or the models' budgets were not equal: the evidence says
which), or is **not available** (a number it needs is missing). The same check runs on the
source's printed numbers where the source prints them, so a claim's encoding can be seen to
hold on the source before it is read on the run; where the source only states the finding
(a figure, the text), the claim names where.

Every claim says what it reads and how (`Claim.place`, `Claim.quote`, `Claim.test`,
`Claim.threshold`): the source's sentence and its place, the comparison and the test, and
where a threshold comes from, the source's own or ours with the reason. A claim's `kind`
keeps what is not the source's finding out of its tally: a **note** on the source's own
numbers (a consistency remark), an **exact** check of our code against a number the source
derives (arithmetic, not a finding), a **control** of ours. A scope the source did not run
(the neural ranker where a paper ran the linear one only) is a finding `beyond` the source:
reported, never counted as the source's.

Comparative findings carry their `Comparison`s, each one cell against one baseline on one
dataset, and for each the two measures IR uses for a reproduction on other data (Breuer et
al., "How to Measure the Reproducibility of System-oriented IR Experiments", SIGIR 2020,
§3.2): the **Effect Ratio** (`effect_ratio`), our improvement over the source's (1: the same
effect, 0: none, below 0: reversed), and **ΔRI** (`delta_ri`), the source's relative
improvement minus ours. Breuer et al. average per-topic improvements; a paper's per-topic
scores are not published, so our unit is the cell, and each ratio is one cell's: never
pooled over cells, baselines or datasets. A ratio whose source effect is below
`UNSTABLE_BELOW` is "unstable" (`stability`), not a number to read. Breuer et al. give no
band of "reproduced" ratios, and neither does the ledger.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ACROSS_RULES", "CLAIM_COLUMNS", "EFFECT_COLUMNS", "KINDS", "MIN_PAIRS", "NOT_DECIDED", "UNSTABLE_BELOW",
           "VERDICTS", "Claim", "Comparison", "Effect", "Finding", "Section", "claim_frames", "decide", "delta_ri",
           "effect_ratio", "effect_rows", "number_or_na", "under_correction", "verdict"]

#: A check's outcome in the reports' words.
VERDICTS = {True: "holds", False: "does not hold", None: "not available"}
NOT_DECIDED = "not decided"

#: What a claim is (`Claim.kind`): the source's finding (counted in its tally) or one of the
#: three things that are not (reported in sections of their own).
KINDS = {"claim": "the source's claims", "note": "notes on the source's own numbers",
         "exact": "exact checks of our code against the source", "control": "our controls"}

#: How a claim is decided across seeds (`Claim.across`; `ltrlib.fidelity.across`, whose
#: `RULE` states each in full): ``effect``, every comparison's per-seed improvement is above 0
#: (the claim's comparisons point its way); ``no difference`` / ``no gain``, no comparison's
#: per-seed difference differs from 0 / is above 0; ``verdicts``, the per-seed verdicts agree.
ACROSS_RULES = ("effect", "no difference", "no gain", "verdicts")

#: The fewest paired units (runs, seeds, datasets) a test across them may decide on (ours).
#: With 2 pairs a paired t-test has one degree of freedom (critical t 12.7 at 0.05): "no
#: significant difference" then holds through lack of power alone. At 5 pairs the critical t
#: is 2.78, the smallest number of units at which the FOLTR paper's 5 runs per cell decide.
MIN_PAIRS = 5

#: The Effect Ratio of a comparison whose source effect is smaller than this (absolute, in
#: the metric's units) is "unstable" (ours). The seed-to-seed spread of a difference between
#: two tuned tree models on the twin is about 0.004 NDCG (sd of Bi-λMART − λMART* over the
#: confirmatory study's 10 seeds: 0.58 % of 0.74): a source effect below 0.005 makes the
#: ratio's noise as large as the ratio.
UNSTABLE_BELOW = 0.005

#: The columns of every source's claim table (`decide`), in ``fidelity_claims.csv``'s order:
#: ``source`` is the paper (`ltrlib.fidelity.ledger.PAPERS`), ``kind`` one of `KINDS`,
#: ``beyond`` True for a scope the source did not run, ``ours`` and ``paper`` the verdicts on
#: this run and on the source's printed numbers, ``place``/``quote``/``test``/``threshold`` how the
#: claim reads its source.
CLAIM_COLUMNS = ["source", "claim", "kind", "statement", "scope", "beyond", "ours", "paper", "evidence",
                 "paper_evidence", "place", "quote", "test", "threshold"]

#: The columns of the per-comparison effect table (`decide`, ``fidelity_effects.csv``):
#: one row per comparison of ours and dataset of the source's. ``ours_se`` and ``ours_units``:
#: our improvement's standard error and the paired units it is the mean of (`Effect.se`,
#: NaN and 1 for two means); ``horizon``: the rounds an online sum runs over (`Comparison.horizon`).
EFFECT_COLUMNS = ["source", "claim", "scope", "comparison", "dataset", "ours_improvement", "ours_baseline",
                  "paper_improvement", "paper_baseline", "effect_ratio", "delta_ri", "stability", "ours_se",
                  "ours_units", "horizon"]


@dataclass(frozen=True)
class Effect:
    """How much better A is than B over a comparison's units: the mean of A − B, and B's mean."""

    improvement: float
    baseline: float
    #: The standard error of ``improvement`` over its units (the sd of A − B over √units),
    #: NaN for one number against another (a table's two means): what a test of the seeds'
    #: effects for heterogeneity weighs each seed by (`ltrlib.fidelity.across`, rule v2).
    se: float = math.nan
    #: How many paired units ``improvement`` is the mean of (1 for two numbers).
    units: int = 1

    @classmethod
    def of(cls, better: Sequence[float], worse: Sequence[float]) -> Effect:
        """From paired values of A (``better``) and B (``worse``), one pair per unit."""
        a, b = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
        if a.shape != b.shape or a.size == 0:
            raise ValueError(f"Effect.of needs as many values of A as of B (at least one), got {a.size} and {b.size}")
        d = (a - b).ravel()
        se = float(np.std(d, ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan
        return cls(float(np.mean(d)), float(np.mean(b)), se, int(d.size))

    @property
    def relative(self) -> float:
        """The relative improvement RI = (mean A − mean B) / mean B."""
        return self.improvement / self.baseline if self.baseline else math.nan


@dataclass(frozen=True)
class Comparison:
    """One cell against one baseline (``label``, e.g. ``"Split1 M12α vs M1"``) on one dataset:
    the unit an Effect Ratio is computed over. The source's side of a claim names its
    comparisons as ours does, so the two meet by ``label``; ``dataset`` names the source's
    dataset where it prints several."""

    label: str
    effect: Effect
    dataset: str = ""
    #: The rounds its values sum over (the FOLTR paper's cumulative online NDCG), 0 for
    #: values that are no sum over rounds. Sums over different horizons are different
    #: quantities: their Effect Ratio is "not comparable" (`_stability`).
    horizon: int = 0

    @classmethod
    def of(cls, label: str, better: float | Sequence[float], worse: float | Sequence[float],
           dataset: str = "") -> Comparison | None:
        """A comparison of ``better`` over ``worse`` (numbers, or paired values over units);
        None when a value is missing (NaN)."""
        a, b = np.atleast_1d(np.asarray(better, dtype=float)), np.atleast_1d(np.asarray(worse, dtype=float))
        if np.isnan(a).any() or np.isnan(b).any():
            return None
        return cls(label, Effect.of(a, b), dataset)


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
    """A claim decided in one scope: ``holds`` True, False or None (not available, or not
    decided when ``not_decided``: the evidence says why). ``beyond``: the source did not run
    this scope. ``comparisons``: the cells behind the verdict, each with its effect."""

    scope: str
    holds: bool | None
    evidence: str
    comparisons: tuple[Comparison | None, ...] = ()
    beyond: bool = False
    not_decided: bool = False
    #: The p-value of the one test that decides it, where one does (NaN otherwise): what a
    #: correction over a paper's tests reads (`under_correction`).
    p: float = math.nan

    def __post_init__(self):
        if self.not_decided and self.holds is not None:
            raise ValueError(f"finding {self.scope!r}: a finding that is not decided neither holds nor fails")
        # A comparison whose numbers were missing (Comparison.of gave None) is left out.
        object.__setattr__(self, "comparisons", tuple(c for c in self.comparisons if c is not None))

    @classmethod
    def undecided(cls, scope: str, why: str, comparisons: Iterable[Comparison | None] = (),
                  beyond: bool = False) -> Finding:
        """A check that ran but decides nothing (``why``: too few pairs, unequal budgets)."""
        return cls(scope, None, why, tuple(comparisons), beyond, not_decided=True)


def verdict(f: Finding) -> str:
    """A finding's verdict in the reports' words (`VERDICTS`, or "not decided")."""
    return NOT_DECIDED if f.not_decided else VERDICTS[f.holds]


@dataclass(frozen=True)
class Claim:
    """One statement of a source and how a run's numbers decide it.

    ``check(numbers)`` returns the `Finding`s; ``numbers`` is whatever the source's module
    reads a run into. ``on_paper``, when given, decides the claim on the source's printed
    numbers instead of running ``check`` on them; ``stated`` says where the source states a
    finding it prints no numbers for (then the source's verdict is "holds").

    How the claim reads its source, each required: ``place`` (section, table or figure),
    ``quote`` (the source's sentence, shortened with "..." only), ``test`` (the comparison
    and test, and whose choice each is) and ``threshold`` (the level or margin and where it
    comes from: the source's, or "ours" with the reason; "none: a direction" where the
    claim is one). ``kind``: one of `KINDS`. ``across``: how it is decided across seeds, one
    of `ACROSS_RULES` (an ``effect`` claim's comparisons each name A vs B where it says A is
    better)."""

    name: str
    statement: str
    check: Callable[[Any], list[Finding]]
    on_paper: Callable[[], list[Finding]] | None = None
    stated: str = ""
    place: str = ""
    quote: str = ""
    test: str = ""
    threshold: str = ""
    kind: str = "claim"
    across: str = "verdicts"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.name!r}: kind {self.kind!r} is not one of {list(KINDS)}")
        if self.across not in ACROSS_RULES:
            raise ValueError(f"claim {self.name!r}: across {self.across!r} is not one of {list(ACROSS_RULES)}")
        lacking = [f for f in ("place", "quote", "test", "threshold") if not getattr(self, f).strip()]
        if lacking:
            raise ValueError(f"claim {self.name!r} does not say its {', '.join(lacking)}: every check names "
                             "its source's sentence and place, its test and where its threshold comes from")


def number_or_na(v: float | None, digits: int = 3) -> str:
    """A number for evidence text: "n/a" when missing."""
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _stability(ours: Comparison, theirs: Comparison | None) -> str:
    if theirs is None:
        return "no source number"
    if ours.horizon != theirs.horizon:
        return f"not comparable: T = {ours.horizon:,} against {theirs.horizon:,}"
    if abs(theirs.effect.improvement) < UNSTABLE_BELOW:
        return f"unstable: the source's effect {theirs.effect.improvement:+.4f} is below {UNSTABLE_BELOW}"
    return "stable"


def _effect_rows(source: str, claim: str, scope: str, ours: Finding, paper: Finding | None) -> list[dict]:
    """One row per comparison of ours and dataset of the source's with the same label."""
    rows = []
    theirs = [] if paper is None else list(paper.comparisons)
    for c in ours.comparisons:
        matched = [p for p in theirs if p.label == c.label] or [None]
        for p in matched:
            pe = None if p is None else p.effect
            stability = _stability(c, p)
            rows.append({"source": source, "claim": claim, "scope": scope, "comparison": c.label,
                         "dataset": "" if p is None else p.dataset,
                         "ours_improvement": c.effect.improvement, "ours_baseline": c.effect.baseline,
                         "paper_improvement": math.nan if pe is None else pe.improvement,
                         "paper_baseline": math.nan if pe is None else pe.baseline,
                         "effect_ratio": effect_ratio(c.effect, pe) if stability == "stable" else math.nan,
                         "delta_ri": delta_ri(c.effect, pe), "stability": stability, "ours_se": c.effect.se,
                         "ours_units": c.effect.units, "horizon": c.horizon})
    return rows


def decide(source: str, claims: Iterable[Claim], ours: Any, paper: Any = None) -> tuple[list[dict], list[dict]]:
    """Rows of `CLAIM_COLUMNS` for every claim, with its findings on ``ours`` and, scope by
    scope, on the source (``claim.on_paper()``, else ``check(paper)`` when ``paper`` is
    given, else the place the source states it), and rows of `EFFECT_COLUMNS` for their
    comparisons. A scope the source lacks is "not available" there; one it did not run
    (``beyond``) says so."""
    rows, effects = [], []
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
                p = theirs[0]  # one source-wide finding stands for every scope of ours
            if f.beyond:
                said, p = "beyond the source: it did not run this scope", None
                theirs_verdict = "not run"
            elif p is not None:
                theirs_verdict, said = verdict(p), p.evidence
            elif c.stated:
                theirs_verdict, said = "holds", f"stated: {c.stated}"
            else:
                theirs_verdict, said = VERDICTS[None], ""
            rows.append({"source": source, "claim": c.name, "kind": c.kind, "statement": c.statement,
                         "scope": f.scope, "beyond": f.beyond, "ours": verdict(f), "paper": theirs_verdict,
                         "evidence": f.evidence, "paper_evidence": said, "place": c.place, "quote": c.quote,
                         "test": c.test, "threshold": c.threshold})
            effects += _effect_rows(source, c.name, f.scope, f, p)
    return rows, effects


def claim_frames(source: str, claims: Iterable[Claim], ours: Any, paper: Any = None) -> tuple[pd.DataFrame,
                                                                                               pd.DataFrame]:
    """`decide` as two frames: the claim rows (`CLAIM_COLUMNS`) and the effects (`EFFECT_COLUMNS`)."""
    rows, effects = decide(source, claims, ours, paper)
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS), pd.DataFrame(effects, columns=EFFECT_COLUMNS)


def under_correction(claims: pd.DataFrame, again: pd.DataFrame, what: str) -> list[str]:
    """Markdown lines: the checks of ``claims`` whose verdict on ``again`` (the same claims
    decided with marks from corrected p-values) differs, or a line saying none does. A check
    ``claims`` did not decide (not decided, not available) is left as it is."""
    from ltrlib.report import table_to_markdown

    keys = ["claim", "scope"]
    decided = claims[claims.ours.isin([VERDICTS[True], VERDICTS[False]])]
    both = decided[keys + ["ours"]].merge(again[keys + ["ours"]].rename(columns={"ours": f"under {what}"}), on=keys)
    changed = both[both.ours != both[f"under {what}"]]
    if changed.empty:
        return [f"No verdict changes under {what}.", ""]
    return [table_to_markdown(changed), ""]


def effect_rows(frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """Effect tables concatenated, in `EFFECT_COLUMNS` (empty when there are none)."""
    found = [f for f in frames if f is not None and not f.empty]
    return pd.concat(found, ignore_index=True)[EFFECT_COLUMNS] if found else pd.DataFrame(columns=EFFECT_COLUMNS)


@dataclass
class Section:
    """One source's part of the ledger (`ltrlib.fidelity.ledger`): its claims (rows of
    `CLAIM_COLUMNS`) and their effects (`EFFECT_COLUMNS`), a word on what they are decided
    on, the tables it needed and did not find, Markdown that follows the claims, and the
    paper's printed numbers beside ours where it compares them."""

    source: str
    claims: pd.DataFrame
    effects: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=EFFECT_COLUMNS))
    #: What the section's reader needs first: what the claims are decided on.
    intro: str = ""
    missing: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    numbers: pd.DataFrame | None = None
    #: On a run declared one of the paper's datasets: its printed numbers beside ours
    #: (``table, model, metric, paper, ours, diff``; `ltrlib.fidelity.datasets`).
    published: pd.DataFrame | None = None
