"""A progress bar for long runs: done/total, rate and ETA on one refreshed line (stderr)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else \
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """Call ``advance(label)`` after each item; ``close()`` prints the final line.

    On a terminal the line is redrawn in place; otherwise a line is printed every ``every``
    items (and for the last), so logs stay readable.
    """

    def __init__(self, total: int, *, stream: TextIO = sys.stderr, width: int = 28,
                 every: int = 10, enabled: bool = True) -> None:
        self.total, self.stream, self.width, self.every = total, stream, width, every
        self.enabled = enabled
        self.done = 0
        self.started = time.monotonic()
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def line(self, label: str = "") -> str:
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        filled = int(self.width * self.done / self.total) if self.total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        text = (f"[{bar}] {self.done}/{self.total}  {rate:.1f}/s  "
                f"ETA {_clock(left) if self.done < self.total else '0:00'}")
        return f"{text}  {label}" if label else text

    def advance(self, label: str = "", n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line(label)[:200])
            self.stream.flush()
        elif self.done % self.every == 0 or self.done == self.total:
            self.stream.write(self.line(label) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
