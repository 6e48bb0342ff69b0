"""The catalogue of public LETOR collections: what the project knows about each, in one place.

Three jobs read it, so they cannot disagree about a collection:

* the reader (`ltrlib.data.loading`) recognises a collection folder by its files and folds;
* the layout writer (`ltrlib.data.formats`) writes the synthetic twin as a collection ships;
* the ledger (`ltrlib.fidelity.datasets`) checks a ``--paper-dataset`` declaration against
  the collection's width and says whether the run has the papers' partitions.

A new collection is one `Collection` in `COLLECTIONS`; a new file format is one reader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["COLLECTIONS", "Collection", "fold_folder", "fold_number", "in_layout", "layouts"]


@dataclass(frozen=True)
class Collection:
    """One public collection: how it ships on disk and how the papers use it."""

    #: The collection's key, as ``ltrlib run --paper-dataset`` takes it.
    key: str
    #: Its name as the papers print it (the part they use included).
    name: str
    #: The file layout it ships in, as ``ltrlib formats`` takes it; collections sharing one
    #: (MSLR-WEB10K and WEB30K) ship their files alike.
    layout: str
    #: The file names of its train, vali and test parts.
    files: tuple[str, str, str]
    #: Cross-validation folds, each a folder (`fold_folder`) holding ``files``; 0: the files
    #: lie in the collection's folder itself.
    folds: int
    #: Feature indices of the collection: the highest index its files can hold.
    width: int
    #: The fewest features a whole copy reads as (the highest index its files hold): the
    #: width for the dense MSLR and Istella-S files; Yahoo!'s sparse files leave features out
    #: (its 700 indices hold 699 features, and the twin's 220 reach index 658).
    fewest_features: int
    #: The index of the first feature in its files (every public collection is one-based).
    index_base: int
    #: The feature holding each document's topic category, as ``category_feature`` takes it;
    #: None where the collection has none (MSLR's users bin its PageRank, f130, instead).
    category_feature: str | None
    #: Queries of the partitions the papers use: train, vali, test.
    queries: tuple[int, int, int]
    #: The ledger's papers that print numbers for it (`ltrlib.fidelity.ledger.PAPERS`).
    papers: tuple[str, ...]


_LETOR_FILES = ("train.txt", "vali.txt", "test.txt")
_YAHOO_FILES = ("set1.train.txt", "set1.valid.txt", "set1.test.txt")  # Yahoo LTRC's set 1

#: Every collection the project knows, by key, in the order the reader tries their files.
COLLECTIONS: dict[str, Collection] = {c.key: c for c in (
    # Non-IID paper, Table 2 (DS: 19,245 training, 7,211 validation, 6,562 test queries).
    Collection("istella-s", "Istella-S", "istella", _LETOR_FILES, 0, 220, 220, 1, "f220",
               (19245, 7211, 6562), ("noniid",)),
    # Bi-LambdaMART paper, Table 1: the first fold (MSLR) and set (Yahoo!); the FOLTR paper
    # runs MSLR-WEB10K too.
    Collection("mslr-web10k", "MSLR-WEB10K, Fold1", "mslr", _LETOR_FILES, 5, 136, 136, 1, None,
               (6000, 2000, 2000), ("bilambdamart", "foltr")),
    Collection("mslr-web30k", "MSLR-WEB30K, Fold1", "mslr", _LETOR_FILES, 5, 136, 136, 1, None,
               (18919, 6306, 6306), ("bilambdamart",)),
    Collection("yahoo-ltrc", "Yahoo! LTRC, set 1", "yahoo", _YAHOO_FILES, 0, 700, 500, 1, None,
               (19944, 2944, 6983), ("bilambdamart",)),
)}


def fold_folder(k: int) -> str:
    """The folder of fold ``k`` (one-based), as MSLR and MQ2007/8 name theirs: ``Fold1``."""
    return f"Fold{k}"


def fold_number(folder_name: str) -> int | None:
    """The fold a folder of that name holds (``Fold3``: 3), or None for any other name."""
    named = re.fullmatch(r"Fold([1-9][0-9]*)", folder_name)
    return int(named.group(1)) if named else None


def layouts() -> list[str]:
    """The file layouts the collections ship in, sorted: what ``ltrlib formats`` writes."""
    return sorted({c.layout for c in COLLECTIONS.values()})


def in_layout(layout: str) -> Collection:
    """The first collection shipping in ``layout``: its files, folds and width are the
    layout's. KeyError for a layout no collection ships in (the callers word the refusal)."""
    for collection in COLLECTIONS.values():
        if collection.layout == layout:
            return collection
    raise KeyError(layout)
