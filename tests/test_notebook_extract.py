"""A notebook's definitions as a learner file: what is kept, what is left out and reported,
the line map back to cells, and every bad notebook with its one-line reason."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grader.notebook import lines
from grader.notebook.extract import NotebookError, from_cells, from_notebook


def notebook(*cells: str, markdown_first: bool = True, minor: int = 5) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = minor
    nb.cells = ([nbformat.v4.new_markdown_cell("# The exercise")] if markdown_first else []) + [
        nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()


def body(text: str) -> str:
    return "\n".join(text.splitlines()[lines.HEADER_LINES:])


@pytest.mark.parametrize(("cell", "kept", "left"), [
    ("import numpy as np", "import numpy as np", ""),
    ("from math import sqrt", "from math import sqrt", ""),
    ("def f(x):\n    return x", "def f(x):\n    return x", ""),
    ("async def f():\n    pass", "async def f():\n    pass", ""),
    ("@decorate\nclass A:\n    pass", "@decorate\nclass A:\n    pass", ""),
    ("EPS = 1e-6", "EPS = 1e-6", ""),
    ("SIZES = (8, 16)\nSCALE = -1 / 64", "SIZES = (8, 16)\nSCALE = -1 / 64", ""),
    ("DTYPE: object = np.float32", "DTYPE: object = np.float32", ""),
    ("A, B = 1, 2", "A, B = 1, 2", ""),
    ("try:\n    import torch\nexcept ImportError:\n    torch = None",
     "try:\n    import torch\nexcept ImportError:\n    torch = None", ""),
    ("model = train()", "", "model = ... (not a constant)"),
    ("xs = [i for i in range(3)]", "", "xs = ... (not a constant)"),
    ("for i in range(3):\n    print(i)", "", "a for loop"),
    ("while False:\n    pass", "", "a while loop"),
    ("if __name__ == '__main__':\n    main()", "", "an if block"),
    ("plt.plot([1, 2])", "", "a call to plt.plot"),
    ("print('hi')", "", "a call to print"),
    ("x", "", "an expression"),
    ("%matplotlib inline\nimport numpy as np", "import numpy as np", "%matplotlib"),
    ("!pip install foo", "", "!pip"),
    ("files = !ls\nK = 3", "K = 3", "a magic assignment"),
    ("%%bash\nls", "", "a %%bash cell"),
    ("%%grade grid_local_mask\ndef g():\n    pass\ng()", "def g():\n    pass", "a call to g"),
    ("import os; os.system('touch x')", "import os", "a call to os.system"),
])
def test_a_cell_keeps_its_definitions_only(cell, kept, left):
    made = from_notebook(notebook(cell), "grid_local_mask.ipynb")
    assert body(made.text).strip() == kept
    if left:
        assert made.note.startswith("grid_local_mask.ipynb: left out (not run when grading) "
                                    "cell 2 (")
        assert left in made.note and "\n" not in made.note
    else:
        assert made.note == ""


def test_lines_map_to_cells_counted_with_markdown():
    made = from_notebook(notebook("import numpy as np\n%time x = 1",
                                  "print(1)\n\ndef f(x):\n    y = 1\n    return x / 0"),
                         "grid_local_mask.ipynb")
    text = made.text.splitlines()
    line = next(n for n, t in enumerate(text, 1) if "return x / 0" in t)
    assert made.line_map[line] == ("cell 3", 5)
    assert made.line_map[next(n for n, t in enumerate(text, 1) if "import numpy" in t)] == (
        "cell 2", 1)
    assert "cell 2 (%time)" in made.note and "cell 3 (a call to print)" in made.note


def test_the_header_reads_back_and_relabels(tmp_path: Path):
    made = from_notebook(notebook("def f(x):\n    return x / 0"), "grid_local_mask.ipynb")
    path = tmp_path / "grid_local_mask.py"
    path.write_text(made.text)
    name, line_map, note = lines.read(path)
    assert (name, line_map, note) == ("grid_local_mask.ipynb", made.line_map, "")
    gen = next(g for g, where in line_map.items() if where == ("cell 2", 2))
    assert lines.relabel(f"grid_local_mask.py, line {gen}, in f: return x / 0",
                         "grid_local_mask", path) == \
        "grid_local_mask.ipynb, cell 2, line 2, in f: return x / 0"
    assert lines.relabel("grid_local_mask.py raised NameError", "grid_local_mask", path) == \
        "grid_local_mask.ipynb raised NameError"
    other = tmp_path / "plain.py"
    other.write_text("x = 1\n")
    assert lines.relabel("grid_local_mask.py, line 1", "grid_local_mask", other) == \
        "grid_local_mask.py, line 1"


def test_future_imports_move_first_and_the_file_compiles():
    made = from_notebook(notebook("import numpy as np", "from __future__ import annotations"),
                         "x.ipynb")
    assert body(made.text).splitlines()[0] == "from __future__ import annotations"
    compile(made.text, "x.py", "exec")
    assert made.line_map[lines.HEADER_LINES + 1] == ("cell 3", 1)


@pytest.mark.parametrize("minor", [0, 1, 2, 3, 4, 5])
def test_every_nbformat_4_minor_version_is_read(minor):
    made = from_notebook(notebook("K = 1", minor=minor), "x.ipynb")
    assert body(made.text).strip() == "K = 1"


def test_cells_as_a_list_of_lines_are_joined():
    raw = json.loads(notebook("def f():\n    return 1"))
    raw["cells"][1]["source"] = ["def f():\n", "    return 1"]
    assert body(from_notebook(json.dumps(raw).encode(), "x.ipynb").text).strip() == \
        "def f():\n    return 1"


def _v3() -> bytes:
    return json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}
                       }).encode()


@pytest.mark.parametrize(("content", "reason"), [
    (b"not json", "is not a notebook: it is not JSON ("),
    (b"[1, 2]", "is not a notebook: its JSON has no cells"),
    (_v3(), "is an nbformat 3 notebook, but only nbformat 4 is read"),
    (b"\x00\x01", "is binary (it contains NUL bytes)"),
    (b"\xff{}", "is not UTF-8 text"),
    (notebook(markdown_first=True), "has no code cells"),
    (notebook("def f(:\n    pass"), "has a cell 2 that does not parse: "),
])
def test_a_bad_notebook_is_one_sentence(content, reason):
    with pytest.raises(NotebookError) as err:
        from_notebook(content, "grid_local_mask.ipynb")
    assert str(err.value).startswith(reason)
    assert "\n" not in str(err.value)


def test_nothing_is_executed(tmp_path: Path):
    marker = tmp_path / "ran"
    made = from_notebook(notebook(f"open({str(marker)!r}, 'w').write('x')",
                                  f"def f():\n    open({str(marker)!r}, 'w')"), "x.ipynb")
    assert not marker.exists() and "def f():" in made.text


def test_cells_from_the_magic_are_labelled_by_the_caller():
    made = from_cells([("In [1]", "import numpy as np"), ("this cell", "def f():\n    pass")],
                      "grid_local_mask.ipynb")
    assert set(made.line_map.values()) == {("In [1]", 1), ("this cell", 1), ("this cell", 2)}


def test_reading_notebooks_needs_no_ipython():
    import subprocess
    import sys

    code = ("import sys\nsys.modules['IPython'] = sys.modules['ipykernel'] = None\n"
            "import grader, grader.notebook.files, grader.notebook.extract, grader.bulk.layouts\n"
            "import grader.commands.grading\n"
            "assert 'IPython' not in {m for m, v in sys.modules.items() if v is not None}\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
