"""Training gradient-boosted trees with the LB objectives, on documents or on pairs.

`RankData` is one partition ready for LightGBM: its documents (a `Dataset`: float32
features, labels, query offsets), the per-query IDCG normaliser and, for a bivariate
model, the ordered-pair index. Its LightGBM Dataset is built once, from float32 pair chunks
(`PairSequence`), never from a full pair matrix, and is reused by every model and Optuna
trial trained on it; validation data are binned with the training data's bin mappers
(``reference=``).

`fit_lb` trains with `LBObjective` (its cut-off is the settings' ``eval_at``; its pair
hessian the diagonal approximation, or with ``hessian="exact"`` eq. 7's exact one) and stops
early on NDCG@cutoff of the *aggregated*
document scores on the validation partition, normalised by its IDCG (the full-list one
for a second stage). `LBModel.score(dataset)` scores documents (`ltrlib.data.Scorer`):
for a bivariate model it builds each query's ordered pairs chunk by chunk, scores them and
aggregates (eq. 5); `LBModel.predict(X, offsets)` does the same on bare arrays.

`BivariateRanker` (and `UnivariateRanker`) wrap both in a ``fit(X, y, qid)`` /
``predict(X, qid)`` interface, and score a `Dataset` with ``score(dataset)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np

from ltrlib import timing
from ltrlib.bilambdamart.objective import LBObjective, aggregate, mean_ndcg
from ltrlib.bilambdamart.pairs import PairIndex, PairSequence, j_columns, pair_feature_names, pair_index, pair_rows
from ltrlib.data.dataset import Dataset
from ltrlib.metrics import ideal_dcg as _ideal_dcg
from ltrlib.train.backends.lightgbm import lightgbm_params, monitor_callback, quiet_lightgbm
from ltrlib.train.settings import TrainSettings

__all__ = ["BivariateRanker", "LBModel", "LB_SETTINGS", "RankData", "UnivariateRanker", "fit_lb",
           "offsets_from_qid"]

# §5.4's limits (2000 trees, patience 30) at the cut-off 5; one thread (LightGBM calls the
# objective in Python once per tree, so more threads gain little on small lists).
LB_SETTINGS = TrainSettings(max_trees=2000, early_stopping=30, eval_at=5, num_threads=1)
ROW_WISE_MAX_CELLS = 2**30  # pair rows x columns up to which LightGBM builds row-wise histograms
PREDICT_BATCH = 65536  # pair rows scored at once: 65536 x 1507 float32 = 395 MB at MSLR width
def offsets_from_qid(qid) -> np.ndarray:
    """Query offsets from a per-document query id array whose queries are contiguous."""
    qid = np.asarray(qid)
    if qid.ndim != 1 or qid.size == 0:
        raise ValueError(f"qid must be a non-empty 1-D array, got shape {qid.shape}")
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    if np.unique(qid[starts]).size != starts.size:
        raise ValueError("qid: the documents of each query must be contiguous "
                         "(a query id reappears after another query)")
    return np.append(starts, qid.size).astype(np.int64)


@dataclass(eq=False)
class RankData:
    """One partition for `fit_lb`: its documents (a `Dataset`) and what training on them
    adds, the per-query IDCG normaliser and, for pairs, the ordered-pair index and layout;
    see the module docstring."""

    docs: Dataset
    ideal_dcg: np.ndarray
    bivariate: bool = True
    n_diff: int = 0
    difference: bool = True
    pairs: PairIndex | None = None
    query_level: tuple[int, ...] = ()
    _lgb: Any = field(default=None, repr=False)

    @classmethod
    def from_dataset(cls, ds: Dataset, *, ideal_dcg=None, cutoff: int = 5, bivariate: bool = True,
                     n_diff: int | None = None, difference: bool = True,
                     query_level=()) -> "RankData":
        """``ideal_dcg``: per-query IDCG@cutoff; ``None`` takes it from the given lists.
        ``n_diff``: the leading columns whose differences join a pair (default: all).
        ``query_level``: columns equal for every document of a query (e.g.
        `ltrlib.bilambdamart.query_level_columns` of a listwise expansion), which a pair then
        carries once (`ltrlib.bilambdamart.pairs`); checked against the features."""
        if not isinstance(ds, Dataset):
            raise TypeError(f"RankData.from_dataset needs a ltrlib Dataset, got {type(ds).__name__}")
        if not ds.X.flags.c_contiguous:
            ds = replace(ds, X=np.ascontiguousarray(ds.X))
        ideal = _ideal_dcg(ds.y, ds.offsets, cutoff) if ideal_dcg is None else np.asarray(ideal_dcg, float)
        if ideal.shape != (ds.n_queries,):
            raise ValueError(f"ideal_dcg needs one value per query ({ds.n_queries}), "
                             f"got shape {ideal.shape}")
        n_diff = ds.n_features if n_diff is None else int(n_diff)
        if not 0 <= n_diff <= ds.n_features:
            raise ValueError(f"n_diff must be in 0..{ds.n_features}, got {n_diff}")
        query_level = tuple(int(c) for c in query_level)
        if query_level:
            _check_query_level(ds.X, ds.offsets, query_level, ds.feature_names)
        pairs = pair_index(ds.offsets) if bivariate else None
        return cls(ds, ideal, bool(bivariate), n_diff, bool(difference), pairs, query_level)

    @classmethod
    def build(cls, X, y, offsets, *, feature_names=None, **kwargs) -> "RankData":
        """From bare arrays (documents of query ``q`` at rows ``offsets[q]:offsets[q+1]``);
        the other arguments are `from_dataset`'s."""
        offsets = np.asarray(offsets, dtype=np.int64)
        ds = Dataset(np.asarray(X, dtype=np.float32), y, np.arange(max(offsets.size - 1, 0)), offsets,
                     feature_names=() if feature_names is None else tuple(feature_names), name="rank data")
        return cls.from_dataset(ds, **kwargs)

    @property
    def X(self) -> np.ndarray:
        return self.docs.X

    @property
    def y(self) -> np.ndarray:
        return self.docs.y

    @property
    def offsets(self) -> np.ndarray:
        return self.docs.offsets

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.docs.feature_names

    @property
    def n_rows(self) -> int:
        return self.pairs.n_pairs if self.bivariate else int(self.X.shape[0])

    @property
    def row_feature_names(self) -> tuple[str, ...]:
        if not self.bivariate:
            return self.feature_names
        return pair_feature_names(self.feature_names, self.n_diff, self.difference, self.query_level)

    def objective(self, loss: str, cutoff: int, norm: bool = True,
                  hessian: str = "diagonal", truncation: int | None = None) -> LBObjective:
        """The `LBObjective` of these rows; ``hessian="exact"`` needs bivariate data."""
        return LBObjective(self.y, self.offsets, ideal_dcg=self.ideal_dcg,
                           pairs=self.pairs.as_tuple() if self.bivariate else None,
                           loss=loss, cutoff=cutoff, norm=norm, hessian=hessian, truncation=truncation)

    def lgb_dataset(self, reference: "RankData | None" = None, batch_size: int = 8192,
                    dataset_params: Mapping[str, Any] | None = None):
        """The LightGBM Dataset of the rows (pairs or documents), built and binned once."""
        import lightgbm as lgb

        if self._lgb is not None:
            return self._lgb
        quiet_lightgbm()  # binning a pair sample warns on LightGBM's console otherwise
        ref = None
        if reference is not None:
            if reference.bivariate != self.bivariate or reference.row_feature_names != self.row_feature_names:
                raise ValueError("reference: the validation rows must have the training rows' features")
            ref = reference.lgb_dataset()
        # One thread by default: binning with 2 OpenMP threads on a loaded 2-core machine
        # ran several times slower than with one.
        params = {"feature_pre_filter": False, "verbosity": -1, "num_threads": 1,
                  **dict(dataset_params or {})}
        if self.bivariate:
            # LightGBM samples rows as float64 to find the bin boundaries; its default 200k
            # rows x 1507 pair columns would take 2.4 GB. Pair columns repeat the document
            # columns, so 50k sampled pairs bin them as well.
            params.setdefault("bin_construct_sample_cnt", 50_000)
        names = [_lgb_safe(n) for n in self.row_feature_names]
        if self.bivariate:
            # Labels are unused by a custom objective but LightGBM wants one per row; the
            # sign of y_i - y_j keeps the Dataset self-describing.
            label = np.sign(self.y[self.pairs.left].astype(np.float32)
                            - self.y[self.pairs.right].astype(np.float32))
            data = PairSequence(self.X, self.pairs, self.n_diff, self.difference, batch_size,
                                query_level=self.query_level)
        else:
            label, data = self.y.astype(np.float32), self.X
        self._lgb = lgb.Dataset(data, label=label, feature_name=names, reference=ref,
                                params=params, free_raw_data=True).construct()
        return self._lgb

    def ndcg_from_rows(self, preds, k: int) -> float:
        """Mean NDCG@k of the documents, from row predictions, with this data's IDCG."""
        s = aggregate(preds, self.offsets, *self.pairs.as_tuple()) if self.bivariate \
            else np.asarray(preds, dtype=np.float64)
        return mean_ndcg(s, self.y, self.offsets, self.ideal_dcg, k)


def _check_query_level(X, offsets, columns, names) -> None:
    """Refuse ``query_level`` columns that vary within a query: leaving x_j's copy out of
    the pair rows would then lose information."""
    j_columns(X.shape[1], columns)  # refuses columns out of range, as the pair rows do
    cols = np.asarray(columns, dtype=np.int64)
    sizes = np.diff(offsets)
    first = np.repeat(X[offsets[:-1][sizes > 0]][:, cols], sizes[sizes > 0], axis=0)
    varying = np.flatnonzero(np.any(X[:, cols] != first, axis=0))
    if varying.size:
        raise ValueError(f"query_level: column {names[cols[varying[0]]]!r} (index "
                         f"{cols[varying[0]]}) varies within a query")


def _lgb_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name)


@dataclass(eq=False)
class LBModel:
    """A booster over pairs (bivariate) or documents (univariate) and how to use it."""

    booster: Any
    best_iteration: int
    bivariate: bool
    n_diff: int
    difference: bool
    loss: str
    cutoff: int
    params: dict
    feature_names: tuple[str, ...]
    curve: list[float] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    query_level: tuple[int, ...] = ()

    def __repr__(self) -> str:
        kind = "bivariate" if self.bivariate else "univariate"
        return (f"LBModel({kind}, {self.loss}@{self.cutoff}, {self.best_iteration} trees, "
                f"learning_rate={self.params.get('learning_rate', '?')})")

    def predict_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(self.booster.predict(rows, num_iteration=self.best_iteration),
                          dtype=np.float64)

    def score(self, data: Dataset, batch_rows: int = PREDICT_BATCH) -> np.ndarray:
        """Scores of ``data``'s documents (float64, row order): the `ltrlib.data.Scorer`
        contract; see `predict`."""
        return self.predict(data.X, data.offsets, batch_rows)

    def predict(self, X, offsets, batch_rows: int = PREDICT_BATCH) -> np.ndarray:
        """Document scores (float64) of a feature matrix with query offsets. Bivariate:
        every ordered pair is built in float32 chunks of ``batch_rows``, scored, and the
        scores are aggregated (eq. 5)."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if X.ndim != 2 or X.shape[1] != len(self.feature_names):
            raise ValueError(f"predict: X must have {len(self.feature_names)} columns like the "
                             f"training documents, got shape {X.shape}")
        if offsets[0] != 0 or offsets[-1] != X.shape[0]:
            raise ValueError(f"predict: offsets must run from 0 to n_docs={X.shape[0]}")
        if not self.bivariate:
            return self.predict_rows(X)
        pairs = pair_index(offsets)
        scores = np.empty(pairs.n_pairs)
        buf = None
        for start in range(0, pairs.n_pairs, batch_rows):
            stop = min(start + batch_rows, pairs.n_pairs)
            if buf is None or buf.shape[0] != stop - start:
                buf = None
            buf = pair_rows(X, pairs.left[start:stop], pairs.right[start:stop], self.n_diff,
                            self.difference, out=buf, query_level=self.query_level)
            scores[start:stop] = self.predict_rows(buf)
        return aggregate(scores, offsets, *pairs.as_tuple())


def fit_lb(
    train: RankData,
    vali: RankData | None,
    params: Mapping[str, Any] | None = None,
    *,
    loss: str = "lambdarank",
    norm: bool = True,
    hessian: str = "diagonal",
    truncation: int | None = None,
    settings: TrainSettings = LB_SETTINGS,
    monitor: Callable[[int, float], None] | None = None,
) -> LBModel:
    """Train with `LBObjective` at the cut-off ``settings.eval_at``: at most
    ``settings.max_trees`` trees, early stopping on validation NDCG@cutoff after
    ``settings.early_stopping`` trees without gain (`LB_SETTINGS`: §5.4's limits).
    ``hessian``: the pair hessian, ``"diagonal"`` (an approximation) or ``"exact"`` (eq. 7)
    (`ltrlib.bilambdamart.objective`). ``norm``: LightGBM's λRank normalisation (per pair by
    the score gap, per query by log2(1+Σλ)/Σλ). ``truncation``: λRank pairs need their
    better-ranked document in the current top ``truncation`` (default: the cut-off; the
    list length takes every pair). ``monitor(trees, value)`` is called with the validation
    NDCG after every tree, as `ltrlib.train.train_ranker`'s (`ltrlib.train.tuning.pruning_monitor`
    prunes Optuna trials with it)."""
    import lightgbm as lgb

    if settings.backend != "lightgbm":
        raise ValueError(f"the LB objectives train on LightGBM; settings.backend is {settings.backend!r}")
    quiet_lightgbm()
    cutoff, early_stopping = settings.eval_at, settings.early_stopping
    if vali is not None and vali.bivariate != train.bivariate:
        raise ValueError("train and vali must both be bivariate or both univariate")
    user = dict(params or {})
    if "objective" in user or "metric" in user:
        raise ValueError("params must not set objective or metric: fit_lb sets them from loss")
    full = {"objective": train.objective(loss, cutoff, norm, hessian, truncation), "metric": "None",
            "seed": settings.seed, "deterministic": True, "num_threads": settings.threads,
            "verbosity": -1, "feature_pre_filter": False, **user}
    full = lightgbm_params(full)
    if not ("force_col_wise" in user or "force_row_wise" in user):
        # Row-wise histograms are faster on pairs too (0.34 against 0.46 s a tree at notebook
        # 06's default, 374k pairs x 242 columns), but they keep a row-major copy of the
        # bins beside the column-major one: past ROW_WISE_MAX_CELLS binned cells (about
        # 1 GiB) that copy is not worth its memory (2.7 GB more at MSLR-WEB10K size).
        wide = train.bivariate and train.n_rows * len(train.row_feature_names) > ROW_WISE_MAX_CELLS
        full["force_col_wise" if wide else "force_row_wise"] = True
    dtrain = train.lgb_dataset()
    callbacks, valid_sets, curve = [], [], {}
    feval = None
    metric = f"ndcg@{cutoff}"
    if vali is not None:
        valid_sets = [vali.lgb_dataset(reference=train)]

        def feval(preds, _data):
            return metric, vali.ndcg_from_rows(preds, cutoff), True

        callbacks = [lgb.early_stopping(early_stopping, first_metric_only=True, verbose=False),
                     lgb.record_evaluation(curve)]
        if monitor is not None:
            callbacks.append(monitor_callback(monitor, metric))
    elif monitor is not None:
        raise ValueError("monitor watches the validation curve: it needs vali")
    with timing.fitting():
        booster = lgb.train(full, dtrain, num_boost_round=settings.max_trees, valid_sets=valid_sets,
                            valid_names=["vali"] if valid_sets else None, feval=feval,
                            callbacks=callbacks)
    values = [float(v) for v in curve["vali"][metric]] if curve else []
    best = int(booster.best_iteration) if values else booster.current_iteration()
    stored = {k: v for k, v in full.items() if k != "objective"}
    return LBModel(booster=booster, best_iteration=max(1, best), bivariate=train.bivariate,
                   n_diff=train.n_diff, difference=train.difference, loss=loss, cutoff=int(cutoff),
                   params=stored, feature_names=train.feature_names, curve=values,
                   info={"trees_grown": len(values) or booster.current_iteration(),
                         "train_rows": train.n_rows, "hessian": hessian, "norm": bool(norm),
                         "truncation": int(cutoff if truncation is None else truncation)},
                   query_level=train.query_level)


class _ObjectiveRanker:
    """``fit(X, y, qid)`` / ``predict(X, qid)`` / ``score(dataset)`` around `fit_lb` and
    `LBModel`.

    ``n_diff``: the leading columns of ``X`` whose differences x_i - x_j join a pair; None
    takes all. On listwise-expanded features (`expand_listwise`, base columns first) pass
    the number of base columns, as §5.5 does (137 on MSLR: 2 x 685 + 137 = 1507 pair
    features), and ``query_level=query_level_columns(137)``: the means and standard
    deviations, equal within a query, then enter a pair once (1233 pair columns). The
    training limits are constructor arguments, as scikit-learn estimators take their
    hyper-parameters, and become `fit_lb`'s `TrainSettings`. ``hessian``: `fit_lb`'s
    (``"exact"`` for the bivariate rankers only).
    """

    bivariate = True

    def __init__(self, *, loss: str = "lambdarank", cutoff: int = 5, params=None,
                 n_diff: int | None = None, difference: bool = True, norm: bool = True,
                 hessian: str = "diagonal", max_trees: int = LB_SETTINGS.max_trees,
                 early_stopping: int = LB_SETTINGS.early_stopping, seed: int = 0,
                 num_threads: int = LB_SETTINGS.num_threads, query_level=()):
        self.loss, self.cutoff, self.params = loss, int(cutoff), dict(params or {})
        self.n_diff, self.difference, self.norm, self.hessian = n_diff, difference, norm, hessian
        self.query_level = tuple(query_level)
        self.max_trees, self.early_stopping = max_trees, early_stopping
        self.seed, self.num_threads = seed, num_threads
        self.model_: LBModel | None = None

    def _data(self, X, y, qid, ideal_dcg, feature_names) -> RankData:
        return RankData.build(X, y, offsets_from_qid(qid), ideal_dcg=ideal_dcg, cutoff=self.cutoff,
                              bivariate=self.bivariate, n_diff=self.n_diff,
                              difference=self.difference, feature_names=feature_names,
                              query_level=self.query_level)

    def fit(self, X, y, qid, *, ideal_dcg=None, eval_set=None, feature_names=None):
        """``ideal_dcg``: per-query IDCG@cutoff (e.g. of the full first-stage lists);
        ``eval_set``: ``(X, y, qid)`` or ``(X, y, qid, ideal_dcg)`` for early stopping."""
        train = self._data(X, y, qid, ideal_dcg, feature_names)
        vali = None
        if eval_set is not None:
            if len(eval_set) not in (3, 4):
                raise ValueError("eval_set must be (X, y, qid) or (X, y, qid, ideal_dcg)")
            Xv, yv, qv, *rest = eval_set
            vali = self._data(Xv, yv, qv, rest[0] if rest else None, feature_names)
        settings = TrainSettings(max_trees=self.max_trees, early_stopping=self.early_stopping,
                                 eval_at=self.cutoff, seed=self.seed, num_threads=self.num_threads)
        self.model_ = fit_lb(train, vali, self.params, loss=self.loss, norm=self.norm,
                             hessian=self.hessian, settings=settings)
        return self

    def score(self, data: Dataset) -> np.ndarray:
        """Scores of ``data``'s documents (float64, row order): the `ltrlib.data.Scorer`
        contract."""
        return self._fitted("score").score(data)

    def predict(self, X, qid) -> np.ndarray:
        """Scores of the rows of ``X`` (scikit-learn style, queries given by ``qid``)."""
        return self._fitted("predict").predict(X, offsets_from_qid(qid))

    def _fitted(self, method: str) -> LBModel:
        if self.model_ is None:
            raise RuntimeError(f"{method} before fit: call fit(X, y, qid) first")
        return self.model_


class BivariateRanker(_ObjectiveRanker):
    """Bi-λMART (``loss="lambdarank"``) or Bi-GBT_Softmax (``loss="softmax"``)."""

    bivariate = True


class UnivariateRanker(_ObjectiveRanker):
    """λMART* (``loss="lambdarank"`` with the full-list IDCG) or GBT_Softmax."""

    bivariate = False
