"""A file the pack checker grades and the rule that judges its result: a leaf that the
checker's graded rules (``graded.py``) and the generated mutants (``mutants.py``) both use."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.authoring import variants
from grader.results import ExerciseResult


@dataclass(frozen=True)
class Graded:
    """One file graded for the checker, and the rule that judges its result."""

    slug: str
    label: str
    source: str
    path: Path                                   # the file a problem points at
    judge: Callable[[ExerciseResult], Iterator[tuple[str, str, str]]]   # (what, fix, rule)
    variant: variants.Variant | None = None      # the declared variant it is, if one
    golden: bool = False                         # its output is the exercise's golden one



def no_grader_error(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
    """The rule every graded file obeys: no test ends in a grader error."""
    for t in result.tests:
        if t.status == "error" and "grader error" in t.message:
            yield (f"{t.name}: {t.message}", "a learner's value must never defeat the suite: "
                   "check its type and shape before using it", "no-grader-error")
