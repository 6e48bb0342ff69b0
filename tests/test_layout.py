"""The package's layout rules: subpackage `__init__`s hand on exactly their curated, documented
public names; imports point down the layers without cycles; notebooks use the subpackages'
public names only; no function runs over ~80 lines (docstrings aside); and `ltrlib.metrics`
hands on one comparison verb."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import ltrlib

PACKAGE = Path(ltrlib.__file__).parent
SUBPACKAGES = sorted(".".join(p.parent.relative_to(PACKAGE.parent).parts)
                     for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)
MAX_LINES = 80
# Numba hot paths kept whole on purpose (the comment above each says why).
LONG_KERNELS = {("data/svmlight/kernels.py", "_parse_line"), ("data/svmlight/kernels.py", "_put_float32")}


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_init_hands_on_exactly_its_curated_names(name):
    """A subpackage's ``__init__`` defines nothing, and imports exactly the names of its
    ``__all__`` (the verbs notebooks and users call), each documented. The rest stays
    behind its module's name (``ltrlib.train.tuning.pruner``)."""
    pkg = importlib.import_module(name)
    init = Path(pkg.__file__)
    imported = set()
    for node in ast.parse(init.read_text()).body:
        handing_on = (isinstance(node, (ast.Import, ast.ImportFrom))
                      or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
                      or (isinstance(node, ast.Assign)
                          and [getattr(t, "id", None) for t in node.targets] == ["__all__"]))
        assert handing_on, f"{init}:{node.lineno} defines something; move it to a module"
        if isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name for a in node.names if not (a.asname or a.name).startswith("_")}
    assert len(set(pkg.__all__)) == len(pkg.__all__), f"{name}.__all__ repeats a name"
    assert imported == set(pkg.__all__), (f"{name}: imported but not in __all__ {sorted(imported - set(pkg.__all__))}; "
                                          f"in __all__ but not imported {sorted(set(pkg.__all__) - imported)}")
    undocumented = [n for n in pkg.__all__ if callable(getattr(pkg, n)) and not isinstance(getattr(pkg, n), dict)
                    and (inspect.isfunction(getattr(pkg, n)) or inspect.isclass(getattr(pkg, n)))
                    and not (getattr(pkg, n).__doc__ or "").strip()]
    assert not undocumented, f"{name}: public names without a docstring {undocumented}"


def _body_lines(fn: ast.FunctionDef) -> int:
    first = fn.body[0]
    docstring = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                 and isinstance(first.value.value, str))
    skipped = first.end_lineno - first.lineno + 1 if docstring else 0
    return fn.end_lineno - fn.lineno + 1 - skipped


def test_no_function_over_80_lines():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = (path.relative_to(PACKAGE).as_posix(), node.name)
                if where not in LONG_KERNELS and _body_lines(node) > MAX_LINES:
                    long.append(f"{where[0]}:{node.lineno} {node.name} ({_body_lines(node)} lines)")
    assert not long, "split these into helpers: " + "; ".join(long)


# --------------------------------------------------------------------------- layers

#: The package's layers, bottom up, as its docstring states them.
LAYERS = (("foundations", {"config", "sessions", "processes", "randomness", "atomic", "records", "timing", "progress",
                           "metrics"}),
          ("data", {"data", "provenance", "manifest", "study_record", "trec"}),
          ("engine", {"train"}),
          ("analyses", {"noniid", "clients", "merge", "bilambdamart", "neural", "foltr", "clicklog", "xgboost_tutorial",
                        "reproducibility"}),
          ("reports", {"report", "plots", "fidelity"}),
          ("runs", {"runner", "studies", "lab", "lab_contents", "dashboard"}),
          ("command line", {"cli", "__main__"}))
#: Imports that still point up, each to be moved away (and then struck from this list: a
#: stale entry fails the test too).
KNOWN_UPWARD: set[tuple[str, str]] = set()
#: Import cycles between files still to be broken (a type-only import counts).
KNOWN_CYCLES: set[frozenset[str]] = set()


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every module of the package -> the package modules it imports, anywhere in its code."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("ltrlib"):
                # `from ltrlib.x import y`: y may be a module of x; `from ltrlib import config`: one.
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                found.update(subs or ([node.module] if node.module in modules else []))
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in modules)
        out[name] = found - {name, "ltrlib"}
    return out


def _layer(module: str) -> int:
    unit = module.split(".")[1]
    for rank, (_, units) in enumerate(LAYERS):
        if unit in units:
            return rank
    raise AssertionError(f"{module} belongs to no layer: add {unit!r} to LAYERS and the package docstring")


def test_imports_point_down_the_layers():
    upward = {(a, b) for a, targets in _imports().items() if a != "ltrlib" for b in targets
              if _layer(b) > _layer(a)}
    new = sorted(upward - KNOWN_UPWARD)
    assert not new, "imports pointing up the layers (ltrlib's docstring): " + "; ".join(f"{a} -> {b}" for a, b in new)
    assert not KNOWN_UPWARD - upward, f"fixed, strike from KNOWN_UPWARD: {sorted(KNOWN_UPWARD - upward)}"


def test_no_import_cycle_between_files():
    graph = _imports()
    cycles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    new = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"
    assert not KNOWN_CYCLES - set(cycles), f"broken, strike from KNOWN_CYCLES: {KNOWN_CYCLES - set(cycles)}"


# --------------------------------------------------------------------------- the public API

NOTEBOOKS = PACKAGE.parent / "notebooks"


def _notebook_uses(path: Path) -> list[tuple[str, str, int]]:
    """Every ``(ltrlib module, name, line)`` a notebook takes from the package: imported
    names, and ``pkg.name`` attributes of a subpackage imported with ``from ltrlib import``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    uses, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ltrlib":
            for a in node.names:
                uses.append((node.module, a.name, node.lineno))
                if node.module == "ltrlib":
                    aliases[a.asname or a.name] = f"ltrlib.{a.name}"
        elif isinstance(node, ast.Import) and any(a.name.startswith("ltrlib.") for a in node.names):
            uses.append((node.names[0].name, "*", node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            uses.append((aliases[node.value.id], node.attr, node.lineno))
    return uses


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("[0-9]*.py")))
def test_notebooks_use_the_subpackages_public_names_only(notebook):
    wrong = []
    for module, name, line in _notebook_uses(NOTEBOOKS / notebook):
        if module == "ltrlib":
            continue  # `from ltrlib import plots`: its uses are checked as attributes
        mod = importlib.import_module(module)
        if module.count(".") > 1 or name == "*":
            wrong.append(f"line {line}: {module} reaches below a subpackage")
        elif hasattr(mod, "__path__") and name not in mod.__all__:
            wrong.append(f"line {line}: {module}.{name} is not in {module}.__all__")
        elif not hasattr(mod, "__path__") and isinstance(getattr(mod, name, None), type(mod)):
            wrong.append(f"line {line}: {module}.{name} is a module")
    assert not wrong, f"notebooks/{notebook}: " + "; ".join(wrong)


def test_no_public_name_with_two_meanings():
    """One name, one meaning: a name that two subpackages export for different things is a
    plot and the analysis whose frame it draws (``plots.validation_curves(
    train.validation_curves(...))``), nothing else. A package handing on its part's name
    (``train.tune`` is ``train.tuning.tune``) is one meaning."""
    owners: dict[str, dict[int, list[str]]] = {}
    for name in SUBPACKAGES:
        pkg = importlib.import_module(name)
        for public in pkg.__all__:
            owners.setdefault(public, {}).setdefault(id(getattr(pkg, public)), []).append(name)
    clashes = {n: sorted(p[0] for p in objs.values()) for n, objs in owners.items() if len(objs) > 1}
    clashes = {n: pkgs for n, pkgs in clashes.items() if len(pkgs) != 2 or "ltrlib.plots" not in pkgs}
    assert not clashes, f"one name exported with two meanings: {clashes}"


# --------------------------------------------------------------------------- study records

#: The study records and the one module that reads and writes them (`StudyDesign`, `SeedRecord`).
STUDY_RECORD_FILES = {"design.json": "DESIGN_FILE", "seed.json": "SEED_FILE"}
STUDY_RECORDS_MODULE = "study_record.py"
JSON_READERS = {"loads", "load", "read_json"}
#: Functions that still parse a study record themselves, each to be moved onto the record
#: classes (and then struck from this list: a stale entry fails the test too).
KNOWN_STUDY_RECORD_READS: set[tuple[str, str]] = set()


def _study_record_reads(tree: ast.AST, where: str) -> set[tuple[str, str]]:
    """The functions of a module (``<module>`` for its top level) that call a JSON reader
    (``json.loads``, ``json.load``, `ltrlib.records.read_json`) and name a study record's
    file (``"design.json"``, ``"seed.json"``, or their constants): each parses a study record
    where `StudyDesign` and `SeedRecord` should."""
    def reads(node: ast.AST) -> bool:
        calls = any(isinstance(n, ast.Call) and (getattr(n.func, "attr", None) in JSON_READERS
                                                 or getattr(n.func, "id", None) in JSON_READERS)
                    for n in ast.walk(node))
        names = any((isinstance(n, ast.Constant) and isinstance(n.value, str)
                     and any(f in n.value for f in STUDY_RECORD_FILES))
                    or (isinstance(n, ast.Name) and n.id in STUDY_RECORD_FILES.values())
                    or (isinstance(n, ast.Attribute) and n.attr in STUDY_RECORD_FILES.values())
                    for n in ast.walk(node))
        return calls and names

    found = {(where, n.name) for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and reads(n)}
    top = ast.Module(body=[n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                        ast.ClassDef))], type_ignores=[])
    return found | ({(where, "<module>")} if reads(top) else set())


def test_only_the_study_record_classes_parse_design_and_seed_json():
    """``design.json`` and ``seed.json`` are read through `ltrlib.studies.StudyDesign` and
    `SeedRecord` only, as ``run.json`` through `RunManifest`: a second parser would read a
    new field or layout its own way. Checked by function: one that calls a JSON reader and
    names either file (a docstring counts, so a reader's docstring that names the file it
    reads counts too)."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where != STUDY_RECORDS_MODULE:
            found |= _study_record_reads(ast.parse(path.read_text(encoding="utf-8")), where)
    new = sorted(found - KNOWN_STUDY_RECORD_READS)
    assert not new, ("study records parsed outside ltrlib.study_record (use StudyDesign / SeedRecord): "
                     + "; ".join(f"{m}: {f}" for m, f in new))
    assert not KNOWN_STUDY_RECORD_READS - found, \
        f"moved onto the record classes, strike from KNOWN_STUDY_RECORD_READS: {KNOWN_STUDY_RECORD_READS - found}"


def test_the_study_record_check_finds_a_parse_of_either_file():
    """The check above can fail: a JSON read of either file, by name or constant, is found."""
    for code in ('def f(d):\n    return json.loads((d / "design.json").read_text())',
                 'def f(d):\n    """Its seed.json."""\n    return read_json(d / SEED_FILE)',
                 'import json\nDESIGN = json.load(open("x/design.json"))'):
        assert _study_record_reads(ast.parse(code), "m.py"), code
    assert not _study_record_reads(ast.parse('def f(d):\n    return StudyDesign.read(d)'), "m.py")


#: The names a paired t-test is reached through, and the public functions of `ltrlib.metrics`
#: allowed to reach one: the test of one pair of arrays, the tests of one cell's wide frame
#: (what `compare` runs per cell), and `compare`, the one verb over a tidy frame.
PAIRED_TESTS = {"ttest_rel", "paired_ttest", "paired_tests"}
COMPARISON_VERBS = {("significance.py", "paired_ttest"), ("significance.py", "paired_tests"),
                    ("comparison.py", "compare")}


def _testing_functions(tree: ast.Module, where: str) -> set[tuple[str, str]]:
    """The public functions and public classes' public methods of a module (``Class.method``)
    that run a paired t-test: that call one of `PAIRED_TESTS`, directly or through the
    module's private functions (followed to any depth)."""
    def called(node: ast.AST) -> set[str]:
        return {getattr(n.func, "id", None) or getattr(n.func, "attr", None)
                for n in ast.walk(node) if isinstance(n, ast.Call)} - {None}

    private = {n.name: called(n) for n in tree.body
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("_")}
    testing = set(PAIRED_TESTS)
    while True:  # private helpers that reach a test, to a fixed point
        more = {name for name, calls in private.items() if calls & testing} - testing
        if not more:
            break
        testing |= more
    public = [(n.name, n) for n in tree.body
              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]
    public += [(f"{c.name}.{m.name}", m)
               for c in tree.body if isinstance(c, ast.ClassDef) and not c.name.startswith("_")
               for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and not m.name.startswith("_")]
    return {(where, name) for name, fn in public if called(fn) & testing}


def test_metrics_hands_on_one_comparison_verb():
    """`ltrlib.metrics.compare` is the one verb that compares models over a tidy frame (its
    views give every table: marked, p-values, differences, means): no other public function
    or method in ``ltrlib/metrics/`` runs a paired t-test, by itself or through a private
    helper, than those of `COMPARISON_VERBS` (a second builder, as ``compare_tidy`` was, fails
    here; a stale entry fails too), and ``ltrlib.metrics`` hands on no other name with
    "compar" in it than `compare`."""
    found = set()
    for path in sorted((PACKAGE / "metrics").glob("*.py")):
        found |= _testing_functions(ast.parse(path.read_text(encoding="utf-8")), path.name)
    assert found <= COMPARISON_VERBS, \
        f"a second comparison verb (use compare and a view): {sorted(found - COMPARISON_VERBS)}"
    assert found == COMPARISON_VERBS, f"no longer run a test, strike from COMPARISON_VERBS: {COMPARISON_VERBS - found}"
    metrics = importlib.import_module("ltrlib.metrics")
    assert [n for n in metrics.__all__ if "compar" in n.lower()] == ["compare"]


def test_the_comparison_verb_check_finds_a_second_verb():
    """The check above can fail: a public function or method that tests, directly or through
    private helpers, is found; views that read tests already run are not."""
    code = ("def compare_tidy(frame, base):\n    return paired_tests(_wide(frame), base)\n"
            "def _wide(frame):\n    return frame\n"
            "def table(frame):\n    return _cells(frame)\n"
            "def _cells(frame):\n    return _one(frame)\n"
            "def _one(frame):\n    return stats.ttest_rel(frame.a, frame.b)\n"
            "class Result:\n    def retest(self):\n        return _one(self.frame)\n"
            "    def view(self):\n        return self.tests\n"
            "def means(frame):\n    return _wide(frame).mean()\n")
    assert _testing_functions(ast.parse(code), "m.py") == {("m.py", "compare_tidy"), ("m.py", "table"),
                                                          ("m.py", "Result.retest")}
