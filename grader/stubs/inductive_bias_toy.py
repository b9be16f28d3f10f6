"""Exercise: inductive_bias_toy — what a true assumption is worth, in a toy with exact numbers.

Read inductive_bias_toy.md, then replace the bodies below. Grade with: grade inductive_bias_toy
"""

import numpy as np


def toy_targets(X, beta, sigma, noise):
    """The toy's targets: a local slope times a slowly drifting gain, plus noise.

    ``X`` and ``noise`` are float arrays of shape ``(N, n)`` (rows of ``n`` numbers). Indexing
    along a row is circular (position ``-1`` is ``n - 1``, position ``n`` is ``0``). With the
    gain ``g_t = cos(2*pi*t/n)``:

        Y[:, t] = (1 + beta*g_t) * (X[:, t-1] - X[:, t+1]) + sigma * noise[:, t]

    Returns float64 ``(N, n)``. Raises ``ValueError`` unless ``X`` is a non-empty 2-D array and
    ``noise`` has the same shape.
    """
    raise NotImplementedError


def fit_shared_kernel(X, Y, k=3):
    """Least-squares weights ``w`` of shape ``(k,)`` for one kernel shared by every position.

    The model is ``Yhat[:, t] = sum_m w[m] * X[:, (t + m - k//2) mod n]`` (for ``k = 3``:
    ``w[0]*x_{t-1} + w[1]*x_t + w[2]*x_{t+1}``), fitted on all ``N*n`` equations (every row,
    every position) at once. ``X`` and ``Y`` are ``(N, n)``. Returns float64 ``(k,)``.

    Raises ``ValueError`` when ``X`` is not a non-empty 2-D array, ``Y.shape != X.shape``, or
    ``k`` is not in ``1..n``.
    """
    raise NotImplementedError


def fit_full_map(X, Y):
    """Least-squares ``W`` of shape ``(n, n)`` for the unrestricted linear map ``Yhat = X @ W``.

    ``X`` and ``Y`` are ``(N, n)``. When ``N < n`` there are many exact fits: return the
    minimum-norm one (what ``np.linalg.lstsq`` returns). Returns float64 ``(n, n)``.

    Raises ``ValueError`` when ``X`` is not a non-empty 2-D array or ``Y.shape != X.shape``.
    """
    raise NotImplementedError


def predicted_test_errors(N, n=32, k=3, sigma=0.5, beta=0.3):
    """Predicted test mean squared error per output, ``(conv, full)``, for ``N`` training rows.

        conv = sigma**2 + beta**2 + (sigma**2 + beta**2) * k / (N * n)
        full = sigma**2 + sigma**2 * n / (N - n - 1)      (math.inf when N <= n + 1)

    Returns a tuple of two Python floats. Raises ``ValueError`` when ``N``, ``n`` or ``k`` is
    below 1, or ``sigma < 0``.
    """
    raise NotImplementedError


def crossover_rows(n=32, sigma=0.5, beta=0.3):
    """The number of training rows where the two predictions cross: ``n + 1 + sigma**2*n/beta**2``.

    Returns a float (121.9 for the defaults); ``math.inf`` when ``beta == 0``. Raises
    ``ValueError`` when ``n < 1`` or ``sigma < 0``.
    """
    raise NotImplementedError
