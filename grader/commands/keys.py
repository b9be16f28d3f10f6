"""Keys the learner types while a long-running command (watch, interview) waits, read without
blocking.

On a terminal, stdin is put in cbreak mode (single keys, no echo; Ctrl-C still interrupts) and
restored on exit. Otherwise (a pipe, a file) stdin is read a line at a time, so a script or a
test can drive the command: each line is one key (its first character; an empty line is
Enter). At end of input no more keys come; the command goes on (Ctrl-C still stops it).
"""

from __future__ import annotations

import os
import select
import sys
import time
from types import TracebackType
from typing import TextIO

ENTER = "\n"


class Keys:
    """``with Keys() as keys: key = keys.read(timeout)`` — one key, or ``None`` on timeout."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdin
        self._fd: int | None = None
        self._saved: list | None = None
        self._buffer = ""
        self.tty = False
        self.closed = False

    def __enter__(self) -> Keys:
        try:
            self._fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.closed = True  # no usable stdin: no keys
            return self
        self.tty = os.isatty(self._fd)
        if self.tty:
            try:
                import termios
                import tty

                self._saved = termios.tcgetattr(self._fd)
                tty.setcbreak(self._fd)
            except (ImportError, OSError):
                self._saved = None
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._saved is not None and self._fd is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    @property
    def available(self) -> bool:
        """Whether keys can still come."""
        return not self.closed

    def read(self, timeout: float) -> str | None:
        """Wait at most ``timeout`` seconds for a key; ``None`` when none came."""
        key = self._next()
        if key is not None:
            return key
        if self.closed or self._fd is None:
            time.sleep(max(0.0, timeout))
            return None
        try:
            ready = select.select([self._fd], [], [], max(0.0, timeout))[0]
        except (OSError, ValueError):
            self.closed = True
            return None
        if not ready:
            return None
        try:
            data = os.read(self._fd, 1024)
        except OSError:
            data = b""
        if not data:
            self.closed = True
            if self._buffer:  # a last line without its newline
                self._buffer += "\n"
            return self._next()
        self._buffer += data.decode("utf-8", errors="replace")
        return self._next()

    def discard(self) -> None:
        """Forget the keys typed so far (on a terminal; piped input is a script's, kept)."""
        if not self.tty:
            return
        self._buffer = ""
        if self._fd is not None:
            try:
                import termios

                termios.tcflush(self._fd, termios.TCIFLUSH)
            except (ImportError, OSError):
                pass

    def _next(self) -> str | None:
        if not self._buffer:
            return None
        if self.tty:
            key, self._buffer = self._buffer[0], self._buffer[1:]
            return ENTER if key == "\r" else key
        if "\n" not in self._buffer:
            return None
        line, self._buffer = self._buffer.split("\n", 1)
        line = line.strip()
        return line[0] if line else ENTER
