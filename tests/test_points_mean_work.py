"""Points mean work: no points for raising on every call, for a model that only keeps the
symmetries, or for keeping a source rule: a point is earned by work the exercise asks for.

Each case is graded through the real grader (a worker runs the file, the hidden suites
decide), as a learner's file would be."""

from __future__ import annotations

import importlib
import inspect
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import by_name, edit_source, reference_source

from grader import catalog
from grader.engine import verdict
from grader.engine.runner import grade
from grader.judge.check import Check, unrelated_exceptions
from grader.results import ExerciseResult
from grader.sandbox import faults

# One exception class that every "except" would take.
EVERYTHING = ("class Everything(ValueError, TypeError, KeyError, IndexError, ArithmeticError):\n"
              "    pass\n")
RAISING = ("grid_local_mask", "shape_bias", "compute_frontier", "inductive_bias_toy",
           "shift_equivariance", "mean_attention_distance")


def _grade(tmp_path: Path, sources: dict[str, str]) -> dict[str, ExerciseResult]:
    """Grade several learner files in one run; the results by exercise."""
    files = {}
    for slug, src in sources.items():
        files[slug] = tmp_path / f"{slug}.py"
        files[slug].write_text(textwrap.dedent(src))
    return {e.exercise: e for e in grade(files, submission="test", device="cpu").exercises}


def _raises_tests(slug: str) -> list[str]:
    """The suite's tests that use ``check.raises``, by result name."""
    suite = importlib.import_module(f"grader.suites.test_{slug}")
    return [name.removeprefix("test_") for name, fn in vars(suite).items()
            if name.startswith("test_") and callable(fn)
            and "check.raises(" in inspect.getsource(fn)]


def _raise_everywhere(slug: str) -> str:
    """A file whose every function (or class) raises ``Everything``."""
    body = [EVERYTHING]
    for name in catalog.get(slug).functions:
        if name[0].isupper():
            body.append(f"class {name}:\n    def __init__(self, *args, **kwargs):\n"
                        f"        raise Everything('no')\n")
        else:
            body.append(f"def {name}(*args, **kwargs):\n    raise Everything('no')\n")
    return "\n\n".join(body)


# -- (a) raising for everything ----------------------------------------------------------------

def test_every_raises_test_also_checks_a_right_value():
    """Each suite's "raises" tests try valid arguments too (the engine also turns a passing test
    without them into a grader error, see test_raises_without_a_valid_call_is_a_suite_error)."""
    found = {slug: _raises_tests(slug) for slug in catalog.load()}
    assert sum(map(len, found.values())) >= 14
    for slug, names in found.items():
        suite = importlib.import_module(f"grader.suites.test_{slug}")
        for name in names:
            src = inspect.getsource(getattr(suite, f"test_{name}"))
            assert "check.call(" in src or "_call(" in src or "_check_same_tokens(" in src, name


def test_raising_a_catch_all_exception_everywhere_scores_nothing(tmp_path):
    results = _grade(tmp_path, {slug: _raise_everywhere(slug)
                                for slug in (*RAISING, "patch_vit")})
    for slug, result in results.items():
        assert result.score == 0, (slug, [(t.name, t.score) for t in result.tests if t.score])
        tests = by_name(result)
        names = _raises_tests(slug)
        assert names, slug
        for name in names:
            assert tests[name].status in ("error", "failed"), (slug, name)
            assert tests[name].score == 0


def test_a_catch_all_exception_is_not_the_one_the_statement_names(tmp_path):
    """Right values, but invalid arguments raise a class that is also TypeError, KeyError, ...:
    the raises tests fail and say why; a plain subclass of ValueError passes."""
    slug = "grid_local_mask"
    assert reference_source(slug).count("raise ValueError(") == 3  # each raise is replaced
    catch_all = (reference_source(slug).replace("raise ValueError(", "raise Everything(")
                 + "\n\n" + EVERYTHING)
    subclass = (reference_source(slug).replace("raise ValueError(", "raise MaskError(")
                + "\n\nclass MaskError(ValueError):\n    pass\n")
    wrong = by_name(_grade(tmp_path, {slug: catch_all})[slug])["invalid_arguments_raise"]
    assert wrong.status == "failed" and wrong.kind == "wrong_exception"
    assert ("should raise ValueError, but it raised Everything: " in wrong.message)
    assert ("(Everything also derives from TypeError, KeyError, IndexError and ArithmeticError:"
            " raise ValueError itself, or a subclass of ValueError alone)") in wrong.message
    (tmp_path / "sub").mkdir()
    fine = _grade(tmp_path / "sub", {slug: subclass})[slug]
    assert fine.score == fine.max_score, [(t.name, t.message) for t in fine.tests]


def _raised(cls: type[BaseException]) -> faults.LearnerRaised:
    """What the worker reports for an instance of ``cls`` (its built-in bases by name)."""
    mro = [c.__name__ for c in cls.__mro__ if c.__module__ == "builtins"]
    return faults.LearnerRaised(cls.__name__, mro, "boom")


def test_which_classes_count_as_the_named_one():
    class Plain(ValueError):
        pass

    class CatchAll(ValueError, TypeError, KeyError, IndexError):
        pass

    class Looked(LookupError, ValueError):
        pass

    assert unrelated_exceptions(_raised(ValueError), "ValueError") == []
    assert unrelated_exceptions(_raised(Plain), "ValueError") == []
    assert unrelated_exceptions(_raised(UnicodeDecodeError), "ValueError") == []
    assert unrelated_exceptions(_raised(CatchAll), "ValueError") == [
        "TypeError", "KeyError", "IndexError"]          # LookupError: a base of both
    assert unrelated_exceptions(_raised(Looked), "ValueError") == ["LookupError"]
    assert unrelated_exceptions(_raised(CatchAll), "LookupError") == ["ValueError", "TypeError"]
    np = pytest.importorskip("numpy")
    assert unrelated_exceptions(_raised(np.exceptions.AxisError), "ValueError") == ["IndexError"]


class _Raising:
    """A stand-in for the learner proxy: every call raises a plain ValueError."""

    def __getattr__(self, name):
        def call(*args, **kwargs):
            raise faults.LearnerRaised("ValueError", ["ValueError", "Exception", "BaseException",
                                                      "object"], "no")
        return call


class _Item:
    """Just enough of a pytest item for ``verdict.decide``."""

    name, path = "test_only_invalid", Path("grader/suites/test_some_exercise.py")

    def __init__(self) -> None:
        self.config = SimpleNamespace(stash={})
        self.stash: dict = {}  # (where verdicts keep what an item says of itself)
        self.function = lambda: None

    def get_closest_marker(self, name):
        return SimpleNamespace(kwargs={"points": 1.0, "hint": "", "visibility": "hidden"})


def test_raises_without_a_valid_call_is_a_suite_error():
    check = Check(_Raising(), None, [], 1e-6, 1e-9)
    check.raises("ValueError", "f", 1)
    check.raises("ValueError", "g", 2)
    assert check.unconfirmed() == ["f", "g"]
    check.equal(1.0, 1.0, confirms="g")
    assert check.unconfirmed() == ["f"]
    result = verdict.decide(_Item(), None, 0.0, None, check)
    assert result.status == "error" and result.score == 0
    assert result.message == ("grader error (not your fault): SuiteError: check.raises on f "
                              "without a passing check.call of it in the same test")
    check.equal(2.0, 2.0, confirms="f")
    assert verdict.decide(_Item(), None, 0.0, None, check).status == "passed"


# -- (b) a model that keeps the symmetries without being a ViT --------------------------------

PADDED_FAKE = '''
import torch
from torch import nn


class PatchViT(nn.Module):
    """Patch embedding + one per-token MLP + a padding parameter: the documented count."""

    def __init__(self, in_chans=3, patch=8, dim=32, depth=2, heads=2, num_patches=None,
                 pos_embed=False):
        super().__init__()
        if pos_embed and num_patches is None:
            raise ValueError("pos_embed=True needs num_patches")
        self.patch_embed = nn.Conv2d(in_chans, dim, kernel_size=patch, stride=patch)
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, dim)) if pos_embed else None
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        used = 8 * dim * dim + 5 * dim
        self.padding = nn.Parameter(torch.zeros(depth * (12 * dim * dim + 13 * dim) - used))

    def forward(self, x):
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)
        if self.pos_embed is not None:
            tokens = tokens + self.pos_embed
        return tokens + self.mlp(tokens)
'''

# The documented names and shapes (so the weights load), but each layer's MLP alone.
NAMED_FAKE = edit_source(reference_source("patch_vit"), (
    "        return self.encoder(tokens)",
    "        for layer in self.encoder.layers:\n"
    "            tokens = tokens + layer.linear2(nn.functional.gelu(layer.linear1(tokens)))\n"
    "        return tokens"))

COMPARED = ("same_tokens_as_reference", "same_tokens_as_reference_with_positions",
            "whole_patch_shift_permutes_tokens", "whole_patch_shift_tall_grid",
            "sub_patch_shift_matches_no_permutation", "positions_break_whole_patch_shift",
            "positions_enter_before_encoder", "positions_moved_with_content_restore_symmetry",
            "larger_batch", "positions_need_num_patches")


def test_a_vit_without_attention_or_layernorm_fails_on_the_reference_weights(tmp_path):
    padded = _grade(tmp_path, {"patch_vit": PADDED_FAKE})["patch_vit"]
    tests = by_name(padded)
    assert padded.score <= 1, [(t.name, t.score) for t in padded.tests if t.score]
    for name in (*COMPARED, "parameter_count", "parameter_count_with_positions"):
        assert tests[name].status == "failed", name
        assert "The reference's weights do not load into your PatchViT" in tests[name].message
    message = tests["same_tokens_as_reference"].message
    assert "missing: encoder.layers.0.self_attn.in_proj_weight (96, 32)" in message
    assert "unexpected: padding (" in message and "mlp.0.weight (128, 32)" in message

    (tmp_path / "named").mkdir()
    named = _grade(tmp_path / "named", {"patch_vit": NAMED_FAKE})["patch_vit"]
    tests = by_name(named)
    assert named.score <= 3, [(t.name, t.score) for t in named.tests if t.score]
    for name in COMPARED:
        assert tests[name].status == "failed", name
        assert tests[name].score == 0
        assert ("your tokens with the reference's weights, against the reference's"
                in tests[name].message), (name, tests[name].message)


# -- (c) source rules earn nothing --------------------------------------------------------------

CONV, ROLLOUT = "conv_via_attention", "attention_rollout"


def test_rules_are_worth_no_points():
    for slug in (CONV, ROLLOUT):
        suite = importlib.import_module(f"grader.suites.test_{slug}")
        rules = [fn for name, fn in vars(suite).items() if hasattr(fn, "__source_rule__")]
        assert rules, slug
        for fn in rules:
            assert fn.pytestmark[0].kwargs["points"] == 0, slug


def test_keeping_a_rule_earns_nothing_and_breaking_it_fails(tmp_path):
    compliant = ("import numpy as np\n\n\n"
                 "def conv_via_attention(X, W_conv, alpha):\n"
                 "    return np.zeros(np.shape(X)[:-1] + (np.shape(W_conv)[0],))\n\n\n"
                 "def rho(alpha):\n    return 0.0\n")
    # the reference, with an FFT reached in a way no reader of the source follows
    hidden = reference_source(CONV) + ("\n\ndef _spectrum(x):\n"
                                       "    return getattr(np, 'f' + 'ft').rfft(x)\n")
    broken = reference_source(ROLLOUT) + ("\n\ndef _library():\n"
                                          "    import json\n    return json\n")
    results = _grade(tmp_path, {CONV: compliant, ROLLOUT: broken})
    conv = results[CONV]
    rule = by_name(conv)["rule_no_convolution_routine"]
    assert rule.passed and rule.score == rule.max_score == 0
    assert conv.score == 0, [(t.name, t.score) for t in conv.tests if t.score]

    rollout = results[ROLLOUT]
    rule = by_name(rollout)["rule_no_library_rollout"]
    assert rule.status == "failed" and rule.kind == "rule" and rule.max_score == 0
    assert rule.message.startswith("attention_rollout must compute the rollout itself: import "
                                   "only numpy and math")
    assert "imports json" in rule.message
    assert rollout.score == rollout.max_score == catalog.get(ROLLOUT).points
    assert rollout.status != "passed"

    (tmp_path / "hidden").mkdir()
    conv = _grade(tmp_path / "hidden", {CONV: hidden})[CONV]
    assert by_name(conv)["rule_no_convolution_routine"].passed      # not caught: no points
    assert conv.max_score == catalog.get(CONV).points == 16


# -- (d) trivial answers ----------------------------------------------------------------------

SQUARE_GRID = edit_source(reference_source("mean_attention_distance"), (
    "rows, cols = idx // W_p, idx % W_p",
    "w = round(np.sqrt(H_p * W_p))  # assumes a square grid\n    rows, cols = idx // w, idx % w"))
FIXED_TRAINING = edit_source(reference_source("positional_attention"), (
    "    return _train(X, y, int(steps), float(lr), seed)",
    "    return 3.0 * np.eye(X.shape[1]), np.zeros(X.shape[2])"))

FIXED_KERNEL = edit_source(reference_source("inductive_bias_toy"), (
    "    return np.linalg.lstsq(A, Y.reshape(-1), rcond=None)[0]",
    "    return np.array([1.0, 0.0, -1.0])"))

NO_MEASURING = reference_source("shift_equivariance") + (
    "\n\ndef equivariance_error(f, x, shift, stride=1):\n    return 0.0\n"
    "\n\ndef which_shifts_commute(f, x, stride=1, tol=1e-8):\n"
    "    return list(range(0, np.shape(x)[2], stride))\n")

PLAIN_XCORR = reference_source("conv_via_attention") + (
    "\n\ndef conv_via_attention(X, W_conv, alpha):  # np.roll, alpha ignored\n"
    "    X, W_conv = np.asarray(X, float), np.asarray(W_conv, float)\n"
    "    k = W_conv.shape[2]\n"
    "    if X.ndim == 2:\n"
    "        return sum(np.roll(X, k // 2 - u, axis=0) @ W_conv[:, :, u].T for u in range(k))\n"
    "    return sum(np.roll(X, (k // 2 - u, k // 2 - v), axis=(0, 1)) @ W_conv[:, :, u, v].T\n"
    "               for u in range(k) for v in range(k))\n")

ZERO_TOKENS = edit_source(reference_source("patch_vit"), (
    "        return self.encoder(tokens)", "        return torch.zeros_like(tokens)"))
PATCH_VIT_FORMAT = {"output_shape_and_device", "parameter_count",
                    "parameter_count_with_positions"}  # "format only" in the statement


def test_tokens_of_zeros_earn_only_the_format_points(grade_src):
    result = grade_src("patch_vit", ZERO_TOKENS)
    assert {t.name for t in result.tests if t.score} == PATCH_VIT_FORMAT
    assert result.score == 3


@pytest.mark.parametrize("slug, src, tests", [
    ("mean_attention_distance", SQUARE_GRID, ""),
    ("positional_attention", FIXED_TRAINING, "training_"),
    ("inductive_bias_toy", FIXED_KERNEL, "measured_errors"),
    ("shift_equivariance", NO_MEASURING, ("stride", "pair", "patch_embedding", "positions",
                                          "transformer", "zero", "invalid", "large_map",
                                          "which")),
    ("conv_via_attention", PLAIN_XCORR, ("one", "two", "seed", "error", "blurry", "alpha",
                                         "smallest", "large", "invalid")),
], ids=["mean_attention_distance_square_grid", "positional_attention_untrained_init",
        "inductive_bias_toy_fixed_kernel", "shift_equivariance_nothing_measured",
        "conv_via_attention_alpha_ignored"])
def test_trivial_answers_score_nothing(grade_src, slug, src, tests):
    """A trivial answer (or a trivial function in an otherwise right file) earns nothing in
    the tests (named ``tests...``) of what it stands for."""
    scored = [(t.name, t.score) for t in grade_src(slug, src).tests
              if t.name.startswith(tests) and t.score]
    assert scored == []
