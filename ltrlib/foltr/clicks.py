"""Click models for simulated users: SDBN (cascade) and PBM (position-based).

Public API (stable; other modules, e.g. the click-bias experiments, rely on it):

``ClickModel``
    Frozen dataclass ``(name, kind, click_prob, stop_prob, eta)``. ``kind`` is ``SDBN``
    (cascade) or ``PBM``; ``click_prob[rel]`` and ``stop_prob[rel]`` are float64 arrays
    indexed by the integer relevance label, so ``n_levels = len(click_prob)``; ``eta`` is the
    PBM position-bias exponent (0 for SDBN). ``model.simulate(labels, rng)`` takes the labels
    *in shown order* (rank 1 first) and a ``numpy.random.Generator`` and returns a bool
    array of clicks of the same length. ``model.click_probabilities(labels)`` gives the
    exact marginal click probability of every rank (used by the tests; handy for bias
    analyses). ``model.check_labels(labels)`` returns the labels as int64 or raises.

``sdbn(preset, n_levels=5)``
    The SDBN instantiations of Table 4 of Wang & Zuccon (SIGIR 2022): ``perfect``,
    ``navigational``, ``informational``, for 5-level labels (0-4), binary labels (the
    intent-change values of Table 4, in brackets there) and 3-level labels (the values of
    Oosterhuis & de Rijke's PDGD experiments on 3-level collections).

``pbm(eta, n_levels=5, preset="perfect")``
    P(click at rank r) = c_preset[rel] * (1/r)^eta, no stopping; the paper uses the
    ``perfect`` click probabilities and eta in {0, 0.5, 1, 1.5, 2} (``PBM_ETAS``).

``click_model(spec, n_levels=5)``
    Build from a short name: ``"perfect"``, ``"navigational"``, ``"informational"``,
    ``"pbm1.5"`` (PBM with eta 1.5).

``stack_click_models(models)``
    Numba-friendly representation of several models sharing one label scale:
    ``(kinds int64[m], click float64[m, L], stop float64[m, L], eta float64[m])``. The
    compiled PDGD loop picks a row per interaction (Type 3 IID draws one at random).

``simulate_clicks(kind, click_prob, stop_prob, eta, labels, rng, out)``
    The compiled kernel (numba ``njit``) behind ``simulate``; callable from other numba code
    with a ``numpy.random.Generator``. It does not validate labels: callers validate once.

Random draws: SDBN draws one uniform per examined rank plus one after each click (for the
stop; nothing after a stop), PBM one uniform per rank, from the given Generator, so the same seed gives the same clicks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

SDBN = 0
PBM = 1
_KIND_NAMES = {SDBN: "sdbn", PBM: "pbm"}

PBM_ETAS = (0.0, 0.5, 1.0, 1.5, 2.0)
SDBN_PRESET_NAMES = ("perfect", "navigational", "informational")

# (click probabilities, stop probabilities) per number of label levels.
_SDBN_TABLE: dict[int, dict[str, tuple[tuple[float, ...], tuple[float, ...]]]] = {
    # Table 4 of the paper, graded 0-4 (MSLR-WEB10k, Yahoo, Istella-S).
    5: {
        "perfect": ((0.0, 0.2, 0.4, 0.8, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
        "navigational": ((0.05, 0.3, 0.5, 0.7, 0.95), (0.2, 0.3, 0.5, 0.7, 0.9)),
        "informational": ((0.4, 0.6, 0.7, 0.8, 0.9), (0.1, 0.2, 0.3, 0.4, 0.5)),
    },
    # Table 4, values in brackets (binary intent-change labels).
    2: {
        "perfect": ((0.0, 1.0), (0.0, 0.0)),
        "navigational": ((0.05, 0.95), (0.2, 0.9)),
        "informational": ((0.3, 0.7), (0.1, 0.5)),
    },
    # Table 4 has no 3-level column; these are the values used for 3-level collections
    # (MQ2007/2008) in the PDGD/FPDGD line of work, which the paper builds on.
    3: {
        "perfect": ((0.0, 0.5, 1.0), (0.0, 0.0, 0.0)),
        "navigational": ((0.05, 0.5, 0.95), (0.2, 0.5, 0.9)),
        "informational": ((0.4, 0.7, 0.9), (0.1, 0.3, 0.5)),
    },
}


class LabelError(ValueError):
    """Labels a click model cannot use (non-integer or outside 0..n_levels-1)."""


@dataclass(frozen=True, eq=False)
class ClickModel:
    name: str
    kind: int
    click_prob: np.ndarray
    stop_prob: np.ndarray
    eta: float = 0.0

    def __post_init__(self):
        if self.kind not in _KIND_NAMES:
            raise ValueError(f"ClickModel {self.name!r}: kind must be SDBN (0) or PBM (1), got {self.kind!r}")
        c = np.ascontiguousarray(self.click_prob, dtype=np.float64)
        s = np.ascontiguousarray(self.stop_prob, dtype=np.float64)
        if c.ndim != 1 or c.shape != s.shape or len(c) < 2:
            raise ValueError(f"ClickModel {self.name!r}: click_prob and stop_prob must be 1-D of the same "
                             f"length >= 2, got shapes {c.shape} and {s.shape}")
        for what, a in (("click_prob", c), ("stop_prob", s)):
            if not np.all((a >= 0) & (a <= 1)):
                raise ValueError(f"ClickModel {self.name!r}: {what} must lie in [0, 1], got {a.tolist()}")
        if not np.isfinite(self.eta) or self.eta < 0:
            raise ValueError(f"ClickModel {self.name!r}: eta must be finite and >= 0, got {self.eta!r}")
        # Read-only so a model shared by many clients cannot be changed through one of them.
        c.setflags(write=False)
        s.setflags(write=False)
        object.__setattr__(self, "click_prob", c)
        object.__setattr__(self, "stop_prob", s)
        object.__setattr__(self, "eta", float(self.eta))

    @property
    def n_levels(self) -> int:
        return len(self.click_prob)

    @property
    def kind_name(self) -> str:
        return _KIND_NAMES[self.kind]

    def check_labels(self, labels) -> np.ndarray:
        return check_labels(labels, self.n_levels, where=f"click model {self.name!r}")

    def simulate(self, labels, rng: np.random.Generator) -> np.ndarray:
        """Clicks on a shown list; ``labels[0]`` is the label of the top-ranked document."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        lab = self.check_labels(labels)
        out = np.zeros(len(lab), dtype=np.bool_)
        simulate_clicks(self.kind, self.click_prob, self.stop_prob, self.eta, lab, rng, out)
        return out

    def click_probabilities(self, labels) -> np.ndarray:
        """Exact marginal P(click at rank r) for the shown list (closed form)."""
        lab = self.check_labels(labels)
        c = self.click_prob[lab]
        if self.kind == PBM:
            return c * (1.0 / np.arange(1, len(lab) + 1)) ** self.eta
        # Cascade: rank r is examined unless an earlier click was followed by a stop.
        cont = 1.0 - c * self.stop_prob[lab]
        examined = np.concatenate(([1.0], np.cumprod(cont)[:-1]))
        return examined * c

    def __repr__(self):
        extra = f", eta={self.eta:g}" if self.kind == PBM else f", stop={self.stop_prob.tolist()}"
        return f"ClickModel({self.name!r}, {self.kind_name}, click={self.click_prob.tolist()}{extra})"


def check_labels(labels, n_levels: int, where: str = "labels") -> np.ndarray:
    """Labels as int64 in 0..n_levels-1, or a `LabelError` naming the first bad value."""
    a = np.asarray(labels)
    if a.ndim != 1:
        raise LabelError(f"{where}: labels must be 1-D, got shape {a.shape}")
    if a.dtype.kind in "iu":
        lab = a.astype(np.int64, copy=False)
    elif a.dtype.kind in "fb":
        if a.dtype.kind == "f":
            # NaN/inf first: casting them to int is undefined (and warns).
            bad = ~np.isfinite(a)
            bad[~bad] = np.floor(a[~bad]) != a[~bad]
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise LabelError(f"{where}: labels must be integers, got {a[i].item()} at position {i}")
        lab = a.astype(np.int64)
    else:
        raise LabelError(f"{where}: labels must be numeric, got dtype {a.dtype}")
    out = (lab < 0) | (lab >= n_levels)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise LabelError(f"{where}: label {lab[i]} at position {i} is outside 0..{n_levels - 1} "
                         f"(the model has {n_levels} levels; pick a preset with more levels or "
                         "clip the labels)")
    return lab


def sdbn(preset: str, n_levels: int = 5) -> ClickModel:
    """SDBN (cascade) preset of Table 4: perfect, navigational or informational."""
    if n_levels not in _SDBN_TABLE:
        raise ValueError(f"sdbn: n_levels must be one of {sorted(_SDBN_TABLE)}, got {n_levels!r}")
    if preset not in _SDBN_TABLE[n_levels]:
        raise ValueError(f"sdbn: preset must be one of {SDBN_PRESET_NAMES}, got {preset!r}")
    c, s = _SDBN_TABLE[n_levels][preset]
    return ClickModel(preset, SDBN, np.array(c), np.array(s), 0.0)


def pbm(eta: float, n_levels: int = 5, preset: str = "perfect") -> ClickModel:
    """Position-based model: c_preset[rel] * (1/rank)^eta."""
    base = sdbn(preset, n_levels)
    name = f"pbm{float(eta):g}" if preset == "perfect" else f"pbm{float(eta):g}_{preset}"
    return ClickModel(name, PBM, base.click_prob, np.zeros(n_levels), float(eta))


def click_model(spec: str, n_levels: int = 5) -> ClickModel:
    """``perfect`` / ``navigational`` / ``informational`` (SDBN) or ``pbm<eta>``."""
    if not isinstance(spec, str):
        raise TypeError(f"click_model: spec must be a string, got {spec!r}")
    s = spec.strip().lower()
    if s in SDBN_PRESET_NAMES:
        return sdbn(s, n_levels)
    if s.startswith("pbm"):
        try:
            eta = float(s[3:])
        except ValueError:
            raise ValueError(f"click_model: {spec!r} is not pbm<eta>, e.g. pbm1.5") from None
        return pbm(eta, n_levels)
    raise ValueError(f"click_model: unknown spec {spec!r}; use one of {SDBN_PRESET_NAMES} or pbm<eta>")


def stack_click_models(models) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(kinds, click[m, L], stop[m, L], eta) for numba; all models must share L."""
    models = list(models)
    if not models:
        raise ValueError("stack_click_models: need at least one click model")
    levels = {m.n_levels for m in models}
    if len(levels) != 1:
        raise ValueError(f"stack_click_models: models use different label scales {sorted(levels)}: "
                         + ", ".join(f"{m.name}={m.n_levels}" for m in models))
    kinds = np.array([m.kind for m in models], dtype=np.int64)
    click = np.stack([m.click_prob for m in models]).astype(np.float64)
    stop = np.stack([m.stop_prob for m in models]).astype(np.float64)
    eta = np.array([m.eta for m in models], dtype=np.float64)
    return kinds, click, stop, eta


@numba.njit(cache=True, nogil=True)
def simulate_clicks(kind, click_prob, stop_prob, eta, labels, rng, out):
    """Fill ``out[:len(labels)]`` with clicks; returns the number of clicks."""
    n = len(labels)
    n_clicks = 0
    for r in range(n):
        out[r] = False
    if kind == 0:
        for r in range(n):
            rel = labels[r]
            if rng.random() < click_prob[rel]:
                out[r] = True
                n_clicks += 1
                # The user leaves after this click with probability stop[rel].
                if rng.random() < stop_prob[rel]:
                    break
    else:
        for r in range(n):
            p = click_prob[labels[r]] * (1.0 / (r + 1.0)) ** eta
            if rng.random() < p:
                out[r] = True
                n_clicks += 1
    return n_clicks
