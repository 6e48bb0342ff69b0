"""One entry point from a notebook's parameters to data: `load_dataset`.

Notebooks receive ``dataset``, ``data_dir``, ``scale`` and ``seed`` from the batch runner
(or their defaults in JupyterLab) and hand them here, so every notebook reads the same data
the same way, whether synthetic, the shipped LightGBM example, or a user's collection.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ltrlib import config, provenance
from ltrlib.data.catalogue import COLLECTIONS, fold_folder, fold_number
from ltrlib.data.dataset import Splits
from ltrlib.data.readers import read_letor, read_letor_folder, read_lightgbm
from ltrlib.data.svmlight.parse import check_plain_text
from ltrlib.data.synthetic import make_synthetic, with_config

#: Names `load_dataset` knows without a path.
BUILTIN = ("synthetic", "lightgbm-rank")


def load_dataset(
    dataset: str = "synthetic",
    data_dir: str | Path = "",
    scale: str = "small",
    seed: int = 0,
    *,
    fold: int | str | None = None,
    category_feature: int | str | None = None,
    category_bins: int = 0,
    vali_fraction: float = 0.2,
    synthetic_config: Mapping[str, Any] | None = None,
    **reader_options,
) -> Splits:
    """Train / validation / test partitions for a notebook.

    ``dataset``
        ``"synthetic"`` (the Istella-like default, sized by ``scale``, drawn from ``seed``);
        ``"lightgbm-rank"`` (the small real example shipped in ``../shared``); or a path, or
        a name under ``data_dir`` (default ``data/raw``): a collection folder, known by the
        files of a collection of `ltrlib.data.catalogue` (``train.txt, vali.txt, test.txt``;
        MSLR's ``Fold1``-``Fold5`` read ``Fold1`` unless ``fold`` says otherwise; Yahoo's
        ``set1.{train,valid,test}.txt``), a LETOR file with ``qid:``, or a LightGBM-format
        file with its ``.query`` file.
    ``category_feature``
        The feature holding each document's topic category (file index or name, e.g. ``220``
        or ``"f220"``). With ``category_bins > 0`` the feature is binned by quantiles
        instead, the non-IID paper's suggestion for MSLR (PageRank).
    ``vali_fraction``
        When a collection has no validation part, that share of its training queries
        becomes the validation part (seeded by ``seed``); recorded in ``meta``.
    ``synthetic_config``
        Knobs of the synthetic generator to change (`ltrlib.data.synthetic.SyntheticConfig`),
        e.g. ``{"pairwise_weight": 0.0}`` for notebook 06's control; recorded in the
        provenance, so results of the changed data never mix with the default's.
    """
    if dataset == "synthetic":
        if category_feature not in (None, ""):
            raise ValueError("category_feature does not apply to the synthetic dataset: "
                             "it carries its own category feature")
        changes = dict(synthetic_config or {})
        splits = make_synthetic(scale, seed, with_config(**changes) if changes else None)
        provenance.record(splits, dataset=dataset, scale=scale, seed=seed)
        return splits
    if synthetic_config:
        raise ValueError(f"synthetic_config applies to the synthetic dataset only, not {dataset!r}")

    cat = {}
    if category_feature not in (None, ""):
        if category_bins:
            cat["category_bins"] = (category_feature, int(category_bins))
        else:
            cat["category_feature"] = category_feature
    elif category_bins:
        raise ValueError("category_bins needs category_feature: the feature to bin")
    options = {**reader_options, **cat}

    src = locate_dataset(dataset, data_dir, fold=fold)
    if src.kind == "lightgbm-rank":
        splits = Splits(
            read_lightgbm(src.path / "rank.train", name="lightgbm-rank/train", **options),
            None,
            read_lightgbm(src.path / "rank.test", name="lightgbm-rank/test", **options),
        )
    elif src.kind == "folder":
        splits = read_letor_folder(src.path, src.fold, files=src.files, **options)
    elif src.kind == "lightgbm":
        splits = Splits(read_lightgbm(src.path, **options))
    else:
        splits = Splits(read_letor(src.path, **options))
    splits = _ensure_vali(splits, vali_fraction, seed)
    provenance.record(splits, dataset=dataset, scale=None, seed=seed)
    return splits


@dataclass(frozen=True)
class DatasetSource:
    """Where `load_dataset` reads a dataset from: ``kind`` is ``"synthetic"`` (no path),
    ``"lightgbm-rank"`` (``path`` holds rank.train/rank.test), ``"folder"`` (a collection
    folder, read with ``fold`` and ``files``), ``"lightgbm"`` (a file with its ``.query``) or
    ``"letor"`` (one file with ``qid:``)."""

    kind: str
    path: Path | None = None
    fold: int | str | None = None
    files: tuple[str, str, str] | None = None


def locate_dataset(dataset: str, data_dir: str | Path = "", *, fold=None) -> DatasetSource:
    """Resolve ``dataset`` as `load_dataset` does, without reading any data, so a batch run
    can refuse a dataset that is not there before it starts a kernel or makes a report folder.

    Raises FileNotFoundError (nothing there, or a folder that is not a collection),
    IsADirectoryError or PermissionError, each naming the path."""
    if dataset == "synthetic":
        return DatasetSource("synthetic")
    if dataset == "lightgbm-rank" and not Path(dataset).exists():
        root = Path(data_dir) if data_dir else config.SHARED_LIGHTGBM_RANK
        for name in ("rank.train", "rank.test"):
            _readable_file(_need(root / name, dataset), dataset)
        return DatasetSource("lightgbm-rank", root)
    path = resolve_dataset(dataset, data_dir)
    if path.is_dir():
        fold, files = _folder_layout(path, fold)
        folder = _fold_path(path, fold)
        train = folder / files[0]
        if not train.exists():
            shown = folder if folder.is_dir() else path
            have = sorted(p.name for p in shown.iterdir())
            raise FileNotFoundError(
                f"dataset {dataset!r}: {path} is a folder but not a LETOR collection: no {train} "
                f"(expected {_expected_files()}; {shown} holds {have[:20]})")
        _readable_file(train, dataset)
        return DatasetSource("folder", path, fold, files)
    _readable_file(path, dataset)
    if Path(str(path) + ".query").exists():
        return DatasetSource("lightgbm", path)
    return DatasetSource("letor", path)


def dataset_folds(dataset: str, data_dir: str | Path = "") -> list[int]:
    """The cross-validation folds of ``dataset``, as the numbers `load_dataset`'s ``fold``
    takes, in order: ``[1, 2, 3, 4, 5]`` for a folder of ``Fold1``..``Fold5`` (MSLR-WEB10K/30K,
    MQ2007/8, and the twin `ltrlib formats mslr` writes), each ``Fold<k>`` folder counted
    (one without its files is refused when read); ``[]`` for a dataset of one split
    (synthetic, lightgbm-rank, a file, a folder holding its own ``train.txt``, or one fold
    given as ``.../Fold3``). Reads no data."""
    src = locate_dataset(dataset, data_dir)
    if src.kind != "folder" or src.fold is None:
        return []
    numbers = (fold_number(p.name) for p in src.path.iterdir() if p.is_dir())
    return sorted(k for k in numbers if k is not None)


def _readable_file(path: Path, dataset: str) -> Path:
    if path.is_dir():
        raise IsADirectoryError(f"dataset {dataset!r}: {path} is a directory; expected a ranking file")
    try:  # opening is the one readability test that also holds for root and ACLs
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise PermissionError(f"dataset {dataset!r}: {path} cannot be read: {exc}") from None
    check_plain_text(path, head)
    return path


def _folder_files() -> dict[tuple[str, str, str], str]:
    """The catalogue's sets of train / vali / test file names, each with the layout of its
    first collection, in the catalogue's order (LETOR's names first): read from the
    catalogue on each call, so a collection added to it is known at once."""
    named: dict[tuple[str, str, str], str] = {}
    for collection in COLLECTIONS.values():
        named.setdefault(collection.files, collection.layout)
    return named


def _expected_files() -> str:
    """What a collection folder holds, for the refusal of one that holds none of it:
    LETOR's names, the others' by their layout (``Yahoo's set1.train.txt, ...``), or the
    most folds a collection has, holding them."""
    first, *others = _folder_files().items()
    said = [", ".join(first[0])] + [f"{layout.capitalize()}'s {', '.join(files)}" for files, layout in others]
    folds = max(c.folds for c in COLLECTIONS.values())
    if folds:
        said.append(f"{fold_folder(1)}..{fold_folder(folds)} holding them")
    return ", ".join(said[:-1] + [f"or {said[-1]}"]) if len(said) > 1 else said[0]


def _fold_path(path: Path, fold) -> Path:
    return path if fold is None else path / (fold_folder(fold) if isinstance(fold, int) else str(fold))


def _folder_layout(path: Path, fold):
    """``(fold, files)`` for a collection folder as the collections of the catalogue ship:
    its own ``train.txt`` (Istella-S, or one MSLR fold given directly), Yahoo's
    ``set1.*.txt``, or, with neither and ``fold`` unset, MSLR's and MQ2007's ``Fold1`` (the
    first of the cross-validation folds; give ``.../Fold3`` as the dataset for another)."""
    known = list(_folder_files())
    if fold is None and not any((path / files[0]).exists() for files in known) \
            and any(c.folds for c in COLLECTIONS.values()) and (path / fold_folder(1)).is_dir():
        fold = 1
    folder = _fold_path(path, fold)
    files = next((f for f in known if (folder / f[0]).exists()), known[0])
    return fold, files  # read_letor_folder names whatever is missing


def resolve_dataset(dataset: str, data_dir=None) -> Path:
    """The path ``dataset`` names: itself if it exists, else (a relative name) ``data_dir``
    (default ``data/raw``) / ``dataset``; FileNotFoundError saying where it looked."""
    direct = Path(dataset).expanduser()
    if direct.exists():
        return direct
    base = Path(data_dir).expanduser() if data_dir else config.RAW_DIR
    if direct.is_absolute():
        raise FileNotFoundError(f"dataset {dataset!r} not found: {direct} does not exist")
    candidate = base / dataset
    if candidate.exists():
        return candidate
    raise FileNotFoundError(
        f"dataset {dataset!r} not found: not one of {BUILTIN}, not a path, "
        f"and no {candidate} (data_dir={str(base)!r})"
    )


def _need(path: Path, dataset: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"dataset {dataset!r}: {path} not found")
    return path


def _ensure_vali(splits: Splits, fraction: float, seed: int) -> Splits:
    if splits.vali is not None:
        return splits
    if not 0 < fraction < 1:
        raise ValueError(f"vali_fraction must be in (0, 1), got {fraction}")
    train, vali = splits.train.split((1 - fraction, fraction), seed=seed,
                                     names=(splits.train.name, splits.train.name + "-vali"))
    for part in (train, vali):
        part.meta["vali_from_train"] = fraction
    return Splits(train, vali, splits.test)

