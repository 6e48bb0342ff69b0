"""How many seeds a ledger study needs: a power analysis from a recorded study's spreads.

A second study's seed count is chosen before its first seed (issue 62) from the first
study's per-seed effects: for each comparison of each check, the seeds at which rule v2's
test (`ltrlib.fidelity.across`, its kind and margin per claim) would decide the claim with
`POWER` if the true effect were **the paper's** and the seeds spread as they did.

* ``effect``: a one-sided one-sample t-test over the seeds at the paper's improvement
  divided by the seeds' sd (statsmodels' `TTestPower`).
* ``no gain``: the same test of "below the margin", at the margin less the paper's gain.
* ``no difference``: TOST within ± the margin at the paper's difference, by the usual
  approximation with two noncentral t distributions (exact enough above 50 % power).

Each at two levels: 0.05 (Holm's last step, the least a check can be tested at) and
0.05 / m, with m the paper's checks of the rule's tested kinds in its tally (Holm's first
step, the most). A check needs every one of its comparisons (intersection-union), so its
seeds are its comparisons' most. Where the paper gives no number for a comparison, or its
number is in other units (an online sum over T = 10,000 rounds against a study at T = 300),
the observed mean stands in and the row says so. Everything here is ours: the papers ran
one seed per number. The spreads come from the recorded study's few seeds (5 for
``ledger-small``), so the counts are estimates, not guarantees.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ltrlib.fidelity.across import ALPHA, POWER, _fewest_seeds, _kind_v2, _usable, margin_of
from ltrlib.fidelity.foltr import PAPER_T

__all__ = ["SEEDS_CAP", "claim_seeds", "comparison_seeds", "power_at"]

#: Seed counts above this are reported as "more than" it: no study here runs that many.
SEEDS_CAP = 1000
_TESTED = ("effect", "no gain", "no difference")


def power_at(kind: str, n: int, effect: float, sd: float, margin: float, level: float = ALPHA) -> float:
    """The power of rule v2's test of a ``kind`` claim over ``n`` seeds, when the true effect
    is ``effect`` and the seeds' sd ``sd`` (``margin`` for the no-difference kinds)."""
    from scipy.stats import nct, t

    if n < 2 or not (sd > 0) or not math.isfinite(effect):
        return math.nan
    df, root = n - 1, math.sqrt(n)
    critical = t.ppf(1 - level, df)
    if kind == "effect":
        return float(nct.sf(critical, df, effect / sd * root))
    if kind == "no gain":
        return float(nct.sf(critical, df, (margin - effect) / sd * root))
    # TOST: both one-sided tests reject; P(T_low > c) - P(T_high > -c), floored at 0.
    low, high = (effect + margin) / sd * root, (effect - margin) / sd * root
    return float(max(0.0, nct.sf(critical, df, low) - nct.sf(-critical, df, high)))


def _seeds(kind: str, effect: float, sd: float, margin: float, level: float) -> float:
    """The fewest seeds (2 or more) at which `power_at` reaches `POWER`; inf past `SEEDS_CAP`."""
    if not (sd > 0) or not math.isfinite(effect):
        return math.nan
    # Power rises with n for every kind here.
    return _fewest_seeds(lambda n: power_at(kind, n, effect, sd, margin, level) >= POWER, SEEDS_CAP)


def _paper_effect(g: pd.DataFrame, source: str) -> tuple[float, str]:
    """The paper's effect for a comparison's rows, and what stands in for it where it has none."""
    paper = pd.to_numeric(g.paper_improvement, errors="coerce").dropna()
    horizon = int(pd.to_numeric(g.get("horizon", pd.Series([0])), errors="coerce").fillna(0).max())
    if source == "foltr" and horizon and horizon != PAPER_T:
        return (float(g.ours_improvement.mean()),
                f"observed mean (the paper's is over T = {PAPER_T:,}, ours {horizon:,})")
    if paper.empty:
        return float(g.ours_improvement.mean()), "observed mean (the paper gives no number)"
    return float(paper.iloc[0]), "the paper's"


def comparison_seeds(per_seed: pd.DataFrame, effects: pd.DataFrame, n: int | None = None) -> pd.DataFrame:
    """Per comparison of every tested check (rule v2's kinds), over a study's usable seeds:
    the effect assumed (the paper's where it is comparable), the seeds' sd, the margin, the
    seeds needed at 0.05 and at 0.05 / m (see the module docstring), and, given ``n``, the
    power at ``n`` seeds at both levels."""
    keys = ["source", "claim", "scope", "seed"]
    usable = _usable(per_seed)[keys].drop_duplicates()
    ours = effects.drop_duplicates(["source", "claim", "scope", "comparison", "seed"]).merge(usable, on=keys)
    ours = ours[ours.ours_improvement.notna()]
    tally = _tally(per_seed)
    family = {source: sum(_kind_v2(s, c)[0] in _TESTED for s, c, _ in tally if s == source)
              for source in ours.source.unique()}
    rows = []
    for (source, claim, scope, comparison), g in ours.groupby(["source", "claim", "scope", "comparison"], sort=False):
        kind = _kind_v2(source, claim)[0]
        if kind not in _TESTED or len(g) < 2:
            continue
        horizon = int(pd.to_numeric(g.get("horizon", pd.Series([0])), errors="coerce").fillna(0).max())
        margin = margin_of(source, claim, horizon)[0] if kind != "effect" else math.nan
        effect, assumed = _paper_effect(g, source)
        sd = float(np.std(g.ours_improvement.astype(float), ddof=1))
        m = max(1, family.get(source, 1))
        row = {"source": source, "claim": claim, "scope": scope, "comparison": comparison, "kind": kind,
               "effect": effect, "effect_from": assumed, "observed_mean": float(g.ours_improvement.mean()),
               "sd": sd, "seeds_observed": len(g), "margin": margin, "family": m,
               "seeds_at_alpha": _seeds(kind, effect, sd, margin, ALPHA),
               "seeds_at_alpha_over_m": _seeds(kind, effect, sd, margin, ALPHA / m)}
        if n is not None:
            row["power_at_alpha"] = power_at(kind, n, effect, sd, margin, ALPHA)
            row["power_at_alpha_over_m"] = power_at(kind, n, effect, sd, margin, ALPHA / m)
        rows.append(row)
    return pd.DataFrame(rows)


def claim_seeds(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per check (claim in a scope): the most seeds any of its comparisons needs, and the
    least power any has at the given ``n`` (a check holds only if all of them do)."""
    agg = {"kind": ("kind", "first"), "comparisons": ("comparison", "size"),
           "seeds_at_alpha": ("seeds_at_alpha", "max"), "seeds_at_alpha_over_m": ("seeds_at_alpha_over_m", "max")}
    for column in ("power_at_alpha", "power_at_alpha_over_m"):
        if column in comparisons:
            agg[column] = (column, "min")
    return comparisons.groupby(["source", "claim", "scope"], sort=False).agg(**agg).reset_index()


#: Seed counts the power report tabulates.
REPORT_SEEDS = (5, 8, 10, 12, 15, 20, 30)


def _tally(per_seed: pd.DataFrame) -> set[tuple[str, str, str]]:
    """The checks the papers' tallies count (their claims in their scopes), as (source, claim, scope)."""
    counted = per_seed[(per_seed.kind == "claim") & ~per_seed.beyond.astype(bool)]
    return set(counted[["source", "claim", "scope"]].itertuples(index=False, name=None))


def power_tables(per_seed: pd.DataFrame, effects: pd.DataFrame, chosen: int,
                 seeds: tuple[int, ...] = REPORT_SEEDS) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The power report's frames: ``(by_seeds, checks, comparisons)``.

    ``by_seeds``: per paper and seed count, how many of its tested tally checks have 80 %
    power at 0.05 and at 0.05 / m: those that need no more seeds than that (power rises
    with the seeds). ``checks``: per check, its seeds needed and its power at ``chosen``
    seeds. ``comparisons``: `comparison_seeds` at ``chosen``."""
    comparisons = comparison_seeds(per_seed, effects, n=chosen)
    checks = claim_seeds(comparisons)
    tally = _tally(per_seed)
    checks.insert(3, "in_tally", [key in tally for key in checks[["source", "claim", "scope"]].itertuples(
        index=False, name=None)])
    rows = []
    for n in sorted({*seeds, chosen}):
        for source, g in checks[checks.in_tally].groupby("source", sort=False):
            rows.append({"paper": source, "seeds": n, "tested tally checks": len(g),
                         "80 % power at 0.05": int((g.seeds_at_alpha <= n).sum()),
                         "80 % power at 0.05 / m": int((g.seeds_at_alpha_over_m <= n).sum())})
    return pd.DataFrame(rows), checks, comparisons


def power_markdown(by_seeds: pd.DataFrame, checks: pd.DataFrame, study: str, chosen: int, command: str = "") -> str:
    """The power report (`power_tables`' frames) as Markdown: what it assumes, the checks with
    80 % power by seed count per paper, and every check's seeds needed and power at ``chosen``."""
    from ltrlib.report import table_to_markdown

    def seeds(v: float) -> str:
        return "–" if math.isnan(v) else (f"> {SEEDS_CAP}" if math.isinf(v) else f"{v:.0f}")

    shown = checks.assign(**{"seeds at 0.05": checks.seeds_at_alpha.map(seeds),
                             "seeds at 0.05 / m": checks.seeds_at_alpha_over_m.map(seeds),
                             f"power at {chosen} (0.05)": checks.power_at_alpha.round(2),
                             f"power at {chosen} (0.05 / m)": checks.power_at_alpha_over_m.round(2)})
    shown = shown[["source", "claim", "scope", "in_tally", "kind", "comparisons", "seeds at 0.05",
                   "seeds at 0.05 / m", f"power at {chosen} (0.05)", f"power at {chosen} (0.05 / m)"]]
    lines = [f"# Seeds for a ledger study: power from `{study}`'s spreads", "",
             "For each comparison of every check that rule v2 decides by a test, the seeds at which its test "
             "would decide the claim with 80 % power, were the true effect **the paper's** and the seeds spread as "
             f"`{study}`'s did (`ltrlib.fidelity.power`: the tests, the margins and the levels; every choice is "
             "ours). Where the paper gives no number, or one in other units (FOLTR's online sums over "
             "T = 10,000 rounds against a study at T = 300), the observed mean stands in. A check needs all its "
             "comparisons, so its seeds are their most and its power their least. 0.05 is the level Holm's "
             "last step tests at, 0.05 / m its first (m: the paper's tested checks in its tally). The spreads "
             f"rest on `{study}`'s few seeds: estimates, not guarantees.", "",
             f"Regenerate: `{command}`." if command else "", "",
             "## Tally checks with 80 % power, by seeds", "", table_to_markdown(by_seeds), "",
             f"## Every check: seeds needed, and power at {chosen} seeds", "",
             "`> 1000`: no study here could decide it at the paper's effect (an effect the wrong way, or an "
             "equivalence the paper's own difference breaks); `–`: the seeds did not spread.", "",
             table_to_markdown(shown), ""]
    return "\n".join(lines)
