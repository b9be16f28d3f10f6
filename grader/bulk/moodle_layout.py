"""The ``moodle`` layout: Moodle's assignment "Download all submissions" zip, or its folders
unzipped, for ``layouts.discover``.

Moodle (``mod/assign``: ``downloader.php`` since 4.1, ``locallib.php`` before) names each
participant's files ``<full name>_<participant id>_assignsubmission_<plugin>``: a folder per
plugin (``..._assignsubmission_file/`` since 4.1, ``..._assignsubmission_file_/`` from 3.1 to
4.0, the files at their paths inside), or, with "Download submissions in folders" off (and
before 3.1), flat names ``..._assignsubmission_file_<file>``. Underscores of the name are
spaces there; with anonymous submissions the name is "Participant"; a group submission is
``<group name>_<group id>``. The participant id is the number of the grading worksheet's
``Participant NNN`` identifier.

Only the ``file`` plugin's files are graded (online text and other plugins are noted as
ignored). A participant's exercise file may be at any depth (the shallowest copy wins), or
inside a zip they uploaded (read as one ``zips`` submission, deeper than the files beside
it). Limits apply per participant. Ids are ``<name>_<participant id>`` sanitised; the
``Submission`` carries ``lms_id`` (the participant id), ``lms_name`` (the full name) and
``lms_kind`` ``"moodle"``.

``submitted_at`` (a zip only) is the latest time of the participant's ``file`` plugin members
(its last change of a file, as the submission's "Last modified" counts it), as the zip says:
an extended timestamp's (UTC) when a member has one, else its DOS time, which has no zone and
is read in this machine's zone. Which time Moodle writes depends on its version: each file's
own modification time (recent versions), the time the file's content was first stored on the
server (before 4.1: about when it was uploaded), or the time of the download for every member
(the zip writer of 4.1 onward, until it kept each file's time). The last kind is refused, and
every time of the zip is then unknown: member times that all fall within 10 minutes, or that,
from 3 participants on, never go back from one member to the next (in the zip's order), are
taken for the download's. An unzipped download gives no time (``None``).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import struct
import zipfile
from contextlib import ExitStack
from pathlib import Path

from .reading import (
    SHALLOWEST,
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
    scan_folder,
    unreadable,
    unsafe_name,
)

_MEMBER_RE = re.compile(
    r"(?P<name>[^/]+?)_(?P<pid>\d{1,30})_assignsubmission_(?P<plugin>[a-z0-9]+)"
    r"(?:_?/(?P<path>.+)|_(?P<flat>[^/]+))")
_FOLDER_RE = re.compile(r"(?P<name>.+?)_(?P<pid>\d{1,30})_assignsubmission_(?P<plugin>[a-z0-9]+)_?")
_DOWNLOAD_WINDOW = dt.timedelta(minutes=10)  # member times this close: the download's time
_EXTENDED_TIMESTAMP = 0x5455  # the "UT" extra field: modification time, seconds since 1970


def discover_zip(path: Path, ctx: Context) -> Discovery | None:
    """The Moodle submissions in zip ``path``, or ``None`` when no member is named like one
    (then it may be a Canvas zip)."""
    with open_zip(path) as zf:
        groups: dict[str, list[tuple[zipfile.ZipInfo, re.Match[str]]]] = {}
        stray: list[zipfile.ZipInfo] = []
        stamps: list[tuple[str, dt.datetime]] = []  # (participant, a file's time), zip order
        for info in zf.infolist():
            parts = path_parts(info.filename)
            if info.is_dir() or not parts or is_junk(parts[:1]):
                continue
            m = _MEMBER_RE.fullmatch(info.filename)
            if m is None or unsafe_name(info.filename):
                stray.append(info)
            else:
                groups.setdefault(str(int(m["pid"])), []).append((info, m))
                if m["plugin"] == "file" and (when := member_time(info)) is not None:
                    stamps.append((str(int(m["pid"])), when))
        if not groups:
            return None
        times = submission_times(stamps)
        reject_strays(ctx, path, stray, "a Moodle submission (<full name>_<participant "
                                        "id>_assignsubmission_file/<file>)")
        ordered = sorted(((f"{members[0][1]['name']}_{pid}", pid, members)
                          for pid, members in groups.items()), key=lambda item: item[0])
        for raw, pid, members in ordered:
            _finish_zip_participant(raw, pid, members, zf, path, ctx, times.get(pid))
    files = sum(len(m) for _, _, m in ordered)
    return Discovery("moodle", f"a Moodle 'Download all submissions' zip ({path.name}): "
                     f"{files} files from {len(ordered)} participants",
                     ctx.submissions, ctx.rejected)


def discover_dirs(root: Path, dirs: list[Path], ctx: Context) -> Discovery | None:
    """The Moodle submissions of an unzipped download (``dirs``: ``root``'s sub-folders), or
    ``None`` unless every sub-folder is named like a Moodle plugin folder."""
    matches = [(d, _FOLDER_RE.fullmatch(d.name)) for d in dirs]
    if not dirs or any(m is None for _, m in matches):
        return None
    groups: dict[str, list[tuple[Path, re.Match[str]]]] = {}
    for d, m in matches:
        assert m is not None
        groups.setdefault(str(int(m["pid"])), []).append((d, m))
    for pid, entries in sorted(groups.items(), key=lambda kv: f"{kv[1][0][1]['name']}_{kv[0]}"):
        name = entries[0][1]["name"]
        source = ", ".join(str(d) for d, _ in entries)
        claimed = ctx.claim(f"{name}_{pid}".replace(" ", "_"), source)
        if claimed is None:
            continue
        sid, notes = claimed
        try:
            _finish(ctx, sid, _scan_participant(entries, ctx), notes, source, pid, name)
        except Exception as exc:  # noqa: BLE001 - one submission never stops the class
            ctx.reject_owned(sid, unreadable(exc), source)
    return Discovery("moodle", f"an unzipped Moodle 'Download all submissions' folder ({root}):"
                     f" {len(dirs)} folders from {len(groups)} participants",
                     ctx.submissions, ctx.rejected)


def _scan_participant(entries: list[tuple[Path, re.Match[str]]], ctx: Context) -> Found:
    """The candidates of one participant's plugin folders."""
    found = Found()
    for d, m in entries:
        if m["plugin"] != "file":
            found.ignored_other.append(f"{d.name}/ (the {m['plugin']} plugin)")
        elif d.is_symlink():
            found.problems.append(f"{d.name} is a symbolic link, which is not followed")
        else:
            sub = scan_folder(d, ctx)
            for field in ("candidates", "ignored_py", "ignored_other", "notes", "problems"):
                getattr(found, field).extend(getattr(sub, field))
    return found


def member_time(info: zipfile.ZipInfo) -> dt.datetime | None:
    """When a zip member was last modified, as the zip says: its extended timestamp (UTC)
    when it has one, else its DOS time (no zone: read in this machine's zone); ``None`` when
    neither reads, or for the DOS time 1980-01-01 00:00 (what writers put for none)."""
    try:
        extra = bytes(info.extra)
        while len(extra) >= 4:
            kind, size = struct.unpack("<HH", extra[:4])
            body, extra = extra[4:4 + size], extra[4 + size:]
            if kind == _EXTENDED_TIMESTAMP and len(body) >= 5 and body[0] & 1:
                return dt.datetime.fromtimestamp(struct.unpack("<i", body[1:5])[0], dt.UTC)
        if tuple(info.date_time) == (1980, 1, 1, 0, 0, 0):
            return None
        return dt.datetime(*info.date_time).astimezone()
    except (ValueError, TypeError, OverflowError, OSError, struct.error):
        return None


def submission_times(stamps: list[tuple[str, dt.datetime]]) -> dict[str, dt.datetime]:
    """Participant id -> the latest time of their files, from ``(participant, a file
    member's time)`` in the zip's order; empty when the times look like the download's (all
    within 10 minutes, or never going back across 3 participants or more)."""
    if not stamps:
        return {}
    when = [t for _, t in stamps]
    if max(when) - min(when) < _DOWNLOAD_WINDOW:
        return {}
    if len({pid for pid, _ in stamps}) >= 3 and all(a <= b for a, b in zip(when, when[1:])):
        return {}
    times: dict[str, dt.datetime] = {}
    for pid, t in stamps:
        times[pid] = max(times.get(pid, t), t)
    return times


def _finish(ctx: Context, sid: str, found: Found, notes: list[str], source: str,
            pid: str, name: str, chosen_in: str | None = None,
            submitted_at: dt.datetime | None = None) -> None:
    before = len(ctx.submissions)
    ctx.finish(sid, found, notes, source, SHALLOWEST, chosen_in=chosen_in, lms=(pid, name))
    if len(ctx.submissions) > before:
        ctx.submissions[-1].lms_kind = "moodle"
        ctx.submissions[-1].submitted_at = submitted_at


def _finish_zip_participant(raw: str, pid: str, members: list[Member], zf: zipfile.ZipFile,
                            path: Path, ctx: Context,
                            submitted_at: dt.datetime | None = None) -> None:
    read_student(ctx, raw.replace(" ", "_"), members, zf, path,
                 f"the Moodle submission of {raw}", _member,
                 functools.partial(_finish, ctx, pid=pid, name=raw.rpartition("_")[0],
                                   chosen_in=path.name, submitted_at=submitted_at),
                 order=lambda member: member[0].filename)


def _member(info: zipfile.ZipInfo, m: re.Match[str], zf: zipfile.ZipFile, budget: Budget,
            found: Found, stack: ExitStack, ctx: Context) -> None:
    """Add the candidates of one member (a file of the ``file`` plugin, maybe a zip)."""
    rel = m["path"] or m["flat"]
    parts = path_parts(rel)
    if not parts or is_junk(parts):
        return
    rel = "/".join(parts)
    if m["plugin"] != "file":
        found.ignored_other.append(f"{rel} (the {m['plugin']} plugin)")
        return
    depth = len(parts) - 1
    match = match_slug(parts[-1], ctx.slug_map, upload_suffix=False)
    if match is not None:
        slug, _, exact = match
        found.candidates.append(Candidate(
            slug, parts[-1], rel, info.filename, (0, 0, -depth, int(exact)),
            loader(read_member, zf, info, ctx.limits.max_file_bytes, budget)))
        return
    if not rel.lower().endswith(".zip"):
        (found.ignored_py if rel.lower().endswith(".py") else found.ignored_other).append(rel)
        return
    nested = nested_zip(zf, info, rel, rel, found, stack, ctx, budget)
    if nested is None:
        return
    for c in nested.candidates:
        c.label, c.member = f"{c.label} in {rel}", info.filename
        c.rank = (0, 0, c.rank[2] - depth - 1, c.rank[3])
        found.candidates.append(c)
    found.take_nested(nested, rel)
