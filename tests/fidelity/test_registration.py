"""A paper plugs in once (issue 65, item 5): its entry in `ltrlib.fidelity.ledger.PAPERS`
names its notebooks, section and claims, and the guard (test_guard.py) reads its claims from
there. An entry left out used to fail nothing: the paper's claims never ran and were never
guarded. Here a claims module, a notebook or a table the ledger reads that no registered
paper owns fails the suite."""

import importlib
import pkgutil
from dataclasses import replace

import ltrlib.fidelity
from ltrlib import config
from ltrlib.fidelity.ledger import PAPERS


def _claims_modules() -> dict:
    """Every module of `ltrlib.fidelity` that decides claims (it has ``ALL_CLAIMS``)."""
    found = {}
    for info in pkgutil.iter_modules(ltrlib.fidelity.__path__, "ltrlib.fidelity."):
        module = importlib.import_module(info.name)
        if hasattr(module, "ALL_CLAIMS"):
            found[info.name] = module
    return found


def _notebooks() -> set[str]:
    return {p.stem for p in (config.PROJ_ROOT / "notebooks").glob("[0-9][0-9]_*.py")}


def registration_gaps(papers, modules, notebooks) -> list[str]:
    """What the registry ``papers`` lacks or gets wrong, against the claims ``modules`` and the
    project's ``notebooks``: each module registered as its paper, with its claims and the
    tables it reads (its ``READS``), each notebook and table one paper's."""
    gaps = []
    by_module = {p.section.__module__: (source, p) for source, p in papers.items()}
    for name, module in modules.items():
        if name not in by_module:
            gaps.append(f"claims module {name} is not in ltrlib.fidelity.ledger.PAPERS")
            continue
        source, paper = by_module[name]
        if getattr(module, "SOURCE", None) != source:
            gaps.append(f"{name}: registered as {source!r}, its SOURCE is {getattr(module, 'SOURCE', None)!r}")
        if tuple(paper.claims) != tuple(module.ALL_CLAIMS):
            gaps.append(f"{name}: its registered claims are not its ALL_CLAIMS (the guard reads the registered)")
        if dict(paper.reads) != dict(getattr(module, "READS", {})):
            gaps.append(f"{name}: its registered tables are not its READS (the records are checked for the registered)")
    owners: dict[str, list[str]] = {}
    for source, paper in papers.items():
        for notebook in paper.notebooks:
            owners.setdefault(notebook, []).append(source)
    gaps += [f"notebook {nb} belongs to no paper" for nb in sorted(notebooks - set(owners))]
    gaps += [f"{', '.join(s)} name notebook {nb}, which does not exist" for nb, s in owners.items()
             if nb not in notebooks]
    gaps += [f"notebook {nb} is registered by {' and '.join(s)}" for nb, s in owners.items() if len(s) > 1]
    gaps += [f"{source} reads tables of notebook {nb}, which it does not register" for source, paper in papers.items()
             for nb in paper.reads if nb not in paper.notebooks]
    return gaps


def test_every_claims_module_notebook_and_table_belongs_to_one_registered_paper():
    assert registration_gaps(PAPERS, _claims_modules(), _notebooks()) == []


def test_a_paper_left_out_of_the_registry_is_found():
    modules, notebooks = _claims_modules(), _notebooks()
    without = {s: p for s, p in PAPERS.items() if s != "foltr"}
    gaps = registration_gaps(without, modules, notebooks)
    assert "claims module ltrlib.fidelity.foltr is not in ltrlib.fidelity.ledger.PAPERS" in gaps
    assert "notebook 07_foltr_noniid belongs to no paper" in gaps
    assert registration_gaps(PAPERS, modules, notebooks | {"10_new_paper"}) == [
        "notebook 10_new_paper belongs to no paper"]
    unread = PAPERS | {"foltr": replace(PAPERS["foltr"], reads={})}
    assert registration_gaps(unread, modules, notebooks) == [
        "ltrlib.fidelity.foltr: its registered tables are not its READS (the records are checked for the registered)"]
    elsewhere = PAPERS | {"foltr": replace(PAPERS["foltr"], reads={**PAPERS["foltr"].reads, "08_xgboost_backends": ("x",)})}
    assert "foltr reads tables of notebook 08_xgboost_backends, which it does not register" in registration_gaps(
        elsewhere, modules, notebooks)
    shorter = PAPERS | {"foltr": replace(PAPERS["foltr"], claims=PAPERS["foltr"].claims[:-1])}
    assert registration_gaps(shorter, modules, notebooks) == [
        "ltrlib.fidelity.foltr: its registered claims are not its ALL_CLAIMS (the guard reads the registered)"]
    twice = PAPERS | {"xgboost": replace(PAPERS["xgboost"], notebooks=("07_foltr_noniid", "08_xgboost_backends",
                                                                       "09_click_bias", "99_gone"))}
    assert set(registration_gaps(twice, modules, notebooks)) == {
        "notebook 07_foltr_noniid is registered by foltr and xgboost",
        "xgboost name notebook 99_gone, which does not exist"}
