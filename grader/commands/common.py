"""What the commands share: the exercise-name parameter, exit codes, device choice."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from grader import catalog

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def complete_exercise(ctx: click.Context, param: click.Parameter | None,
                       incomplete: str) -> list[Any]:
    return [click.shell_completion.CompletionItem(s) for s in catalog.load()
            if s.startswith(incomplete)]


def unknown_exercises_message(names: list[str], commands: list[str] | None = None) -> str:
    """``unknown exercise 'x' (did you mean y?). Valid exercises: ...``; ``commands``: command
    names a mistyped word may have meant instead (``grade shwo``)."""
    parts = []
    for name in names:
        guess = catalog.closest(name)
        command = (difflib.get_close_matches(name, commands, n=1, cutoff=0.75)
                   if commands and guess is None else [])
        if guess:
            parts.append(f"{name!r} (did you mean {guess}?)")
        elif command:
            parts.append(f"{name!r} (did you mean the command `grade {command[0]}`?)")
        else:
            parts.append(repr(name))
    word = "exercise" if len(names) == 1 else "exercises"
    return f"unknown {word} {', '.join(parts)}. Valid exercises: {', '.join(catalog.load())}"


class ExerciseName(click.ParamType):
    """An exercise slug; an unknown name is a usage error that suggests the closest one and
    lists the valid ones."""

    name = "EXERCISE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value in catalog.load():
            return value
        # `grade shwo X` reaches `run` (the default command): the word may be a command
        group = ctx.parent.command if ctx is not None and ctx.parent is not None else None
        commands = (list(group.commands) if isinstance(group, click.Group)
                    and ctx.command.name == "run" else None)
        self.fail(unknown_exercises_message([value], commands), param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[Any]:
        return complete_exercise(ctx, param, incomplete)


EXERCISE = ExerciseName()


def resolve_device(device: str, slugs: list[str]) -> str:
    """The device to grade ``slugs`` on; a usage error when one needs torch and this Python
    has none, or cuda is asked for and missing."""
    import importlib.util

    needs_torch = any(catalog.get(s).needs_torch for s in slugs)
    if needs_torch and importlib.util.find_spec("torch") is None:
        torch_ones = [s for s in slugs if catalog.get(s).needs_torch]
        raise click.UsageError(f"{', '.join(torch_ones)} need{'s' if len(torch_ones) == 1 else ''}"
                               f" torch, which this Python does not have: "
                               f"{catalog.TORCH_INSTALL}")
    if device == "cpu":
        return "cpu"
    if device == "auto" and not needs_torch:
        return "cpu"  # numpy-only runs never pay for importing torch
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if device == "cuda" and not available:
        raise click.UsageError("--device cuda was asked for, but no CUDA device is available "
                               "(use --device cpu or auto)")
    return "cuda" if available else "cpu"


def parse_exercises(value: str | None) -> list[str]:
    """The slugs of a comma-separated list (every exercise without one); an unknown name is a
    usage error that suggests the closest one."""
    if not value:
        return list(catalog.load())
    slugs = [s.strip() for s in value.split(",") if s.strip()]
    unknown = [s for s in slugs if s not in catalog.load()]
    if unknown:
        raise click.UsageError(unknown_exercises_message(unknown))
    return slugs


device_option = click.option(
    "--device", type=click.Choice(["cpu", "cuda", "auto"]), default="auto", show_default=True,
    help="Device for torch exercises (auto: cuda when available).")


def in_project(name: str) -> Path:
    """``name`` in the learner's project (``state.project_dir``: found from any folder inside
    it, as git finds its repository): an option's default."""
    from grader.state import project_dir

    return project_dir() / name


exercises_dir_option = click.option(
    "--exercises-dir", type=click.Path(path_type=Path), default=lambda: in_project("exercises"),
    show_default="exercises/ of the project",
    help="Where the learner's own files are (the project is found from any folder inside it).")
report_dir_option = click.option(
    "--report-dir", type=click.Path(path_type=Path, file_okay=False),
    default=lambda: in_project("reports"), show_default="reports/ of the project",
    help="Where index.html and results.json are written.")
isolation_option = click.option(
    "--isolation", type=click.Choice(["auto", "strict"]), default="auto", show_default=True,
    help="strict: refuse to grade unless learner code is cut off from the filesystem and the "
         "network (see grade doctor).")


private_option = click.option(
    "--private", is_flag=True,
    help="Write reports for their owner only (files 0600, folders 0700); by default they are "
         "readable by the group and others (0644, 0755), e.g. by a web server or an assistant.")


def apply_private(private: bool) -> None:
    from grader.files import use_private

    use_private(private)


def read_option_file(path: Path | None, read: Callable[[Path], Any],
                     refusal: type[Exception]) -> Any:
    """``read(path)`` for a file named by an option (None without one); a file ``read``
    refuses with ``refusal`` is a usage error (exit 2) saying why."""
    if path is None:
        return None
    try:
        return read(path)
    except refusal as exc:
        raise click.UsageError(str(exc)) from None


def load_assignment(path: Path | None) -> Any:
    """The assignment in ``path`` (None without one); a file that does not fit is a usage
    error naming the field."""
    from grader.assignment import AssignmentError, load

    return read_option_file(path, load, AssignmentError)


def check_isolation(mode: str) -> None:
    """``strict``: refuse to grade without every isolation layer strict needs (exit 2);
    ``auto``: grade anyway, warning once when the machine offers less."""
    from grader.sandbox import isolation

    missing = ", ".join(isolation.probe().missing())
    if not missing:
        return
    if mode == "strict":
        raise click.UsageError(f"--isolation strict: this machine cannot give learner code "
                               f"{missing}; see `grade doctor`")
    click.secho(f"warning: learner code will run without {missing} (see `grade doctor`); "
                "fine for your own code, not for a class", fg="yellow", err=True)
