"""Two recorded ledger studies side by side, ``ltrlib study ledger --study SECOND --beside
FIRST``: per paper the verdict counts of both, and every check whose verdict changed from
the first study to the second, with why, read off a ladder of readings that each change one
thing (`ladder_changes`):

1. the first study as it recorded itself (its ``study.csv``, its registered rule, its
   checks as they read then);
2. its seeds rebuilt with today's checks, by its registered rule: a change is a check
   mended since (or new, or gone);
3. the same, by the second study's rule: a change is the rule's;
4. the second study's seeds rebuilt with today's checks, by its rule: a change is the
   seeds', or, for a paper whose notebooks ran with other parameters (the seeds'
   ``run.json``), the protocol's or the seeds', which these readings cannot tell apart.

A protocol arm splits that last step (``--arm ARM``): a study of the second study's seeds
that ran those papers' notebooks as the first study did. Its reading of those papers
(`ARM`, "the second study's seeds at the first's protocol") goes between 3 and 4, so that
3 → arm is the seeds' step (the seeds, and the code that ran them) and arm → 4 the
protocol's alone (the same seeds, data and, where the arm ran on the second's code, code).

And why the second study leaves its checks not decided or seed-dependent, counted by the
rule's ``reason`` (`ltrlib.fidelity.across.REASONS_V2`). Written beside both, into neither:
``reports/<second>-beside-<first>/beside.md``, ``changes.csv`` and the head tables' chart,
``figures/verdicts.png`` (and ``.svg``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ltrlib.atomic import atomic_write_text
from ltrlib.manifest import RunManifest
from ltrlib import provenance
from ltrlib.records import read_table
from ltrlib.report import table_to_markdown
from ltrlib.studies.figures import FIGURES_DIR, figure_lines, save_figure
from ltrlib.studies.ledger import LEDGER_VERDICTS, VERDICTS_FIGURE, ledger_reading, ledger_readings
from ltrlib.studies.ledger import ledger_verdict_frame
from ltrlib.studies.loop import _seed_code
from ltrlib.studies.records import _recorded
from ltrlib.study_record import StudyDesign

__all__ = ["ARM", "LADDER", "ladder_changes", "protocol_changes", "study_changes", "write_study_changes"]

KEY = ["source", "claim", "scope"]
#: The ladder's readings, in order (see the module's docstring); each is a table of every
#: check (``source, claim, kind, scope, beyond, verdict``).
LADDER = ("first", "first_today", "first_by_rule", "second")
#: The protocol arm's reading (see the module's docstring): the second study's reading with
#: the papers whose protocol differs read from the arm; it goes before ``second``.
ARM = "second_at_first_protocol"
#: A run's own parameters, which differ from seed to seed by design: not the protocol.
OWN_PARAMETERS = ("run_id", "seed")


def protocol_changes(first: dict[int, Path], second: dict[int, Path]) -> dict[str, str]:
    """Per paper (its source, `ltrlib.fidelity.ledger.PAPERS`), how the notebooks it reads
    ran differently in two studies' recorded seeds (``{seed: record folder}``), from each
    seed's run record (``run.json``): ``"<notebook>: <name> <first's> → <second's>"`` for every
    parameter (the run's own, `OWN_PARAMETERS`, aside) whose values differ; a parameter a
    notebook was not given reads as its default. Papers whose notebooks ran alike are left
    out."""
    from ltrlib.fidelity.ledger import PAPERS

    def ran(records: dict[int, Path]) -> dict[str, dict[str, set[str]]]:
        out: dict[str, dict[str, set[str]]] = {}
        for d in records.values():
            manifest = RunManifest.read(d)
            for notebook, entry in (manifest.notebooks if manifest is not None else {}).items():
                for name, value in entry.parameters.items():
                    if name not in OWN_PARAMETERS:
                        out.setdefault(notebook, {}).setdefault(name, set()).add(json.dumps(value))
        return out

    a, b = ran(first), ran(second)
    changes = {}
    for source, paper in PAPERS.items():
        said = []
        for notebook in paper.reads:
            mine, theirs = a.get(notebook, {}), b.get(notebook, {})
            for name in sorted(set(mine) | set(theirs)):
                was, now = mine.get(name, {"(default)"}), theirs.get(name, {"(default)"})
                if was != now:
                    said.append(f"{notebook}: {name} {', '.join(sorted(was))} → {', '.join(sorted(now))}")
        if said:
            changes[source] = "; ".join(said)
    return changes


def ladder_changes(readings: dict[str, pd.DataFrame], registered: str, rule: str,
                   protocol: dict[str, str]) -> pd.DataFrame:
    """Every check in any of the `LADDER`'s ``readings``, its verdict in each, and ``why``:
    each step of the ladder at which it changed, said as what that step changes (a mend
    since the first study, the rule ``registered`` → ``rule``, the seeds, or, for a paper in
    ``protocol`` (`protocol_changes`), the protocol or the seeds). ``changed``: the first
    study's verdict differs from the second's; ``mended``, ``by_rule``, ``by_seeds``: the
    step from the first study to today's checks, from its rule to the second's, from the first
    study's seeds to the second's, changed it; ``counted``: a claim of the paper in its scope
    (what the head tables count), by its latest reading, and ``counted_first`` as the first
    study counted it. A check a reading lacks is empty there.

    With the protocol arm's reading (`ARM` in ``readings``) the last step splits: ``by_seeds``
    is 3 → arm (the seeds), ``by_protocol`` arm → 4 (the protocol alone); without it
    ``by_protocol`` is False throughout. A check that only one protocol's runs have (a scope
    the other does not run) is said so at the step it appears or goes."""
    ladder = _ladder(readings)
    frames = {name: readings[name].drop_duplicates(KEY).set_index(KEY) for name in ladder}
    keys = list(dict.fromkeys([k for name in reversed(ladder) for k in frames[name].index]))
    table = pd.DataFrame(index=pd.MultiIndex.from_tuples(keys, names=KEY))
    kinds = pd.concat([frames[n][["kind", "beyond"]] for n in reversed(ladder)])
    kinds = kinds[~kinds.index.duplicated()].reindex(table.index)
    table["kind"], table["beyond"] = kinds.kind, kinds.beyond.astype(bool)
    for name in ladder:
        table[name] = frames[name].verdict.reindex(table.index)
    present = table[list(ladder)].notna()
    seeds_to = ARM if ARM in frames else "second"
    table["mended"] = present["first"] & present.first_today & (table["first"] != table.first_today)
    table["by_rule"] = present.first_today & present.first_by_rule & (table.first_today != table.first_by_rule)
    table["by_seeds"] = present.first_by_rule & present[seeds_to] & (table.first_by_rule != table[seeds_to])
    table["by_protocol"] = (present[ARM] & present.second & (table[ARM] != table.second) if ARM in frames
                            else False)
    whys = []
    for (source, _, _), r in table.iterrows():
        why = []
        here = present.loc[r.name]
        if here.first_today != here["first"]:
            why.append("a check new since the first study" if pd.isna(r["first"]) else
                       "a check gone since the first study")
        if r.mended:
            why.append("the check, mended since the first study")
        if r.by_rule:
            why.append(f"the rule ({registered} → {rule})")
        said = f"the protocol ({protocol[source]})" if source in protocol else ""
        if ARM in frames:
            if r.by_seeds:
                why.append("the seeds")
            if r.by_protocol:
                why.append(said)
            if source in protocol and here[ARM] != here.second:
                why.append(f"{said}: a check only one protocol's runs have")
        else:
            if r.by_seeds:
                why.append(f"{said} or the seeds" if said else "the seeds")
            if said and here.first_by_rule != here.second:
                why.append(f"{said} or the seeds: a check only one of them has")
        whys.append("; ".join(why))
    table["changed"] = table["first"].fillna("") != table["second"].fillna("")
    table["counted"] = (table.kind == "claim") & ~table.beyond
    was = frames["first"].reindex(table.index)
    table["counted_first"] = (was.kind == "claim") & ~was.beyond.fillna(True).astype(bool)
    table["why"] = whys
    return table.reset_index()[[*KEY, "kind", "counted", "counted_first", *ladder, "changed", "mended", "by_rule",
                                "by_seeds", "by_protocol", "why"]]


def _ladder(readings: dict) -> tuple[str, ...]:
    """The ladder's readings in order: `LADDER`, with the protocol arm's (`ARM`) before the
    second study's where ``readings`` has it."""
    return (*LADDER[:-1], ARM, LADDER[-1]) if ARM in readings else LADDER


def _recorded_csv(study_dir: Path) -> pd.DataFrame:
    path = study_dir / "study.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the study has no summary to compare (`ltrlib study ledger --study "
                                f"{study_dir.name} --summarise-only` writes it from its recorded seeds)")
    return read_table(path, dtype={"beyond": bool})


def study_changes(first_dir: str | os.PathLike, second_dir: str | os.PathLike, arm_dir: str | os.PathLike | None = None
                  ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict]:
    """Two recorded ledger studies' readings (`LADDER`) and their `ladder_changes`:
    ``(changes, readings, context)``, ``context`` the rule versions, the `protocol_changes`,
    each study's recorded and planned seeds and the code commits they ran (`_seed_code`),
    and ``stale``, the checks whose verdict in the second study's own ``study.csv`` differs
    from its seeds read today (a summary older than today's checks; None without one). The
    first study's seeds are rebuilt once with today's checks and decided by both rules
    (`ledger_readings`), and its ``study.csv`` read as recorded; the second's seeds are
    rebuilt by its rule, so that the last step changes the seeds alone; neither study is
    written to. ``arm_dir``: the protocol arm (`_check_arm`), whose reading joins the
    ladder as `ARM`; ``context["arm"]`` names it (None without one)."""
    from ltrlib.fidelity.across import rule_version

    first_dir, second_dir = Path(first_dir), Path(second_dir)
    designs = {name: StudyDesign.read(d) for name, d in (("first", first_dir), ("second", second_dir))}
    registered, rule = rule_version(designs["first"]), rule_version(designs["second"])
    recorded_first = _recorded_csv(first_dir)  # refused before any seed is read
    # Each study's records, found once (a glob of its seeds folder, which warns of strays).
    records = {name: {s: d for s, d in _recorded(folder).items() if s in designs[name]["seeds"]}
               for name, folder in (("first", first_dir), ("second", second_dir))}
    seeds = {name: sorted(records[name]) for name in records}
    protocol = protocol_changes(records["first"], records["second"])
    arm = None if arm_dir is None else _check_arm(Path(arm_dir), rule, protocol, records)  # refused as early
    readings_first = ledger_readings(first_dir, [registered, rule])
    today, by_rule = readings_first[registered][0], readings_first[rule][0]
    second, _ = ledger_reading(second_dir, rule)
    if second.empty:
        raise ValueError(f"--beside: {second_dir.name} has no recorded seed to compare")
    readings = {"first": recorded_first, "first_today": today, "first_by_rule": by_rule, "second": second}
    if arm is not None:
        # The second study's reading, with the papers whose protocol differs read from the arm's seeds.
        at_first, _ = ledger_reading(arm_dir, rule, seeds=list(arm))
        papers = list(protocol)
        readings[ARM] = pd.concat([second[~second.source.isin(papers)], at_first[at_first.source.isin(papers)]],
                                  ignore_index=True)
    # The second study's own summary, if older than today's checks, is not what is compared: say so.
    stale = None  # the second study has no summary of its own yet
    if (second_dir / "study.csv").exists():
        recorded = _recorded_csv(second_dir).set_index(KEY).verdict
        stale = int((recorded.reindex(second.set_index(KEY).index) != second.set_index(KEY).verdict).sum())
    code = {name: sorted({_seed_code(d) for d in records[name].values()}) for name in records}
    if arm is not None:
        code["arm"] = sorted({_seed_code(d) for d in arm.values()})
    context = {"registered": registered, "rule": rule, "protocol": protocol, "seeds": seeds,
               "planned": {name: designs[name]["seeds"] for name in designs}, "stale": stale, "code": code,
               "arm": None if arm_dir is None else Path(arm_dir).name}
    return ladder_changes(readings, registered, rule, protocol), readings, context


def _check_arm(arm_dir: Path, rule: str, protocol: dict[str, str], records: dict[str, dict[int, Path]]
               ) -> dict[int, Path]:
    """The protocol arm's records of the second study's seeds (``records["second"]``), once
    it is shown to be such an arm: registered with the second study's ``rule``, every one of
    those seeds recorded on the second study's data (each seed's provenance,
    `ltrlib.provenance.matches`), and each paper whose protocol differs (``protocol``) run as the first study
    ran it (`protocol_changes`). ValueError naming
    what is wrong otherwise. Reads run records only, no seed's tables."""
    from ltrlib.fidelity.across import rule_version

    design = StudyDesign.read(arm_dir)
    name = arm_dir.name
    if rule_version(design) != rule:
        raise ValueError(f"--arm {name}: registered with rule {rule_version(design)}, the study with {rule}; the "
                         "arm's step would change the rule too")
    if not protocol:
        raise ValueError(f"--arm {name}: the two studies ran every paper's notebooks alike; there is no protocol "
                         "to split off")
    recorded = _recorded(arm_dir)
    missing = [s for s in records["second"] if s not in recorded]
    if missing:
        raise ValueError(f"--arm {name}: it has not recorded seeds {missing} of the study's; the arm reads the "
                         "study's seeds, every one")
    arm = {s: recorded[s] for s in records["second"]}
    # The same seed must mean the same data, or the protocol's step would change the data too.
    for seed, folder in arm.items():
        mine, theirs = provenance.read_run(folder), provenance.read_run(records["second"][seed])
        if mine is None or theirs is None or not provenance.matches(mine, theirs):
            said = ", the study's ".join("no record of its data" if p is None else provenance.summary(p)
                                         for p in (mine, theirs))
            raise ValueError(f"--arm {name}: seed {seed} is not shown to have run on the study's data ({said}); "
                             "the arm runs the study's seeds on the study's data")
    # Run as the first study ran them, they differ from the second's by what `protocol` says.
    as_first = protocol_changes(records["first"], arm)
    for source in protocol:
        if source in as_first:
            raise ValueError(f"--arm {name}: it ran {source}'s notebooks otherwise than the first study ("
                             f"{as_first[source]}); the arm runs them as the first study did")
    return arm


def _counts(readings: dict[str, pd.DataFrame], labels: dict[str, str]) -> pd.DataFrame:
    """Per paper, reading and verdict, the counted checks (``paper, reading, verdict,
    checks``), as a study's head table and verdict chart count them (`ledger_verdict_frame`):
    papers by their short names in `PAPERS`' order, readings in the ladder's, a paper and
    reading without counted checks left out."""
    from ltrlib.fidelity.ledger import PAPERS

    short = {p.title: p.short_name for p in PAPERS.values()}
    order = {p.short_name: i for i, p in enumerate(PAPERS.values())}
    tidy = pd.concat([ledger_verdict_frame(readings[name]).assign(reading=label) for name, label in labels.items()],
                     ignore_index=True)
    tidy = tidy[tidy.verdict.isin(LEDGER_VERDICTS)].assign(paper=lambda d: d.paper.map(short))
    tidy = tidy[tidy.groupby(["paper", "reading"]).checks.transform("sum") > 0]
    return tidy.sort_values("paper", key=lambda c: c.map(order), kind="stable")[["paper", "reading", "verdict",
                                                                                "checks"]]


def _head_table(counts: pd.DataFrame) -> pd.DataFrame:
    """`_counts` as the head tables print it: a row per paper and reading, its checks and
    their verdicts (`LEDGER_VERDICTS`)."""
    wide = (counts.pivot_table(index=["paper", "reading"], columns="verdict", values="checks", aggfunc="sum",
                               sort=False).reindex(columns=list(LEDGER_VERDICTS), fill_value=0).astype(int))
    # In `_counts`' order: the pivot orders each paper's readings as they first appear in any
    # paper, and the protocol arm's appears only for the papers whose protocol differs.
    wide = wide.reindex(pd.MultiIndex.from_frame(counts[["paper", "reading"]].drop_duplicates()))
    return wide.assign(checks=wide.sum(axis=1))[["checks", *LEDGER_VERDICTS]].rename_axis(columns=None).reset_index()


def _verdicts_figure(counts: pd.DataFrame, out: Path, title: str) -> str:
    """`_counts` as one verdict chart (`ltrlib.plots.verdict_counts`), a bar per paper and
    reading, into ``out/figures/verdicts.png`` and ``.svg``; returns the PNG's path relative
    to ``out``."""
    from ltrlib import plots

    bars = counts.assign(paper=counts.paper + " · " + counts.reading)[["paper", "verdict", "checks"]]
    return save_figure(plots.verdict_counts(bars, title), out / FIGURES_DIR, VERDICTS_FIGURE)


def _undecided(second: pd.DataFrame) -> pd.DataFrame:
    """The second study's counted checks not decided or seed-dependent, by verdict and the
    rule's reason (``reason``; a study decided before the rule said one has none) and paper."""
    from ltrlib.fidelity.across import SEED_DEPENDENT
    from ltrlib.fidelity.claims import NOT_DECIDED
    from ltrlib.fidelity.ledger import PAPERS

    counted = second[(second.kind == "claim") & ~second.beyond.astype(bool)
                     & second.verdict.isin([NOT_DECIDED, SEED_DEPENDENT])]
    if counted.empty:
        return pd.DataFrame(columns=["verdict", "reason", "checks"])
    reason = counted["reason"].fillna("") if "reason" in counted else pd.Series("", index=counted.index)
    named = counted.assign(reason=reason.replace("", "(not recorded)"),
                           paper=counted.source.map(lambda s: PAPERS[s].short_name))
    table = named.pivot_table(index=["verdict", "reason"], columns="paper", values="claim", aggfunc="count",
                              fill_value=0)
    return table.assign(checks=table.sum(axis=1)).reset_index()


def _code_words(study: str, codes: list[str]) -> str:
    """What a study's seeds ran (`_seed_code` of each, distinct), said of the study: its seeds
    from before commits were kept recorded none."""
    known = [c for c in codes if c != "not recorded"]
    if not known:
        return f"{study}'s seeds did not record their code"
    return f"{study}'s seeds ran {', '.join(known)}" + (" (some recorded none)" if len(known) < len(codes) else "")


def _steps(counted: pd.DataFrame, registered: str, rule: str, on_protocol: list[str], arm: bool) -> pd.DataFrame:
    """The counted checks changed at each step of the ladder (``step, checks``), the last
    step split by the protocol arm where there is one (``arm``); ``on_protocol``: the papers
    whose protocol differs."""
    protocol = counted.source.isin(on_protocol)
    new_or_gone = counted["first"].isna() != counted.first_today.isna()
    both = counted["first"].notna() & counted.first_today.notna()
    steps = [
        ("1 → 2: a check new or gone since the first study", new_or_gone.sum()),
        ("1 → 2: a check moved into or out of the tally since the first study",
         (both & (counted.counted != counted.counted_first)).sum()),
        ("1 → 2: a check mended since the first study", counted.mended.sum()),
        (f"2 → 3: the rule ({registered} → {rule})", counted.by_rule.sum())]
    if arm:
        steps += [("3 → 4: the seeds (and the code that ran them)", counted.by_seeds.sum()),
                  ("4 → 5: the protocol (a paper whose notebooks ran otherwise; the same seeds)",
                   counted.by_protocol.sum())]
    else:
        steps += [("3 → 4: the protocol or the seeds (a paper whose notebooks ran otherwise)",
                   (counted.by_seeds & protocol).sum()),
                  ("3 → 4: the seeds (the same protocol)", (counted.by_seeds & ~protocol).sum())]
    return pd.DataFrame(steps, columns=["step", "checks"])


def write_study_changes(first_dir: str | os.PathLike, second_dir: str | os.PathLike, command: str = "",
                        arm_dir: str | os.PathLike | None = None) -> Path:
    """`study_changes` written beside both studies, into neither:
    ``reports/<second>-beside-<first>/beside.md`` (the head tables side by side, the
    changes by step, every counted check that changed and why, the second study's checks
    not decided or seed-dependent by reason) and ``changes.csv`` (every check). Returns the
    folder. ``arm_dir``: a protocol arm, which splits the last step (`study_changes`)."""
    first_dir, second_dir = Path(first_dir), Path(second_dir)
    changes, readings, ctx = study_changes(first_dir, second_dir, arm_dir)
    first, second, arm = first_dir.name, second_dir.name, ctx["arm"]
    registered, rule = ctx["registered"], ctx["rule"]
    # Numbered as the ladder's steps, so that two readings never share a label (one rule for both).
    labels = {"first": f"1. {first}, as recorded ({registered})",
              "first_today": f"2. {first}, today's checks, {registered}",
              "first_by_rule": f"3. {first}, today's checks, {rule}",
              **({ARM: f"4. {second}'s seeds at {first}'s protocol ({arm}), {rule}"} if arm else {}),
              "second": f"{5 if arm else 4}. {second}, today's checks, {rule}"}
    done, planned = ctx["seeds"]["second"], ctx["planned"]["second"]
    interim = len(done) < len(planned)
    counted = changes[changes.counted | changes.counted_first]
    steps = _steps(counted, registered, rule, list(ctx["protocol"]), bool(arm))
    moved = counted[counted.changed].rename(columns=labels)
    # The arm's reading of a paper whose protocol did not change is the second study's own: not drawn twice.
    drawn = {**readings, **({ARM: readings[ARM][readings[ARM].source.isin(list(ctx["protocol"]))]} if arm else {})}
    counts = _counts(drawn, labels)
    out = second_dir.parent / f"{second}-beside-{first}"
    out.mkdir(exist_ok=True)
    chart = figure_lines(
        _verdicts_figure(counts, out, f"{second} beside {first}: each paper's claims by verdict, reading by reading"
                         + (" (interim)" if interim else "")),
        f"{second} beside {first}: checks by verdict, reading by reading",
        "Each paper's counted checks by verdict at each reading of the ladder, as the table below counts them.")
    protocol = ctx["protocol"]
    lines = [f"# {second} beside {first}", "",
             *([f"**Interim**: {len(done)} of {len(planned)} seeds of {second} recorded; its verdicts are not "
                "the study's until every seed is.", ""] if interim else []),
             f"- {first}: seeds {ctx['seeds']['first']}, rule {registered}; {second}: seeds {done}, rule {rule}, "
             "its seeds read with today's checks"
             + (" (it has no `study.md` of its own yet)." if ctx["stale"] is None else
                f" (**{ctx['stale']} checks differ from its own `study.md`**, older than today's checks: "
                f"`ltrlib study ledger --study {second} --summarise-only` rewrites it)." if ctx["stale"] else
                ", as its own `study.md` reads them."),
             "- Protocol: " + ("; ".join(f"{s}: {said}" for s, said in protocol.items()) if protocol else
                               "the notebooks ran with the same parameters in both.")
             + (f" The protocol arm {arm} ran {second}'s seeds with those papers' notebooks as {first} ran them, so "
                "a change splits into the seeds' step and the protocol's." if arm else
                " Where the protocol differs, a change in the second study is the protocol's or the seeds', which "
                "these readings cannot tell apart."),
             f"- The ladder: {first} as recorded; its seeds rebuilt with today's checks by {registered} (a change is "
             f"a mended check); by {rule} (a change is the rule's); "
             + (f"{second}'s seeds at {first}'s protocol, from {arm} for the papers whose protocol differs (a change "
                f"is the seeds'); {second} (a change is the protocol's)." if arm else
                f"{second} (a change is the seeds', or the protocol's or the seeds')."),
             f"- Code: {_code_words(first, ctx['code']['first'])}; {_code_words(second, ctx['code']['second'])}"
             + (f"; {_code_words(arm, ctx['code']['arm'])}" if arm else "") + ". "
             + ("The seeds' step includes" if arm else "The last step's \"seeds\" include") + " what the code each ran "
             "changed in their numbers (each study's time table gives its seeds' commits).", "",
             f"Regenerate: `{command}`." if command else "", "",
             "## The papers' claims by verdict, reading by reading", "", *chart,
             table_to_markdown(_head_table(counts)), "",
             "## Counted checks changed at each step", "", table_to_markdown(steps), "",
             "A check can change at more than one step, and change back.", "",
             f"## Counted checks whose verdict differs between {first} and {second}", "",
             table_to_markdown(moved[[*KEY, *labels.values(), "why"]].fillna("–")) if not moved.empty else "(none)",
             "", "A check counted in either study; –: not a check of that reading.", "",
             f"## {second}'s checks not decided or seed-dependent, by the rule's reason", "",
             table_to_markdown(_undecided(readings["second"])), "",
             "Every check, counted or not, at every reading: `changes.csv`.", ""]
    atomic_write_text(out / "beside.md", "\n".join(lines))
    atomic_write_text(out / "changes.csv", changes.to_csv(index=False))
    return out
