"""The second-stage experiment of the Bi-LambdaMART paper (Tables 2, 4, 5 and 8).

`Stage2Experiment` holds the expanded stage-2 partitions and builds each LightGBM
Dataset once (documents, pairs with and without difference features), so every model and
every Optuna trial reuses the binned data. Models (`MODELS`):

==================  =========================================================================
``λMART``           LightGBM's native ``lambdarank`` on the expanded documents (IDCG of the
                    top-k list, as LightGBM computes it); truncation at the cut-off
``λMART*``          the same λRank (our kernel) normalised by the full-list IDCG
``Bi-λMART``        LB λRank over ordered pairs, full-list IDCG
``Bi-λMART w/o d``  the same without the difference features (Table 4)
``GBT_Softmax``     softmax loss on documents
``Bi-GBT_Softmax``  LB softmax over ordered pairs
==================  =========================================================================

Every model is trained with one `TrainSettings` (`LB_SETTINGS` by default): at most
``max_trees`` trees, stopping after ``early_stopping`` trees without improvement of
validation NDCG@cutoff, the cut-off being ``eval_at``; it is tuned with Optuna (TPE) by
validation NDCG@cutoff (full-list IDCG) over learning rate, minimum data in leaf, number
of leaves and minimum hessian (§5.4). The first trial of each study is the model's default
point (`ModelSpec.first_params`), so a one-trial study is a sensible fit, not a random draw.
Test NDCG@k is always normalised by the full-list IDCG.

Settings the paper leaves open (`OPEN_SETTINGS`), each fixed for every model or, as
``"tuned"``, a categorical dimension of the search of every model it applies to:

==============  ===============  ==========================================================
setting         values           whose
==============  ===============  ==========================================================
``norm``        ``on``, ``off``  λRank models. LightGBM's ``lambdarank_norm`` (each pair
                                 over 0.01 + |s_i - s_j|, each query by log2(1+Σλ)/Σλ).
                                 ``on`` is LightGBM's default; eq. 8 of the paper has no
                                 normalisation; which one its LightGBM code ran, it does
                                 not say. Our default: ``on``.
``truncation``  ``cutoff``,      λRank models. ``cutoff``: only pairs whose better-ranked
                ``all``          document is in the current top ``cutoff`` (our default,
                                 neither the paper's nor LightGBM's); ``all``: every pair,
                                 as eq. 8 sums, and as LightGBM's default level (30) does
                                 on a top-20 list.
``hessian``     ``diagonal``,    pair models. ``exact`` is eq. 7 (its sign typo fixed);
                ``exact``        ``diagonal`` drops its cross term, an approximation (our
                                 default). The paper does not say which its code computed.
==============  ===============  ==========================================================

Every model searches the same space in document units (`ltrlib.bilambdamart.space`): a pair
model's point is converted for its pair rows, so a learning rate takes the same step for
every model. A trial that is not usable fails and is replaced, so every model gets the same
number of usable trials: a point LightGBM cannot train (its split check, `_fit_or_fail`),
and a degenerate trial, whose validation NDCG peaked at its first tree or whose model ranks as
stage 1 does (`_refuse_degenerate`). `tuning_summary` counts both.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, NamedTuple

import numpy as np
import pandas as pd

from ltrlib import processes, sessions, trec
from ltrlib.bilambdamart.features import expand_listwise, expanded_names, query_level_columns
from ltrlib.bilambdamart.model import LB_SETTINGS, LBModel, RankData, fit_lb
from ltrlib.bilambdamart.objective import HESSIANS
from ltrlib.bilambdamart.space import SEARCH_UNITS, TUNED, lightgbm_point, pairs_per_document, suggest
from ltrlib.bilambdamart.two_stage import TwoStage
from ltrlib.data.dataset import Dataset, Scorer
from ltrlib.metrics import MarkedTable, compare, ndcg
from ltrlib.metrics.comparison import Comparison
from ltrlib.metrics.keys import flatten_metrics
from ltrlib.train.backends.base import DataCache
from ltrlib.train.ranker import train_ranker
from ltrlib.train.settings import TrainSettings, TuningSettings
from ltrlib.train.tuning import pruner, pruning_monitor, pruning_setup, run_study, watch

__all__ = ["MIN_COMPARISON_TRIALS", "MODELS", "ModelSpec", "OPEN_SETTINGS", "STAGE1_ROW", "Stage2Experiment",
           "TUNED_CHOICE", "curves_frame", "eval_table", "fit_model_groups", "fit_models",
           "bilambdamart_metrics", "model_list", "model_scores", "per_query_frame",
           "per_query_results", "ndcg_table", "settings_screen", "stage2_runs", "Stage2Runs", "tuned_table",
           "tuning_frame", "tuning_label", "tuning_summary"]

STAGE1_ROW = "λMART (stage 1)"
#: The settings the paper leaves open (module docstring): name -> its fixed values, the
#: first being our default. Each may also be `TUNED_CHOICE`.
OPEN_SETTINGS = {"norm": ("on", "off"), "truncation": ("cutoff", "all"), "hessian": HESSIANS}
TUNED_CHOICE = "tuned"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # "native" (LightGBM lambdarank) or "lb" (LBObjective)
    bivariate: bool = False
    loss: str = "lambdarank"
    full_ideal: bool = True
    difference: bool = True
    first_params: Mapping[str, Any] = field(default_factory=dict)


# Every model's first trial, in document units (`ltrlib.bilambdamart.space`): the same point
# for all. For a pair model at n = 20 LightGBM gets learning rate 0.0026 (the paper's
# Bi-λMART used 0.001-0.005), 950 pairs per leaf and a minimum hessian of 0.0001.
_FIRST = {"learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 50, "min_sum_hessian_in_leaf": 0.001}

MODELS: dict[str, ModelSpec] = {s.name: s for s in (
    ModelSpec("λMART", "native", full_ideal=False, first_params=_FIRST),
    ModelSpec("λMART*", "lb", first_params=_FIRST),
    ModelSpec("Bi-λMART", "lb", bivariate=True, first_params=_FIRST),
    ModelSpec("Bi-λMART w/o d", "lb", bivariate=True, difference=False, first_params=_FIRST),
    ModelSpec("GBT_Softmax", "lb", loss="softmax", first_params=_FIRST),
    ModelSpec("Bi-GBT_Softmax", "lb", bivariate=True, loss="softmax", first_params=_FIRST),
)}


def _checked_open_settings(chosen: Mapping[str, str]) -> dict[str, str]:
    """``chosen`` (every open setting by name), refused where a value is neither one of
    `OPEN_SETTINGS` nor `TUNED_CHOICE`."""
    for name, value in chosen.items():
        if value != TUNED_CHOICE and value not in OPEN_SETTINGS[name]:
            raise ValueError(f"{name} must be one of {(*OPEN_SETTINGS[name], TUNED_CHOICE)}, got {value!r}")
    return dict(chosen)


class Stage2Experiment:
    """Expanded stage-2 data and the Datasets every model trains on.

    ``settings``: how every model trains; its ``eval_at`` is the experiment's ``cutoff``
    (λRank truncation, early stopping and tuning), one of the kept cut-offs of ``two``.
    ``train_queries > 0`` trains on that many training queries drawn with
    ``settings.seed`` (all models alike); validation and test keep every query.
    ``listwise=False`` leaves out the listwise expansion (an ablation beyond the paper):
    the documents keep their base features and stage-1 score only, so a univariate model
    no longer sees a document's standing within its list, while pairs still carry x_i - x_j.
    ``norm``, ``truncation``, ``hessian``: the open settings (`OPEN_SETTINGS`, module
    docstring), each one of its values for every model, or ``"tuned"``: a categorical
    dimension of the search of every model it applies to (`open_choices`).
    """

    def __init__(self, two: TwoStage, *, settings: TrainSettings = LB_SETTINGS, train_queries: int = 0,
                 listwise: bool = True, hessian: str = "diagonal", norm: str = "on",
                 truncation: str = "cutoff"):
        if settings.eval_at not in two.cutoffs:
            raise ValueError(f"cutoff (settings.eval_at) = {settings.eval_at} is not among the kept "
                             f"IDCG cut-offs {two.cutoffs}")
        self.open_settings = _checked_open_settings({"norm": norm, "truncation": truncation, "hessian": hessian})
        self.two, self.settings = two, settings
        self.train_queries, self.listwise = int(train_queries), listwise
        self.cutoff, self.seed = settings.eval_at, settings.seed
        self.parts: dict[str, Dataset] = {}
        self.ideal: dict[str, np.ndarray] = {}
        for p in ("train", "vali", "test"):
            ds = two.part(p)
            ideal = two.full_ideal[p]
            if p == "train":
                sample = ds.sample_queries(int(train_queries), self.seed)
                if sample is not ds:
                    # The sample keeps ds's query order, so its queries' IDCGs are a mask.
                    ds, ideal = sample, ideal[np.isin(ds.query_ids, sample.query_ids)]
            if listwise:
                # Recomputed rather than cached: seconds at MSLR-WEB10K size (bench_bilambdamart
                # generates and expands it in 2 s), less than reading 118k x 685 floats back; the binned Datasets built from
                # it are what every model and trial shares.
                ds = Dataset(expand_listwise(ds.X, ds.offsets), ds.y, ds.query_ids, ds.offsets,
                             feature_names=expanded_names(ds.feature_names), name=f"{ds.name}-expanded")
            self.parts[p] = ds
            self.ideal[p] = ideal
        self.n_diff = two.part("train").n_features  # base features + stage-1 score
        # The listwise means and stds are equal within a query: a pair row carries them
        # once (18 % fewer pair columns at 22 base columns, the same trees).
        self.query_level = query_level_columns(self.n_diff) if listwise else ()
        self._data: dict[tuple, RankData] = {}
        # Native λMART's binned Datasets, shared by its trials as the pair data are.
        self._native_cache = DataCache(self.parts["train"], self.parts["vali"])

    def __getstate__(self) -> dict:
        # Sent to `fit_models`' worker processes: the binned LightGBM Datasets are rebuilt
        # there on first use (they do not pickle), and stage 1's full partitions, which the
        # experiment never reads, stay behind.
        state = dict(self.__dict__)
        state["two"] = replace(self.two, stage1=None)
        state["_data"] = {}
        state["_native_cache"] = DataCache(self.parts["train"], self.parts["vali"])
        return state

    def with_settings(self, settings: TrainSettings | None = None, **open_settings: str) -> "Stage2Experiment":
        """This experiment trained otherwise, on the same rows: other ``settings`` (trees,
        early stopping, threads; the cut-off and the seed choose the rows and stay) or other
        open settings (``norm``, ``truncation``, ``hessian``; the others stay). It shares this
        experiment's binned LightGBM Datasets, which take most of a fit's time on pair rows
        (37 of 45 s for one six-tree Bi-λMART on the tiny twin), so a sweep of settings bins
        the rows once."""
        settings = settings or self.settings
        if (settings.eval_at, settings.seed) != (self.cutoff, self.seed):
            raise ValueError(f"with_settings: eval_at and seed choose the rows ({self.cutoff}, {self.seed}); "
                             f"got ({settings.eval_at}, {settings.seed}): build a new Stage2Experiment")
        unknown = sorted(set(open_settings) - set(OPEN_SETTINGS))
        if unknown:
            raise ValueError(f"with_settings: unknown open settings {unknown}; they are {sorted(OPEN_SETTINGS)}")
        other = Stage2Experiment.__new__(Stage2Experiment)
        other.__dict__.update(self.__dict__)  # the parts, the IDCGs and both caches of binned Datasets
        other.settings = settings
        other.open_settings = _checked_open_settings({**self.open_settings, **open_settings})
        return other

    def relabelled(self, splits) -> "Stage2Experiment":
        """The same experiment (settings, training sample, listwise features, open settings)
        on the same documents with the labels of ``splits`` (`TwoStage.relabelled`): the
        control's data differ from the main run's in their labels alone."""
        return Stage2Experiment(self.two.relabelled(splits), settings=self.settings, train_queries=self.train_queries,
                                listwise=self.listwise, **self.open_settings)

    def ideal_at(self, part: str, k: int) -> np.ndarray:
        return self.ideal[part][:, self.two.cutoffs.index(k)]

    def rank_data(self, part: str, spec: ModelSpec) -> RankData:
        key = (part, spec.bivariate, spec.difference if spec.bivariate else None, spec.full_ideal)
        if key not in self._data:
            ds = self.parts[part]
            self._data[key] = RankData.from_dataset(
                ds, ideal_dcg=self.ideal_at(part, self.cutoff) if spec.full_ideal else None,
                cutoff=self.cutoff, bivariate=spec.bivariate, n_diff=self.n_diff,
                difference=spec.difference, query_level=self.query_level)
        return self._data[key]

    def applies(self, name: str, spec: ModelSpec) -> bool:
        """Whether the open setting ``name`` concerns ``spec``: norm and truncation the λRank
        models; the pair hessian the pair models (a document's hessian is exact already)."""
        return spec.bivariate if name == "hessian" else spec.loss == "lambdarank"

    def open_choices(self, spec: ModelSpec) -> dict[str, tuple[str, ...]]:
        """The open settings ``spec``'s search tunes, with their choices."""
        return {name: OPEN_SETTINGS[name] for name, value in self.open_settings.items()
                if value == TUNED_CHOICE and self.applies(name, spec)}

    def settings_of(self, spec: ModelSpec, params: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The open settings that apply to ``spec`` and what it trains with: a tuned one
        from ``params`` (a trial's point; our default when absent), a fixed one as given."""
        params = params or {}
        return {name: params.get(name, OPEN_SETTINGS[name][0]) if value == TUNED_CHOICE else value
                for name, value in self.open_settings.items() if self.applies(name, spec)}

    @property
    def pairs_per_document(self) -> int:
        """``n - 1`` of the search's document units (`ltrlib.bilambdamart.space`), from the
        training lists."""
        return pairs_per_document(self.parts["train"].offsets)

    def lightgbm_point(self, spec: ModelSpec, params: Mapping[str, Any]) -> dict[str, Any]:
        """LightGBM's parameters for a point of the search (document units): converted for a
        pair model, as they are for a document model (`ltrlib.bilambdamart.space`)."""
        return lightgbm_point(params, self.pairs_per_document if spec.bivariate else None)

    def fit(self, spec: ModelSpec, params: Mapping[str, Any], seed: int | None = None, monitor=None):
        """One model at a point of the search: the four tuned parameters in document units
        (`lightgbm_point` converts them for a pair model), any other LightGBM parameter and
        any tuned open setting; returns an `LBModel` or a `Ranker` (both
        `ltrlib.data.Scorer`s). ``monitor(trees, value)`` watches the validation curve
        (`ltrlib.train.tuning.pruning_monitor` prunes a trial with it)."""
        return self.fit_lightgbm(spec, self.lightgbm_point(spec, params), seed, monitor)

    def fit_lightgbm(self, spec: ModelSpec, params: Mapping[str, Any], seed: int | None = None,
                     monitor=None):
        """`fit` with LightGBM's own parameters, given to it as they are (e.g. a row of the
        paper's Table 8)."""
        settings = self.settings if seed is None else self.settings.replace(seed=seed)
        # Settings that do not apply to spec stay at our default, which the learner ignores.
        chosen = {name: values[0] for name, values in OPEN_SETTINGS.items()} | self.settings_of(spec, params)
        lgb_params = {k: v for k, v in params.items() if k not in OPEN_SETTINGS}
        # "all": every pair of a stage-2 list, which holds at most top_k documents.
        truncation = self.cutoff if chosen["truncation"] == "cutoff" else self.two.top_k
        norm = chosen["norm"] == "on"
        if spec.kind == "native":
            return train_ranker(self.parts["train"], self.parts["vali"],
                                {**lgb_params, "lambdarank_truncation_level": truncation,
                                 "lambdarank_norm": norm}, settings,
                                cache=self._native_cache, monitor=monitor)
        train = self.rank_data("train", spec)
        vali = self.rank_data("vali", spec)
        vali.lgb_dataset(reference=train)
        return fit_lb(train, vali, lgb_params, loss=spec.loss, settings=settings, monitor=monitor,
                      hessian=chosen["hessian"], norm=norm, truncation=truncation)

    @property
    def hessian(self) -> str:
        """The pair hessian setting (`open_settings`' ``hessian``)."""
        return self.open_settings["hessian"]

    def hessian_of(self, spec: ModelSpec) -> str:
        """The hessian setting ``spec`` trains with (``"tuned"`` when its search chooses):
        the pair hessian applies to pair models only; a univariate model's rows are
        documents, whose hessians are exact already."""
        return self.hessian if spec.bivariate else "diagonal"

    @functools.cached_property
    def stage1_vali_ndcg(self) -> float:
        """Validation NDCG@cutoff (full-list IDCG) of stage 1's own ranking of the lists,
        its score being the last of the base columns: what a stage-2 model that learnt
        nothing beyond stage 1's order scores (`_degenerate`)."""
        ds = self.parts["vali"]
        return float(ndcg(ds.y, ds.X[:, self.n_diff - 1].astype(np.float64), ds.offsets, self.cutoff,
                          ideal_dcg=self.ideal_at("vali", self.cutoff)).mean())

    def vali_score(self, model: Scorer) -> float:
        """Validation NDCG@cutoff with the full-list IDCG: the tuning objective."""
        if isinstance(model, LBModel) and model.curve:
            # An LB model early-stopped on exactly this number (its rank data's IDCG is
            # `ideal_at("vali", cutoff)`, its NDCG kernel that of `ltrlib.metrics.ndcg`):
            # reading it off the curve spares a pair model scoring every validation pair again.
            return float(model.curve[model.best_iteration - 1])
        ds = self.parts["vali"]
        s = model.score(ds)
        return float(ndcg(ds.y, s, ds.offsets, self.cutoff,
                          ideal_dcg=self.ideal_at("vali", self.cutoff)).mean())


@dataclass
class FittedModel:
    name: str
    model: Any
    params: dict
    best_iteration: int
    vali_ndcg: float
    tuning: pd.DataFrame
    failed: int = 0  # trials replaced by others (`_fit_or_fail`, `_refuse_degenerate`)
    failures: list[str] = field(default_factory=list)  # why, in words, one per replaced trial
    # Each replaced trial's validation NDCG, where it was measured (a degenerate trial), else NaN.
    replaced_values: list[float] = field(default_factory=list)
    # The tuned parameters as LightGBM got them (`Stage2Experiment.lightgbm_point`):
    # ``params`` are in the search's document units.
    lightgbm_params: dict = field(default_factory=dict)


def _best_iteration(model) -> int:
    return int(model.best_iteration)


def _fit_or_fail(exp: Stage2Experiment, spec: ModelSpec, params: dict, monitor, trial):
    """``exp.fit``, except that a point LightGBM stops on with its split check (its open
    issue #4739) fails the trial, its message kept in the trial, and the study replaces it
    (`ltrlib.train.tuning.TrialFailed`). Its known cause, a minimum leaf hessian of exactly 0, is
    avoided (`ltrlib.train.backends.MIN_HESSIAN_FLOOR`); this guards the rest."""
    import lightgbm as lgb

    from ltrlib.train.tuning.loop import FAILURE_ATTR, TrialFailed

    try:
        return exp.fit(spec, params, monitor=monitor)
    except lgb.basic.LightGBMError as err:
        if "left_count" not in str(err) and "right_count" not in str(err):
            raise
        trial.set_user_attr(FAILURE_ATTR, f"LightGBM could not train this point: {str(err).strip()}")
        raise TrialFailed(str(err).strip()) from None


#: Why a trial is degenerate (`_degenerate`), each the start of its replacement's reason.
DEGENERATE = "best at tree 1"
STAGE1_TIE = "ranks as stage 1"


def _degenerate(exp: Stage2Experiment, model, value: float) -> str | None:
    """Why a trial measured nothing of its model, or None. Two ways, each found on the
    first study's pair models (issue of fair budgets):

    * `DEGENERATE`: validation NDCG peaked at the first tree. Before the search's document
      units (`ltrlib.bilambdamart.space`) a pair model's step at a document model's rate was
      n - 1 times too long, and the high rates overshot at once.
    * `STAGE1_TIE`: the kept model ranks every validation list as stage 1 does (its
      validation NDCG equals stage 1's). A pair model's first trees split on the stage-1
      score difference, so its scores reproduce stage 1's order exactly; at a small rate the
      order then holds, validation NDCG stays tied with stage 1's for more than the
      patience (30 trees, §5.4), and early stopping ends the trial at tree 2 or so with
      stage 1's ranking. Seen on seed 0 after the unit fix: 5 of Bi-λMART's 16 trials, each
      at stage 1's 0.7266.

    Both are replaced rather than worked around, so the paper's stopping rule stays as it
    is; a patience blind to exact ties would end the plateau too, but changes that rule and
    can run a stalled model to its 2,000 trees."""
    if exp.settings.max_trees >= 2 and _best_iteration(model) == 1:
        return (f"{DEGENERATE}: validation NDCG@{exp.cutoff} did not rise in the "
                f"{exp.settings.early_stopping} trees after the first")
    if abs(value - exp.stage1_vali_ndcg) < 1e-12:
        return (f"{STAGE1_TIE}: validation NDCG@{exp.cutoff} {value:.4f}, stage 1's, held for "
                f"{exp.settings.early_stopping} trees")
    return None


def _refuse_degenerate(exp: Stage2Experiment, model, value: float, point: Mapping[str, Any], trial,
                       n_trials: int) -> None:
    """Fail (and so replace) a degenerate trial (`_degenerate`): it measured one tree or stage
    1, not a model at that point, and a model with such trials would search with fewer usable
    trials than the others.

    A study replaces at most ``n_trials`` trials (`ltrlib.train.tuning.run_study`); past
    that a degenerate trial is kept, marked (user attribute ``degenerate``), so the study
    ends, and `tuning_summary` counts it as not usable (``kept_degenerate``) for the
    comparison's gate to see."""
    from optuna.trial import TrialState

    from ltrlib.train.tuning.loop import FAILURE_ATTR, REPLACED_VALUE_ATTR, TrialFailed

    why = _degenerate(exp, model, value)
    if why is None:
        return
    why += (f" (learning rate {point['learning_rate']}, minimum hessian {point['min_sum_hessian_in_leaf']}, "
            "document units)")
    replaced = sum(FAILURE_ATTR in t.user_attrs
                   for t in trial.study.get_trials(deepcopy=False, states=(TrialState.FAIL,)))
    if replaced >= n_trials:
        trial.set_user_attr("degenerate", why)
        return
    trial.set_user_attr(FAILURE_ATTR, why)
    # Kept so `tuning_summary` can say whether replacing it cost the model a better trial.
    trial.set_user_attr(REPLACED_VALUE_ATTR, float(value))
    raise TrialFailed(why)


#: `fit_models`' search by default: one trial (the model's default point), not pruned (why:
#: `fit_models`). A search's first point is always the model's own (`ModelSpec.first_params`).
STAGE2_TUNING = TuningSettings(n_trials=1, prune=False, progress=False)


def fit_models(exp: Stage2Experiment, names, *, tuning: TuningSettings = STAGE2_TUNING,
               study_prefix: str = "06", n_jobs: int = 1) -> dict[str, FittedModel]:
    """Tune (or resume) each model's Optuna study and keep its best model.

    Every model gets the same search (`suggest`) and the same number of trials
    (``tuning.n_trials``), each trial early-stopped (``exp.settings.early_stopping``). With
    ``tuning.prune`` a trial whose validation
    curve falls below the median of the completed trials' is also stopped early
    (`ltrlib.train.tuning.pruner`, as notebook 03's studies), the first point never. It is off by
    default, because at stage 2 it costs the pair models their best points: the pair
    models' slow, large-leaf settings trail the default point for their first trees and
    overtake it later. Measured (small, seed 0, 1,000 training queries, 10 trials):
    Bi-λMART's best validation NDCG@5 was 0.7387 pruned (8 of 10 trials pruned, its
    later best among them, at 15 trees) against 0.7456 unpruned; λMART*'s 0.7406 either
    way. And it saves little here: with a patience of 30 every trial early-stops within a
    few hundred trees.

    Each study's first trial is the model's default point with the open settings at ours,
    whatever ``tuning.first_params`` says. Studies are named ``<study_prefix>.<model>`` in
    ``tuning.storage`` (a journal file path or None for in memory); a finished study is reused, and its best model retrained once
    (training is deterministic) when it is not in memory.

    ``n_jobs`` models are tuned side by side in joblib worker processes, as
    `ltrlib.train.tuning.fit_side_by_side` does for notebook 03 (two one-thread LightGBM fits get
    more done on two cores than one two-thread fit). Each model's study is its own, so the
    workers share nothing but the storage file, which locks. A pair model costs about twenty
    document models per tree (19 pair rows per document), so the pair models start first
    and the document models fill the gaps. ``n_jobs=1`` tunes them here, one after another.
    """
    return fit_model_groups({study_prefix: (exp, names)}, tuning=tuning, n_jobs=n_jobs)[study_prefix]


def fit_model_groups(groups: Mapping[str, tuple[Stage2Experiment, Any]], *,
                     tuning: TuningSettings = STAGE2_TUNING, n_jobs: int = 1) -> dict[str, dict[str, FittedModel]]:
    """`fit_models` for several experiments in one pool of workers, e.g. notebook 06's main
    run and its control: ``groups`` maps a study prefix to ``(experiment, model names)``;
    returns the fitted models by prefix, then by name.

    Why one pool: the pair models take nearly all the time, and run group after group
    a lone pair model (the control's Bi-λMART) leaves the other core idle for as long as it
    takes; pooled, the four pair models share both cores.
    """
    jobs = []
    for prefix, (exp, names) in groups.items():
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            raise ValueError(f"unknown models {unknown}; choose from {list(MODELS)}")
        jobs += [(prefix, exp, name) for name in names]
    if int(n_jobs) < 1:
        raise ValueError(f"n_jobs must be >= 1, got {n_jobs}")
    fitted: dict[str, dict[str, FittedModel]] = {prefix: {} for prefix in groups}
    if int(n_jobs) == 1 or len(jobs) == 1:
        for prefix, exp, name in jobs:
            fitted[prefix][name] = _tune_model(exp, name, tuning=tuning, study_prefix=prefix)
        return fitted
    from joblib import Parallel, delayed

    from ltrlib import timing
    from ltrlib.progress import bar

    workers = min(int(n_jobs), len(jobs))
    order = sorted(jobs, key=lambda job: not MODELS[job[2]].bivariate)  # stable: pair models first
    # In a batch run the workers' trial bars report to the runner (ltrlib.progress) and print nothing.
    progress = tuning.progress
    in_worker = tuning.replace(progress=progress and sessions.in_batch())
    calls = (delayed(_tune_in_worker)(prefix, exp, name, in_worker) for prefix, exp, name in order)
    with timing.fitting(), processes.worker_processes(workers):
        done = Parallel(n_jobs=workers, return_as="generator_unordered")(calls)
        for prefix, f in bar(done, total=len(order), unit="model", enabled=progress,
                             desc=f"stage-2 models, {workers} at a time"):
            fitted[prefix][f.name] = f
    # In the order asked for, whatever order the workers finished in.
    return {prefix: {name: fitted[prefix][name] for name in names} for prefix, (_, names) in groups.items()}


def _tune_in_worker(prefix: str, exp: Stage2Experiment, name: str,
                    tuning: TuningSettings) -> tuple[str, FittedModel]:
    return prefix, _tune_model(exp, name, tuning=tuning, study_prefix=prefix)


def _tune_model(exp: Stage2Experiment, name: str, *, tuning: TuningSettings, study_prefix: str) -> FittedModel:
    """One model's study (`fit_models`), in this process or a worker's."""
    spec = MODELS[name]
    choices = exp.open_choices(spec)

    def objective(trial, progress_monitor):
        monitor = watch(pruning_monitor(trial, exp.settings.early_stopping) if tuning.prune else None,
                        progress_monitor)
        point = {**suggest(trial), **{k: trial.suggest_categorical(k, c) for k, c in choices.items()}}
        model = _fit_or_fail(exp, spec, point, monitor, trial)
        value = exp.vali_score(model)
        _refuse_degenerate(exp, model, value, point, trial, tuning.n_trials)
        trial.set_user_attr("best_iteration", _best_iteration(model))
        return value, model

    ds = exp.parts["train"]
    setup = {"model": name, "cutoff": exp.cutoff, "train_docs": ds.n_docs,
             "train_label_sum": int(ds.y.sum()), "features": ds.n_features,
             "max_trees": exp.settings.max_trees, "early_stopping": exp.settings.early_stopping,
             "seed": exp.seed, "top_k": exp.two.top_k, "folds": exp.two.folds,
             "hessian": exp.hessian_of(spec),
             "pruning": pruning_setup(tuning.prune, exp.settings.early_stopping),
             # What a point means (`ltrlib.bilambdamart.space`): a study searched in other units
             # is refused, not resumed.
             "search_units": SEARCH_UNITS,
             "pairs_per_document": exp.pairs_per_document if spec.bivariate else None}
    # The other open settings (module docstring) join the setup when not at our default,
    # so the journal of a run made before they existed still resumes.
    setup.update({k: v for k, v in exp.open_settings.items()
                  if k != "hessian" and exp.applies(k, spec) and v != OPEN_SETTINGS[k][0]})
    # The first point is the model's default with every tuned open setting at our default.
    first = {**spec.first_params, **{k: c[0] for k, c in choices.items()}}
    result = run_study(objective, tuning.replace(first_params=first), study_name=f"{study_prefix}.{name}",
                       seed=exp.seed, setup=setup, searched=(*TUNED, *choices),
                       study_pruner=pruner(exp.settings.early_stopping), keep_best=True)
    model = result.ranker or exp.fit(spec, result.best_params)  # retrained: its best was trained elsewhere
    params = {**result.best_params, **exp.settings_of(spec, result.best_params)}
    return FittedModel(name, model, params, _best_iteration(model),
                       float(result.best_value), result.trials, failed=result.failed, failures=result.failures,
                       replaced_values=result.replaced_values,
                       lightgbm_params=exp.lightgbm_point(spec, result.best_params))


#: Fewer trials than this per model are fits, not a tuned comparison (issue of notebook 06:
#: a model at its default point against another at its own says little about either).
MIN_COMPARISON_TRIALS = 10


def tuning_label(n_trials: int) -> str:
    """What a table of stage-2 models trained with ``n_trials`` each may claim, for its
    caption: a comparison under equal tuning, or fits that are not one."""
    if n_trials >= MIN_COMPARISON_TRIALS:
        return f"every model tuned alike: {n_trials} Optuna trials over the same space"
    return (f"NOT A COMPARISON: {n_trials} trial(s) per model, fewer than the "
            f"{MIN_COMPARISON_TRIALS} a tuned comparison needs")


def model_list(names: str, parameter: str = "models", choices: Mapping[str, Any] = MODELS) -> list[str]:
    """Model names from a comma-separated string (a notebook parameter), each one of
    ``choices`` (`MODELS`; `ltrlib.neural.NEURAL_MODELS` for the networks); ValueError
    naming ``parameter`` otherwise."""
    out = [n.strip() for n in str(names).split(",") if n.strip()]
    unknown = [n for n in out if n not in choices]
    if unknown or not out:
        raise ValueError(f"{parameter}: unknown models {unknown or [names]}; choose from {', '.join(choices)}")
    return out


def per_query_frame(per_query: pd.DataFrame, control: pd.DataFrame | None = None) -> pd.DataFrame:
    """``per_query_results`` of the main run and, when given, of the control, in one tidy
    frame with a ``variant`` column (``main``, ``control``): what a study pools over seeds."""
    parts = [per_query.assign(variant="main")]
    if control is not None:
        parts.append(control.assign(variant="control"))
    return pd.concat(parts, ignore_index=True)[["variant", "model", "metric", "qid", "value"]]


def model_scores(exp: Stage2Experiment, models: Mapping[str, Any], part: str = "test", stage1: bool = True,
                 oracles: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Every model's scores of ``part``'s stage-2 documents, by name (float64, row order).

    ``stage1``: add the first-stage λMART row (its score ranks the top-k as it ranked the
    full list, so this is its single-stage ranking). ``oracles``: more rows from scores of
    every document of the *stage-1* partition (e.g. `ltrlib.data.synthetic.oracle_scores`),
    cut to the same top-k lists.
    """
    ds = exp.parts[part]
    scores = {}
    if stage1:
        # The last base column of the expansion is the stage-1 score.
        scores[STAGE1_ROW] = ds.X[:, exp.n_diff - 1].astype(np.float64)
    for name, m in models.items():
        scores[name] = getattr(m, "model", m).score(ds)
    for name, s in (oracles or {}).items():
        scores[name] = np.asarray(s, dtype=np.float64)[exp.two.kept[part]]
    return scores


class Stage2Runs(NamedTuple):
    """What `stage2_runs` returns: the TREC run files of stage-2 lists, ready for
    `ltrlib.report.Reporter.run_file` (``run_file(name, judged, s, docnos=docnos)``)."""

    judged: Dataset  # the full stage-1 partition: its qrels hold every document
    docnos: np.ndarray  # each stage-2 row's id in ``judged`` (`ltrlib.trec.docnos`)
    scores: dict[str, np.ndarray]  # name -> one score per stage-2 row

    def records(self, prefix: str = "", qrels: str = "qrels") -> list[trec.RunFile]:
        """One `ltrlib.trec.RunFile` per model, named ``<prefix><model>`` and judged by the
        qrels named ``qrels``, for `ltrlib.report.Reporter.run_file_records`."""
        return trec.run_records(self.scores, self.judged, qrels, prefix=prefix, docnos=self.docnos)


def stage2_runs(exp: Stage2Experiment, models: Mapping[str, Any], part: str = "test", *,
                scores: Mapping[str, np.ndarray] | None = None, stage1: bool = True) -> Stage2Runs:
    """Every model's ranking of ``part``'s stage-2 lists, as TREC run files need it.

    Stage 2 re-ranks each query's top k but its NDCG divides by the full list's ideal DCG,
    so the qrels are those of the full partition (``judged``: trec_eval and ranx then
    compute the same ideal DCG) and each stage-2 row is named by its row within the *full*
    query (`TwoStage.kept`), not within the top-k list (`ltrlib.trec`, module docstring).
    ``scores``: name -> scores of the stage-2 rows, ``stage1`` first (stage 1's ranking of
    the same lists, Table 2's row a) when ``stage1``, then every model of ``models`` in its
    order; pass `model_scores`' output to reuse it (its oracle rows are left out).
    """
    two = exp.two
    if two.stage1 is None:
        raise ValueError("stage2_runs: the experiment has no stage-1 partitions (a copy sent to a worker "
                         "process drops them); call it on the notebook's own experiment")
    judged, ds = getattr(two.stage1, part), exp.parts[part]
    rows = np.flatnonzero(two.kept[part])
    if rows.size != ds.n_docs or not np.array_equal(judged.query_ids, ds.query_ids):
        raise ValueError(f"stage2_runs: part {part!r}'s stage-2 lists are not all of stage 1's top-k lists "
                         f"({ds.n_docs} of {rows.size} rows; a training sample, train_queries?)")
    if scores is None:
        scores = model_scores(exp, models, part, stage1)
    named = {"stage1": np.asarray(scores[STAGE1_ROW], dtype=np.float64)} if stage1 else {}
    named.update({name: np.asarray(scores[name], dtype=np.float64) for name in models})
    return Stage2Runs(judged, trec.docnos(judged.query_ids, judged.offsets)[rows], named)


def per_query_results(exp: Stage2Experiment, models: Mapping[str, Any],
                      cutoffs=(1, 3, 5, 10, 20), part: str = "test",
                      stage1: bool = True, oracles: Mapping[str, np.ndarray] | None = None,
                      scores: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Tidy ``model, metric, qid, value``: NDCG@k per query with the full-list IDCG, of the
    rows `model_scores` gives (``scores``: those already computed, instead of scoring)."""
    ds = exp.parts[part]
    if scores is None:
        scores = model_scores(exp, models, part, stage1, oracles)
    rows = []
    for name, s in scores.items():
        for k in cutoffs:
            v = ndcg(ds.y, s, ds.offsets, k, ideal_dcg=exp.ideal_at(part, k))
            rows.append(pd.DataFrame({"model": name, "metric": f"ndcg@{k}",
                                      "qid": ds.query_ids, "value": v}))
    return pd.concat(rows, ignore_index=True)


def ndcg_comparison(per_query: pd.DataFrame, models, *, alpha: float = 0.01) -> Comparison:
    """The one comparison behind `ndcg_table` and `ndcg_pvalues`: every model of ``models``
    against every other (letters a, b, ... in their order), two-sided paired t-tests at
    ``alpha`` over the test queries, per cutoff."""
    models = list(models)
    return compare(per_query, models, models=models, alpha=alpha)


def ndcg_table(per_query: pd.DataFrame, models, *, alpha: float = 0.01) -> MarkedTable:
    """Paper layout: rows = models in order (``a. λMART``, ...), columns = NDCG@k, means
    with superscripts (a `ltrlib.metrics.MarkedTable`: numbers and marks until written).

    A letter marks a significant *improvement* (paired two-sided t-test p < ``alpha``,
    positive mean difference) over the earlier row with that letter, as in Table 2.
    """
    # "Two-sided p < alpha and better" (t > 0) is the one-sided test at alpha / 2 this
    # table has always marked with: scipy's two-sided p is exactly twice the one-sided tail.
    table = ndcg_comparison(per_query, models, alpha=alpha).marked(
        earlier_only=True, better_only=True, label="{marker}. {model}")
    # The notebook's tables have no name over the metric columns; keep them as they were.
    return replace(table, named_columns=False)


def ndcg_pvalues(per_query: pd.DataFrame, models, *, alpha: float = 0.01) -> pd.DataFrame:
    """The tests behind `ndcg_table`'s marks, with Holm's correction beside them: one row per
    cutoff, model and earlier row of the table (``metric, model, baseline, diff, p, marked,
    p_holm, marked_holm``); ``p`` the two-sided paired t-test's over the test queries,
    ``marked`` the table's mark (``p < alpha`` and better), ``p_holm`` Holm's step-down over
    the table's family (every mark it could print: each row against each earlier row at
    every cutoff; ours, the paper corrects nothing) and ``marked_holm`` the mark under it.
    Read from the same `ndcg_comparison` as `ndcg_table`."""
    tests = ndcg_comparison(per_query, models, alpha=alpha).pvalues("holm", earlier_only=True)
    tests["marked"] = (tests.p < alpha) & (tests["diff"] > 0)
    tests["marked_holm"] = (tests.p_holm < alpha) & (tests["diff"] > 0)
    return tests[["metric", "model", "baseline", "diff", "p", "marked", "p_holm", "marked_holm"]]


def tuned_table(fitted: Mapping[str, FittedModel], stage1: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Table 8: the tuned parameters as LightGBM got them (the paper's table reports
    those), the open settings each model trained with (tuned or fixed), tree count and
    validation NDCG (at its own cut-off) of each model; for a pair model ``searched`` gives
    the point in the search's document units (`ltrlib.bilambdamart.space`), for the others "=".
    ``stage1`` (`ltrlib.bilambdamart.two_stage.Stage1Tuning.row`) adds stage 1's row first."""
    rows = [dict(stage1)] if stage1 else []
    for name, f in fitted.items():
        lgb = f.lightgbm_params or f.params
        converted = any(lgb[k] != f.params[k] for k in TUNED)
        rows.append({"model": name, "learning_rate": lgb["learning_rate"],
                     "min_data_in_leaf": lgb["min_data_in_leaf"],
                     "num_leaves": lgb["num_leaves"],
                     "min_sum_hessian_in_leaf": lgb["min_sum_hessian_in_leaf"],
                     "searched": (f"learning rate {f.params['learning_rate']}, min data "
                                  f"{f.params['min_data_in_leaf']}, min hessian "
                                  f"{f.params['min_sum_hessian_in_leaf']}") if converted else "=",
                     # "-": the setting does not apply to the model.
                     **{k: f.params.get(k, "-") for k in OPEN_SETTINGS},
                     "trees": f.best_iteration, "trials": len(f.tuning),
                     "vali_ndcg": f.vali_ndcg})
    return pd.DataFrame(rows)


def settings_screen(fitted: Mapping[str, FittedModel]) -> pd.DataFrame | None:
    """For every tuned open setting, per model and choice, the trials that drew it and their
    best and median validation NDCG: what validation says of each choice (``model,
    setting, choice, trials, best, median``). None when no open setting was tuned (a
    notebook then shows and saves nothing)."""
    rows = []
    for name, f in fitted.items():
        t = f.tuning[f.tuning.state == "complete"]
        for setting in OPEN_SETTINGS:
            if setting not in t:
                continue
            for choice, g in t.groupby(setting, sort=True):
                rows.append({"model": name, "setting": setting, "choice": choice, "trials": len(g),
                             "best": g.value.max(), "median": g.value.median()})
    return pd.DataFrame(rows, columns=["model", "setting", "choice", "trials", "best", "median"]) if rows else None


def tuning_summary(fitted: Mapping[str, FittedModel],
                   control: Mapping[str, FittedModel] | None = None) -> pd.DataFrame:
    """Per model of ``fitted``, then of ``control`` (rows ``control <model>``), what its tuning
    spent: ``trials`` finished, of which ``completed`` and ``pruned``, and ``usable``, those
    less ``kept_degenerate`` (degenerate trials kept only once the study's replacements ran
    out, `_refuse_degenerate`); ``replaced``, trials run
    again at another point and not counted, split by why: ``replaced_degenerate``
    (`_degenerate`: `DEGENERATE` or `STAGE1_TIE`) and ``replaced_lightgbm`` (LightGBM could
    not train the point, `_fit_or_fail`); ``why``, the reasons in words with their counts;
    and the best trial's tree count. Fair tuning means equal ``usable`` trials for every
    model. Whether replacing degenerate trials tilted the search: ``replaced_best``, the
    best validation NDCG among them, and ``replaced_above_kept``, how many scored above the
    model's kept best (then the model gave up a higher validation value, and its test
    NDCG may be lower than the search alone would have made it)."""
    rows = []
    for name, f in {**fitted, **{f"control {m}": f for m, f in (control or {}).items()}}.items():
        t = f.tuning
        kept = int(t["degenerate"].notna().sum()) if "degenerate" in t else 0
        reasons = pd.Series([why.split(":", 1)[0] for why in f.failures], dtype=object)
        counts = reasons.value_counts(sort=False)
        degenerate = int(counts.get(DEGENERATE, 0) + counts.get(STAGE1_TIE, 0))
        measured = [v for v in f.replaced_values if not math.isnan(v)]
        rows.append({"model": name, "trials": len(t), "usable": len(t) - kept,
                     "completed": int((t.state == "complete").sum()), "pruned": int((t.state == "pruned").sum()),
                     "kept_degenerate": kept, "replaced": int(f.failed), "replaced_degenerate": degenerate,
                     "replaced_lightgbm": int(f.failed) - degenerate,
                     "replaced_best": max(measured) if measured else math.nan,
                     "replaced_above_kept": sum(v > f.vali_ndcg for v in measured),
                     "best_iteration": f.best_iteration, "vali_ndcg": f.vali_ndcg,
                     "why": "; ".join(f"{n} {reason}" for reason, n in counts.items())})
    return pd.DataFrame(rows)


def curves_frame(fitted: Mapping[str, FittedModel], split: str = "stage 2",
                 cutoff: int = 5) -> pd.DataFrame:
    """Validation NDCG@cutoff after each tree, in the layout of `ltrlib.train.validation_curves`
    (``split, model, tree, metric, value, best``) so `ltrlib.plots.validation_curves` draws
    it; ``cutoff`` is the one the models were early-stopped on (`Stage2Experiment`'s)."""
    parts = []
    for name, f in fitted.items():
        curve = np.asarray(getattr(f.model, "curve", []) or [], dtype=np.float64)
        if curve.size == 0:
            continue
        trees = np.arange(1, curve.size + 1)
        # LightGBM's own curve for native λMART normalises by the top-k list's IDCG, which
        # reads higher than the full-list IDCG of the others: say so in the legend.
        label = name if MODELS[name].full_ideal else f"{name} (top-k IDCG)"
        parts.append(pd.DataFrame({"split": split, "model": label, "tree": trees,
                                   "metric": f"ndcg@{cutoff}", "value": curve,
                                   "best": trees == f.best_iteration}))
    return pd.concat(parts, ignore_index=True) if parts else \
        pd.DataFrame(columns=["split", "model", "tree", "metric", "value", "best"])


def tuning_frame(fitted: Mapping[str, FittedModel], split: str = "stage 2") -> pd.DataFrame:
    """Every trial of every study (``split, model, trial, value, best_so_far, ...``), the
    layout `ltrlib.plots.tuning_history` draws."""
    parts = []
    for name, f in fitted.items():
        df = f.tuning.copy()
        df.insert(0, "model", name)
        df.insert(0, "split", split)
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def bilambdamart_metrics(per_query: pd.DataFrame, k: int = 5, no_listwise: pd.DataFrame | None = None,
                     control: pd.DataFrame | None = None) -> dict[str, float]:
    """Scalars for ``metrics.json`` (keys by `ltrlib.metrics.flatten_metrics`): mean test
    NDCG@k per model (``bi-lambdamart.ndcg5``) and, given the per-query results of the
    models without listwise features or of the control without pairwise structure, theirs
    (``no_listwise.bi-lambdamart.ndcg5``, ``control.bi-lambdamart.ndcg5``)."""
    def means(pq: pd.DataFrame) -> pd.DataFrame:
        pq = pq[pq.metric == f"ndcg@{k}"]
        return pq.groupby(["model", "metric"], sort=False).value.mean().reset_index()

    parts = [means(per_query)]
    for name, pq in (("no_listwise", no_listwise), ("control", control)):
        if pq is not None:
            parts.append(means(pq).assign(variant=name))
    return flatten_metrics(parts, keys=["variant", "model"])


def eval_table(per_query: pd.DataFrame) -> pd.DataFrame:
    """Plain means: model x metric (for metrics.json and quick checks)."""
    return per_query.pivot_table(index="model", columns="metric", values="value", sort=False)
