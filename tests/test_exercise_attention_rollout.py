"""attention_rollout through the real grader: reference, stub, and what a learner reads of a
named mistake (every declared mistake is checked by ``grade pack check --grade``)."""

from conftest import by_name, edit_source, reference_source

from grader import catalog

SLUG = "attention_rollout"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points
    timed = by_name(result)["vit_b16_sized_input"]
    assert any(n.startswith("runtime of attention_rollout") for n in timed.notes)


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0


def test_missing_validation_fails_the_invalid_arguments_test(grade_src):
    src = edit_source(reference_source(SLUG), (
        '        raise ValueError("A_layers is empty', '        print("'))
    t = by_name(grade_src(SLUG, src))["invalid_arguments_raise"]
    assert t.status == "failed"
    assert "should raise ValueError, but it returned normally" in t.message
