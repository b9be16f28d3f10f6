"""grid_local_mask through the real grader: the reference, and what a learner reads of a named
mistake (every declared mistake is checked by ``grade pack check --grade``)."""

from conftest import declared, reference_source

SLUG = "grid_local_mask"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == 9


def test_the_half_free_prefix_names_no_border_cause(grade_src):
    """A half-free prefix: the prefix row free, the prefix column forgotten. Every failure names
    the mistake; nothing speaks of edges or borders."""
    src = declared(SLUG, "prefix_column_blocked")
    tests = grade_src(SLUG, src).tests
    # right only without prefix tokens: those tests are not counted (judge/confirm.py)
    assert [t.name for t in tests if t.kind == "unconfirmed"] == ["no_prefix",
                                                                "invalid_arguments_raise"]
    failed = [t for t in tests if not t.passed and t.kind != "unconfirmed"]
    assert [t.name for t in failed] == ["square_grid_radius_1", "radius_0", "non_square_grid",
                                        "several_prefix_tokens", "radius_covers_grid",
                                        "smallest_grid", "large_grid"]
    assert {t.mistake for t in failed} == {"prefix_column_blocked"}
    for t in failed:
        text = " ".join((t.message, t.kind_hint, t.hint)).lower()
        assert "edge" not in text and "border" not in text and "padding" not in text
