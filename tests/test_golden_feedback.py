"""Golden terminal outputs: what a learner reads for a handful of representative failures.

Each case is a learner file (derived from the reference solution, or written out below)
graded through the installed ``grade`` command, ``grade --submission DIR EXERCISE``, as a
learner runs it, its output a pipe (so no colour, and 100 columns). Its output, with every test's
duration written ``-.--s``, must equal ``tests/data/golden/<case>/terminal.txt`` (the
style of Exercism's test runners' golden ``expected_results.json``): a change in wording or
layout shows as a diff to review.

To accept the new outputs after an intended change, regenerate the files and review the
diff before committing it:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden_feedback.py
    git diff tests/data/golden/

A missing golden file fails the test with the same advice.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import reference_source, reference_variant

from grader.authoring.golden import normalise

GRADE = Path(sys.executable).with_name("grade")
GOLDEN = Path(__file__).parent / "data" / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN", "") not in ("", "0")

GRID, CONV, SHIFT = "grid_local_mask", "conv_via_attention", "shift_equivariance"


def _without_rho() -> str:
    src = reference_source(CONV)
    return src[:src.index("def rho(")].rstrip() + "\n"


# case -> (exercise, the learner's file as text or bytes)
CASES: dict[str, tuple[str, str | bytes]] = {
    # a known mistake that matches most tests: explained once, its tests listed
    "known_mistake_on_many_tests": (CONV, reference_variant(
        CONV,
        ("    target = (np.arange(n)[None, :] + np.arange(k)[:, None] - a) % n",
         "    target = np.arange(n)[None, :] + np.arange(k)[:, None] - a"),
        ("    diff = (np.arange(n)[None, None, :] - target[:, :, None]) % n",
         "    diff = np.abs(np.arange(n)[None, None, :] - target[:, :, None])"),
        ("    return np.minimum(diff, n - diff) ** 2", "    return diff ** 2"))),
    # a file Python cannot compile: one entry for the exercise, with the line
    "syntax_error": (GRID, "import numpy as np\n\n\ndef grid_local_mask(H_p, W_p, radius, "
                           "n_prefix=1):\n    return np.zeros((3, 3)\n"),
    # not a text file at all
    "nul_bytes": (GRID, b"import numpy as np\n\x00\x00\x00\ndef grid_local_mask(): pass\n"),
    # an empty file: not loaded, said once as a syntax error is
    "empty_file": (GRID, ""),
    # the function the exercise's last tests call is missing
    "missing_function": (CONV, _without_rho()),
    # the prefix tokens left out: a wrong shape on most tests
    "shape_error": (GRID, reference_variant(GRID, ("    return mask\n", "    return near\n"))),
    # 0/0 where the contract says to divide by 1
    "nan": (SHIFT, reference_variant(
        SHIFT, ("    scale = scale if scale > 0 else 1.0\n", ""),
        ("    return err / scale\n", "    return float(np.float64(err) / scale)\n"))),
}

@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """One folder for every case: they share the cache of expected values."""
    return tmp_path_factory.mktemp("golden")


def grade_case(workdir: Path, case: str) -> str:
    slug, content = CASES[case]
    sub = workdir / case / "submission"
    sub.mkdir(parents=True)
    path = sub / f"{slug}.py"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TERM", "COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "CLICOLOR_FORCE")}
    proc = subprocess.run(
        [str(GRADE), "--submission", f"{case}/submission", slug, "--device", "cpu",
         "--report-dir", f"{case}/reports"],
        cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # every case fails some test
    return normalise(proc.stdout)


@pytest.mark.parametrize("case", list(CASES))
def test_terminal_output_is_the_golden_one(workdir, case):
    got = grade_case(workdir, case)
    golden = GOLDEN / case / "terminal.txt"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got)
        return
    assert golden.is_file(), (f"no golden output {golden}: create it with UPDATE_GOLDEN=1 "
                              ".venv/bin/python -m pytest tests/test_golden_feedback.py")
    want = golden.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(
            want.splitlines(keepends=True), got.splitlines(keepends=True),
            fromfile=f"golden/{case}/terminal.txt", tofile="grade's output now"))
        pytest.fail(f"the terminal output of {case} changed (if intended: UPDATE_GOLDEN=1 "
                    f".venv/bin/python -m pytest tests/test_golden_feedback.py):\n{diff}",
                    pytrace=False)


def test_normalise_hides_only_the_durations():
    line = "  ✗ failed  one_d_small                                0/1   12.34s"
    assert normalise(line) == "  ✗ failed  one_d_small                                0/1    -.--s"
    assert normalise("largest absolute error 0.25s") == "largest absolute error 0.25s"


# -- the terminal writer on hand-made results (no grading) ---------------------------------

def _printed(tests: list, width: int = 60, slug: str = GRID, verbosity: int = 1) -> str:
    import io

    from grader.report.terminal import Printer
    from grader.results import ExerciseResult, SubmissionResult

    stream = io.StringIO()
    printer = Printer(stream=stream, verbosity=verbosity, width=width)
    for t in tests:
        printer.test(slug, "A title", t)
    status = "error" if tests and all(t.status == "error" for t in tests) else "failed"
    printer.finish(SubmissionResult("s", "cpu", [ExerciseResult(slug, "A title", status, tests,
                                                                message=tests[0].message)]),
                   Path("reports/index.html"))
    return stream.getvalue()


def _failed(name: str, **kw):
    from grader.results import TestResult

    return TestResult(name=name, status=kw.pop("status", "failed"), score=0.0, max_score=1.0,
                      **{"message": "wrong values", **kw})


def test_lines_are_wrapped_to_the_width_between_words():
    hint = ("Subtract each row's largest score before exponentiating: the softmax does not "
            "change, and the largest term is exp(0) = 1.")
    call = ("conv_via_attention(float64 array (8, 3), values in [-1.30316, 1.29406], float64 "
            "array (3, 3, 3), values in [-2.71116, 2.11784], 2)")
    out = _printed([_failed("one", hint=hint, inputs=[call])], width=60)
    assert all(len(line) <= 60 for line in out.splitlines()), out
    joined = " ".join(" ".join(line.strip() for line in out.splitlines()).split())
    assert "hint: " + hint in joined                         # every word, none cut
    assert "input: " + call in joined and "..." not in out   # the whole call
    # only a word longer than a whole line is cut, where the line ends
    out = _printed([_failed("one", hint="see " + "x" * 75 + " here")], width=60)
    assert all(len(line) <= 60 for line in out.splitlines()), out
    assert "x" * 75 in out.replace("\n" + " " * 18, "")


def test_the_width_is_the_terminals_or_100():
    import io

    from grader.report.terminal import terminal_width

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert terminal_width(io.StringIO()) == 100              # a pipe, a file, a test
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "72")
        assert terminal_width(io.StringIO()) == 100
        assert terminal_width(Tty()) == 72
        mp.setenv("COLUMNS", "10")
        assert terminal_width(Tty()) == 40                   # never narrower than 40


def test_a_known_mistake_is_explained_once_with_the_tests_it_matched():
    paragraph = "Your mask matches a diamond window, |dr| + |dc| <= radius."
    tests = [_failed(n, mistake="manhattan_window", mistake_message=paragraph,
                     message=f"{n} is wrong. {paragraph}") for n in ("a", "b", "c")]
    out = _printed([*tests, _failed("d")], width=100)
    assert out.count(paragraph) == 1
    assert out.count("known mistake: manhattan window (explained above, at a)") == 2
    assert "known mistake manhattan window: matched by 3 tests (a, b and c)" in out


def test_tests_one_load_failure_stopped_are_one_entry():
    message = "grid_local_mask.py has a SyntaxError at line 4: '(' was never closed"
    tests = [_failed(n, status="error", message=message, hint=f"hint of {n}",
                     traceback=["grid_local_mask.py, line 4: return np.zeros((3, 3)"],
                     fault="unloadable") for n in ("a", "b", "c")]
    out = _printed(tests, width=100)
    assert out.count(message) == 1 and "all 3 tests" in out and "hint" not in out
    assert out.count("line 4: return np.zeros((3, 3)") == 1
    # the same fault on some tests only (a missing function): those tests are listed
    missing = "conv_via_attention.py does not define 'rho'"
    tests = [_failed("x"), *[_failed(n, status="error", message=missing, fault="missing_name")
                             for n in ("r1", "r2")], _failed("y")]
    out = _printed(tests, slug="conv_via_attention", width=100)
    assert out.count(missing) == 1 and "2 tests" in out and "tests: r1 and r2" in out


def test_what_makes_a_file_unusable_is_worded_once():
    """The worker's check (``grade``) and ``grade bulk`` share one wording."""
    from grader.sandbox.harness.worker import NOT_TEXT, NotText, text_problem

    assert NotText.__name__ == NOT_TEXT                      # the type its reply carries
    assert text_problem(b"x = 1\n\x00") == "is binary (it contains NUL bytes)"
    assert text_problem(b"x = '\xff'\n") == "is not UTF-8 text (byte 0xff at offset 5)"
    assert text_problem(b"# coding: latin-1\nx = '\xff'\n") == \
        "declares the encoding latin-1 (line 1), but only UTF-8 source files are accepted"
    assert text_problem("x = 'é'\n".encode()) is None
