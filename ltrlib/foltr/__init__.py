"""Federated online learning to rank (FPDGD) under non-IID data: click models, rankers,
PDGD, the federated loop, non-IID partitions and parallel simulation."""

from ltrlib.foltr.clicks import (
    PBM, PBM_ETAS, SDBN, SDBN_PRESET_NAMES, ClickModel, LabelError, check_labels, click_model, pbm,
    sdbn, simulate_clicks, stack_click_models,
)

__all__ = [
    "ClickModel", "LabelError", "SDBN", "PBM", "PBM_ETAS", "SDBN_PRESET_NAMES", "sdbn", "pbm",
    "click_model", "check_labels", "stack_click_models", "simulate_clicks",
]
