"""Exercise: shape_bias — does a model decide by shape or by texture?

Read shape_bias.md, then replace the body below. Grade with: grade shape_bias
"""

import numpy as np


def shape_bias(predictions, shape_labels, texture_labels):
    """The shape bias of a model on cue-conflict trials, a number in [0, 1] (or nan).

    ``predictions``, ``shape_labels`` and ``texture_labels`` are equal-length 1-D sequences
    (lists or numpy arrays) of class labels, all ``str`` or all ``int``. Trial ``i`` shows an
    image with the shape of ``shape_labels[i]`` and the texture of ``texture_labels[i]``; the
    model answered ``predictions[i]``. Labels are compared with ``==``.

    - Trials with ``shape_labels[i] == texture_labels[i]`` have no cue conflict: drop them.
    - On the remaining trials, a *shape decision* is ``predictions[i] == shape_labels[i]`` and a
      *texture decision* is ``predictions[i] == texture_labels[i]``; any other answer is
      neither and does not count.
    - Return ``shape decisions / (shape decisions + texture decisions)`` as a Python ``float``;
      ``float('nan')`` when that denominator is 0 (no trial counts, empty input included).

    Raises ``ValueError`` when the three sequences do not have the same length.
    """
    raise NotImplementedError
