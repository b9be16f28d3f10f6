"""The one place that decides how a learner worker is started and confined.

Today: a fresh work directory holding only the learner's files and the public harness, a
clean environment, ``python -I -u``, one thread, its own session (so the whole process group
can be killed), and core dumps off. Later hardening (rlimits, namespaces, Landlock, seccomp)
belongs in ``launch`` and nowhere else.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HARNESS_SRC = Path(__file__).parent / "harness"
HARNESS_NAME = "gradeharness"
PASSTHROUGH_ENV = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
                   "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")


@dataclass
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    preexec_fn: Callable[[], None] | None


def prepare_workdir(files: dict[str, Path]) -> Path:
    """Make a fresh work directory: ``submission/<slug>.py`` copies and the harness package."""
    workdir = Path(tempfile.mkdtemp(prefix="grade-worker-"))
    shutil.copytree(HARNESS_SRC, workdir / HARNESS_NAME,
                    ignore=shutil.ignore_patterns("__pycache__"))
    sub = workdir / "submission"
    sub.mkdir()
    (workdir / "tmp").mkdir()
    for slug, path in files.items():
        if path.is_file():
            shutil.copyfile(path, sub / f"{slug}.py")
    return workdir


_PR_SET_PDEATHSIG = 1


def _preexec() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Die with the grading process: a grader killed mid-run leaves no learner code running.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def launch(workdir: Path, request_fd: int, response_fd: int) -> LaunchSpec:
    bootstrap = (f"import sys; sys.path.insert(0, {str(workdir)!r}); "
                 f"from {HARNESS_NAME}.worker import main; main()")
    env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
    env.update({
        "HOME": str(workdir), "TMPDIR": str(workdir / "tmp"), "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "MALLOC_ARENA_MAX": "2",
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    })
    argv = [sys.executable, "-I", "-u", "-c", bootstrap,
            str(workdir / "submission"), str(request_fd), str(response_fd)]
    return LaunchSpec(argv=argv, env=env, cwd=workdir / "submission", preexec_fn=_preexec)
