"""attention_rollout through the real grader: reference, stub, and every known mistake."""

import pytest
from conftest import by_name, edit_source, reference_source

from grader import catalog

SLUG = "attention_rollout"
PRODUCT = "R = A_hat @ R"
RENORM = "A_hat /= A_hat.sum(axis=-1, keepdims=True)"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points
    timed = by_name(result)["vit_b16_sized_input"]
    assert any(n.startswith("runtime of attention_rollout") for n in timed.notes)


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0


@pytest.mark.parametrize("old, new, test, mistake", [
    (PRODUCT, "R = R @ A_hat", "order_of_layers", "first_layer_on_left"),
    ("A_hat = 0.5 * A.mean(axis=0) + 0.5 * np.eye(T)", "A_hat = A.mean(axis=0)",
     "three_layers_four_heads", "no_residual"),
    (RENORM, "pass", "rows_that_do_not_sum_to_one", "no_row_renormalisation"),
    ("A.mean(axis=0)", "A.max(axis=0)", "three_layers_four_heads", "max_over_heads"),
    ("return R[0, n_prefix:].reshape(H_p, W_p)", "return R[n_prefix:, 0].reshape(H_p, W_p)",
     "one_layer_one_head", "column_not_row"),
])
def test_known_mistakes_are_named(grade_src, old, new, test, mistake):
    src = reference_source(SLUG)
    assert old in src
    t = by_name(grade_src(SLUG, edit_source(src, (old, new))))[test]
    assert t.status == "failed"
    assert t.mistake == mistake
    assert t.mistake_message.startswith("Your output matches")


def test_missing_validation_fails_the_invalid_arguments_test(grade_src):
    src = edit_source(reference_source(SLUG), (
        '        raise ValueError("A_layers is empty', '        print("'))
    t = by_name(grade_src(SLUG, src))["invalid_arguments_raise"]
    assert t.status == "failed"
    assert "should raise ValueError, but it returned normally" in t.message
