"""The teacher's marks of a submission in words: the one place every export and report
phrases a rubric item, an adjustment, a late penalty and a review's comment.

A mark's label is the teacher's own text (a rubric item, an adjustment's comment) or the
grader's sentence for a late rule; it is shown to the teacher and to the student it is
about, never built from learner text.
"""

from __future__ import annotations

from grader import numbers
from grader.results import Mark, MarkKind, SubmissionResult


def describe(mark: Mark) -> str:
    """One mark on one line: an adjustment's comment as written (whitespace folded), a
    rubric item ``+1 Clear names (grid_local_mask)``, a late rule ``-1.5 late: ...``."""
    label = " ".join(mark.label.split())
    if mark.kind is MarkKind.ADJUST:
        return label
    sign = numbers.signed_points(mark.points)
    if mark.kind is MarkKind.RUBRIC:
        where = f" ({mark.exercise})" if mark.exercise else ""
        return f"{sign} {label}{where}"
    return f"{sign} late: {label}" if label else f"{sign} late"


KIND_TITLES = {MarkKind.RUBRIC: "Rubric", MarkKind.ADJUST: "Adjustment",
               MarkKind.LATE: "Late"}


def title(mark: Mark) -> str:
    """A mark as a row of a report's table (its points beside it): ``Rubric: Clear names
    (grid_local_mask)``, ``Adjustment: regraded``, ``Late: 2 days late ...``."""
    label = " ".join(mark.label.split())
    where = f" ({mark.exercise})" if mark.exercise else ""
    return f"{KIND_TITLES[mark.kind]}: {label}{where}" if label else KIND_TITLES[mark.kind]


def comment(result: SubmissionResult) -> str:
    """Every mark of ``result`` and its review's comment, in the order applied, ``; ``
    between them ('' when there is none)."""
    parts = [text for text in (describe(m) for m in result.marks) if text]
    if result.review is not None and result.review.comment.strip():
        parts.append(" ".join(result.review.comment.split()))
    return "; ".join(parts)


def changed(result: SubmissionResult) -> bool:
    """Whether the exported total may differ from the computed one (a mark was applied)."""
    return bool(result.marks)
