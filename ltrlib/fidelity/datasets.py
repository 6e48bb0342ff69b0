"""The papers' datasets, declared by the user and checked against the data's shape.

A user who owns MSLR-WEB10K, WEB30K, Yahoo! LTRC or Istella-S runs the batch on it and
declares which one it is (``ltrlib run --paper-dataset mslr-web10k``). The papers' printed
values then become targets, not only their claims: the ledger sets each number the paper
prints for that dataset beside ours (`ltrlib.fidelity.ledger`).

A declaration is checked before any notebook runs (`check_declaration`): the feature count
must be the collection's, or the declaration is refused, naming both. The query counts of
the partitions the papers used (Table 1 of the Bi-LambdaMART paper, Table 2 of the non-IID
paper) say whether the run has the whole collection or a part of it: on a part (a twin
written in the collection's layout, a subsample) the numbers are set side by side with a
note that they are not the paper's population.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAPER_DATASETS", "Declaration", "PaperDataset", "check_declaration", "declared", "paper_dataset"]


@dataclass(frozen=True)
class PaperDataset:
    """A collection a paper reports on, as the papers use it."""

    key: str
    name: str
    #: The fewest and most features a copy can read as (the highest feature index in its
    #: files): exact for the dense MSLR and Istella-S files; Yahoo!'s sparse files leave
    #: features out (its 700 indices hold 699 features, and the twin's 220 reach index 658).
    features: tuple[int, int]
    #: Queries of the partitions the papers use: train, vali, test.
    queries: tuple[int, int, int]
    #: The ledger's papers that print numbers for it (`ltrlib.fidelity.ledger.PAPERS`).
    papers: tuple[str, ...]


PAPER_DATASETS: dict[str, PaperDataset] = {d.key: d for d in (
    # Non-IID paper, Table 2 (DS: 19,245 training, 7,211 validation, 6,562 test queries).
    PaperDataset("istella-s", "Istella-S", (220, 220), (19245, 7211, 6562), ("noniid",)),
    # Bi-LambdaMART paper, Table 1: the first fold (MSLR) and set (Yahoo!); the FOLTR paper
    # runs MSLR-WEB10K too.
    PaperDataset("mslr-web10k", "MSLR-WEB10K, Fold1", (136, 136), (6000, 2000, 2000), ("bilambdamart", "foltr")),
    PaperDataset("mslr-web30k", "MSLR-WEB30K, Fold1", (136, 136), (18919, 6306, 6306), ("bilambdamart",)),
    PaperDataset("yahoo-ltrc", "Yahoo! LTRC, set 1", (500, 700), (19944, 2944, 6983), ("bilambdamart",)),
)}


@dataclass(frozen=True)
class Declaration:
    """A checked declaration: the dataset, and whether the run has all of its queries."""

    dataset: PaperDataset
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


def paper_dataset(key: str) -> PaperDataset:
    """The declared dataset by its key; ValueError naming the keys otherwise."""
    try:
        return PAPER_DATASETS[key]
    except KeyError:
        raise ValueError(f"--paper-dataset {key!r} is not one of the papers' datasets: "
                         f"{', '.join(PAPER_DATASETS)}") from None


def check_declaration(key: str, n_features: int, queries: tuple[int, int, int],
                      source: str = "the data") -> Declaration:
    """Check that ``source`` (its feature count, the highest index its files hold; its train /
    vali / test query counts) can be the declared dataset; ValueError naming both when the
    feature count contradicts it."""
    dataset = paper_dataset(key)
    fewest, most = dataset.features
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
