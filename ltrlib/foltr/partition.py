"""Non-IID client partitions of §4-7 of the paper (Types 1-4), each with its IID baseline.

Every builder returns a ``Federation`` over one ``FoltrData`` (features normalised once and
shared by all the federations built from it). In every setting the test set and its
original labels are the same, so offline curves compare directly.

- **Type 1, document preferences** (``type1``): with judged intents (``FoltrData.intents``,
  read by `ltrlib.foltr.intents.read_intent_collection`) client c judges query q under
  intent ``perm_q[c mod n_intents]`` (a seeded shuffle per query, as the paper), the IID
  baseline uses the union, and, as the paper (no held-out test set exists), both are
  evaluated offline on the training queries under every intent, averaged. Without
  them intents are synthesised: the document categories are shuffled (seed)
  and cut into ``n_intents`` = 4 groups; under intent k a document keeps its label if its
  category lies in group k and is 0 otherwise. Per query, the intents are shuffled across
  clients (seed), as the paper re-labels intents per query: client c judges query q under
  intent ``perm_q[c mod n_intents]``. All clients hold all training queries. IID: a
  document is relevant if relevant under any intent, i.e. every client uses the original
  labels (the groups partition the categories). Needs ``Dataset.category``. Both are
  evaluated as the paper does: offline on the training queries under every intent, averaged.
- **Type 2, label skew** (``type2``): with ``R = 1`` client c holds only the documents
  labelled ``c mod 5``; with ``R = 2`` those of the label pair
  ``combinations(range(5), 2)[c mod 10]``. As the paper's text, no document goes to two
  clients: with ``R = 1`` and 10 clients a label's documents are divided between its two
  owners by query, and with ``R = 2`` the queries are split into one disjoint part per
  client, which keeps its pair's documents there (the reference's ``LDS2_V2``).
  ``overlap=True`` gives every client its labels' documents in every query instead (the
  reference's ``LDS2_V1``, the one its run scripts read; R = 1 with 10 clients then
  duplicates each label's documents). Queries left without documents are dropped from
  the client. Default clients: 5 for ``R = 1``, 10 for ``R = 2`` (pass ``n_clients=10`` for
  ``R = 1`` when comparing the two). IID: every client samples from the whole training set.
- **Type 3, click preferences** (``type3``): each client clicks with its own model: 3
  clients with the SDBN presets, or 5 with PBM eta in {0, .5, 1, 1.5, 2}. IID: every client
  draws a click model at random (its own Generator) for each interaction from the same set.
- **Type 4, data quantity** (``type4``): client c performs ``quantities[c]`` interactions per
  round, (1, 3, 5, 7, 9) by default. IID: every client performs the mean (5). ``mix`` puts
  it on top of Type 1 or Type 2 (R = 1) non-IID data with 5 clients; there the baseline keeps
  the same non-IID data and equalises only the quantities, so the gap is the quantity skew's.

``with_data_sharing`` adds the remedy: a random ``fraction`` (10%) of the training queries,
whole and with their original labels, replaces each client's own part of them in its view
(the reference's construction); a server warm-up on them is an option of `run_federated`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from ltrlib.data.dataset import Dataset
from ltrlib.foltr.clicks import PBM_ETAS, SDBN_PRESET_NAMES, click_model, pbm, sdbn
from ltrlib.foltr.federated import Federation, prepare_features
from ltrlib.foltr.views import concat_views, view_of_queries, without_queries

TYPE4_QUANTITIES = (1, 3, 5, 7, 9)
N_INTENTS = 4


@dataclass(frozen=True, eq=False)
class FoltrData:
    """Training and test data prepared once for the federated runs: two `Dataset`s (features
    min-max scaled per query by default) and what only FOLTR needs besides them.

    ``train`` and ``test`` are the data; the partitions read their flat arrays (``X``, ``y``,
    ``offsets``, ``category``) and hand them to the compiled kernels as they are. Held, not
    inherited: `Dataset.take`, ``subset`` and ``split`` build plain Datasets, which would
    silently drop ``intents``, the row-aligned part of this record.
    """

    train: Dataset
    test: Dataset
    # Only FOLTR needs these two. ``n_levels``: the label scale the click models are given
    # for (2, 3 or 5), which the labels alone do not fix (a 5-level collection may hold no
    # label 4). ``intents``: judged intents (the intent-change collection,
    # `ltrlib.foltr.intents`), one row of training labels per intent, int64
    # (n_intents, train.n_docs); ``train.y`` is then their union (relevant under any intent).
    n_levels: int
    intents: np.ndarray | None = None

    def __post_init__(self):
        for part in ("train", "test"):
            if not isinstance(getattr(self, part), Dataset):
                raise TypeError(f"FoltrData: {part} must be a ltrlib.data.Dataset, "
                                f"got {type(getattr(self, part)).__name__}")
        if self.test.n_features != self.train.n_features:
            raise ValueError(f"FoltrData: test {self.test.name!r} has {self.test.n_features} features, "
                             f"train {self.train.name!r} has {self.train.n_features}")
        shape = None if self.intents is None else np.shape(self.intents)
        if shape is not None and (len(shape) != 2 or shape[1] != self.train.n_docs):
            raise ValueError(f"FoltrData: intents must have one column per training row "
                             f"({self.train.n_docs}), got shape {shape}")


LABEL_SCALES = (2, 3, 5)  # the label scales the click-model presets are given for


def online_training_queries(splits):
    """The queries the clients learn from: the collection's training part. Online learning
    uses no validation queries, so when ltrlib's loader cut them out of the training file
    (a collection without its own validation part, such as lightgbm-rank; the parts carry
    ``meta["vali_from_train"]``) they are put back: the authors' code trains on the whole
    training file. A collection's own validation part (MSLR's ``vali.txt``) stays out."""
    from ltrlib.data.dataset import concat

    if splits.vali is not None and splits.train.meta.get("vali_from_train"):
        return concat([splits.train, splits.vali], name=splits.train.name)
    return splits.train


def prepare_data(train, test, normalise: bool = True, n_levels: int | None = None,
                 intents: np.ndarray | None = None) -> FoltrData:
    """``train``/``test``: ``ltrlib.data.Dataset``. ``n_levels``: the label scale the click
    models use, 2 (binary), 3 (0-2, e.g. MQ2007) or 5 (0-4, e.g. MSLR, Istella-S). By
    default it is read off the labels: the smallest of those scales that holds the highest
    label, so a binary or 3-level collection gets the paper's click probabilities for its
    own scale instead of the 5-level ones. ``intents``: judged intents, one row of labels
    per intent for the training rows (`ltrlib.foltr.intents`); the training labels are
    then their union (the maximum over intents), the paper's IID labels."""
    y = np.asarray(train.y, dtype=np.int64)
    if intents is not None:
        intents = np.asarray(intents)
        if intents.ndim != 2 or intents.shape[1] != len(y) or not np.issubdtype(intents.dtype, np.integer) \
                or intents.min(initial=0) < 0:
            raise ValueError(f"prepare_data: intents must be non-negative integer labels, one row per "
                             f"intent and {len(y)} columns, got {intents.dtype} {intents.shape}")
        intents = np.ascontiguousarray(intents, dtype=np.int64)
        y = intents.max(axis=0)
    yt = np.asarray(test.y, dtype=np.int64)
    top = max(int(y.max(initial=0)), int(yt.max(initial=0)))
    if n_levels is None:
        n_levels = next((n for n in LABEL_SCALES if top < n), LABEL_SCALES[-1])
    if top >= n_levels or min(int(y.min(initial=0)), int(yt.min(initial=0))) < 0:
        raise ValueError(f"prepare_data: labels run up to {top} but n_levels={n_levels}; "
                         "pass n_levels matching the collection (2, 3 or 5)")
    # ``replace`` keeps each part's query ids, feature names, categories, name and meta.
    return FoltrData(
        train=replace(train, X=prepare_features(train.X, train.offsets, normalise), y=y, meta=dict(train.meta)),
        test=replace(test, X=prepare_features(test.X, test.offsets, normalise), meta=dict(test.meta)),
        n_levels=int(n_levels), intents=intents,
    )


def _fed(data: FoltrData, clients, models, name, X_test=None, y_test=None, offsets_test=None,
         evaluated_on: str = "test", **meta) -> Federation:
    # ``evaluated_on`` names the part of ``data`` whose queries the offline NDCG ranks
    # (`evaluation_sets`): the test part, or, under Type 1, the training part.
    test = (data.test.X, data.test.y, data.test.offsets) if X_test is None else (X_test, y_test, offsets_test)
    return Federation(data.train.X, tuple(clients), tuple(models), *test, name=name,
                      meta=dict(meta, evaluated_on=evaluated_on))


def evaluation_sets(data: FoltrData, fed: Federation) -> list[Dataset]:
    """The data ``fed``'s offline NDCG@10 is measured on, one `Dataset` per row of its test
    labels: ``data.test``, or under Type 1 (``type1``, ``type4`` mixed with it) the training
    queries once per intent, labelled as under that intent (the offline NDCG averages over
    them; `ltrlib.foltr.federated`). The features are ``fed.X_test`` itself, so a ranker's
    ``score`` on them gives the scores the run was evaluated with."""
    part = fed.meta.get("evaluated_on", "test")
    if part not in ("train", "test"):
        raise ValueError(f"evaluation_sets: federation {fed.name!r} has evaluated_on={part!r}, "
                         "expected 'train' or 'test'")
    base = getattr(data, part)
    if fed.X_test.shape != base.X.shape or not np.array_equal(fed.offsets_test, base.offsets):
        raise ValueError(f"evaluation_sets: federation {fed.name!r} is evaluated on {fed.X_test.shape[0]} rows "
                         f"in {len(fed.offsets_test) - 1} queries, not on data.{part} {base.name!r} "
                         f"({base.n_docs} rows, {base.n_queries} queries): it was built from other data")
    if fed.y_test.ndim == 1:
        return [replace(base, X=fed.X_test, y=fed.y_test)]
    return [replace(base, X=fed.X_test, y=labels, name=f"{base.name}-intent{k}")
            for k, labels in enumerate(fed.y_test)]


def _whole(data, n_clients, B, model_choices=(0,)):
    train = data.train
    return [view_of_queries(f"client{c}", train.offsets, train.y, model_choices=model_choices, n_updates=B)
            for c in range(n_clients)]


def iid(data: FoltrData, n_clients: int = 5, B: int = 5, click: str = "perfect") -> Federation:
    """Every client samples queries from the whole training set, original labels."""
    return _fed(data, _whole(data, n_clients, B), [click_model(click, data.n_levels)], "iid",
                type="iid", noniid=False, click=click)


def intent_groups(category: np.ndarray, n_intents: int, rng: np.random.Generator) -> np.ndarray:
    """Intent group (0..n_intents-1) of every document, from a seeded partition of categories."""
    cats = np.unique(category)
    if len(cats) < n_intents:
        raise ValueError(f"type1: {len(cats)} categories cannot be cut into {n_intents} intent groups")
    perm = rng.permutation(cats)
    group_of = np.empty(len(cats), dtype=np.int64)
    for g, part in enumerate(np.array_split(perm, n_intents)):
        group_of[np.searchsorted(cats, part)] = g
    return group_of[np.searchsorted(cats, category)]


def intent_labels(data: FoltrData, n_clients: int, n_intents: int, seed: int):
    """Per-client label arrays under Type 1 (see module docstring), and the intent groups
    (None with judged intents, whose number then replaces ``n_intents``)."""
    labels, _, group = _intents(data, n_clients, n_intents, seed)
    return labels, group


def _intents(data: FoltrData, n_clients: int, n_intents: int, seed: int):
    """`intent_labels`, plus one row of training labels per intent: the judged ones, or,
    under synthesised intent k, a document's label if its category's group is k, else 0.
    A client's label of a document is its row under the intent the client holds for the
    document's query."""
    rng = np.random.default_rng(seed)
    train = data.train
    if data.intents is not None:
        group, rows = None, data.intents
    elif train.category is None:
        raise ValueError("type1: the training data has no document categories; load it with "
                         "category_feature (and category_bins) so intents can be synthesised")
    else:
        group = intent_groups(train.category, n_intents, rng)
        rows = np.stack([np.where(group == k, train.y, 0) for k in range(n_intents)])
    n_intents = len(rows)
    nq = train.n_queries
    perms = np.argsort(rng.random((nq, n_intents)), axis=1)   # one shuffle of intents per query
    q_of_doc = train.doc_query_index
    docs = np.arange(len(q_of_doc))
    labels = [rows[perms[q_of_doc, c % n_intents], docs] for c in range(n_clients)]
    return labels, rows, group


def type1(data: FoltrData, noniid: bool = True, n_clients: int = N_INTENTS, B: int = 5,
          click: str = "perfect", seed: int = 0, n_intents: int = N_INTENTS) -> Federation:
    models = [click_model(click, data.n_levels)]
    labels, per_intent, _ = _intents(data, n_clients, n_intents, seed)
    # The paper's protocol: offline NDCG on the training queries under each intent,
    # averaged (Federation takes 2-D test labels), for judged and synthesised intents
    # alike; the union labels of held-out queries would favour the IID baseline.
    judged = dict(X_test=data.train.X, y_test=per_intent, offsets_test=data.train.offsets, evaluated_on="train")
    if not noniid:
        return _fed(data, _whole(data, n_clients, B), models, "type1_iid", type="type1", noniid=False,
                    click=click, **judged)
    clients = [view_of_queries(f"client{c}", data.train.offsets, labels[c], n_updates=B)
               for c in range(n_clients)]
    return _fed(data, clients, models, "type1_noniid", type="type1", noniid=True, click=click, **judged)


def label_sets(R: int, n_clients: int, n_levels: int = 5) -> list[tuple[int, ...]]:
    if R not in (1, 2):
        raise ValueError(f"type2: R (labels per client) must be 1 or 2, got {R!r}")
    combos = [(k,) for k in range(n_levels)] if R == 1 else list(combinations(range(n_levels), 2))
    return [combos[c % len(combos)] for c in range(n_clients)]


def type2(data: FoltrData, noniid: bool = True, R: int = 1, n_clients: int | None = None, B: int = 5,
          click: str = "perfect", overlap: bool = False, seed: int = 0) -> Federation:
    """Label skew; see the module docstring. ``overlap`` and ``seed`` only matter when
    a document could go to several clients (R = 1 with more than 5 clients, R = 2)."""
    if n_clients is None:
        n_clients = data.n_levels if R == 1 else len(list(combinations(range(data.n_levels), 2)))
    sets = label_sets(R, n_clients, data.n_levels)   # validates R even for the baseline
    models = [click_model(click, data.n_levels)]
    if not noniid:
        return _fed(data, _whole(data, n_clients, B), models, f"type2_R{R}_iid", type="type2", R=R,
                    noniid=False, click=click)
    train = data.train
    keep = [np.isin(train.y, s) for s in sets]
    if not overlap:
        # Each document to one client at most: the clients that could share a document
        # (R = 1: the owners of the same label; R = 2: all, as labels recur across pairs)
        # split the queries between them, shuffled by seed.
        query_of_row = train.doc_query_index
        order = np.random.default_rng(seed).permutation(train.n_queries)
        groups = ([[c for c in range(n_clients) if sets[c] == s] for s in dict.fromkeys(sets)]
                  if R == 1 else [list(range(n_clients))])
        for group in groups:
            for c, part in zip(group, np.array_split(order, len(group))):
                mine = np.zeros(train.n_queries, dtype=bool)
                mine[part] = True
                keep[c] &= mine[query_of_row]
    clients = [view_of_queries(f"client{c}", train.offsets, train.y, keep=k, n_updates=B)
               for c, k in enumerate(keep)]
    return _fed(data, clients, models, f"type2_R{R}_noniid", type="type2", R=R, noniid=True,
                click=click, overlap=bool(overlap))


def type3(data: FoltrData, noniid: bool = True, family: str = "sdbn", B: int = 5) -> Federation:
    if family == "sdbn":
        models = [sdbn(p, data.n_levels) for p in SDBN_PRESET_NAMES]
    elif family == "pbm":
        models = [pbm(e, data.n_levels) for e in PBM_ETAS]
    else:
        raise ValueError(f"type3: family must be sdbn or pbm, got {family!r}")
    m = len(models)
    choices = [[c] for c in range(m)] if noniid else [list(range(m))] * m
    train = data.train
    clients = [view_of_queries(f"client{c}", train.offsets, train.y, model_choices=choices[c], n_updates=B)
               for c in range(m)]
    return _fed(data, clients, models, f"type3_{family}_{'noniid' if noniid else 'iid'}", type="type3",
                family=family, noniid=noniid, click=family)


def type4(data: FoltrData, noniid: bool = True, quantities=TYPE4_QUANTITIES, click: str = "perfect",
          mix: str = "", seed: int = 0) -> Federation:
    q = [int(v) for v in quantities]
    if not q or min(q) < 0:
        raise ValueError(f"type4: quantities must be non-negative ints, got {quantities!r}")
    n_clients = len(q)
    if noniid:
        per_client = q
    else:
        mean = sum(q) / n_clients
        if mean != int(mean):
            raise ValueError(f"type4: the IID baseline needs an integer mean quantity, got {mean}")
        per_client = [int(mean)] * n_clients
    if mix == "":
        base = iid(data, n_clients, click=click)
    elif mix == "type1":
        base = type1(data, True, n_clients, click=click, seed=seed)
    elif mix == "type2":
        base = type2(data, True, R=1, n_clients=n_clients, click=click)
    else:
        raise ValueError(f"type4: mix must be '', 'type1' or 'type2', got {mix!r}")
    clients = [v.with_(n_updates=b) for v, b in zip(base.clients, per_client)]
    # The base's evaluation data too: Type 1 on judged intents evaluates under every intent.
    return _fed(data, clients, base.click_models, f"type4{'_' + mix if mix else ''}_{'noniid' if noniid else 'iid'}",
                X_test=base.X_test, y_test=base.y_test, offsets_test=base.offsets_test,
                evaluated_on=base.meta["evaluated_on"], type="type4", mix=mix, noniid=noniid, click=click)


def with_data_sharing(fed: Federation, data: FoltrData, fraction: float = 0.1, seed: int = 0,
                      remove_from_shards: bool = True) -> Federation:
    """Share a random ``fraction`` of the training queries with every client (§3.4 of the
    paper: 10 %), as the reference builds it (ielab/2022-SIGIR-noniid-foltr,
    ``utils/data_process.py``): the shared queries, whole and with their true labels, are
    taken out of every client's shard and appended to it, so a client sees each shared query
    once. ``remove_from_shards=False`` appends them without removing the client's own part
    of them (ltrlib's earlier form). The queries are drawn without replacement (exactly
    ``fraction``; the reference draws with replacement and keeps the distinct ones).
    ``run_federated(..., warmup_interactions=N)`` can add a server warm-up on the shared
    queries before round 1 (not in the paper; off by default)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"with_data_sharing: fraction must be in (0, 1], got {fraction}")
    rng = np.random.default_rng(seed)
    train = data.train
    n_shared = max(1, int(round(fraction * train.n_queries)))
    shared_q = np.sort(rng.choice(train.n_queries, n_shared, replace=False))
    shared = view_of_queries("shared", train.offsets, train.y, query_index=shared_q,
                             model_choices=fed.clients[0].model_choices)
    own = [without_queries(v, train.offsets, shared_q) if remove_from_shards else v for v in fed.clients]
    clients = [concat_views(v.name, [v, shared.with_(model_choices=v.model_choices)]) for v in own]
    meta = dict(fed.meta, data_sharing=fraction, shared_removed_from_shards=bool(remove_from_shards))
    return Federation(fed.X, tuple(clients), fed.click_models, fed.X_test, fed.y_test, fed.offsets_test,
                      shared=shared, name=fed.name + "_sharing", meta=meta)
