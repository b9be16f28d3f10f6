"""`grade release`: what a teacher hands out, made from an assignment: a student release (the
stubs, statements and a grader of the public tests, with no answer in it), or with
``--gradescope`` the autograder zip Gradescope takes."""

from __future__ import annotations

from pathlib import Path

import click

from .common import load_assignment


@click.command("release")
@click.option("--assignment", "assignment_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The assignment.toml to release.")
@click.option("--gradescope", is_flag=True,
              help="Write Gradescope's autograder zip (OUT.zip) instead of a student release.")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@click.option("--notebooks", is_flag=True,
              help="Hand out each exercise as exercises/<name>.ipynb (the statement, then the "
                   "stub in a cell headed by %%grade <name>) instead of .py and .md files.")
@click.argument("out", type=click.Path(path_type=Path))
def release(assignment_file: Path, gradescope: bool, force: bool, notebooks: bool,
            out: Path) -> None:
    """Write the student release of an assignment to the folder OUT (stubs, statements, a
    README and a grader of the public tests: no reference solution, no hidden test, no hidden
    expected value), or with --gradescope its autograder zip (hidden suites and references
    included: upload it to Gradescope, never to students)."""
    task = load_assignment(assignment_file)
    if out.exists() and not force:
        raise click.UsageError(f"{out} exists already: choose another name, or --force")
    if gradescope:
        from grader.release.gradescope import write_bundle

        if out.suffix != ".zip":
            raise click.UsageError(f"--gradescope writes a zip: name it {out}.zip")
        names = write_bundle(task, out)
        click.echo(f"Gradescope autograder for {task.title!r} ({', '.join(task.exercises)}): "
                   f"{out} ({len(names)} files). Upload it as the assignment's autograder "
                   "(it holds the hidden tests and the references: not for students).")
        return
    from grader.release.student import write_release

    summary = write_release(task, out, force=force, notebooks=notebooks)
    click.echo(f"Student release of {task.title!r}: {out} — {summary}. Hand it out (or push "
               "it to a GitHub Classroom template); students install it with the README's two "
               "commands.")
