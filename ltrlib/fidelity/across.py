"""Every check of the ledger decided across seeds, by a rule written before the runs.

One run is one seed, and one seed decides nothing (`ltrlib.fidelity.ledger.ONE_SEED`). A
multi-seed study (``ltrlib study ledger``) or ``ltrlib fidelity RUN RUN ...`` gives, for
every check (a claim in one scope), its verdict at each seed and one verdict across the
seeds by a named version of the rule (`RULES`): a study's design names the version it was
registered with, and is decided by it. **v1** (`RULE`) decided ``reports/ledger-small``;
**v2** (`RULE_V2`, below) is a new study's. v1, chosen per claim by its `Claim.across`
(`ltrlib.fidelity.claims.ACROSS_RULES`):

* ``effect``: the claim says A is better than B in each of its comparisons. Across seeds,
  each comparison's per-seed improvement (A − B in the claim's metric) is tested against 0,
  one-sided (a one-sample t-test over the seeds). The check's p is the largest of its
  comparisons' (an intersection-union test: the claim needs them all). Holm's step-down
  corrects these p over the paper's checks decided by this rule, one family for the
  paper's tally and one for the rest (notes, controls, scopes beyond it).
* ``no difference`` / ``no gain``: the claim says A and B do not differ (do not differ
  upwards). Each comparison's per-seed difference is tested against 0, two-sided (one-sided
  upwards); a difference at p < 0.05 in any comparison is "does not hold", uncorrected: a
  correction would make "no difference" easier to conclude. Otherwise the claim "holds" as
  *no evidence of a difference*, stated with the difference the test had 80 % power to see.
  The sources name no margin for these claims, so no equivalence is claimed.
* ``verdicts``: a claim with no per-seed effect to test (an order of several means, a rank,
  a count of cells) holds when it holds at every decided seed, and fails when it fails at
  every one: a sign test, whose chance of "holds" at 5 seeds when a check holds at most
  half the time is 1/32. No correction over claims: a sign test at 5 seeds cannot pass any
  (Holm over 18 claims would need p < 0.003); the head table says how many such verdicts a
  paper has, so the reader can weigh them.

A seed where the check is "not decided" because the models' budgets differed
(`ltrlib.fidelity.bilambdamart.BUDGET`) gives it no effect: the budget gate holds across
seeds too. Fewer than `MIN_SEEDS` usable seeds decide nothing. The verdicts are those of one
run plus **seed-dependent**: neither rule met, and the seeds' verdicts split.

**v2** (issue 62) keeps the seeds' means as the units and changes what a verdict needs:

* ``effect``: as v1's test (one-sided t over the seeds, intersection-union, Holm), without
  the seeds' votes: does not hold when a comparison's mean is below 0 at one-sided p < 0.05.
* ``no difference``: equivalence, TOST over the seeds (`statsmodels`' ``ttost_mean``) within
  ± a margin (`margin_of`: the source's number where it gives one, `MARGINS`; otherwise our
  floor, `FLOOR`); holds only when equivalence is shown, does not hold when a difference
  beyond the margin is shown (one-sided, uncorrected), else not decided, with the interval.
* ``no gain``: non-inferiority's mirror: holds when the gain is shown below the margin, does
  not hold when a gain beyond it is shown.
* Holm corrects the p of "holds" over each paper's checks decided by a test (all three
  kinds), one family for its tally and one for the rest.
* A check no test decides **depends on the seed** only when its seeds' effects are shown
  heterogeneous (Cochran's Q over the per-seed effects weighted by their within-seed
  standard errors, `Effect.se`, Holm over the check's comparisons). Otherwise it is **not
  decided: more seeds needed**, with the seeds a test at the observed mean and spread would
  need (80 % power, 0.05, before correction), and says why Q could not be computed where it
  could not (a comparison of two means has no within-seed SE).
* ``verdicts``: the sign test as v1, but a split of verdicts is no evidence of dependence on
  the seed: "not decided".
* A claim whose seeds each had too few runs to decide is decided on its seeds' means by the
  rule of its kind (`READINGS_V2`), the mean of each seed's runs being one unit.

Every choice here is ours (the sources ran one seed per number), except a margin the source
gives; `RULE` and `RULE_V2` state them and `docs/fidelity.md` repeats them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dataclasses import dataclass

from ltrlib.fidelity.bilambdamart import BUDGET
from ltrlib.fidelity.claims import MIN_PAIRS, NOT_DECIDED, UNSTABLE_BELOW, VERDICTS
from ltrlib.fidelity.foltr import MINIMAL as GAP_MINIMAL
from ltrlib.fidelity.ledger import PAPERS, fidelity_report
from ltrlib.fidelity.sources import one_setup_at_several_seeds
from ltrlib.foltr.federated import discount_sum

__all__ = ["ACROSS_COLUMNS", "ACROSS_COLUMNS_V2", "ALPHA", "DEFAULT_RULE", "FLOOR", "MARGINS", "MIN_SEEDS", "POWER",
           "READINGS_V2", "REASONS_V2", "RULE", "RULES", "RULE_V2", "SEED_DEPENDENT", "Margin", "across_columns",
           "across_runs", "comparison_tests", "decide_across", "design_terms", "effect_ratio_intervals", "margin_of",
           "rule_of", "rule_version"]

#: The fewest seeds a verdict across seeds is decided on (ours: the issue's five; at 5 seeds
#: the one-sided critical t is 2.13 and a unanimous sign test's p is 1/32).
MIN_SEEDS = 5
#: The level of every test across seeds (ours: the conventional one).
ALPHA = 0.05
#: The power at which a "no difference" verdict states the difference it could see (ours).
POWER = 0.8
SEED_DEPENDENT = "seed-dependent"

#: The rule, as `study.md` and docs/fidelity.md print it, one sentence per `Claim.across`.
RULE = {
    "effect": (f"each comparison's per-seed improvement has a mean above 0 by a one-sided one-sample t-test "
               f"over the seeds; the check's p is its comparisons' largest (intersection-union), Holm-corrected "
               f"over the paper's checks of this rule; holds at p < {ALPHA}; does not hold when a comparison's "
               f"95 % interval lies below 0 or the check fails at every decided seed; else seed-dependent when "
               f"the seeds' verdicts split, not decided when they agree"),
    "no difference": (f"each comparison's per-seed difference tested against 0 by a two-sided one-sample t-test "
                      f"over the seeds, uncorrected (a correction would favour the claim); does not hold at "
                      f"p < {ALPHA} in any comparison; else holds as no evidence of a difference, with the "
                      f"difference the test had {POWER:.0%} power to see"),
    "no gain": (f"as `no difference`, one-sided: does not hold when a comparison's mean gain is above 0 at "
                f"p < {ALPHA}; else holds as no evidence of a gain, with the gain the test had {POWER:.0%} power "
                "to see"),
    "verdicts": ("holds when the check holds at every decided seed, does not hold when it fails at every one "
                 "(a sign test: 1/32 at 5 seeds), seed-dependent when they split; no correction over claims"),
}
#: The columns of `decide_across`'s table.
ACROSS_COLUMNS = ["source", "claim", "kind", "scope", "beyond", "rule", "seeds", "per_seed", "holds",
                  "does not hold", NOT_DECIDED, "not available", "p", "p_holm", "verdict", "evidence"]
_MARK = {"holds": "✓", "does not hold": "✗", NOT_DECIDED: "?", "not available": "–"}


@dataclass(frozen=True)
class Margin:
    """How far apart two arms may be and still count as no different (rule v2's equivalence
    and "no gain"), in the metric's units per query or per round, and whose number it is."""

    value: float
    #: "the paper's" or "ours".
    whose: str
    why: str

    def said(self) -> str:
        return f"±{self.value:g} ({self.whose}: {self.why})"


#: The margin where the source gives no number (ours): the ledger's floor
#: (`ltrlib.fidelity.claims.UNSTABLE_BELOW`, 0.005 NDCG), about the seed-to-seed sd of a
#: difference between two tuned models on the twin, so a smaller difference is one the seeds
#: cannot tell from none. An online measure summed over T rounds gets it per round, times
#: the rounds' discounts (`margin_of`).
FLOOR = Margin(UNSTABLE_BELOW, "ours", f"the ledger's floor of {UNSTABLE_BELOW} NDCG, about the seed-to-seed sd of "
                                       "a difference between two tuned models on the twin; the source gives no number")
#: Margins the sources give, by (source, claim): the gap a source itself calls similar.
MARGINS: dict[tuple[str, str], Margin] = {
    ("noniid", "no_tie_locals_similar"): Margin(
        0.028, "the paper's", "Table 3's gaps on DS that §5.2 calls \"fairly similar\": 0.018 for category 11, "
                              "and 0.028 for category 14, whose results it calls \"similar to\" category 11's; "
                              "the larger is the most the paper calls similar"),
    # One margin per claim: the one-seed check's own, which the paper does not give either.
    ("foltr", "type2_R2_gap_minimal"): Margin(
        GAP_MINIMAL, "ours", "the one-seed check's margin (ltrlib.fidelity.foltr.MINIMAL); §6.2 calls the gaps "
                             "minimal without a number"),
}

#: Claims rule v2 decides by another rule than their `Claim.across`, by (source, claim): the
#: rule, and what of the claim it does not read (then the seed means can fail the claim, but
#: not make it hold). A claim whose seeds each had too few runs to decide goes by the seeds'
#: votes under v1, which never decide it; v2 decides it on the seeds' means.
READINGS_V2: dict[tuple[str, str], tuple[str, str]] = {
    ("foltr", "type1_remedies_do_not_close_gap"): (
        "effect", "its comparison is the remedy's shortfall to IID FedAvg; the claim's other half, that the remedy "
                  "closes less than 50 % of the gap, has no per-seed effect to decide it on"),
}

#: The rule versions, by name: each as `study.md` and docs/fidelity.md print it. v1 decided
#: ``reports/ledger-small`` (its design.json holds it word for word); v2 is a new study's.
RULE_V2 = {
    "effect": (f"each comparison's per-seed improvement (the mean of the seed's units) tested above 0 by a "
               f"one-sided one-sample t-test over the seeds; the check's p is its comparisons' largest "
               f"(intersection-union), Holm-corrected over the paper's checks decided by a test (one family for its "
               f"tally, one for the rest); holds at p < {ALPHA}; does not hold when a comparison's mean is below 0 "
               f"at one-sided p < {ALPHA} (uncorrected); else as `seed-dependent`"),
    "no difference": (f"equivalence within ± the claim's margin (the source's number where it gives one; else our "
                      f"floor, {UNSTABLE_BELOW} NDCG, per round for an online sum) by TOST over the seeds (two "
                      f"one-sided t-tests at {ALPHA}: the 90 % interval inside the margin); the check's p is its "
                      f"comparisons' largest, Holm-corrected as `effect`; holds at p < {ALPHA}; does not hold when "
                      f"a comparison's difference is beyond the margin at one-sided p < {ALPHA} (uncorrected); "
                      "else as `seed-dependent`"),
    "no gain": (f"as `no difference`, one-sided: holds when every comparison's gain is below the margin at "
                f"p < {ALPHA} (Holm); does not hold when a gain above the margin is shown at p < {ALPHA}"),
    "verdicts": ("holds when the check holds at every decided seed, does not hold when it fails at every one (a "
                 "sign test: 1/32 at 5 seeds), no correction over claims; a split of the seeds' verdicts is not "
                 "decided: it is no test of dependence on the seed"),
    "seed-dependent": (f"a check no test decides depends on the seed only when Cochran's Q over a comparison's "
                       f"per-seed effects, each weighed by its within-seed standard error (from at least "
                       f"{MIN_PAIRS} units), is below {ALPHA} after Holm over the check's comparisons; otherwise "
                       f"it is not decided: more seeds needed, with the seeds a one-sided t-test at the observed "
                       f"mean and between-seed sd would need for {POWER:.0%} power (at the level Holm leaves the "
                       f"check to hold, at {ALPHA} to fail), and why Q was not computed where it was not"),
    "few runs a seed": (f"a claim whose seeds each had too few units to decide (under {MIN_PAIRS} pairs) is decided "
                        "on its seeds' means by the rule of its kind; where that rule reads part of the claim only, "
                        "the seed means can fail the claim but not make it hold"),
}
RULES = {"v1": RULE, "v2": RULE_V2}
#: The version a new study is registered with (`ltrlib.studies.ledger_design`).
DEFAULT_RULE = "v2"
#: The columns rule v2 adds: the comparison that decides the check, its mean and 90 % interval
#: over the seeds (the two one-sided tests the rule reads), its margin and whose it is,
#: the smallest Holm-corrected Cochran's Q p of its comparisons, and, for a check not
#: decided, the seeds the observed mean and spread would need.
ACROSS_COLUMNS_V2 = [*ACROSS_COLUMNS, "comparison", "mean", "low", "high", "margin", "margin_source", "q_p",
                     "seeds_needed", "reason"]
#: Why rule v2 leaves a check not decided, or finds it seed-dependent: its ``reason`` column
#: (empty where the check holds or fails), what a study's closing count groups by; the
#: evidence gives the numbers.
WHY_HETEROGENEOUS = "heterogeneity shown (Cochran's Q)"
WHY_MORE_SEEDS = "more seeds needed: no heterogeneity shown"
WHY_UNTESTABLE = "more seeds needed: heterogeneity not testable"
WHY_SPLIT = "the seeds' verdicts split, no per-seed effect to test"
WHY_FEW_SEEDS = "too few usable seeds (the budget gate or missing runs count here)"
WHY_PART = "holds on what it reads, part of the claim only"
WHY_ABSENT = "not available at any seed"
REASONS_V2 = (WHY_HETEROGENEOUS, WHY_MORE_SEEDS, WHY_UNTESTABLE, WHY_SPLIT, WHY_FEW_SEEDS, WHY_PART, WHY_ABSENT)


def across_columns(rule: str) -> list[str]:
    """The columns of `decide_across`'s table under ``rule``."""
    return ACROSS_COLUMNS if _version(rule) == "v1" else ACROSS_COLUMNS_V2


def _version(rule: str) -> str:
    if rule not in RULES:
        raise ValueError(f"rule {rule!r} is not a rule version; choose from {list(RULES)}")
    return rule


def rule_version(design: dict) -> str:
    """The rule version a study's design names (``rule_version``; v1 for a design fixed
    before there were versions, whose ``rule`` is v1's text)."""
    return _version(design.get("rule_version", "v1"))


def design_terms(rule: str) -> dict:
    """What a study's design records of the rule ``rule``: its text and numbers, and for v2 its
    version and margins. v1's are the keys ``reports/ledger-small/design.json`` holds."""
    terms = {"rule": RULES[_version(rule)], "min_seeds": MIN_SEEDS, "alpha": ALPHA, "power": POWER}
    if rule == "v1":
        return terms
    margins = {f"{source} {claim}": m.said() for (source, claim), m in MARGINS.items()}
    margins["any other"] = FLOOR.said()
    return {"rule_version": rule, **terms, "margins": margins,
            "readings": {f"{source} {claim}": f"by `{kind}`: {gap}" for (source, claim), (kind, gap)
                         in READINGS_V2.items()}}


def margin_of(source: str, claim: str, horizon: int = 0) -> tuple[float, str]:
    """The margin of a comparison of ``source``'s ``claim`` (`MARGINS`, else `FLOOR`) and
    where it comes from; an online sum over ``horizon`` rounds gets it per round, summed
    over the rounds' discounts (`ltrlib.foltr.federated.discount_sum`)."""
    m = MARGINS.get((source, claim), FLOOR)
    if horizon and horizon > 0:
        return m.value * discount_sum(int(horizon)), f"{m.said()}, per round over T = {int(horizon):,} rounds"
    return m.value, m.said()


def rule_of(source: str, claim: str) -> str:
    """The `Claim.across` of a source's claim (``verdicts`` for a claim no longer defined)."""
    for c in PAPERS[source].claims if source in PAPERS else ():
        if c.name == claim:
            return c.across
    return "verdicts"


def _one_sample(x: np.ndarray) -> dict:
    """Mean, 95 % t-interval and the three p of a one-sample t-test of ``x`` against 0."""
    n, mean = len(x), float(np.mean(x))
    sd = float(np.std(x, ddof=1)) if n > 1 else math.nan
    if n < 2 or sd == 0:
        # No spread: the sign of the mean is certain, the test degenerate.
        above = 0.0 if mean > 0 else 1.0
        below = 0.0 if mean < 0 else 1.0
        return {"n": n, "mean": mean, "sd": sd, "low": mean, "high": mean, "p_above": above, "p_below": below,
                "p_two": min(1.0, 2 * min(above, below)) if n > 1 else math.nan}
    se = sd / math.sqrt(n)
    t = mean / se
    half = stats.t.ppf(0.975, n - 1) * se
    return {"n": n, "mean": mean, "sd": sd, "low": mean - half, "high": mean + half,
            "p_above": float(stats.t.sf(t, n - 1)), "p_below": float(stats.t.cdf(t, n - 1)),
            "p_two": float(2 * stats.t.sf(abs(t), n - 1))}


def _detectable(sd: float, n: int, two_sided: bool) -> float:
    """The difference a one-sample t-test over ``n`` seeds had `POWER` to detect at `ALPHA`."""
    from statsmodels.stats.power import TTestPower

    if n < 2 or not sd or math.isnan(sd):
        return math.nan
    d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=ALPHA, power=POWER,
                                 alternative="two-sided" if two_sided else "larger")
    return float(d) * sd


def _usable(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The seeds whose effects count: the check ran, and was not held back by the budget gate."""
    budget = per_seed.evidence.fillna("").str.contains(BUDGET, regex=False)
    return per_seed[(per_seed.ours != VERDICTS[None]) & ~budget]


def comparison_tests(per_seed: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """Per comparison of every check (``source, claim, scope, comparison``): its per-seed
    improvement over the usable seeds (`_usable`) tested against 0 (`_one_sample`)."""
    keys = ["source", "claim", "scope", "seed"]
    usable = _usable(per_seed)[keys].drop_duplicates()
    ours = (effects.drop_duplicates(["source", "claim", "scope", "comparison", "seed"])
            .merge(usable, on=keys))
    rows = []
    for key, g in ours.groupby(["source", "claim", "scope", "comparison"], sort=False):
        x = g.ours_improvement.astype(float).dropna().to_numpy()
        if len(x):
            rows.append({**dict(zip(["source", "claim", "scope", "comparison"], key)), **_one_sample(x)})
    return pd.DataFrame(rows, columns=["source", "claim", "scope", "comparison", "n", "mean", "sd", "low", "high",
                                       "p_above", "p_below", "p_two"])


def _by_verdicts(counts: dict[str, int]) -> tuple[str, str]:
    decided = counts["holds"] + counts["does not hold"]
    if decided < MIN_SEEDS:
        return NOT_DECIDED, f"decided at {decided} seeds; the rule needs {MIN_SEEDS}"
    if counts["does not hold"] == 0:
        return "holds", f"holds at every one of {decided} decided seeds (sign test p = {0.5 ** decided:.3f})"
    if counts["holds"] == 0:
        return "does not hold", f"fails at every one of {decided} decided seeds (sign test p = {0.5 ** decided:.3f})"
    return SEED_DEPENDENT, f"holds at {counts['holds']}, fails at {counts['does not hold']} of {decided} seeds"


def _said(t) -> str:
    return f"{t.comparison}: {t.mean:+.4f} [{t.low:+.4f}, {t.high:+.4f}] over {t.n} seeds"


def _test(rule: str, tests: pd.DataFrame) -> tuple[float, str]:
    """The check's p under ``rule`` and the comparisons' evidence."""
    if rule == "effect":
        return float(tests.p_above.max()), "; ".join(f"{_said(t)}, one-sided p = {t.p_above:.4f}"
                                                      for t in tests.itertuples())
    two = rule == "no difference"
    p = tests.p_two if two else tests.p_above
    said = "; ".join(f"{_said(t)}, {'two' if two else 'one'}-sided p = {pv:.4f}, {POWER:.0%} power to see "
                     f"{_detectable(t.sd, t.n, two):.4f}" for t, pv in zip(tests.itertuples(), p))
    return float(p.min()), said


def _verdict(rule: str, p: float, p_holm: float, tests: pd.DataFrame, counts: dict[str, int]) -> tuple[str, str]:
    split = counts["holds"] > 0 and counts["does not hold"] > 0
    if rule == "effect":
        if p_holm < ALPHA:
            return "holds", f"every comparison above 0 (Holm p = {p_holm:.4f})"
        if (tests.high < 0).any():
            return "does not hold", "a comparison's interval lies below 0"
        if counts["holds"] == 0 and counts["does not hold"] >= MIN_SEEDS:
            return "does not hold", f"fails at every one of {counts['does not hold']} decided seeds, and the " \
                                    f"effect across seeds is not significant (Holm p = {p_holm:.4f})"
        if split:
            return SEED_DEPENDENT, f"not significant across seeds (Holm p = {p_holm:.4f}), and the seeds split"
        return NOT_DECIDED, f"not significant across seeds (Holm p = {p_holm:.4f}), though the seeds agree"
    what = "difference" if rule == "no difference" else "gain"
    if p < ALPHA:
        return "does not hold", f"a {what} across seeds (p = {p:.4f})"
    return "holds", f"no evidence of a {what} across seeds (p = {p:.4f})"


def decide_across(per_seed: pd.DataFrame, effects: pd.DataFrame, rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """Every check across seeds by the rule version ``rule`` (`RULES`): ``per_seed`` holds the
    claim rows of every seed (`ltrlib.fidelity.claims.CLAIM_COLUMNS` and ``seed``), ``effects``
    their comparisons (`EFFECT_COLUMNS` and ``seed``). One row per check (`across_columns`):
    its rule, the per-seed verdicts (✓ holds, ✗ does not hold, ? not decided, – not available,
    in seed order), the check's p and Holm-corrected p, the verdict and why; v2 adds the
    comparison it rests on with its mean, 90 % interval and margin, Cochran's Q p and the
    seeds a check not decided would need."""
    if _version(rule) == "v2":
        return _decide_v2(per_seed, effects)
    tests = comparison_tests(per_seed, effects)
    by_check = {k: g for k, g in tests.groupby(["source", "claim", "scope"], sort=False)}
    rows = []
    for (source, claim, kind, scope), g in per_seed.groupby(["source", "claim", "kind", "scope"], sort=False):
        g = g.sort_values("seed")
        counts = {v: int((g.ours == v).sum()) for v in ("holds", "does not hold", NOT_DECIDED, "not available")}
        rule = rule_of(source, claim)
        mine = by_check.get((source, claim, scope))
        row = {"source": source, "claim": claim, "kind": kind, "scope": scope, "beyond": bool(g.beyond.astype(bool).any()),
               "rule": rule, "seeds": len(g), "per_seed": " ".join(_MARK.get(v, "?") for v in g.ours), **counts,
               "p": math.nan, "p_holm": math.nan, "verdict": "", "evidence": ""}
        if counts["not available"] == len(g):
            row.update(verdict=VERDICTS[None], evidence=f"not available at any of {len(g)} seeds")
        elif rule == "verdicts" or mine is None:
            row["verdict"], row["evidence"] = _by_verdicts(counts)
        elif mine.n.min() < MIN_SEEDS:
            row.update(verdict=NOT_DECIDED, evidence=f"an effect at {int(mine.n.min())} usable seeds; the rule "
                                                     f"needs {MIN_SEEDS}")
        else:
            row["p"], row["evidence"] = _test(rule, mine)
        rows.append(row)
    out = pd.DataFrame(rows, columns=ACROSS_COLUMNS)
    return _decide_tested(out, by_check)


def _decide_tested(out: pd.DataFrame, by_check: dict) -> pd.DataFrame:
    """Holm over each paper's ``effect`` checks (its tally, and the rest, apart), then the
    verdict of every tested check."""
    from ltrlib.metrics.significance import corrected

    tested = out.p.notna() & (out.rule == "effect")
    counted = (out.kind == "claim") & ~out.beyond
    for (_, _), idx in out[tested].groupby([out.source, counted]).groups.items():
        out.loc[idx, "p_holm"] = corrected(out.loc[idx, "p"].to_numpy())
    for i in out.index[out.p.notna()]:
        r = out.loc[i]
        counts = {v: int(r[v]) for v in ("holds", "does not hold", NOT_DECIDED, "not available")}
        verdict, why = _verdict(r.rule, r.p, r.p_holm, by_check[(r.source, r.claim, r.scope)], counts)
        out.loc[i, "verdict"] = verdict
        out.loc[i, "evidence"] = f"{why}: {r.evidence}"
    return out


# ---------------------------------------------------------------------------------------------
# Rule v2 (`RULE_V2`).

def _kind_v2(source: str, claim: str) -> tuple[str, str]:
    """The rule v2 decides a claim by, and what of the claim it leaves unread ("" for all)."""
    return READINGS_V2.get((source, claim), (rule_of(source, claim), ""))


def _tests_v2(x: np.ndarray, kind: str, margin: float) -> dict:
    """Over the seeds' effects ``x`` of one comparison: mean, sd, the 90 % t-interval, and the
    one-sided p that it holds (``p_hold``: above 0 for ``effect``; TOST within ± ``margin``
    for ``no difference``; below ``margin`` for ``no gain``) and that it fails (``p_fail``:
    below 0; beyond the margin on the mean's side; above the margin)."""
    from statsmodels.stats.weightstats import DescrStatsW

    n, mean = len(x), float(np.mean(x))
    sd = float(np.std(x, ddof=1)) if n > 1 else math.nan
    # Each one-sided test as (the value the mean is compared with, the side the mean must
    # lie on): for the claim to hold (TOST: both), and for it to fail.
    if kind == "effect":
        hold, fail = [(0.0, "larger")], (0.0, "smaller")
    elif kind == "no gain":
        hold, fail = [(margin, "smaller")], (margin, "larger")
    else:
        hold = [(-margin, "larger"), (margin, "smaller")]
        fail = (margin, "larger") if mean >= 0 else (-margin, "smaller")
    if n < 2 or sd == 0:
        # No spread: the mean's place against each bound is certain, the tests degenerate.
        def p_of(value: float, side: str) -> float:
            return 0.0 if (mean > value if side == "larger" else mean < value) else 1.0

        low = high = mean
        p_hold = max(p_of(*h) for h in hold)
    else:
        d = DescrStatsW(x)

        def p_of(value: float, side: str) -> float:
            return float(d.ttest_mean(value, alternative=side)[1])

        low, high = (float(v) for v in d.tconfint_mean(alpha=2 * ALPHA))
        # TOST (statsmodels' ttost_mean) is the larger p of its two one-sided tests.
        p_hold = float(d.ttost_mean(-margin, margin)[0]) if kind == "no difference" else p_of(*hold[0])
    return {"n": n, "mean": mean, "sd": sd, "low": low, "high": high, "p_hold": p_hold, "p_fail": p_of(*fail)}


def _heterogeneity(x: np.ndarray, se: np.ndarray, units: np.ndarray) -> tuple[float, str]:
    """Cochran's Q p of the seeds' effects ``x`` with their within-seed standard errors, or
    NaN and why it is not computed."""
    from statsmodels.stats.meta_analysis import combine_effects

    if np.isnan(se).all():
        return math.nan, "no within-seed SE (a comparison of two means)"
    if (np.isnan(se) | ~(se > 0)).any():
        return math.nan, "a seed without a within-seed SE"
    if (units < MIN_PAIRS).any():
        return math.nan, f"within-seed SE from {int(units.min())} units, under {MIN_PAIRS}"
    if len(x) < 2:  # an interim reading: Q has no degree of freedom (statsmodels would divide by 0)
        return math.nan, "one seed"
    with np.errstate(invalid="ignore"):  # its random-effects sds, which Q does not need, may be NaN
        return float(combine_effects(x, se ** 2, method_re="chi2").test_homogeneity().pvalue), ""


def _fewest_seeds(enough, cap: int = 1_000_000) -> float:
    """The fewest seeds n (2 or more) with ``enough(n)``, which must rise with n; inf past
    ``cap``. Doubles to a bound, then bisects (statsmodels' solve_power fails to converge for
    large effects, where the answer is 2 or 3)."""
    high = 2
    while not enough(high):
        high *= 2
        if high > cap:
            return math.inf
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return float(max(2, high))


def _seeds_for(d: float, level: float = ALPHA) -> float:
    """The fewest seeds at which a one-sided one-sample t-test at ``level`` sees a
    standardised difference ``d`` with `POWER` (inf when ``d`` is not above 0, or past a
    million)."""
    from statsmodels.stats.power import TTestPower

    if not (d > 0 and math.isfinite(d)):
        return math.inf
    return _fewest_seeds(lambda n: TTestPower().power(effect_size=d, nobs=n, alpha=level,
                                                      alternative="larger") >= POWER)


def comparison_tests_v2(per_seed: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """Per comparison of every check, over its usable seeds (`_usable`): `_tests_v2` by the
    claim's v2 rule and margin (`margin_of`), and Cochran's Q p (`_heterogeneity`)."""
    keys = ["source", "claim", "scope", "seed"]
    usable = _usable(per_seed)[keys].drop_duplicates()
    ours = (effects.drop_duplicates(["source", "claim", "scope", "comparison", "seed"]).merge(usable, on=keys))
    for column, missing in (("ours_se", math.nan), ("ours_units", 1), ("horizon", 0)):
        if column not in ours:  # an effect table written before it was kept
            ours[column] = missing
    rows = []
    for (source, claim, scope, comparison), g in ours.groupby(["source", "claim", "scope", "comparison"], sort=False):
        g = g[g.ours_improvement.notna()]
        if g.empty:
            continue
        kind, _ = _kind_v2(source, claim)
        horizon = int(pd.to_numeric(g.horizon, errors="coerce").fillna(0).max())
        margin, whose = margin_of(source, claim, horizon) if kind in ("no difference", "no gain") else (math.nan, "")
        x = g.ours_improvement.astype(float).to_numpy()
        q_p, why = _heterogeneity(x, pd.to_numeric(g.ours_se, errors="coerce").to_numpy(dtype=float),
                                  pd.to_numeric(g.ours_units, errors="coerce").fillna(1).to_numpy(dtype=float))
        rows.append({"source": source, "claim": claim, "scope": scope, "comparison": comparison, "kind": kind,
                     **_tests_v2(x, kind, margin), "margin": margin, "margin_source": whose, "q_p": q_p,
                     "q_why": why})
    return pd.DataFrame(rows, columns=["source", "claim", "scope", "comparison", "kind", "n", "mean", "sd", "low",
                                       "high", "p_hold", "p_fail", "margin", "margin_source", "q_p", "q_why"])


def _said_v2(t) -> str:
    margin = "" if math.isnan(t.margin) else f", margin ±{t.margin:.4g}"
    q = f"Q p = {t.q_p:.4f}" if not math.isnan(t.q_p) else f"Q not computed: {t.q_why}"
    return (f"{t.comparison}: {t.mean:+.4f}, 90 % interval [{t.low:+.4f}, {t.high:+.4f}] over {t.n} seeds{margin}, "
            f"p (holds) = {t.p_hold:.4f}, p (fails) = {t.p_fail:.4f}, {q}")


def _seeds_needed(kind: str, tests: pd.DataFrame, level: float) -> tuple[float, bool]:
    """The seeds the observed means and spreads would need to decide the check: where a
    comparison points to failing, the fewest that would show one failing (at `ALPHA`,
    uncorrected); else the most any comparison needs to hold at ``level``, the level Holm
    leaves the check. With whether the means point to failing."""
    if kind == "effect":
        toward_fail = (tests["mean"] < 0).to_numpy()
        dist_fail, dist_hold = -tests["mean"], tests["mean"]
    elif kind == "no gain":
        toward_fail = (tests["mean"] > tests.margin).to_numpy()
        dist_fail = dist_hold = (tests["mean"] - tests.margin).abs()
    else:
        toward_fail = (tests["mean"].abs() > tests.margin).to_numpy()
        dist_fail = dist_hold = (tests["mean"].abs() - tests.margin).abs()
    d_fail, d_hold = (dist_fail / tests.sd).to_numpy(), (dist_hold / tests.sd).to_numpy()
    if toward_fail.any():
        return min(_seeds_for(d) for d in d_fail[toward_fail]), True
    return max(_seeds_for(d, level) for d in d_hold), False


def _decide_v2(per_seed: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """`decide_across` by rule v2 (`RULE_V2`)."""
    from ltrlib.metrics.significance import corrected

    tests = comparison_tests_v2(per_seed, effects)
    by_check = {k: g for k, g in tests.groupby(["source", "claim", "scope"], sort=False)}
    rows = []
    for (source, claim, kind, scope), g in per_seed.groupby(["source", "claim", "kind", "scope"], sort=False):
        g = g.sort_values("seed")
        counts = {v: int((g.ours == v).sum()) for v in ("holds", "does not hold", NOT_DECIDED, "not available")}
        rule, _ = _kind_v2(source, claim)
        mine = by_check.get((source, claim, scope))
        row = {"source": source, "claim": claim, "kind": kind, "scope": scope,
               "beyond": bool(g.beyond.astype(bool).any()), "rule": rule, "seeds": len(g),
               "per_seed": " ".join(_MARK.get(v, "?") for v in g.ours), **counts, "p": math.nan, "p_holm": math.nan,
               "verdict": "", "evidence": "", "comparison": "", "mean": math.nan, "low": math.nan, "high": math.nan,
               "margin": math.nan, "margin_source": "", "q_p": math.nan, "seeds_needed": math.nan, "reason": ""}
        if counts["not available"] == len(g):
            row.update(verdict=VERDICTS[None], evidence=f"not available at any of {len(g)} seeds",
                       reason=WHY_ABSENT)
        elif rule == "verdicts" or mine is None:
            verdict, why = _by_verdicts(counts)
            reason = WHY_FEW_SEEDS if verdict == NOT_DECIDED else ""
            if verdict == SEED_DEPENDENT:
                verdict, why = NOT_DECIDED, f"{why}: a split of verdicts is no test of dependence on the seed"
                reason = WHY_SPLIT
            row.update(rule="verdicts", verdict=verdict, evidence=why, reason=reason)
        elif mine.n.min() < MIN_SEEDS:
            row.update(verdict=NOT_DECIDED, evidence=f"an effect at {int(mine.n.min())} usable seeds; the rule "
                                                     f"needs {MIN_SEEDS}", reason=WHY_FEW_SEEDS)
        else:
            row["p"] = float(mine.p_hold.max())
            row["evidence"] = "; ".join(_said_v2(t) for t in mine.itertuples())
        rows.append(row)
    out = pd.DataFrame(rows, columns=ACROSS_COLUMNS_V2)
    tested = out.p.notna()
    counted = (out.kind == "claim") & ~out.beyond
    for _, idx in out[tested].groupby([out.source, counted]).groups.items():
        out.loc[idx, "p_holm"] = corrected(out.loc[idx, "p"].to_numpy())
    for i in out.index[tested]:
        r = out.loc[i]
        out.loc[i, list(_VERDICT_V2_FIELDS)] = _verdict_v2(r, by_check[(r.source, r.claim, r.scope)])
    return out


_VERDICT_V2_FIELDS = ("verdict", "evidence", "comparison", "mean", "low", "high", "margin", "margin_source", "q_p",
                      "seeds_needed", "reason")


def _verdict_v2(r, tests: pd.DataFrame) -> tuple:
    """A tested check's verdict by rule v2, with the comparison it rests on and its numbers."""
    from ltrlib.metrics.significance import corrected

    kind, unread = _kind_v2(r.source, r.claim)
    failing = tests[tests.p_fail < ALPHA]
    q_p = float(np.nanmin(corrected(tests.q_p.to_numpy()))) if tests.q_p.notna().any() else math.nan
    needed, reason = math.nan, ""
    what = {"effect": "above 0", "no difference": "within the margin", "no gain": "below the margin"}[kind]
    if not failing.empty:
        t = failing.loc[failing.p_fail.idxmin()]
        against = "below 0" if kind == "effect" else "beyond the margin"
        verdict, why = "does not hold", f"{t.comparison} is {against} (one-sided p = {t.p_fail:.4f}, uncorrected)"
    elif r.p_holm < ALPHA:
        t = tests.loc[tests.p_hold.idxmax()]
        verdict, why = "holds", f"every comparison {what} (Holm p = {r.p_holm:.4f})"
        if unread:
            verdict, why = NOT_DECIDED, f"{why}, but this reads part of the claim only: {unread}"
            reason = WHY_PART
    else:
        t = tests.loc[tests.p_hold.idxmax()]
        if not math.isnan(q_p) and q_p < ALPHA:
            verdict, why = SEED_DEPENDENT, (f"no test decides it (Holm p = {r.p_holm:.4f}), and the seeds' effects "
                                            f"are heterogeneous (Cochran's Q, Holm p = {q_p:.2g})")
            reason = WHY_HETEROGENEOUS
        else:
            # The level Holm leaves this check's own p: it holds once p falls below it.
            level = ALPHA * r.p / r.p_holm if r.p_holm > 0 else ALPHA
            needed, fails = _seeds_needed(kind, tests, level)
            toward = (f"to show it fails ({POWER:.0%} power, one-sided {ALPHA}, uncorrected)" if fails else
                      f"to show it holds ({POWER:.0%} power, one-sided, at the level Holm leaves it, {level:.2g})")
            seeds = (f"about {needed:.0f} seeds at the observed means and spreads would be needed {toward}"
                     if math.isfinite(needed) else "no number of seeds would decide it at the observed mean, which "
                                                   "sits on the bound it is tested against")
            q = (f"Cochran's Q p = {q_p:.2f}, no heterogeneity shown" if not math.isnan(q_p) else
                 "heterogeneity not testable: " + "; ".join(sorted(set(tests.q_why[tests.q_p.isna()]))))
            verdict, why = NOT_DECIDED, (f"more seeds needed: no test decides it (Holm p = {r.p_holm:.4f}); {q}; "
                                         f"{seeds}")
            reason = WHY_MORE_SEEDS if not math.isnan(q_p) else WHY_UNTESTABLE
    if kind != rule_of(r.source, r.claim):
        why = f"decided on the seeds' means by `{kind}`: {why}"
    return (verdict, f"{why}: {r.evidence}", t.comparison, t["mean"], t.low, t.high, t.margin, t.margin_source,
            q_p, needed, reason)


def effect_ratio_intervals(effects: pd.DataFrame) -> pd.DataFrame:
    """Per comparison (``source, claim, scope, comparison, dataset``) of a multi-seed effect
    table (`EFFECT_COLUMNS` and ``seed``): the Effect Ratio's mean over the seeds that have a
    stable one and its 95 % t-interval (NaN with fewer than two), then our improvement's mean
    over the seeds and the paper's (one number, the same at every seed), which
    `ltrlib.plots.effect_ratios` draws beside the ratio."""
    rows = []
    keys = ["source", "claim", "scope", "comparison", "dataset"]
    # A CSV read back turns the empty dataset of a single-dataset paper into NaN: one key.
    effects = effects.assign(dataset=effects.dataset.fillna(""))
    for key, g in effects.groupby(keys, sort=False, dropna=False):
        er = g.effect_ratio.astype(float).dropna().to_numpy()
        low = high = math.nan
        if len(er) >= 2:
            half = stats.t.ppf(0.975, len(er) - 1) * er.std(ddof=1) / math.sqrt(len(er))
            low, high = er.mean() - half, er.mean() + half
        ours, paper = g.ours_improvement.astype(float).dropna(), g.paper_improvement.astype(float).dropna()
        rows.append({**dict(zip(keys, key)), "seeds_with_ratio": len(er),
                     "effect_ratio_mean": er.mean() if len(er) else math.nan,
                     "effect_ratio_low": low, "effect_ratio_high": high,
                     "ours_improvement": ours.mean() if len(ours) else math.nan,
                     "paper_improvement": paper.iloc[0] if len(paper) else math.nan})
    return pd.DataFrame(rows, columns=[*keys, "seeds_with_ratio", "effect_ratio_mean", "effect_ratio_low",
                                       "effect_ratio_high", "ours_improvement", "paper_improvement"])


def _interval(r) -> str:
    if math.isnan(r.effect_ratio_mean):
        return "no stable ratio"
    if math.isnan(r.effect_ratio_low):
        return f"ER {r.effect_ratio_mean:.2f} ({r.seeds_with_ratio} seed)"
    return f"ER {r.effect_ratio_mean:.2f} [{r.effect_ratio_low:.2f}, {r.effect_ratio_high:.2f}]"


def with_effect_ratios(across: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """``across`` with a column ``effect_ratios``: each comparison's Effect Ratio over the
    seeds, its mean and 95 % interval (`effect_ratio_intervals`)."""
    intervals = effect_ratio_intervals(effects)
    said = {key: "; ".join(f"{r.comparison}{f' ({r.dataset})' if r.dataset else ''}: {_interval(r)}"
                           for r in g.itertuples())
            for key, g in intervals.groupby(["source", "claim", "scope"], sort=False)}
    return across.assign(effect_ratios=[said.get((r.source, r.claim, r.scope), "") for r in across.itertuples()])


def across_runs(run_dirs, rule: str = DEFAULT_RULE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every check over runs that differ in their seed only (`one_setup_at_several_seeds`):
    ``(per_run, across)``, every run's claim rows with its ``seed``, and `decide_across`'s
    table by ``rule`` with the Effect Ratios' intervals (`with_effect_ratios`)."""
    dirs = [Path(d) for d in run_dirs]
    seeds = one_setup_at_several_seeds(dirs)
    reports = [fidelity_report(d) for d in dirs]
    per_run = pd.concat([r.claims.assign(seed=seed) for seed, r in zip(seeds, reports)], ignore_index=True)
    effects = pd.concat([r.effects.assign(seed=seed) for seed, r in zip(seeds, reports)], ignore_index=True)
    return per_run, with_effect_ratios(decide_across(per_run, effects, rule), effects)
