"""Reference solution: the shape bias of a model on cue-conflict trials (Geirhos et al. 2019)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def shape_bias(predictions: Sequence, shape_labels: Sequence, texture_labels: Sequence) -> float:
    """Shape decisions / (shape + texture decisions) over the cue-conflict trials; nan if none."""
    pred = np.asarray(predictions)
    shape = np.asarray(shape_labels)
    texture = np.asarray(texture_labels)
    if not len(pred) == len(shape) == len(texture):
        raise ValueError(f"predictions, shape_labels and texture_labels must have equal lengths, "
                         f"got {len(pred)}, {len(shape)} and {len(texture)}")
    conflict = shape != texture                      # trials without a cue conflict do not count
    n_shape = int(np.count_nonzero(conflict & (pred == shape)))
    n_texture = int(np.count_nonzero(conflict & (pred == texture)))
    decided = n_shape + n_texture                    # other answers are neither decision
    if decided == 0:
        return math.nan
    return n_shape / decided
