"""Report files others can read: 0644 files and 0755 folders (a web server, a teaching
assistant), 0600/0700 with --private; the cache of hidden expected values is always private."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grader import catalog

GRADE = str(Path(sys.executable).with_name("grade"))


@pytest.mark.parametrize("private, file_mode, dir_mode", [(False, 0o644, 0o755),
                                                          (True, 0o600, 0o700)],
                         ids=["shared", "private"])
def test_report_modes(tmp_path, private, file_mode, dir_mode):
    (tmp_path / "class/ann").mkdir(parents=True)
    (tmp_path / "class/ann/grid_local_mask.py").write_bytes(
        catalog.get("grid_local_mask").solution.read_bytes())
    out = tmp_path / "out"
    done = subprocess.run([GRADE, "bulk", str(tmp_path / "class"), "--out", str(out), "-q",
                           *(["--private"] if private else [])], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    cache = out / ".cache"
    written = [p for p in out.rglob("*") if cache not in p.parents and p != cache]
    assert {p.name for p in written} >= {"index.html", "grades.csv", "junit.xml", "ann",
                                         "results.json", "gradescope.json"}
    for path in [out, *written]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (dir_mode if path.is_dir() else file_mode), (path, oct(mode))
    cached = list(cache.glob("expected*"))
    assert cached, list(cache.iterdir())
    for expected in cached:
        assert stat.S_IMODE(expected.stat().st_mode) == 0o700
