"""`grade review` in a real browser (Playwright driving the system's Chromium): a class graded
by the real `grade bulk`, reviewed through the page as a teacher does (clicks, a typed
comment, keyboard shortcuts), kept across a reload, saved in OUT/review.json and carried into
grades.csv and the class report; and a class whose ids, names and code are hostile, shown
with no script of theirs run. Skipped when Chromium or Playwright is missing (CI installs
both)."""

from __future__ import annotations

import contextlib
import csv
import json
import queue
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import chromium
import pytest
from conftest import declared
from test_review import RUBRIC_TOML, XSS_ID, XSS_NAME, make_class

from grader import catalog

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed "
                               "(pip install -e '.[dev]')")
pytestmark = pytest.mark.skipif(chromium.binary() is None,
                                reason="chromium is not installed (apt-get install chromium; "
                                       "CI installs it)")

GRADE = str(Path(sys.executable).with_name("grade"))
DEADLINE_S = 60  # for the server to print its address and answer
HOSTILE_CODE = "\n# </pre><script>alert('code')</script>\"><img src=x onerror=alert(3)>\n"


def grade_class(root: Path) -> Path:
    """OUT (``root/out``) of `grade bulk --similarity` over ann (the reference), bob (a known
    mistake) and cid (the reference with a hostile comment), with the rubric of RUBRIC_TOML.
    (docs/screenshots/make_review_screenshot.py grades this class too.)"""
    subs = root / "subs"
    for sid in ("ann", "bob", "cid"):
        (subs / sid).mkdir(parents=True)
    reference = catalog.get("grid_local_mask").solution
    shutil.copy(reference, subs / "ann")
    (subs / "bob" / "grid_local_mask.py").write_text(
        declared("grid_local_mask", "manhattan_window"))
    (subs / "cid" / "grid_local_mask.py").write_text(reference.read_text() + HOSTILE_CODE)
    (root / "assignment.toml").write_text(RUBRIC_TOML)
    proc = subprocess.run([GRADE, "bulk", str(subs), "--out", str(root / "out"),
                           "--assignment", str(root / "assignment.toml"), "--similarity",
                           "--workers", "2", "-q"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return root / "out"


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    return grade_class(tmp_path_factory.mktemp("review"))


@contextlib.contextmanager
def review_server(out: Path) -> Iterator[str]:
    """`grade review OUT --no-browser --port 0` running; yields the address it printed, once
    it answers (polled, within DEADLINE_S)."""
    proc = subprocess.Popen([GRADE, "review", str(out), "--no-browser", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout],
                     daemon=True).start()
    try:
        try:
            url = lines.get(timeout=DEADLINE_S).strip()
        except queue.Empty:
            pytest.fail(f"grade review printed no address in {DEADLINE_S} s")
        assert url.startswith("http://127.0.0.1:") and "?token=" in url, url
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                with urllib.request.urlopen(url.split("?")[0], timeout=5):
                    pass
            except urllib.error.HTTPError as exc:  # it answers: 403 without the token
                assert exc.code == 403
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "grade review does not answer"
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.contextmanager
def browser_page(width: int = 1400, height: int = 900) -> Iterator[tuple[object, list[str]]]:
    """A Chromium page, and the list every dialog, console message and page error of it is
    appended to (a review page has none)."""
    events: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium.binary(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(20_000)
            page.on("dialog", lambda d: (events.append(f"dialog: {d.message}"), d.dismiss()))
            page.on("console", lambda m: events.append(f"console {m.type}: {m.text}"))
            page.on("pageerror", lambda e: events.append(f"page error: {e}"))
            yield page, events
        finally:
            browser.close()


def saving(page):
    """Wait for the answer to the save the block's action makes."""
    return page.expect_response(lambda r: "/save/" in r.url and r.request.method == "POST")


def test_a_teacher_reviews_two_submissions(graded):
    expect = sync_api.expect
    with review_server(graded) as url, browser_page() as (page, events):
        base = url.split("?")[0]
        page.goto(url)
        assert page.url == base  # the token went into a cookie
        page.keyboard.press("n")  # the first submission not reviewed: ann
        page.wait_for_url(base + "s/ann")
        page.keyboard.press("j")
        page.wait_for_url(base + "s/bob")
        expect(page.locator("h1.sid")).to_have_text("bob")
        with saving(page) as answer:
            page.get_by_label("Clear variable names").check()
        assert answer.value.ok
        with saving(page):
            page.keyboard.press("2")  # the second item: loops
        expect(page.locator("#reviewed")).to_have_text("✓ reviewed")
        page.locator("#comment").click()
        page.keyboard.type("Check the window's edge.")
        page.keyboard.press("Escape")
        page.keyboard.press("j")  # the comment is saved before the page is left
        page.wait_for_url(base + "s/cid")
        with saving(page):
            page.get_by_label("Clear variable names").check()
        expect(page.locator("#final")).to_have_text(page.locator("#max").inner_text())

        page.goto(base + "s/bob")  # what was entered is kept
        assert page.get_by_label("Clear variable names").is_checked()
        assert page.get_by_label("Python loops where numpy would do").is_checked()
        expect(page.locator("#comment")).to_have_value("Check the window's edge.")
        expect(page.locator("#marks li")).to_have_count(2)
        page.keyboard.press("n")  # ann is the one left
        page.wait_for_url(base + "s/ann")
        assert events == []

    reviews = json.loads((graded / "review.json").read_text())["reviews"]
    assert set(reviews) == {"bob", "cid"}
    assert reviews["bob"]["items"] == ["names", "loops"]
    assert reviews["bob"]["comment"] == "Check the window's edge."
    assert reviews["cid"]["items"] == ["names"] and reviews["cid"]["reviewed"]

    # the exports carry the review (grader.bulk.exports, after each save)
    score = json.loads((graded / "bob" / "results.json").read_text())["score"]
    with (graded / "grades.csv").open(newline="", encoding="utf-8") as f:
        rows = {row["id"]: row for row in csv.DictReader(f)}
    assert float(rows["bob"]["total"]) == pytest.approx(min(score + 0.5, 9), abs=0.01)
    assert "Clear variable names" in rows["bob"]["status"]
    report = (graded / "index.html").read_text()
    assert "Clear variable names" in report and "Check the window" in report
    total = rows["bob"]["total"]
    with (graded / "moodle.csv").open(newline="", encoding="utf-8") as f:
        assert {r[0]: r[-1] for r in csv.reader(f)}["bob"] == total
    bundle = json.loads((graded / "bob" / "gradescope.json").read_text())
    assert bundle["score"] == pytest.approx(float(total))
    assert "Clear variable names" in bundle["output"] and "Check the window" in bundle["output"]
    own = (graded / "bob" / "index.html").read_text()  # the student's own report
    assert "Rubric: Clear variable names" in own and "Check the window" in own


def test_hostile_ids_names_and_code_run_no_script(tmp_path):
    out = make_class(tmp_path / "out")
    with review_server(out) as url, browser_page() as (page, events):
        base = url.split("?")[0]
        page.goto(url)
        sync_api.expect(page.get_by_text(XSS_NAME)).to_have_count(1)
        page.goto(base + "s/" + quote(XSS_ID, safe=""))
        sync_api.expect(page.locator("h1.sid")).to_have_text(XSS_ID)
        assert "onerror=alert(2)" in page.locator("div.source").inner_text()
        assert page.locator("img").count() == 0
        with saving(page):
            page.keyboard.press("1")
        page.goto(base + "s/bob")
        assert events == []
