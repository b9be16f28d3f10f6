"""Exercise: mean_attention_distance — how far, in pixels, does each head look?

Read mean_attention_distance.md, then replace the body below.
Grade with: grade mean_attention_distance
"""

import numpy as np


def mean_attention_distance(A, H_p, W_p, P, n_prefix):
    """Mean attention distance of each head, in pixels.

    ``A`` has shape ``(B, h, T, T)`` or ``(h, T, T)`` (one image): images, heads, queries,
    keys, with ``T = n_prefix + H_p*W_p`` (prefix tokens first, then patches in raster order;
    patch ``(r, c)`` is token ``n_prefix + r*W_p + c``). ``P`` is the patch side in pixels.

    Keep patch queries and patch keys only (``A[..., n_prefix:, n_prefix:]``) and renormalise
    each query's row to sum to 1 over the patch keys. The distance between patches ``(r, c)``
    and ``(r', c')`` is ``P * sqrt((r-r')**2 + (c-c')**2)`` pixels.

    Returns a float array of shape ``(h,)``: per head, the attention-weighted mean distance,
    averaged over all patch queries and all images.

    Raises ``ValueError`` when ``A``'s last two axes are not ``(T, T)`` or ``n_prefix < 0``.
    """
    raise NotImplementedError
