"""Regenerate docs/screenshots/review.png: `grade review` on a class of three graded by the
real `grade bulk` (tests/test_review_browser.py's), a submission with a known mistake shown
with one rubric item applied and a comment, in the system's Chromium through Playwright.

    .venv/bin/python docs/screenshots/make_review_screenshot.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_review_browser import browser_page, grade_class, review_server, saving  # noqa: E402

OUT = Path(__file__).resolve().parent / "review.png"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = grade_class(Path(tmp))
        with review_server(out) as url, browser_page(width=1280, height=760) as (page, events):
            page.goto(url)
            page.goto(url.split("?")[0] + "s/bob")
            with saving(page):
                page.get_by_label("Clear variable names").check()
            page.locator("#comment").fill("The window is a diamond: compare rows and "
                                          "columns apart, then combine them.")
            with saving(page):
                page.locator("#comment").blur()  # a change: saved
            page.screenshot(path=str(OUT))
            assert events == [], events
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
