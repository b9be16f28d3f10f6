"""Plain-text feedback of one test, and the helpers every class-level writer shares.

Writers read results and "rejected" entries: mappings or objects with ``id``, ``reason`` and
``source`` (submissions that could not be graded at all).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from grader.results import ERROR_STATUSES, TestResult

from .summary import mistake_label, shared_fault

OUTPUT_CAP = 2000  # characters of a test's captured output kept in exports


def entry_get(entry: Any, name: str, default: Any = "") -> Any:
    """``entry[name]`` for a mapping, ``entry.name`` otherwise (rejected entries may be either)."""
    if isinstance(entry, Mapping):
        return entry.get(name, default)
    return getattr(entry, name, default)


def natural_key(text: str) -> tuple:
    """Sort key: digit runs compare as numbers (``s2`` < ``s10``), ties broken by the text."""
    parts = re.split(r"(\d+)", text.casefold())
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def test_text(test: TestResult) -> str:
    """Plain-text feedback of one test: what it checks (its description, unless a fault of
    the whole file stopped it), why it failed, the known mistake, the hint, notes, traceback."""
    if test.status == "passed":
        return "\n".join([test.description or "passed", *test.notes])
    lines = []
    if test.status in ERROR_STATUSES:
        lines.append(f"[{test.status}]")
    if test.description and shared_fault("", test) is None:
        lines.append(f"Description: {test.description}")
    if test.reason:
        lines.append(test.reason)
    if test.mistake:
        lines.append(f"Known mistake ({mistake_label(test.mistake)}): "
                     f"{test.mistake_message}".rstrip())
    if test.kind_hint and not test.mistake:
        lines.append(f"What this kind of failure usually means: {test.kind_hint}")
    if test.hint:
        lines.append(f"Hint: {test.hint}")
    lines += test.notes
    if test.traceback:
        lines.append("In your code:\n" + "\n".join(test.traceback))
    if output := test.output:
        if len(output) > OUTPUT_CAP:
            output = output[:OUTPUT_CAP] + f"\n... ({len(output) - OUTPUT_CAP} more characters)"
        lines.append("Captured output:\n" + output)
    return "\n".join(lines)
