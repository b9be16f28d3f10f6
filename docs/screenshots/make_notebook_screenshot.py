"""Regenerate docs/screenshots/notebook_cell.png: what a `%%grade grid_local_mask` cell shows
under it in Jupyter (the cell's rich output, made by the extension's own code, drawn in a page
styled like a notebook cell), for a window that is a diamond instead of a square. Needs
Chromium (Debian: apt-get install chromium).

    .venv/bin/python docs/screenshots/make_notebook_screenshot.py
"""

from __future__ import annotations

import html
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import chromium  # noqa: E402  (tests/chromium.py)

from grader.notebook.magic import grade_cell  # noqa: E402

OUT = Path(__file__).resolve().parent / "notebook_cell.png"
CELL = '''import numpy as np

def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    T = n_prefix + H_p * W_p
    idx = np.arange(H_p * W_p)
    rows, cols = idx // W_p, idx % W_p
    gap = np.abs(rows[:, None] - rows[None, :]) + np.abs(cols[:, None] - cols[None, :])
    mask = np.ones((T, T), dtype=bool)
    mask[n_prefix:, n_prefix:] = gap <= radius
    return mask
'''
PAGE = """<!doctype html><meta charset="utf-8"><style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; background: #fff; }}
.in {{ border: 1px solid #cfcfcf; background: #f7f7f7; padding: 8px 12px; }}
.in pre, .out pre {{ margin: 0; font: 13px/1.4 monospace; }}
.prompt {{ color: #303f9f; font: 13px monospace; margin: 4px 0; }}
.out {{ padding: 8px 12px; }} svg {{ max-width: 100%; height: auto; }}
</style><div class="prompt">In [3]:</div><div class="in"><pre>{cell}</pre></div>
<div class="out">{output}</div>"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        output = grade_cell("grid_local_mask", CELL, [], cwd=Path(tmp))
        page = Path(tmp) / "cell.html"
        page.write_text(PAGE.format(cell=html.escape("%%grade grid_local_mask\n" + CELL),
                                    output=output["text/html"]))
        chromium.screenshot(page, OUT, width=1000, height=1300)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
