"""The reading core of every ``grade bulk`` layout (``layouts.py``, ``canvas_layout.py``,
``moodle_layout.py``): what a submission is, how a learner's folder or zip is scanned for
exercise files, how the copy of each exercise is chosen, checked and written, and every limit
on what is read.

Each layout finds its submissions' candidates (``Candidate``, gathered in a ``Found``) and hands
them to ``Context.finish``, which picks one copy per exercise, reads it within ``Limits`` (a
``Budget`` per zip or per LMS student), checks that it is source text, and writes it to
``workdir/<id>/<slug>.py``: the only file this package writes. A whole submission that cannot
be used raises ``Reject`` (its one-sentence reason); one unusable file raises ``FileProblem``
and becomes a note. The rules themselves are ``layouts.py``'s docstring.
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
from typing import Any

from grader import numbers
from grader.inert import inert
from grader.sandbox.harness.source_text import text_problem


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


CHUNK = 1 << 16  # bytes read at a time from a zip member
_JUNK = {"__MACOSX", "__pycache__"}
_ID_MAX = 100
_LIST_MAX = 5
_SLUG_RE = re.compile(r"[A-Za-z0-9_]+")
LEARNER_SUFFIXES = (".py", ".ipynb")  # a learner file: a module or a notebook
UPLOAD_RE = re.compile(r"(?P<stem>.+)-(?P<n>\d{1,9})")
SHALLOWEST = "the shallowest of {n} copies"  # ``Context.finish``'s ``why`` of most layouts
_READABLE_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}


class Reject(Exception):
    """The whole submission is rejected; the message is the reason (one sentence)."""


class FileProblem(Exception):
    """One file cannot be used; the message completes "<file> ..." (e.g. "is binary ...")."""


@dataclass
class Candidate:
    """One copy of an exercise file a layout found: ``load`` reads it (within the limits) only
    if it is the copy chosen; the highest ``rank`` wins."""

    slug: str
    filename: str                    # the file's own name, as found
    label: str                       # how notes name it
    member: str                      # how ``source`` names it
    rank: tuple[int, int, int, int]  # (submission id, re-upload N, -depth, exact spelling)
    load: Callable[[], bytes]
    late: bool = False


@dataclass
class Found:
    """What a scan of one submission (a folder, a zip, an LMS student's members) found."""

    candidates: list[Candidate] = field(default_factory=list)
    ignored_py: list[str] = field(default_factory=list)
    ignored_other: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # e.g. a sub-folder that cannot be read

    def take_nested(self, nested: Found, within: str) -> None:
        """Take what was found in a zip inside this submission but its candidates (the
        layout's to label and rank): the files it ignored, named ``in <within>``, its notes
        and its problems."""
        self.ignored_py += [f"{name} in {within}" for name in nested.ignored_py]
        self.ignored_other += [f"{name} in {within}" for name in nested.ignored_other]
        self.notes += nested.notes
        self.problems += nested.problems


class Budget:
    """Bytes left to unpack from one zip (or one Canvas student's files): ``what`` names it."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.left = limit
        self.what = what

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise Reject(f"{self.what} unpacks to more than {numbers.size(self.limit)}, the size "
                         "limit (a zip bomb?)")


class Context:
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
        sid = sanitise_id(raw)
        notes = [] if sid == raw else [f"id {raw!r} sanitised to {sid!r}"]
        first = self.claimed.get(sid.lower())
        if first is not None:
            self.rejected.append(Rejected(sid, f"duplicate id {sid!r}: {first} already has it, "
                                               "so this one is not graded", source))
            return None
        self.claimed[sid.lower()] = source
        return sid, notes

    def finish(self, sid: str, found: Found, notes: list[str], source: str, why: str,
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
        except Reject as exc:
            self.reject_owned(sid, str(exc), source)
            return
        except Exception as exc:  # noqa: BLE001 - one submission never stops the class
            self.reject_owned(sid, unreadable(exc), source)
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


def open_zip(path: Path) -> zipfile.ZipFile:
    """``path`` opened as a zip file, or ``ValueError`` saying in one sentence why not."""
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise ValueError(f"cannot read {path} as a zip file ({error_text(exc)})") from None


# one member of an LMS download, and the parts of its name
Member = tuple[zipfile.ZipInfo, re.Match[str]]


def reject_strays(ctx: Context, path: Path, stray: list[zipfile.ZipInfo], named: str) -> None:
    """Reject each member of the LMS download ``path`` in ``stray``: one with an unsafe path,
    or not named like a submission's member (``named``: how one is); none is unpacked."""
    for info in stray:
        why = ("has an unsafe path" if unsafe_name(info.filename)
               else f"is not named like {named}")
        ctx.rejected.append(Rejected(info.filename, f"member {info.filename!r} {why}, so it "
                                     "was not unpacked", f"{path.name}: {info.filename}"))


def read_student(ctx: Context, raw: str, members: list[Member], zf: zipfile.ZipFile,
                 path: Path, what: str, add: Callable[..., None],
                 finish: Callable[[str, Found, list[str], str], None],
                 order: Callable[[Member], Any] | None = None) -> None:
    """One student's ``members`` of the LMS download ``path`` (open as ``zf``), as one
    submission claimed as ``raw``: the members checked against the limits together (``what``
    names them in reasons), ``add(info, match, zf, budget, found, stack, ctx)`` adding each
    one's candidates (sorted by ``order`` when given), then ``finish(id, found, notes,
    source)``. A submission that cannot be read is rejected: nothing is raised."""
    source = f"{path.name}: {listed(info.filename for info, _ in members)}"
    claimed = ctx.claim(raw, source)
    if claimed is None:
        return
    sid, notes = claimed
    found = Found()
    try:
        check_members([info for info, _ in members], ctx.limits, what)
        budget = Budget(ctx.limits.max_total_bytes, what)
        with ExitStack() as stack:
            for info, m in (members if order is None else sorted(members, key=order)):
                add(info, m, zf, budget, found, stack, ctx)
            finish(sid, found, notes, source)
    except Reject as exc:
        ctx.reject_owned(sid, str(exc), source)
    except Exception as exc:  # noqa: BLE001 - one submission never stops the class
        ctx.reject_owned(sid, unreadable(exc), source)


def nested_zip(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, label: str,
               found: Found, stack: ExitStack, ctx: Context, budget: Budget) -> Found | None:
    """The files of a student's own zip, the member ``info`` of an LMS download, scanned
    (``where`` names it in their labels); None when it cannot be read, after noting why in
    ``found.problems`` under ``label``."""
    try:
        data = read_member(zf, info, ctx.limits.max_total_bytes, budget)
        inner = stack.enter_context(zipfile.ZipFile(io.BytesIO(data)))
        return scan_zip(inner, ctx.slug_map, ctx.limits, where)
    except FileProblem as exc:
        found.problems.append(f"{label} {exc}")
    except Reject:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile's errors on a crafted zip vary
        found.problems.append(f"{label} is not a readable zip file ({error_text(exc)})")
    return None


# --- scanning ---------------------------------------------------------------------------------


def scan_folder(root: Path, ctx: Context) -> Found:
    """Candidates in a learner's folder, without following symbolic links."""
    found = Found()

    def unreadable(err: OSError) -> None:
        found.problems.append(f"folder {err.filename} could not be read ({err.strerror})")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        dirnames[:] = sorted(d for d in dirnames if not is_junk([d]))
        for name in sorted(filenames):
            if is_junk([name]):
                continue
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            match = match_slug(name, ctx.slug_map, upload_suffix=False)
            if match is None:
                (found.ignored_py if name.lower().endswith(".py")
                 else found.ignored_other).append(rel)
            elif full.is_symlink():
                found.notes.append(f"ignored {rel}: a symbolic link, which is not followed")
            else:
                slug, _, exact = match
                found.candidates.append(Candidate(
                    slug, name, rel, rel, (0, 0, -rel.count("/"), int(exact)),
                    loader(read_path, full, ctx.limits.max_file_bytes, False)))
    return found


def scan_zip(zf: zipfile.ZipFile, slug_map: dict[str, str], limits: Limits,
             what: str) -> Found:
    """Candidates in one learner's zip (``what`` names it in reasons); raises ``Reject`` for
    an unsafe or oversized zip before anything is read."""
    infos = zf.infolist()
    check_members(infos, limits, what)
    budget = Budget(limits.max_total_bytes, what)
    found = Found()
    for info in sorted(infos, key=lambda i: i.filename):
        parts = path_parts(info.filename)
        if info.is_dir() or not parts or is_junk(parts):
            continue
        rel = "/".join(parts)
        match = match_slug(parts[-1], slug_map, upload_suffix=False)
        if match is None:
            (found.ignored_py if rel.lower().endswith(".py") else found.ignored_other).append(rel)
            continue
        slug, _, exact = match
        found.candidates.append(Candidate(
            slug, parts[-1], rel, rel, (0, 0, -(len(parts) - 1), int(exact)),
            loader(read_member, zf, info, limits.max_file_bytes, budget)))
    return found


def check_members(infos: list[zipfile.ZipInfo], limits: Limits, what: str) -> None:
    """Reject unsafe names, symbolic links, too many members or a too large declared size."""
    if len(infos) > limits.max_files:
        raise Reject(f"{what} has {len(infos)} members, over the limit of {limits.max_files}")
    for info in infos:
        if unsafe_name(info.filename):
            raise Reject(f"{what} has a member with an unsafe path ({info.filename!r}), so "
                         "nothing was unpacked")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise Reject(f"{what} has a symbolic link member ({info.filename!r}), so nothing "
                         "was unpacked")
    declared = sum(info.file_size for info in infos)
    if declared > limits.max_total_bytes:
        raise Reject(f"{what} declares {numbers.size(declared)} unpacked, over the "
                     f"{numbers.size(limits.max_total_bytes)} limit (a zip bomb?)")


# --- choosing, checking, writing --------------------------------------------------------------


def _assemble(found: Found, notes: list[str], why: str, expected: str
              ) -> tuple[dict[str, bytes], dict[str, Candidate], list[str]]:
    """Pick the best candidate per exercise, read and check it; the bytes, choices and notes."""
    notes = notes + found.notes
    groups: dict[str, list[Candidate]] = {}
    for c in found.candidates:
        groups.setdefault(c.slug, []).append(c)
    data: dict[str, bytes] = {}
    chosen: dict[str, Candidate] = {}
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
                         f"ignored {listed(others)}")
        elif best.filename not in (f"{slug}.py", f"{slug}.ipynb"):
            notes.append(f"took {best.label} as {slug}{_suffix(best.filename)}")
        try:
            content = best.load()
            _check_text(content)
            if _suffix(best.filename) == ".ipynb":
                content = _from_notebook(content, slug, notes)
        except Reject:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad file never stops the rest
            why = str(exc) if isinstance(exc, FileProblem) else \
                f"could not be read ({error_text(exc)})"
            problems.append(f"{best.label} {why}")
            notes.append(f"{best.label} {why}; skipped")
            continue
        data[slug], chosen[slug] = content, best
    if found.ignored_py:
        notes.append(f"ignored {listed(found.ignored_py)}: only exercise files are graded "
                     "(helper modules are not copied)")
    if found.ignored_other:
        notes.append(f"ignored {len(found.ignored_other)} other "
                     f"{'file' if len(found.ignored_other) == 1 else 'files'}: "
                     f"{listed(found.ignored_other)}")
    if not data:
        if problems:
            raise Reject(f"no usable exercise file: {'; '.join(problems)}")
        seen = found.ignored_py + found.ignored_other
        raise Reject(expected + (f"; found only {listed(seen)}" if seen else "; it is empty"))
    return data, chosen, notes


def _suffix(filename: str) -> str:
    return ".ipynb" if filename.lower().endswith(".ipynb") else ".py"


def _other_kind(best: Candidate, group: list[Candidate]) -> Candidate | None:
    """A candidate of the same upload as ``best`` (its submission id) of the other kind (a
    notebook beside a ``.py``): the learner must choose, so neither is graded."""
    return next((c for c in group if c.rank[0] == best.rank[0]
                 and _suffix(c.filename) != _suffix(best.filename)), None)


def _from_notebook(content: bytes, slug: str, notes: list[str]) -> bytes:
    """The learner file generated from a notebook's definitions (its note added to
    ``notes``); raises ``FileProblem`` for a notebook that cannot be graded."""
    from grader.notebook.extract import NotebookError, from_notebook

    try:
        made = from_notebook(content, f"{slug}.ipynb")
    except NotebookError as exc:
        raise FileProblem(str(exc)) from None
    if made.note:
        notes.append(made.note)
    return made.text.encode("utf-8")


def _check_text(content: bytes) -> None:
    if (problem := text_problem(content)) is not None:
        raise FileProblem(problem)


def _write_files(workdir: Path, sid: str, data: dict[str, bytes],
                 slugs: Iterable[str]) -> dict[str, Path]:
    """Write ``workdir/<sid>/<slug>.py`` from bytes (temporary file, then rename)."""
    dest = workdir / sid
    try:
        try:  # most often a new folder: nothing in it to check, replace or clear
            dest.mkdir()
            new = True
        except OSError:  # there already, or no workdir yet: as below
            new = False
        if not new:
            workdir.mkdir(parents=True, exist_ok=True)
            if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
                raise Reject(f"its work folder {dest} exists and is not a folder")
            dest.mkdir(exist_ok=True)
        files: dict[str, Path] = {}
        for slug, content in data.items():
            final, part = dest / f"{slug}.py", dest / f".{slug}.py.part"
            if not new and (part.is_symlink() or part.exists()):
                part.unlink()
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(content)
            os.replace(part, final)
            files[slug] = final
        if not new or not data:
            _clear_stale(dest, slugs, keep=data.keys())
        return files
    except OSError as exc:
        raise Reject(f"its files could not be written to {dest} ({error_text(exc)})") from None


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


def loader(fn: Callable[..., bytes], *args: object) -> Callable[[], bytes]:
    return lambda: fn(*args)


def read_path(path: Path, cap: int, follow: bool) -> bytes:
    """At most ``cap`` bytes of a regular file (never a FIFO or device; links only if
    ``follow``); ``FileProblem`` otherwise."""
    flags = os.O_RDONLY | _O_NONBLOCK | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise FileProblem(f"could not be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise FileProblem("is not a regular file")
        try:
            content = fh.read(cap + 1)
        except OSError as exc:
            raise FileProblem(f"could not be read ({exc.strerror})") from None
    if len(content) > cap:
        raise FileProblem(f"is larger than the {numbers.size(cap)} limit for one file")
    return content


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, budget: Budget) -> bytes:
    """At most ``cap`` bytes of a zip member, counting the bytes actually unpacked against
    ``budget``: ``FileProblem`` for a member that cannot be used, ``Reject`` for a lying one."""
    if info.file_size > cap:
        raise FileProblem(f"is larger than the {numbers.size(cap)} limit for one file")
    if info.compress_type not in _READABLE_METHODS:
        raise FileProblem(f"uses compression method {info.compress_type}; only stored and "
                          "deflated members are read")
    try:
        with zf.open(info) as fh:
            return read_capped(fh, min(cap, info.file_size), budget, info.filename)
    except (Reject, FileProblem):
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError,
            OSError, ValueError) as exc:
        raise FileProblem(f"could not be read from the zip ({error_text(exc)})") from None


def read_capped(fh: io.BufferedIOBase, cap: int, budget: Budget,
                name: str) -> bytes:
    """Read ``fh`` to the end, but never more than ``cap`` + 1 bytes; ``Reject`` past ``cap``."""
    chunks: list[bytes] = []
    got = 0
    while chunk := fh.read(min(CHUNK, cap + 1 - got)):
        got += len(chunk)
        budget.take(len(chunk))
        if got > cap:
            raise Reject(f"zip member {name!r} unpacks to more than its header declares "
                         "(a zip bomb?)")
        chunks.append(chunk)
    return b"".join(chunks)


# --- names ------------------------------------------------------------------------------------


def slug_lookup(slugs: Collection[str]) -> dict[str, str]:
    if not slugs:
        raise ValueError("no exercises to look for")
    for slug in slugs:
        if not _SLUG_RE.fullmatch(slug):
            raise ValueError(f"exercise name {slug!r} is not a plain identifier")
    return {s.lower(): s for s in sorted(slugs, key=lambda s: (s.lower() != s, s))}


def match_slug(filename: str, slug_map: dict[str, str],
               upload_suffix: bool) -> tuple[str, int, bool] | None:
    """``(slug, re-upload N, exact spelling)`` for ``<slug>.py`` (or ``<slug>-N.py``), or the
    same names ending in ``.ipynb`` (a notebook)."""
    suffix = next((s for s in LEARNER_SUFFIXES if filename.lower().endswith(s)), None)
    if suffix is None:
        return None
    stem = filename[:-len(suffix)]
    slug = slug_map.get(stem.lower())
    if slug is not None:
        return slug, 0, filename == f"{slug}{suffix}"
    upload = UPLOAD_RE.fullmatch(stem) if upload_suffix else None
    if upload and (slug := slug_map.get(upload["stem"].lower())) is not None:
        return slug, int(upload["n"]), upload["stem"] == slug and filename.endswith(suffix)
    return None


def sanitise_id(raw: str) -> str:
    text = unicodedata.normalize("NFKD", raw).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")[:_ID_MAX].strip("._-")
    return text or "id-" + hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()[:8]


def path_parts(name: str) -> list[str]:
    return [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]


def is_junk(parts: list[str]) -> bool:
    return any(p.startswith(".") or p in _JUNK for p in parts)


def unsafe_name(name: str) -> bool:
    """Absolute, drive-relative, or climbing out with ``..`` (either slash)."""
    norm = name.replace("\\", "/")
    return (norm.startswith("/") or re.match(r"[A-Za-z]:", norm) is not None
            or ".." in norm.split("/") or "\x00" in name)


def listed(items: Iterable[str]) -> str:
    items = list(items)
    shown = ", ".join(items[:_LIST_MAX])
    return shown if len(items) <= _LIST_MAX else f"{shown} and {len(items) - _LIST_MAX} more"


def unreadable(exc: BaseException) -> str:
    """The reason for a submission whose reading raised ``exc`` unexpectedly, one sentence."""
    return f"its files could not be read ({error_text(exc)})"


def error_text(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:160] if text else type(exc).__name__
