"""The papers' datasets, declared by the user and checked against the data's shape.

A user who owns MSLR-WEB10K, WEB30K, Yahoo! LTRC or Istella-S runs the batch on it and
declares which one it is (``ltrlib run --paper-dataset mslr-web10k``). The papers' printed
values then become targets, not only their claims: the ledger sets each number the paper
prints for that dataset beside ours (`ltrlib.fidelity.ledger`).

The collections, their widths and the query counts of the papers' partitions are the
catalogue's (`ltrlib.data.catalogue`), which the reader and the layout writer read too. A
declaration is checked before any notebook runs (`check_declaration`): the feature count
must be the collection's, or the declaration is refused, naming both. The query counts of
the partitions the papers used (Table 1 of the Bi-LambdaMART paper, Table 2 of the non-IID
paper) say whether the run has the whole collection or a part of it: on a part (a twin
written in the collection's layout, a subsample) the numbers are set side by side with a
note that they are not the paper's population.
"""

from __future__ import annotations

from dataclasses import dataclass

from ltrlib.data.catalogue import COLLECTIONS, Collection

__all__ = ["Declaration", "check_declaration", "declared", "paper_dataset", "paper_datasets"]


def paper_datasets() -> dict[str, Collection]:
    """The collections of the catalogue (`ltrlib.data.catalogue`) a paper of the ledger
    reports on, by key: what ``--paper-dataset`` takes."""
    return {key: c for key, c in COLLECTIONS.items() if c.papers}


@dataclass(frozen=True)
class Declaration:
    """A checked declaration: the dataset, and whether the run has all of its queries."""

    dataset: Collection
    queries: tuple[int, int, int]

    @property
    def whole(self) -> bool:
        return self.queries == self.dataset.queries

    def note(self) -> str:
        """What the numbers beside the paper's are: the paper's population, or a part of it."""
        if self.whole:
            return (f"The run is declared {self.dataset.name} and has its queries ({self._counts(self.queries)}): "
                    "the paper's printed numbers are this data's, and each difference is a reproduction's.")
        return (f"The run is declared {self.dataset.name}, with {self._counts(self.queries)} queries where the "
                f"paper has {self._counts(self.dataset.queries)}: a part of the collection, so the differences "
                "below are not a reproduction's.")

    @staticmethod
    def _counts(queries) -> str:
        return " / ".join(f"{n:,}" for n in queries) + " (train / vali / test)"


def paper_dataset(key: str) -> Collection:
    """The declared dataset by its key; ValueError naming the keys otherwise."""
    known = paper_datasets()
    try:
        return known[key]
    except KeyError:
        raise ValueError(f"--paper-dataset {key!r} is not one of the papers' datasets: "
                         f"{', '.join(known)}") from None


def check_declaration(key: str, n_features: int, queries: tuple[int, int, int],
                      source: str = "the data") -> Declaration:
    """Check that ``source`` (its feature count, the highest index its files hold; its train /
    vali / test query counts) can be the declared dataset; ValueError naming both when the
    feature count contradicts it."""
    dataset = paper_dataset(key)
    fewest, most = dataset.fewest_features, dataset.width
    if not fewest <= n_features <= most:
        has = str(most) if fewest == most else f"{fewest} to {most} (sparse files)"
        raise ValueError(f"--paper-dataset {key}: {source} has {n_features} features, {dataset.name} has "
                         f"{has}; it cannot be {dataset.name}")
    return Declaration(dataset, tuple(int(q) for q in queries))


def declared(provenance: dict) -> Declaration | None:
    """The run's checked declaration from its provenance (``paper_dataset`` and
    ``paper_dataset_queries`` of ``run.json``), or None when it declared none."""
    key = provenance.get("paper_dataset")
    if not key:
        return None
    return Declaration(paper_dataset(key), tuple(provenance.get("paper_dataset_queries") or (0, 0, 0)))
