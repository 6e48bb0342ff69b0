"""The whole ledger across seeds, ``ltrlib study ledger``: the batch at every seed of a
design, every check of the ledger decided across them by `ltrlib.fidelity.across`
(``study.md``, ``study.csv`` and the pictures under ``figures/``), and what is read from a
recorded ledger study afterwards, written beside it: a reading by another rule
(`write_ledger_reading`), the seeds a new study needs (`write_ledger_power`), the README's
headline (`ledger_headline`). The loop is every study's (`ltrlib.studies.loop.run_study`).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Sequence

import pandas as pd

from ltrlib import config, sessions
from ltrlib.atomic import atomic_write_text
from ltrlib.manifest import RunManifest
from ltrlib.records import read_table
from ltrlib.report import table_to_markdown, validate_name
from ltrlib.studies import cluster
from ltrlib.studies.cluster import THREADS_PER_SEED
from ltrlib.studies.figures import FIGURES_DIR, figure_lines, save_figure
from ltrlib.studies.loop import Study, _seed_code, _seed_minutes, reports_folder, run_study
from ltrlib.studies.records import _recorded
from ltrlib.study_record import SeedRecord, StudyDesign

__all__ = ["FIGURES_DIR", "LEDGER_KEPT", "LEDGER_SEEDS", "LEDGER_STUDY", "LEDGER_VERDICTS", "ledger_design",
           "ledger_headline", "ledger_reading", "ledger_readings", "ledger_verdict_frame", "run_ledger_study",
           "write_ledger_figures", "write_ledger_power", "write_ledger_reading", "write_ledger_summary",
           "write_recorded_verdicts"]


#: What a ledger seed keeps besides its tables (``tables/**``, CSV, Parquet and JSON): the
#: run's files the ledger reads, and the ledger it wrote at that seed. Not the executed
#: notebooks, figures, models or Optuna journals.
LEDGER_KEPT = ("metrics.json", "provenance.json", "fidelity_claims.csv", "fidelity_effects.csv")
LEDGER_SEEDS = (0, 1, 2, 3, 4)
#: The committed ledger study the README's headline quotes (`ledger_headline`).
LEDGER_STUDY = config.PROJ_ROOT / "reports" / "ledger-small"


def ledger_design(study: str, scale: str = "small", seeds: Sequence[int] | None = None, dataset: str = "synthetic",
                  notebooks: str = "", rule: str | None = None, parameters: dict | None = None) -> dict:
    """The ledger study's design: the batch (``notebooks``, default all) at ``scale`` on
    every seed, with the notebook ``parameters`` (``ltrlib run -p``'s: each goes to the
    notebooks that declare it, e.g. ``{"profile": "paper"}`` to notebook 07), and the rule
    across seeds, JSON-able: the version ``rule`` of `ltrlib.fidelity.across.RULES` (default
    `DEFAULT_RULE`, v2) with its margins (`design_terms`). A v1 design holds what
    ``reports/ledger-small``'s was fixed with (and, like every design without parameters,
    no ``parameters`` key)."""
    from ltrlib.fidelity.across import DEFAULT_RULE, design_terms

    config.get_scale(scale)  # an unknown scale is refused here, naming the known ones
    chosen = [int(s) for s in (LEDGER_SEEDS if seeds is None else seeds)]
    return {"study": validate_name(study, "study id"), "profile": "ledger", "dataset": dataset, "scale": scale,
            "seeds": chosen, "notebooks": notebooks or "all",
            **({"parameters": dict(parameters)} if parameters else {}), **design_terms(rule or DEFAULT_RULE)}


def _registered_rule(study_dir: Path) -> str | None:
    """The rule version of a study's stored design (None when it has none yet): a study is
    decided by the rule it was registered with, whatever a new study's default is now."""
    from ltrlib.fidelity.across import rule_version

    return rule_version(StudyDesign.read(study_dir)) if StudyDesign.exists(study_dir) else None


def _ledger_seed(design: dict, seed: int, reports: Path, progress: bool = False, stop=None):
    """The batch at ``seed`` into ``<study>-seed<N>`` (resumed per notebook by the runner);
    what the study keeps, in a run's layout, so the ledger can be rebuilt from the record.
    ``stop``: as `_batch`'s."""
    only = None if design["notebooks"] == "all" else design["notebooks"]
    run_dir = cluster._batch(stop, dataset=design["dataset"], scale=design["scale"], seed=seed,
                      run_id=f"{design['study']}-seed{seed}", only=only, reports_dir=reports, progress=progress,
                      parameters=design.get("parameters") or None)
    files = {f: f.relative_to(run_dir).as_posix() for f in sorted((run_dir / "tables").rglob("*"))
             if f.is_file() and f.suffix in (".csv", ".parquet", ".json")}
    files.update({run_dir / name: name for name in LEDGER_KEPT})
    return run_dir, tuple(RunManifest.require(run_dir).notebooks), files


def _ledger_seeds(study_dir: Path, design: dict) -> tuple[pd.DataFrame, pd.DataFrame, dict[int, dict]]:
    """Every recorded seed of the design, its ledger rebuilt from its tables with today's
    claims: ``(per_seed, effects, seed records)``, ``effects`` every seed's comparisons
    (``EFFECT_COLUMNS`` and ``seed``), each record its ``seed.json`` with the ``code`` it
    ran (`_seed_code`)."""
    from ltrlib.fidelity.ledger import fidelity_report, notebook_tables
    from ltrlib.fidelity.sources import require_numbers

    recorded = {s: d for s, d in sorted(_recorded(study_dir).items()) if s in design["seeds"]}
    require_numbers(recorded, notebook_tables())
    reports = {s: fidelity_report(d) for s, d in recorded.items()}
    if not reports:
        return pd.DataFrame(), pd.DataFrame(), {}
    per_seed = pd.concat([r.claims.assign(seed=s) for s, r in reports.items()], ignore_index=True)
    effects = pd.concat([r.effects.assign(seed=s) for s, r in reports.items()], ignore_index=True)
    return per_seed, effects, {s: {**SeedRecord.read(d), "code": _seed_code(d)} for s, d in recorded.items()}


def _ledger_frames(study_dir: Path, design: dict, rule: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                                   pd.DataFrame, dict[int, dict]]:
    """`_ledger_seeds` decided across the seeds by ``rule`` (default: the design's version,
    `rule_version`), with every seed's comparisons, which the Effect Ratio forests draw:
    ``(per_seed, across, effects, seed records)``."""
    from ltrlib.fidelity.across import decide_across, rule_version, with_effect_ratios

    per_seed, effects, meta = _ledger_seeds(study_dir, design)
    if per_seed.empty:
        return pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}
    across = decide_across(per_seed, effects, rule or rule_version(design))
    return per_seed, with_effect_ratios(across, effects), effects, meta


def ledger_readings(study_dir: str | os.PathLike, rules: Sequence[str], seeds: Sequence[int] | None = None
                    ) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """A recorded ledger study's seeds (``seeds`` of them only, when given), rebuilt once with
    today's checks, decided by each version in ``rules`` (its design's own or another):
    ``{rule: (across, head)}``, each as `ledger_reading` gives it; written nowhere."""
    from ltrlib.fidelity.across import decide_across, with_effect_ratios

    study_dir = Path(study_dir)
    design = StudyDesign.read(study_dir)
    if seeds is not None:
        design = {**design, "seeds": [s for s in design.seeds if s in set(seeds)]}
    per_seed, effects, meta = _ledger_seeds(study_dir, design)
    if per_seed.empty:
        return {rule: (pd.DataFrame(), pd.DataFrame()) for rule in rules}
    first = per_seed[per_seed.seed == min(meta)]
    out = {}
    for rule in dict.fromkeys(rules):
        across = with_effect_ratios(decide_across(per_seed, effects, rule), effects)
        out[rule] = (across, _ledger_head(across, first))
    return out


def ledger_reading(study_dir: str | os.PathLike, rule: str = "v2", seeds: Sequence[int] | None = None
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A recorded ledger study decided by another rule version than its design's: a
    secondary reading, written nowhere (the study's own ``study.csv`` and ``study.md`` stay
    its registered rule's). Returns ``(across, head)``: every check as `write_ledger_summary`
    decides it, by ``rule``, and per paper its counted checks by verdict (`_ledger_head`).
    ``seeds``: only these of its recorded seeds."""
    return ledger_readings(study_dir, [rule], seeds)[rule]


def write_ledger_power(study_dir: str | os.PathLike, chosen: int, command: str = "") -> Path:
    """How many seeds a new ledger study needs, from a recorded one's spreads
    (`ltrlib.fidelity.power`), written beside it, never into it: ``<study>-power/power.md``
    and ``checks.csv`` (every check's seeds needed and power at ``chosen`` seeds). Returns
    the folder."""
    from ltrlib.fidelity.power import power_markdown, power_tables

    study_dir = Path(study_dir)
    per_seed, effects, _ = _ledger_seeds(study_dir, StudyDesign.read(study_dir))
    if per_seed.empty:
        raise ValueError(f"--power: {study_dir.name} has no recorded seed to take spreads from")
    by_seeds, checks, _ = power_tables(per_seed, effects, chosen)
    out = study_dir.parent / f"{study_dir.name}-power"
    out.mkdir(exist_ok=True)
    atomic_write_text(out / "power.md", power_markdown(by_seeds, checks, study_dir.name, chosen, command))
    atomic_write_text(out / "checks.csv", checks.to_csv(index=False))
    return out


def write_ledger_reading(study_dir: str | os.PathLike, rule: str, command: str = "") -> Path:
    """A recorded ledger study read by ``rule`` after the fact (`ledger_reading`), written
    beside it, never into it: ``<study>-reading-<rule>/reading.md`` and ``reading.csv``, with
    the registered rule's verdicts of today's claims next to ``rule``'s, and labelled a
    secondary reading (the study's verdicts are its registered rule's, in its own folder).
    Returns the folder."""
    from ltrlib.fidelity.across import rule_version

    study_dir = Path(study_dir)
    registered = rule_version(StudyDesign.read(study_dir))
    if rule == registered:
        raise ValueError(f"--reading {rule}: {study_dir.name} is registered with {rule}; its study.md is that reading")
    readings = ledger_readings(study_dir, [rule, registered])
    (across, head), (_, registered_head) = readings[rule], readings[registered]
    out = study_dir.parent / f"{study_dir.name}-reading-{rule}"
    out.mkdir(exist_ok=True)
    seeds = len(set(_recorded(study_dir)) & set(StudyDesign.read(study_dir)["seeds"]))
    chart = (figure_lines(write_ledger_figures(out, across, None, f"{study_dir.name} read by rule {rule} across "
                                                f"{seeds} seeds: a secondary reading, not the study's result")
                           ["verdicts"], f"Checks by verdict, {study_dir.name} read by rule {rule}",
                           f"Each paper's checks by their verdict by rule {rule}, as the table below counts them, "
                           "and the checks outside the tally.") if not across.empty else [])
    lines = [f"# {study_dir.name}, read by rule {rule}: a secondary reading", "",
             f"**Not the study's result.** `{study_dir.name}` was registered with rule {registered} before its "
             f"first seed; its verdicts are its own `study.md`. This reads the same recorded seeds by rule {rule} "
             "(docs/fidelity.md), after the fact, with the claims as they are today (checks mended since the "
             "study count as they now read, so both tables below may differ from the study's own).", "",
             f"Regenerate: `{command}`." if command else "", "",
             f"## Today's claims by the registered rule ({registered})", "", table_to_markdown(registered_head), "",
             f"## The same seeds by rule {rule}", "", *chart, table_to_markdown(head), "",
             "Every check by rule " + rule + ": `reading.csv`.", ""]
    atomic_write_text(out / "reading.md", "\n".join(lines))
    atomic_write_text(out / "reading.csv", across.to_csv(index=False))
    return out


def _ledger_head(across: pd.DataFrame, first: pd.DataFrame) -> pd.DataFrame:
    """Per paper, its counted checks by their verdict across seeds, beside the first seed's."""
    from ltrlib.fidelity.across import SEED_DEPENDENT
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    rows = []
    for source, g in across[(across.kind == "claim") & ~across.beyond.astype(bool)].groupby("source", sort=False):
        mine = first[(first.source == source) & (first.kind == "claim") & ~first.beyond.astype(bool)]
        rows.append({"paper": PAPERS[source].title, "checks": len(g),
                     **{v: int((g.verdict == v).sum()) for v in ("holds", "does not hold", SEED_DEPENDENT,
                                                                  NOT_DECIDED, "not available")},
                     "first seed (holds / does not hold)": f"{int((mine.ours == 'holds').sum())} / "
                                                           f"{int((mine.ours == 'does not hold').sum())}"})
    return pd.DataFrame(rows)


#: The verdicts a ledger study's head table counts, in its order (`_ledger_head`).
LEDGER_VERDICTS = ("holds", "does not hold", "seed-dependent", "not decided", "not available")
#: Where a ledger study (or a reading of one) keeps its pictures, beside its Markdown: the
#: verdict chart, ``verdicts.png`` (the study's headline image, for the README), and one
#: Effect Ratio forest per paper, ``effect_ratios_<source>.png``; each also as SVG.
VERDICTS_FIGURE = "verdicts"


def ledger_verdict_frame(across: pd.DataFrame) -> pd.DataFrame:
    """Per paper, its checks by their verdict across seeds, tidy (``paper, verdict, checks``):
    the counted ones (the papers' claims in their scopes) by `LEDGER_VERDICTS`, as the head
    table counts them (`_ledger_head`), then the checks outside the tally (beyond the paper,
    notes, exact checks, controls); what `ltrlib.plots.verdict_counts` draws."""
    from ltrlib.fidelity.across import SEED_DEPENDENT
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    assert (LEDGER_VERDICTS[2], LEDGER_VERDICTS[3]) == (SEED_DEPENDENT, NOT_DECIDED)
    rows = []
    for source, g in across.groupby("source", sort=False):
        counted = (g.kind == "claim") & ~g.beyond.astype(bool)
        rows += [(PAPERS[source].title, v, int((g.verdict[counted] == v).sum())) for v in LEDGER_VERDICTS]
        rows.append((PAPERS[source].title, "outside the tally", int((~counted).sum())))
    return pd.DataFrame(rows, columns=["paper", "verdict", "checks"])


def write_ledger_figures(folder: Path, across: pd.DataFrame, effects: pd.DataFrame | None, title: str
                         ) -> dict[str, str]:
    """The pictures of a ledger study across seeds, under ``folder/figures/``: the verdict
    chart (`ledger_verdict_frame`, `ltrlib.plots.verdict_counts`) titled ``title``, and per
    paper with comparisons in ``effects`` (every seed's, with ``seed``) its Effect Ratios'
    forest, each comparison's mean ratio with its 95 % interval across seeds and the paper's
    improvement beside our mean one (`ltrlib.fidelity.across.effect_ratio_intervals`,
    `ltrlib.plots.effect_ratios`); a paper none of whose comparisons has a stable ratio gets
    none. Pictures of a paper no longer in the study are removed.
    Returns ``{"verdicts": path, source: path, ...}``, PNG paths relative to ``folder``."""
    from ltrlib import plots
    from ltrlib.fidelity.across import effect_ratio_intervals
    from ltrlib.fidelity.ledger import PAPERS

    out = folder / FIGURES_DIR
    written = {"verdicts": save_figure(plots.verdict_counts(ledger_verdict_frame(across), title), out,
                                       VERDICTS_FIGURE)}
    if effects is not None and not effects.empty:
        seeds = effects.seed.nunique()
        for source, g in effect_ratio_intervals(effects).groupby("source", sort=False):
            if g.effect_ratio_mean.isna().all():  # no comparison with a stable ratio: nothing to draw
                continue
            fig = plots.effect_ratios(g.reset_index(drop=True),
                                      f"{PAPERS[source].short_name}, {seeds} seeds (mean, 95 % interval)")
            written[source] = save_figure(fig, out, f"effect_ratios_{source}")
    kept = {Path(p).stem for p in written.values()}
    for f in out.glob("effect_ratios_*.*"):
        if f.suffix in (".png", ".svg") and f.stem not in kept:
            f.unlink()
    return written


def write_recorded_verdicts(study_dir: str | os.PathLike) -> Path:
    """The verdict chart of a recorded ledger study drawn from its ``study.csv``, deciding
    nothing: a study recorded before it had pictures (ledger-small) gets its headline image
    without its seeds being read again by today's checks, which would change its recorded
    verdicts. Writes ``figures/verdicts.png`` and ``.svg`` beside ``study.md`` and leaves
    ``study.md``, ``study.csv`` and any Effect Ratio pictures as they are. Returns the PNG."""
    from ltrlib.fidelity.across import rule_version

    study_dir = Path(study_dir)
    design = StudyDesign.read(study_dir)
    if not (study_dir / "study.csv").exists():
        raise FileNotFoundError(f"{study_dir / 'study.csv'}: the study has no recorded summary to draw "
                                f"(`ltrlib study ledger --study {study_dir.name} --summarise-only` writes it)")
    across = read_table(study_dir / "study.csv", dtype={"beyond": bool})
    done = sum(s in design["seeds"] for s in _recorded(study_dir))
    title = (f"{design['study']}: checks by verdict across {done} of {len(design['seeds'])} seeds "
             f"(rule {rule_version(design)}, as recorded)")
    from ltrlib import plots

    return study_dir / save_figure(plots.verdict_counts(ledger_verdict_frame(across), title),
                                   study_dir / FIGURES_DIR, VERDICTS_FIGURE)


EFFECT_RATIOS_CAPTION = ("Each comparison's Effect Ratio (our improvement / the paper's: 1 the paper's effect, 0 "
                         "none, below 0 reversed): its mean over the seeds with a stable one, with its 95 % "
                         "t-interval; beside it the paper's improvement and our mean one.")


def ledger_headline(study_dir: str | os.PathLike = LEDGER_STUDY) -> str:
    """The README's headline of a ledger study, from its ``study.csv`` and record: per paper,
    its counted checks (the papers' claims in their scopes, as `_ledger_head` counts them)
    by their verdict across seeds, and how many seeds they rest on; called interim until
    every seed of the design is recorded. One line, so the README can quote it whole. A study
    registered with rule v2 says what its verdicts mean: "holds" is an effect, or an
    equivalence within the claim's margin, shown across the seeds; "seed-dependent" is
    heterogeneity shown."""
    from ltrlib.fidelity.across import SEED_DEPENDENT, rule_version
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    study_dir = Path(study_dir)
    design = StudyDesign.read(study_dir)
    done = sorted(s for s in _recorded(study_dir) if s in design["seeds"])
    planned = len(design["seeds"])
    if not done or not (study_dir / "study.csv").exists():
        return f"The ledger study ({design['scale']}, {planned} seeds) has recorded no seed yet."
    across = read_table(study_dir / "study.csv", dtype={"beyond": bool})
    counted = across[(across.kind == "claim") & ~across.beyond]
    verdicts = ("holds", "does not hold", SEED_DEPENDENT, NOT_DECIDED, "not available")
    parts = [f"{PAPERS[source].short_name} " + " / ".join(str(int((g.verdict == v).sum())) for v in verdicts)
             for source, g in counted.groupby("source", sort=False)]
    status = ("" if len(done) == planned else
              f"Interim, not the verdicts: {len(done)} of {planned} seeds recorded, and the rule decides at "
              f"{design['min_seeds']}. ")
    seeds = f"seed {done[0]}" if len(done) == 1 else f"seeds {', '.join(map(str, done))}"
    legend = ("holding / not holding / seed-dependent / not decided / not available" if rule_version(design) == "v1"
              else "holding (an effect, or an equivalence within the claim's margin, shown across the seeds) / not "
              "holding / seed-dependent (heterogeneity shown) / not decided / not available")
    return (f"{status}The ledger study at `{design['scale']}`, across {len(done)} of {planned} seeds "
            f"({seeds}), checks of the papers' claims {legend}: {'; '.join(parts)}.")


def write_ledger_summary(study_dir: Path, command: str) -> pd.DataFrame:
    """``study.md`` and ``study.csv`` of a ledger study from its recorded seeds: per paper a
    head table of the verdicts across seeds, every check with its verdict per seed, its
    verdict across seeds by the rule, the effect with its interval and the Effect Ratio's,
    the checks whose verdict differs from the first seed's, and each seed's wall time.
    Returns the across-seed table."""
    from ltrlib.fidelity.across import RULES, rule_version

    design = StudyDesign.read(study_dir)
    version = rule_version(design)
    per_seed, across, effects, meta = _ledger_frames(study_dir, design)
    named = "" if version == "v1" else f" {version}"  # v1's summary reads as it did before there were versions
    lines = [f"# Study {design['study']}: every claim of the ledger across seeds", "",
             f"- Data: the {design['dataset']} data at scale `{design['scale']}`; seeds {design['seeds']}, each a "
             f"run of notebooks `{design['notebooks']}` (each seed draws its own twin, folds, samplers, networks "
             "and FOLTR runs)."
             + ("" if not design.get("parameters") else " Notebook parameters, as `ltrlib run -p` gives them: "
                + ", ".join(f"`{k}` = {v!r}" for k, v in design["parameters"].items()) + "."),
             f"- Rule{named} (written before the first seed; `ltrlib.fidelity.across`, docs/fidelity.md), at least "
             f"{design['min_seeds']} seeds, level {design['alpha']}:",
             *[f"  - `{k}`: {v}." for k, v in design["rule"].items()],
             *(["- Margins (`ltrlib.fidelity.across.MARGINS`):", *[f"  - {k}: {v}." for k, v in
                                                                    design["margins"].items()],
                "- Read on the seeds' means by another rule (`READINGS_V2`):",
                *[f"  - {k}: {v}." for k, v in design.get("readings", {}).items()]] if version != "v1" else []), "",
             f"Regenerate: `{command}` (finished seeds are read back, not rerun; the ledger is rebuilt from "
             "their tables with the claims as they are now).", ""]
    if design["rule"] != RULES[version]:
        lines += ["**The rule in `ltrlib.fidelity.across` has changed since this design was fixed**: the "
                  "verdicts below are decided by today's rule.", ""]
    if across.empty:
        atomic_write_text(study_dir / "study.md", "\n".join(lines + ["(no seed recorded yet)", ""]))
        return across
    done = sorted(meta)
    first = per_seed[per_seed.seed == done[0]]
    interim = "" if len(done) == len(design["seeds"]) else ", interim"
    figures = write_ledger_figures(study_dir, across, effects,
                                   f"{design['study']}: checks by verdict across {len(done)} of "
                                   f"{len(design['seeds'])} seeds (rule {version}{interim})")
    lines += [f"## Across {len(done)} of {len(design['seeds'])} seeds", "",
              *figure_lines(figures["verdicts"], "Checks of each paper's claims by verdict across seeds",
                             "Each paper's checks by their verdict across seeds, as the table below counts them, "
                             "and the checks outside the tally."),
              "The papers' claims in the scopes they ran; notes, exact checks, controls and scopes beyond the "
              "papers are in each paper's last table.", "", table_to_markdown(_ledger_head(across, first)), ""]
    shown = ["claim", "scope", "rule", "per_seed", "verdict", "p_holm", "evidence", "effect_ratios"]
    if version != "v1":
        shown[6:6] = ["mean", "low", "high", "margin", "q_p", "seeds_needed"]
    from ltrlib.fidelity.ledger import PAPERS

    for source, g in across.groupby("source", sort=False):
        counted = (g.kind == "claim") & ~g.beyond.astype(bool)
        lines += [f"## {PAPERS[source].title}", ""]
        if source in figures:
            lines += figure_lines(figures[source], f"Effect Ratios: {PAPERS[source].title}", EFFECT_RATIOS_CAPTION)
        lines += [table_to_markdown(g[counted][shown].round(4)), ""]
        if (~counted).any():
            lines += ["Outside the tally:", "", table_to_markdown(g[~counted][shown].round(4)), ""]
    seed0 = first.set_index(["source", "claim", "scope"]).ours
    keyed = across.set_index(["source", "claim", "scope"])
    changed = keyed[(keyed.kind == "claim") & (keyed.verdict != seed0.reindex(keyed.index))]
    lines += [f"## Checks whose verdict across seeds differs from seed {done[0]}'s", "",
              table_to_markdown(changed.assign(**{f"seed {done[0]}": seed0.reindex(changed.index)})
                                .reset_index()[["source", "claim", "scope", f"seed {done[0]}", "verdict"]])
              if not changed.empty else "(none)", "",
              "## Wall time per seed", "",
              table_to_markdown(pd.DataFrame([{"seed": s, **_seed_minutes(m), "worker": m.get("worker", ""),
                                               "code": m["code"]} for s, m in meta.items()])), ""]
    atomic_write_text(study_dir / "study.md", "\n".join(lines))
    atomic_write_text(study_dir / "study.csv", across.to_csv(index=False))
    return across


def run_ledger_study(scale: str = "small", *, study: str | None = None, seeds: Sequence[int] | None = None,
                     dataset: str = "synthetic", notebooks: str = "", reports_dir: str | os.PathLike | None = None,
                     summarise_only: bool = False, save_progress: bool = False, progress: bool = True,
                     scheduler: str = "", threads: int = THREADS_PER_SEED, workers: int = 0,
                     parameters: dict | None = None, log=print) -> pd.DataFrame:
    """Run (or resume) the batch at every seed of the design (`ledger_design`), each a task
    of `dispatch` (`_ledger_seed`), and decide every check of the ledger across the seeds
    (`write_ledger_summary`, rewritten after every seed, `ltrlib.studies.loop.run_study`);
    returns the across-seed table. ``save_progress``: run nothing, `checkpoint` the seeds in
    progress. ``parameters``: the notebooks', part of the design."""
    study = study or f"ledger-{scale}"
    reports = reports_folder(reports_dir)
    study_dir = reports / study
    # A study already registered is decided by its own rule version; a new one by today's default.
    design = ledger_design(study, scale, seeds, dataset, notebooks, rule=_registered_rule(study_dir),
                           parameters=parameters)
    command = (f"{sessions.cli_command()} study ledger --scale {scale} --study {study} --seeds "
               f"{','.join(str(s) for s in design['seeds'])}"
               + (f" --notebooks {design['notebooks']}" if design["notebooks"] != "all" else "")
               + "".join(f" -p {k} {shlex.quote(json.dumps(v) if not isinstance(v, str) else v)}"
                         for k, v in design.get("parameters", {}).items()))
    run_study(LEDGER, design, study_dir, reports, command, summarise_only=summarise_only,
              save_progress=save_progress, progress=progress, scheduler=scheduler, threads=threads,
              workers=workers, log=log)
    return write_ledger_summary(study_dir, command)


def _summarised(study_dir: Path, command: str) -> str:
    """`write_ledger_summary`, with no words for a recorded seed's log line."""
    write_ledger_summary(study_dir, command)
    return ""


LEDGER = Study(run_seed=_ledger_seed, summarise=_summarised, doing="to run the batch", kept="run folders")
