"""The pre-registered multi-seed study of the Bi-LambdaMART claim: design, statistics, verdict.

One run of notebook 06 is one draw of data, folds, query sample and tuning, so one seed
cannot decide the central claim (Bi-λMART beats λMART*). The study runs notebook 06 at
every seed of its design (`ltrlib.studies`, ``ltrlib study bilambdamart``) and decides the
claim by a rule fixed before its confirmatory run (`DECISION_RULE`; docs/bilambdamart.md,
"Bi-LambdaMART, decided", carries the same design). This module holds the design and the
statistics, on the per-query results every run saves (``per_query_test.parquet``) and its
pairwise-uptake table; nothing here runs a notebook.

Endpoints, each a relative gain of test NDCG@5 (full-list IDCG), model over baseline:

* **primary**: Bi-λMART over λMART* on the main data (the paper's central claim);
* Bi-GBT_Softmax over GBT_Softmax (is the twin's pairwise structure learnable at all?);
* both on the control (the same documents generated without the pairwise term), and the
  difference in differences, main minus control, per seed;
* the pairwise uptake (`ltrlib.bilambdamart.uptake`) of each pair model minus λMART*'s.

Statistics. Per seed: the gain ``100 (mean model / mean baseline - 1)`` over its test
queries, and a paired t-test over those queries. Across seeds (each seed's whole pipeline
is one draw): the mean gain, its 95 % t-interval and a two-sided one-sample t-test
(`scipy.stats.ttest_1samp`) of the per-seed gains against 0. Pooled over queries,
stratified by seed: each seed's mean per-query difference weighted by the inverse of its
squared standard error (a fixed-effect combination; seeds hold different queries), with a
two-sided normal test; it ignores the seed-to-seed spread of tuning and data, so the
across-seed test is the one the rule uses. The difference in differences: a one-sample
t-test of the per-seed ``gain(main) - gain(control)``. No multiplicity correction: the
rule is a conjunction of its conditions (an intersection-union test, each at its own
level), and the other endpoints are reported, not tested for a claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ltrlib import config
from ltrlib.records import read_json, read_table
from ltrlib.study_record import SeedRecord, StudyDesign

__all__ = ["COMPARISONS", "CONFIRMATORY_STUDY", "DECISION_RULE", "ENDPOINT", "FOLLOWUP_STUDY", "PROFILES",
           "REGISTERED_PARAMETERS", "ReplacementSensitivity",
           "SHOWN_GAIN_PCT", "Summary", "VARIANTS", "VERDICT_FILE", "across_seed_tests", "decide", "followup_sizing",
           "kept_trials", "pooled_by_seed", "read_verdict", "replacement_sensitivity",
           "replacement_sensitivity_words", "seed_gains", "study_replacement_sensitivity", "seeds_for_power", "study_verdict", "study_verdicts",
           "summarise",
           "t_test_power"]

#: The metric of every endpoint (as notebook 06's per-query results name it).
ENDPOINT = "ndcg@5"
#: (name, model, baseline): the comparisons the study follows, the primary first.
COMPARISONS = (("bi_lambdamart", "Bi-λMART", "λMART*"), ("bi_softmax", "Bi-GBT_Softmax", "GBT_Softmax"))
VARIANTS = ("main", "control")
#: The smallest mean gain the rule calls shown (in %): half the smallest margin the paper
#: reports over λMART* (+0.68 % on Yahoo!, +0.82 % WEB30K, +1.09 % WEB10K) rounded down.
SHOWN_GAIN_PCT = 0.5
ALPHA = 0.01
#: The confirmatory study's folder, committed with the repository (`ltrlib.studies`), and the
#: file in it that the README, notebook 06 and the fidelity report quote.
CONFIRMATORY_STUDY = config.PROJ_ROOT / "reports" / "bilambdamart-confirmatory"
VERDICT_FILE = "verdict.json"

DECISION_RULE = (
    f"Shown: the mean gain of Bi-λMART over λMART* (test {ENDPOINT}) is at least +{SHOWN_GAIN_PCT} %, its "
    f"across-seed one-sample t-test gives p < {ALPHA}, and the gain exceeds the control's (the per-seed "
    f"difference in differences has mean > 0 and t-test p < {ALPHA}). Refuted on the twin: the 95 % interval's "
    f"upper end is below +{SHOWN_GAIN_PCT} %, with the open λRank settings tuned on validation, while "
    f"Bi-GBT_Softmax still beats GBT_Softmax (mean gain > 0, across-seed p < {ALPHA}). Otherwise inconclusive, "
    "with the interval. Decided only on every seed of the design; with fewer, the summary is interim.")

#: The follow-up study's folder (`FOLLOWUP`), committed as the first one is.
FOLLOWUP_STUDY = config.PROJ_ROOT / "reports" / "bilambdamart-followup"
#: The power the follow-up study is sized for, on the primary endpoint, at `ALPHA`.
FOLLOWUP_POWER = 0.8
#: Its seeds: fresh (the first study ran 0-9 and timed its budget on 100), as many as
#: `followup_sizing` derives from the first study's spread (tests/bilambdamart/test_study.py
#: checks the two agree).
FOLLOWUP_SEEDS = tuple(range(200, 216))
#: What the follow-up changes, in its design: the fix of the first study's degenerate trials.
FOLLOWUP_CHANGES = (
    "Every stage-2 model searches the same space in document units (ltrlib.bilambdamart.space: a pair model's "
    "learning rate over n - 1, its minimum data times n - 1, its minimum hessian times 2/(n - 1)), and a trial "
    "whose validation NDCG peaked at its first tree is replaced, so every model gets the same number of usable "
    "trials. Same data protocol, endpoints and rule as the first study; fresh seeds.")

_CONFIRMATORY_PARAMETERS = {
    "folds": 5, "stage1_max_trees": 200, "stage1_trials": 0, "stage2_features": 20,
    "train_queries": 1000, "n_trials": 16, "max_trees": 2000, "early_stopping": 30,
    "norm": "tuned", "truncation": "tuned", "hessian": "tuned", "control": True,
    "control_models": "λMART*,Bi-λMART,GBT_Softmax,Bi-GBT_Softmax"}

#: Notebook 06's parameters per study profile, with the scale. ``confirmatory`` is the
#: pre-registered budget (docs/bilambdamart.md, "Bi-LambdaMART, decided"); ``followup`` the
#: same after the degenerate-trial fix, on fresh seeds ("The follow-up study"); ``tiny``
#: exercises the machinery in the tests. The same for every model by construction:
#: notebook 06 gives every stage-2 model ``n_trials`` usable trials over one search space.
PROFILES: dict[str, dict] = {
    "confirmatory": {"scale": "small", "seeds": tuple(range(10)), "parameters": _CONFIRMATORY_PARAMETERS},
    "followup": {"scale": "small", "seeds": FOLLOWUP_SEEDS, "parameters": _CONFIRMATORY_PARAMETERS,
                 "changes": FOLLOWUP_CHANGES},
    "tiny": {"scale": "tiny", "seeds": (0, 1), "parameters": {
        "folds": 2, "stage1_max_trees": 20, "stage1_trials": 1, "train_queries": 60, "n_trials": 1,
        "max_trees": 20, "norm": "tuned", "truncation": "tuned", "hessian": "tuned", "control": True,
        "control_models": "λMART*,Bi-λMART,GBT_Softmax,Bi-GBT_Softmax"}},
}


#: Notebook 06's parameters that came after both studies were registered, at the values
#: their seeds ran with, so every seed of a study runs one protocol: the folds drawn from
#: seeds ``seed + part`` (`ltrlib.bilambdamart.two_stage.FOLD_STREAMS`). A design that names one
#: of them itself keeps its own value.
REGISTERED_PARAMETERS = {"fold_streams": "seed + part"}


def _paired(per_query: pd.DataFrame, variant: str, model: str, baseline: str,
            metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The per-query values of ``model`` and ``baseline`` on the same queries, or None
    when the run lacks either."""
    pq = per_query[(per_query.variant == variant) & (per_query.metric == metric)]
    wide = pq.pivot_table(index="qid", columns="model", values="value", aggfunc="first")
    if model not in wide or baseline not in wide:
        return None
    both = wide[[model, baseline]].dropna()
    return both[model].to_numpy(float), both[baseline].to_numpy(float)


def seed_gains(per_query: pd.DataFrame, seed: int, metric: str = ENDPOINT) -> pd.DataFrame:
    """One seed's comparisons: ``seed, comparison, variant, model, baseline`` (their mean
    ``metric``), ``gain_pct`` (relative, %), ``diff_mean`` and ``diff_se`` (the per-query
    difference's mean and standard error), ``queries`` and ``p_queries`` (paired t-test
    over the queries)."""
    from scipy import stats

    rows = []
    for name, model, baseline in COMPARISONS:
        for variant in VARIANTS:
            pair = _paired(per_query, variant, model, baseline, metric)
            if pair is None:
                continue
            m, b = pair
            d = m - b
            sd = d.std(ddof=1) if d.size > 1 else math.nan
            p = float(stats.ttest_rel(m, b).pvalue) if d.size > 1 and sd > 0 else math.nan
            rows.append({"seed": int(seed), "comparison": name, "variant": variant, "model": m.mean(),
                         "baseline": b.mean(), "gain_pct": 100 * (m.mean() / b.mean() - 1),
                         "diff_mean": d.mean(), "diff_se": sd / math.sqrt(d.size), "queries": d.size,
                         "p_queries": p})
    return pd.DataFrame(rows)


def _interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float, float]:
    """Mean, sd, the t-interval's ends and the one-sample t-test's p against 0."""
    from scipy import stats

    n = values.size
    mean = float(values.mean()) if n else math.nan
    if n < 2:
        return mean, math.nan, math.nan, math.nan, math.nan
    sd = float(values.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    p = float(stats.ttest_1samp(values, 0.0).pvalue) if sd > 0 else (0.0 if mean != 0 else 1.0)
    return mean, sd, mean - half, mean + half, p


def pooled_by_seed(gains: pd.DataFrame) -> pd.DataFrame:
    """Per comparison and variant, the per-query difference pooled over seeds, stratified
    by seed (inverse-variance weights of the seeds' mean differences): ``pooled_diff``,
    its ``pooled_se``, ``pooled_gain_pct`` (relative to the seeds' mean baseline) and
    ``p_pooled`` (two-sided normal test)."""
    from scipy import stats

    rows = []
    for (name, variant), g in gains.groupby(["comparison", "variant"], sort=False):
        ok = g[(g.diff_se > 0) & np.isfinite(g.diff_se)]
        if ok.empty:
            continue
        w = 1.0 / ok.diff_se.to_numpy() ** 2
        est = float(np.sum(w * ok.diff_mean.to_numpy()) / w.sum())
        se = float(1.0 / math.sqrt(w.sum()))
        rows.append({"comparison": name, "variant": variant, "pooled_diff": est, "pooled_se": se,
                     "pooled_gain_pct": 100 * est / float(ok.baseline.mean()),
                     "p_pooled": float(2 * stats.norm.sf(abs(est / se)))})
    return pd.DataFrame(rows)


def across_seed_tests(gains: pd.DataFrame, uptakes: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per endpoint: ``endpoint, seeds, mean, sd, ci_low, ci_high, p`` (the
    across-seed t-test), for every comparison and variant (in %), the difference in
    differences (``<comparison>/did``, in percentage points) and, given ``uptakes``
    (``seed, model, uptake_minus_reference``), each pair model's uptake over λMART*'s."""
    rows = []

    def add(endpoint: str, values, unit: str) -> None:
        values = np.asarray(values, dtype=float)
        mean, sd, low, high, p = _interval(values)
        rows.append({"endpoint": endpoint, "unit": unit, "seeds": values.size, "mean": mean, "sd": sd,
                     "ci_low": low, "ci_high": high, "p": p})

    for name, _, _ in COMPARISONS:
        wide = gains[gains.comparison == name].pivot_table(index="seed", columns="variant", values="gain_pct")
        for variant in VARIANTS:
            if variant in wide:
                add(f"{name}/{variant}", wide[variant].dropna(), "% gain")
        if set(VARIANTS) <= set(wide.columns):
            both = wide.dropna(subset=list(VARIANTS))
            add(f"{name}/did", both["main"] - both["control"], "points")
    if uptakes is not None and not uptakes.empty:
        for model in ("Bi-λMART", "Bi-GBT_Softmax"):
            u = uptakes[uptakes.model == model]
            if not u.empty:
                add(f"uptake/{model} - λMART*", u.uptake_minus_reference, "correlation")
    # The columns even with no seed yet, so a study's summary can be written before its first.
    return pd.DataFrame(rows, columns=["endpoint", "unit", "seeds", "mean", "sd", "ci_low", "ci_high", "p"])


@dataclass
class Summary:
    """What `summarise` found: the per-seed gains, the across-seed and pooled tables, the
    verdict (``shown``, ``refuted``, ``inconclusive``, ``interim``) and its words."""

    gains: pd.DataFrame
    seeds: pd.DataFrame
    pooled: pd.DataFrame
    verdict: str
    words: str
    planned: int


def decide(seeds: pd.DataFrame, planned: int) -> tuple[str, str]:
    """`DECISION_RULE` applied to `across_seed_tests`' table: ``(verdict, words)``."""
    by = seeds.set_index("endpoint")
    if "bi_lambdamart/main" not in by.index:
        return "interim", "No seed has finished."
    main = by.loc["bi_lambdamart/main"]
    done = int(main.seeds)
    if done < 2:
        interval = f"gain of Bi-λMART over λMART* {main['mean']:+.2f} % at the one seed (no interval from one seed)"
    else:
        interval = (f"mean gain of Bi-λMART over λMART* {main['mean']:+.2f} % (95 % interval "
                    f"[{main.ci_low:+.2f} %, {main.ci_high:+.2f} %], across-seed p = {main.p:.3g}, {done} seeds)")
    if done < planned:
        return "interim", f"Interim, not the verdict: {done} of {planned} seeds have finished; {interval}."
    did = by.loc["bi_lambdamart/did"] if "bi_lambdamart/did" in by.index else None
    soft = by.loc["bi_softmax/main"] if "bi_softmax/main" in by.index else None
    shown = (main["mean"] >= SHOWN_GAIN_PCT and main.p < ALPHA and did is not None
             and did["mean"] > 0 and did.p < ALPHA)
    if shown:
        return "shown", (f"Shown on the twin: {interval}; it exceeds the control's by "
                         f"{did['mean']:+.2f} points (p = {did.p:.3g}).")
    softmax_learns = soft is not None and soft["mean"] > 0 and soft.p < ALPHA
    if main.ci_high < SHOWN_GAIN_PCT and softmax_learns:
        return "refuted", (f"Refuted on the twin: {interval}, whose upper end is below +{SHOWN_GAIN_PCT} %, "
                           f"while Bi-GBT_Softmax beats GBT_Softmax by {soft['mean']:+.2f} % (p = {soft.p:.3g}).")
    return "inconclusive", f"Inconclusive: {interval}."


def summarise(per_seed: dict[int, tuple[pd.DataFrame, pd.DataFrame | None]], planned: int,
              metric: str = ENDPOINT) -> Summary:
    """The study's statistics from ``{seed: (per_query, uptake table or None)}`` (the
    finished seeds) and the number of seeds the design plans."""
    gains = pd.concat([seed_gains(pq, seed, metric) for seed, (pq, _) in sorted(per_seed.items())],
                      ignore_index=True) if per_seed else pd.DataFrame(
        columns=["seed", "comparison", "variant", "model", "baseline", "gain_pct", "diff_mean", "diff_se",
                 "queries", "p_queries"])
    uptakes = [u.assign(seed=seed) for seed, (_, u) in sorted(per_seed.items()) if u is not None]
    seeds = across_seed_tests(gains, pd.concat(uptakes, ignore_index=True) if uptakes else None)
    pooled = pooled_by_seed(gains) if not gains.empty else pd.DataFrame()
    kind, words = decide(seeds, planned)
    return Summary(gains, seeds, pooled, kind, words, planned)


def t_test_power(effect_size: float, n: int, alpha: float = ALPHA) -> float:
    """The power of a two-sided one-sample t-test at ``alpha`` over ``n`` seeds when the
    true mean is ``effect_size`` standard deviations from 0 (the noncentral t)."""
    from scipy import stats

    if n < 2:
        return math.nan
    df, noncentrality = n - 1, effect_size * math.sqrt(n)
    critical = stats.t.ppf(1 - alpha / 2, df)
    return float(stats.nct.sf(critical, df, noncentrality) + stats.nct.cdf(-critical, df, noncentrality))


def seeds_for_power(mean: float, sd: float, power: float = FOLLOWUP_POWER, alpha: float = ALPHA,
                    most: int = 1000) -> int:
    """The fewest seeds giving `t_test_power` at least ``power`` for a true mean ``mean``
    with seed-to-seed spread ``sd``."""
    if not (sd > 0 and mean != 0):
        raise ValueError(f"seeds_for_power needs sd > 0 and a nonzero mean, got mean {mean}, sd {sd}")
    for n in range(2, most + 1):
        if t_test_power(abs(mean) / sd, n, alpha) >= power:
            return n
    raise ValueError(f"more than {most} seeds would be needed for power {power}")


def followup_sizing(first_study: str | Path = CONFIRMATORY_STUDY) -> tuple[int, str]:
    """How many seeds the follow-up needs, from the first study's across-seed table
    (``study.csv``): the seeds for `FOLLOWUP_POWER` at `ALPHA` on the primary endpoint if
    its observed mean and spread are the true ones, and in words what that leaves for the
    difference in differences (its own observed effect)."""
    table = read_table(Path(first_study) / "study.csv")
    by = table[table.table == "across_seeds"].set_index("endpoint")
    main, did = by.loc["bi_lambdamart/main"], by.loc["bi_lambdamart/did"]
    n = seeds_for_power(float(main["mean"]), float(main["sd"]))
    did_power = t_test_power(float(did["mean"]) / float(did["sd"]), n)
    did_needs = seeds_for_power(float(did["mean"]), float(did["sd"]))
    words = (f"{n} seeds: the fewest giving the primary endpoint's across-seed t-test power >= "
             f"{FOLLOWUP_POWER:.0%} at alpha = {ALPHA} (two-sided) if the first study's mean gain "
             f"({main['mean']:+.2f} %) and seed-to-seed sd ({main['sd']:.2f} %) are the true ones "
             f"(power {t_test_power(float(main['mean']) / float(main['sd']), n):.2f}). The difference in "
             f"differences ({did['mean']:+.2f} points, sd {did['sd']:.2f}) then has power {did_power:.2f}; "
             f"{did_needs} seeds would give it {FOLLOWUP_POWER:.0%}. The rule needs both, so this study can end "
             "inconclusive even if the effect is real.")
    return n, words


def study_verdicts() -> str:
    """Both studies' verdicts (`study_verdict`), as the README, notebook 06 and ``fidelity.md``
    give them: the first study, whose pair models lost a third of their trials to
    degenerate points, and the follow-up that fixed them."""
    return (f"First study (seeds 0-9, pair models searched in LightGBM's units, a third of their trials "
            f"degenerate): {study_verdict(CONFIRMATORY_STUDY)} Follow-up study (fresh seeds, every model searched "
            f"in document units, degenerate trials replaced): {study_verdict(FOLLOWUP_STUDY)}")


def read_verdict(study_dir: str | Path = CONFIRMATORY_STUDY) -> dict | None:
    """A study's ``verdict.json`` (``verdict``, ``words``, ``seeds_done``, ``planned``), or
    None when it has not been written."""
    path = Path(study_dir) / VERDICT_FILE
    return read_json(path) if path.exists() else None


def protocol_words(parameters: dict) -> str:
    """The budget a study's verdict rests on, from its ``design.json`` parameters, in words:
    a verdict on the twin at a reduced protocol is not one at the paper's."""
    stage1 = ("stage 1 untuned" if not parameters.get("stage1_trials")
              else f"stage 1 tuned with {parameters['stage1_trials']} trials")
    return (f"{stage1}, the {parameters['stage2_features']} base features with the most stage-1 gain, "
            f"{parameters['train_queries']:,} training queries and {parameters['n_trials']} Optuna trials a model")


def study_verdict(study_dir: str | Path = CONFIRMATORY_STUDY) -> str:
    """The sentence the README, notebook 06 and ``fidelity.md`` give for the central claim:
    the pre-registered study's verdict in its own words and the protocol it rests on
    (`protocol_words`), or that it has not run."""
    found = read_verdict(study_dir)
    if found is None:
        return (f"The pre-registered multi-seed study `{Path(study_dir).name}` (`ltrlib study bilambdamart`) has "
                "not recorded a seed yet; until it has, it gives no verdict on the central claim.")
    protocol = ""
    if StudyDesign.exists(study_dir):
        parameters = StudyDesign.read(study_dir, keys=("parameters",))["parameters"]
        protocol = f" On a reduced protocol: {protocol_words(parameters)}."
    return f"Pre-registered study, {found['seeds_done']} of {found['planned']} seeds: {found['words']}{protocol}"


# --------------------------------------------------------------------------- replacement sensitivity
# After the fact (issue 62, item 5), not part of the registered rule: the follow-up study gives
# every model `n_trials` *usable* trials, so a model with many degenerate trials runs more
# trials in all, and may keep one that a budget of `n_trials` trials run would never have seen.


def kept_trials(trials: pd.DataFrame, n_trials: int) -> pd.DataFrame:
    """Per model of one seed's ``tuning_trials`` table (``model, number, value``: Optuna's
    trial ``number`` counts every trial started, replaced ones included, and replaced trials
    have no row), the kept trial and the one a budget of ``n_trials`` trials run would have
    kept: ``model, trials, kept_number, kept_vali, first_vali`` (the best validation value
    among trials numbered below ``n_trials``), ``beyond`` (the kept trial is numbered
    ``n_trials`` or more: it exists only because earlier trials were replaced) and
    ``advantage`` (``kept_vali - first_vali``, 0 unless ``beyond``).

    The kept trial is the best completed one, the first of equals, as Optuna's ``best_trial``.
    Without replacements the replaced trials themselves would have counted among the first
    ``n_trials``; their values are not in this table, but where the records have them
    (``tuning_summary``'s ``replaced_above_kept``, ``replaced_best``) none beat the model's
    best, and on the follow-up study none beats ``first_vali`` either. The sampler's later
    points would also have differed (TPE does not learn from a failed trial), so this is the
    best of the trials the study ran within the budget, not a rerun."""
    missing = {"model", "number", "value"} - set(trials.columns)
    if missing:
        raise ValueError(f"kept_trials needs a tuning_trials table with {sorted(missing)}; it has "
                         f"{list(trials.columns)}")
    rows = []
    for model, g in trials.groupby("model", sort=False):
        done = g[np.isfinite(g.value.to_numpy(float))].sort_values("number", kind="stable")
        if done.empty:
            continue
        kept = done.loc[done.value.idxmax()]
        first = done[done.number < n_trials]
        first_vali = float(first.value.max()) if not first.empty else math.nan
        beyond = int(kept.number) >= n_trials
        rows.append({"model": model, "trials": len(g), "kept_number": int(kept.number),
                     "kept_vali": float(kept.value), "first_vali": first_vali, "beyond": beyond,
                     "advantage": float(kept.value) - first_vali if beyond else 0.0})
    return pd.DataFrame(rows, columns=["model", "trials", "kept_number", "kept_vali", "first_vali", "beyond",
                                       "advantage"])


@dataclass
class ReplacementSensitivity:
    """What `replacement_sensitivity` found: ``kept`` (`kept_trials` per seed, with ``seed``),
    ``gains`` (per seed and variant the recorded and the adjusted gain, ``gain_pct`` and
    ``adjusted_gain_pct``, and the advantages subtracted), ``tests`` (`across_seed_tests` of
    the adjusted gains), the comparison's model and baseline, ``n_trials``, and whether the
    control's gains could be adjusted (its trials recorded one by one)."""

    kept: pd.DataFrame
    gains: pd.DataFrame
    tests: pd.DataFrame
    comparison: str
    model: str
    baseline: str
    n_trials: int
    control_adjusted: bool

    @property
    def seeds(self) -> int:
        return int(self.kept.seed.nunique()) if not self.kept.empty else 0

    def beyond(self, model: str) -> int:
        """At how many seeds ``model``'s kept trial exists only because trials were replaced."""
        return int(self.kept[self.kept.model == model].beyond.sum())

    def test(self, endpoint: str) -> pd.Series:
        """The adjusted across-seed test of ``<comparison>/<endpoint>`` (``main``, ``did``)."""
        return self.tests.set_index("endpoint").loc[f"{self.comparison}/{endpoint}"]

    @property
    def words(self) -> str:
        """The sensitivity in one paragraph, labelled as an analysis after the fact."""
        main, did = self.test("main"), self.test("did")

        def against(p: float) -> str:
            return f"{'below' if p < ALPHA else 'not below'} the rule's {ALPHA}"

        control = ("the control's gain is adjusted the same way" if self.control_adjusted else
                   "the control's trials are not recorded one by one, so its gain stands as measured")
        return (f"A sensitivity analysis after the fact, not the registered verdict: at "
                f"{self.beyond(self.model)} of {self.seeds} seeds {self.model}'s kept trial (its best on validation) "
                f"is numbered beyond the {self.n_trials} trials of the budget, so it exists only because trials "
                f"were replaced ({self.baseline}: {self.beyond(self.baseline)} of {self.seeds}). Subtracting, per "
                f"seed, the kept trial's validation {ENDPOINT} advantage over the best of the first {self.n_trials} "
                f"trials from the model's test {ENDPOINT} leaves the mean gain of {self.model} over {self.baseline} "
                f"at {main['mean']:+.2f} % (across-seed p = {main.p:.2g}, {against(main.p)}) and the difference in "
                f"differences at {did['mean']:+.2f} points (p = {did.p:.2g}, {against(did.p)}); {control}. The "
                f"verdict's parity is {self.n_trials} usable trials a model, not {self.n_trials} trials run.")


def replacement_sensitivity(trials: dict[int, pd.DataFrame], gains: pd.DataFrame, n_trials: int,
                            comparison: str = "bi_lambdamart") -> ReplacementSensitivity | None:
    """How far the verdict leans on replaced trials, from ``{seed: tuning_trials}`` and the
    study's per-seed gains (`seed_gains`' columns; ``model`` and ``baseline`` are the test
    means): per seed, each model's `kept_trials`, then each gain with the kept trials'
    validation advantages taken off the test means, ``100 ((model - adv_model) / (baseline -
    adv_baseline) - 1)``, and the rule's own across-seed tests (`across_seed_tests`: the
    one-sample t-test of the gains and of the difference in differences) on the adjusted
    gains. A variant whose models have no trial records (the control's, which notebook 06
    does not record one by one) keeps its gain as recorded. None when no seed has records."""
    _, model, baseline = next(c for c in COMPARISONS if c[0] == comparison)
    kept = [kept_trials(t, n_trials).assign(seed=int(seed)) for seed, t in sorted(trials.items())]
    if not kept:
        return None
    kept = pd.concat(kept, ignore_index=True)
    advantage = kept.set_index(["seed", "model"]).advantage
    names = {"main": (model, baseline), "control": (f"control {model}", f"control {baseline}")}
    rows, control_adjusted = [], True
    for g in gains[(gains.comparison == comparison) & gains.seed.isin(kept.seed)].itertuples(index=False):
        m_name, b_name = names[g.variant]
        recorded = (int(g.seed), m_name) in advantage.index and (int(g.seed), b_name) in advantage.index
        if g.variant == "control" and not recorded:
            control_adjusted = False
        adv_m = float(advantage.get((int(g.seed), m_name), 0.0))
        adv_b = float(advantage.get((int(g.seed), b_name), 0.0))
        rows.append({"seed": int(g.seed), "comparison": comparison, "variant": g.variant, "gain_pct": g.gain_pct,
                     "model_advantage": adv_m, "baseline_advantage": adv_b,
                     "adjusted_gain_pct": 100 * ((g.model - adv_m) / (g.baseline - adv_b) - 1)})
    adjusted = pd.DataFrame(rows)
    tests = across_seed_tests(adjusted.drop(columns="gain_pct").rename(columns={"adjusted_gain_pct": "gain_pct"}))
    return ReplacementSensitivity(kept, adjusted, tests, comparison, model, baseline, int(n_trials),
                                  control_adjusted)


def study_replacement_sensitivity(study_dir: str | Path = FOLLOWUP_STUDY) -> ReplacementSensitivity | None:
    """`replacement_sensitivity` of a committed study: its design's ``n_trials``, the per-seed
    gains of its ``study.csv`` and each recorded seed's ``tuning_trials.csv``; None before
    ``study.csv`` or any seed's trials exist."""
    study_dir = Path(study_dir)
    if not (study_dir / "study.csv").exists() or not StudyDesign.exists(study_dir):
        return None
    design = StudyDesign.read(study_dir, keys=("parameters",))
    table = read_table(study_dir / "study.csv")
    gains = table[table.table == "per_seed"]
    trials = {}
    for seed in design["seeds"]:
        d = study_dir / "seeds" / f"seed{seed}"
        if SeedRecord.exists(d) and (d / "tuning_trials.csv").exists():
            trials[int(seed)] = read_table(d / "tuning_trials.csv")
    return replacement_sensitivity(trials, gains, design["parameters"]["n_trials"])


def replacement_sensitivity_words(study_dir: str | Path = FOLLOWUP_STUDY) -> str:
    """The follow-up study's replacement sensitivity as the README, notebook 06 and
    docs/bilambdamart.md give it, beside its verdict (`study_verdicts`)."""
    found = study_replacement_sensitivity(study_dir)
    if found is None:
        return f"`{Path(study_dir).name}` has recorded no seed's trials yet; no replacement sensitivity."
    return f"Follow-up study, replacement sensitivity: {found.words}"
