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
