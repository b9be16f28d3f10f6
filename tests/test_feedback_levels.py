"""Feedback levels: at ``graded``, a hidden test's entry is built from grader-owned facts only
(its status, points, failure kind, known mistake, exercise-wide fault and a share band), and
nothing a learner could rebuild its inputs or expected values from reaches any file the grader
writes."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import edit_source
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spy_sources import wrapping

from grader import catalog
from grader.engine.policy import Policy
from grader.engine.runner import grade
from grader.feedback import levels as feedback
from grader.judge.check import GradeFailure
from grader.judge.compare import Comparison
from grader.judge.observer import Observer
from grader.report import class_html, gradescope, junit, terminal
from grader.report.submission_html import write_report
from grader.results import TestResult
from grader.sandbox import faults, isolation
from grader.suite import KnownMistake


def _hidden(**kw) -> TestResult:
    base = dict(name="t", status="failed", score=0.0, max_score=1.0, message="full message",
                hint="the 32x32 grid",
                description="n=9, C=1, k=3, alpha=40", output="ARGS (9, 1, 3)",
                notes=["measured 0.123456"], figures=[{"kind": "heatmap"}],
                traceback=["f.py, line 9, in f: raise E_9_1_3"],
                diagnostics={"max_abs_error": 35.795, "max_rel_error": 0.65023,
                             "worst_index": [2, 3], "n_outside": 16, "n_total": 100,
                             "actual_shape": [10, 10]})
    base.update(kw)
    return TestResult(**base)


def _failure(kind: str, **cmp) -> GradeFailure:
    comparison = Comparison(False, "reason", kind=kind, **cmp) if kind else None
    return GradeFailure("full", comparison, None, hidden_message="hidden",
                        kind=None if comparison else kind or None, exc_type="ValueError")


def _at_import(exc: faults.LearnerFault) -> faults.LearnerFault:
    exc.at_import = True
    return exc


@pytest.mark.parametrize("exc, status, message", [
    (_failure("tolerance"), "failed", "values out of tolerance: 10-50% of the values"),
    (_failure("values"), "failed", "values differ: 10-50% of the values"),
    (_failure("shape"), "failed", "wrong shape"),
    (_failure("dtype"), "failed", "wrong dtype class (bool / int / float / complex)"),
    (_failure("nan"), "failed", "NaN or inf where the expected values are finite: 10-50% of "
                                "the values"),
    (_failure("type"), "failed", "wrong type: the result is not what the contract asks for"),
    (GradeFailure("x > 0.79 on key q+1", kind=None), "failed",
     "the result does not have the property this test checks"),
    (GradeFailure("f(9, 1) should raise ValueError", kind="not_raised",
                  exc_type="ValueError"), "failed", "should raise ValueError, but it did not"),
    (GradeFailure("f(...) raised KeyError: (9, 1)", kind="wrong_exception",
                  exc_type="ValueError"), "failed",
     "should raise ValueError, but it raised another exception"),
    (faults.LearnerRaised("RT3_ARGS_4_4_0_1", ["ValueError"], "array([0.123456, 9.87654])"),
     "error", "raised an exception (its class and message are not shown for a hidden test)"),
    (faults.DiskFull("OSError", ["OSError"], "[Errno 28] ARGS_4_4", isolation.DISK_BYTES),
     "error", f"wrote more than {isolation.DISK_BYTES >> 20} MiB to its work folder"),
    (faults.Crashed(57), "crashed", "the learner's process ended"),
    (faults.Crashed(-25, why="file size limit", cause=faults.CrashCause.FILE_SIZE), "crashed",
     "the learner's process ended"),
    (faults.Crashed(-9, why="out of memory: over the 3 GiB limit",
                    cause=faults.CrashCause.OUT_OF_MEMORY), "crashed",
     "the learner's process ended (out of memory)"),
    (faults.BadReturn("the function returned an object of type T_9_1_3"), "failed",
     "returned a value the grader cannot read (not plain data, or malformed)"),
    (faults.TimedOut(10, message="timed out ARGS 9"), "timeout", "timed out after 10 s"),
    (faults.TimedOut(900, budget=True), "timeout",
     "timed out: the submission's time budget of 900 s for all its calls is used up"),
    (faults.NotRun(2, 10), "not_run", "not run: two calls already timed out after 10 s"),
    (_at_import(faults.ImportFailed("f.py raised E_9_1 while being imported: 9 1")), "error",
     "grid_local_mask.py could not be loaded (the exercise's message says why)"),
    (faults.MissingName("f.py does not define 'ARGS_9'", name="grid_local_mask"), "error",
     "grid_local_mask.py does not define 'grid_local_mask'"),
    (faults.NotImplementedYet("not implemented ARGS 9"), "failed",
     "not implemented yet (the function raises NotImplementedError)"),
    (RuntimeError("suite bug on ARGS_9"), "error", "grader error (not your fault)"),
], ids=["tolerance", "values", "shape", "dtype", "nan", "type", "property", "not_raised",
        "wrong_exception", "raised", "disk_full", "exit_code", "signal", "out_of_memory",
        "bad_return", "timeout", "budget", "not_run", "unloadable", "missing_name",
        "not_implemented", "grader_error"])
def test_a_hidden_failure_at_the_graded_level(exc, status, message):
    shown = feedback.graded(_hidden(status=status), exc, "grid_local_mask")
    assert shown.message == message
    assert shown.description == "" and shown.output == "" and shown.notes == []
    assert shown.hint == "" and shown.traceback == [] and shown.duration_s is None
    assert shown.figures == [] and shown.diagnostics is None and shown.values is None


def test_the_disk_sentence_states_the_sandboxs_own_limit():
    assert feedback._DISK_MIB == isolation.DISK_BYTES >> 20


def test_public_tests_and_known_mistakes():
    public = _hidden(visibility="public", duration_s=1.5)
    shown = feedback.graded(public, _failure("tolerance"), "f")
    assert shown.message == "full message" and shown.duration_s is None
    mistake = KnownMistake("f", "diamond", "Your window is a diamond.", lambda: None)
    exc = GradeFailure("full", Comparison(False, "reason", kind="values"), mistake)
    named = feedback.graded(_hidden(mistake="diamond", kind="known_mistake"), exc, "f")
    assert named.message == "values differ: 10-50% of the values. Your window is a diamond."
    assert named.reason == "values differ: 10-50% of the values"
    assert named.mistake == "diamond" and named.kind == "known_mistake"


# -- noninterference, unit level: a graded hidden entry is the same whatever the learner's text,
# numbers and the grader's own measurements, given the same allowed facts ----------------------

TEXT = st.text(min_size=0, max_size=30)
NUMBER = st.floats(allow_nan=True, allow_infinity=True)
COUNT = st.integers(min_value=0, max_value=10**7)


@st.composite
def learner_world(draw) -> dict:
    """Everything a learner (or the grader's measurement of its output) can vary."""
    return {"text": draw(TEXT), "name": draw(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}",
                                                            fullmatch=True)),
            "number": draw(NUMBER), "count": draw(COUNT), "code": draw(st.integers(-64, 255)),
            "lines": draw(st.lists(TEXT, max_size=3))}


def _exc(family: str, w: dict, facts: dict) -> BaseException:
    """An exception of ``family`` carrying the learner's world ``w`` wherever it can."""
    t, n = w["text"], w["name"]
    kw = {"output": t, "traceback": w["lines"]}
    if family == "raised":
        return faults.LearnerRaised(n, [n, "Exception"], t, **kw)
    if family == "disk_full":
        return faults.DiskFull(n, ["OSError"], t, w["count"], **kw)
    if family == "unloadable":
        return _at_import(faults.ImportFailed(t, **kw))
    if family == "missing":
        return faults.MissingName(t, name=facts["missing"], **kw)
    if family == "timeout":
        return faults.TimedOut(facts["seconds"], message=t, **kw)
    if family == "crashed":
        return faults.Crashed(w["code"], why=t, cause=facts["cause"], **kw)
    if family == "bad_return":
        return faults.BadReturn(t, **kw)
    if family == "grader_error":
        return RuntimeError(t)
    cmp = Comparison(False, t, hidden_reason=t, kind=facts["compared"],
                     max_abs_error=w["number"], max_rel_error=w["number"], n_outside=w["count"],
                     n_total=w["count"] + 1)
    return GradeFailure(t, cmp, facts["mistake"], hidden_message=t, kind=facts["compared"],
                        exc_type="ValueError", what=t)


FAMILIES = ("raised", "disk_full", "unloadable", "missing", "timeout", "crashed", "bad_return",
            "grader_error", "compared")
STATUS = {"raised": "error", "disk_full": "error", "unloadable": "error", "missing": "error",
          "timeout": "timeout", "crashed": "crashed", "bad_return": "failed",
          "grader_error": "error", "compared": "failed"}


@settings(max_examples=300, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(FAMILIES), w1=learner_world(), w2=learner_world(),
       kind=st.sampled_from(sorted(feedback.KINDS) + ["made up by a learner", None]),
       compared=st.sampled_from(["values", "tolerance", "shape", "nan", "dtype", "rule"]),
       band=st.sampled_from([(1, 1000), (5, 100), (30, 100), (90, 100), (0, 0)]),
       cause=st.sampled_from([None, *faults.CrashCause]), timeout=st.sampled_from([2.0, 10.0]),
       mistaken=st.booleans())
def test_a_graded_entry_is_a_function_of_its_facts_only(family, w1, w2, kind, compared, band,
                                                       cause, timeout, mistaken):
    mistake = KnownMistake("f", "diamond", "Your window is a diamond.", lambda: None) \
        if mistaken and family == "compared" else None
    facts = {"missing": "grid_local_mask", "seconds": timeout, "cause": cause,
             "compared": compared, "mistake": mistake}
    shown = []
    for w in (w1, w2):
        result = TestResult(
            name="radius_0", status=STATUS[family], score=0.0, max_score=2.0, message=w["text"],
            hint=w["text"], mistake=mistake.name if mistake else None,
            mistake_message=mistake.message if mistake else "", duration_s=abs(w["number"])
            if math.isfinite(w["number"]) else 1.0, description=w["text"],
            diagnostics={"n_outside": band[0], "n_total": band[1], "max_abs_error": w["number"],
                         "max_rel_error": w["number"], "actual_shape": [w["count"]]},
            output=w["text"], traceback=w["lines"], notes=w["lines"], kind=kind,
            kind_hint=w["text"] + str(w["count"]), fault="missing_name"
            if family == "missing" else "unloadable" if family == "unloadable" else None,
            inputs=w["lines"], values={"expected": w["text"], "actual": w["text"]},
            figures=[{"type": "line", "title": w["text"]}])
        graded = feedback.graded(result, _exc(family, w, facts), "grid_local_mask")
        shown.append(json.dumps(graded.__dict__, sort_keys=True, default=str))
    assert shown[0] == shown[1]


# -- the leak test: every hidden test of every exercise, every file written -------------------

WRAP = '''

import numpy as _np


def _perturb(value):
    if isinstance(value, _np.ndarray) and value.dtype == bool:
        value = value.copy()
        value.flat[::3] = ~value.flat[::3]
        return value
    if isinstance(value, _np.ndarray) and value.dtype.kind == "f":
        return value * 1.01 + 1e-3
    if isinstance(value, float):
        return value * 1.01 + 1e-3
    if isinstance(value, (list, tuple)):
        return type(value)(_perturb(v) for v in value)
    return value


_SENT = []  # every call's arguments so far, in this worker: printed again at every call


def _spy(fn):
    def wrapped(*args, **kwargs):
        _SENT.append(repr(args)[:3000] + " " + repr(kwargs)[:500])  # white-box: what it was sent
        for sent in reversed(_SENT[-40:]):  # newest first: a test's own, then the earlier
            print("ARGS", sent)
        return _perturb(fn(*args, **kwargs))
    return wrapped

'''


def _leaves(values: object, limit: int) -> Iterator[object]:
    """Each leaf of ``values`` (tensors as float64 arrays), through lists, tuples and dicts,
    the first ``limit`` items of each."""
    if type(values).__name__ in ("Tensor", "Parameter"):  # torch, without importing it here
        values = values.detach().cpu().double().numpy()
    if isinstance(values, (list, tuple)):
        items = values[:limit]
    elif isinstance(values, dict):
        items = list(values.values())[:limit]
    else:
        yield values
        return
    for item in items:
        yield from _leaves(item, limit)


def _distinctive(values: object, limit: int = 40) -> set[str]:
    """Numbers of ``values`` as a report would print them, where the text is specific
    enough not to appear by chance (five significant digits or more)."""
    found: set[str] = set()

    def add(x: float) -> None:
        if not math.isfinite(x) or x == round(x, 3):
            return
        for text in (f"{x:.6g}", f"{x:.5g}", repr(x)[:9]):
            if sum(c.isdigit() for c in text.split("e")[0].lstrip("-0.")) >= 5:
                found.add(text)

    for v in _leaves(values, limit):
        if len(found) > 4 * limit:
            break
        if isinstance(v, np.ndarray) and v.dtype.kind in "fc":
            for x in v.reshape(-1)[:limit]:
                add(float(np.real(x)))
        elif isinstance(v, float):
            add(v)
    return found


def _sizes(values: object) -> set[str]:
    """How a report would print the size of each array of ``values``: "N values" and its
    shape, for arrays of 10 elements or more."""
    found: set[str] = set()
    for v in _leaves(values, 40):
        if isinstance(v, np.ndarray) and v.size >= 10:
            found.add(f"{v.size} values")
            if v.ndim >= 2:
                found.add(str(tuple(v.shape)))
    return found


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory):
    """Wrong, argument-printing submissions of every exercise graded at ``graded``, with the
    hidden and public tests' inputs and expected values recorded as the suites made them."""
    base = tmp_path_factory.mktemp("leak")
    files = {}
    for slug, ex in catalog.load().items():
        files[slug] = base / f"{slug}.py"
        files[slug].write_text(ex.solution.read_text() + WRAP + wrapping(ex.functions))
    pending: list[tuple] = []
    seen: dict[str, set[str]] = {"hidden": set(), "public": set(), "learner": set()}
    sizes: dict[str, set[str]] = {"hidden": set(), "public": set()}

    class Watch(Observer):
        def expected(self, func, args, kwargs, value):
            pending.append((args, kwargs, value))

        def requested(self, op, func, args, kwargs):  # all a test sends
            pending.append((args, kwargs, None))

        def replied(self, op, value):  # the learner knows its own results
            seen["learner"] |= _distinctive(value, 10**6)

        def decided(self, item, result):
            marker = item.get_closest_marker("grading")
            public = marker and marker.kwargs.get("visibility") == "public"
            side = "public" if public else "hidden"
            limit = 40 if side == "hidden" else 10**6  # public values: all, to exclude
            for args, kwargs, value in pending:
                seen[side] |= _distinctive(args, limit) | _distinctive(kwargs, limit) | \
                    _distinctive(value, limit)
                sizes[side] |= _sizes(value) | (_sizes(args) if side == "public" else set())
            pending.clear()

    result = grade(files, submission="leak", policy=Policy(feedback="graded"), observer=Watch())
    out = base / "out"
    write_report(result, out)
    gradescope.write_gradescope_json(out / "gradescope.json", result)
    junit.write_junit(out / "junit.xml", [result], [])
    (out / "class.html").write_text(class_html.render_class_report(
        [result], [], title="t", layout="l", generated="g"))
    stream = io.StringIO()
    printer = terminal.Printer(stream=stream, verbosity=2)
    for ex in result.exercises:
        for t in ex.tests:
            printer.test(ex.exercise, ex.title, t)
    printer.finish(result, out / "index.html")
    (out / "terminal.txt").write_text(stream.getvalue())
    return {"result": result, "out": out,
            "secret": seen["hidden"] - seen["public"] - seen["learner"],
            "sizes": sizes["hidden"] - sizes["public"]}


def test_every_hidden_test_failed_and_was_recorded(graded_run):
    hidden = [t for ex in graded_run["result"].exercises for t in ex.tests
              if t.visibility != "public"]
    assert len(hidden) > 80 and sum(not t.passed for t in hidden) > 40
    assert len(graded_run["secret"]) > 500  # enough distinctive values to look for


def test_results_keep_the_suites_order_though_public_tests_ran_first(graded_run):
    for ex in graded_run["result"].exercises:
        names = re.findall(r"^def test_(\w+)\(", catalog.get(ex.exercise).suite.read_text(),
                           re.MULTILINE)
        assert [t.name for t in ex.tests] == names, ex.exercise


def test_no_file_holds_a_hidden_input_or_expected_value(graded_run):
    texts = {p.name: p.read_text() for p in graded_run["out"].iterdir() if p.is_file()}
    assert set(texts) >= {"index.html", "results.json", "gradescope.json", "junit.xml",
                          "class.html", "terminal.txt"}
    # as whole numbers: "0.17874" is not in "-0.178746" (another number, of a public test)
    found = {(name, value) for name, text in texts.items() for value in graded_run["secret"]
             if value in text and re.search(rf"(?<![\d.]){re.escape(value)}(?!\d)", text)}
    assert not found, sorted(found)[:20]


def test_no_file_tells_a_hidden_outputs_size_shape_or_first_wrong_index(graded_run):
    texts = {p.name: p.read_text() for p in graded_run["out"].iterdir() if p.is_file()}
    assert len(graded_run["sizes"]) > 20  # enough hidden sizes and shapes to look for
    found = {(name, size) for name, text in texts.items() for size in graded_run["sizes"]
             if re.search(rf"(?<![\d.]){re.escape(size)}", text)}
    assert not found, sorted(found)[:20]
    data = json.loads(texts["results.json"])  # (a public test shows its first wrong index)
    assert not [(ex["exercise"], t["name"]) for ex in data["exercises"] for t in ex["tests"]
                if t["visibility"] != "public" and "first at index" in json.dumps(t)]


def test_hidden_tests_carry_no_map_output_or_description(graded_run):
    data = json.loads((graded_run["out"] / "results.json").read_text())
    for ex in data["exercises"]:
        for t in ex["tests"]:
            if t["visibility"] != "public":
                assert t["figures"] == [] and t["diagnostics"] is None, (ex["exercise"], t)
                assert t["output"] == "" and t["description"] == "" and t["notes"] == []
                assert "ARGS" not in json.dumps(t)


def test_the_full_level_still_shows_everything(tmp_path):
    src = edit_source(catalog.get("grid_local_mask").solution.read_text(), ("return mask",
                                                                        "return ~mask"))
    path = tmp_path / "grid_local_mask.py"
    path.write_text(src)
    result = grade({"grid_local_mask": path}, submission="full")
    hidden = [t for t in result.exercises[0].tests if t.visibility != "public"]
    assert all(t.description and t.diagnostics and t.figures for t in hidden
               if not t.passed)
