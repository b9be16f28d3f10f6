"""Exercise: grid_local_mask — put locality back into a ViT with an attention mask.

Read grid_local_mask.md, then replace the body below. Grade with: grade grid_local_mask
"""

import numpy as np


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    """Boolean attention mask that lets each patch see only its grid neighbours.

    Tokens: ``n_prefix`` prefix tokens (class token first), then the ``H_p*W_p`` patches in
    raster order; patch ``(r, c)`` is token ``n_prefix + r*W_p + c``; ``T = n_prefix + H_p*W_p``.

    Returns a ``bool`` array of shape ``(T, T)``: ``mask[i, j]`` is True when query ``i`` may
    attend to key ``j`` (the convention of ``F.scaled_dot_product_attention``).
    Patch ``(r, c)`` may attend patch ``(r', c')`` iff ``max(|r-r'|, |c-c'|) <= radius``
    (no wrap-around). Every row and every column of a prefix token is True.

    Raises ``ValueError`` for ``radius < 0``, ``H_p < 1``, ``W_p < 1`` or ``n_prefix < 0``.
    """
    raise NotImplementedError
