"""A feedback corpus: wrong variants a learner is likely to write, none of them a catalogued
mistake, graded through the real engine; nothing in their feedback may name a cause they do
not have.

Per exercise of the pack, at least three variants of the reference solution (an edit or two
each). All of them are graded in one pytest session of the engine (``grade_each``: variant
``i`` of every exercise is submission ``i``), then every failing test is checked:

- no known mistake is named (the variants are not catalogued mistakes, and a mistake that
  matches one input by chance must not be confirmed by the suite's probes);
- the test's own hint is shown exactly when the failure is of a kind its ``hint_for`` names
  (a NaN hint never beside a failure without NaN), and never for a file that is not
  implemented;
- the kind hint is about something the failure shows (NaN in the message for a NaN hint, a
  wrong shape for a shape hint, ...), and what it says about where the values are wrong
  agrees with the measured diagnostics (the count, the row or column of the worst value);
- no kind hint guesses a cause from a pattern (the old "look at how your code treats the
  borders" and its kind).
"""

from __future__ import annotations

import importlib
import re

import pytest

from grader import catalog
from grader.authoring import variants
from grader.authoring.variants import Variant
from grader.feedback import hints
from grader.results import TestResult

# The uncatalogued variants of every exercise, declared in solutions/<slug>.variants.toml
CORPUS: dict[str, tuple[Variant, ...]] = {slug: variants.load(slug).uncatalogued
                                          for slug in catalog.load()}

# What kind hints said before they were observations: causes guessed from a pattern.
GUESSES = ("look at how your code treats", "wrap-around, padding", "a normalisation is missing",
           "a subtraction the other way round", "tokens missing", "added twice, or",
           "a batch or heads axis kept", "right up to their sign: a")
# Faults whose message says everything: no test hint beside them.
SELF_EXPLAINED = ("not implemented yet", "was not submitted", "not run:")


def corpus_of(graded_files) -> dict[tuple[str, str], list[TestResult]]:
    """``(slug, variant) -> test results`` of the uncatalogued variants among ``graded_files``
    (``authoring.graded.grade_files``'s pairs)."""
    found = {}
    for g, result in graded_files:
        if g.variant is not None and not g.variant.catalogued:
            assert not isinstance(result, str), result
            found[g.slug, g.label] = result.tests
    return found


@pytest.fixture(scope="module")
def graded(graded_pack) -> dict[tuple[str, str], list[TestResult]]:
    """The corpus's results, from the session's grading of the pack (``graded_pack``)."""
    found = corpus_of(graded_pack)
    assert set(found) == {(slug, v.name) for slug, vs in CORPUS.items() for v in vs}
    return found


POINTER_START = hints.text("evidence.pointer", funcs="\0", slug="").split("\0", 1)[0]


def _markers(slug: str) -> dict[str, dict]:
    module = importlib.import_module(f"grader.suites.test_{slug}")
    return {name.removeprefix("test_"): next(m.kwargs for m in fn.pytestmark
                                             if m.name == "grading")
            for name, fn in vars(module).items() if name.startswith("test_")}


def _kinds(t: TestResult) -> set[str]:
    """The failure kinds (``hints.HINT_KINDS``) a failed test shows, read off its result."""
    if any(s in t.message for s in SELF_EXPLAINED) or t.status == "not_run":
        return set()
    if t.status in ("error", "timeout", "crashed"):
        return {"raised" if t.status == "error" else t.status} | (
            {"large"} if t.kind == "large" else set())
    if t.kind == "large":  # wrong values on the larger input only
        return {"large", "values"}
    return {{"none": "type", "tolerance": "values"}.get(t.kind or "values", t.kind or "values")}


def _numbers(text: str) -> set[int]:
    """The indices of "0, 2 and 5" or "3 to 6"."""
    m = re.fullmatch(r"(\d+) to (\d+)", text)
    if m:
        return set(range(int(m.group(1)), int(m.group(2)) + 1))
    return {int(n) for n in re.findall(r"\d+", text)}


def _check_observations(t: TestResult) -> None:
    """What a "where it is wrong" hint states agrees with the measured diagnostics."""
    hint, diag = t.kind_hint, t.diagnostics or {}
    m = re.search(r"All (\d+) wrong values", hint)
    if m and "n_outside" in diag:
        assert int(m.group(1)) == diag["n_outside"], hint
    worst = diag.get("worst_index")
    for axis, word in ((0, "row"), (1, "column")):
        m = re.search(rf"\bin {word}s? (\d+(?:, \d+)*(?: and \d+| to \d+)?)\b", hint)
        if m and worst is not None and len(worst) == 2:
            assert worst[axis] in _numbers(m.group(1)), (hint, worst)
    m = re.search(r"\bat ind(?:ex|ices) (\d+(?:, \d+)*(?: and \d+| to \d+)?)(?! of axis)\b",
                  hint)
    if m and worst is not None and len(worst) == 1:
        assert worst[0] in _numbers(m.group(1)), (hint, worst)
    if "expected_at_worst" in diag and "actual_at_worst" in diag:
        e, a = diag["expected_at_worst"], diag["actual_at_worst"]
        if "larger than the expected value" in hint:
            assert a > e, hint
        if "smaller than the expected value" in hint:
            assert a < e, hint
        if "yours is False" in hint:
            assert a is False, hint
        if "yours is True" in hint:
            assert a is True, hint


def _check_kind_hint(t: TestResult, tests: list[TestResult]) -> None:
    """The kind hint is about what the failure shows."""
    kind, hint, message = t.kind, t.kind_hint, t.message
    assert not any(g in hint for g in GUESSES), hint
    if kind == "nan":
        assert "NaN" in message, message
    elif kind == "inf":
        assert "infinite" in message, message
    elif kind == "shape":
        assert "shape" in message.lower(), message
    elif kind == "dtype":
        assert "dtype" in message, message
    elif kind == "precision":
        rel = (t.diagnostics or {}).get("max_rel_error")
        assert "outside the tolerance" in message and (rel is None or rel <= 1e-3), message
    elif kind == "raised":
        assert t.status == "error", message
    elif kind == "not_raised":
        assert "should raise" in message and "but it raised" not in message, message
    elif kind == "wrong_exception":
        assert "should raise" in message and "but it raised" in message, message
    elif kind == "large":
        m = re.search(r"Right on the (\d+) smaller tests", hint)
        assert m and sum(x.passed for x in tests) >= int(m.group(1)), hint
    elif kind == "values":
        assert "differ" in message or "outside the tolerance" in message, message
        _check_observations(t)


CASES = [(slug, v.name) for slug, variants in CORPUS.items() for v in variants]


def test_every_exercise_has_five_uncatalogued_variants():
    for slug, declared in CORPUS.items():
        assert len(declared) >= 5, slug
        assert len({v.name for v in declared}) == len(declared)
        for v in declared:  # each edit applies, and makes a different file
            assert v.source() != catalog.get(slug).solution.read_text()


@pytest.mark.parametrize("slug, name", CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_feedback_names_no_cause_the_variant_does_not_have(graded, slug, name):
    tests = graded[slug, name]
    variant = next(v for v in CORPUS[slug] if v.name == name)
    by_name = {t.name: t for t in tests}
    for test, kind in variant.fails.items():
        assert not by_name[test].passed and by_name[test].kind == kind, (
            test, by_name[test].status, by_name[test].kind, by_name[test].message)
    markers = _markers(slug)
    for t in tests:
        if t.passed:
            assert t.hint == "" and t.kind_hint == "" and t.mistake is None
            continue
        assert "grader error" not in t.message, t.message
        # no known mistake: none of these variants is one
        assert t.mistake is None and t.mistake_message == "" and t.kind != "known_mistake", (
            t.name, t.mistake)
        # the test's own hint: only where the failure is of a kind it is about, and only
        # where no other test of its functions failed; else, once, the pointer to `grade
        # hint` (feedback/hints.py)
        marker = markers[t.name]
        hint_for = set(marker["hint_for"])
        kinds = _kinds(t)
        if t.hint.startswith(POINTER_START):
            assert sum(not x.passed for x in tests) > 1, t.name
        elif t.hint:
            assert t.hint == marker["hint"]
            assert kinds & hint_for or ("large" in hint_for and "large" in kinds), (
                t.name, kinds, hint_for)
        if t.kind_hint and not t.kind_hint.startswith("as for "):
            _check_kind_hint(t, tests)
    # one paragraph per cause: at most one pointer, no kind hint said twice
    assert sum(t.hint.startswith(POINTER_START) for t in tests) <= 1
    said = [t.kind_hint for t in tests if t.kind_hint and not t.kind_hint.startswith("as for ")]
    assert len(said) == len(set(said)), said


def test_the_corpus_covers_the_kinds_of_failure(graded):
    """The corpus is worth its time: it meets most kinds of failure, and shows test hints
    both given and withheld."""
    failed = [t for tests in graded.values() for t in tests if not t.passed]
    kinds = {k for t in failed for k in _kinds(t)}
    assert kinds >= {"values", "shape", "nan", "inf", "precision", "type", "raised",
                     "not_raised"}, kinds
    assert any(t.hint for t in failed)
    assert any(not t.hint and t.kind_hint for t in failed)
    # observations with a place, and an exercise's region, were made
    hints = " ".join(t.kind_hint for t in failed)
    assert re.search(r"All \d+ wrong values are in (rows?|columns?) \d", hints), hints
    assert "neighbours only if the grid wraps around its edges" in hints


if __name__ == "__main__":  # the corpus's feedback, to read: python tests/test_feedback_corpus.py
    from grader.authoring.graded import files_to_grade, grade_files

    every = files_to_grade(list(CORPUS))
    only = {slug: [g for g in found if g.variant is not None and not g.variant.catalogued]
            for slug, found in every.items()}
    for (slug, name), tests in corpus_of(grade_files(only)).items():
        print(f"== {slug} / {name}")
        for t in tests:
            if not t.passed:
                print(f"  - {t.name} [{t.status}, {t.kind}] {t.message[:150]}")
                for label, text in (("kind", t.kind_hint), ("hint", t.hint)):
                    if text:
                        print(f"      {label}: {text}")
