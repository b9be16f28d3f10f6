"""Find the submissions of a class in what a teacher gives `grade bulk`, and unpack them safely.

``discover(inputs, slugs, workdir)`` detects one of five layouts:

- ``folders``: ``[DIR]`` where ``DIR/<id>/`` holds ``<slug>.py`` at any depth (the shallowest
  copy wins; a tie goes to the first in sorted path order);
- ``zips``: ``[DIR]`` where ``DIR/<id>.zip`` holds ``<slug>.py`` at any depth (same rule);
- ``canvas``: ``[ZIP]``, the Canvas "download submissions" zip, members named
  ``<name>_[late_]<userid>_<submissionid>_<original filename>``; grouped by user id, and for
  each exercise the latest upload wins (highest submission id, then highest re-upload suffix
  ``<slug>-N.py``); a member that is itself a zip is read like one ``zips`` submission;
- ``moodle``: ``[ZIP]``, Moodle's "Download all submissions" zip, or ``[DIR]`` holding it
  unzipped (every sub-folder ``<full name>_<participant id>_assignsubmission_<plugin>``): see
  ``moodle_layout.py``; tried before ``canvas``;
- ``files``: a list of ``.py`` files, graded as ONE submission with id ``"files"``
  (``<slug>.py`` or ``<slug>-N.py``; the highest N wins).

Every exercise file that is kept is written by this module, as a plain file made from the bytes
it read, to ``workdir/<id>/<slug>.py``; nothing else is written and nothing is written outside
``workdir``. Inputs are only read. Zips are never extracted with ``extractall``: member names are
checked first (``..``, absolute paths, drive letters and symbolic links reject the whole zip
before anything is read), the member count and the declared unpacked size are checked against
``Limits``, and the bytes actually read are counted again while reading. Only stored and deflated
members are read (bzip2 and lzma can expand a few kilobytes into gigabytes in a single call of
the standard library's decompressor).

Bad input never raises: a whole bad submission becomes a ``Rejected`` with a one-sentence
reason, one bad file of an otherwise good submission becomes a note. This holds for any
exception reading a learner's file or zip raises (``RecursionError``, ``MemoryError``, ...,
named in the reason): one submission never stops the class. Only input that cannot be
read as any layout at all (nothing given, a path that does not exist, a folder that mixes
sub-folders and zips, a zip that is neither a Canvas nor a Moodle download) raises
``ValueError`` with one sentence, for the CLI to report as a usage error.

Decisions on cases the download formats leave open:

- Canvas ids are ``<name>_<userid>`` (readable in the report, unique by user id); the Canvas user
  id is ``id.rsplit("_", 1)[1]``. Limits apply per student there (their members together), not
  to the whole class zip.
- Ids are sanitised to ``[A-Za-z0-9._-]`` (accents dropped, other runs of characters become one
  ``_``, leading and trailing ``._-`` stripped, at most 100 characters; an id with nothing left
  becomes ``id-<8 hex digits of its hash>``). Two ids that are equal ignoring case are duplicates
  (they would share a folder on macOS and Windows): the first in sorted order is kept.
- A file named like an exercise but in another case (``Grid_Local_Mask.py``) is accepted, with a
  note; the exact spelling wins over it.
- When the chosen copy of an exercise is unusable (too large, or not source text by the rule
  of ``harness/source_text.py`` that the worker applies too: binary, not UTF-8, declaring
  another coding), an older or deeper copy is NOT used instead: it is noted, and the exercise
  counts as not submitted.
- Hidden files and folders (``.*``), ``__MACOSX`` and ``__pycache__`` are skipped silently, and
  symbolic links inside a learner's folder are never followed (a note says so). A top-level entry
  of ``DIR`` that is a symbolic link is rejected; ``.py`` files named on the command line are
  the teacher's own and may be links.
- Submissions come in sorted order of the entry names (Canvas: of the ids); rejections in the
  order met.
- ``workdir/<id>/<slug>.py`` files of the known slugs that the submission no longer has (left by
  an earlier run) are removed, so the folder always matches ``Submission.files``.
- A notebook, ``<slug>.ipynb`` (or ``<slug>-N.ipynb``), is an exercise file wherever a ``.py``
  is, under the same limits; what is written for it is the ``<slug>.py`` made from its
  definitions (``grader/notebook/extract.py``, a note says which cells were left out), and a
  notebook that cannot be graded is an unusable copy. A notebook and a ``.py`` for one exercise
  in the same upload are both unusable (the learner must choose); in different Canvas uploads
  the latest wins, as for two ``.py``.
- When a submission was made (``Submission.submitted_at``, for the late policy,
  ``grader/late.py``) is known only from a Moodle zip, by its members' times (see
  ``moodle_layout.py``). A Canvas zip's members all carry the time the zip was made (Canvas's
  ``content_zipper.rb`` leaves rubyzip's default), so a Canvas submission's time is unknown: only
  its ``late`` flag is. A folder, a folder of zips, ``.py`` files and an unzipped Moodle download
  give no time either (a file's time changes with each copy and unzip).
"""

from __future__ import annotations

import datetime
import hashlib
import io
import os
import re
import stat
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Collection, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from grader.inert import inert
from grader.sandbox.harness.source_text import text_problem

__all__ = ["Discovery", "Limits", "Rejected", "Submission", "discover"]


@dataclass
class Submission:
    """One learner's submission, ready to grade: ``files`` are copies under ``workdir``."""

    id: str
    files: dict[str, Path]
    notes: list[str]
    source: str
    late: bool = False   # a chosen upload was marked late (Canvas); no penalty is computed
    lms_id: str = ""     # the LMS's user id (Canvas: the number in the file names)
    lms_name: str = ""   # the name the LMS gave the files
    lms_kind: str = ""   # "moodle" for a Moodle download ("" with an lms_id: Canvas)
    # when it was submitted, as the download says (only a Moodle zip does); None: unknown
    submitted_at: datetime.datetime | None = None

    def __post_init__(self) -> None:  # names of uploaded files and members: shown inert
        self.notes = [inert(note) for note in self.notes]
        self.source = inert(self.source)
        self.lms_name = inert(self.lms_name)


@dataclass
class Rejected:
    """A submission (or an input entry) that cannot be graded, and why, in one sentence."""

    id: str
    reason: str
    source: str

    def __post_init__(self) -> None:
        self.reason, self.source = inert(self.reason), inert(self.source)


@dataclass
class Discovery:
    """What ``discover`` found: the layout, a line for the terminal, the submissions, the rest."""

    layout: str
    description: str
    submissions: list[Submission]
    rejected: list[Rejected]


@dataclass(frozen=True)
class Limits:
    """Size limits: per zip (or per Canvas student), and for one ``.py`` file."""

    max_total_bytes: int = 50 * 2**20
    max_files: int = 2000
    max_file_bytes: int = 2 * 2**20


_CHUNK = 1 << 16
_JUNK = {"__MACOSX", "__pycache__"}
_ID_MAX = 100
_LIST_MAX = 5
_SLUG_RE = re.compile(r"[A-Za-z0-9_]+")
_LEARNER_SUFFIXES = (".py", ".ipynb")  # a learner file: a module or a notebook
_UPLOAD_RE = re.compile(r"(?P<stem>.+)-(?P<n>\d{1,9})")
_CANVAS_RE = re.compile(
    r"(?P<name>[^/]+?)_(?:(?P<late>late)_)?(?P<user>\d{1,30})_(?:(?P<sub>\d{1,30})_)?"
    r"(?P<orig>[^/]+)",
    re.IGNORECASE,
)
_SHALLOWEST = "the shallowest of {n} copies"
_READABLE_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}


class _Reject(Exception):
    """The whole submission is rejected; the message is the reason (one sentence)."""


class _FileProblem(Exception):
    """One file cannot be used; the message completes "<file> ..." (e.g. "is binary ...")."""


@dataclass
class _Candidate:
    slug: str
    filename: str                    # the file's own name, as found
    label: str                       # how notes name it
    member: str                      # how ``source`` names it
    rank: tuple[int, int, int, int]  # (submission id, re-upload N, -depth, exact spelling)
    load: Callable[[], bytes]
    late: bool = False


@dataclass
class _Found:
    candidates: list[_Candidate] = field(default_factory=list)
    ignored_py: list[str] = field(default_factory=list)
    ignored_other: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # e.g. a sub-folder that cannot be read


class _Budget:
    """Bytes left to unpack from one zip (or one Canvas student's files): ``what`` names it."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.left = limit
        self.what = what

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise _Reject(f"{self.what} unpacks to more than {_size(self.limit)}, the size "
                          "limit (a zip bomb?)")


def discover(inputs: list[Path], slugs: Collection[str], workdir: Path,
             limits: Limits = Limits()) -> Discovery:
    """Detect the layout of ``inputs``, copy each submission's exercise files into
    ``workdir/<id>/<slug>.py`` and return what was found.

    ``slugs`` are the exercises to look for (files with other names are ignored with a note).
    Raises ``ValueError`` (one sentence) only when ``inputs`` fit no layout; every problem with a
    single submission is a ``Rejected`` entry or a note instead.
    """
    slug_map = _slug_map(slugs)
    paths = [Path(p) for p in inputs]
    if not paths:
        raise ValueError("no submissions given: pass a folder, a Canvas zip or .py files")
    for p in paths:
        if not p.exists():
            raise ValueError(f"{p} does not exist")
    ctx = _Context(slug_map, Path(workdir), limits, paths)
    if len(paths) == 1 and paths[0].is_dir():
        return _discover_dir(paths[0], ctx)
    if len(paths) == 1 and paths[0].is_file() and paths[0].name.lower().endswith(".zip"):
        from . import moodle_layout

        return moodle_layout.discover_zip(paths[0], ctx) or _discover_canvas(paths[0], ctx)
    if all(p.is_file() and p.name.lower().endswith(_LEARNER_SUFFIXES) for p in paths):
        return _discover_files(paths, ctx)
    odd = next((p for p in paths
                if not (p.is_file() and p.name.lower().endswith(_LEARNER_SUFFIXES))), paths[0])
    raise ValueError(f"cannot grade {odd} together with the other inputs: pass one folder, one "
                     "Canvas zip, or a list of .py or .ipynb files")


# --- layouts ----------------------------------------------------------------------------------


class _Context:
    """Settings shared by one ``discover`` call, and the ids claimed so far."""

    def __init__(self, slug_map: dict[str, str], workdir: Path, limits: Limits,
                 inputs: list[Path]) -> None:
        self.slug_map = slug_map
        self.workdir = workdir
        self.limits = limits
        self.inputs = [Path(os.path.realpath(p)) for p in inputs]
        self.claimed: dict[str, str] = {}   # id.lower() -> source of the first one
        self.submissions: list[Submission] = []
        self.rejected: list[Rejected] = []

    def expected(self) -> str:
        names = ", ".join(f"{s}.py" for s in sorted(self.slug_map.values()))
        return f"no exercise files (expected one of: {names}, or the same as .ipynb)"

    def claim(self, raw: str, source: str) -> tuple[str, list[str]] | None:
        """Sanitise ``raw`` into an id and claim it; ``None`` (and a rejection) if taken."""
        sid = _sanitise_id(raw)
        notes = [] if sid == raw else [f"id {raw!r} sanitised to {sid!r}"]
        first = self.claimed.get(sid.lower())
        if first is not None:
            self.rejected.append(Rejected(sid, f"duplicate id {sid!r}: {first} already has it, "
                                               "so this one is not graded", source))
            return None
        self.claimed[sid.lower()] = source
        return sid, notes

    def finish(self, sid: str, found: _Found, notes: list[str], source: str, why: str,
               chosen_in: str | None = None, lms: tuple[str, str] = ("", "")) -> None:
        """Choose, check and write the files of claimed id ``sid``; record the outcome.

        ``why`` says which copy wins ("the shallowest of {n} copies"). With ``chosen_in``
        (Canvas: the class zip's name) the source is that name and the chosen members' names."""
        overlap = self._overlap(sid)
        if overlap is not None:
            self.rejected.append(Rejected(sid, overlap, source))
            return
        try:
            data, chosen, notes = _assemble(found, notes, why, self.expected())
            if any(c.late for c in chosen.values()):
                notes.insert(0, "late")
            files = _write_files(self.workdir, sid, data, self.slug_map.values())
        except _Reject as exc:
            self.reject_owned(sid, str(exc), source)
            return
        except Exception as exc:  # noqa: BLE001 - one submission never stops the class
            self.reject_owned(sid, _unreadable(exc), source)
            return
        if chosen_in is not None:
            source = f"{chosen_in}: {', '.join(c.member for c in chosen.values())}"
        self.submissions.append(Submission(sid, files, notes, source,
                                           late=any(c.late for c in chosen.values()),
                                           lms_id=lms[0], lms_name=lms[1]))

    def reject_owned(self, sid: str, reason: str, source: str) -> None:
        """Reject claimed id ``sid`` and remove exercise files an earlier run left for it."""
        if self._overlap(sid) is None:
            _clear_stale(self.workdir / sid, self.slug_map.values(), keep=())
        self.rejected.append(Rejected(sid, reason, source))

    def _overlap(self, sid: str) -> str | None:
        """A reason when ``workdir/<sid>`` is an input or holds one (it would be written to)."""
        dest = Path(os.path.realpath(self.workdir / sid))
        for p in self.inputs:
            if p == dest or p.is_relative_to(dest):
                return (f"its work folder {self.workdir / sid} would overlap the input {p}, "
                        "which is never written to")
        return None

    def skip(self, child: Path) -> bool:
        """Whether a top-level entry is noise or the work folder itself."""
        if child.name.startswith(".") or child.name in _JUNK:
            return True
        real, work = Path(os.path.realpath(child)), Path(os.path.realpath(self.workdir))
        return work == real or work.is_relative_to(real)


def _discover_dir(root: Path, ctx: _Context) -> Discovery:
    try:
        children = sorted((c for c in root.iterdir() if not ctx.skip(c)), key=lambda c: c.name)
    except OSError as exc:
        raise ValueError(f"cannot list {root} ({exc.strerror})") from None
    dirs = [c for c in children if c.is_dir()]
    zips = [c for c in children if c.is_file() and c.name.lower().endswith(".zip")]
    loose = [c for c in children if c not in dirs and c not in zips]
    if dirs and zips:
        raise ValueError(f"{root} mixes {len(dirs)} sub-folders and {len(zips)} zip files: "
                         "put one layout in a folder and grade it on its own")
    if not dirs and not zips:
        if any(c.name.lower().endswith(".py") for c in loose):
            raise ValueError(f"{root} holds .py files but no sub-folders or zip files: to grade "
                             "them as one submission, pass the .py files themselves")
        raise ValueError(f"{root} holds no sub-folders or zip files to grade")
    if dirs and not loose:
        from . import moodle_layout

        if (moodle := moodle_layout.discover_dirs(root, dirs, ctx)) is not None:
            return moodle
    entries = dirs or zips
    for entry in entries:
        source = str(entry)
        claimed = ctx.claim(entry.name if dirs else entry.name[:-4], source)
        if claimed is None:
            continue
        sid, notes = claimed
        if entry.is_symlink():
            ctx.reject_owned(sid, f"{entry.name} is a symbolic link, which is not followed",
                             source)
            continue
        if dirs:
            try:
                ctx.finish(sid, _scan_folder(entry, ctx), notes, source, _SHALLOWEST)
            except Exception as exc:  # noqa: BLE001 - one submission never stops the class
                ctx.reject_owned(sid, _unreadable(exc), source)
        else:
            _finish_zip(sid, entry, notes, ctx)
    kind = (f"a folder of {len(dirs)} sub-folders" if dirs
            else f"a folder of {len(zips)} zip files")
    description = f"{kind}, one per submission ({root})"
    if loose:
        description += f"; ignored {len(loose)} other entries: {_names(c.name for c in loose)}"
    return Discovery("folders" if dirs else "zips", description, ctx.submissions, ctx.rejected)


def _finish_zip(sid: str, path: Path, notes: list[str], ctx: _Context) -> None:
    source = str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            found = _scan_zip(zf, ctx.slug_map, ctx.limits, path.name)
            ctx.finish(sid, found, notes, source, _SHALLOWEST)
    except _Reject as exc:
        ctx.reject_owned(sid, str(exc), source)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        ctx.reject_owned(sid, f"{path.name} is not a readable zip file ({_err(exc)})", source)
    except Exception as exc:  # noqa: BLE001 - one submission never stops the class
        ctx.reject_owned(sid, _unreadable(exc), source)


def _discover_files(paths: list[Path], ctx: _Context) -> Discovery:
    found = _Found()
    for order, p in enumerate(paths):
        match = _match_slug(p.name, ctx.slug_map, upload_suffix=True)
        if match is None:
            found.ignored_py.append(str(p))
            continue
        slug, n, exact = match
        found.candidates.append(_Candidate(
            slug, p.name, str(p), str(p), (0, n, -order, int(exact)),
            _loader(_read_path, p, ctx.limits.max_file_bytes, True)))
    source = ", ".join(str(p) for p in paths)
    ctx.claimed["files"] = source
    ctx.finish("files", found, [], source, "the latest of {n} files")
    return Discovery("files", f"{len(paths)} .py files given as one submission",
                     ctx.submissions, ctx.rejected)


def open_zip(path: Path) -> zipfile.ZipFile:
    """``path`` opened as a zip file, or ``ValueError`` saying in one sentence why not."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ValueError(f"cannot read {path} as a zip file ({_err(exc)})") from None


def _discover_canvas(path: Path, ctx: _Context) -> Discovery:
    with open_zip(path) as zf:
        groups: dict[str, list[tuple[zipfile.ZipInfo, re.Match[str]]]] = {}
        stray: list[zipfile.ZipInfo] = []
        for info in zf.infolist():
            parts = _parts(info.filename)
            if info.is_dir() or not parts or _is_junk(parts):
                continue
            m = _CANVAS_RE.fullmatch(info.filename)
            if m is None or _unsafe_name(info.filename):
                stray.append(info)
            else:
                groups.setdefault(str(int(m["user"])), []).append((info, m))
        if not groups:
            raise ValueError(f"{path} is neither a Canvas 'download submissions' zip nor a "
                             "Moodle 'Download all submissions' zip: no member is named "
                             "<name>_<userid>_<submissionid>_<file> or <full name>_"
                             "<participant id>_assignsubmission_file/<file>")
        for info in stray:
            why = ("has an unsafe path" if _unsafe_name(info.filename)
                   else "is not named like a Canvas submission "
                        "(<name>_<userid>_<submissionid>_<file>)")
            ctx.rejected.append(Rejected(info.filename, f"member {info.filename!r} {why}, so "
                                         "it was not unpacked", f"{path.name}: {info.filename}"))
        ordered = []
        for user, members in groups.items():
            newest = max(members, key=lambda im: (int(im[1]["sub"] or 0), im[0].filename))
            ordered.append((f"{newest[1]['name']}_{user}", members))
        for raw, members in sorted(ordered, key=lambda item: item[0]):
            _finish_canvas_user(raw, members, zf, path, ctx)
    return Discovery("canvas", f"a Canvas 'download submissions' zip ({path.name}): "
                     f"{sum(len(m) for _, m in ordered)} files from {len(ordered)} students",
                     ctx.submissions, ctx.rejected)


def _finish_canvas_user(raw: str, members: list[tuple[zipfile.ZipInfo, re.Match[str]]],
                        zf: zipfile.ZipFile, path: Path, ctx: _Context) -> None:
    limits = ctx.limits
    source = f"{path.name}: {_names(info.filename for info, _ in members)}"
    claimed = ctx.claim(raw, source)
    if claimed is None:
        return
    sid, notes = claimed
    found = _Found()
    what = f"the Canvas submission of {raw}"
    try:
        _check_members([info for info, _ in members], limits, what)
        budget = _Budget(limits.max_total_bytes, what)
        with ExitStack() as stack:
            for info, m in members:
                _canvas_member(info, m, zf, budget, found, stack, ctx)
            name, _, user = raw.rpartition("_")
            ctx.finish(sid, found, notes, source, "the latest of {n} uploads", chosen_in=path.name,
                       lms=(user, name))
    except _Reject as exc:
        ctx.reject_owned(sid, str(exc), source)
    except Exception as exc:  # noqa: BLE001 - one submission never stops the class
        ctx.reject_owned(sid, _unreadable(exc), source)


def nested_zip(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, label: str,
               found: _Found, stack: ExitStack, ctx: _Context, budget: _Budget) -> _Found | None:
    """The files of a student's own zip, the member ``info`` of an LMS download, scanned
    (``where`` names it in their labels); None when it cannot be read, after noting why in
    ``found.problems`` under ``label``."""
    try:
        data = _read_member(zf, info, ctx.limits.max_total_bytes, budget)
        inner = stack.enter_context(zipfile.ZipFile(io.BytesIO(data)))
        return _scan_zip(inner, ctx.slug_map, ctx.limits, where)
    except _FileProblem as exc:
        found.problems.append(f"{label} {exc}")
    except _Reject:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile's errors on a crafted zip vary
        found.problems.append(f"{label} is not a readable zip file ({_err(exc)})")
    return None


def _canvas_member(info: zipfile.ZipInfo, m: re.Match[str], zf: zipfile.ZipFile,
                   budget: _Budget, found: _Found, stack: ExitStack, ctx: _Context) -> None:
    """Add the candidates of one Canvas member (a ``.py`` file or a zip of them) to ``found``."""
    orig, sub, late = m["orig"], int(m["sub"] or 0), m["late"] is not None
    label = f"{orig} (submission {sub})" if m["sub"] else orig
    match = _match_slug(orig, ctx.slug_map, upload_suffix=True)
    if match is not None:
        slug, n, exact = match
        found.candidates.append(_Candidate(
            slug, orig, label, info.filename, (sub, n, 0, int(exact)),
            _loader(_read_member, zf, info, ctx.limits.max_file_bytes, budget), late))
        return
    if not orig.lower().endswith(".zip"):
        (found.ignored_py if orig.lower().endswith(".py") else found.ignored_other).append(orig)
        return
    upload = _UPLOAD_RE.fullmatch(orig[:-4])
    n = int(upload["n"]) if upload else 0
    nested = nested_zip(zf, info, f"{orig} (submission {sub})", label, found, stack, ctx,
                        budget)
    if nested is None:
        return
    for c in nested.candidates:
        c.label, c.member, c.late = f"{c.label} in {label}", info.filename, late
        c.rank = (sub, n, *c.rank[2:])
        found.candidates.append(c)
    found.ignored_py += [f"{name} in {orig}" for name in nested.ignored_py]
    found.ignored_other += [f"{name} in {orig}" for name in nested.ignored_other]
    found.notes += nested.notes
    found.problems += nested.problems


# --- scanning ---------------------------------------------------------------------------------


def _scan_folder(root: Path, ctx: _Context) -> _Found:
    """Candidates in a learner's folder, without following symbolic links."""
    found = _Found()

    def unreadable(err: OSError) -> None:
        found.problems.append(f"folder {err.filename} could not be read ({err.strerror})")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        dirnames[:] = sorted(d for d in dirnames if not _is_junk([d]))
        for name in sorted(filenames):
            if _is_junk([name]):
                continue
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            match = _match_slug(name, ctx.slug_map, upload_suffix=False)
            if match is None:
                (found.ignored_py if name.lower().endswith(".py")
                 else found.ignored_other).append(rel)
            elif full.is_symlink():
                found.notes.append(f"ignored {rel}: a symbolic link, which is not followed")
            else:
                slug, _, exact = match
                found.candidates.append(_Candidate(
                    slug, name, rel, rel, (0, 0, -rel.count("/"), int(exact)),
                    _loader(_read_path, full, ctx.limits.max_file_bytes, False)))
    return found


def _scan_zip(zf: zipfile.ZipFile, slug_map: dict[str, str], limits: Limits,
              what: str) -> _Found:
    """Candidates in one learner's zip (``what`` names it in reasons); raises ``_Reject`` for
    an unsafe or oversized zip before anything is read."""
    infos = zf.infolist()
    _check_members(infos, limits, what)
    budget = _Budget(limits.max_total_bytes, what)
    found = _Found()
    for info in sorted(infos, key=lambda i: i.filename):
        parts = _parts(info.filename)
        if info.is_dir() or not parts or _is_junk(parts):
            continue
        rel = "/".join(parts)
        match = _match_slug(parts[-1], slug_map, upload_suffix=False)
        if match is None:
            (found.ignored_py if rel.lower().endswith(".py") else found.ignored_other).append(rel)
            continue
        slug, _, exact = match
        found.candidates.append(_Candidate(
            slug, parts[-1], rel, rel, (0, 0, -(len(parts) - 1), int(exact)),
            _loader(_read_member, zf, info, limits.max_file_bytes, budget)))
    return found


def _check_members(infos: list[zipfile.ZipInfo], limits: Limits, what: str) -> None:
    """Reject unsafe names, symbolic links, too many members or a too large declared size."""
    if len(infos) > limits.max_files:
        raise _Reject(f"{what} has {len(infos)} members, over the limit of {limits.max_files}")
    for info in infos:
        if _unsafe_name(info.filename):
            raise _Reject(f"{what} has a member with an unsafe path ({info.filename!r}), so "
                          "nothing was unpacked")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise _Reject(f"{what} has a symbolic link member ({info.filename!r}), so nothing "
                          "was unpacked")
    declared = sum(info.file_size for info in infos)
    if declared > limits.max_total_bytes:
        raise _Reject(f"{what} declares {_size(declared)} unpacked, over the "
                      f"{_size(limits.max_total_bytes)} limit (a zip bomb?)")


# --- choosing, checking, writing --------------------------------------------------------------


def _assemble(found: _Found, notes: list[str], why: str, expected: str
              ) -> tuple[dict[str, bytes], dict[str, _Candidate], list[str]]:
    """Pick the best candidate per exercise, read and check it; the bytes, choices and notes."""
    notes = notes + found.notes
    groups: dict[str, list[_Candidate]] = {}
    for c in found.candidates:
        groups.setdefault(c.slug, []).append(c)
    data: dict[str, bytes] = {}
    chosen: dict[str, _Candidate] = {}
    problems: list[str] = list(found.problems)
    notes += [f"{p}; skipped" for p in found.problems]
    for slug in sorted(groups):
        group = groups[slug]
        best = max(group, key=lambda c: c.rank)   # the first of equals: sorted order wins
        others = [c.label for c in group if c is not best]
        rival = _other_kind(best, group)
        if rival is not None:
            problems.append(f"{best.label} and {rival.label} are both there for {slug}")
            notes.append(f"{best.label} and {rival.label} are both there for {slug} (a "
                         "notebook and a .py file: hand in one of them); skipped")
            continue
        if others:
            notes.append(f"{slug}.py: took {best.label}, {why.format(n=len(group))}; "
                         f"ignored {_names(others)}")
        elif best.filename not in (f"{slug}.py", f"{slug}.ipynb"):
            notes.append(f"took {best.label} as {slug}{_suffix(best.filename)}")
        try:
            content = best.load()
            _check_text(content)
            if _suffix(best.filename) == ".ipynb":
                content = _from_notebook(content, slug, notes)
        except _Reject:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad file never stops the rest
            why = str(exc) if isinstance(exc, _FileProblem) else \
                f"could not be read ({_err(exc)})"
            problems.append(f"{best.label} {why}")
            notes.append(f"{best.label} {why}; skipped")
            continue
        data[slug], chosen[slug] = content, best
    if found.ignored_py:
        notes.append(f"ignored {_names(found.ignored_py)}: only exercise files are graded "
                     "(helper modules are not copied)")
    if found.ignored_other:
        notes.append(f"ignored {len(found.ignored_other)} other "
                     f"{'file' if len(found.ignored_other) == 1 else 'files'}: "
                     f"{_names(found.ignored_other)}")
    if not data:
        if problems:
            raise _Reject(f"no usable exercise file: {'; '.join(problems)}")
        seen = found.ignored_py + found.ignored_other
        raise _Reject(expected + (f"; found only {_names(seen)}" if seen else "; it is empty"))
    return data, chosen, notes


def _suffix(filename: str) -> str:
    return ".ipynb" if filename.lower().endswith(".ipynb") else ".py"


def _other_kind(best: _Candidate, group: list[_Candidate]) -> _Candidate | None:
    """A candidate of the same upload as ``best`` (its submission id) of the other kind (a
    notebook beside a ``.py``): the learner must choose, so neither is graded."""
    return next((c for c in group if c.rank[0] == best.rank[0]
                 and _suffix(c.filename) != _suffix(best.filename)), None)


def _from_notebook(content: bytes, slug: str, notes: list[str]) -> bytes:
    """The learner file generated from a notebook's definitions (its note added to
    ``notes``); raises ``_FileProblem`` for a notebook that cannot be graded."""
    from grader.notebook.extract import NotebookError, from_notebook

    try:
        made = from_notebook(content, f"{slug}.ipynb")
    except NotebookError as exc:
        raise _FileProblem(str(exc)) from None
    if made.note:
        notes.append(made.note)
    return made.text.encode("utf-8")


def _check_text(content: bytes) -> None:
    if (problem := text_problem(content)) is not None:
        raise _FileProblem(problem)


def _write_files(workdir: Path, sid: str, data: dict[str, bytes],
                 slugs: Iterable[str]) -> dict[str, Path]:
    """Write ``workdir/<sid>/<slug>.py`` from bytes (temporary file, then rename)."""
    dest = workdir / sid
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            raise _Reject(f"its work folder {dest} exists and is not a folder")
        dest.mkdir(exist_ok=True)
        files: dict[str, Path] = {}
        for slug, content in data.items():
            final, part = dest / f"{slug}.py", dest / f".{slug}.py.part"
            if part.is_symlink() or part.exists():
                part.unlink()
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
            os.replace(part, final)
            files[slug] = final
        _clear_stale(dest, slugs, keep=data.keys())
        return files
    except OSError as exc:
        raise _Reject(f"its files could not be written to {dest} ({_err(exc)})") from None


def _clear_stale(dest: Path, slugs: Iterable[str], keep: Collection[str]) -> None:
    """Remove ``dest/<slug>.py`` for known slugs not in ``keep`` (left by an earlier run), and
    ``dest`` itself when that leaves it empty; best effort, never raises."""
    try:
        if dest.is_symlink() or not dest.is_dir():
            return
        for slug in slugs:
            stale = dest / f"{slug}.py"
            if slug not in keep and (stale.is_symlink() or stale.is_file()):
                stale.unlink()
        if not keep and not any(dest.iterdir()):
            dest.rmdir()
    except OSError:
        pass


# --- reading ----------------------------------------------------------------------------------


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _loader(fn: Callable[..., bytes], *args: object) -> Callable[[], bytes]:
    return lambda: fn(*args)


def _read_path(path: Path, cap: int, follow: bool) -> bytes:
    """At most ``cap`` bytes of a regular file (never a FIFO or device; links only if
    ``follow``); ``_FileProblem`` otherwise."""
    flags = os.O_RDONLY | _O_NONBLOCK | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _FileProblem(f"could not be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise _FileProblem("is not a regular file")
        try:
            content = fh.read(cap + 1)
        except OSError as exc:
            raise _FileProblem(f"could not be read ({exc.strerror})") from None
    if len(content) > cap:
        raise _FileProblem(f"is larger than the {_size(cap)} limit for one file")
    return content


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, budget: _Budget) -> bytes:
    """At most ``cap`` bytes of a zip member, counting the bytes actually unpacked against
    ``budget``: ``_FileProblem`` for a member that cannot be used, ``_Reject`` for a lying one."""
    if info.file_size > cap:
        raise _FileProblem(f"is larger than the {_size(cap)} limit for one file")
    if info.compress_type not in _READABLE_METHODS:
        raise _FileProblem(f"uses compression method {info.compress_type}; only stored and "
                           "deflated members are read")
    try:
        with zf.open(info) as fh:
            return _read_capped(fh, min(cap, info.file_size), budget, info.filename)
    except (_Reject, _FileProblem):
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError,
            OSError, ValueError) as exc:
        raise _FileProblem(f"could not be read from the zip ({_err(exc)})") from None


def _read_capped(fh: io.BufferedIOBase, cap: int, budget: _Budget,
                 name: str) -> bytes:
    """Read ``fh`` to the end, but never more than ``cap`` + 1 bytes; ``_Reject`` past ``cap``."""
    chunks: list[bytes] = []
    got = 0
    while chunk := fh.read(min(_CHUNK, cap + 1 - got)):
        got += len(chunk)
        budget.take(len(chunk))
        if got > cap:
            raise _Reject(f"zip member {name!r} unpacks to more than its header declares "
                          "(a zip bomb?)")
        chunks.append(chunk)
    return b"".join(chunks)


# --- names ------------------------------------------------------------------------------------


def _slug_map(slugs: Collection[str]) -> dict[str, str]:
    if not slugs:
        raise ValueError("no exercises to look for")
    for slug in slugs:
        if not _SLUG_RE.fullmatch(slug):
            raise ValueError(f"exercise name {slug!r} is not a plain identifier")
    return {s.lower(): s for s in sorted(slugs, key=lambda s: (s.lower() != s, s))}


def _match_slug(filename: str, slug_map: dict[str, str],
                upload_suffix: bool) -> tuple[str, int, bool] | None:
    """``(slug, re-upload N, exact spelling)`` for ``<slug>.py`` (or ``<slug>-N.py``), or the
    same names ending in ``.ipynb`` (a notebook)."""
    suffix = next((s for s in _LEARNER_SUFFIXES if filename.lower().endswith(s)), None)
    if suffix is None:
        return None
    stem = filename[:-len(suffix)]
    slug = slug_map.get(stem.lower())
    if slug is not None:
        return slug, 0, filename == f"{slug}{suffix}"
    upload = _UPLOAD_RE.fullmatch(stem) if upload_suffix else None
    if upload and (slug := slug_map.get(upload["stem"].lower())) is not None:
        return slug, int(upload["n"]), upload["stem"] == slug and filename.endswith(suffix)
    return None


def _sanitise_id(raw: str) -> str:
    text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")[:_ID_MAX].strip("._-")
    return text or "id-" + hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:8]


def _parts(name: str) -> list[str]:
    return [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]


def _is_junk(parts: list[str]) -> bool:
    return any(p.startswith(".") or p in _JUNK for p in parts)


def _unsafe_name(name: str) -> bool:
    """Absolute, drive-relative, or climbing out with ``..`` (either slash)."""
    norm = name.replace("\\", "/")
    return (norm.startswith("/") or re.match(r"[A-Za-z]:", norm) is not None
            or ".." in norm.split("/") or "\x00" in name)


def _names(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_LIST_MAX])
    return shown if len(items) <= _LIST_MAX else f"{shown} and {len(items) - _LIST_MAX} more"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _unreadable(exc: BaseException) -> str:
    """The reason for a submission whose reading raised ``exc`` unexpectedly, one sentence."""
    return f"its files could not be read ({_err(exc)})"


def _err(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:160] if text else type(exc).__name__
