"""Headless Chromium for the browser test and the README screenshots (no extra dependency).

``load(page)`` opens a local HTML file and returns the DOM after load and every console
message Chromium logged: the reports run no script, so any console message is an error, and
their Content-Security-Policy (``default-src 'none'``) turns any attempt at a network request
into a logged violation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio"]
_CONSOLE = re.compile(r":CONSOLE[^\]]*\]\s*(.*)")


def binary() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    for name in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", "chromium",
                 "chromium-browser"):
        if name and (path := shutil.which(name)):
            return path
    return None


@dataclass
class Page:
    dom: str
    console: list[str]
    returncode: int


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    exe = binary()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "HOME": profile})


def load(page: Path, timeout: float = 90) -> Page:
    """Open ``page`` (a file) and return its DOM after load and the console messages."""
    proc = _run(["--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri()],
                timeout)
    console = [m.group(1) for line in proc.stderr.splitlines()
               if (m := _CONSOLE.search(line))]
    return Page(proc.stdout, console, proc.returncode)


def screenshot(page: Path, out: Path, width: int = 1100, height: int = 1500,
               timeout: float = 90) -> Path:
    """A PNG of the top ``width`` x ``height`` pixels of ``page``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _run([f"--window-size={width},{height}", f"--screenshot={out.resolve()}",
          page.resolve().as_uri()], timeout)
    if not out.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {page}")
    return out
