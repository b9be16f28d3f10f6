"""The ``grade`` command line (Click).

``grade [EXERCISE]...`` grades (the default command, ``grade run``; ``--watch`` re-grades on
save); ``grade list``, ``show``, ``hint``, ``reset``, ``solution``, ``progress`` and
``interview`` help the learner between runs; ``grade bulk`` grades a class.
Each command lives in its own module under ``grader/commands/``; this module assembles them.
Exit codes: 0 when every graded test passed, 1 when any did not, 2 for a usage error, 3 when
grading itself failed.
"""

from __future__ import annotations

from typing import Any

import click

from grader.commands import bulk, doctor, grading, interview, learner, pack, release, review
from grader.commands.common import complete_exercise


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a command, goes to ``run``."""

    default_command = "run"
    own_options = ("--help", "-h", "--version")  # the group's: never sent on to ``run``

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """`grade <TAB>` offers exercise names as well as the commands."""
        return super().shell_complete(ctx, incomplete) + complete_exercise(ctx, None,
                                                                           incomplete)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in self.own_options):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vit-grader", prog_name="grade")
def main() -> None:
    """Grade ML interview exercises (Vision Transformers and inductive bias).

    \b
    grade                       grade every exercise whose file exists in ./exercises
    grade grid_local_mask       grade one exercise (names tab-complete)
    grade --submission DIR      grade a folder of learner files (DIR/<exercise>.py)
    grade --watch [EX]          re-grade on save (h: next hint, q: quit)
    grade list | show EX | hint EX | progress
    grade reset EX              restore the stub (your version is backed up)
    grade solution EX           the reference, once you have passed
    grade interview             a mock interview against the clock
    grade bulk SUBMISSIONS --out DIR   grade a whole class (teachers)
    grade review DIR            review a graded class: rubric, comments (teachers)
    grade release --assignment FILE OUT   a student release (or --gradescope OUT.zip)
    grade doctor                what isolation this machine gives learner code
    grade pack new EX | check [EX]...   write and check exercises (authors)

    The learner's code runs in a separate process; the report goes to reports/index.html.
    Options for grading: grade run --help.
    """


for _command in (grading.run, learner.list_exercises, learner.show, learner.hint, learner.reset,
                 learner.solution, learner.progress, interview.interview, bulk.bulk,
                 release.release, doctor.doctor, pack.pack, review.review):
    main.add_command(_command)
