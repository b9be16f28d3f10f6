"""Plain-text feedback of one test, and the helpers every class-level writer shares.

Writers read results and "rejected" entries: mappings or objects with ``id``, ``reason`` and
``source`` (submissions that could not be graded at all).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ERROR_STATUSES = ("error", "timeout", "crashed")
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


def test_reason(test: Mapping[str, Any]) -> str:
    """The message without the known-mistake sentence (as ``TestResult.reason``)."""
    message, mistake = test.get("message") or "", test.get("mistake_message") or ""
    if mistake and message.endswith(". " + mistake):
        return message[: -len(mistake) - 2]
    return message


def test_text(test: Mapping[str, Any]) -> str:
    """Plain-text feedback of one test: why, the known mistake, the hint, notes, traceback."""
    if test.get("status") == "passed":
        lines = [test.get("description") or "passed"]
        lines += list(test.get("notes") or [])
        return "\n".join(lines)
    lines = []
    if test.get("status") in ERROR_STATUSES:
        lines.append(f"[{test['status']}]")
    if reason := test_reason(test):
        lines.append(reason)
    if test.get("mistake"):
        name = str(test["mistake"]).replace("_", " ")
        lines.append(f"Known mistake ({name}): {test.get('mistake_message') or ''}".rstrip())
    if test.get("kind_hint") and not test.get("mistake"):
        lines.append(f"What this kind of failure usually means: {test['kind_hint']}")
    if test.get("hint"):
        lines.append(f"Hint: {test['hint']}")
    lines += list(test.get("notes") or [])
    if test.get("traceback"):
        lines.append("In your code:\n" + "\n".join(test["traceback"]))
    if output := test.get("output") or "":
        if len(output) > OUTPUT_CAP:
            output = output[:OUTPUT_CAP] + f"\n... ({len(output) - OUTPUT_CAP} more characters)"
        lines.append("Captured output:\n" + output)
    return "\n".join(lines)
