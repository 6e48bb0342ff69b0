"""Type 1 from judged intents: the intent-change collection (Zhuang & Zuccon, SIGIR 2021).

The FOLTR paper's Type 1 uses this collection: 200 ClueWeb09 queries (TREC Web Track
2009-2012) with 4 intents each, the relevance of every query-document pair judged per
intent. It comes as

* one LETOR features file, each line ending with a comment that names its document:
  ``0 qid:1 1:0.2 ... # docid = clueweb09-en0003-55-31884`` (or ``# clueweb09-...``);
* one TREC qrels file per intent, a judgement per line: ``qid iteration docid label``.

`read_intent_collection` returns a `FoltrData` whose ``intents`` hold one row of labels per
intent (a pair missing from an intent's qrels is not relevant to it) and whose ``y`` is
their union; `partition.type1` then uses the judged intents instead of synthesising them
from document categories, and evaluates as the paper does (no held-out test set exists:
offline NDCG@10 on the training queries under every intent, averaged). The features are
parsed by the project's fast reader and cached like any LETOR file; the comments, which
that reader skips, are read in a second plain pass (the collection has ~100k lines).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.foltr.partition import FoltrData, prepare_data

__all__ = ["intent_matrix", "read_doc_ids", "read_intent_collection", "read_qrels"]

_DOCID = re.compile(r"#\s*(?:docid\s*=?\s*)?(\S+)")


def read_doc_ids(path) -> np.ndarray:
    """The document id of every data line of a LETOR file, in file order (blank and
    comment-only lines skipped, as the reader skips them)."""
    ids = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            m = _DOCID.search(text)
            if m is None:
                raise ValueError(f"{path}:{lineno}: no document id in a comment at the end of the line "
                                 f"(expected '# docid = ...'): {text[:80]!r}")
            ids.append(m.group(1))
    return np.asarray(ids, dtype=object)


def read_qrels(path) -> dict[tuple[str, str], int]:
    """``{(qid, docid): label}`` from a TREC qrels file (``qid iteration docid label``)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4 or not re.fullmatch(r"-?\d+", parts[3]):
                raise ValueError(f"{path}:{lineno}: expected 'qid iteration docid label' with an "
                                 f"integer label, got {line.strip()[:80]!r}")
            label = int(parts[3])
            if label < 0:
                raise ValueError(f"{path}:{lineno}: negative label {label} (not relevant is 0)")
            out[(parts[0], parts[2])] = label
    return out


def intent_matrix(ds: Dataset, doc_ids: Sequence[str], qrels: Sequence[dict]) -> np.ndarray:
    """Labels of ``ds``'s rows under each intent: int64 ``(len(qrels), n_docs)``."""
    if len(doc_ids) != ds.n_docs:
        raise ValueError(f"{len(doc_ids)} document ids for {ds.n_docs} rows of {ds.name!r}")
    if not qrels:
        raise ValueError("no intents: pass one qrels file per intent")
    qids = np.asarray(ds.query_ids)[ds.doc_query_index].astype(str)
    keys = list(zip(qids.tolist(), list(doc_ids)))
    out = np.zeros((len(qrels), ds.n_docs), dtype=np.int64)
    for k, judged in enumerate(qrels):
        out[k] = [judged.get(key, 0) for key in keys]
    return out


def read_intent_collection(features, qrels: Sequence, *, normalise: bool = True,
                           n_levels: int | None = None, cache: bool = True) -> FoltrData:
    """The intent-change collection as `FoltrData` with judged ``intents`` (see the module
    docstring). ``features``: the LETOR file; ``qrels``: one qrels file per intent, in intent
    order. Raises naming the file and line of any malformed input, and refuses qrels that
    match no document of the features file (a wrong file, or ids written differently)."""
    from ltrlib.data.readers import read_letor

    features = Path(features)
    paths = [Path(p) for p in qrels]
    ds = read_letor(features, label_range=None, cache=cache, name=features.stem)
    judged = [read_qrels(p) for p in paths]
    intents = intent_matrix(ds, read_doc_ids(features), judged)
    for p, j, row in zip(paths, judged, intents):
        if j and not row.any() and any(v > 0 for v in j.values()):
            raise ValueError(f"{p}: none of its relevant (qid, docid) pairs is a row of {features}")
    union = Dataset(X=ds.X, y=intents.max(axis=0), query_ids=ds.query_ids, offsets=ds.offsets,
                    feature_names=ds.feature_names, name=ds.name)
    return prepare_data(union, union, normalise, n_levels, intents=intents)
