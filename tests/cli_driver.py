"""Drive the installed `grade` command as a learner would: a subprocess whose output is read as
it comes (pipes or a pseudo-terminal), with keys written to its stdin."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

GRADE = Path(sys.executable).with_name("grade")


def invoke(*args: str, input: str | None = None):
    """``grade ARGS`` in this process (click's CliRunner), exceptions not caught."""
    from click.testing import CliRunner

    from grader.cli import main

    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


class Session:
    """``Session(args, cwd)`` starts ``grade ARGS``; ``until(text)`` waits for ``text`` in the
    output and returns what came since the previous ``until``."""

    def __init__(self, args: list[str], cwd: Path, *, tty: bool = False) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("TERM", "COLUMNS")}
        if tty:
            import pty

            self._fd, slave = pty.openpty()
            self.tty_fd = slave
            self.proc = subprocess.Popen([str(GRADE), *args], stdin=slave, stdout=slave,
                                         stderr=slave, cwd=cwd, env={**env, "TERM": "dumb"})
            self._in = self._fd
        else:
            self.proc = subprocess.Popen([str(GRADE), *args], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         cwd=cwd, env=env)
            self._fd = self.proc.stdout.fileno()
            self._in = self.proc.stdin.fileno()
        self.output = ""
        self._mark = 0

    def send(self, keys: str) -> None:
        os.write(self._in, keys.encode())

    def _read(self, timeout: float) -> bool:
        """Read what is there; False at the end of the output."""
        if not select.select([self._fd], [], [], timeout)[0]:
            return True
        try:
            chunk = os.read(self._fd, 65536)
        except OSError:  # a pseudo-terminal whose other end closed
            chunk = b""
        self.output += chunk.decode("utf-8", errors="replace")
        return bool(chunk)

    def until(self, text: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.output[self._mark:]:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never came; output:\n{self.output}"
            alive = self._read(min(left, 1.0))
            assert alive or text in self.output[self._mark:], \
                f"the command ended before {text!r}; output:\n{self.output}"
        end = self.output.index(text, self._mark) + len(text)
        chunk, self._mark = self.output[self._mark:end], end
        return chunk

    def finish(self, timeout: float = 120.0) -> tuple[int, str]:
        """Wait for the command to end: its exit code and the output since the last mark."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, f"the command did not end:\n{self.output}"
            self._read(0.2)
        while select.select([self._fd], [], [], 0.2)[0] and self._read(0):
            pass  # what it wrote before it ended
        rest, self._mark = self.output[self._mark:], len(self.output)
        return self.proc.returncode, rest

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        if hasattr(self, "tty_fd"):
            os.close(self.tty_fd)
            os.close(self._fd)
