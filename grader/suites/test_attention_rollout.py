"""Hidden suite: attention_rollout."""

import numpy as np

from grader.suite import cached_input, graded, mistake, probes, source_rule

F = "attention_rollout"


def _attention(rng, h, T, sharp=1.0):
    """Random row-stochastic attention maps ``(h, T, T)``."""
    logits = sharp * rng.standard_normal((h, T, T))
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@cached_input
def _layers(seed, L, h, T, two_d=False):
    rng = np.random.default_rng(seed)
    layers = [_attention(rng, h, T, sharp=2.0) for _ in range(L)]
    return [a[0] for a in layers] if two_d else layers


def _thresholded(seed, L, h, T):
    """Maps whose smallest weights were zeroed, as a visualisation tool does: rows sum < 1."""
    out = []
    for a in _layers(seed, L, h, T):
        out.append(np.where(a >= np.quantile(a, 0.6, axis=-1, keepdims=True), a, 0.0))
    return out


def _rollout(A_layers, n_prefix, H_p, W_p, *, order="last_left", residual=True,
             renorm=True, heads="mean", row=True):
    T = n_prefix + H_p * W_p
    R = np.eye(T)
    for A in A_layers:
        A = np.asarray(A, dtype=np.float64)
        A = A[None] if A.ndim == 2 else A
        A_bar = A.mean(axis=0) if heads == "mean" else A.max(axis=0)
        A_hat = 0.5 * A_bar + 0.5 * np.eye(T) if residual else A_bar
        if renorm:
            A_hat = A_hat / A_hat.sum(axis=-1, keepdims=True)
        R = A_hat @ R if order == "last_left" else R @ A_hat
    vec = R[0, n_prefix:] if row else R[n_prefix:, 0]
    return vec.reshape(H_p, W_p)


@mistake(F, "first_layer_on_left",
         "Your output matches a rollout multiplied first layer on the left (Â_1 @ ... @ Â_L). "
         "Tokens are rows: layer l mixes them as X_l = Â_l X_(l-1), so the last layer goes on "
         "the left: R = Â_L @ ... @ Â_1.")
def _wrong_order(A_layers, n_prefix, H_p, W_p):
    return _rollout(A_layers, n_prefix, H_p, W_p, order="first_left")


@mistake(F, "no_residual",
         "Your output matches a rollout without the residual term. Each layer computes "
         "X + ĀX, so the rollout uses Â = 0.5*Ā + 0.5*I: half the information goes straight "
         "up the residual path.")
def _no_residual(A_layers, n_prefix, H_p, W_p):
    return _rollout(A_layers, n_prefix, H_p, W_p, residual=False)


@mistake(F, "no_row_renormalisation",
         "Your output matches a rollout that skips the row renormalisation. It only matters "
         "for maps whose rows do not sum to 1 (here some weights were zeroed), and then "
         "each row of Â must be divided by its sum.")
def _no_renorm(A_layers, n_prefix, H_p, W_p):
    return _rollout(A_layers, n_prefix, H_p, W_p, renorm=False)


@mistake(F, "max_over_heads",
         "Your output matches a rollout that takes the maximum over heads. The rollout "
         "averages the heads of each layer first.")
def _max_heads(A_layers, n_prefix, H_p, W_p):
    return _rollout(A_layers, n_prefix, H_p, W_p, heads="max")


@mistake(F, "column_not_row",
         "Your output matches the class token's column R[n_prefix:, 0] (how much each patch "
         "draws from the class token). The rollout map is the class token's row "
         "R[0, n_prefix:]: what the class token draws from each patch.")
def _column(A_layers, n_prefix, H_p, W_p):
    return _rollout(A_layers, n_prefix, H_p, W_p, row=False)


def _probe_layers(seed, L, h, T, zeroed=0.0):
    """Small seeded maps (h, T, T) for the probes; ``zeroed``: the share of each row's smallest
    weights set to 0 (rows then sum to less than 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(L):
        a = _attention(rng, h, T, sharp=2.0)
        out.append(np.where(a >= np.quantile(a, zeroed, axis=-1, keepdims=True), a, 0.0))
    return out


# A matched mistake must match again on these: three layers of three heads, two prefix tokens
# on a non-square 2x3 grid, rows that do not sum to 1 (the renormalisation shows), and rows
# that do.
PROBES = probes(F, (_probe_layers(90, 3, 3, 8, zeroed=0.5), 2, 2, 3),
                (_probe_layers(91, 2, 2, 13), 1, 4, 3))


@graded(1, "With one layer and one head there is nothing to multiply: form Â and read the "
           "class token's row.", visibility="public",
        hint_for=("values", "shape", "raised"))
def test_one_layer_one_head(check):
    """One layer given as a 2-D (T, T) map (one head), 2x2 grid, one class token."""
    check.call(F, _layers(1, 1, 1, 5, two_d=True), 1, 2, 2)


@graded(1, "Each layer is (h, T, T): average the heads before adding the identity.",
        visibility="public",
        hint_for=("values", "shape"))
def test_three_layers_four_heads(check):
    """Three layers of four heads on a 3x3 grid."""
    check.call(F, _layers(2, 3, 4, 10), 1, 3, 3)


@graded(1, "The order of the product matters: the first layer acts first, so it is the "
           "rightmost factor.",
        hint_for=("values",))
def test_order_of_layers(check):
    """Six layers with sharp, very different maps: the product order shows."""
    check.call(F, _layers(3, 6, 2, 10), 1, 3, 3)


@graded(1, "Patches come after all n_prefix prefix tokens; the class token is index 0.",
        hint_for=("values", "shape"))
def test_several_prefix_tokens(check):
    """A class token and two registers (n_prefix=3) on a 2x4 grid."""
    check.call(F, _layers(4, 4, 3, 11), 3, 2, 4)


@graded(1, "Reshape in raster order: W_p columns per row.",
        hint_for=("values", "shape"))
def test_non_square_grid(check):
    """A 3x5 grid (non-square)."""
    check.call(F, _layers(5, 2, 2, 16), 1, 3, 5)


@graded(1, "Divide each row of 0.5*Ā + 0.5*I by its own sum: rows need not sum to 1 after "
           "weights were zeroed.",
        hint_for=("values",))
def test_rows_that_do_not_sum_to_one(check):
    """Maps whose smallest 60% of weights were zeroed (rows sum to less than 1)."""
    check.call(F, _thresholded(6, 3, 2, 10), 1, 3, 3)


@graded(1, "If every map is the identity, information never leaves its token.",
        hint_for=("values", "nan"))
def test_identity_attention(check):
    """Identity maps: the class token draws nothing from the patches (all zeros); an identity
    layer between two real ones changes nothing."""
    eye = np.eye(7)[None].repeat(2, axis=0)
    check.call(F, [eye for _ in range(3)], 1, 2, 3)
    real = _layers(31, 2, 2, 7)
    check.call(F, [real[0], eye, real[1]], 1, 2, 3)


@graded(1, "Check the layer shapes against T = n_prefix + H_p*W_p, the class token, and the "
           "empty case before computing.",
        hint_for=("not_raised", "wrong_exception"))
def test_invalid_arguments_raise(check):
    """A wrong T, n_prefix=0 and an empty list raise ValueError; the same layers on the grid
    they fit give the right rollout."""
    layers = _layers(7, 2, 2, 10)
    check.raises("ValueError", F, layers, 1, 3, 4)
    check.raises("ValueError", F, layers, 0, 3, 3)
    check.raises("ValueError", F, [], 1, 3, 3)
    check.call(F, layers, 1, 3, 3)


@graded(1, "ViT-B/16 at 224 pixels: 12 layers of 12 heads over 197 tokens. Use matrix "
           "products, not Python loops over tokens.", timeout=20,
        hint_for=("timeout",))
def test_vit_b16_sized_input(check):
    """12 layers of 12 heads, T = 197 (a 14x14 grid and a class token)."""
    check.call(F, _layers(8, 12, 12, 197), 1, 14, 14, timed=True)


@source_rule("The rollout is a few lines of numpy: average the heads, add the identity, "
             "renormalise the rows and multiply, last layer on the left.",
             statement="attention_rollout must compute the rollout itself: import only numpy "
                       "and math, and no library's rollout.",
             allow_imports=("numpy", "math", "__future__", "typing", "collections"),
             forbid_imported=("*rollout*",), functions=("attention_rollout",))
def test_rule_no_library_rollout():
    """Your source imports only numpy and math: no library rollout."""
