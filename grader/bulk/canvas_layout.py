"""The ``canvas`` layout: Canvas's "download submissions" zip, for ``layouts.discover``.

Members are named ``<name>_[late_]<userid>_<submissionid>_<original filename>``; they are
grouped by user id, and for each exercise the latest upload wins (highest submission id, then
highest re-upload suffix ``<slug>-N.py``); a member that is itself a zip is read like one
``zips`` submission. Ids are ``<name>_<userid>``; limits apply per student (their members
together), not to the whole class zip. A Canvas submission's time is unknown (every member
carries the time the zip was made), only its ``late`` flag is.
"""

from __future__ import annotations

import functools
import re
import zipfile
from contextlib import ExitStack
from pathlib import Path

from .reading import (
    UPLOAD_RE,
    Budget,
    Candidate,
    Context,
    Discovery,
    Found,
    Member,
    is_junk,
    loader,
    match_slug,
    nested_zip,
    open_zip,
    path_parts,
    read_member,
    read_student,
    reject_strays,
    unsafe_name,
)

_CANVAS_RE = re.compile(
    r"(?P<name>[^/]+?)_(?:(?P<late>late)_)?(?P<user>\d{1,30})_(?:(?P<sub>\d{1,30})_)?"
    r"(?P<orig>[^/]+)",
    re.IGNORECASE,
)


def discover_zip(path: Path, ctx: Context) -> Discovery:
    """The Canvas submissions in zip ``path``; raises ``ValueError`` when no member is named
    like one (the zip is then no LMS download: ``moodle_layout`` was tried first)."""
    with open_zip(path) as zf:
        groups: dict[str, list[tuple[zipfile.ZipInfo, re.Match[str]]]] = {}
        stray: list[zipfile.ZipInfo] = []
        for info in zf.infolist():
            parts = path_parts(info.filename)
            if info.is_dir() or not parts or is_junk(parts):
                continue
            m = _CANVAS_RE.fullmatch(info.filename)
            if m is None or unsafe_name(info.filename):
                stray.append(info)
            else:
                groups.setdefault(str(int(m["user"])), []).append((info, m))
        if not groups:
            raise ValueError(f"{path} is neither a Canvas 'download submissions' zip nor a "
                             "Moodle 'Download all submissions' zip: no member is named "
                             "<name>_<userid>_<submissionid>_<file> or <full name>_"
                             "<participant id>_assignsubmission_file/<file>")
        reject_strays(ctx, path, stray,
                      "a Canvas submission (<name>_<userid>_<submissionid>_<file>)")
        ordered = []
        for user, members in groups.items():
            newest = max(members, key=lambda im: (int(im[1]["sub"] or 0), im[0].filename))
            ordered.append((f"{newest[1]['name']}_{user}", members))
        for raw, members in sorted(ordered, key=lambda item: item[0]):
            _finish_canvas_user(raw, members, zf, path, ctx)
    return Discovery("canvas", f"a Canvas 'download submissions' zip ({path.name}): "
                     f"{sum(len(m) for _, m in ordered)} files from {len(ordered)} students",
                     ctx.submissions, ctx.rejected)


def _finish_canvas_user(raw: str, members: list[Member], zf: zipfile.ZipFile, path: Path,
                        ctx: Context) -> None:
    name, _, user = raw.rpartition("_")
    read_student(ctx, raw, members, zf, path, f"the Canvas submission of {raw}",
                 _canvas_member, functools.partial(ctx.finish, why="the latest of {n} uploads",
                                                   chosen_in=path.name, lms=(user, name)))


def _canvas_member(info: zipfile.ZipInfo, m: re.Match[str], zf: zipfile.ZipFile,
                   budget: Budget, found: Found, stack: ExitStack, ctx: Context) -> None:
    """Add the candidates of one Canvas member (a ``.py`` file or a zip of them) to ``found``."""
    orig, sub, late = m["orig"], int(m["sub"] or 0), m["late"] is not None
    label = f"{orig} (submission {sub})" if m["sub"] else orig
    match = match_slug(orig, ctx.slug_map, upload_suffix=True)
    if match is not None:
        slug, n, exact = match
        found.candidates.append(Candidate(
            slug, orig, label, info.filename, (sub, n, 0, int(exact)),
            loader(read_member, zf, info, ctx.limits.max_file_bytes, budget), late))
        return
    if not orig.lower().endswith(".zip"):
        (found.ignored_py if orig.lower().endswith(".py") else found.ignored_other).append(orig)
        return
    upload = UPLOAD_RE.fullmatch(orig[:-4])
    n = int(upload["n"]) if upload else 0
    nested = nested_zip(zf, info, f"{orig} (submission {sub})", label, found, stack, ctx,
                        budget)
    if nested is None:
        return
    for c in nested.candidates:
        c.label, c.member, c.late = f"{c.label} in {label}", info.filename, late
        c.rank = (sub, n, *c.rank[2:])
        found.candidates.append(c)
    found.take_nested(nested, orig)
