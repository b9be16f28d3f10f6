"""shape_bias through the real grader: reference, stub, what a learner reads of a named mistake
(every declared mistake is checked by ``grade pack check --grade``), wrong answers."""

from conftest import by_name, edit_source, grade_file, reference_source

from grader import catalog

SLUG = "shape_bias"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points == 9


def test_stub_scores_zero():
    result = grade_file(SLUG, catalog.get(SLUG).stub)
    assert result.score == 0
    assert "not implemented" in by_name(result)["seed_six_trials"].message


def test_wrong_submissions_fail_with_useful_messages(grade_src):
    src = reference_source(SLUG)
    # No length check: unequal lengths broadcast silently instead of raising.
    no_check = edit_source(src, ("    if not len(pred) == len(shape) == len(texture):",
                           "    if False:"))
    tests = by_name(grade_src(SLUG, no_check))
    assert tests["unequal_lengths_raise"].status == "failed"
    assert "should raise ValueError" in tests["unequal_lengths_raise"].message
    assert tests["seed_six_trials"].status == "passed"
    # A percentage instead of a fraction.
    percent = edit_source(src, ("return n_shape / decided", "return 100 * n_shape / decided"))
    test = by_name(grade_src(SLUG, percent))["seed_six_trials"]
    assert test.status == "failed" and test.mistake is None
    assert "expected 0.6, got 60" in test.message
