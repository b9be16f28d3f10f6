"""The `grade` command's entry point: starts the fork server, then imports the grader.

When the command grades named exercises, the learner's worker needs a warm fork server
(a Python that has imported numpy, or torch). Starting it first lets it import while this
process imports pytest, jinja2 and the engine (~150 ms), instead of after them.
"""

from __future__ import annotations

import sys

_NOT_GRADING = {"bulk", "list", "show", "hint", "reset", "solution", "progress", "interview",
                "doctor", "review", "--version"}


def start_fork_server_early(argv: list[str]) -> None:
    """Start the fork server the named exercises need; do nothing for anything else."""
    if not argv or argv[0] in _NOT_GRADING or "--help" in argv or "-h" in argv:
        return
    try:
        from grader import catalog
        from grader.sandbox import forkserver

        exercises = catalog.load()
        named = [arg for arg in argv if arg in exercises]
        if named:
            needs_torch = any(exercises[slug].needs_torch for slug in named)
            forkserver.start("torch" if needs_torch else "numpy")
    except Exception:  # noqa: BLE001 - an optimisation only: the command itself reports errors
        pass


def main(prog_name: str | None = None) -> None:
    from grader.engine.policy import Runner

    try:  # (a setting read by every grading process: refused once, here)
        Runner.from_env()
    except ValueError as exc:
        print(f"grade: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    start_fork_server_early(sys.argv[1:])
    from grader.cli import main as cli

    cli(prog_name=prog_name)
