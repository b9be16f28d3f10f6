"""Points no shortcut earns, and contracts every call checks (``judge/confirm.py``, the
worker's argument check, the result's type).

The gate is table-tested on its own, then proven through the real grader: a file that
returns the public tests' answers and nothing else scores 0 at ``full`` (one grading run)
and at ``graded`` in ``grade bulk`` (public and hidden rounds in separate processes), while
the reference keeps every point; a function that changes its argument in place, or returns
an array where the contract says list, fails with its own one-sentence answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import by_name, edit_source, grade_source, reference_source

from grader import catalog
from grader.authoring import calls as recorded_calls
from grader.authoring import shortcuts
from grader.feedback import levels as feedback
from grader.judge import confirm
from grader.judge.confirm import Counted

# -- the gate, as a table -----------------------------------------------------------------

# A suite of three calls of f(r, n): a public one (r in class 0) and two hidden ones (r in
# class 1: setting r to class 0's value changes their answer; n is the same everywhere).
TABLE = confirm.Table("-", [
    confirm.Place("pub", 0, True, "f", (("r", 0), ("n", 0))),
    confirm.Place("hid", 0, False, "f", (("r", 1), ("n", 0))),
    confirm.Place("same", 0, False, "f", (("r", 0), ("n", 0)))],
    changes={("f", "r", 0): {1}, ("f", "r", 1): set(), ("f", "n", 0): set()})


def _t(name: str, public: bool, passed: bool, **kw) -> Counted:
    return Counted(name, public, passed, calls=1, **kw)


@pytest.mark.parametrize(("tests", "withheld"), [
    # a public test right, the hidden call where r differs right too: counted
    ([_t("pub", True, True), _t("hid", False, True)], {}),
    # the hidden call where r differs wrong: the public test is not counted
    ([_t("pub", True, True), _t("hid", False, False)], {"pub": ("f", "r")}),
    # a hidden test of the same value right, the other value wrong: not counted either
    ([_t("pub", True, True), _t("same", False, True), _t("hid", False, False)],
     {"pub": ("f", "r"), "same": ("f", "r")}),
    # a call inside a failed test that check.call found right still confirms
    ([_t("pub", True, True), _t("hid", False, False, right={0})], {}),
    # a property-only test (no value confirmed) confirms nothing, even when it passed
    ([_t("pub", True, True), _t("hid", False, True, confirmed=False)], {"pub": ("f", "r")}),
    # the hidden test did not run (another round's, or a file that stopped): nothing right
    ([_t("pub", True, True)], {"pub": ("f", "r")}),
    # a test worth no points is never withheld
    ([_t("pub", True, True, scored=False), _t("hid", False, False)], {}),
])
def test_gate_table(tests, withheld):
    found = confirm.unconfirmed(tests, TABLE)
    assert {name: (why.func, why.param) for name, why in found.items()} == withheld


def test_no_table_or_an_untried_right_call_withholds_nothing():
    tests = [_t("pub", True, True), _t("hid", False, False), _t("same", False, True)]
    assert confirm.unconfirmed(tests, None) == {}
    untried = confirm.Table("-", TABLE.places, changes=dict(TABLE.changes),
                            untried={("f", "r", 0): {2}})
    assert confirm.unconfirmed(tests, untried) == {}


def test_a_table_round_trips_and_a_stale_one_is_not_used(tmp_path):
    path = tmp_path / "t.confirm.json"
    path.write_text(TABLE.to_json())
    assert confirm.load(path, "-").changes == TABLE.changes
    assert confirm.load(path, "another suite") is None
    path.write_text("{not json")
    assert confirm.load(path, "-") is None


@pytest.mark.parametrize(("value", "trivial"), [
    ([0], True), ([], True), (0.0, True), (float("nan"), True), ([1, 1], True),
    ([0, 2], False), (0.37, False), ([3], False)])
def test_trivial_answers(value, trivial):
    import numpy as np

    assert confirm.trivial(value) is trivial
    if isinstance(value, list) and value:
        assert confirm.trivial(np.asarray(value)) is trivial


def test_the_graded_sentence_names_only_grader_words():
    from grader.results import TestResult, TestStatus

    passed = TestResult(name="t", status=TestStatus.PASSED, score=2.0, max_score=2.0,
                        output="learner text", visibility="hidden")
    made = feedback.unconfirmed(passed, confirm.Unconfirmed("grid_local_mask", "radius"),
                                "graded")
    assert made.score == 0 and made.status == "failed" and made.output == ""
    assert made.message == ("passes, but not counted: `grid_local_mask` is right on no hidden "
                            "input where `radius` takes another value")


# -- through the real grader --------------------------------------------------------------

SLUG = "grid_local_mask"


@pytest.fixture(scope="module")
def public_answers() -> str:
    """grid_local_mask answering its public test's exact inputs, every number 0 elsewhere."""
    from grader.engine.plugin import load_reference

    made = shortcuts.public_answers(reference_source(SLUG), load_reference(SLUG),
                                    catalog.get(SLUG).functions,
                                    recorded_calls.record([SLUG])[SLUG])
    assert made is not None
    return made.source


def test_public_answers_score_nothing_at_full(tmp_path, public_answers):
    result = grade_source(tmp_path, SLUG, public_answers)
    public = [t for t in result.tests if t.visibility == "public"]
    assert public and all(t.kind == "unconfirmed" and t.score == 0 for t in public)
    assert sum(t.score for t in result.tests) == 0
    assert public[0].message.startswith("Passes, but not counted: `grid_local_mask` is right "
                                         "on no hidden input where")
    honest = grade_source(tmp_path, SLUG, reference_source(SLUG))
    assert all(t.passed for t in honest.tests)


def test_public_answers_score_nothing_in_rounds(tmp_path, public_answers):
    """``grade bulk`` at graded: the public round decides nothing; the hidden round, in
    another process, withholds the public test's points."""
    klass = tmp_path / "class"
    for name, src in (("honest", reference_source(SLUG)), ("shortcut", public_answers)):
        (klass / name).mkdir(parents=True)
        (klass / name / f"{SLUG}.py").write_text(src)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "grader", "bulk", str(klass), "--out",
                           str(out), "--exercises", SLUG, "--feedback", "graded",
                           "--workers", "1", "-q"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    results = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}
    assert results["honest"]["score"] == results["honest"]["max_score"] == 9
    assert results["shortcut"]["score"] == 0
    tests = results["shortcut"]["exercises"][0]["tests"]
    public = [t for t in tests if t["visibility"] == "public"]
    assert public and all(t["kind"] == "unconfirmed" for t in public)


def test_a_function_that_changes_its_argument_fails_with_its_answer(tmp_path):
    slug = "mean_attention_distance"
    src = edit_source(reference_source(slug), (
        "    patches = patches / patches.sum(axis=-1, keepdims=True)\n",
        "    patches /= patches.sum(axis=-1, keepdims=True)\n"))
    result = by_name(grade_source(tmp_path, slug, src))
    modified = [t for t in result.values() if t.kind == "modified"]
    assert modified and all(t.score == 0 and t.status == "failed" for t in modified)
    assert modified[0].message == ("mean_attention_distance changed its arguments in place: "
                                   "the caller's inputs must be left as they were")
    assert "x = x.copy()" in modified[0].kind_hint


def test_an_array_where_the_contract_says_list_fails(tmp_path):
    slug = "compute_frontier"
    src = edit_source(reference_source(slug), (
        "    return order[a_sorted > best_cheaper].tolist()\n",
        "    return order[a_sorted > best_cheaper]\n"))
    result = grade_source(tmp_path, slug, src)
    frontier = [t for t in result.tests if t.name.startswith("frontier_") and
                "raise" not in t.name]
    assert frontier and all(not t.passed for t in frontier)
    assert "expected a list, got an array" in frontier[0].message


def test_slip_names_are_the_checks_names():
    """The names a mistake may declare as ``slip`` are those ``mistakes-separated`` finds
    (with N an axis), and a tuple declares several at once."""
    import numpy as np

    from grader.authoring import separation

    found = {name for name, _ in separation._slips(np.arange(6.0).reshape(2, 3))} | {
        name for name, _ in separation._slips(np.array([True, False]))}
    assert {n.replace("axis 0", "axis N").replace("axis 1", "axis N") for n in found} == set(
        separation.SLIP_NAMES) - {"transposed"}
    assert separation.slip_names(("flipped along axis 0", "rolled by one along axis 0")) == {
        "flipped along axis 0", "rolled by one along axis 0"}
    assert separation.slip_names("negated") == {"negated"} and separation.slip_names("") == set()


def _failed(kind: str, message: str, kind_hint: str = "", **kw):
    from grader.results import TestResult

    return TestResult(name="t", status=kw.pop("status", "failed"), score=0.0, max_score=1.0,
                      message=message, kind=kind, kind_hint=kind_hint, **kw)


@pytest.mark.parametrize(("test", "broken"), [
    (_failed("precision", "expected 0.77, got 0.78 (...; tolerance rtol=1e-12, atol=0)",
             "Close, but outside the tolerance (the largest error is 35.9 times what is "
             "allowed)"), False),
    (_failed("precision", "outside the tolerance (rtol=1e-06)",
             "Close, but outside the tolerance (the largest error is 1.44e+05 times what is "
             "allowed)"), True),
    (_failed("precision", "wrong shape: expected (3,)"), True),
    (_failed("large", "values differ", "Right on the 3 smaller tests (up to 5 values), but"),
     True),  # (no other test passed)
    (_failed("nan", "values differ"), True),
    (_failed("raised", "ValueError: no", status="error"), False),
    (_failed("raised", "values differ"), True),
    (_failed("values", "values differ", "You probably forgot the prefix"), True),
])
def test_advice_preconditions_table(test, broken):
    """``advice.broken``: each piece of advice against its stated condition."""
    from grader.authoring import advice
    from grader.results import ExerciseResult

    result = ExerciseResult(exercise="x", title="x", tests=[test], status="failed")
    assert bool(list(advice.broken(result))) is broken


def test_a_timed_calls_second_run_counts_for_nothing(tmp_path):
    """``check.call(..., timed=True)`` runs a learner call slower than twice the reference's
    once more; whether it does depends on the clock, so that run is neither a counted call
    (``confirm.py``) nor a recorded one (``calls.py``). The learner here sleeps 1 s in its first
    ``fit_shared_kernel`` of 5,000 rows: the second run happens, and the test's calls are those
    of a learner whose first run was fast."""
    from grader.engine import runner
    slug = "inductive_bias_toy"
    head = "def fit_shared_kernel(X: np.ndarray, Y: np.ndarray, k: int = 3) -> np.ndarray:\n"
    source = reference_source(slug).replace(
        head, "_SLEPT = []\n\n\n" + head + "    if len(X) == 5000 and not _SLEPT:\n"
        "        import time\n        _SLEPT.append(1)\n        time.sleep(1)\n", 1)
    assert "_SLEPT.append" in source
    path = tmp_path / f"{slug}.py"
    path.write_text(source)
    watch = recorded_calls._Watch()
    result = runner.grade({slug: path}, submission="slow", observer=watch)
    tests = {t.name: t for t in result.exercises[0].tests}
    assert tests["large_inputs"].passed
    recorded = [c.func for c in watch.by_slug[slug] if c.test == "large_inputs"]
    assert recorded == ["toy_targets", "fit_shared_kernel"]
    assert result.exercises[0].score == result.exercises[0].max_score


def test_a_table_listing_other_calls_than_the_suites_is_reported(tmp_path, monkeypatch):
    """``confirm-table`` compares the table's counted calls with those the suite makes now
    (recorded on the reference): a table recorded with one call more or less in a test (a
    timed call's second run once was) gates the wrong calls, and is reported, not trusted."""
    from grader.authoring import graded
    from grader.judge import confirm
    slug = "grid_local_mask"
    recorded = recorded_calls.record([slug])[slug]
    assert list(graded.table_problems(slug, recorded)) == []
    table = confirm.current(slug)
    table.places = table.places[:1] + table.places[2:]
    path = tmp_path / f"{slug}.confirm.json"
    path.write_text(table.to_json())
    monkeypatch.setattr(confirm, "path_of", lambda s: path)
    problems = list(graded.table_problems(slug, recorded))
    assert [p.rule for p in problems] == ["confirm-table"]
    assert "does not list the calls the suite makes now" in problems[0].what
