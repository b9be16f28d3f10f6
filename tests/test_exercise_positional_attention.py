"""positional_attention through the real grader: reference, stub, and wrong trainings that
fail with a useful message (its known mistakes are declared in
solutions/positional_attention.variants.toml, checked by `grade pack check --grade`).

Grading the reference runs the two full training tests (about 2.5 s each). Sources that need
only the short tests make the long runs raise at once.
"""

import importlib.util

import numpy as np
import pytest
from conftest import by_name, declared, edit_source, reference_source

from grader import catalog

SLUG = "positional_attention"


def _one_long_run(src: str) -> str:
    """Training that raises on the 12-patch layout, so only one long run is graded."""
    old = "    return _train(X, y, int(steps), float(lr), seed)"
    assert old in src
    return edit_source(src, (old, "    if X.shape[1] == 12:\n        raise NotImplementedError\n"
                             + old))


def _no_long_runs(src: str) -> str:
    """Training that still runs short (the exact 50-step test) but raises on the long runs."""
    old = "    return _train(X, y, int(steps), float(lr), seed)"
    assert old in src
    return edit_source(src, (old, "    if steps > 100:\n        raise NotImplementedError\n" + old))


def _edit(old: str, new: str) -> str:
    src = reference_source(SLUG)
    assert old in src, old
    return edit_source(src, (old, new))


def _reference_module():
    spec = importlib.util.spec_from_file_location("_pa_ref", catalog.get(SLUG).solution)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed", [(t.name, t.message) for t in result.tests]
    assert result.score == result.max_score == 24
    assert result.max_score == catalog.get(SLUG).points


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0
    assert all(t.status != "passed" for t in result.tests)


def test_hand_made_association_values():
    """The hand-computed answers quoted in the suite, and the chance levels of the statement."""
    ref = _reference_module()
    A = np.array([[0.50, 0.10, 0.20, 0.15, 0.05],
                  [0.30, 0.20, 0.25, 0.10, 0.15],
                  [0.10, 0.30, 0.30, 0.20, 0.10],
                  [0.40, 0.10, 0.10, 0.30, 0.10],
                  [0.20, 0.20, 0.20, 0.20, 0.20]])
    groups = [[0, 3], [1, 2, 4]]
    assert ref.patch_association(A, groups) == pytest.approx((0.5 + 2 / 3 + 2 / 3 + 1 + 0.6) / 5)
    assert ref.patch_association(A, groups, exclude_self=True) == pytest.approx(0.5)
    layout = [[0, 1, 2], [3, 4], [5, 6, 7], [8, 9]]
    assert ref.patch_association(np.ones((10, 10)), layout) == pytest.approx(0.26)
    assert ref.patch_association(np.ones((10, 10)), layout, True) == pytest.approx(16 / 90)
    assert ref.patch_association(3 * np.eye(10), layout) == pytest.approx(
        (6 * (1 + 4 / 9) / 3 + 4 * (1 + 1 / 9) / 2) / 10)


def test_ties_broken_by_position_spares_rows_without_ties(grade_src):
    """A top-s by argsort is named where rows tie (grade pack check); without ties it is right."""
    src = declared(SLUG, "ties_broken_by_position")
    assert by_name(grade_src(SLUG, src))["association_random_logits"].status == "passed"


SOFTMAX_BACKWARD = ("            Q = Q - lr * A * (gA - (A * gA).sum(axis=1, keepdims=True))"
                    "   # softmax backward")


def test_training_without_the_linear_term_fails_with_a_useful_message(grade_src):
    src = _edit("G = g[:, None] * (POWER * H ** (POWER - 1) + LINEAR)",
                "G = g[:, None] * (POWER * H ** (POWER - 1))")
    tests = by_name(grade_src(SLUG, _one_long_run(src)))
    t = tests["training_learns_the_groups"]
    assert t.status == "failed"
    assert "v has barely moved" in t.message and "linear term" in t.message
    assert tests["forward_small"].status == "passed"


def test_frozen_attention_fails_on_association(grade_src):
    src = _one_long_run(_edit(SOFTMAX_BACKWARD, "            pass"))
    t = by_name(grade_src(SLUG, src))["training_learns_the_groups"]
    assert t.status == "failed"
    assert "did not learn the groups" in t.message and "chance" in t.message, t.message


def test_diverging_training_fails_with_a_useful_message(grade_src):
    src = _edit("g = -y * np.exp(-np.logaddexp(0.0, margin)) / N",
                "g = -y * np.exp(-np.logaddexp(0.0, margin))")
    t = by_name(grade_src(SLUG, _no_long_runs(src)))["training_first_steps_exact"]
    assert t.status == "failed"
    assert "diverged" in t.message and "mean loss" in t.message


def test_unchecked_arguments_fail(grade_src):
    src = _edit("    if not lr > 0:\n", "    if False:\n")
    tests = by_name(grade_src(SLUG, _no_long_runs(src)))
    assert tests["training_invalid"].status == "failed"
    assert "should raise ValueError" in tests["training_invalid"].message
    assert tests["training_first_steps_exact"].status == "passed"
