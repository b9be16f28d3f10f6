"""The assignment's rubric (``rubric`` in ``assignment.toml``): items a teacher applies by
hand in ``grade review``, each with points (positive or negative), for one exercise or for the
whole submission, and whether a free comment per submission is allowed.

The short form, a list of ``[[rubric]]`` tables (a free comment is allowed)::

    [[rubric]]
    id = "clear-names"            # letters, digits, '-' and '_'; what a review records
    title = "Clear variable names"
    points = 1                    # added when applied; negative to take away
    exercise = "grid_local_mask"  # optional: one of the assignment's exercises

    [[rubric]]
    id = "loops"
    title = "Python loops where numpy would do"
    points = -0.5

The long form, one ``[rubric]`` table with the same items under ``[[rubric.items]]``::

    [rubric]
    comment = false               # no free comment (default true)

    [[rubric.items]]
    id = "clear-names"
    title = "Clear variable names"
    points = 1

Anything that does not fit raises ``ValueError`` with one sentence naming the field
(``assignment.parse`` prefixes the file).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

ITEM_KEYS = ("id", "title", "points", "exercise")
TABLE_KEYS = ("comment", "items")
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", re.ASCII)
TITLE_CHARS = 200


@dataclass(frozen=True)
class RubricItem:
    """One item: ``id`` stable across edits of the file (what a review records), ``title``
    the teacher's words, ``points`` added when applied (negative to take away), ``exercise``
    one of the assignment's exercises or '' for the whole submission."""

    id: str
    title: str
    points: float
    exercise: str = ""


@dataclass(frozen=True)
class Rubric:
    """The items in the file's order, and whether a free comment per submission is allowed."""

    items: tuple[RubricItem, ...] = ()
    comment: bool = True

    def item(self, item_id: str) -> RubricItem | None:
        return next((i for i in self.items if i.id == item_id), None)


def parse(data: Any, exercises: Sequence[str]) -> Rubric | None:
    """The rubric of ``data`` (the TOML value of ``rubric``; ``None`` when absent); raise
    ``ValueError`` with one sentence naming the field for anything that does not fit."""
    if data is None:
        return None
    if isinstance(data, list):
        return Rubric(items=_items(data, exercises, "rubric"))
    if not isinstance(data, dict):
        raise ValueError("'rubric' must be [[rubric]] tables or one [rubric] table with "
                         "[[rubric.items]]")
    unknown = sorted(set(data) - set(TABLE_KEYS))
    if unknown:
        raise ValueError(f"[rubric]: unknown field(s) {', '.join(unknown)} (fields: "
                         f"{', '.join(TABLE_KEYS)})")
    comment = data.get("comment", True)
    if not isinstance(comment, bool):
        raise ValueError("rubric.comment must be true or false")
    items = data.get("items", [])
    if not isinstance(items, list):
        raise ValueError("rubric.items must be [[rubric.items]] tables")
    return Rubric(items=_items(items, exercises, "rubric.items"), comment=comment)


def _items(tables: list[Any], exercises: Sequence[str], where: str) -> tuple[RubricItem, ...]:
    items: list[RubricItem] = []
    for n, table in enumerate(tables, 1):
        field = f"{where}[{n}]"  # 1-based: the n-th table in the file
        if not isinstance(table, dict):
            raise ValueError(f"{field} must be a table with {', '.join(ITEM_KEYS)}")
        items.append(_item(table, exercises, field))
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ValueError(f"{where}: the id {item.id!r} is used twice")
        seen.add(item.id)
    return tuple(items)


def _item(table: dict[str, Any], exercises: Sequence[str], field: str) -> RubricItem:
    unknown = sorted(set(table) - set(ITEM_KEYS))
    if unknown:
        raise ValueError(f"{field}: unknown field(s) {', '.join(unknown)} (fields: "
                         f"{', '.join(ITEM_KEYS)})")
    item_id = table.get("id")
    if not isinstance(item_id, str) or not ID.fullmatch(item_id):
        raise ValueError(f"{field}.id must be 1 to 64 letters, digits, '-' or '_', starting "
                         "with a letter or digit")
    title = table.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > TITLE_CHARS:
        raise ValueError(f"{field}.title must be a non-empty string of at most "
                         f"{TITLE_CHARS} characters")
    points = table.get("points")
    if isinstance(points, bool) or not isinstance(points, (int, float)) \
            or not math.isfinite(points) or points == 0:
        raise ValueError(f"{field}.points must be a non-zero number (negative to take "
                         "points away)")
    exercise = table.get("exercise", "")
    if not isinstance(exercise, str) or (exercise and exercise not in exercises):
        raise ValueError(f"{field}.exercise must be one of the assignment's exercises "
                         f"({', '.join(exercises)})")
    return RubricItem(id=item_id, title=" ".join(title.split()), points=float(points),
                      exercise=exercise)
