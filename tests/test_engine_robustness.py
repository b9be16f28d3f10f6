"""Every bad submission gets a clear verdict, and the rest of the run goes on."""

from __future__ import annotations

import json

import pytest
from conftest import by_name, edit_source

from grader.engine.runner import grade

SLUG = "grid_local_mask"

GOOD = """
import numpy as np
def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    if radius < 0 or H_p < 1 or W_p < 1 or n_prefix < 0:
        raise ValueError("bad arguments")
    i = np.arange(H_p * W_p)
    r, c = i // W_p, i % W_p
    near = np.maximum(abs(r[:, None] - r), abs(c[:, None] - c)) <= radius
    m = np.ones((n_prefix + H_p * W_p,) * 2, dtype=bool)
    m[n_prefix:, n_prefix:] = near
    return m
"""


def test_stub_scores_zero_with_not_implemented(grade_src, tmp_path):
    from grader import catalog

    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0 and result.status == "failed"
    assert all(t.status == "failed" for t in result.tests)
    assert all(t.message.startswith("not implemented yet") for t in result.tests)


def test_hang_is_timed_out_and_next_test_still_runs(grade_src):
    src = edit_source(GOOD, ("    i = np.arange(H_p * W_p)",
                       "    if H_p == 4 and W_p == 4:\n        while True:\n            pass\n"
                       "    i = np.arange(H_p * W_p)"))
    tests = by_name(grade_src(SLUG, src))
    assert tests["radius_0"].status == "timeout"
    assert tests["radius_0"].message == "timed out after 10 s"
    assert tests["non_square_grid"].status == "passed"  # a fresh worker took over
    assert tests["large_grid"].status == "passed"


def test_sys_exit_inside_a_call_is_an_error_with_its_reason(grade_src):
    src = edit_source(GOOD, ("    i = np.arange(H_p * W_p)",
                       "    import sys\n    if n_prefix == 3:\n        sys.exit(4)\n"
                       "    i = np.arange(H_p * W_p)"))
    tests = by_name(grade_src(SLUG, src))
    assert tests["several_prefix_tokens"].status == "error"
    assert "sys.exit(4)" in tests["several_prefix_tokens"].message
    assert tests["no_prefix"].status == "passed"


def test_os_exit_inside_a_call_is_a_crash(grade_src):
    src = edit_source(GOOD, ("    i = np.arange(H_p * W_p)",
                       "    import os\n    if n_prefix == 0:\n        os._exit(7)\n"
                       "    i = np.arange(H_p * W_p)"))
    tests = by_name(grade_src(SLUG, src))
    assert tests["no_prefix"].status == "crashed"
    assert tests["no_prefix"].message == "the learner's process ended: exit code 7"
    assert tests["radius_covers_grid"].status == "passed"


def test_segfault_reports_the_signal(grade_src):
    src = edit_source(GOOD, ("    i = np.arange(H_p * W_p)",
                       "    import ctypes\n    if H_p == 1:\n        ctypes.string_at(0)\n"
                       "    i = np.arange(H_p * W_p)"))
    tests = by_name(grade_src(SLUG, src))
    assert tests["smallest_grid"].status == "crashed"
    assert tests["smallest_grid"].message == "the learner's process ended: signal SIGSEGV"
    assert tests["invalid_arguments_raise"].status == "passed"


def test_exception_shows_type_message_and_only_learner_lines(grade_src):
    src = edit_source(GOOD, ("    return m\n", "    return helper(m)\n\ndef helper(m):\n"
                       "    raise KeyError('no such key')\n"))
    t = by_name(grade_src(SLUG, src))["square_grid_radius_1"]
    assert t.status == "error"
    assert t.message == "KeyError: 'no such key'"
    assert len(t.traceback) == 2
    assert all(line.startswith("grid_local_mask.py, line ") for line in t.traceback)
    assert "raise KeyError('no such key')" in t.traceback[-1]


def test_raise_at_import_is_reported_once_per_exercise(grade_src):
    result = grade_src(SLUG, "raise RuntimeError('boom at import')\n")
    assert result.status == "error"
    assert result.message == ("grid_local_mask.py raised RuntimeError while being imported: "
                              "boom at import")
    assert {t.status for t in result.tests} == {"error"}


def test_sys_exit_and_os_exit_at_import(grade_src):
    result = grade_src(SLUG, "import sys\nsys.exit(0)\n")
    assert result.status == "error"
    assert "sys.exit(0)" in result.message
    result = grade_src(SLUG, "import os\nos._exit(0)\n")
    assert result.status == "error"
    assert result.message == ("importing grid_local_mask.py: the learner's process ended: "
                              "exit code 0")
    assert {t.status for t in result.tests} == {"crashed"}


def test_syntax_error_is_reported_with_its_line(grade_src):
    result = grade_src(SLUG, "import numpy as np\n\ndef grid_local_mask(H_p, W_p:\n    pass\n")
    assert result.status == "error"
    assert result.message.startswith("grid_local_mask.py has a SyntaxError at line 3")
    assert result.tests[0].traceback[-1].startswith("grid_local_mask.py, line 3")


def test_missing_function(grade_src):
    # a file defining none of the exercise's functions is not loaded, as one that does not
    # compile (said once for the exercise), not "does not define" on every test
    result = grade_src(SLUG, "def something_else():\n    pass\n")
    assert {t.status for t in result.tests} == {"error"}
    assert result.status == "error"
    assert result.message == result.tests[0].message == \
        "grid_local_mask.py does not define the exercise's function grid_local_mask"


def test_wrong_shape_and_nan_get_diagnostics(grade_src):
    src = edit_source(GOOD, ("    return m\n", "    return m[:, 1:]\n"))
    t = by_name(grade_src(SLUG, src))["square_grid_radius_1"]
    assert t.status == "failed"
    assert "wrong shape: expected (10, 10), got (10, 9)" in t.message
    assert t.diagnostics["expected_shape"] == [10, 10]


def test_non_plain_return_value(grade_src):
    src = edit_source(GOOD, ("    return m\n", "    return object()\n"))
    t = by_name(grade_src(SLUG, src))["square_grid_radius_1"]
    assert t.status == "failed"
    assert t.message.startswith("the function returned an object of type object, which is "
                                "not plain data")


def test_output_is_captured_and_capped(grade_src):
    src = edit_source(GOOD, ("    return m\n", "    print('x' * 100_000)\n    print('after')\n"
                       "    return m\n"))
    t = by_name(grade_src(SLUG, src))["square_grid_radius_1"]
    assert t.status == "passed"
    assert "[output truncated:" in t.output
    assert len(t.output) < 70_000


def test_not_submitted_and_results_json_schema(tmp_path):
    from grader.report.submission_html import write_report

    good = tmp_path / "grid_local_mask.py"
    good.write_text(GOOD)
    result = grade({SLUG: good, "attention_rollout": None}, submission="me")
    assert [e.status for e in result.exercises] == ["passed", "not_submitted"]
    write_report(result, tmp_path / "report")
    data = json.loads((tmp_path / "report" / "results.json").read_text())
    assert set(data) >= {"submission", "score", "max_score", "device", "exercises"}
    assert data["submission"] == "me" and data["device"] == "cpu"
    assert data["score"] == 9 and data["max_score"] == 18   # 9 + attention_rollout's 9
    ex = data["exercises"][0]
    assert set(ex) >= {"exercise", "score", "max_score", "status", "tests"}
    assert set(ex["tests"][0]) >= {"name", "status", "score", "max_score", "message", "hint",
                                    "mistake", "duration_s"}
    html = (tmp_path / "report" / "index.html").read_text()
    assert "9 / 9" in html and "0 / 9" in html and "not submitted" in html
    assert "http://" not in html and "https://" not in html


def test_not_submitted_exercises_list_every_test_without_running_their_suites(tmp_path,
                                                                              monkeypatch):
    from grader import catalog
    from grader.engine import runner
    files = {"grid_local_mask": None,
             "attention_rollout": catalog.get("attention_rollout").solution}
    first = grade(files, submission="a")
    from grader.engine.items import ItemRunner

    suites_run: list[list[str]] = []
    real = ItemRunner.run
    monkeypatch.setattr(ItemRunner, "run", lambda self, items: (
        suites_run.append(sorted({runner.slug_of(item) for item in items})),
        real(self, items))[1])
    second = grade(files, submission="b")
    assert suites_run == [["attention_rollout"]]  # grid_local_mask's verdicts were reused
    for result in (first, second):
        absent = result.exercises[0]
        assert absent.status == "not_submitted"
        assert absent.max_score == catalog.get("grid_local_mask").points
        assert all(t.status == "failed" and "was not submitted" in t.message
                   for t in absent.tests)
        assert result.exercises[1].score == result.exercises[1].max_score
    assert [t.name for t in first.exercises[0].tests] == \
        [t.name for t in second.exercises[0].tests]


def test_a_worker_that_stops_reading_cannot_block_the_grader(tmp_path):
    """A learner thread that freezes its own process between calls (it blocks in C holding
    the GIL: as process 1 of its PID namespace the worker ignores its own SIGSTOP): the next
    request is larger than the pipe holds, so only a deadline on the write ends it."""
    import signal
    import time

    import numpy as np

    from grader.sandbox import faults
    from grader.sandbox.process import WorkerProcess

    src = tmp_path / "grid_local_mask.py"
    src.write_text("import ctypes, threading, time\n\n"
                   "def grid_local_mask(x=None):\n"
                   "    threading.Thread(target=lambda: (time.sleep(0.3), "
                   "ctypes.PyDLL(None).pause()), daemon=True).start()\n"
                   "    return 1\n")
    previous = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(
        AssertionError("the grader blocked writing to a frozen worker")))
    signal.alarm(60)
    try:
        with WorkerProcess({"grid_local_mask": src}) as worker:
            assert worker.request("call", module="grid_local_mask",
                                  func="grid_local_mask").value == 1
            time.sleep(1.0)
            started = time.monotonic()
            with pytest.raises(faults.TimedOut):
                worker.request("call", module="grid_local_mask", func="grid_local_mask",
                               args=(np.zeros(8 * 2**20),), timeout=2.0)
            assert time.monotonic() - started < 10
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
