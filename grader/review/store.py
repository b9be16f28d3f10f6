"""``OUT/review.json``: what a teacher entered in ``grade review``, and its application to the
class's results (``apply``, called by ``grade bulk`` and every export).

The file (``VERSION`` 1), written atomically after each change::

    {"version": 1,
     "reviews": {
       "ann": {"items": ["clear-names"],      # rubric item ids applied
               "comment": "Nice work.",       # the free comment ('' for none)
               "reviewed": true,              # the teacher marked it reviewed
               "fingerprint": "3f2a...",      # fingerprint(result) when saved
               "saved": "2026-12-16T09:30:00+00:00"}}}

A review is keyed by submission id; its items by rubric item id, so editing a rubric item's
title or points changes what every review applying it gives. A review whose ``fingerprint``
differs from the current result's (the submission was regraded since, and grading decided
something else) is *stale*: still applied, and said so. Fields this version does not know are
ignored (and not kept when it writes the file); a file of a newer version, or one that does
not read, raises ``ReviewError``.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.files import atomic_write_text
from grader.inert import inert
from grader.results import MarkKind, Review, SubmissionResult
from grader.rubric import Rubric

FILE = "review.json"
VERSION = 1
COMMENT_CHARS = 10_000  # the longest comment kept


class ReviewError(ValueError):
    """``OUT/review.json`` cannot be used: one sentence naming the file and why."""


@dataclass(frozen=True)
class Entry:
    """One submission's review: the rubric item ids applied (in the order clicked; marks
    follow the rubric's order), the comment, whether the teacher marked it reviewed, the
    result's fingerprint when saved and when (ISO 8601, UTC)."""

    items: tuple[str, ...] = ()
    comment: str = ""
    reviewed: bool = True
    fingerprint: str = ""
    saved: str = ""

    @property
    def empty(self) -> bool:
        """Nothing to keep: no item, no comment, not marked reviewed."""
        return not (self.items or self.comment.strip() or self.reviewed)

    def to_dict(self) -> dict[str, Any]:
        return {"items": list(self.items), "comment": self.comment,
                "reviewed": self.reviewed, "fingerprint": self.fingerprint,
                "saved": self.saved}


def fingerprint(result: SubmissionResult) -> str:
    """What grading decided of ``result``: each test's status, score and maximum (not its
    message or duration), as a short hex digest. Regrading that decides the same keeps it."""
    decided = sorted(
        [e.exercise, str(e.status),
         sorted([t.name, str(t.status), round(t.score, 6), round(t.max_score, 6)]
                for t in e.tests)]
        for e in result.exercises)
    return hashlib.sha256(json.dumps(decided, separators=(",", ":")).encode()).hexdigest()[:16]


def path_of(out: Path) -> Path:
    return Path(out) / FILE


def load(out: Path) -> dict[str, Entry]:
    """Submission id -> its review, from ``OUT/review.json`` (``{}`` when there is none);
    ``ReviewError`` when the file does not read."""
    path = path_of(out)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ReviewError(f"{path}: cannot be read ({exc.strerror})") from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise ReviewError(f"{path}: not valid JSON ({exc})") from None
    try:
        return _entries(data)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ReviewError):
            raise ReviewError(f"{path}: {exc}") from None
        raise ReviewError(f"{path}: not a review file this grader reads ({exc})") from None


def _entries(data: Any) -> dict[str, Entry]:
    if not isinstance(data, dict) or not isinstance(data["version"], int):
        raise TypeError("no version number")
    if data["version"] > VERSION:
        raise ReviewError(f"written by a newer grader (version {data['version']}, this one "
                          f"reads {VERSION})")
    reviews = data["reviews"]
    if not isinstance(reviews, dict):
        raise TypeError("'reviews' is not an object")
    entries = {}
    for sid, raw in reviews.items():
        who = f"the review of {inert(sid, newlines=False)!r}"
        if not isinstance(raw, dict):
            raise TypeError(f"{who} is not an object")
        items = raw.get("items", [])
        comment, reviewed = raw.get("comment", ""), raw.get("reviewed", True)
        fp, saved = raw.get("fingerprint", ""), raw.get("saved", "")
        if not (isinstance(items, list) and all(isinstance(i, str) for i in items)
                and isinstance(comment, str) and isinstance(reviewed, bool)
                and isinstance(fp, str) and isinstance(saved, str)):
            raise TypeError(f"{who} has a field of the wrong type")
        entries[sid] = Entry(items=tuple(dict.fromkeys(items)), comment=comment,
                             reviewed=reviewed, fingerprint=fp, saved=saved)
    return entries


def save(out: Path, submission: str, entry: Entry | None) -> dict[str, Entry]:
    """Record ``entry`` as the review of ``submission`` (``None`` or an empty entry: remove
    it), stamped with the time, and rewrite ``OUT/review.json`` atomically, keeping every
    other review as the file has it now (two processes saving at once take turns: an
    ``fcntl`` lock on ``OUT/.review.json.lock``); return all the reviews. ``ReviewError`` when
    the file there does not read (it is left as it is)."""
    with open(Path(out) / f".{FILE}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed
        entries = load(out)
        if entry is None or entry.empty:
            entries.pop(submission, None)
        else:
            entries[submission] = Entry(
                items=entry.items, comment=entry.comment[:COMMENT_CHARS],
                reviewed=entry.reviewed, fingerprint=entry.fingerprint,
                saved=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        data = {"version": VERSION,
                "reviews": {sid: e.to_dict() for sid, e in entries.items()}}
        atomic_write_text(path_of(out), json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return entries


@dataclass(frozen=True)
class Applied:
    """What ``apply_entry`` left out of a review: item ids not in the rubric, a comment the
    rubric does not allow; and whether the review is stale."""

    left_items: tuple[str, ...] = ()
    left_comment: bool = False
    stale: bool = False


def apply_entry(result: SubmissionResult, entry: Entry, rubric: Rubric | None) -> Applied:
    """Add one rubric mark to ``result`` per item of ``entry`` still in ``rubric`` (in the
    rubric's order) and set ``result.review`` (its comment, when the rubric allows one, and
    whether it is stale); return what was left out."""
    items = rubric.items if rubric is not None else ()
    for item in items:
        if item.id in entry.items:
            result.add_mark(MarkKind.RUBRIC, item.points, item.title, item.exercise)
    known = {item.id for item in items}
    comment = entry.comment
    left_comment = bool(comment.strip()) and rubric is not None and not rubric.comment
    stale = entry.fingerprint != fingerprint(result)
    result.review = Review(comment="" if left_comment else comment, stale=stale)
    return Applied(left_items=tuple(i for i in entry.items if i not in known),
                   left_comment=left_comment, stale=stale)


def apply(out: Path, results: list[SubmissionResult], rubric: Rubric | None) -> list[str]:
    """Apply ``OUT/review.json`` to ``results`` (fresh from grading, before any adjustment):
    for each reviewed result, one ``MarkKind.RUBRIC`` mark per applied item still in
    ``rubric``, in the rubric's order, and ``result.review``. Return the sentences the
    teacher must read: items no longer in the rubric, comments the rubric no longer allows,
    reviews of submissions not in the class (each left out) and stale reviews. A missing file
    changes nothing; one that does not read raises ``ReviewError``."""
    entries = load(out)
    by_id = {r.submission: r for r in results}
    items: dict[str, list[str]] = {}  # item id -> the submissions it was left out of
    comments, stale = [], []
    for sid, entry in entries.items():
        if sid not in by_id:
            continue
        applied = apply_entry(by_id[sid], entry, rubric)
        for item_id in applied.left_items:
            items.setdefault(item_id, []).append(sid)
        comments += [sid] if applied.left_comment else []
        stale += [sid] if applied.stale else []
    notices = [f"{FILE}: the rubric item {inert(item_id, newlines=False)!r} is not in the "
               f"assignment's rubric: left out of {_some(subs)}."
               for item_id, subs in items.items()]
    if comments:
        notices.append(f"{FILE}: the rubric allows no comment (comment = false): the "
                       f"comments of {_some(comments)} left out.")
    absent = [sid for sid in entries if sid not in by_id]
    if absent:
        notices.append(f"{FILE} reviews {_some(absent)} not in the class: left out.")
    if stale:
        notices.append(f"{FILE}: the reviews of {_some(stale)} were made against an "
                       "earlier result (regraded since): check them in `grade review`.")
    return notices


def _some(ids: Iterable[str]) -> str:
    """``3 submissions (a, b, c)`` with the ids made inert."""
    ids = [inert(i, newlines=False) for i in ids]
    word = "submission" if len(ids) == 1 else "submissions"
    return f"{len(ids)} {word} ({', '.join(ids)})"
