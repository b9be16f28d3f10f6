"""Find the submissions of a class in what a teacher gives `grade bulk`, and unpack them safely.

``discover(inputs, slugs, workdir)`` detects one of five layouts:

- ``folders``: ``[DIR]`` where ``DIR/<id>/`` holds ``<slug>.py`` at any depth (the shallowest
  copy wins; a tie goes to the first in sorted path order);
- ``zips``: ``[DIR]`` where ``DIR/<id>.zip`` holds ``<slug>.py`` at any depth (same rule);
- ``canvas``: ``[ZIP]``, the Canvas "download submissions" zip, members named
  ``<name>_[late_]<userid>_<submissionid>_<original filename>``; grouped by user id, and for
  each exercise the latest upload wins (highest submission id, then highest re-upload suffix
  ``<slug>-N.py``); a member that is itself a zip is read like one ``zips`` submission: see
  ``canvas_layout.py``;
- ``moodle``: ``[ZIP]``, Moodle's "Download all submissions" zip, or ``[DIR]`` holding it
  unzipped (every sub-folder ``<full name>_<participant id>_assignsubmission_<plugin>``): see
  ``moodle_layout.py``; tried before ``canvas``;
- ``files``: a list of ``.py`` files, graded as ONE submission with id ``"files"``
  (``<slug>.py`` or ``<slug>-N.py``; the highest N wins).

This module detects the layout and reads the three plain ones (``canvas_layout.py`` and
``moodle_layout.py`` read the LMS downloads); all of them read through ``reading.py``
(scanning, choosing a copy, limits, writing). Every exercise file that is kept is written by
``reading.py``, as a plain file made from the bytes it read, to ``workdir/<id>/<slug>.py``;
nothing else is written and nothing is written outside ``workdir``. Inputs are only read. Zips
are never extracted with ``extractall``: member names are checked first (``..``, absolute
paths, drive letters and symbolic links reject the whole zip before anything is read), the
member count and the declared unpacked size are checked against ``Limits``, and the bytes
actually read are counted again while reading. Only stored and deflated members are read
(bzip2 and lzma can expand a few kilobytes into gigabytes in a single call of the standard
library's decompressor).

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

import zipfile
import zlib
from collections.abc import Collection
from pathlib import Path

from . import canvas_layout, moodle_layout
from .reading import (
    LEARNER_SUFFIXES,
    SHALLOWEST,
    Candidate,
    Context,
    Discovery,
    Found,
    Limits,
    Reject,
    Rejected,
    Submission,
    error_text,
    listed,
    loader,
    match_slug,
    read_path,
    scan_folder,
    scan_zip,
    slug_lookup,
    unreadable,
)

__all__ = ["Discovery", "Limits", "Rejected", "Submission", "discover"]

_LIMITS = Limits()


def discover(inputs: list[Path], slugs: Collection[str], workdir: Path,
             limits: Limits = _LIMITS) -> Discovery:
    """Detect the layout of ``inputs``, copy each submission's exercise files into
    ``workdir/<id>/<slug>.py`` and return what was found.

    ``slugs`` are the exercises to look for (files with other names are ignored with a note).
    Raises ``ValueError`` (one sentence) only when ``inputs`` fit no layout; every problem with a
    single submission is a ``Rejected`` entry or a note instead.
    """
    slug_map = slug_lookup(slugs)
    paths = [Path(p) for p in inputs]
    if not paths:
        raise ValueError("no submissions given: pass a folder, a Canvas zip or .py files")
    for p in paths:
        if not p.exists():
            raise ValueError(f"{p} does not exist")
    ctx = Context(slug_map, Path(workdir), limits, paths)
    if len(paths) == 1 and paths[0].is_dir():
        return _discover_dir(paths[0], ctx)
    if len(paths) == 1 and paths[0].is_file() and paths[0].name.lower().endswith(".zip"):
        zipped = paths[0]
        return moodle_layout.discover_zip(zipped, ctx) or canvas_layout.discover_zip(zipped, ctx)
    if all(p.is_file() and p.name.lower().endswith(LEARNER_SUFFIXES) for p in paths):
        return _discover_files(paths, ctx)
    odd = next((p for p in paths
                if not (p.is_file() and p.name.lower().endswith(LEARNER_SUFFIXES))), paths[0])
    raise ValueError(f"cannot grade {odd} together with the other inputs: pass one folder, one "
                     "Canvas zip, or a list of .py or .ipynb files")


# --- folders, zips, files ---------------------------------------------------------------------


def _discover_dir(root: Path, ctx: Context) -> Discovery:
    try:
        children = sorted((c for c in root.iterdir() if not ctx.skip(c)), key=lambda c: c.name)
    except OSError as exc:
        raise ValueError(f"cannot list {root} ({exc.strerror})") from None
    dirs = [c for c in children if c.is_dir()]
    zips = [c for c in children if c.is_file() and c.name.lower().endswith(".zip")]
    placed = {*dirs, *zips}
    loose = [c for c in children if c not in placed]
    if dirs and zips:
        raise ValueError(f"{root} mixes {len(dirs)} sub-folders and {len(zips)} zip files: "
                         "put one layout in a folder and grade it on its own")
    if not dirs and not zips:
        if any(c.name.lower().endswith(".py") for c in loose):
            raise ValueError(f"{root} holds .py files but no sub-folders or zip files: to grade "
                             "them as one submission, pass the .py files themselves")
        raise ValueError(f"{root} holds no sub-folders or zip files to grade")
    if dirs and not loose:
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
                ctx.finish(sid, scan_folder(entry, ctx), notes, source, SHALLOWEST)
            except Exception as exc:  # noqa: BLE001 - one submission never stops the class
                ctx.reject_owned(sid, unreadable(exc), source)
        else:
            _finish_zip(sid, entry, notes, ctx)
    kind = (f"a folder of {len(dirs)} sub-folders" if dirs
            else f"a folder of {len(zips)} zip files")
    description = f"{kind}, one per submission ({root})"
    if loose:
        description += f"; ignored {len(loose)} other entries: {listed(c.name for c in loose)}"
    return Discovery("folders" if dirs else "zips", description, ctx.submissions, ctx.rejected)


def _finish_zip(sid: str, path: Path, notes: list[str], ctx: Context) -> None:
    source = str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            found = scan_zip(zf, ctx.slug_map, ctx.limits, path.name)
            ctx.finish(sid, found, notes, source, SHALLOWEST)
    except Reject as exc:
        ctx.reject_owned(sid, str(exc), source)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        ctx.reject_owned(sid, f"{path.name} is not a readable zip file ({error_text(exc)})", source)
    except Exception as exc:  # noqa: BLE001 - one submission never stops the class
        ctx.reject_owned(sid, unreadable(exc), source)


def _discover_files(paths: list[Path], ctx: Context) -> Discovery:
    found = Found()
    for order, p in enumerate(paths):
        match = match_slug(p.name, ctx.slug_map, upload_suffix=True)
        if match is None:
            found.ignored_py.append(str(p))
            continue
        slug, n, exact = match
        found.candidates.append(Candidate(
            slug, p.name, str(p), str(p), (0, n, -order, int(exact)),
            loader(read_path, p, ctx.limits.max_file_bytes, True)))
    source = ", ".join(str(p) for p in paths)
    ctx.claimed["files"] = source
    ctx.finish("files", found, [], source, "the latest of {n} files")
    return Discovery("files", f"{len(paths)} .py files given as one submission",
                     ctx.submissions, ctx.rejected)
