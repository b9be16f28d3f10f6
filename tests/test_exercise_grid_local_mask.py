"""grid_local_mask through the real grader: reference, stub, and every known mistake."""

import pytest
from conftest import CHEBYSHEV, by_name, edit_source, grid_window, reference_source

SLUG = "grid_local_mask"
ONES = "mask = np.ones((T, T), dtype=bool)"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == 9


def test_the_window_computed_patch_by_patch_scores_full_marks(grade_src):
    """The base of the variants below: the reference with its window computed patch by patch."""
    src = edit_source(reference_source(SLUG), grid_window(f"near = {CHEBYSHEV} <= radius"))
    assert grade_src(SLUG, src).score == 9


@pytest.mark.parametrize("old, new, mistake, test", [
    ("return mask", "return ~mask", "inverted_convention", "square_grid_radius_1"),
    (*grid_window("near = (np.abs(rows[:, None] - rows[None, :])\n"
                  "            + np.abs(cols[:, None] - cols[None, :])) <= radius"),
     "manhattan_window", "square_grid_radius_1"),
    (ONES, "mask = np.eye(T, dtype=bool)", "prefix_not_free", "square_grid_radius_1"),
    (*grid_window("near = np.abs(idx[:, None] - idx[None, :]) <= radius"), "flattened_distance",
     "square_grid_radius_1"),
    (*grid_window("dr = np.abs(rows[:, None] - rows[None, :])\n"
                  "    dc = np.abs(cols[:, None] - cols[None, :])\n"
                  "    near = np.maximum(np.minimum(dr, H_p - dr), np.minimum(dc, W_p - dc))"
                  " <= radius"), "wraps_around", "square_grid_radius_1"),
    # the half-free prefix: the prefix rows free, their columns forgotten, and the other way
    (ONES, "mask = np.zeros((T, T), dtype=bool)\n    mask[:n_prefix, :] = True",
     "prefix_column_blocked", "square_grid_radius_1"),
    (ONES, "mask = np.zeros((T, T), dtype=bool)\n    mask[:, :n_prefix] = True",
     "prefix_row_blocked", "square_grid_radius_1"),
    (*grid_window(f"near = {CHEBYSHEV} < radius"), "radius_exclusive", "radius_0"),
    (*grid_window(f"near = {CHEBYSHEV} <= radius", row_length="H_p"), "rows_of_length_H_p",
     "non_square_grid"),
])
def test_known_mistakes_are_named(grade_src, old, new, mistake, test):
    src = reference_source(SLUG)
    assert src.count(old) == 1
    result = grade_src(SLUG, edit_source(src, (old, new)))
    tests = by_name(result)
    assert tests[test].status == "failed"
    assert tests[test].mistake == mistake
    assert "Your mask matches" in tests[test].mistake_message
    # a named cause stands alone: no test hint or kind hint beside it that could contradict it
    assert all(t.hint == "" and t.kind_hint == "" for t in result.tests if t.mistake)


def test_the_half_free_prefix_names_no_border_cause(grade_src):
    """A half-free prefix: the prefix row free, the prefix column forgotten. Every failure names
    the mistake; nothing speaks of edges or borders."""
    src = edit_source(reference_source(SLUG), (
        ONES, "mask = np.zeros((T, T), dtype=bool)\n    mask[:n_prefix, :] = True"))
    failed = [t for t in grade_src(SLUG, src).tests if not t.passed]
    assert [t.name for t in failed] == ["square_grid_radius_1", "radius_0", "non_square_grid",
                                        "several_prefix_tokens", "radius_covers_grid",
                                        "smallest_grid", "large_grid"]
    assert {t.mistake for t in failed} == {"prefix_column_blocked"}
    for t in failed:
        text = " ".join((t.message, t.kind_hint, t.hint)).lower()
        assert "edge" not in text and "border" not in text and "padding" not in text
