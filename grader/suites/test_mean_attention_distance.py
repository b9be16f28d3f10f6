"""Hidden suite: mean_attention_distance."""

import numpy as np

from grader.suite import cached_input, graded, mistake, probes

F = "mean_attention_distance"


@cached_input
def _maps(seed, shape, sharp=1.5):
    rng = np.random.default_rng(seed)
    logits = sharp * rng.standard_normal(shape)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mad(A, H_p, W_p, P, n_prefix, *, renorm=True, scale=True, metric="euclid",
         width=None):
    A = np.asarray(A, dtype=np.float64)
    A = A[None] if A.ndim == 3 else A
    patches = A[..., n_prefix:, n_prefix:]
    if renorm:
        patches = patches / patches.sum(axis=-1, keepdims=True)
    idx = np.arange(H_p * W_p)
    width = W_p if width is None else width
    r, c = idx // width, idx % width
    dr, dc = r[:, None] - r[None, :], c[:, None] - c[None, :]
    d = np.sqrt(dr**2 + dc**2) if metric == "euclid" else np.abs(dr) + np.abs(dc)
    d = P * d if scale else d
    return (patches * d).sum(axis=-1).mean(axis=(0, 2))


@mistake(F, "no_renormalisation",
         "Your output matches distances computed without renormalising the patch rows. "
         "After dropping the prefix keys a query's weights sum to less than 1: divide each "
         "row by its sum over the patch keys first.")
def _no_renorm(A, H_p, W_p, P, n_prefix):
    return _mad(A, H_p, W_p, P, n_prefix, renorm=False)


@mistake(F, "distance_in_patches",
         "Your output matches distances measured in patches, not pixels. Multiply the grid "
         "distance by the patch side P.")
def _patches(A, H_p, W_p, P, n_prefix):
    return _mad(A, H_p, W_p, P, n_prefix, scale=False)


@mistake(F, "manhattan_distance",
         "Your output matches the Manhattan distance |dr| + |dc|. The statistic uses the "
         "Euclidean distance P * sqrt(dr**2 + dc**2).")
def _manhattan(A, H_p, W_p, P, n_prefix):
    return _mad(A, H_p, W_p, P, n_prefix, metric="manhattan")


@mistake(F, "grid_width_from_H_p",
         "Your output matches grid coordinates computed with H_p as the row length. In raster "
         "order each row holds W_p patches: patch i sits at row i // W_p and column i % W_p.")
def _wrong_width(A, H_p, W_p, P, n_prefix):
    return _mad(A, H_p, W_p, P, n_prefix, width=H_p)


def _probe_maps(seed, shape):
    """Small seeded maps for the probes, with extra weight on the first (prefix) key."""
    rng = np.random.default_rng(seed)
    logits = 1.5 * rng.standard_normal(shape)
    logits[..., 0] += 1.0
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# A matched mistake must match again on these (one image and a batch): three heads, two
# prefix tokens that hold weight, non-square grids (2x3 and 3x2), and P = 7, not 1 or 2.
PROBES = probes(F, (_probe_maps(80, (3, 8, 8)), 2, 3, 7.0, 2),
                (_probe_maps(81, (2, 3, 8, 8)), 3, 2, 7.0, 2))


@graded(1, "Start with one image: for each patch query, sum weight times distance over the "
           "patch keys.", visibility="public",
        hint_for=("values", "shape", "raised"))
def test_one_image(check):
    """One image (h, T, T): 2 heads on a 2x4 grid, P = 16, one class token."""
    check.call(F, _maps(1, (2, 9, 9)), 2, 4, 16, 1)


@graded(1, "A batch (B, h, T, T) is averaged over images as well as over patch queries.",
        hint_for=("values", "shape"))
def test_batch_of_images(check):
    """A batch of 4 images, 3 heads, 3x5 grid, P = 8."""
    check.call(F, _maps(2, (4, 3, 16, 16)), 3, 5, 8, 1)


@graded(1, "Drop the prefix keys, then make each query's weights over the patch keys sum to "
           "1 again.",
        hint_for=("values",))
def test_prefix_weight_is_renormalised(check):
    """Heads that put a lot of weight on the class token: the renormalisation shows."""
    A = _maps(3, (2, 3, 9, 9)).copy()  # cached inputs are read-only
    A[..., 0] += 2.0
    A /= A.sum(axis=-1, keepdims=True)
    check.call(F, A, 4, 2, 16, 1)


@graded(1, "Patch i sits at row i // W_p and column i % W_p; on a non-square grid H_p and "
           "W_p are not interchangeable.",
        hint_for=("values",))
def test_non_square_grid(check):
    """A 2x5 grid with P = 14."""
    check.call(F, _maps(4, (2, 2, 11, 11)), 2, 5, 14, 1)


@graded(1, "n_prefix prefix tokens come first; with n_prefix=0 every token is a patch.",
        hint_for=("values", "shape", "raised"))
def test_prefix_counts(check):
    """n_prefix = 0 and n_prefix = 5 (class token and four registers)."""
    check.call(F, _maps(5, (1, 2, 8, 8)), 2, 4, 16, 0)
    check.call(F, _maps(6, (1, 2, 13, 13)), 4, 2, 16, 5)


@graded(1, "A head that attends only to its own patch has distance 0; one that attends "
           "uniformly has the grid's mean pairwise distance.",
        hint_for=("values",))
def test_local_and_uniform_heads(check):
    """Head 0 attends to itself only, head 1 uniformly over the patches of a 3x5 grid."""
    T, N = 16, 15
    A = np.zeros((2, T, T))
    A[0, 1:, 1:] = np.eye(N)
    A[0, 0, 0] = 1.0
    A[1] = 1.0 / T
    check.call(F, A, 3, 5, 16, 1)


@graded(1, "Check that A's last two axes are (T, T) with T = n_prefix + H_p*W_p.",
        hint_for=("not_raised", "wrong_exception"))
def test_invalid_arguments_raise(check):
    """A T that does not fit the grid and a negative n_prefix raise ValueError; the same maps
    on the grid they fit give the right distances."""
    A = _maps(7, (2, 9, 9))
    check.raises("ValueError", F, A, 3, 4, 16, 1)
    check.raises("ValueError", F, A, 2, 4, 16, -1)
    check.call(F, A, 2, 4, 16, 1)


@graded(1, "ViT-B/16 at 224 pixels has 197 tokens: build the (N_p, N_p) distance matrix once "
           "and use one weighted sum, not loops over queries.", timeout=20,
        hint_for=("timeout",))
def test_vit_b16_sized_input(check):
    """8 images, 12 heads, a 14x14 grid (T = 197), P = 16; then a 12x16 grid (T = 193)."""
    check.call(F, _maps(8, (8, 12, 197, 197)), 14, 14, 16, 1, timed=True)
    check.call(F, _maps(9, (1, 2, 193, 193)), 12, 16, 16, 1)
