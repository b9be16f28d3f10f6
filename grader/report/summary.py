"""What every writer of one submission's result says the same way: the status symbols and
the test counts of the summary line (plain Python: the terminal needs no jinja2)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from grader.engine.results import SubmissionResult, TestStatus

SYMBOLS = {TestStatus.PASSED: "✓", TestStatus.FAILED: "✗", TestStatus.ERROR: "!",
           TestStatus.TIMEOUT: "⏱", TestStatus.CRASHED: "☠"}


def summary_counts(result: SubmissionResult) -> dict[str, Any]:
    """``total``, ``passed``, the ``other`` statuses with their counts, and ``public``: the
    "M/N public tests pass; ..." text."""
    tests = [t for e in result.exercises for t in e.tests]
    by_status = Counter(str(t.status) for t in tests)
    parts = []
    for vis in ("public", "hidden"):
        group = [t for t in tests if t.visibility == vis]
        if group:
            parts.append(f"{sum(t.passed for t in group)}/{len(group)} {vis} tests pass")
    return {"total": len(tests), "passed": by_status.get("passed", 0),
            "other": [(s, n) for s, n in by_status.items() if s != "passed"],
            "public": "; ".join(parts)}
