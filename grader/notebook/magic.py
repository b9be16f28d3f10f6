"""``%load_ext grader``: the ``%%grade SLUG`` cell magic and ``%grade_hint SLUG``.

``%%grade SLUG`` runs the cell in the kernel as usual, then grades it exactly as ``grade SLUG``
would: the cell's source with the definitions of the cells run before it (history order, by
the rule of ``extract``; an earlier cell that does not parse is skipped) is written to a
temporary learner file, and ``python -m grader run SLUG --submission DIR --json --record``
grades it in a subprocess: learner code runs only in that grading's sandboxed worker, never in
the kernel on the grader's behalf. The grading is recorded in the project's
``.grade/state.json`` as the CLI records it (the project found from the kernel's working
folder up, as ``grade`` finds it: a notebook in a subfolder shares the project's progress and
hints). The result shows under the cell as a rich output: plain text (the verdict lines) and
HTML (the same lines, then the heatmaps of the failing arrays as inline SVG: self-contained,
no script, no network).

``%grade_hint SLUG`` (or ``hint(SLUG)``) shows ``grade hint SLUG``'s output.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .extract import NotebookError, from_cells

GRADE_TIMEOUT_S = 1800.0
_CELL = "this cell"


def load_ipython_extension(ip: Any) -> None:
    """Register ``%%grade`` and ``%grade_hint`` in the IPython shell ``ip``."""
    ip.register_magic_function(_grade_magic(ip), magic_kind="cell", magic_name="grade")
    ip.register_magic_function(lambda line: show(hint(line.strip())), magic_kind="line",
                               magic_name="grade_hint")


def _grade_magic(ip: Any) -> Any:
    def grade(line: str, cell: str) -> None:
        slug = line.strip().split()[0] if line.strip() else ""
        ip.run_cell(cell)  # the learner's own run, as without the magic
        earlier = list(ip.history_manager.input_hist_raw)[1:]
        if earlier and earlier[-1].strip().endswith(cell.strip()):
            earlier = earlier[:-1]  # this cell itself (stored before it runs)
        show(grade_cell(slug, cell, [(f"In [{n}]", src) for n, src in
                                     enumerate(earlier, start=1)]))

    return grade


def learner_source(slug: str, cell: str, earlier: list[tuple[str, str]]) -> str:
    """The learner file graded for ``cell``: the definitions of ``earlier`` cells that parse,
    then the cell's; raises ``NotebookError`` when the cell does not parse."""
    usable = []
    for label, source in earlier:
        try:
            from_cells([(label, source)], f"{slug}.ipynb")
        except NotebookError:
            continue
        usable.append((label, source))
    return from_cells(usable + [(_CELL, cell)], f"{slug}.ipynb").text


def grade_cell(slug: str, cell: str, earlier: list[tuple[str, str]],
               cwd: Path | None = None) -> dict[str, str]:
    """Grade ``cell`` (with ``earlier`` cells' definitions) as ``slug``; the rich output
    (``text/plain`` and ``text/html``)."""
    if not slug:
        return _plain("usage: %%grade EXERCISE, e.g. %%grade grid_local_mask (grade list: "
                      "the exercises)")
    try:
        source = learner_source(slug, cell, earlier)
    except NotebookError as exc:
        return _plain(f"{slug}: {_CELL} {exc}")
    with tempfile.TemporaryDirectory(prefix="grade-cell-") as tmp:
        folder = Path(tmp) / "cell"
        folder.mkdir()
        (folder / f"{slug}.py").write_text(source, encoding="utf-8")
        done = _run(["run", slug, "--submission", str(folder), "--json", "--record",
                     "--report-dir", str(Path(tmp) / "report")], cwd)
    text = _strip_start(done.stderr).rstrip()
    try:
        result = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        result = None
    if result is None:
        return _plain(text or f"grading {slug} failed (exit {done.returncode})")
    return {"text/plain": text, "text/html": to_html(text, result)}


def hint(slug: str, cwd: Path | None = None) -> dict[str, str]:
    """``grade hint SLUG``'s output, as a rich output."""
    done = _run(["hint", slug], cwd)
    return _plain((done.stdout + done.stderr).rstrip())


def to_html(text: str, result: dict[str, Any]) -> str:
    """The verdict lines, then each failing test's figures (inline SVG, no script)."""
    from grader.report import svg

    parts = [f'<div class="vit-grader"><pre style="white-space: pre-wrap">'
             f"{html.escape(text)}</pre>"]
    for exercise in result.get("exercises", []):
        for test in exercise.get("tests", []):
            figures = [f for f in test.get("figures") or [] if f.get("type") != "curve"]
            if test.get("status") == "passed" or not figures:
                continue
            parts.append(f"<h4>{html.escape(str(test.get('name', '')))}</h4>")
            for fig in figures:
                drawn = svg.render(fig)
                if drawn:
                    parts.append(f"<figure>{drawn}<figcaption>"
                                 f"{html.escape(svg.caption(fig))}</figcaption></figure>")
    parts.append("</div>")
    return "\n".join(parts)


def show(output: dict[str, str]) -> None:
    """Display a rich output under the running cell."""
    from IPython.display import display

    display(output, raw=True)


def _plain(text: str) -> dict[str, str]:
    return {"text/plain": text, "text/html": f"<pre>{html.escape(text)}</pre>"}


def _strip_start(text: str) -> str:
    """The grading's terminal lines without "Grading <temporary folder>" and "Report: ..."
    (the report is in a temporary folder, removed after the grading)."""
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith(("Grading ", "Report: ")))


def _run(args: list[str], cwd: Path | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS=os.environ.get("COLUMNS", "100"))
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd or Path.cwd(),
                          capture_output=True, text=True, env=env, timeout=GRADE_TIMEOUT_S,
                          check=False)
