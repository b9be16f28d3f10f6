"""Exercise: attention_rollout — follow attention weights through every layer.

Read attention_rollout.md, then replace the body below. Grade with: grade attention_rollout
"""

import numpy as np


def attention_rollout(A_layers, n_prefix, H_p, W_p):
    """Attention rollout from the class token to the patches.

    ``A_layers`` is a sequence of ``L >= 1`` attention maps, first layer first, each of shape
    ``(h, T, T)`` (heads, queries, keys; a 2-D ``(T, T)`` array is one head), with
    ``T = n_prefix + H_p*W_p`` (prefix tokens first, class token at index 0, then patches in
    raster order).

    Per layer: average the heads to ``Ā``, form ``Â = 0.5*Ā + 0.5*I``, divide each row of ``Â``
    by its sum. Then ``R = Â_L @ ... @ Â_1`` (last layer on the left).

    Returns ``R[0, n_prefix:]`` reshaped to ``(H_p, W_p)`` (float).

    Raises ``ValueError`` when a layer's ``T`` is not ``n_prefix + H_p*W_p``, when
    ``n_prefix < 1``, or when there are no layers.
    """
    raise NotImplementedError
