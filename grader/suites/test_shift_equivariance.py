"""Hidden suite: shift_equivariance.

The ``f``s are real PyTorch modules built from trusted recipes
(``grader/sandbox/harness/recipes.py``): the learner receives ``Recipe(name, params)`` and the
worker builds the callable there; the expected value is the reference run here on the same
recipe, built in this process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grader.suite import Recipe, built, graded, mistake, probes, reference

F_ERR = "equivariance_error"
F_WHICH = "which_shifts_commute"
F_PERM = "patch_shift_permutation"

# The five maps of the seed's measurement (weights drawn from the seeds).
CONV1 = ("circular_conv", {"c_in": 3, "c_out": 8, "k": 3, "stride": 1, "seed": 1})
CONV2 = ("circular_conv", {"c_in": 3, "c_out": 8, "k": 3, "stride": 2, "seed": 2})
PATCH = ("patch_embed", {"c_in": 3, "dim": 32, "patch": 8, "seed": 3})
VIT = ("patch_transformer", {"c_in": 3, "dim": 32, "patch": 8, "depth": 2, "heads": 2,
                             "seed": 4})
VIT_POS = ("patch_transformer", {**VIT[1], "grid": (2, 3), "pos_std": 1.0})
ZERO = ("scale", {"factor": 0.0})

def _ref():
    return reference("shift_equivariance")


def _image(seed: int, shape: tuple[int, int, int] = (3, 16, 24)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def _call(check, func: str, spec: tuple[str, dict[str, Any]], *args: Any, timed: bool = False,
          **kwargs: Any) -> Any:
    """``check.call`` for a function whose first argument is an ``f``: the learner gets
    ``Recipe(*spec)`` (built in the worker); the reference and the known mistakes get the same
    recipe built here (by ``check``)."""
    return check.call(func, Recipe(*spec), *args, timed=timed, **kwargs)


# -- known mistakes ----------------------------------------------------------------------

@mistake(F_ERR, "not_normalised",
         "Your error matches the absolute error max|f(shifted x) - shifted f(x)| without the "
         "division by max|f(x)|. The error is relative, so that 1.0 means 'wrong by the size of "
         "the output itself' whatever the layer's scale.")
def _not_normalised(f, x, shift, stride=1):
    scale = float(np.abs(np.asarray(f(x))).max())
    return _ref().equivariance_error(f, x, shift, stride) * (scale if scale > 0 else 1.0)


@mistake(F_ERR, "output_shift_not_divided",
         "Your error matches comparing against the output rolled by the full input shift "
         "(dr, dc). A stride-s layer's output grid is s times coarser: when s divides the "
         "shift, the output moves by (dr/s, dc/s).")
def _not_divided(f, x, shift, stride=1):
    dr, dc = (0, shift) if np.ndim(shift) == 0 else tuple(shift)
    if dr % stride or dc % stride:
        return _ref().equivariance_error(f, x, shift, stride)
    base = np.asarray(f(x), dtype=np.float64)
    moved = np.asarray(f(np.roll(x, (dr, dc), axis=(1, 2))), dtype=np.float64)
    scale = float(np.abs(base).max()) or 1.0
    return float(np.abs(moved - np.roll(base, (dr, dc), axis=(1, 2))).max()) / scale


@mistake(F_ERR, "one_output_shift_tried",
         "Your error matches trying only the output shift (dr // stride, dc // stride) when the "
         "stride does not divide the shift. Then no output shift is the natural one: the error "
         "is the smallest over every output shift (u, v), so that a nonzero value proves that "
         "none works.")
def _one_shift(f, x, shift, stride=1):
    dr, dc = (0, shift) if np.ndim(shift) == 0 else tuple(shift)
    if dr % stride == 0 and dc % stride == 0:
        return _ref().equivariance_error(f, x, shift, stride)
    base = np.asarray(f(x), dtype=np.float64)
    moved = np.asarray(f(np.roll(x, (dr, dc), axis=(1, 2))), dtype=np.float64)
    scale = float(np.abs(base).max()) or 1.0
    expect = np.roll(base, (dr // stride, dc // stride), axis=(1, 2))
    return float(np.abs(moved - expect).max()) / scale


@mistake(F_ERR, "vertical_int_shift",
         "Your error matches shifting the rows (axis 1, H) when shift is a single int. A single "
         "int is a horizontal shift: along W, the last axis, i.e. (0, shift).")
def _vertical(f, x, shift, stride=1):
    if np.ndim(shift) != 0:
        return _ref().equivariance_error(f, x, shift, stride)
    return _ref().equivariance_error(f, x, (int(shift), 0), stride)


# Small maps for the probes: a stride-2 circular conv and a patch embedding of patch 4, on a
# 2x8x12 image (non-square, wider than any shift tried).
_SMALL_CONV2 = Recipe("circular_conv", {"c_in": 2, "c_out": 3, "k": 3, "stride": 2, "seed": 60})
_SMALL_PATCH = Recipe("patch_embed", {"c_in": 2, "dim": 3, "patch": 4, "seed": 61})
_PROBE_X = np.random.default_rng(62).standard_normal((2, 8, 12))

# A matched mistake must match again on these: a pair shift the stride divides (the output
# moves by half of it), a pair shift it does not (every output shift tried), and int shifts of
# a map that does not commute with them (horizontal, not vertical; and the division by
# max|f(x)|). Pairs where the int convention does not show, ints where the stride divides both
# (0, d) and (d, 0): a learner who makes two mistakes at once still matches each.
ERR_PROBES = probes(F_ERR, (_SMALL_CONV2, _PROBE_X, (2, 4), 2),
                    (_SMALL_CONV2, _PROBE_X, (1, 3), 2),
                    (_SMALL_PATCH, _PROBE_X, 2, 1),
                    (_SMALL_PATCH, _PROBE_X, 4, 2))


@mistake(F_WHICH, "stride_ignored",
         "Your list matches testing every shift with stride=1, i.e. expecting the output to move "
         "by the full shift. Pass the stride on: a stride-s layer is checked against the output "
         "moved by d/s.")
def _stride_ignored(f, x, stride=1, tol=1e-8):
    return _ref().which_shifts_commute(f, x, 1, tol)


@mistake(F_WHICH, "shift_W_included",
         "Your list matches shifts 0..W inclusive. A shift by W is the identity (it equals the "
         "shift by 0): the shifts to test are d = 0, 1, ..., W-1.")
def _includes_w(f, x, stride=1, tol=1e-8):
    ref = _ref()
    return [d for d in range(np.shape(x)[2] + 1)
            if ref.equivariance_error(f, x, d, stride) <= tol]


# A matched mistake must match again on this: a stride-2 conv on a 12-pixel-wide image, taken
# with its stride (the even shifts, and 12 with shift_W_included; not 0 alone).
WHICH_PROBES = probes(F_WHICH, (_SMALL_CONV2, _PROBE_X, 2))


@mistake(F_PERM, "transposed",
         "Your matrix is the transpose of the expected one: it has Π[old, new] = 1, which moves "
         "the tokens the opposite way. Row index = where a token goes, column index = where it "
         "came from, so that Π @ tokens reorders the tokens.", slip="transposed")
def _transposed(H_p, W_p, dr, dc):
    return _ref().patch_shift_permutation(H_p, W_p, dr, dc).T.copy()


@mistake(F_PERM, "column_major_cells",
         "Your matrix numbers the grid cells column by column (index c*H_p + r). Tokens are in "
         "raster order: cell (r, c) is token r*W_p + c.")
def _column_major(H_p, W_p, dr, dc):
    old = np.arange(H_p * W_p)
    c, r = old // H_p, old % H_p
    new = ((c + dc) % W_p) * H_p + (r + dr) % H_p
    perm = np.zeros((H_p * W_p, H_p * W_p), dtype=np.int64)
    perm[new, old] = 1
    return perm


# A matched mistake must match again on these: non-square grids (3x4, 4x3) and shifts along
# both axes, by more than one cell.
PERM_PROBES = probes(F_PERM, (3, 4, 1, 2), (4, 3, 2, -1))


# -- equivariance_error ------------------------------------------------------------------

@graded(1, "A circular stride-1 convolution applies the same kernel at every pixel: what "
           "happens to its output when the input moves by d pixels?", visibility="public",
        hint_for=("values",))
def test_stride1_conv_commutes(check, learner):
    """A circular stride-1 Conv2d, horizontal shift by 5: error 0; a patch embedding, whose
    output does not move by 5 cells, at the same shift: not 0."""
    _call(check, F_ERR, CONV1, _image(10), 5)
    _call(check, F_ERR, PATCH, _image(10), 5)


@graded(1, "A stride-2 layer keeps every second output. When the input moves by an even "
           "number of pixels, by how many cells does the output move?",
        hint_for=("values",))
def test_stride2_even_shift(check, learner):
    """A circular stride-2 Conv2d, shift by 4 with stride=2: error 0; with stride=1 (the output
    compared with a move by 4 cells, not 2): not 0."""
    _call(check, F_ERR, CONV2, _image(11), 4, stride=2)
    _call(check, F_ERR, CONV2, _image(11), 4)


@graded(1, "At an odd shift no output shift fits. The error is relative: divide by "
           "max|f(x)|.",
        hint_for=("values",))
def test_stride2_odd_shift(check, learner):
    """A circular stride-2 Conv2d, shift by 3: no output shift works (the seed measured 1.12)."""
    _call(check, F_ERR, CONV2, _image(11), 3, stride=2)


@graded(1, "A shift can be a pair (dr, dc), negative entries included: np.roll handles both "
           "axes at once.",
        hint_for=("values", "raised", "type"))
def test_pair_shifts(check, learner):
    """Stride-2 Conv2d: shift (2, -4) commutes, shift (-1, 2) does not."""
    x = _image(12, (3, 12, 20))
    _call(check, F_ERR, CONV2, x, (2, -4), stride=2)
    _call(check, F_ERR, CONV2, x, (-1, 2), stride=2)


@graded(1, "When the stride does not divide the shift, try every output shift (u, v) and keep "
           "the smallest error.",
        hint_for=("values",))
def test_patch_embedding_sub_patch_shift(check, learner):
    """Patch embedding (P = 8), shift by 7 pixels with stride=8: the best output shift."""
    _call(check, F_ERR, PATCH, _image(13), 7, stride=8)


@graded(1, "A patch embedding is a convolution with kernel = stride = P: a shift by a whole "
           "patch moves the output by one grid cell.",
        hint_for=("values",))
def test_patch_embedding_whole_patch_shifts(check, learner):
    """Patch embedding: shifts by 8 and (8, -16) pixels commute; a 2-D sub-patch one does not."""
    x = _image(14)
    _call(check, F_ERR, PATCH, x, 8, stride=8)
    _call(check, F_ERR, PATCH, x, (8, -16), stride=8)
    _call(check, F_ERR, PATCH, x, (4, 12), stride=8)


@graded(1, "With an absolute position table the moved content meets different positions: the "
           "error at a whole-patch shift is measured like any other.",
        hint_for=("values",))
def test_positions_break_whole_patch_shift(check, learner):
    """Patch embedding + 2 pre-LN encoder layers + a position table: shift 8 no longer commutes."""
    x = _image(15)
    _call(check, F_ERR, VIT_POS, x, 8, stride=8)
    _call(check, F_ERR, VIT_POS, x, (8, 0), stride=8)


@graded(1, "Without positions the encoder is permutation equivariant, so the whole-patch shift "
           "survives the two layers.",
        hint_for=("values",))
def test_transformer_without_positions(check, learner):
    """Patch embedding + 2 pre-LN encoder layers, no positions: shifts 16 and (8, 8); a
    sub-patch shift (0, 4) does not commute."""
    x = _image(16)
    _call(check, F_ERR, VIT, x, 16, stride=8)
    _call(check, F_ERR, VIT, x, (8, 8), stride=8)
    _call(check, F_ERR, VIT, x, (0, 4), stride=8)


@graded(1, "If f(x) is all zeros, max|f(x)| is 0: the contract says to divide by 1 then, never "
           "by 0.",
        hint_for=("nan", "inf", "raised"))
def test_zero_output_denominator(check, learner):
    """f = 0 (all-zero output): the denominator is 1, the error 0 (not NaN); f = 1e-6 * x, a
    small output that is not zero, at a shift its stride does not fit: divided by its max."""
    _call(check, F_ERR, ZERO, _image(17), 3)
    _call(check, F_ERR, ZERO, _image(17), (1, 2), stride=2)
    _call(check, F_ERR, ("scale", {"factor": 1e-6}), _image(17), (0, 2), stride=2)


@graded(1, "Validate the arguments and raise ValueError: stride >= 1, x of shape (C, H, W), "
           "shift an int or a pair.",
        hint_for=("not_raised", "wrong_exception"))
def test_invalid_arguments_raise(check):
    """stride 0, a 2-D x and a 3-entry shift raise ValueError; valid ones give the right
    error."""
    x = _image(18)
    check.raises("ValueError", F_ERR, Recipe(*ZERO), x, 1, stride=0)
    check.raises("ValueError", F_ERR, Recipe(*ZERO), x[0], 1)
    check.raises("ValueError", F_ERR, Recipe(*ZERO), x, (1, 2, 3))
    _call(check, F_ERR, CONV2, x, (2, 1), stride=2)


@graded(1, "Try the output shifts all at once (fancy indexing or a loop over one axis only), "
           "not pixel by pixel in Python.", timeout=30,
        hint_for=("timeout",))
def test_large_map_all_output_shifts(check, learner):
    """Stride-2 Conv2d on a 48x64 image, shift (1, 3): 768 candidate output shifts (timed)."""
    x = _image(19, (3, 48, 64))
    _call(check, F_ERR, CONV2, x, (1, 3), stride=2, timed=True)


# -- which_shifts_commute ----------------------------------------------------------------

@graded(1, "Test every horizontal shift d = 0, ..., W-1 and keep those with error <= tol.",
        visibility="public",
        hint_for=("values", "shape"))
def test_which_shifts_stride1_conv(check, learner):
    """A circular stride-1 Conv2d commutes with every shift; a patch embedding (taken as
    stride 1) with shift 0 only."""
    _call(check, F_WHICH, CONV1, _image(20))
    _call(check, F_WHICH, PATCH, _image(20))


@graded(1, "Pass the stride on to equivariance_error: a stride-2 layer commutes at even shifts "
           "only.",
        hint_for=("values", "shape"))
def test_which_shifts_stride2_conv(check, learner):
    """A circular stride-2 Conv2d: the even shifts, on images 24 and 10 pixels wide; a
    stride-1 Conv2d taken as stride 2: not the even ones."""
    _call(check, F_WHICH, CONV2, _image(21), stride=2)
    _call(check, F_WHICH, CONV2, _image(25, (3, 6, 10)), stride=2)
    _call(check, F_WHICH, CONV1, _image(21), stride=2)


@graded(1, "The patch embedding's output grid is P times coarser than the image.",
        hint_for=("values", "shape"))
def test_which_shifts_patch_embedding(check, learner):
    """Patch embedding (P = 8) on a 24-pixel-wide image: 0, 8 and 16; taken as stride 4, not
    every fourth shift, unless the tolerance exceeds every error (tol = 1e6)."""
    _call(check, F_WHICH, PATCH, _image(22), stride=8)
    _call(check, F_WHICH, PATCH, _image(22), stride=4)
    _call(check, F_WHICH, PATCH, _image(22), stride=4, tol=1e6)


@graded(1, "A Transformer without positions keeps the patch embedding's whole-patch symmetry; "
           "an absolute position table removes it.",
        hint_for=("values", "shape"))
def test_which_shifts_transformer(check, learner):
    """Encoder without positions: 0, 8, 16; with an absolute position table: 0 only."""
    x = _image(23)
    _call(check, F_WHICH, VIT, x, stride=8)
    _call(check, F_WHICH, VIT_POS, x, stride=8)


# -- patch_shift_permutation -------------------------------------------------------------

@graded(1, "Π[new, old] = 1: the row is the slot a token moves to, the column the slot it came "
           "from.", visibility="public",
        hint_for=("values",))
def test_permutation_2x2(check):
    """The seed's example: a 2x2 grid shifted right by one patch gives (t1, t0, t3, t2)."""
    check.call(F_PERM, 2, 2, 0, 1)


@graded(1, "Cell (r, c) is token r*W_p + c; on a non-square grid rows and columns differ.",
        hint_for=("values", "shape", "raised"))
def test_permutation_non_square(check):
    """A 2x3 grid shifted by one column, and a 3x4 grid shifted by (1, -1)."""
    check.call(F_PERM, 2, 3, 0, 1)
    check.call(F_PERM, 3, 4, 1, -1)


@graded(1, "Shifts wrap around: take them modulo the grid size.",
        hint_for=("values", "raised"))
def test_permutation_wraps(check):
    """Shifts larger than the grid, and the 1x1 grid."""
    check.call(F_PERM, 2, 3, 5, -7)
    check.call(F_PERM, 1, 1, 3, 2)


@graded(1, "Check the definition: the patch embedding of the shifted image is Π @ the tokens "
           "of the original image.",
        hint_for=("values",))
def test_permutation_moves_patch_tokens(check, learner):
    """Π @ PE(x) equals PE(roll(x, (dr*8, dc*8))) for a real patch embedding (tokens in rows)."""
    x = _image(24, (3, 24, 32))
    pe = built(Recipe(*PATCH))
    for dr, dc in [(0, 1), (2, -1), (1, 3)]:
        perm = check.array(learner.patch_shift_permutation(3, 4, dr, dc),
                           f"patch_shift_permutation(3, 4, {dr}, {dc})")
        tokens = pe(x).reshape(32, -1).T                     # (N_p, d), raster order
        moved = pe(np.roll(x, (8 * dr, 8 * dc), axis=(1, 2))).reshape(32, -1).T
        check.that(perm.shape == (12, 12), f"patch_shift_permutation(3, 4, {dr}, {dc}) should "
                   f"have shape (12, 12), got {perm.shape}", kind="shape")
        check.equal(perm @ tokens, moved, rtol=1e-9, atol=1e-12,
                    what=f"Π @ tokens for the shift ({dr}, {dc}) patches")


@graded(1, "Validate the grid size and raise ValueError.",
        hint_for=("not_raised", "wrong_exception"))
def test_permutation_invalid(check):
    """An empty grid raises ValueError; a 1x3 grid gives the right permutation."""
    check.raises("ValueError", F_PERM, 0, 3, 0, 1)
    check.raises("ValueError", F_PERM, 2, 0, 0, 1)
    check.call(F_PERM, 1, 3, 0, 1)


@graded(1, "Compute every token's new index at once (arrays of rows and columns), then set the "
           "ones with one fancy-indexed assignment.",
        hint_for=("timeout",))
def test_permutation_large_grid(check):
    """A 32x32 grid (1024 tokens), shift (3, -5) (timed)."""
    check.call(F_PERM, 32, 32, 3, -5, timed=True)
