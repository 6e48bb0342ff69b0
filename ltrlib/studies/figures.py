"""A study's pictures: saved beside its ``study.md`` under ``figures/`` (`save_figure`) and
embedded in it (`figure_lines`), for every study kind (`ltrlib.studies.ledger`,
`ltrlib.studies.neural`).
"""

from __future__ import annotations

from pathlib import Path

from ltrlib.atomic import atomic_path

__all__: list[str] = []  # the study summaries' own helpers

FIGURES_DIR = "figures"


def save_figure(fig, folder: Path, name: str) -> str:
    """``fig`` as ``<name>.png`` and ``.svg`` in ``folder``, each written atomically and the
    same bytes from the same frame (no date, no version, fixed SVG ids), so regenerating a
    committed study's pictures changes no file whose numbers did not change; closes ``fig``.
    Returns the PNG's path relative to the study folder."""
    import matplotlib.pyplot as plt

    try:
        for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
            with atomic_path(folder / f"{name}.{fmt}") as tmp, plt.rc_context({"svg.hashsalt": name}):
                fig.savefig(tmp, format=fmt, dpi=100, bbox_inches="tight", metadata=metadata)
    finally:
        plt.close(fig)
    return f"{FIGURES_DIR}/{name}.png"


def figure_lines(path: str, alt: str, caption: str) -> list[str]:
    """A picture in a study's Markdown: the PNG, its caption and the SVG beside it."""
    return [f"![{alt}]({path})", "", f"{caption} ([SVG]({path[:-4]}.svg))", ""]
