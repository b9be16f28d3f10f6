"""`grade pack`: for authors of exercises. `grade pack new SLUG` scaffolds every file of a new
exercise; `grade pack check [SLUG]... [--grade]` checks every rule of the pack in one run."""

from __future__ import annotations

import sys

import click


@click.group("pack")
def pack() -> None:
    """Write and check exercises (authors): `pack new SLUG`, `pack check [SLUG]...`."""


@pack.command("check")
@click.argument("slugs", nargs=-1)
@click.option("--grade", "with_grading", is_flag=True,
              help="Also grade: the reference (full marks), the stub (no grader error), every "
              "declared variant (each mistake named, no cause named for an uncatalogued one), "
              "the trivial answers (no points), and run each function's probes (its mistakes "
              "told apart).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None,
              help="Grading processes for --grade  [default: the CPU cores, at most 4]")
@click.option("--mutants", "mutant_sample", metavar="N|all", default=None,
              help="With --grade: the generated mutants of each reference graded per "
              "exercise, a seeded sample of N (or all of them)  [default: 4]")
@click.option("--shortcuts", "shortcut_sample", metavar="N|all", default=None,
              help="With --grade: the generated \"a parameter ignored\" shortcut files graded "
              "per exercise, a seeded sample of N (or all of them)  [default: 2]")
@click.option("--update-golden", is_flag=True,
              help="With --grade: rewrite each exercise's golden output "
                   "(solutions/SLUG.golden.txt) instead of comparing it; review the diff.")
def check_cmd(slugs: tuple[str, ...], with_grading: bool, jobs: int | None,
              mutant_sample: str | None, shortcut_sample: str | None,
              update_golden: bool) -> None:
    """Check every rule of the pack (or of SLUGS): each problem on one line as
    `SLUG: file:line: what is wrong — how to fix (rule)`. Exit 1 on any problem."""
    from grader import catalog
    from grader.authoring import check, graded, mutants

    if mutant_sample is not None:
        if mutant_sample != "all" and not mutant_sample.isdigit():
            raise click.BadParameter(f"{mutant_sample!r} is neither a count nor 'all'",
                                     param_hint="--mutants")
    mutated = mutants.DEFAULT_SAMPLE if mutant_sample is None else \
        None if mutant_sample == "all" else int(mutant_sample)
    ignored = graded.IGNORED_SAMPLE
    if shortcut_sample is not None:
        if shortcut_sample != "all" and not shortcut_sample.isdigit():
            raise click.BadParameter(f"{shortcut_sample!r} is neither a count nor 'all'",
                                     param_hint="--shortcuts")
        ignored = None if shortcut_sample == "all" else int(shortcut_sample)
    unknown = [s for s in slugs if s not in catalog.load()]
    if unknown:
        guess = catalog.closest(unknown[0])
        raise click.UsageError(f"no exercise {unknown[0]!r} in the pack"
                               + (f" (did you mean {guess}?)" if guess else ""))
    problems, count = check.check(list(slugs) or None)
    chosen = list(slugs) or list(catalog.load())
    if with_grading and not problems:
        import os

        problems = graded.grade_rules(chosen, jobs or max(1, min(4, os.cpu_count() or 1)),
                                      update_golden, ignored, mutated)
    for problem in problems:
        click.echo(str(problem))
    for line in mutants.summary() if with_grading else ():
        click.echo(line)
    if problems:
        click.echo(f"{len(problems)} problem(s) in {count} exercise(s).", err=True)
        sys.exit(1)
    rules = [rule.id for rule in check.RULES] + ([] if slugs else ["index-order"])
    rules += list(graded.GRADED_RULES) if with_grading else []
    click.echo(f"Checked {count} exercise(s): {', '.join(rules)}. No problem.")
    if with_grading and update_golden:
        click.echo("Golden outputs rewritten: review `git diff solutions/*.golden.txt`.")


@pack.command("new")
@click.argument("slug")
@click.option("--title", default=None, help="The exercise's title (default: from SLUG).")
def new_cmd(slug: str, title: str | None) -> None:
    """Write every file of a new exercise SLUG and add it to the end of the exercise order."""
    from grader import catalog
    from grader.authoring import check, scaffold

    try:
        files = scaffold.new_exercise(slug, title)
    except scaffold.ScaffoldError as exc:
        raise click.UsageError(str(exc)) from None
    for path in files:
        click.echo(f"wrote {path.relative_to(catalog.PROJECT_DIR)}")
    click.echo(f"added {slug} to {catalog.INDEX.relative_to(catalog.PROJECT_DIR)}")
    problems, _ = check.check([slug])
    click.echo(f"Left to write ({len(problems)}), from `grade pack check {slug}`:")
    for problem in problems:
        click.echo(f"  {problem}")
