"""The one result model: results.json round-trips through it for every status, statuses are
enums equal to their strings, and a newer schema is refused."""

from __future__ import annotations

import json

import pytest
from conftest import reference_variant

from grader import results
from grader.engine.runner import grade
from grader.results import (
    ExerciseResult,
    ExerciseStatus,
    SubmissionResult,
    TestResult,
    TestStatus,
)


def _every_status() -> SubmissionResult:
    tests = [TestResult(name=f"t_{s}", status=s, score=float(s == "passed"), max_score=1.0,
                        message=f"why {s}", hint="h", mistake="m" if s == "failed" else None,
                        mistake_message="mm" if s == "failed" else "",
                        diagnostics={"n_outside": 3, "n_total": 9, "worst_index": [1, 2]},
                        figures=[{"kind": "heatmap", "values": [[0.5, 1.0]]}],
                        notes=["n"], traceback=["f.py, line 1"], kind="values",
                        inputs=["f(1)"], values={"expected": "1", "actual": "2"})
             for s in TestStatus]
    return SubmissionResult(
        submission="s", device="cpu", duration_s=1.5, isolation={"level": "strict"},
        feedback="graded",
        exercises=[ExerciseResult(exercise="grid_local_mask", title="T", status=s,
                                  tests=tests if s == "failed" else [], message=str(s))
                   for s in ExerciseStatus])


def test_every_status_round_trips():
    original = _every_status()
    data = json.loads(json.dumps(original.to_dict()))
    assert data["schema_version"] == results.SCHEMA_VERSION
    back = results.from_dict(data)
    assert back.to_dict() == original.to_dict()
    assert {t.status for e in back.exercises for t in e.tests} == set(TestStatus)
    assert all(isinstance(t.status, TestStatus) for e in back.exercises for t in e.tests)
    assert [e.status for e in back.exercises] == list(ExerciseStatus)
    assert TestStatus.PASSED == "passed" and json.dumps(TestStatus.TIMEOUT) == '"timeout"'


def test_a_real_results_json_round_trips(tmp_path):
    path = tmp_path / "grid_local_mask.py"
    path.write_text(reference_variant("grid_local_mask", ("return mask", "return ~mask")))
    result = grade({"grid_local_mask": path, "shape_bias": None}, submission="w")
    data = json.loads(json.dumps(result.to_dict()))
    assert results.from_dict(data).to_dict() == data


@pytest.mark.parametrize("change, words", [
    ({"schema_version": results.SCHEMA_VERSION + 1}, "newer than this grader"),
    ({"exercises": [{"exercise": "x", "status": "maybe", "tests": []}]}, "maybe"),
])
def test_results_it_cannot_read_are_refused(change, words):
    data = {**_every_status().to_dict(), **change}
    with pytest.raises(ValueError, match=words):
        results.from_dict(data)


@pytest.mark.parametrize("name, label", [
    ("no_wrap_around", "no wrap around"),
    ("rows_of_length_H_p", "rows of length H_p"),
    ("grid_width_from_H_p", "grid width from H_p"),
    ("N_minus_n", "N minus n"),
    ("shift_W_included", "shift W included"),
    ("", ""),
])
def test_a_mistakes_name_reads_as_prose_with_its_symbols_as_written(name, label):
    from grader.report.summary import mistake_label

    assert mistake_label(name) == label


@pytest.mark.parametrize("figures, kept", [
    ([{"kind": "heatmap"}, "text", 3, None, ["a"]], [{"kind": "heatmap"}]),
    ("not a list", []), ({"kind": "heatmap"}, []),
])
def test_a_figure_that_is_not_a_table_is_dropped_when_read(figures, kept):
    """A drawing payload comes from outside this process (a worker's reply, an older
    results.json): one that is not a table is dropped when read, before any report meets it
    (the HTML template and the notebook magic read its fields)."""
    data = _every_status().to_dict()
    data["exercises"][1]["tests"][0]["figures"] = figures
    assert results.from_dict(data).exercises[1].tests[0].figures == kept
