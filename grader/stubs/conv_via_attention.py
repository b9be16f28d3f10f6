"""Exercise: conv_via_attention — attention heads that compute a convolution.

Read conv_via_attention.md, then replace the bodies below. Grade with: grade conv_via_attention
"""

import numpy as np


def conv_via_attention(X, W_conv, alpha):
    """Multi-head attention with one head per kernel offset, whose output tends to a convolution.

    1-D: ``X`` is ``(n, C)``, ``W_conv`` is ``(C_out, C, k)``; returns ``(n, C_out)``.
    2-D: ``X`` is ``(H, W, C)`` (channels last), ``W_conv`` is ``(C_out, C, k, k)`` (PyTorch
    layout); returns ``(H, W, C_out)``. Return float64.

    ``k`` is odd and ``a = k // 2``. There is one head per offset ``delta = (u - a, v - a)``,
    ``0 <= u, v < k`` (in 1-D just ``u - a``). For query pixel ``q = (r, c)`` and key pixel
    ``j = (r', c')`` that head's score is

        -alpha * (d_H(r', r + delta_r)**2 + d_W(c', c + delta_c)**2)

    where ``d_n(x, y) = min((x - y) mod n, (y - x) mod n)`` is the circular distance. Softmax
    over all ``H*W`` keys (it must stay finite for ``alpha`` up to 1e4). The head's output at
    ``q`` is ``sum_j weight[q, j] * X[j] @ W_delta`` with ``W_delta[c', o] = W_conv[o, c', u, v]``
    (a ``(C, C_out)`` matrix); the layer's output is the **sum** over the heads.

    As alpha grows the output tends to the circular cross-correlation
    ``Y[r, c, o] = sum_{c', u, v} W_conv[o, c', u, v] * X[(r+u-a) % H, (c+v-a) % W, c']``.

    Raises ``ValueError`` when the shapes do not fit together (``X`` 2-D needs a 3-D
    ``W_conv``, ``X`` 3-D a 4-D one; ``W_conv.shape[1]`` must equal ``C``; a 2-D kernel must be
    square), when ``k`` is even, or when ``alpha`` is negative or not finite.
    """
    raise NotImplementedError


def rho(alpha):
    """The 1-D off-target mass bound ``2 * sum_{z>=1} exp(-alpha * z**2)`` as a float.

    Accurate to 1e-12 relative for every ``alpha > 0`` (small alpha needs many terms).
    Raises ``ValueError`` for ``alpha <= 0``, where the sum diverges.
    """
    raise NotImplementedError
