"""mean_attention_distance through the real grader: reference, stub, what a learner reads of a
named mistake (every declared mistake is checked by ``grade pack check --grade``), tolerances."""

import pytest
from conftest import by_name, edit_source, reference_source

from grader import catalog

SLUG = "mean_attention_distance"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points


def test_stub_scores_zero(grade_src):
    assert grade_src(SLUG, catalog.get(SLUG).stub.read_text()).score == 0


def test_float32_result_is_judged_with_float32_tolerance(grade_src):
    src = edit_source(reference_source(SLUG), ("return per_query.mean(axis=(0, 2))",
                                         "return per_query.mean(axis=(0, 2)).astype(np.float32)"))
    t = by_name(grade_src(SLUG, src))["one_image"]
    assert t.status == "passed"
    assert any("float32 tolerance" in n for n in t.notes)


def test_off_by_a_little_reports_errors_and_tolerance(grade_src):
    src = edit_source(reference_source(SLUG), ("return per_query.mean(axis=(0, 2))",
                                         "return per_query.mean(axis=(0, 2)) * (1 + 1e-5)"))
    t = by_name(grade_src(SLUG, src))["one_image"]
    assert t.status == "failed" and t.mistake is None
    assert "outside the tolerance (rtol=1e-07, atol=1e-09)" in t.message
    assert t.diagnostics["max_rel_error"] == pytest.approx(1e-5, rel=1e-3)
