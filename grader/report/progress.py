"""A progress bar for long runs (``grade bulk``): click's progress bar, on stderr."""

from __future__ import annotations

import sys
from typing import TextIO

import click


class Progress:
    """Call ``advance(label)`` after each item (``n=0``: a step of the current one, shown as
    its label only); ``close()`` ends the bar.

    On a terminal, click's bar (done/total, ETA, the last item) is redrawn in place; otherwise
    click's same line is printed every ``every`` items (and for the last), so logs stay
    readable. ``enabled=False`` (``-q``) prints nothing.
    """

    def __init__(self, total: int, *, stream: TextIO | None = None, width: int = 28,
                 every: int = 10, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.every, self.enabled = total, every, enabled
        self.done = 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        # not drawn by click off a terminal (it would print only its label): see advance()
        self._bar = click.progressbar(
            length=total, file=self.stream, width=width, show_pos=True, show_eta=True,
            bar_template="[%(bar)s] %(info)s", fill_char="#", empty_char="-",
            item_show_func=lambda label: label or None, hidden=not (enabled and self.tty))
        self._bar.__enter__()

    def line(self) -> str:
        """The bar's current line, as click formats it."""
        return self._bar.format_progress_line()

    def advance(self, label: str = "", n: int = 1) -> None:
        self.done += n
        self._bar.update(n, current_item=label)
        if self.enabled and not self.tty and n > 0 and (self.done % self.every == 0
                                                        or self.done == self.total):
            click.echo(self.line(), file=self.stream)

    def close(self) -> None:
        self._bar.__exit__(None, None, None)
