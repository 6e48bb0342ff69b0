"""An Istella-like synthetic LETOR collection: the project's embedded default dataset.

The real collections the papers use cannot be downloaded here, so the generator has to
carry the structure those papers study, not just their shapes:

* **Category-dependent relevance (Type 1 non-IID).** Each of ~20 topic categories scores
  relevance with its own weights over a pool of latent "signals", mixed with a shared part
  (``shared_weight``). A LambdaMART model trained on one category's queries therefore
  transfers badly to another's, the pattern of Table 1 of the non-IID paper. Categories
  11 and 14 are the most frequent among relevant documents, as in Istella-S.
* **Relative (bivariate) relevance.** Part of the utility depends on a document's standing
  *within its query*: whether it is among the query's best on an "authority" feature whose
  absolute level shifts from query to query, and how far its length is from the query's
  typical length. A univariate scorer on the raw features cannot see either; a
  pairwise/bivariate one can, and so can a univariate one given listwise features (each
  feature's rank and z-score within the query, as Bi-LambdaMART's stage 2 adds): the
  signal is a document's standing in its list, not an interaction between two documents.
* **Realistic features.** 220 features: per-query features constant within a query,
  heavy-tailed document features, sparse term-count features with many zeros, binary and
  few-valued integer features, decoys carrying no signal, and the category itself.

Labels are 0-4 with about 11% of documents relevant. Documents are generated chunk by
chunk straight into one preallocated float32 matrix, so the ``paper`` scale (3.4M rows)
fits in about 3.2 GB and ~a minute on two cores. Every chunk draws from its own seed,
derived from ``seed`` and the chunk number, so the data do not depend on memory settings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ltrlib.config import Scale, get_scale
from ltrlib.data.dataset import Dataset, Splits

N_FEATURES = 220
N_CATEGORIES = 20
#: Column of X that holds the category (file feature index 220 when written as SVMlight).
CATEGORY_COLUMN = 219
#: Shares of documents per category; 11 and 14 lead, as in Figure 2 of the non-IID paper.
_POPULAR = {11: 0.20, 14: 0.16}

# Column layout (0-based). Query-document features come in blocks of 5 variants per signal.
_Q_COLS = slice(0, 10)  # query features: constant within a query
_D_COLS = slice(10, 50)  # document features
_N_SIGNALS = 32
_QD_START = 50  # 32 signals x 5 variants = 160 columns: 50..209
_AUTH_COLS = (210, 211, 212)  # "authority" features with a per-query level (bivariate signal)
_LEN_COL = 213  # document length; relevance prefers the query's typical length
_PROX_COLS = slice(214, 219)  # proximity features: zero unless the document matches well


@dataclass(frozen=True)
class SyntheticConfig:
    """Knobs of the generator. The defaults give the Istella-like default dataset."""

    n_categories: int = N_CATEGORIES
    shared_weight: float = 0.35  # 0 = every category its own relevance function, 1 = IID
    topic_share: float = 0.20  # share of a query's documents drawn from the query's topic
    topic_bonus: float = 0.2  # extra utility for documents on the query's topic
    topic_match: float = 0.1  # on-topic documents' shift of the latent match signals
    bivariate_weight: float = 0.8  # weight of the within-query (relative) terms
    noise: float = 0.55  # utility noise: sets how learnable the labels are
    query_difficulty: float = 0.45  # sd of a per-query utility shift: varies #relevant
    relevant_share: float = 0.11  # documents with label > 0
    # Label shares at 1..4 among relevant documents (the rest of 11% split as Istella-like).
    grade_shares: tuple[float, float, float, float] = (0.50, 0.27, 0.15, 0.08)
    min_relevant: int = 1  # queries get at least this many relevant documents
    docs_sd: float = 0.45  # lognormal sd of the number of documents per query
    chunk_queries: int = 2000


def category_profile(n_categories: int = N_CATEGORIES) -> np.ndarray:
    """Share of documents per category: 11 and 14 first, the rest a Zipf-like tail."""
    if n_categories < 15:
        raise ValueError(f"n_categories must be >= 15 (categories 11 and 14 exist), got {n_categories}")
    rest = [c for c in range(n_categories) if c not in _POPULAR]
    tail = 1.0 / np.arange(2, len(rest) + 2) ** 0.8
    p = np.zeros(n_categories)
    p[rest] = tail / tail.sum() * (1.0 - sum(_POPULAR.values()))
    for c, share in _POPULAR.items():
        p[c] = share
    return p


def feature_names() -> tuple[str, ...]:
    # Named by the one-based index the feature gets in a LETOR file, as Istella users see it.
    return tuple(f"f{i + 1}" for i in range(N_FEATURES))


def make_synthetic(
    scale: str | Scale = "small",
    seed: int = 0,
    config: SyntheticConfig | None = None,
    progress: bool = False,
) -> Splits:
    """Generate the Istella-like dataset: train, validation and test partitions.

    ``scale`` is ``"tiny"``, ``"small"``, ``"paper"`` (see `ltrlib.config.SCALES`) or a
    `Scale`. The same ``(scale, seed, config)`` always gives the same data.
    """
    sc = get_scale(scale)
    cfg = config or SyntheticConfig()
    _check_config(cfg)
    root = np.random.SeedSequence([int(seed), 0x5EED])
    layout_ss, calib_ss, sizes_ss, data_ss = root.spawn(4)
    model = _RelevanceModel.draw(np.random.default_rng(layout_ss), cfg)
    thresholds = model.thresholds(np.random.default_rng(calib_ss), sc.docs_per_query)

    n_q = sc.n_queries
    sizes = _list_lengths(np.random.default_rng(sizes_ss), n_q, sc.docs_per_query, cfg.docs_sd)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = np.empty((int(offsets[-1]), N_FEATURES), dtype=np.float32)
    y = np.empty(int(offsets[-1]), dtype=np.int32)

    starts = range(0, n_q, cfg.chunk_queries)
    chunk_seeds = data_ss.spawn(len(starts))
    if progress:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc=f"synthetic {sc.name}", unit="chunk")
    for k, q0 in enumerate(starts):
        q1 = min(q0 + cfg.chunk_queries, n_q)
        a, b = offsets[q0], offsets[q1]
        rng = np.random.default_rng(chunk_seeds[k])
        utility = model.fill(rng, X[a:b], sizes[q0:q1])
        y[a:b] = _grade(utility, offsets[q0 : q1 + 1] - a, thresholds, cfg.min_relevant)

    category = X[:, CATEGORY_COLUMN].astype(np.int32)
    names = feature_names()
    bounds = np.cumsum([0, sc.n_train, sc.n_vali, sc.n_test])
    parts = []
    for part, q0, q1 in zip(("train", "vali", "test"), bounds[:-1], bounds[1:]):
        if q1 == q0:
            parts.append(None)
            continue
        a, b = offsets[q0], offsets[q1]
        # Slices of one buffer: views, no copies, so `paper` stays within memory.
        parts.append(
            Dataset(
                X=X[a:b],
                y=y[a:b],
                query_ids=np.arange(q0, q1, dtype=np.int64) + 1,
                offsets=offsets[q0 : q1 + 1] - a,
                feature_names=names,
                category=category[a:b],
                name=f"synthetic-{sc.name}-{part}",
                meta={"source": "synthetic", "scale": sc.name, "seed": int(seed),
                      "category_feature": names[CATEGORY_COLUMN]},
            )
        )
    return Splits(*parts)


def _check_config(cfg: SyntheticConfig) -> None:
    for name in ("shared_weight", "topic_share", "relevant_share"):
        v = getattr(cfg, name)
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"SyntheticConfig.{name} must be in [0, 1], got {v}")
    if len(cfg.grade_shares) != 4 or not np.isclose(sum(cfg.grade_shares), 1.0):
        raise ValueError(f"SyntheticConfig.grade_shares must be 4 shares summing to 1, got {cfg.grade_shares}")
    if cfg.chunk_queries < 1:
        raise ValueError(f"SyntheticConfig.chunk_queries must be >= 1, got {cfg.chunk_queries}")


def _list_lengths(rng: np.random.Generator, n: int, mean: float, sd: float) -> np.ndarray:
    # Lognormal list lengths with the requested mean, clipped to a realistic range.
    mu = np.log(mean) - sd**2 / 2
    raw = np.rint(rng.lognormal(mu, sd, n))
    return np.clip(raw, 5, int(4 * mean)).astype(np.int64)


@dataclass(frozen=True)
class _RelevanceModel:
    """The hidden relevance function, drawn once per seed."""

    cfg: SyntheticConfig
    weights: np.ndarray  # (n_categories, n_signals): per-category signal weights
    quality_w: np.ndarray  # weights of the document-quality features
    p_docs: np.ndarray  # category shares of documents
    p_topics: np.ndarray  # category shares of query topics

    @classmethod
    def draw(cls, rng: np.random.Generator, cfg: SyntheticConfig) -> "_RelevanceModel":
        C = cfg.n_categories

        def sparse_weights(size):
            # Each relevance function leans on a handful of signals, as real rankers do.
            w = rng.standard_normal(size) * (rng.random(size) < 0.3)
            w = np.abs(w)  # more evidence of a match never hurts
            return w / np.linalg.norm(w, axis=-1, keepdims=True).clip(1e-9)

        shared = sparse_weights(_N_SIGNALS)
        own = sparse_weights((C, _N_SIGNALS))
        a = np.sqrt(cfg.shared_weight)
        weights = a * shared + np.sqrt(1 - cfg.shared_weight) * own
        weights /= np.linalg.norm(weights, axis=1, keepdims=True)
        p = category_profile(C)
        return cls(cfg, weights.astype(np.float32), rng.uniform(0.1, 0.4, 4), p, p)

    def thresholds(self, rng: np.random.Generator, docs_per_query: float) -> np.ndarray:
        """Utility cut-offs for labels 1..4, calibrated on a pilot sample of queries."""
        sizes = _list_lengths(rng, 1500, docs_per_query, self.cfg.docs_sd)
        X = np.empty((sizes.sum(), N_FEATURES), dtype=np.float32)
        u = self.fill(rng, X, sizes)
        shares = self.cfg.relevant_share * np.cumsum(self.cfg.grade_shares[::-1])[::-1]
        return np.quantile(u, 1.0 - shares)

    def fill(self, rng: np.random.Generator, X: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Write the features of a block of queries into ``X``; return their utilities."""
        cfg = self.cfg
        n, nq = X.shape[0], sizes.size
        qi = np.repeat(np.arange(nq), sizes)
        f32 = np.float32

        # Categories: a share of each list comes from the query's topic, the rest from the
        # background popularity, so relevant documents spread over several categories.
        topic = rng.choice(cfg.n_categories, nq, p=self.p_topics)
        cat = np.where(
            rng.random(n) < cfg.topic_share,
            topic[qi],
            rng.choice(cfg.n_categories, n, p=self.p_docs),
        )
        on_topic = cat == topic[qi]

        # Query features: few distinct values, constant within a query (no ranking signal).
        q = np.empty((nq, 10), dtype=f32)
        q[:, 0] = rng.integers(1, 9, nq)  # query length in terms
        q[:, 1] = np.round(rng.lognormal(2.0, 1.2, nq), 1)  # query frequency
        q[:, 2] = rng.integers(0, 2, nq)  # has a navigational term
        q[:, 3:] = np.round(rng.gamma(2.0, 1.0, (nq, 7)), 3)  # idf statistics
        X[:, _Q_COLS] = q[qi]

        # Latent match signals, one set per document; what makes a document relevant.
        Z = rng.standard_normal((n, _N_SIGNALS), dtype=f32)
        Z += f32(cfg.topic_match) * on_topic[:, None]  # on-topic documents match the query better
        utility = np.einsum("ij,ij->i", Z, self.weights[cat])

        # Document features: heavy tails, integers, flags; a few carry quality signal.
        D = X[:, _D_COLS]
        quality = rng.standard_normal((n, 4), dtype=f32)
        D[:, 0] = np.round(np.exp(quality[:, 0] - 1.0), 4)  # pagerank-like
        D[:, 1] = np.floor(np.expm1(np.clip(1.5 * quality[:, 1] + 1.0, 0, None)))  # inlinks
        D[:, 2] = np.clip(np.rint(3 - quality[:, 2]), 1, 8)  # url depth
        D[:, 3] = (quality[:, 3] + rng.standard_normal(n, dtype=f32) > 1.2).astype(f32)  # flag
        utility += quality @ self.quality_w.astype(f32)
        # Decoys: realistic distributions that carry no signal at all.
        D[:, 4:16] = np.round(rng.lognormal(0.0, 1.0, (n, 12)), 3) * (rng.random((n, 12)) < 0.6)
        D[:, 16:28] = rng.integers(0, 5, (n, 12))
        D[:, 28:40] = np.round(rng.random((n, 12), dtype=f32), 2)

        # Query-document features: 5 noisy, often sparse views of each latent signal.
        noise = lambda s: rng.standard_normal((n, _N_SIGNALS), dtype=f32) * f32(s)  # noqa: E731
        matched = (Z + noise(0.7)) > -0.3  # no match, no score: many zeros
        bm25 = np.round(np.logaddexp(0, 1.5 * (Z + noise(0.5))) * matched, 4)
        tf = np.floor(np.exp(0.8 * Z + noise(0.5))) * matched
        hit = (Z + noise(0.6) > 1.0).astype(f32)
        lm = np.round(Z + noise(0.9), 3)
        doclen = np.rint(np.exp(rng.normal(6.0, 0.6, n))).astype(f32)
        ntf = np.round(tf / doclen[:, None] * 1000, 3)
        # Column 50 + 5*j + v holds view v of signal j: the views of a signal sit together.
        for v, arr in enumerate((bm25, tf, hit, lm, ntf)):
            X[:, _QD_START + v : _QD_START + 5 * _N_SIGNALS : 5] = arr

        # Bivariate signal 1: "authority" measured on a per-query scale. Only a document's
        # standing among the query's documents matters: being in the top 10% of the list.
        level = rng.normal(0.0, 2.0, (nq, len(_AUTH_COLS))).astype(f32)
        auth = rng.standard_normal((n, len(_AUTH_COLS)), dtype=f32)
        X[:, list(_AUTH_COLS)] = np.round(level[qi] + auth, 3)
        top = _within_query_top_share(auth[:, 0], sizes, 0.10)
        # Bivariate signal 2: documents far from the query's typical length are worse.
        typical = rng.normal(6.0, 0.8, nq).astype(f32)
        loglen = typical[qi] + rng.normal(0, 0.6, n).astype(f32)
        X[:, _LEN_COL] = np.rint(np.exp(loglen))
        deviation = np.abs(loglen - _query_median(loglen, sizes))
        utility += f32(cfg.bivariate_weight) * (1.2 * top + 0.5 * auth[:, 1] - 0.9 * deviation)

        # Proximity: only defined when the document matches most terms; zero otherwise.
        prox_ok = matched[:, :5].sum(1) >= 4
        X[:, _PROX_COLS] = np.round(np.abs(Z[:, :5] + noise(0.8)[:, :5]), 3) * prox_ok[:, None]

        X[:, CATEGORY_COLUMN] = cat
        utility += f32(cfg.topic_bonus) * on_topic
        utility += rng.normal(0.0, cfg.query_difficulty, nq).astype(f32)[qi]
        utility += rng.standard_normal(n, dtype=f32) * f32(cfg.noise)
        return utility


def _within_query_top_share(values: np.ndarray, sizes: np.ndarray, share: float) -> np.ndarray:
    """1.0 where a document is within the top ``share`` of its query by ``values``."""
    qi = np.repeat(np.arange(sizes.size), sizes)
    order = np.lexsort((-values, qi))  # by query, then descending value
    rank = np.empty(values.size, dtype=np.int64)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    rank[order] = np.arange(values.size) - starts
    return (rank < np.maximum(1, np.round(share * sizes[qi]))).astype(np.float32)


def _query_median(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each document's query median of ``values`` (vectorised over queries)."""
    qi = np.repeat(np.arange(sizes.size), sizes)
    order = np.lexsort((values, qi))
    starts = np.cumsum(sizes) - sizes
    lo = values[order[starts + (sizes - 1) // 2]]
    hi = values[order[starts + sizes // 2]]
    return ((lo + hi) / 2)[qi]


def _grade(utility: np.ndarray, offsets: np.ndarray, thresholds: np.ndarray, min_relevant: int) -> np.ndarray:
    labels = np.searchsorted(thresholds, utility, side="right").astype(np.int32)
    if min_relevant > 0:
        # Like the real collections, every query has relevant documents: promote the
        # query's best documents to label 1 where the thresholds left too few.
        sizes = np.diff(offsets)
        qi = np.repeat(np.arange(sizes.size), sizes)
        order = np.lexsort((-utility, qi))
        rank = np.empty(utility.size, dtype=np.int64)
        rank[order] = np.arange(utility.size) - np.repeat(offsets[:-1], sizes)
        labels[(rank < min_relevant) & (labels == 0)] = 1
    return labels


def with_config(**changes) -> SyntheticConfig:
    """A `SyntheticConfig` with some knobs changed, e.g. ``with_config(shared_weight=1.0)``."""
    return replace(SyntheticConfig(), **changes)
