"""How thin the notebooks are: per notebook, the code cells that hold logic beyond a call and
a display (a loop, a branch, a comprehension, a function or class definition, a ``with``
or ``try`` block, or a conditional expression), outside the parameters cell.

The conventions ask every cell to be a call into `ltrlib` followed by a display; this counts
the cells that are not, and names each one's constructs, so a change can say before and
after:

    .venv/bin/python bench/notebook_logic.py            # the count per notebook and in all
    .venv/bin/python bench/notebook_logic.py --cells    # and each such cell's first line
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import jupytext

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: The constructs that make a cell more than a call and a display, by the name printed.
LOGIC = {ast.For: "for", ast.While: "while", ast.If: "if", ast.IfExp: "if-expression",
         ast.ListComp: "comprehension", ast.SetComp: "comprehension", ast.DictComp: "comprehension",
         ast.GeneratorExp: "comprehension", ast.FunctionDef: "def", ast.Lambda: "lambda",
         ast.ClassDef: "class", ast.With: "with", ast.Try: "try"}


def logic_of(source: str) -> list[str]:
    """The logic constructs in one cell's code, each named once, in the order first met."""
    found: list[str] = []
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython magics: not plain Python, counted as logic-free
        return found
    for node in ast.walk(tree):
        name = LOGIC.get(type(node))
        if name and name not in found:
            found.append(name)
    return found


def count(notebook: Path) -> tuple[int, list[tuple[str, list[str]]]]:
    """(code cells outside the parameters cell, [(first line, constructs) of those with logic])."""
    cells = [c for c in jupytext.read(notebook).cells
             if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    with_logic = []
    for cell in cells:
        found = logic_of(cell.source)
        if found:
            first = next((line for line in cell.source.splitlines() if line.strip() and not line.startswith("#")),
                         cell.source.splitlines()[0] if cell.source else "")
            with_logic.append((first.strip(), found))
    return len(cells), with_logic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", action="store_true", help="list each cell with logic")
    args = parser.parse_args()
    total = logic = 0
    for notebook in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        cells, with_logic = count(notebook)
        total, logic = total + cells, logic + len(with_logic)
        print(f"{notebook.stem:<26}{len(with_logic):>3} of {cells:>3} code cells with logic")
        if args.cells:
            for first, found in with_logic:
                print(f"    {', '.join(found):<34} {first[:70]}")
    print(f"{'all':<26}{logic:>3} of {total:>3}")


if __name__ == "__main__":
    main()
