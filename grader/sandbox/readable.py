"""What a learner worker may read, decided from what it needs, not from where things live.

A worker needs the system's shared libraries, the interpreter and its standard library, and
the distributions the harness and the exercises import (numpy, torch when installed, and
what they require). It never needs the grader's own package (the hidden suites, the
expected-values cache), the references, the project's checkout or another site folder's
packages. ``worker_view(device)`` returns the two lists the Landlock rules are made from:

- ``read``: trees readable whole (files and folders);
- ``list``: site folders whose names may be listed (Python's import system lists a folder
  before it finds a package in it), with none of their files readable unless under ``read``.

A ``read`` tree that holds something hidden is replaced by its entries, recursively, leaving
the hidden part out (``carve``), so the answer holds for a checkout, a wheel, a system-wide
install under ``/usr``, a Gradescope bundle and a Dask worker's install alike.

The view is a function of what is installed, never of the process that computes it: a grading
process started by the local pool (pytest has put the checkout on ``sys.path``), by a Dask
worker (``python -P``, before its session starts) or from a bundle's source folder (``python -m
grader``) computes the same one. Distributions are looked up on ``search_path()``, which leaves
out the grader's own source folder: its build metadata (``vit_grader.egg-info``, written there
by ``pip install -e .`` or ``pip install .``) must not stand in for what is installed. A site
folder's shared ``__pycache__`` (the cached byte code of every top-level module installed there,
whichever distribution it belongs to) is never readable whole: each distribution brings the
cache files of its own modules.
"""

from __future__ import annotations

import os
import re
import site
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from .harness.confinement import Cover

# what the harness imports (numpy always, torch for the torch exercises); their optional
# dependencies (extras) are readable too when installed, since a module that is listed but
# unreadable fails its import with PermissionError, not the ImportError an optional import
# expects
WORKER_DISTRIBUTIONS = ("numpy", "torch")
# what the worker's distributions import when it is installed without declaring it: torch.cuda
# imports ``pynvml`` (NVML's binding, which the grader itself requires for its CUDA workers),
# torch.hub ``tqdm`` (seen on a CUDA machine's image: unreadable, its import raised
# PermissionError where torch expects ImportError)
SOFT_DISTRIBUTIONS = ("nvidia-ml-py", "tqdm")
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/ld.so.conf",
          "/etc/ld.so.conf.d", "/etc/localtime", "/proc/cpuinfo", "/proc/stat",
          "/proc/sys", "/sys/devices/system/cpu", "/dev/urandom", "/dev/random", "/dev/zero")
CUDA = ("/usr/local", "/opt", "/proc/driver", "/sys/bus/pci", "/sys/devices")
MAX_CARVE_DEPTH = 12
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_TOP = re.compile(r"^([^/,\n]+)[/,]", re.MULTILINE)  # a RECORD line's first path part
_CACHED = re.compile(r"^__pycache__/([^/,\n]+),", re.MULTILINE)  # a file of the shared cache
PYCACHE = "__pycache__"


_HIDDEN: set[str] = set()  # folders this process writes hidden data to (``hide``)


def hide(path: str | Path) -> None:
    """Keep ``path`` (a cache or report folder this process writes) out of every worker's view
    from now on, wherever it lies."""
    _HIDDEN.add(_real(path))
    worker_view.cache_clear()


@dataclass(frozen=True)
class WorkerView:
    read: tuple[str, ...]
    list: tuple[str, ...]


def _real(path: str | Path) -> str:
    return os.path.realpath(path)


def site_folders() -> set[str]:
    """The folders this interpreter imports installed packages from."""
    folders = set(site.getsitepackages()) | {site.getusersitepackages()}
    folders |= {p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))}
    for key in ("purelib", "platlib"):
        folders.add(sysconfig.get_paths()[key])
    return {_real(f) for f in folders if f}


def interpreter_folders() -> set[str]:
    """The interpreter's prefixes and standard library."""
    paths = sysconfig.get_paths()
    return {_real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, paths["stdlib"],
                               paths["platstdlib"], Path(sys.executable).resolve().parent.parent)}


def _source_folder() -> str | None:
    """The grader's source folder (a checkout's or a bundle's: it holds ``pyproject.toml``), or
    None when the grader is installed."""
    from grader import catalog  # the package being protected; imported late, it is large

    project = catalog.PROJECT_DIR
    return _real(project) if (project / "pyproject.toml").is_file() else None


def search_path() -> list[str]:
    """Where installed distributions are looked up: ``sys.path`` (``""`` read as the current
    folder) without the grader's source folder or anything inside it, except a site folder
    there (a checkout's ``.venv``). What a process has put on ``sys.path`` (pytest its rootdir,
    ``python -m grader`` the folder it runs in) then changes no answer."""
    source = _source_folder()
    keep = site_folders()
    found: list[str] = []
    for entry in sys.path:
        path = _real(entry or os.getcwd())
        if source is not None and _inside(path, source) and \
                not any(_inside(path, k) for k in keep):
            continue
        if path not in found and os.path.exists(path):
            found.append(path)
    return found


def _distribution(name: str, path: list[str]) -> metadata.Distribution | None:
    """The installed distribution ``name``, the first found on ``path``; None when absent."""
    return next(iter(metadata.distributions(name=name, path=path)), None)


def _installed(dist: metadata.Distribution, names: list[str]) -> set[str]:
    """Where the files ``names`` (paths relative to ``dist``'s site folder) lie, by their first
    part (a package folder, a module, the metadata folder), except in the shared
    ``__pycache__``, where each cache file stands for itself; files outside the site folder
    (``../../../bin/grade``) are left out."""
    base = Path(str(dist.locate_file("")))
    found = set()
    for name in names:
        parts = Path(name).parts
        if not parts or parts[0] == "..":
            continue
        found.add(str(base.joinpath(*parts[:2 if parts[0] == PYCACHE else 1])))
    return found


def hidden_paths() -> set[str]:
    """What must never be readable: the grader's package wherever it is imported or installed
    (suites, caches), the references, and every entry of the checkout (or a bundle's source)
    they came from, except those that hold the interpreter or its site folders (a ``.venv``)."""
    from grader import catalog  # the package being protected; imported late, it is large

    hidden = {str(catalog.PACKAGE_DIR), str(catalog.SOLUTIONS_DIR), str(catalog.SUITES_DIR)}
    project = catalog.PROJECT_DIR
    if _source_folder() is not None:  # a checkout or a bundle's source
        keep = interpreter_folders() | site_folders()
        for entry in project.iterdir():
            path = _real(entry)
            if not any(_inside(k, path) for k in keep):
                hidden.add(path)
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    for folder in site_folders() | {sysconfig.get_paths(vars=base)[k]
                                    for k in ("purelib", "platlib")}:
        hidden.add(os.path.join(folder, "grader"))  # an install of the grader, used or not
    dist = _distribution("vit-grader", search_path())
    if dist is not None:  # its files: the package, an editable install's finder, metadata
        hidden |= _installed(dist, [str(f) for f in dist.files or ()])
    return {_real(p) for p in hidden if os.path.lexists(p)} | _HIDDEN


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def carve(root: str, hidden: set[str], depth: int = 0) -> list[str]:
    """``root`` as readable trees, without any path of ``hidden``: ``[root]`` when nothing
    hidden is inside it, else its entries carved in turn (none when ``root`` is hidden)."""
    if any(_inside(root, h) for h in hidden):
        return []
    if not any(_inside(h, root) for h in hidden):
        return [root]
    if depth >= MAX_CARVE_DEPTH:
        return []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    out: list[str] = []
    for name in names:  # resolved: a link (a venv's lib64) must not open a way around
        out += carve(_real(os.path.join(root, name)), hidden, depth + 1)
    return out


def _requirements(dist: metadata.Distribution, *, extras: bool = False) -> list[str]:
    """The distributions ``dist`` requires (its METADATA's Requires-Dist lines, read without
    the e-mail parser ``dist.requires`` uses): outside any extra, and with ``extras`` those
    of its extras too."""
    names = []
    for line in (dist.read_text("METADATA") or "").splitlines():
        if not line:
            break  # the headers end at the first empty line
        if line.startswith("Requires-Dist:") and \
                (extras or "extra==" not in line.replace(" ", "")):
            match = _NAME.match(line[len("Requires-Dist:"):])
            if match:
                names.append(match.group(1))
    return names


def _files(dist: metadata.Distribution) -> list[str]:
    """The files ``dist`` installed, relative to its site folder, and the byte code of each of
    its top-level modules where it is cached: read from its RECORD without making a path
    object per file (torch lists about 15,000)."""
    record = dist.read_text("RECORD") or ""
    tops = set(_TOP.findall(record)) - {PYCACHE}  # the shared cache: file by file, below
    names = [f"{PYCACHE}/{name}" for name in _CACHED.findall(record)]
    tag = sys.implementation.cache_tag
    base = Path(str(dist.locate_file("")))
    for top in tops:
        names.append(top)
        cached = f"{PYCACHE}/{top[:-3]}.{tag}.pyc"
        if tag and top.endswith(".py") and (base / cached).is_file():
            names.append(cached)  # written after the install, by an import
    return names


def distribution_paths(names: tuple[str, ...] = WORKER_DISTRIBUTIONS,
                       soft: tuple[str, ...] = SOFT_DISTRIBUTIONS) -> set[str]:
    """The top-level files and folders (packages, bundled libraries, metadata, cached byte
    code) of ``names``, of their extras and of ``soft``, and of every distribution these
    require, as installed for this interpreter (looked up on ``search_path()``); a
    distribution that is not installed is left out."""
    path = search_path()
    seen: set[str] = set()
    todo = [(name, False) for name in soft] + [(name, True) for name in names]
    paths: set[str] = set()
    while todo:
        name, extras = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        dist = _distribution(name, path)
        if dist is None:
            continue
        todo += [(required, False) for required in _requirements(dist, extras=extras)]
        paths |= {_real(p) for p in _installed(dist, _files(dist))}
    return paths


@lru_cache(maxsize=4)
def worker_view(device: str = "cpu") -> WorkerView:
    """What a worker for ``device`` may read and list (resolved once per process)."""
    hidden = hidden_paths()
    sites = site_folders()
    roots = {_real(p) for p in (*SYSTEM, *(CUDA if device.startswith("cuda") else ()))}
    roots |= interpreter_folders()
    # a site folder is never readable whole: only the distributions the worker needs
    private = hidden | sites
    read = {tree for root in roots for tree in carve(root, private)}
    read |= {p for p in distribution_paths() if not any(_inside(p, h) or _inside(h, p)
                                                        for h in hidden)}
    listed = {s for s in sites if os.path.isdir(s)}
    return WorkerView(read=tuple(sorted(read)), list=tuple(sorted(listed)))


@lru_cache(maxsize=4096)
def _searchable(path: str) -> bool:
    """Whether other users may pass through the folder ``path`` (asked once per process)."""
    try:
        return bool(os.stat(path).st_mode & 0o001)
    except OSError:
        return False


@lru_cache(maxsize=4096)
def _covers(path: str) -> tuple[tuple[int, str, str], ...]:
    """``(depth, folder, keep)`` for each folder above ``path`` (``/`` and a relative path's
    first part aside) that others cannot pass through: ``keep``, its entry on the way to
    ``path``; ``depth``, the folder's number of parts (asked once per path and process)."""
    parts = Path(path).parts
    found: list[tuple[int, str, str]] = []
    folder = parts[0] if parts else ""
    for i in range(1, len(parts) - 1):  # each spelled as str(Path(*parts[:i + 1])) is
        folder += parts[i] if i == 1 and folder.endswith("/") else "/" + parts[i]
        if not _searchable(folder):
            found.append((i + 1, folder, f"{folder}/{parts[i + 1]}"))
    return tuple(found)


def reveal_plan(paths: tuple[str, ...]) -> tuple[Cover, ...]:
    """How a worker of another uid reaches every one of ``paths`` (``namespaces.reveal``):
    ``(cover, (keep, ...))`` for each folder others cannot pass through above some of them
    (``keep``: its entry on the way to each), outermost first, so that a cover inside another
    is made after it."""
    covers: dict[tuple[int, str], set[str]] = {}
    for path in paths:
        for depth, folder, keep in _covers(path):
            covers.setdefault((depth, folder), set()).add(keep)
    return tuple((folder, tuple(sorted(keeps))) for (_, folder), keeps in sorted(covers.items()))
