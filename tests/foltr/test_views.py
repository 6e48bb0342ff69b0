"""Client views: label checks at construction."""

import numpy as np
import pytest

from ltrlib.foltr.views import view_of_queries


def test_labels_whose_gain_overflows_are_refused():
    # PDGD's online NDCG uses the gain 2**label - 1 of the view's labels (ideal DCG at
    # construction); an infinite gain would make every interaction's NDCG NaN.
    offsets = np.array([0, 3, 5])
    view = view_of_queries("ok", offsets, [4, 0, 2, 1, 0])
    assert view.ideal[0] > 0
    with pytest.raises(ValueError, match="client 'c7' holds label 1100, too large for NDCG"):
        view_of_queries("c7", offsets, [1100, 0, 2, 1, 0])


def test_negative_labels_are_refused():
    # PDGD's DCG once counted a negative label as 0; the shared gain kernel would give it a
    # negative gain, so a view refuses it rather than changing the number silently.
    with pytest.raises(ValueError, match="client 'neg': labels must be >= 0, got -1"):
        view_of_queries("neg", np.array([0, 3]), [2, -1, 0])
