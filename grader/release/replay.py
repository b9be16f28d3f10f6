"""The public tests of a student release, replayed from recorded data (``record.py``).

A release's suite file is two lines: it asks ``public_tests`` for its tests, built from the
``<slug>.public`` file beside it (one protocol frame: plain data and ``.npy`` arrays, never
pickle). Each test calls the learner's functions with the recorded arguments and compares the
results with the recorded expected values through the same ``check`` as the full grader (the
same tolerances, diagnostics and hints), naming a known mistake when the learner's result
matches that mistake's recorded output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.sandbox.harness import protocol
from grader.suite import KnownMistake, graded


def load(path: Path) -> list[dict[str, Any]]:
    """The recorded tests in ``path`` (a ``.public`` file)."""
    return protocol.value_from_bytes(path.read_bytes(), allow_recipes=True)


def replay(check: Any, ops: list[dict[str, Any]]) -> None:
    """Run one recorded test's calls against the learner, as ``check.call`` and
    ``check.raises`` ran them in the teacher's grader."""
    for op in ops:
        args, kwargs = tuple(op["args"]), dict(op["kwargs"])
        if op["op"] == "raises":
            check.raises(op["exc_type"], op["func"], *args, new=op["new"], **kwargs)
            continue
        func = op["func"]
        check._record_call(func, args, kwargs)
        check.valued += 1
        actual = getattr(check.learner, func)(*args, **kwargs)
        mistakes = [(KnownMistake(func, m["name"], m["message"], None), m["output"])
                    for m in op["mistakes"]]
        check.equal(actual, op["expected"], rtol=op["rtol"], atol=op["atol"],
                    what=op["what"] or f"{func}'s result", mistake_call=(func, args, kwargs),
                    confirms=func, mistake_outputs=mistakes)


def public_tests(suite_file: str) -> dict[str, Any]:
    """``{test_name: test function}`` for the suite file ``test_<slug>.py`` of a release."""
    path = Path(suite_file)
    slug = path.stem.removeprefix("test_")
    tests = {}
    for recorded in load(path.with_name(f"{slug}.public")):
        def test(check: Any, ops: list[dict[str, Any]] = recorded["ops"]) -> None:
            replay(check, ops)

        name = f"test_{recorded['name']}"
        test.__name__ = test.__qualname__ = name
        test.__doc__ = recorded["description"]
        kw: dict[str, Any] = {"timeout": recorded["timeout"]} if recorded.get("timeout") else {}
        if recorded.get("hint_for"):
            kw["hint_for"] = tuple(recorded["hint_for"])
        tests[name] = graded(recorded["points"], recorded["hint"], visibility="public",
                             **kw)(test)
    return tests
