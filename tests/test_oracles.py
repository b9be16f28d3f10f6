"""Every reference solution against an oracle it did not write itself.

The oracles are the hidden suites' own re-implementations (attention_rollout's ``_rollout``,
mean_attention_distance's ``_mad``, positional_attention's ``_train_variant`` and
``_patch_shares``, compute_frontier's ``_frontier`` and ``_match``, conv_via_attention's
``_xcorr`` and ``_with_distance``, grid_local_mask's ``_gaps``, inductive_bias_toy's ``_gain``
and ``_slope``, patch_vit's ``_param_formula``, shape_bias's ``_counts``, shift_equivariance's
stride-1 ``_not_divided``), the trusted recipes (a patch embedding moved by a permutation, the
``patch_transformer`` trunk), least-squares normal equations, and central finite differences
of the loss for positional_attention's hand-written gradient.

Each oracle is one function ``_check_*(impl)`` that raises ``AssertionError`` when ``impl``
disagrees with it. The same function runs on the reference (it must pass) and on deliberately
broken copies (outputs scaled by 1.001, a transposed permutation, an edited gradient, ...: it
must fail), so every oracle is shown able to fail. The suites' parameterised helpers are also
run as the wrong variants they declare, which must differ from the reference where they
should. Inputs are seeded; the shared reference modules are never changed (a broken copy is
a wrapper or an edited copy of the source).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from grader import catalog
from grader.engine.plugin import load_reference
from grader.suite import Recipe, built


def _suite(slug):
    return importlib.import_module(f"grader.suites.test_{slug}")


def _scaled(fn, factor=1.001):
    """``fn`` with every output (or each member of a returned tuple) multiplied by ``factor``."""

    def broken(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, tuple):
            return tuple(factor * np.asarray(o) for o in out)
        return factor * np.asarray(out)

    return broken


def _edited_reference(slug, old, new):
    """A fresh module from the reference's source with ``old`` (present once) replaced."""
    path = catalog.get(slug).solution
    source = path.read_text()
    if source.count(old) != 1:
        raise ValueError(f"{old!r} occurs {source.count(old)} times in {path}, not once")
    module = types.ModuleType(f"_edited_{slug}")
    module.__file__ = str(path)
    exec(compile(source.replace(old, new), str(path), "exec"), module.__dict__)
    return module


def _row_scaled(rng, shape):
    """Positive maps whose rows sum to anything (not 1): random entries times a row factor."""
    return rng.random(shape) * rng.uniform(0.2, 3.0, shape[:-1] + (1,))


def _softmax_maps(rng, shape):
    e = np.exp(2.0 * rng.standard_normal(shape))
    return e / e.sum(axis=-1, keepdims=True)


# -- attention_rollout against the suite's _rollout -------------------------------------------

# (layers, heads, n_prefix, H_p, W_p, maps)
ROLLOUT_CASES = [
    (1, 1, 1, 2, 2, "2-D"),
    (3, 4, 1, 3, 5, "rows not summing to 1"),
    (6, 2, 2, 4, 2, "softmax"),
    (2, 3, 5, 3, 5, "thresholded"),
    (4, 1, 2, 1, 6, "rows not summing to 1"),
    (5, 2, 5, 4, 2, "rows not summing to 1"),
    (2, 2, 1, 3, 3, "thresholded"),
    (3, 2, 2, 2, 2, "2-D"),
]


def _rollout_layers(i, L, h, T, maps):
    rng = np.random.default_rng(100 + i)
    layers = []
    for _ in range(L):
        A = _softmax_maps(rng, (h, T, T)) if maps == "softmax" else _row_scaled(rng, (h, T, T))
        if maps == "thresholded":  # the smallest 60% of each row zeroed, as a visualiser does
            A = np.where(A >= np.quantile(A, 0.6, axis=-1, keepdims=True), A, 0.0)
        layers.append(A[0] if maps == "2-D" else A)
    return layers


def _check_rollout(rollout):
    oracle = _suite("attention_rollout")._rollout
    for i, (L, h, n_prefix, H_p, W_p, maps) in enumerate(ROLLOUT_CASES):
        layers = _rollout_layers(i, L, h, n_prefix + H_p * W_p, maps)
        np.testing.assert_allclose(
            np.asarray(rollout(layers, n_prefix, H_p, W_p)),
            oracle(layers, n_prefix, H_p, W_p), rtol=1e-12, atol=1e-15,
            err_msg=f"L={L}, h={h}, n_prefix={n_prefix}, grid {H_p}x{W_p}, {maps}")


# -- mean_attention_distance against the suite's _mad -----------------------------------------

# (batch or None for one image, heads, n_prefix, H_p, W_p, P)
MAD_CASES = [
    (None, 2, 1, 2, 4, 16.0),
    (3, 3, 0, 3, 5, 8.0),
    (2, 2, 3, 4, 2, 14.0),
    (None, 1, 0, 4, 2, 1.0),
    (4, 2, 1, 3, 5, 2.5),
    (1, 4, 3, 1, 6, 32.0),
    (2, 2, 1, 3, 3, 16.0),
]


def _mad_maps(i, B, h, T):
    rng = np.random.default_rng(200 + i)
    shape = (h, T, T) if B is None else (B, h, T, T)
    return _softmax_maps(rng, shape) if i % 2 else _row_scaled(rng, shape)


def _check_mad(mad):
    oracle = _suite("mean_attention_distance")._mad
    for i, (B, h, n_prefix, H_p, W_p, P) in enumerate(MAD_CASES):
        A = _mad_maps(i, B, h, n_prefix + H_p * W_p)
        np.testing.assert_allclose(
            np.asarray(mad(A, H_p, W_p, P, n_prefix)), oracle(A, H_p, W_p, P, n_prefix),
            rtol=1e-12, atol=1e-12,
            err_msg=f"B={B}, h={h}, n_prefix={n_prefix}, grid {H_p}x{W_p}, P={P}")


# -- positional_attention: the hand-written gradient against finite differences ---------------

# The documented initialisation: Q0 = 3*I + N(0, 1e-3^2) noise, then v0 ~ N(0, 1e-3^2), both
# drawn from default_rng(seed), Q's noise first.
Q_DIAG, INIT_STD = 3.0, 1e-3
# X is scaled so that the patch scores <X[n, j], v0> are O(1) at v0 ~ 1e-3: the cubic and the
# linear terms of sigma both matter, and both gradient blocks stand well above the rounding
# of the loss (~1e-16) over the difference step.
FD_N, FD_D, FD_d, FD_X_SCALE, FD_SEED, FD_LR = 6, 4, 3, 500.0, 11, 1e-3
FD_REL_STEP = 1e-6  # central-difference step, relative to each parameter's scale (3 and 1e-3)


def _check_gradient(module):
    """One training step from the documented init, lr small, is init - lr * dLoss/d(Q, v) with
    the gradient taken by central differences of the mean logistic loss of the module's own
    forward pass."""
    rng = np.random.default_rng(0)
    X = FD_X_SCALE * rng.standard_normal((FD_N, FD_D, FD_d))
    y = rng.choice([-1.0, 1.0], size=FD_N)
    draw = np.random.default_rng(FD_SEED)
    Q0 = Q_DIAG * np.eye(FD_D) + INIT_STD * draw.standard_normal((FD_D, FD_D))
    v0 = INIT_STD * draw.standard_normal(FD_d)
    start = module.train_positional_attention(X, y, 0, FD_LR, FD_SEED)
    np.testing.assert_array_equal(start[0], Q0, err_msg="steps=0 is not the documented Q0")
    np.testing.assert_array_equal(start[1], v0, err_msg="steps=0 is not the documented v0")
    Q1, v1 = module.train_positional_attention(X, y, 1, FD_LR, FD_SEED)
    analytic = {"Q": (Q0 - Q1) / FD_LR, "v": (v0 - v1) / FD_LR}

    def loss(Q, v):
        return float(np.mean(np.logaddexp(0.0, -y * module.positional_attention_forward(X, Q, v))))

    numeric = {"Q": np.zeros_like(Q0), "v": np.zeros_like(v0)}
    for name, base, h in (("Q", Q0, FD_REL_STEP * Q_DIAG), ("v", v0, FD_REL_STEP * INIT_STD)):
        for idx in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[idx] += h
            down[idx] -= h
            pair = [(up, v0), (down, v0)] if name == "Q" else [(Q0, up), (Q0, down)]
            numeric[name][idx] = (loss(*pair[0]) - loss(*pair[1])) / (2 * h)
    for name in ("Q", "v"):  # each block on its own scale: v's gradient is ~1e4 times Q's
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-6,
                                   atol=1e-8 * np.abs(numeric[name]).max(),
                                   err_msg=f"dLoss/d{name}: training step against finite "
                                           "differences")


# -- positional_attention: training and association against the suite's re-implementations ----

def _training_data():
    S, ref = _suite("positional_attention"), load_reference("positional_attention")
    rng = np.random.default_rng(21)
    groups = S._random_partition(rng, 7, [3, 2, 1, 1])
    w = rng.standard_normal(8)
    X, y = ref.make_patch_data(60, groups, w / np.linalg.norm(w), 0.4, rng)
    return X, y


def _check_training(train):
    S = _suite("positional_attention")
    X, y = _training_data()
    for steps, seed in ((0, 4), (1, 4), (40, 9)):
        np.testing.assert_allclose(S._flat(train(X, y, steps, 0.3, seed)),
                                   S._flat(S._train_variant(X, y, steps, 0.3, seed)),
                                   rtol=1e-10, atol=1e-12,
                                   err_msg=f"(Q, v) after {steps} steps from seed {seed}")


# (D, group sizes, A)
ASSOCIATION_CASES = [
    (5, [2, 3], "ties"), (10, [3, 2, 3, 2], "uniform"), (10, [3, 2, 3, 2], "init"),
    (12, [4, 3, 3, 2], "logits"), (7, [1, 3, 1, 2], "ties"), (9, [3, 3, 3], "ties"),
]


def _association_matrix(rng, D, kind):
    if kind == "ties":                      # weights to one decimal: many ties at the cut-off
        return np.round(rng.random((D, D)), 1)
    if kind == "uniform":
        return np.full((D, D), 1.0 / D)
    if kind == "init":                      # softmax(3*I): every off-diagonal entry tied
        return _suite("positional_attention")._softmax(3.0 * np.eye(D), 1)
    return rng.standard_normal((D, D))      # logits, negative entries too


def _check_association(association):
    S = _suite("positional_attention")
    # the suite's hand-made matrix, worked out by hand in its comment
    np.testing.assert_allclose(association(S.HAND_A, S.HAND_GROUPS, False), 103 / 150,
                               rtol=1e-12)
    np.testing.assert_allclose(association(S.HAND_A, S.HAND_GROUPS, True), 0.5, rtol=1e-12)
    for i, (D, sizes, kind) in enumerate(ASSOCIATION_CASES):
        rng = np.random.default_rng(300 + i)
        groups = S._random_partition(rng, D, sizes)
        A = _association_matrix(rng, D, kind)
        for exclude_self in (False, True):
            want = float(np.nanmean(S._patch_shares(A, groups, exclude_self)))
            np.testing.assert_allclose(association(A, groups, exclude_self), want, rtol=1e-12,
                                       atol=1e-15, err_msg=f"D={D}, {sizes}, {kind}, "
                                                           f"exclude_self={exclude_self}")


# -- compute_frontier against the suite's _frontier and _match --------------------------------

def _frontier_inputs():
    S = _suite("compute_frontier")
    inputs = [S._table6(), S._table6("ViT"), S._table6("ResNet"), (S._PC, S._PA)]
    for seed, n, tie_levels in ((1, 1, None), (2, 12, None), (3, 40, 5), (4, 60, 8), (5, 25, 3)):
        inputs.append(S._random_models(seed, n, tie_levels))
    return inputs


def _check_frontier(pareto):
    S = _suite("compute_frontier")
    for compute, accuracy in _frontier_inputs():
        got = [int(i) for i in pareto(compute, accuracy)]
        want = S._frontier(compute, accuracy)
        assert got == want, f"frontier {got}, the suite's {want} (compute {list(compute)})"


def _check_match(match):
    S = _suite("compute_frontier")
    rng = np.random.default_rng(400)
    for compute, accuracy in _frontier_inputs():
        fa = np.asarray(accuracy, dtype=float)[S._frontier(compute, accuracy)]
        targets = np.concatenate([fa, (fa[1:] + fa[:-1]) / 2, [fa[0] - 1, fa[-1] + 0.5, np.nan],
                                  rng.uniform(fa[0], fa[-1], 5)])
        for t in targets:
            np.testing.assert_allclose(match(float(t), compute, accuracy),
                                       S._match(float(t), compute, accuracy), rtol=1e-12,
                                       atol=0.0, equal_nan=True, err_msg=f"target {t}")


# -- conv_via_attention against the suite's _xcorr and _with_distance -------------------------

CONV_SHAPES = [((9, 1), (1, 1, 3)), ((10, 3), (2, 3, 5)), ((6, 2), (3, 2, 1)), ((3, 2), (2, 2, 5)),
               ((1, 2), (3, 2, 3)), ((5, 7, 1), (1, 1, 3, 3)), ((6, 4, 3), (2, 3, 3, 3)),
               ((7, 6, 2), (2, 2, 5, 5)), ((2, 3, 1), (1, 1, 3, 3))]


def _conv_data(i):
    rng = np.random.default_rng(500 + i)
    xs, ws = CONV_SHAPES[i]
    return rng.standard_normal(xs), rng.standard_normal(ws)


def _check_conv_limit(conv):
    """As alpha grows the heads read one pixel each: the circular cross-correlation."""
    S = _suite("conv_via_attention")
    for i in range(len(CONV_SHAPES)):
        X, W = _conv_data(i)
        for alpha in (40.0, 1e4):
            np.testing.assert_allclose(np.asarray(conv(X, W, alpha)), S._xcorr(X, W),
                                       **S.LIMIT_TOL, err_msg=f"{X.shape}, {W.shape}, {alpha}")


def _check_conv_heads(conv):
    """At any alpha: the suite's heads, built from its own circular distance."""
    S = _suite("conv_via_attention")
    for i in range(len(CONV_SHAPES)):
        X, W = _conv_data(i)
        for alpha in (0.0, 0.3, 1.5, 4.0):
            np.testing.assert_allclose(np.asarray(conv(X, W, alpha)),
                                       S._with_distance(X, W, alpha, S._circular), rtol=1e-12,
                                       atol=1e-13, err_msg=f"{X.shape}, {W.shape}, {alpha}")


# -- grid_local_mask against the suite's _gaps -------------------------------------------------

GRID_CASES = [(3, 3, 1, 1), (4, 5, 1, 2), (5, 3, 2, 1), (2, 6, 0, 0), (1, 1, 0, 3), (4, 4, 5, 1),
              (6, 2, 1, 0), (3, 7, 2, 2)]


def _check_grid_mask(mask_fn):
    S = _suite("grid_local_mask")
    for H_p, W_p, radius, n_prefix in GRID_CASES:
        dr, dc = S._gaps(H_p, W_p)
        want = S._prefix_lines(H_p, W_p, radius, n_prefix) | S._in_patch_block(
            np.maximum(dr, dc) <= radius, n_prefix)
        got = np.asarray(mask_fn(H_p, W_p, radius, n_prefix))
        assert got.dtype == bool, got.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{H_p}x{W_p}, radius {radius}, "
                                                         f"n_prefix {n_prefix}")


# -- inductive_bias_toy against the suite's _gain and _slope, and the normal equations --------

TOY_CASES = [(3, 8, 0.3, 0.5), (1, 1, 0.3, 0.5), (1, 2, 0.3, 0.5), (1, 3, 0.3, 0.5),
             (4, 6, 0.0, 0.0), (4, 6, -0.5, 1.5), (5, 32, 0.3, 0.5)]


def _check_toy_targets(toy_targets):
    S = _suite("inductive_bias_toy")
    for i, (N, n, beta, sigma) in enumerate(TOY_CASES):
        X, noise = S._rows(600 + i, N, n)
        np.testing.assert_allclose(np.asarray(toy_targets(X, beta, sigma, noise)),
                                   S._gain(n, beta) * S._slope(X) + sigma * noise, rtol=1e-13,
                                   atol=1e-13, err_msg=f"N={N}, n={n}, beta={beta}")


def _check_shared_kernel(fit):
    """w is the least-squares fit in the suite's convention (its measured-error test predicts
    X[:, idx] @ w): the residual is orthogonal to every tap column."""
    S, ref = _suite("inductive_bias_toy"), load_reference("inductive_bias_toy")
    for i, (N, n, k, toy) in enumerate([(5, 8, 3, False), (6, 10, 1, True), (6, 10, 5, True),
                                        (40, 32, 3, True), (3, 4, 4, False)]):
        X, Y = S._rows(700 + i, N, n)
        if toy:
            Y = ref.toy_targets(X, 0.3, 0.5, Y)
        idx = (np.arange(n)[:, None] + np.arange(k)[None, :] - k // 2) % n
        design, target = X[:, idx].reshape(-1, k), Y.reshape(-1)
        residual = target - design @ np.asarray(fit(X, Y, k))
        np.testing.assert_allclose(design.T @ residual, 0.0,
                                   atol=1e-10 * np.abs(design.T @ target).max(),
                                   err_msg=f"N={N}, n={n}, k={k}")


# -- patch_vit: the parameter formula and the recipes' independent trunk ----------------------

PARAM_CASES = [(3, 8, 32, 2, 0), (1, 4, 16, 3, 12), (2, 4, 16, 1, 10), (3, 8, 32, 2, 6)]


def _reference_param_count(in_chans, patch, dim, depth, num_patches):
    model = load_reference("patch_vit").PatchViT(in_chans, patch, dim, depth, heads=4,
                                                 num_patches=num_patches or None,
                                                 pos_embed=num_patches > 0)
    return sum(p.numel() for p in model.parameters())


def _check_param_count(count):
    S = _suite("patch_vit")
    for args in PARAM_CASES:
        assert count(*args) == S._param_formula(*args), args


TRUNK_CASES = [
    ({"c_in": 3, "dim": 32, "patch": 8, "depth": 2, "heads": 2, "seed": 4}, (3, 16, 24)),
    ({"c_in": 1, "dim": 16, "patch": 4, "depth": 3, "heads": 4, "grid": (2, 5),
      "pos_std": 1.0, "seed": 7}, (1, 8, 20)),
]


def _check_trunk(patch_vit_class):
    """The class, holding the weights of the ``patch_transformer`` recipe (its own embedding,
    position table and encoder, float64), gives that recipe's tokens."""
    import torch

    from grader.sandbox.harness import recipes

    for i, (params, shape) in enumerate(TRUNK_CASES):
        trunk = recipes.build("patch_transformer", params)
        grid = params.get("grid")
        model = patch_vit_class(in_chans=params["c_in"], patch=params["patch"], dim=params["dim"],
                                depth=params["depth"], heads=params["heads"],
                                num_patches=None if grid is None else grid[0] * grid[1],
                                pos_embed=grid is not None).double()
        state = {**{f"patch_embed.{k}": v for k, v in trunk.embed.state_dict().items()},
                 **{f"encoder.{k}": v for k, v in trunk.encoder.state_dict().items()}}
        if grid is not None:
            state["pos_embed"] = trunk.pos
        model.load_state_dict(state)
        x = np.random.default_rng(800 + i).standard_normal(shape)
        with torch.no_grad():
            got = model(torch.from_numpy(x)[None])[0].numpy()
        np.testing.assert_allclose(got, trunk(x).reshape(params["dim"], -1).T, rtol=1e-10,
                                   atol=1e-12, err_msg=str(params))


def _scaled_module(cls, factor=1.001):
    class Broken(cls):
        def forward(self, x):
            return factor * super().forward(x)

    return Broken


# -- shape_bias against the suite's _counts ---------------------------------------------------

def _check_shape_bias(shape_bias):
    S = _suite("shape_bias")
    np.testing.assert_allclose(shape_bias(*S.SIX_TRIALS), 0.6, rtol=1e-12)
    trials = [S.SIX_TRIALS, *S.PROBES.calls, (["a", "b"], ["c", "d"], ["e", "f"]),
              (["cat", "cat"], ["cat", "dog"], ["cat", "dog"])]
    trials += [S._random_trials(seed, n, strings) for seed, n, strings in
               ((1, 50, False), (2, 200, True), (3, 7, False))]
    for trial in trials:
        n_shape, n_texture, _ = S._counts(*trial)
        want = n_shape / (n_shape + n_texture) if n_shape + n_texture else np.nan
        np.testing.assert_allclose(shape_bias(*trial), want, rtol=1e-15, equal_nan=True,
                                   err_msg=str(trial)[:200])


# -- shift_equivariance: the stride-1 error, the shifts, the permutation ----------------------

def _image_maps():
    S = _suite("shift_equivariance")
    return {"circular conv": built(Recipe(*S.CONV1)), "patch embedding": built(Recipe(*S.PATCH)),
            "tanh": lambda x: 2.0 * np.tanh(x), "column flip": lambda x: x[:, :, ::-1],
            "zero": built(Recipe(*S.ZERO))}


def _check_equivariance_error(error):
    """At stride 1 the suite's ``_not_divided`` computes the error itself (np.roll both ways)."""
    S = _suite("shift_equivariance")
    x = S._image(900)
    for name, f in _image_maps().items():
        for shift in (3, -5, (2, 7), (0, 0), (-1, 4), 24):
            np.testing.assert_allclose(error(f, x, shift, 1), S._not_divided(f, x, shift, 1),
                                       rtol=1e-12, atol=1e-15, err_msg=f"{name}, shift {shift}")


def _check_which_shifts(which):
    S = _suite("shift_equivariance")
    x = S._image(901)
    for name, f in _image_maps().items():
        want = [d for d in range(x.shape[2]) if S._not_divided(f, x, d, 1) <= 1e-8]
        assert [int(d) for d in which(f, x, 1, 1e-8)] == want, name


def _check_permutation(permutation):
    """Pi @ PE(x) = PE(x rolled by whole patches) for the suite's seeded patch embedding."""
    pe = built(Recipe(*_suite("shift_equivariance").PATCH))  # 3 -> 32 channels, patch 8
    rng = np.random.default_rng(902)
    for H_p, W_p in ((3, 4), (2, 3), (1, 5)):
        x = rng.standard_normal((3, 8 * H_p, 8 * W_p))
        tokens = pe(x).reshape(32, -1).T
        for dr, dc in ((0, 1), (2, -1), (1, 3), (5, -7)):
            moved = pe(np.roll(x, (8 * dr, 8 * dc), axis=(1, 2))).reshape(32, -1).T
            np.testing.assert_allclose(np.asarray(permutation(H_p, W_p, dr, dc)) @ tokens, moved,
                                       rtol=1e-9, atol=1e-12,
                                       err_msg=f"{H_p}x{W_p}, shift ({dr}, {dc})")


# -- the registry: every oracle, the reference it checks, the broken copies it must catch -----

@dataclass(frozen=True)
class Oracle:
    check: Callable[[Any], None]   # raises AssertionError when its argument disagrees
    reference: Callable[[], Any]   # what the reference gives to check
    broken: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    torch: bool = False            # runs torch (a model, or the recipes' torch maps)


def _ref(slug, name=None):
    return lambda: load_reference(slug) if name is None else getattr(load_reference(slug), name)


SCALED = {"output_times_1.001": _scaled}
PA = "positional_attention"
ORACLES = {
    "attention_rollout": Oracle(_check_rollout, _ref("attention_rollout", "attention_rollout"),
                                {**SCALED, "transposed_grid": lambda f: lambda *a: np.asarray(
                                    f(*a)).T.reshape(a[2], a[3])}),
    "mean_attention_distance": Oracle(
        _check_mad, _ref("mean_attention_distance", "mean_attention_distance"),
        {**SCALED, "grid_transposed": lambda f: lambda A, H, W, P, n: f(A, W, H, P, n)}),
    "positional_attention_gradient": Oracle(_check_gradient, _ref(PA), {
        "softmax_jacobian_is_identity": lambda m: _edited_reference(
            PA, "A * (gA - (A * gA).sum(axis=1, keepdims=True))", "gA"),
        "score_gradient_transposed": lambda m: _edited_reference(
            PA, "(G @ A).reshape(-1)", "(G @ A.T).reshape(-1)"),
        "sum_not_mean_over_samples": lambda m: _edited_reference(
            PA, "np.logaddexp(0.0, margin)) / N", "np.logaddexp(0.0, margin))")}),
    "positional_attention_training": Oracle(_check_training,
                                            _ref(PA, "train_positional_attention"), SCALED),
    "patch_association": Oracle(_check_association, _ref(PA, "patch_association"), SCALED),
    "pareto_frontier": Oracle(_check_frontier, _ref("compute_frontier", "pareto_frontier"),
                              {"last_model_dropped": lambda f: lambda c, a: f(c, a)[:-1]}),
    "compute_to_match": Oracle(_check_match, _ref("compute_frontier", "compute_to_match"),
                               SCALED),
    "conv_via_attention_limit": Oracle(_check_conv_limit,
                                       _ref("conv_via_attention", "conv_via_attention"), SCALED),
    "conv_via_attention_heads": Oracle(_check_conv_heads,
                                       _ref("conv_via_attention", "conv_via_attention"), SCALED),
    "grid_local_mask": Oracle(_check_grid_mask, _ref("grid_local_mask", "grid_local_mask"),
                              {"radius_plus_one": lambda f: lambda H, W, r, n: f(H, W, r + 1, n)}),
    "toy_targets": Oracle(_check_toy_targets, _ref("inductive_bias_toy", "toy_targets"), SCALED),
    "fit_shared_kernel": Oracle(_check_shared_kernel,
                                _ref("inductive_bias_toy", "fit_shared_kernel"),
                                {**SCALED, "taps_reversed": lambda f: lambda *a: f(*a)[::-1]}),
    "patch_vit_param_count": Oracle(_check_param_count, lambda: _reference_param_count,
                                    {"one_more": lambda f: lambda *a: f(*a) + 1}, torch=True),
    "patch_vit_trunk": Oracle(_check_trunk, _ref("patch_vit", "PatchViT"),
                              {"output_times_1.001": _scaled_module}, torch=True),
    "shape_bias": Oracle(_check_shape_bias, _ref("shape_bias", "shape_bias"), SCALED),
    "equivariance_error": Oracle(_check_equivariance_error,
                                 _ref("shift_equivariance", "equivariance_error"), SCALED,
                                 torch=True),
    "which_shifts_commute": Oracle(_check_which_shifts,
                                   _ref("shift_equivariance", "which_shifts_commute"),
                                   {"last_shift_dropped": lambda f: lambda *a: f(*a)[:-1]},
                                   torch=True),
    "patch_shift_permutation": Oracle(_check_permutation,
                                      _ref("shift_equivariance", "patch_shift_permutation"),
                                      {"transposed": lambda f: lambda *a: f(*a).T},
                                      torch=True),
}


def _needed(name):
    """``ORACLES[name]``; its test is skipped where it needs torch and there is none."""
    if ORACLES[name].torch:
        pytest.importorskip("torch")
    return ORACLES[name]


@pytest.mark.parametrize("name", ORACLES)
def test_reference_agrees_with_its_oracle(name):
    """The reference passes its independent oracle."""
    oracle = _needed(name)
    oracle.check(oracle.reference())


@pytest.mark.parametrize("name, how", [(n, h) for n, o in ORACLES.items() for h in o.broken])
def test_a_broken_reference_fails_its_oracle(name, how):
    """The same oracle rejects a deliberately broken copy of the reference."""
    oracle = _needed(name)
    broken = oracle.broken[how](oracle.reference())  # built outside: only the check may fail
    with pytest.raises(AssertionError):
        oracle.check(broken)


# -- the suites' deliberate variants differ from the reference where they should -------------

def _rollout_variant(**flags):
    layers = _rollout_layers(0, 3, 2, 2 + 15, "rows not summing to 1")
    args = (layers, 2, 3, 5)
    return (_suite("attention_rollout")._rollout(*args, **flags),
            load_reference("attention_rollout").attention_rollout(*args))


def _mad_variant(**flags):
    args = (_mad_maps(0, 2, 3, 1 + 15), 3, 5, 16.0, 1)
    return (_suite("mean_attention_distance")._mad(*args, **flags),
            load_reference("mean_attention_distance").mean_attention_distance(*args))


def _training_variant(steps, **flags):
    S = _suite("positional_attention")
    X, y = _training_data()
    return (S._flat(S._train_variant(X, y, steps, 0.3, 4, **flags)),
            S._flat(load_reference(PA).train_positional_attention(X, y, steps, 0.3, 4)))


VARIANTS = {
    "rollout_first_layer_on_left": lambda: _rollout_variant(order="first_left"),
    "rollout_no_residual": lambda: _rollout_variant(residual=False),
    "rollout_no_row_renormalisation": lambda: _rollout_variant(renorm=False),
    "rollout_max_over_heads": lambda: _rollout_variant(heads="max"),
    "rollout_column_not_row": lambda: _rollout_variant(row=False),
    "mad_no_renormalisation": lambda: _mad_variant(renorm=False),
    "mad_distance_in_patches": lambda: _mad_variant(scale=False),
    "mad_manhattan": lambda: _mad_variant(metric="manhattan"),
    "mad_width_from_H_p": lambda: _mad_variant(width=3),
    "training_no_softmax_jacobian": lambda: _training_variant(40, jacobian=False),
    "training_score_gradient_transposed": lambda: _training_variant(40, transpose_du=True),
    "training_sequential_updates": lambda: _training_variant(40, together=False),
    "training_init_drawn_v_first": lambda: _training_variant(0, v_first=True),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_a_suite_variant_differs_from_the_reference(name):
    """A declared wrong variant is outside the grader's tolerance of the reference."""
    variant, reference = VARIANTS[name]()
    assert np.shape(variant) == np.shape(reference)
    assert not np.allclose(variant, reference, rtol=1e-6, atol=1e-9)


def test_unstable_softmax_variant_agrees_at_moderate_alpha_and_overflows_at_large():
    """conv_via_attention's ``_unstable`` is the reference's maths without the max shift: equal
    while exp does not overflow, non-finite at alpha = 1e3 where the reference stays finite."""
    S, ref = _suite("conv_via_attention"), load_reference("conv_via_attention")
    for i in (1, 6):
        X, W = _conv_data(i)
        np.testing.assert_allclose(S._unstable(X, W, 1.5), ref.conv_via_attention(X, W, 1.5),
                                   rtol=1e-10, atol=1e-12)
        assert np.isfinite(ref.conv_via_attention(X, W, 1e3)).all()
        assert not np.isfinite(S._unstable(X, W, 1e3)).all()
