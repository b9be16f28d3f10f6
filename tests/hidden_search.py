"""A learner file that searches every path it can read for the pack's hidden data.

``searcher(markers)`` is the source of a ``grid_local_mask.py`` whose function, at its first
call, walks the filesystem from ``/`` (not ``/proc``, ``/sys``, ``/dev`` nor its own work
folder), reads every file it may open whose name suggests source, data or a report, and prints
``LEAK <path>`` for each that holds one of ``markers`` (lines of the hidden suites and the
references) or is an expected-values cache entry or another submission's results, then
``SEARCHED <n>`` (how many files it read). It then fails the test, so every test prints the
same search once per worker. ``search`` is the same code, to run unconfined as a control.
"""

from __future__ import annotations

from pathlib import Path

from grader import catalog

SEARCH = r'''
import os
import sys

SUFFIXES = (".py", ".pyc", ".json", ".npy", ".npz", ".bin", ".toml", ".public", ".pkl")
# read wherever they are: files named as the pack's are (``names``), caches and results
PLACES = ("/opt", "/root", "/home", "/tmp", "/var", "/srv", "/work", "/autograder", "/mnt",
          "/usr/local", "/etc")


def tops():
    # read everything in: the usual places, every folder on sys.path and every one above them
    out = set(PLACES)
    for entry in sys.path:
        path = os.path.realpath(entry or ".")
        while path != "/":
            out.add(path)
            path = os.path.dirname(path)
    return sorted(out)


def _inside(path, folders):
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def search(starts, markers, names=(), skip=(), roots=("/", "/usr")):
    # every folder under "/" is listed; a file is read when it lies under ``starts`` (or
    # bears one of ``names``) and has a source, data or cache suffix
    found, read, seen = [], 0, set()
    # "/" itself may not be listable: every start is walked too (each folder once)
    walks = (walk for top in (*roots, *starts) for walk in os.walk(top))
    for root, dirs, files in walks:
        if root in seen or _inside(root, ("/proc", "/sys", *skip)):
            dirs[:] = []
            continue
        seen.add(root)
        deep = _inside(root, starts)
        for name in files:
            path = os.path.join(root, name)
            named = name in names or name.endswith(".public") or name == "results.json" or (
                name.endswith(".bin") and "/expected/" in path)
            if not (named or (deep and name.endswith(SUFFIXES))):
                continue
            try:
                if os.path.getsize(path) > 4 << 20:
                    continue
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            read += 1
            if named or any(m in data for m in markers):
                found.append(path)
    return found, read
'''

LEARNER = SEARCH + r'''
MARKERS = [bytes.fromhex(h) for h in {hexes!r}]  # hex: this file itself holds none
NAMES = {names!r}
DONE = []


def grid_local_mask(*args, **kwargs):
    if not DONE:
        here = os.path.realpath(os.getcwd())  # its own work folder: this very file
        found, read = search(tops(), MARKERS, NAMES, skip=(here, "/dev"))
        DONE.append(read)
        for path in found:
            print("LEAK", path)
        print("SEARCHED", read)
    raise RuntimeError("a search, not an answer")
'''


def markers() -> list[bytes]:
    """Lines only the hidden suites and the references hold: of each file, its three longest
    lines that the exercise's stub does not also hold."""
    out = []
    for ex in catalog.load().values():
        stub = set(ex.stub.read_text().splitlines()) if ex.stub.is_file() else set()
        for path in (ex.suite, ex.solution):
            lines = sorted({ln.strip() for ln in path.read_text().splitlines()
                            if len(ln.strip()) >= 40 and ln not in stub}, key=len)
            out += [ln.encode() for ln in lines[-3:]]
    return out


def names() -> list[str]:
    """The file names of the hidden suites, the references and the exercise index."""
    out = ["exercises.toml"]
    for ex in catalog.load().values():
        out += [ex.suite.name, ex.solution.name, ex.suite.with_suffix(".public").name]
    return sorted(set(out))


def searcher(folder: Path) -> Path:
    """Write the searching ``grid_local_mask.py`` into ``folder``; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "grid_local_mask.py"
    path.write_text(LEARNER.format(hexes=[m.hex() for m in markers()], names=names()))
    return path


def search(top: str | Path) -> tuple[list[str], int]:
    """The learner's search, run here (unconfined) over ``top``."""
    space: dict = {}
    exec(SEARCH, space)  # noqa: S102 - the test's own code
    return space["search"]([str(top)], markers(), roots=())


def findings(output: str) -> tuple[list[str], int]:
    """The leaks and the count of files read, from what the learner printed."""
    lines = output.splitlines()
    leaks = [ln.split(" ", 1)[1] for ln in lines if ln.startswith("LEAK ")]
    counts = [int(ln.split()[1]) for ln in lines if ln.startswith("SEARCHED ")]
    return leaks, max(counts, default=0)

