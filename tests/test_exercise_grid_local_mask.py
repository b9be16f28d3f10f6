"""grid_local_mask through the real grader: reference, stub, and every known mistake."""

import pytest
from conftest import by_name, reference_source

SLUG = "grid_local_mask"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == 9


@pytest.mark.parametrize("old, new, mistake", [
    ("return mask", "return ~mask", "inverted_convention"),
    ("near = np.maximum(np.abs(rows[:, None] - rows[None, :]),\n"
     "                      np.abs(cols[:, None] - cols[None, :])) <= radius",
     "near = (np.abs(rows[:, None] - rows[None, :])\n"
     "            + np.abs(cols[:, None] - cols[None, :])) <= radius", "manhattan_window"),
    ("mask = np.ones((T, T), dtype=bool)",
     "mask = np.eye(T, dtype=bool)", "prefix_not_free"),
    ("near = np.maximum(np.abs(rows[:, None] - rows[None, :]),\n"
     "                      np.abs(cols[:, None] - cols[None, :])) <= radius",
     "near = np.abs(idx[:, None] - idx[None, :]) <= radius", "flattened_distance"),
    ("near = np.maximum(np.abs(rows[:, None] - rows[None, :]),\n"
     "                      np.abs(cols[:, None] - cols[None, :])) <= radius",
     "dr = np.abs(rows[:, None] - rows[None, :]); dc = np.abs(cols[:, None] - cols[None, :])\n"
     "    near = np.maximum(np.minimum(dr, H_p - dr), np.minimum(dc, W_p - dc)) <= radius",
     "wraps_around"),
])
def test_known_mistakes_are_named(grade_src, old, new, mistake):
    src = reference_source(SLUG)
    assert old in src
    result = grade_src(SLUG, src.replace(old, new))
    tests = by_name(result)
    assert tests["square_grid_radius_1"].status == "failed"
    assert tests["square_grid_radius_1"].mistake == mistake
    assert "Your mask matches" in tests["square_grid_radius_1"].mistake_message
