"""Hidden suite: patch_vit (a torch exercise, graded on the grading device).

The learner's ``PatchViT`` lives in the worker: ``learner.new`` builds it and returns a
``RemoteObject``; trusted recipes (``grader/sandbox/harness/recipes.py``) move it to the
grading device (``to_device``), load the reference's weights into it (``load_state``, strict:
the statement fixes the layers' names and shapes), re-initialise its parameters from a seed
(``seeded_init``, for the tests that must run on any layout), count its parameters
(``param_count``) and write a position table into it (``set_pos_embed``). Inputs are created
here on the ``device`` fixture; outputs come back on the input's device.

Every test that runs the model, but the output-shape test, runs it on the reference's weights
(``_loaded``): the symmetry tests then grade a model that is a ViT trunk, and the comparison
tests (``same_tokens_as_reference*``) grade its outputs against the reference's, so a model
without attention or LayerNorm earns nothing from them.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import numpy as np
import torch
from torch import nn

from grader.sandbox import faults
from grader.sandbox.harness import recipes
from grader.suite import GradeFailure, Recipe, cached_input, graded, mistake, reference

F = "PatchViT"
SLUG = "patch_vit"
SEED = 0
# float32 model: whole-patch equivariance holds to rounding; the broken symmetries are O(1).
EQ_RTOL, EQ_ATOL_REL = 1e-4, 1e-4
# The learner's tokens against the reference's, same weights, float32 on either side (loose
# enough for TF32 convolutions on a GPU and any order of the sums; a wrong layer is O(0.1)).
REF_RTOL, REF_ATOL_REL = 1e-3, 1e-3
BROKEN_MIN = 0.05
DEFAULTS = {"in_chans": 3, "patch": 8, "dim": 32, "depth": 2, "heads": 2, "num_patches": None,
            "pos_embed": False}


def _perm_src(H_p: int, W_p: int, dr: int, dc: int) -> np.ndarray:
    """For each new token index, the old one, from the reference ``patch_shift_permutation``."""
    perm = reference("shift_equivariance").patch_shift_permutation(H_p, W_p, dr, dc)
    return perm.argmax(axis=1)


def _permute(tokens: torch.Tensor, H_p: int, W_p: int, dr: int, dc: int) -> torch.Tensor:
    """``Π @ tokens`` for every image of a ``(B, N_p, d)`` batch (exact: an index, no matmul)."""
    src = torch.as_tensor(_perm_src(H_p, W_p, dr, dc), device=tokens.device)
    return tokens[:, src]


def _images(seed: int, shape: tuple[int, ...], device: str) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).to(device)


def _roll(x: torch.Tensor, dr: int, dc: int) -> torch.Tensor:
    """Circular shift of a ``(B, C, H, W)`` batch by ``(dr, dc)`` pixels."""
    return torch.roll(x, shifts=(dr, dc), dims=(2, 3))


def _model(learner, device: str, seed: int = SEED, **kwargs: Any):
    """The learner's ``PatchViT(**kwargs)``, re-initialised from ``seed``, on ``device`` (for
    the tests that must run on any layout: the output's shape, the parameter count)."""
    model = learner.new(F, **kwargs)
    learner.apply(Recipe("seeded_init", {"seed": seed}), model.handle)
    learner.apply(Recipe("to_device", {"device": device}), model.handle)
    return model


@cached_input
def _reference_state(seed: int, **config: Any) -> dict[str, np.ndarray]:
    """The reference ``PatchViT(**config)``'s weights, every parameter drawn from ``seed``
    (``seeded_init_``: what that recipe gives any model with the documented layers)."""
    model = recipes.seeded_init_(reference(SLUG).PatchViT(**config), seed)
    return {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}


def _load(check, learner, model, **kwargs: Any) -> None:
    """Load the reference's weights for ``PatchViT(**kwargs)`` into the learner's ``model``
    (strict); fail, naming the keys, when its layers are not the documented ones."""
    state = _reference_state(SEED, **{**DEFAULTS, **kwargs})
    try:
        learner.apply(Recipe("load_state", {"state": state}), model.handle)
    except faults.LearnerRaised as exc:
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        check.fail(f"The reference's weights do not load into your PatchViT({shown}) with "
                   f"load_state_dict(strict=True): {exc.raw_message}. The statement fixes each "
                   "layer's name and shape (its table \"The layers, by name\").",
                   kind="layout")


def _loaded(check, learner, device: str, **kwargs: Any):
    """The learner's ``PatchViT(**kwargs)`` on ``device`` holding the reference's weights."""
    model = learner.new(F, **kwargs)
    learner.apply(Recipe("to_device", {"device": device}), model.handle)
    _load(check, learner, model, **kwargs)
    return model


# The reference's tokens, by their inputs, for the life of the grading process (building the
# reference model, a deep copy of its encoder layer per layer, cost 75 ms a submission).
_TOKENS: dict[tuple, torch.Tensor] = {}


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _reference_tokens(config: dict[str, Any], table: np.ndarray | None, x: torch.Tensor, *,
                      activation: str = "gelu", norm_first: bool = True) -> torch.Tensor:
    """The reference's tokens for ``x`` (on x's device) with the weights ``_reference_state``
    gives and ``table`` (None: the seeded one) as its position table; or those of an encoder
    with another ``activation`` / ``norm_first`` (for the known mistakes). Computed once per
    process for the same inputs; the caller gets its own copy."""
    key = (tuple(sorted(config.items())), None if table is None else _digest(table),
           str(x.device), str(x.dtype), tuple(x.shape), _digest(x.detach().cpu().numpy()),
           activation, norm_first)
    if key not in _TOKENS:
        _TOKENS[key] = _compute_tokens(config, table, x, activation, norm_first)
    return _TOKENS[key].clone()


def _compute_tokens(config: dict[str, Any], table: np.ndarray | None, x: torch.Tensor,
                    activation: str, norm_first: bool) -> torch.Tensor:
    model = reference(SLUG).PatchViT(**config)
    if activation != "gelu" or not norm_first:
        dim, heads, depth = config["dim"], config["heads"], config["depth"]
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.0,
                                           activation=activation, batch_first=True,
                                           norm_first=norm_first)
        model.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
    model.load_state_dict({k: torch.from_numpy(v.copy())
                           for k, v in _reference_state(SEED, **config).items()})
    if table is not None:
        recipes.build("set_pos_embed", {"table": table})(model)
    with torch.no_grad():
        return model.to(x.device)(x)


def _same_tokens(check, out: torch.Tensor, x: torch.Tensor, table: np.ndarray | None = None,
                 **kwargs: Any) -> None:
    """``out``, the learner's ``PatchViT(**kwargs)``'s tokens for ``x`` on the reference's
    weights (and ``table``), against the reference's."""
    args = ({**DEFAULTS, **kwargs}, table, x)
    expected = _reference_tokens(*args)
    check.equal(out, expected, rtol=REF_RTOL, atol=REF_ATOL_REL * float(expected.abs().max()),
                what="your tokens with the reference's weights, against the reference's",
                mistake_call=("tokens", args, {}), confirms=F)


def _check_same_tokens(check, learner, device: str, x: torch.Tensor,
                       table: np.ndarray | None = None, **kwargs: Any) -> None:
    """The learner's ``PatchViT(**kwargs)`` with the reference's weights (and ``table``) gives
    the reference's tokens for ``x``."""
    config = {**DEFAULTS, **kwargs}
    model = _loaded(check, learner, device, **kwargs)
    if table is not None:
        learner.apply(Recipe("set_pos_embed", {"table": table}), model.handle)
    n_tokens = (x.shape[2] // config["patch"]) * (x.shape[3] // config["patch"])
    _same_tokens(check, _tokens(check, model, x, n_tokens, config["dim"]), x, table, **kwargs)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max|a - b| / max|b|`` (shapes must agree)."""
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _tokens(check, model, x: torch.Tensor, n_tokens: int, dim: int) -> torch.Tensor:
    """``model.forward(x)``, checked to be a ``(B, n_tokens, dim)`` tensor on x's device."""
    out = model.forward(x)
    check.that(isinstance(out, torch.Tensor), f"forward should return a torch tensor, got "
               f"{type(out).__name__}", kind="type")
    check.that(out.device.type == x.device.type, f"forward returned a tensor on {out.device}; "
               f"the input was on {x.device} and the output must be on the input's device",
               kind="device")
    want = (x.shape[0], n_tokens, dim)
    if tuple(out.shape) != want:
        message = (f"forward{tuple(x.shape)} should return tokens of shape {want} (B, N_p, dim), "
                   f"got {tuple(out.shape)}")
        for known in (_with_class_token, _pooled):
            if tuple(out.shape) == known(*want):
                _fail_with(known, message, kind="shape")
        check.that(False, message, kind="shape")
    return out


def _table(seed: int, n: int, dim: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim))


def _fail_with(known: Any, message: str, kind: str | None = None) -> None:
    """Fail naming a known mistake (for property tests where no reference value exists)."""
    raise GradeFailure(message, None, known.__known_mistake__, kind=kind)


def _param_formula(in_chans: int, patch: int, dim: int, depth: int, num_patches: int,
                   ff: int | None = None) -> int:
    """Parameters of the documented layers (``num_patches = 0``: no position table)."""
    ff = 4 * dim if ff is None else ff
    embed = in_chans * patch * patch * dim + dim
    attention = 3 * dim * dim + 3 * dim + dim * dim + dim
    mlp = dim * ff + ff + ff * dim + dim
    norms = 2 * 2 * dim
    return embed + num_patches * dim + depth * (attention + mlp + norms)


# -- known mistakes ----------------------------------------------------------------------

@mistake("token_shape", "class_token_returned",
         "Your output has one token more than there are patches: a class token returned with "
         "the patch tokens. This trunk has no class token; it returns the N_p patch tokens only.")
def _with_class_token(batch, n_tokens, dim):
    return (batch, n_tokens + 1, dim)


@mistake("token_shape", "pooled_output",
         "Your output is one vector per image: the tokens were pooled (or one token was picked). "
         "Return every patch token, (B, N_p, dim); pooling belongs to a classification head.")
def _pooled(batch, n_tokens, dim):
    return (batch, dim)


@mistake("param_count", "feedforward_2048",
         "Your parameter count matches MLPs of width 2048, nn.TransformerEncoderLayer's "
         "default dim_feedforward. The contract's MLP is dim -> 4*dim -> dim: pass "
         "dim_feedforward=4*dim.")
def _ff_2048(in_chans, patch, dim, depth, num_patches):
    return _param_formula(in_chans, patch, dim, depth, num_patches, ff=2048)


@mistake("param_count", "extra_final_norm",
         "Your parameter count has 2*dim more than the documented layers: a final LayerNorm "
         "after the encoder (as in the ViT paper's full model). This trunk has none: the "
         "encoder's output tokens are the result.")
def _final_norm(in_chans, patch, dim, depth, num_patches):
    return _param_formula(in_chans, patch, dim, depth, num_patches) + 2 * dim


@mistake("param_count", "class_token",
         "Your parameter count has dim more than the documented layers: a learned class token. "
         "This trunk returns the patch tokens only, with no class token.")
def _class_token(in_chans, patch, dim, depth, num_patches):
    return _param_formula(in_chans, patch, dim, depth, num_patches) + dim


@mistake("whole_patch_shift", "column_major_tokens",
         "Your tokens move as if they were numbered column by column (token c*H_p + r). "
         "flatten(2) on the (B, dim, H_p, W_p) patch grid gives raster order, row by row: "
         "patch (r, c) is token r*W_p + c. Do not swap H_p and W_p before flattening.")
def _column_major(tokens, H_p, W_p, dr, dc):
    cells = np.arange(H_p * W_p)
    r, c = cells // W_p, cells % W_p
    old_cm = c * H_p + r                                       # column-major token numbers
    new_cm = ((c + dc) % W_p) * H_p + (r + dr) % H_p
    gather = np.empty_like(old_cm)
    gather[new_cm] = old_cm
    return tokens[:, torch.as_tensor(gather, device=tokens.device)]


@mistake("positions", "positions_ignored",
         "Your model behaves as if it had no position table although it holds a non-trivial "
         "one: the table is not added to the tokens (or is added to every token alike), so a "
         "whole-patch shift still only permutes them. Add pos_embed (1, N_p, dim) to the patch "
         "tokens before the encoder.")
def _positions_ignored():
    return None


@mistake("positions", "positions_after_encoder",
         "Your position table changes the output by exactly the table, whatever the image: it "
         "is added after the encoder. Add it to the patch tokens before the first encoder "
         "layer, so that attention can use where each token is.")
def _positions_after():
    return None


@mistake("tokens", "relu_mlp",
         "Your tokens match the reference's with ReLU in the MLPs: ReLU is the default "
         "activation of nn.TransformerEncoderLayer. The contract's MLP uses GELU: pass "
         "activation=\"gelu\".")
def _relu_mlp(config, table, x):
    return _reference_tokens(config, table, x, activation="relu")


@mistake("tokens", "post_norm",
         "Your tokens match a post-LN encoder, LN(x + MHA(x)) then LN(x + MLP(x)), the default "
         "of nn.TransformerEncoderLayer (norm_first=False). The contract is pre-LN, as in ViT: "
         "x + MHA(LN(x)), then x + MLP(LN(x)); pass norm_first=True.")
def _post_norm(config, table, x):
    return _reference_tokens(config, table, x, norm_first=False)


# -- shapes, device, parameters ----------------------------------------------------------

@graded(1, "The patch embedding gives a (B, dim, H_p, W_p) grid; the tokens are its cells in "
           "raster order, as rows: (B, N_p, dim).", visibility="public",
        hint_for=("shape", "device", "type"))
def test_output_shape_and_device(check, learner, device):
    """(2, 3, 16, 24) -> (2, 6, 32), and with patch 4 (1, 1, 8, 12) -> (1, 6, 16), on device."""
    model = _model(learner, device)
    _tokens(check, model, _images(1, (2, 3, 16, 24), device), 6, 32)
    small = _model(learner, device, in_chans=1, patch=4, dim=16, depth=1, heads=4)
    _tokens(check, small, _images(2, (1, 1, 8, 12), device), 6, 16)


@graded(1, "Count what the contract lists: the Conv2d patch embedding (weights and bias), and "
           "per layer the attention projections, two LayerNorms and an MLP dim -> 4*dim -> dim.",
        visibility="public",
        hint_for=("values", "layout"))
def test_parameter_count(check, learner, device):
    """No position table: embedding + 2 encoder layers (num_patches is ignored without one);
    the reference's weights load into the model (strict)."""
    for kwargs in ({}, {"num_patches": 6}):
        model = _model(learner, device, **kwargs)
        count = learner.apply(Recipe("param_count"), model.handle)
        args = (3, 8, 32, 2, 0)
        check.equal(count, _param_formula(*args), what="the number of parameters",
                    mistake_call=("param_count", args, {}))
        _load(check, learner, model, **kwargs)


@graded(1, "The position table adds num_patches * dim parameters, and nothing else changes.",
        hint_for=("values", "layout"))
def test_parameter_count_with_positions(check, learner, device):
    """A position table on a 3-layer, 4-head model with patch 4: num_patches * dim more; the
    reference's weights load into it (strict)."""
    kwargs = dict(in_chans=1, patch=4, dim=16, depth=3, heads=4, num_patches=12, pos_embed=True)
    model = _model(learner, device, **kwargs)
    count = learner.apply(Recipe("param_count"), model.handle)
    args = (1, 4, 16, 3, 12)
    check.equal(count, _param_formula(*args), what="the number of parameters",
                mistake_call=("param_count", args, {}))
    _load(check, learner, model, **kwargs)


@graded(1, "A position table needs its length: validate the arguments in __init__ and raise "
           "ValueError.",
        hint_for=("not_raised", "wrong_exception"))
def test_positions_need_num_patches(check, learner, device):
    """PatchViT(pos_embed=True) without num_patches raises ValueError; with num_patches the
    model gives the reference's tokens (on the reference's weights)."""
    check.raises("ValueError", F, pos_embed=True, new=True)
    _check_same_tokens(check, learner, device, _images(10, (1, 3, 16, 24), device),
                       num_patches=6, pos_embed=True)


# -- the reference's weights -------------------------------------------------------------

@graded(2, "With the reference's weights loaded, your trunk must compute what the contract "
           "says, layer by layer: patch embedding, then per layer x + MHA(LN(x)) and "
           "x + MLP(LN(x)) with a GELU MLP.",
        hint_for=("values", "layout"))
def test_same_tokens_as_reference(check, learner, device):
    """No positions, the reference's weights: the default model on a 16x24 image, and 3 layers
    of 4 heads with patch 4 on a 20x8 image."""
    _check_same_tokens(check, learner, device, _images(11, (2, 3, 16, 24), device))
    _check_same_tokens(check, learner, device, _images(12, (1, 2, 20, 8), device),
                       in_chans=2, patch=4, dim=16, depth=3, heads=4)


@graded(1, "The position table is added to the patch tokens in raster order, before the first "
           "encoder layer.",
        hint_for=("values",))
def test_same_tokens_as_reference_with_positions(check, learner, device):
    """A position table of N(0, 1) entries on a 2x5 grid, patch 4, 4 heads, the reference's
    weights."""
    _check_same_tokens(check, learner, device, _images(13, (2, 1, 8, 20), device),
                       _table(13, 10, 16), in_chans=1, patch=4, dim=16, depth=2, heads=4,
                       num_patches=10, pos_embed=True)


# -- the symmetry ------------------------------------------------------------------------

def _check_whole_patch_shift(check, model, x: torch.Tensor, H_p: int, W_p: int, dim: int,
                             patch: int, dr: int, dc: int) -> torch.Tensor:
    """Check that the shift by ``(dr, dc)`` patches permutes the tokens; return ``x``'s."""
    out = _tokens(check, model, x, H_p * W_p, dim)
    moved = _tokens(check, model, _roll(x, dr * patch, dc * patch), H_p * W_p, dim)
    scale = float(out.abs().max())
    check.equal(moved, _permute(out, H_p, W_p, dr, dc), rtol=EQ_RTOL,
                atol=EQ_ATOL_REL * scale,
                what=f"the tokens of the image shifted by ({dr * patch}, {dc * patch}) pixels "
                     f"against the permuted tokens of the original",
                mistake_call=("whole_patch_shift", (out, H_p, W_p, dr, dc), {}))
    return out


@graded(1, "Without positions every step treats the tokens alike, so a whole-patch shift, "
           "which permutes the patches, permutes the output tokens the same way.",
        hint_for=("values",))
def test_whole_patch_shift_permutes_tokens(check, learner, device):
    """No positions, a 2x3 grid: shifts by one patch column and by (1, -2) patches."""
    model = _loaded(check, learner, device)
    x = _images(3, (2, 3, 16, 24), device)
    _check_whole_patch_shift(check, model, x, 2, 3, 32, 8, 0, 1)
    _same_tokens(check, _check_whole_patch_shift(check, model, x, 2, 3, 32, 8, 1, -2), x)


@graded(1, "Raster order on a tall grid: patch (r, c) is token r*W_p + c with W_p = W / patch.",
        hint_for=("values",))
def test_whole_patch_shift_tall_grid(check, learner, device):
    """No positions, patch 4 on a 20x8 image (a 5x2 grid), 3 layers: shift by (2, 1) patches."""
    config = dict(in_chans=2, patch=4, dim=16, depth=3, heads=2)
    model = _loaded(check, learner, device, **config)
    x = _images(4, (1, 2, 20, 8), device)
    _same_tokens(check, _check_whole_patch_shift(check, model, x, 5, 2, 16, 4, 2, 1), x,
                 **config)


@graded(1, "A shift by part of a patch changes what each patch contains, not only where it "
           "is: no reordering of the old tokens can give the new ones.",
        hint_for=("values",))
def test_sub_patch_shift_matches_no_permutation(check, learner, device):
    """No positions: after shifts by 4 and (1, 1) pixels some token matches no old token."""
    model = _loaded(check, learner, device)
    x = _images(5, (1, 3, 16, 24), device)
    tokens = _tokens(check, model, x, 6, 32)
    out = tokens[0]
    size = float(out.norm(dim=1).max())
    for dr, dc in [(0, 4), (1, 1)]:
        moved = _tokens(check, model, _roll(x, dr, dc), 6, 32)[0]
        nearest = torch.cdist(moved.double(), out.double()).min(dim=1).values   # per new token
        worst = float(nearest.max()) / size if size > 0 else 0.0   # all-zero tokens: 0
        check.that(worst > BROKEN_MIN,
                   f"After a shift by ({dr}, {dc}) pixels, less than a patch, every output "
                   f"token is within {worst:.2g} (relative) of one of the unshifted image's "
                   "tokens, as if the shift had only reordered them: the tokens must depend on "
                   "the pixels inside each patch (a Conv2d with kernel = stride = patch).")
    _same_tokens(check, tokens, x)


@graded(1, "With an absolute position table the moved content meets different position "
           "vectors: the tokens are no longer a permutation of the original ones.",
        hint_for=("values",))
def test_positions_break_whole_patch_shift(check, learner, device):
    """A non-trivial position table (N(0, 1) entries): a one-patch shift no longer commutes."""
    model = _loaded(check, learner, device, num_patches=6, pos_embed=True)
    learner.apply(Recipe("set_pos_embed", {"table": _table(6, 6, 32)}), model.handle)
    x = _images(6, (2, 3, 16, 24), device)
    out = _tokens(check, model, x, 6, 32)
    moved = _tokens(check, model, _roll(x, 0, 8), 6, 32)
    err = _rel(moved, _permute(out, 2, 3, 0, 1))
    if err <= 1e-3:
        _fail_with(_positions_ignored, f"With a position table of N(0, 1) entries the tokens "
                   f"of the image shifted by one patch are still the permuted tokens of the "
                   f"original (relative error {err:.2g}).")
    check.that(err > BROKEN_MIN, f"With a position table of N(0, 1) entries, a one-patch "
               f"shift changes the tokens by only {err:.2g} of their scale: are the positions "
               "added to the patch tokens before the encoder?")
    _same_tokens(check, out, x, _table(6, 6, 32), num_patches=6, pos_embed=True)


@graded(1, "The table is added to the patch tokens before the encoder, so the encoder mixes it "
           "with the content: its effect on the output differs from image to image.",
        hint_for=("values",))
def test_positions_enter_before_encoder(check, learner, device):
    """Output with a table minus output with a zero table: not the table itself, image-dependent."""
    model = _loaded(check, learner, device, num_patches=6, pos_embed=True)
    table = _table(9, 6, 32)
    x = _images(9, (2, 3, 16, 24), device)
    learner.apply(Recipe("set_pos_embed", {"table": np.zeros_like(table)}), model.handle)
    base = _tokens(check, model, x, 6, 32)
    learner.apply(Recipe("set_pos_embed", {"table": table}), model.handle)
    out = _tokens(check, model, x, 6, 32)
    effect = out - base                                                 # (2, N_p, dim)
    if float(effect.abs().max()) <= 1e-3 * float(base.abs().max()):
        _fail_with(_positions_ignored, "Setting a position table of N(0, 1) entries does not "
                   "change the output.")
    table_t = torch.as_tensor(table, dtype=effect.dtype, device=effect.device)
    if max(_rel(effect[0], table_t), _rel(effect[1], table_t)) <= 1e-3:
        _fail_with(_positions_after, "The position table shifts every image's output tokens "
                   "by exactly the table.")
    spread = _rel(effect[0], effect[1])
    check.that(spread > BROKEN_MIN, f"The position table changes the outputs of two different "
               f"images almost alike (relative difference {spread:.2g}): is it added before "
               "the encoder layers?")
    _same_tokens(check, out, x, table, num_patches=6, pos_embed=True)


@graded(1, "Positions belong to slots: token r*W_p + c gets row r*W_p + c of the table. Move "
           "the table with the content and the symmetry comes back.",
        hint_for=("values",))
def test_positions_moved_with_content_restore_symmetry(check, learner, device):
    """Shift the image by (1, 1) patches and the table's rows by Π: tokens permuted by Π."""
    model = _loaded(check, learner, device, num_patches=6, pos_embed=True)
    table = _table(7, 6, 32)
    src = _perm_src(2, 3, 1, 1)
    x = _images(7, (2, 3, 16, 24), device)
    learner.apply(Recipe("set_pos_embed", {"table": table}), model.handle)
    out = _tokens(check, model, x, 6, 32)
    learner.apply(Recipe("set_pos_embed", {"table": table[src]}), model.handle)
    moved = _tokens(check, model, _roll(x, 8, 8), 6, 32)
    check.equal(moved, _permute(out, 2, 3, 1, 1), rtol=EQ_RTOL,
                atol=EQ_ATOL_REL * float(out.abs().max()),
                what="the tokens of the shifted image with the permuted table, against the "
                     "permuted tokens of the original")
    _same_tokens(check, out, x, table, num_patches=6, pos_embed=True)


@graded(1, "Use the Conv2d with kernel = stride = patch and flatten/transpose, not Python "
           "loops over patches.", timeout=30,
        hint_for=("timeout",))
def test_larger_batch(check, learner, reference, device):
    """A batch of 4 images of 64x96 (96 tokens each): shape and a (2, 3)-patch shift (timed)."""
    model = _loaded(check, learner, device)
    x = _images(8, (4, 3, 64, 96), device)
    out = _check_whole_patch_shift(check, model, x, 8, 12, 32, 8, 2, 3)
    learner_s = learner.last_call_seconds
    model.forward(x)                                 # best of two: warm-up not counted
    learner_s = min(learner_s, learner.last_call_seconds)
    ref = recipes.seeded_init_(reference.PatchViT(), SEED).to(device)
    ref_s = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        ref(x)
        if x.is_cuda:
            torch.cuda.synchronize()
        ref_s = min(ref_s, time.perf_counter() - started)
    check.note_runtime("PatchViT.forward", learner_s, ref_s)
    _same_tokens(check, out, x)
