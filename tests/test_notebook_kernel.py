"""A real kernel: a notebook run with nbclient and ipykernel loads the extension, grades a
wrong and then a right ``%%grade grid_local_mask`` cell, and asks for a hint."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import reference_source

from grader.state import State

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

WRONG = """def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    T = n_prefix + H_p * W_p
    if radius == 0:
        return 1 / 0
    return np.ones((T, T), dtype=bool)
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[list, Path]:
    folder = tmp_path_factory.mktemp("kernel")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext grader"),
                nbformat.v4.new_code_cell("import numpy as np\n%time y = 1\nprint('experiment')"),
                nbformat.v4.new_code_cell("%%grade grid_local_mask\n" + WRONG),
                nbformat.v4.new_code_cell("%%grade grid_local_mask\n"
                                          + reference_source("grid_local_mask")),
                nbformat.v4.new_code_cell("%grade_hint grid_local_mask")]
    # a kernel of this interpreter, whatever kernels the machine has installed
    spec = folder / "jupyter" / "kernels" / "grader-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "grader test", "language": "python"}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(folder / "jupyter"))
        client = nbclient.NotebookClient(nb, timeout=300, startup_timeout=120,
                                         kernel_name="grader-test",
                                         resources={"metadata": {"path": str(folder)}})
        client.execute()
    return nb.cells, folder


def _display(cell) -> dict:
    shown = [o for o in cell.outputs if o.output_type == "display_data"]
    assert len(shown) == 1, cell.outputs
    return shown[0].data


def test_a_wrong_cell_gets_its_verdicts_with_cell_lines(ran):
    cells, _ = ran
    data = _display(cells[2])
    text = data["text/plain"]
    assert "✗ failed  square_grid_radius_1" in text
    assert "grid_local_mask.ipynb, this cell, line 4, in grid_local_mask: return 1 / 0" in text
    score = re.search(r"Score (\d+)/(\d+)", text)
    assert score and int(score[1]) < int(score[2]) == 9
    assert "<svg" in data["text/html"] and "square_grid_radius_1" in data["text/html"]


def test_a_right_cell_scores_full_marks(ran):
    cells, _ = ran
    text = _display(cells[3])["text/plain"]
    assert "Score 9/9" in text and "failed" not in text


@pytest.mark.parametrize("index", [2, 3])
def test_the_html_is_self_contained(ran, index):
    html = _display(ran[0][index])["text/html"].lower()
    for needle in ("<script", "<iframe", "<link", "<img", "src=", "url(", "@import",
                   "javascript:", "href="):
        assert needle not in html, needle
    assert not re.search(r"https?://(?!www\.w3\.org/)", html)


def test_the_cells_still_run_in_the_kernel_and_experiments_are_not_graded(ran):
    cells, _ = ran
    assert any("experiment" in o.get("text", "") for o in cells[1].outputs)


def test_progress_and_hints_reach_the_state_file(ran, monkeypatch):
    cells, folder = ran
    assert "Hint 1 of" in _display(cells[4])["text/plain"]
    monkeypatch.chdir(folder)
    progress = State.load().progress["grid_local_mask"]
    assert progress.mastered
