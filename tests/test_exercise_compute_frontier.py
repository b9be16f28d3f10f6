"""compute_frontier through the real grader: reference, stub, wrong answers (every declared
mistake is checked by ``grade pack check --grade``)."""

import importlib.util
import math

import pytest
from conftest import by_name, edit_source, grade_file, reference_source

from grader import catalog

SLUG = "compute_frontier"


def _module(path):
    spec = importlib.util.spec_from_file_location(f"_{SLUG}_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points == 18


def test_stub_scores_zero():
    result = grade_file(SLUG, catalog.get(SLUG).stub)
    assert result.score == 0
    assert "not implemented" in by_name(result)["frontier_table6_vits"].message


def test_stub_ships_the_reference_table():
    ex = catalog.get(SLUG)
    assert _module(ex.stub).TABLE6 == _module(ex.solution).TABLE6
    assert len(_module(ex.stub).TABLE6) == 18


def test_table6_answers_in_the_statement():
    """The ViT compute matching each ResNet, as quoted in the statement (rounded)."""
    ref = _module(catalog.get(SLUG).solution)
    vits = [r for r in ref.TABLE6 if r[0].startswith("ViT")]
    vc, va = [r[1] for r in vits], [r[2] for r in vits]
    assert [vits[i][0] for i in ref.pareto_frontier(vc, va)] == [
        "ViT-B/32", "ViT-L/32", "ViT-L/16", "ViT-L/16 (14 ep)", "ViT-H/14 (14 ep)"]
    got = {r[0]: ref.compute_to_match(r[2], vc, va) for r in ref.TABLE6
           if r[0].startswith("ResNet")}
    assert math.isnan(got["ResNet50x1"]) and math.isnan(got["ResNet101x1"])
    expected = {"ResNet50x2": 89.4, "ResNet152x1": 82.2, "ResNet152x2": 301.5,
                "ResNet152x2 (14 ep)": 460.4, "ResNet200x3 (14 ep)": 1739.1}
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=0.05)


def test_wrong_submissions_fail_with_useful_messages(grade_src):
    src = reference_source(SLUG)
    # No validation: compute 0 slips through instead of raising.
    lax = edit_source(src, ("    if not (np.all(np.isfinite(c)) and np.all(c > 0)):",
                      "    if False:"))
    tests = by_name(grade_src(SLUG, lax))
    assert tests["frontier_invalid_arguments_raise"].status == "failed"
    assert "should raise ValueError" in tests["frontier_invalid_arguments_raise"].message
    assert tests["frontier_table6_vits"].status == "passed"
    # A range check one point too wide: below the cheapest frontier model it returns a number.
    edge = edit_source(src, ("    if not fa[0] <= t <= fa[-1]:",
                             "    if not fa[0] - 1 <= t <= fa[-1]:"))
    test = by_name(grade_src(SLUG, edge))["match_outside_range_is_nan"]
    assert test.status == "failed"
    assert "where NaN was expected" in test.message
