"""What of a notebook was not graded is said in every report: the exercise's message in
results.json and in its HTML report, for `grade bulk` as for `grade`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

from grader import catalog

GRADE = str(Path(sys.executable).with_name("grade"))


def test_a_bulk_report_says_which_cells_were_left_out(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(catalog.get("grid_local_mask").solution.read_text()),
                nbformat.v4.new_code_cell("print(grid_local_mask(2, 2, 1))")]
    (tmp_path / "class" / "ann").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "ann" / "grid_local_mask.ipynb")
    done = subprocess.run([GRADE, "bulk", str(tmp_path / "class"), "--out", str(tmp_path / "o"),
                           "--exercises", "grid_local_mask", "-q"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "o" / "ann" / "results.json").read_text())
    said = "grid_local_mask.ipynb: left out (not run when grading) cell 2 (a call to print)"
    assert result["score"] == 9 and result["exercises"][0]["message"] == said
    assert "left out (not run when grading) cell 2" in \
        (tmp_path / "o" / "ann" / "index.html").read_text()
