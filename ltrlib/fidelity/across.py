"""Every check of the ledger decided across seeds, by a rule written before the runs.

One run is one seed, and one seed decides nothing (`ltrlib.fidelity.ledger.ONE_SEED`). A
multi-seed study (``ltrlib study ledger``) or ``ltrlib fidelity RUN RUN ...`` gives, for
every check (a claim in one scope), its verdict at each seed and one verdict across the
seeds by `RULE`, chosen per claim by its `Claim.across` (`ltrlib.fidelity.claims.ACROSS_RULES`):

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

Every choice here is ours (the sources ran one seed per number); `RULE` states them and
`docs/fidelity.md` repeats it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ltrlib.fidelity.bilambdamart import BUDGET
from ltrlib.fidelity.claims import NOT_DECIDED, VERDICTS
from ltrlib.fidelity.ledger import PAPERS, fidelity_report
from ltrlib.fidelity.sources import one_setup_at_several_seeds

__all__ = ["ACROSS_COLUMNS", "ALPHA", "MIN_SEEDS", "POWER", "RULE", "SEED_DEPENDENT", "across_runs",
           "comparison_tests", "decide_across", "effect_ratio_intervals", "rule_of"]

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


def decide_across(per_seed: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """Every check across seeds by `RULE`: ``per_seed`` holds the claim rows of every seed
    (`ltrlib.fidelity.claims.CLAIM_COLUMNS` and ``seed``), ``effects`` their comparisons
    (`EFFECT_COLUMNS` and ``seed``). One row per check (`ACROSS_COLUMNS`): its rule, the
    per-seed verdicts (✓ holds, ✗ does not hold, ? not decided, – not available, in seed
    order), the check's p and Holm-corrected p (``effect`` checks), the verdict and why."""
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


def effect_ratio_intervals(effects: pd.DataFrame) -> pd.DataFrame:
    """Per comparison (``source, claim, scope, comparison, dataset``) of a multi-seed effect
    table (`EFFECT_COLUMNS` and ``seed``): the Effect Ratio's mean over the seeds that have a
    stable one and its 95 % t-interval (NaN with fewer than two)."""
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
        rows.append({**dict(zip(keys, key)), "seeds_with_ratio": len(er),
                     "effect_ratio_mean": er.mean() if len(er) else math.nan,
                     "effect_ratio_low": low, "effect_ratio_high": high})
    return pd.DataFrame(rows, columns=[*keys, "seeds_with_ratio", "effect_ratio_mean", "effect_ratio_low",
                                       "effect_ratio_high"])


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


def across_runs(run_dirs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every check over runs that differ in their seed only (`one_setup_at_several_seeds`):
    ``(per_run, across)``, every run's claim rows with its ``seed``, and `decide_across`'s
    table with the Effect Ratios' intervals (`with_effect_ratios`)."""
    dirs = [Path(d) for d in run_dirs]
    seeds = one_setup_at_several_seeds(dirs)
    reports = [fidelity_report(d) for d in dirs]
    per_run = pd.concat([r.claims.assign(seed=seed) for seed, r in zip(seeds, reports)], ignore_index=True)
    effects = pd.concat([r.effects.assign(seed=seed) for seed, r in zip(seeds, reports)], ignore_index=True)
    return per_run, with_effect_ratios(decide_across(per_run, effects), effects)
