"""`grade review`: the rubric's TOML form, OUT/review.json (saved, read back, applied to a
class's results, stale detection), and the review page through Flask's test client: the
token on every request, the loopback bind, the Content-Security-Policy and the escaping of
everything a learner controls. The page in a real browser: tests/test_review_browser.py."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from grader import assignment
from grader.bulk import manifest as mf
from grader.results import (
    ExerciseResult,
    ExerciseStatus,
    MarkKind,
    SubmissionResult,
    TestResult,
    TestStatus,
)
from grader.review import app as review_app
from grader.review import store
from grader.rubric import Rubric, RubricItem, parse

TOKEN = "the-token-of-this-run"
XSS_ID = '"><img src=x onerror=alert(1)>'  # a folder name: no '/'
XSS_NAME = "<script>alert(1)</script>"
XSS_CODE = ('def grid_local_mask(*a):\n    """</pre><script>alert(1)</script>"""\n'
            '    return "\\"><img src=x onerror=alert(2)>"\n')
RUBRIC_TOML = """
title = "Week 3"
exercises = ["grid_local_mask"]

[[rubric]]
id = "names"
title = "Clear variable names"
points = 1
exercise = "grid_local_mask"

[[rubric]]
id = "loops"
title = "Python loops where numpy would do"
points = -0.5
"""


# --- the rubric --------------------------------------------------------------------------

ITEM = {"id": "names", "title": "Clear names", "points": 1}


@pytest.mark.parametrize("data, field", [
    ("names", "'rubric' must be"),
    ([ITEM, "x"], "rubric[2] must be a table"),
    ([{**ITEM, "colour": "red"}], "rubric[1]: unknown field(s) colour"),
    ([{**ITEM, "id": ""}], "rubric[1].id"),
    ([{**ITEM, "id": "a b"}], "rubric[1].id"),
    ([{**ITEM, "id": 3}], "rubric[1].id"),
    ([{"title": "x", "points": 1}], "rubric[1].id"),
    ([{**ITEM, "title": " "}], "rubric[1].title"),
    ([{**ITEM, "title": "x" * 201}], "rubric[1].title"),
    ([{**ITEM, "points": 0}], "rubric[1].points"),
    ([{**ITEM, "points": True}], "rubric[1].points"),
    ([{**ITEM, "points": "1"}], "rubric[1].points"),
    ([{**ITEM, "points": float("nan")}], "rubric[1].points"),
    ([{**ITEM, "points": float("inf")}], "rubric[1].points"),
    ([{**ITEM, "exercise": "attention_rollout"}], "rubric[1].exercise"),
    ([{**ITEM, "exercise": 1}], "rubric[1].exercise"),
    ([ITEM, ITEM], "the id 'names' is used twice"),
    ({"comment": "yes"}, "rubric.comment must be true or false"),
    ({"items": ITEM}, "rubric.items must be"),
    ({"items": [{**ITEM, "points": -0.0}]}, "rubric.items[1].points"),
    ({"commnt": False}, "[rubric]: unknown field(s) commnt"),
])
def test_a_malformed_rubric_is_one_sentence_naming_the_field(data, field):
    with pytest.raises(ValueError) as caught:
        parse(data, ["grid_local_mask"])
    message = str(caught.value)
    assert field in message, message
    assert "\n" not in message and message.count(". ") == 0


def test_the_two_forms_of_a_rubric():
    short = parse([{"id": "names", "title": "  Clear   names ", "points": 1,
                    "exercise": "grid_local_mask"}, {"id": "loops", "title": "Loops",
                                                     "points": -0.5}], ["grid_local_mask"])
    assert short == Rubric(items=(RubricItem("names", "Clear names", 1.0, "grid_local_mask"),
                                  RubricItem("loops", "Loops", -0.5)), comment=True)
    long = parse({"comment": False, "items": [{"id": "loops", "title": "Loops",
                                               "points": -0.5}]}, ["grid_local_mask"])
    assert long == Rubric(items=(RubricItem("loops", "Loops", -0.5),), comment=False)
    assert parse({"comment": True}, []) == Rubric()
    assert parse(None, []) is None
    assert long.item("loops") is long.items[0] and long.item("names") is None


def test_the_assignment_file_reads_its_rubric(tmp_path):
    path = tmp_path / "assignment.toml"
    path.write_text(RUBRIC_TOML)
    task = assignment.load(path)
    assert [i.id for i in task.rubric.items] == ["names", "loops"]
    path.write_text(RUBRIC_TOML.replace("points = -0.5", "points = 'lots'"))
    with pytest.raises(assignment.AssignmentError, match=r"assignment.toml: rubric\[2\]\.points"):
        assignment.load(path)


# --- a class folder, written the way grade bulk writes it ---------------------------------

def result_of(sid: str, passed: int, failed: int = 0, message: str = "values differ: "
              "10-50% of the values") -> SubmissionResult:
    tests = [TestResult(name=f"t{i}", status=TestStatus.PASSED, score=1.0, max_score=1.0,
                        duration_s=None) for i in range(passed)]
    tests += [TestResult(name=f"f{i}", status=TestStatus.FAILED, score=0.0, max_score=1.0,
                         message=message, duration_s=None) for i in range(failed)]
    status = ExerciseStatus.FAILED if failed else ExerciseStatus.PASSED
    return SubmissionResult(submission=sid, device="cpu", feedback="graded", duration_s=None,
                            exercises=[ExerciseResult("grid_local_mask",
                                                      "A local attention mask", status, tests)])


def write_result(out: Path, result: SubmissionResult, code: str = "def f():\n    pass\n"):
    folder = out / result.submission
    (folder / "submitted").mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(result.to_dict()))
    (folder / "submitted" / "grid_local_mask.py").write_text(code)
    (folder / "index.html").write_text("<!DOCTYPE html><title>report</title>")


def make_class(out: Path, assignment_text: str | None = RUBRIC_TOML) -> Path:
    """ann (3/3), bob (1/3), the hostile XSS_ID (2/3, code and name hostile), dan rejected."""
    out.mkdir(parents=True)
    write_result(out, result_of("ann", 3))
    write_result(out, result_of("bob", 1, 2, message=f"bob's {XSS_NAME}"))
    write_result(out, result_of(XSS_ID, 2, 1), code=XSS_CODE)
    options = {"assignment": None}
    if assignment_text is not None:
        (out.parent / "assignment.toml").write_text(assignment_text)
        options["assignment"] = out.parent / "assignment.toml"
    students = (mf.Entry(id="ann", status="graded", name="Ann A."),
                mf.Entry(id="bob", status="graded"),
                mf.Entry(id=XSS_ID, status="graded", name=XSS_NAME),
                mf.Entry(id="dan", status="rejected", reason="an empty folder"))
    mf.write(out, mf.ClassManifest(title="Week 3", layout="a folder", scope="", generated="",
                                   exercises=("grid_local_mask",), students=students), options)
    return out


@pytest.fixture
def out(tmp_path):
    return make_class(tmp_path / "out")


def rubric_of(out: Path) -> Rubric | None:
    task = mf.read(out).assignment()
    return task.rubric if task else None


# --- review.json ------------------------------------------------------------------------

def test_review_file_round_trip(out):
    fp = store.fingerprint(result_of("ann", 3))
    store.save(out, "ann", store.Entry(items=("loops", "names"), comment="Tidy.",
                                       fingerprint=fp))
    store.save(out, "bob", store.Entry(reviewed=True, fingerprint="x"))
    data = json.loads((out / "review.json").read_text())
    assert data["version"] == store.VERSION
    assert data["reviews"]["ann"]["items"] == ["loops", "names"]
    entries = store.load(out)
    assert entries["ann"].comment == "Tidy." and entries["ann"].fingerprint == fp
    assert entries["ann"].saved and entries["bob"].items == ()
    store.save(out, "bob", store.Entry(reviewed=False))  # nothing left to keep: removed
    assert set(store.load(out)) == {"ann"}
    assert list(out.glob(".review.json-*")) == []  # written atomically: no temporary left


def test_apply_adds_the_items_in_the_rubric_order_and_the_comment(out):
    results = [result_of("ann", 3), result_of("bob", 1, 2)]
    store.save(out, "ann", store.Entry(items=("names",), comment="Clear.",
                                       fingerprint=store.fingerprint(results[0])))
    store.save(out, "bob", store.Entry(items=("loops", "names"), comment="",
                                       fingerprint=store.fingerprint(results[1])))
    assert store.apply(out, results, rubric_of(out)) == []
    ann, bob = results
    # ann had the maximum: +1 is kept within it (and says so)
    assert [(m.kind, m.asked, m.points, m.label) for m in ann.marks] == [
        (MarkKind.RUBRIC, 1.0, 0.0, "Clear variable names")]
    assert ann.marks[0].kept and ann.final_score == 3
    assert ann.review.comment == "Clear." and not ann.review.stale
    assert [(m.label, m.points, m.exercise) for m in bob.marks] == [
        ("Clear variable names", 1.0, "grid_local_mask"),
        ("Python loops where numpy would do", -0.5, "")]
    assert bob.final_score == 1.5 and bob.review.comment == ""


def test_apply_without_a_review_file_changes_nothing(out):
    results = [result_of("ann", 3)]
    assert store.apply(out, results, rubric_of(out)) == []
    assert results[0].marks == [] and results[0].review is None


def test_apply_says_what_it_leaves_out(out):
    results = [result_of("ann", 3)]
    fp = store.fingerprint(results[0])
    store.save(out, "ann", store.Entry(items=("gone", "names"), comment="Hm.", fingerprint=fp))
    store.save(out, "zed", store.Entry(items=("names",), fingerprint=fp))
    notices = store.apply(out, results, rubric_of(out))
    assert [m.label for m in results[0].marks] == ["Clear variable names"]
    assert any("'gone' is not in the assignment's rubric: left out of 1 submission (ann)" in n
               for n in notices), notices
    assert any("reviews 1 submission (zed) not in the class: left out" in n for n in notices)
    no_comment = Rubric(items=rubric_of(out).items, comment=False)
    again = [result_of("ann", 3)]
    notices = store.apply(out, again, no_comment)
    assert again[0].review.comment == ""
    assert any("allows no comment" in n and "(ann)" in n for n in notices), notices


def test_a_review_of_an_earlier_result_is_stale(out):
    before = result_of("bob", 1, 2)
    store.save(out, "bob", store.Entry(items=("names",), fingerprint=store.fingerprint(before)))
    same = result_of("bob", 1, 2, message="reworded by a newer grader")
    same.exercises[0].tests[0].duration_s = 9.5  # a clock is not a decision
    assert store.fingerprint(same) == store.fingerprint(before)
    regraded = result_of("bob", 2, 1)
    assert store.fingerprint(regraded) != store.fingerprint(before)
    notices = store.apply(out, [regraded], rubric_of(out))
    assert regraded.review.stale and [m.label for m in regraded.marks] == [
        "Clear variable names"]  # still applied, and said
    assert any("earlier result" in n and "(bob)" in n for n in notices), notices
    rescored = result_of("bob", 1, 2)
    rescored.exercises[0].tests[0].max_score = 2.0  # the assignment's points changed
    assert store.fingerprint(rescored) != store.fingerprint(before)


@pytest.mark.parametrize("text, why", [
    ("{not json", "not valid JSON"),
    ("\udcff", "not valid JSON"),
    ("[]", "not a review file"),
    ('{"version": 1}', "not a review file"),
    ('{"version": 1, "reviews": []}', "not a review file"),
    ('{"version": 1, "reviews": {"ann": {"items": "names"}}}', "the review of 'ann'"),
    ('{"version": 1, "reviews": {"ann": {"comment": 3}}}', "the review of 'ann'"),
    ('{"version": 1, "reviews": {"ann": []}}', "the review of 'ann' is not an object"),
    ('{"version": 9, "reviews": {}}', "written by a newer grader"),
])
def test_a_corrupt_review_file_is_an_error_naming_it(out, text, why):
    (out / "review.json").write_text(text, errors="surrogateescape")
    with pytest.raises(store.ReviewError) as caught:
        store.apply(out, [result_of("ann", 3)], rubric_of(out))
    message = str(caught.value)
    assert message.startswith(f"{out / 'review.json'}: ") and why in message, message
    assert "\n" not in message


# --- the page ---------------------------------------------------------------------------

class Exports:
    """A stand-in for grader.bulk.exports.write_exports that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Path, set[str]]] = []

    def __call__(self, out: Path, only) -> list[str]:
        self.calls.append((out, set(only)))
        return ["1 row left out of moodle.csv."]


@pytest.fixture
def exports():
    return Exports()


@pytest.fixture
def client(out, exports):
    c = review_app.create_app(out, TOKEN, exporter=exports).test_client()
    assert c.get(f"/?token={TOKEN}").status_code == 303  # sets the cookie
    return c


def save(client, sid: str, **body):
    return client.post(f"/save/{sid}", json={"items": [], "comment": "", **body},
                       headers={review_app.TOKEN_HEADER: TOKEN})


@pytest.mark.parametrize("path", ["/", "/s/ann", "/s/dan", "/static/review.js",
                                  "/assets/report.css", "/files/ann/index.html",
                                  "/files/similarity.html", "/nowhere"])
def test_every_request_without_the_token_is_refused(out, path):
    c = review_app.create_app(out, TOKEN, exporter=Exports()).test_client()
    assert c.get(path).status_code == 403
    assert c.get(path + "?token=wrong").status_code == 403
    assert c.get(path, headers={"Cookie": "grade-review-x=" + TOKEN}).status_code == 403
    c.set_cookie(review_app.cookie_name("another token"), TOKEN)
    assert c.get(path).status_code == 403


def test_the_token_once_then_a_cookie(out):
    c = review_app.create_app(out, TOKEN, exporter=Exports()).test_client()
    first = c.get(f"/s/ann?token={TOKEN}")
    assert first.status_code == 303 and first.headers["Location"] == "/s/ann"  # dropped
    cookie = first.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert c.get("/s/ann").status_code == 200
    assert c.get("/static/review.js").status_code == 200


def test_a_post_needs_the_token_in_its_body_or_header(client, out, exports):
    # the cookie alone (what a cross-site form would carry) changes nothing
    assert client.post("/save/ann", json={"items": ["names"]}).status_code == 403
    assert client.post("/save/ann", data={"item": "names"}).status_code == 403
    assert client.post("/save/ann", json={"items": []},
                       headers={review_app.TOKEN_HEADER: "wrong"}).status_code == 403
    assert not (out / "review.json").exists() and exports.calls == []
    answer = client.post("/save/ann", data={"item": "names", "comment": "ok",
                                            "action": "save", "token": TOKEN})
    assert answer.status_code == 303 and answer.headers["Location"] == "/s/ann"
    assert store.load(out)["ann"].items == ("names",)


def test_the_form_works_without_script(client, out, exports):
    """The essentials without JavaScript: the form's buttons save and move."""
    answer = client.post(f"/save/{quote(XSS_ID, safe='')}",
                         data={"token": TOKEN, "item": ["names", "loops"], "comment": "a\r\nb",
                               "action": "next"})
    assert answer.status_code == 303 and answer.headers["Location"] == "/s/ann"
    entry = store.load(out)[XSS_ID]
    assert entry.items == ("names", "loops") and entry.comment == "a\nb" and entry.reviewed
    answer = client.post("/save/ann", data={"token": TOKEN, "action": "next"})
    assert answer.headers["Location"] == "/s/bob"  # the reviewed one is skipped
    client.post("/save/ann", data={"token": TOKEN, "action": "unreview"})
    assert "ann" not in store.load(out)  # nothing applied, not reviewed: no entry left
    assert len(exports.calls) == 3


def test_the_reports_grade_bulk_wrote(client, out):
    report = client.get("/files/ann/index.html")
    assert report.status_code == 200 and b"<title>report</title>" in report.data
    assert report.headers["Content-Security-Policy"] == review_app.REPORT_CSP
    assert client.get("/files/dan/index.html").status_code == 404  # not graded
    assert client.get("/files/nobody/index.html").status_code == 404
    assert client.get("/files/similarity.html").status_code == 404  # no --similarity


def test_a_save_writes_review_json_and_the_exports_of_that_submission(client, out, exports):
    answer = save(client, "bob", items=["loops", "names"], comment="Good start.")
    assert answer.status_code == 200, answer.json
    assert answer.json["saved"] and answer.json["reviewed"]
    assert answer.json["marks"] == ["+1 Clear variable names (grid_local_mask)",
                                    "-0.5 Python loops where numpy would do"]
    assert (answer.json["score"], answer.json["final"], answer.json["max"]) == ("1", "1.5", "3")
    assert answer.json["done"] == 1 and answer.json["notices"] == [
        "1 row left out of moodle.csv."]
    assert exports.calls == [(out, {"bob"})]
    entry = store.load(out)["bob"]
    assert entry.items == ("loops", "names") and entry.comment == "Good start."
    assert entry.fingerprint == store.fingerprint(result_of("bob", 1, 2))
    page = client.get("/s/bob").get_data(as_text=True)
    assert re.search(r'value="names" data-key="1" checked', page)
    assert "Good start.</textarea>" in page and "✓ reviewed" in page
    unreviewed = save(client, "bob", items=["names"], comment="Good start.",
                      action="unreview")
    assert not unreviewed.json["reviewed"] and unreviewed.json["done"] == 0


@pytest.mark.parametrize("body, status, why", [
    ({"items": ["nope"]}, 400, "Not in the rubric: nope"),
    ({"items": "names"}, 400, "not of the right type"),
    ({"comment": "x" * (store.COMMENT_CHARS + 1)}, 400, "longer than"),
    ({"action": "delete"}, 400, "not of the right type"),
])
def test_a_save_that_does_not_fit_is_refused(client, out, exports, body, status, why):
    answer = save(client, "ann", **body)
    assert answer.status_code == status and why in answer.json["error"]
    assert not (out / "review.json").exists() and exports.calls == []


def test_nothing_to_save_for_a_submission_not_graded(client, out):
    assert save(client, "dan").status_code == 404
    assert save(client, "nobody").status_code == 404
    page = client.get("/s/dan").get_data(as_text=True)
    assert "Not graded: an empty folder" in page and 'id="review-form"' not in page


def test_without_an_exports_module_the_review_is_still_saved(out, monkeypatch):
    monkeypatch.setattr(review_app, "default_exporter", lambda: None)
    c = review_app.create_app(out, TOKEN).test_client()
    c.get(f"/?token={TOKEN}")
    answer = save(c, "ann", items=["names"])
    assert answer.status_code == 200 and not answer.json["exported"]
    assert "grader.bulk.exports" in answer.json["notices"][0]
    assert store.load(out)["ann"].items == ("names",)


def test_a_failing_export_keeps_the_review_and_says_so(out):
    def broken(out_, only):
        raise ValueError("grades.csv: cannot be written")

    c = review_app.create_app(out, TOKEN, exporter=broken).test_client()
    c.get(f"/?token={TOKEN}")
    answer = save(c, "ann", items=["names"])
    assert answer.status_code == 200 and not answer.json["exported"]
    assert "grades.csv: cannot be written" in answer.json["notices"][0]
    assert "ann" in store.load(out)


def test_a_corrupt_review_file_is_said_and_left_as_it_is(client, out):
    (out / "review.json").write_text("{oops")
    answer = save(client, "ann", items=["names"])
    assert answer.status_code == 409 and "review.json: not valid JSON" in answer.json["error"]
    assert (out / "review.json").read_text() == "{oops"
    page = client.get("/s/ann")
    assert page.status_code == 500 and "not valid JSON" in page.get_data(as_text=True)


def test_the_page_shows_the_code_tests_and_moves(client, out):
    page = client.get("/s/bob").get_data(as_text=True)
    assert '<div class="source">' in page and "grid_local_mask.py" in page
    assert "✗ failed" in page and "✓ passed" in page
    assert page.count('class="test ') == 3
    assert 'href="/s/ann" rel="prev"' in page and 'id="next"' in page
    assert 'id="next-unreviewed"' in page
    save(client, XSS_ID)
    page = client.get("/s/ann").get_data(as_text=True)
    # the next not reviewed after ann skips the reviewed one and wraps round
    assert re.search(r'id="next-unreviewed" data-key="n" href="/s/bob"', page)
    index = client.get("/").get_data(as_text=True)
    assert "not graded: an empty folder" in index
    assert 'reviewed <span id="done">1</span> of 3' in index


def test_a_stale_review_says_so_in_the_page(client, out):
    store.save(out, "bob", store.Entry(items=("names",), fingerprint="older"))
    page = client.get("/s/bob").get_data(as_text=True)
    assert 'id="stale"' in page and "earlier result" in page
    assert 'data-state="stale"' in page
    save(client, "bob", items=["names"])
    assert 'id="stale"' not in client.get("/s/bob").get_data(as_text=True)


def test_the_similarity_pairs_of_a_submission(client, out):
    with (out / "similarity.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["exercise", "a", "b", "score", "share_a", "share_b", "matched_tokens",
                    "regions"])
        w.writerow(["grid_local_mask", "ann", "'=bob", 91.5, 90, 93, 100, 2])
        w.writerow(["grid_local_mask", "ann", XSS_ID, 72.0, 70, 74, 80, 1])
    (out / "similarity.html").write_text("<!DOCTYPE html><title>similarity</title>")
    page = client.get("/s/ann").get_data(as_text=True)
    assert 'href="/s/=bob"' in page and "92%" in page  # the cell's "'" dropped
    assert 'href="/files/similarity.html#grid_local_mask-1"' in page
    assert 'href="/files/similarity.html#grid_local_mask-2"' in page
    assert "ann" in client.get("/s/" + XSS_ID).get_data(as_text=True)
    shown = client.get("/files/similarity.html")
    assert shown.status_code == 200
    assert shown.headers["Content-Security-Policy"] == review_app.REPORT_CSP


class Tags(HTMLParser):
    """Every start tag of a page, with its attributes, as a browser's parser sees them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def named(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.tags if tag == name]


def assert_only_own_script(html: str) -> None:
    """The page's one script is the app's file; no tag has an event handler, a style or a
    javascript: link; no image at all; nothing from another site."""
    tags = Tags(html)
    assert tags.named("script") == [{"src": "/static/review.js", "defer": None}]
    assert re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S) == [""]
    assert tags.named("img") == [] and tags.named("iframe") == []
    for tag, attrs in tags.tags:
        assert not [a for a in attrs if a.startswith("on") or a == "style"], (tag, attrs)
        assert not any((v or "").strip().lower().startswith(("javascript:", "http:", "https:"))
                       for v in attrs.values()), (tag, attrs)


@pytest.mark.parametrize("path", ["/", "/s/ann", "/s/bob", "/s/dan"])
def test_pages_run_only_the_apps_own_script(client, path):
    answer = client.get(path)
    csp = answer.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "http" not in csp
    assert_only_own_script(answer.get_data(as_text=True))


def test_learner_text_is_escaped(client):
    page = client.get("/s/" + quote(XSS_ID, safe="")).get_data(as_text=True)
    assert_only_own_script(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the name
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page  # the id, as a heading
    assert "onerror=alert(2)" in page and "&lt;/pre&gt;" in page  # the code, by Pygments
    bob = client.get("/s/bob").get_data(as_text=True)
    assert "bob&#39;s &lt;script&gt;" in bob  # a test's message
    assert_only_own_script(bob)
    assert_only_own_script(client.get("/").get_data(as_text=True))


def test_a_class_without_a_rubric_takes_comments(tmp_path, exports):
    out = make_class(tmp_path / "out", assignment_text=None)
    c = review_app.create_app(out, TOKEN, exporter=exports).test_client()
    c.get(f"/?token={TOKEN}")
    page = c.get("/s/ann").get_data(as_text=True)
    assert 'name="item"' not in page and 'id="comment"' in page
    assert save(c, "ann", items=["names"]).status_code == 400
    assert save(c, "ann", comment="Fine.").json["marks"] == []


def test_a_rubric_without_comments_has_no_comment_box(tmp_path, exports):
    text = RUBRIC_TOML.replace('exercises = ["grid_local_mask"]\n',
                               'exercises = ["grid_local_mask"]\n\n[rubric]\ncomment = false\n'
                               ).replace("[[rubric]]", "[[rubric.items]]")
    out = make_class(tmp_path / "out", assignment_text=text)
    c = review_app.create_app(out, TOKEN, exporter=exports).test_client()
    c.get(f"/?token={TOKEN}")
    page = c.get("/s/ann").get_data(as_text=True)
    assert 'id="comment"' not in page and page.count('name="item"') == 2
    assert "allows no comment" in save(c, "ann", comment="x").json["error"]


# --- the command ------------------------------------------------------------------------

class FakeServer:
    server_port = 43210

    def __init__(self, host: str, port: int, app) -> None:
        self.host, self.port, self.app = host, port, app
        self.closed = False

    def serve_forever(self) -> None:
        pass

    def server_close(self) -> None:
        self.closed = True


def test_the_command_serves_on_the_loopback_only_with_a_fresh_token(out, monkeypatch):
    from grader import files
    from grader.cli import main
    from grader.commands import review

    # what the command writes keeps the class folder's privacy: in this process only while
    # the test runs
    monkeypatch.setattr(files, "_MODES", dict(files._MODES))
    servers: list[FakeServer] = []
    launched: list[str] = []

    def fake(host, port, app):
        servers.append(FakeServer(host, port, app))
        return servers[-1]

    monkeypatch.setattr(review, "make_server", fake)
    monkeypatch.setattr("click.launch", lambda url: launched.append(url))
    runner = CliRunner()
    first = runner.invoke(main, ["review", str(out), "--no-browser", "--port", "0"])
    assert first.exit_code == 0, first.output
    assert servers[0].host == "127.0.0.1" and servers[0].port == 0 and servers[0].closed
    url = re.search(r"http://127\.0\.0\.1:43210/\?token=([\w-]+)", first.output)
    assert url and len(url.group(1)) >= 40 and launched == []
    assert files._MODES == {"file": 0o644, "dir": 0o755}  # the class is readable by all
    (out / "class.json").chmod(0o600)  # as grade bulk --private writes it
    second = runner.invoke(main, ["review", str(out), "--port", "8123"])
    assert second.exit_code == 0 and servers[1].port == 8123
    assert launched and url.group(1) not in launched[0]  # a new token for each run
    assert files._MODES == {"file": 0o600, "dir": 0o700}
    client = servers[1].app.test_client()
    assert client.get("/").status_code == 403
    assert client.get("/?" + launched[0].split("?")[1]).status_code == 303


def test_the_real_server_binds_the_loopback_interface(out):
    from grader.commands.review import HOST, make_server

    server = make_server(HOST, 0, review_app.create_app(out, TOKEN, exporter=Exports()))
    try:
        assert server.server_address[0] == "127.0.0.1" and server.server_port > 0
    finally:
        server.server_close()


@pytest.mark.parametrize("make, why", [
    (lambda tmp: tmp / "missing", "not a class folder written by `grade bulk`"),
    (lambda tmp: tmp, "not a class folder written by `grade bulk`"),
    (lambda tmp: make_class(tmp / "out") and (tmp / "out" / "class.json").write_text("{")
     and tmp / "out", "cannot be read"),
    (lambda tmp: make_class(tmp / "out") and (tmp / "out" / "review.json").write_text("[1]")
     and tmp / "out", "review.json: not a review file"),
])
def test_a_bad_out_folder_is_one_sentence_and_exit_2(tmp_path, make, why):
    from grader.cli import main

    result = CliRunner().invoke(main, ["review", str(make(tmp_path)), "--no-browser"])
    assert result.exit_code == 2, result.output
    assert why in result.output and "Traceback" not in result.output
