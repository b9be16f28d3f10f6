"""Class exports (CSV, Gradescope JSON, JUnit XML) and the class report, on real results.

A tiny class is graded once through the real engine: a full-marks submission, the stub with
an exercise not submitted, known mistakes, an erroring function and a file that cannot be
loaded; plus a hostile id/message and rejected submissions.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import declared
from markupsafe import escape

from grader import catalog, numbers
from grader.engine.runner import grade
from grader.report import class_html as class_report
from grader.report import gradebooks, gradescope, junit
from grader.results import from_dict

GRID, SHAPE = "grid_local_mask", "shape_bias"
EXERCISES = [GRID, SHAPE]
HOSTILE = "<script>alert(1)</script>"



@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """``results`` (dicts as in results.json) and ``rejected`` of a tiny synthetic class."""
    root = tmp_path_factory.mktemp("class")
    sources = {
        "s01-alice": {GRID: catalog.get(GRID).solution.read_text(),
                      SHAPE: catalog.get(SHAPE).solution.read_text()},
        "s02-bob": {GRID: catalog.get(GRID).stub.read_text(), SHAPE: None},
        "s10-carol": {GRID: declared(GRID, "manhattan_window"),
                      SHAPE: declared(SHAPE, "texture_bias")},
        "s03-dave": {GRID: declared(GRID, "manhattan_window"), SHAPE: "def shape_bias(:\n"},
        "s11-erin": {GRID: "def grid_local_mask(H_p, W_p, radius, n_prefix=1):\n"
                           "    raise RuntimeError('boom')\n",
                     SHAPE: catalog.get(SHAPE).solution.read_text()},
    }
    results = []
    for sid, files in sources.items():
        paths: dict[str, Path | None] = {}
        for slug, src in files.items():
            paths[slug] = None
            if src is not None:
                (root / sid).mkdir(exist_ok=True)
                paths[slug] = root / sid / f"{slug}.py"
                paths[slug].write_text(src)
        results.append(grade(paths, submission=sid).to_dict())
    hostile = copy.deepcopy(results[1])  # bob's: no known mistake, so counts stay as graded
    hostile["submission"] = HOSTILE
    hostile["exercises"][0]["tests"][0]["message"] = HOSTILE + "\x07 bell"
    results.append(hostile)
    rejected = [{"id": "s04-frank", "reason": "corrupt zip: bad CRC-32 for grid_local_mask.py",
                 "source": "s04-frank.zip"},
                SimpleNamespace(id="s05-gus", reason=f"not UTF-8 {HOSTILE}", source="s05-gus")]
    models = [from_dict(r) for r in results]  # what the writers read: the result model
    return {"results": results, "rejected": rejected, "models": models,
            "by_id": {r["submission"]: r for r in results},
            "model_by_id": {m.submission: m for m in models}}


def _no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(".")]


# -- numbers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, text", [
    (9, "9"), (9.0, "9"), (7.5, "7.5"), (0.0, "0"), (-0.0, "0"), (1 / 3, "0.33"),
    (130 / 9, "14.44"), (27.000000001, "27"), (None, ""), (1e-9, "0"), (2.005001, "2.01")])
def test_points(value, text):
    """A score as a person reads it: at most two decimals."""
    assert numbers.points(value) == text


@pytest.mark.parametrize("value, text", [
    (9, "9"), (1 / 3, "0.333333"), (130 / 9, "14.444444"), (-0.0, "0"), (None, "")])
def test_exact(value, text):
    """A score as an LMS reads it: full precision (six decimals)."""
    assert numbers.exact(value) == text


# -- CSV --------------------------------------------------------------------------------------

def test_grades_csv(graded, tmp_path):
    path = tmp_path / "grades.csv"
    gradebooks.write_grades_csv(path, graded["models"], EXERCISES, graded["rejected"])
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict UTF-8
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["id", "total", "max", GRID, SHAPE, "late", "status"]
    body = {row[0]: row for row in rows[1:]}
    ids = [row[0] for row in rows[1:]]
    assert ids == [HOSTILE, "s01-alice", "s02-bob", "s03-dave", "s04-frank", "s05-gus",
                   "s10-carol", "s11-erin"]  # natural order: s10 after s05
    assert all(len(row) == 7 for row in rows)

    assert body["s01-alice"][1:5] == ["18", "18", "9", "9"]
    assert body["s01-alice"][5] == ""  # not late
    assert body["s01-alice"][6] == "graded"
    assert body["s02-bob"][1:5] == ["0", "18", "0", "0"]
    assert body["s02-bob"][6] == f"graded; not submitted: {SHAPE}"
    assert body["s03-dave"][6] == f"graded; could not be loaded: {SHAPE}"
    assert body["s03-dave"][4] == "0"
    for sid, r in graded["by_id"].items():
        row = body[sid]
        assert float(row[1]) == pytest.approx(r["score"])
        assert float(row[2]) == pytest.approx(r["max_score"])
        scores = {e["exercise"]: e["score"] for e in r["exercises"]}
        assert float(row[3]) == pytest.approx(scores[GRID])
        assert float(row[4]) == pytest.approx(scores[SHAPE])
        assert float(row[1]) == pytest.approx(float(row[3]) + float(row[4]))
        for cell in row[1:5]:
            assert not cell.endswith(".0") and "e" not in cell

    assert body["s04-frank"][1:5] == ["", "", "", ""]
    assert body["s04-frank"][6] == "not graded: corrupt zip: bad CRC-32 for grid_local_mask.py"
    assert body["s05-gus"][6].startswith("not graded: not UTF-8")
    assert _no_temp_files(tmp_path)


def test_grades_csv_edge_cases(graded, tmp_path):
    path = tmp_path / "grades.csv"
    # An exercise column this run did not grade is blank; a formula-like id is neutralised.
    alice = copy.deepcopy(graded["model_by_id"]["s01-alice"])
    gradebooks.write_grades_csv(path, [alice], [GRID, "attention_rollout"],
                             [{"id": "=HYPERLINK(1)", "reason": "x", "source": ""}])
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[1] == ["'=HYPERLINK(1)", "", "", "", "", "", "not graded: x"]
    assert rows[2][:5] == ["s01-alice", "18", "18", "9", ""]
    gradebooks.write_grades_csv(path, [], EXERCISES, [])  # overwrite: header only
    assert path.read_text(encoding="utf-8").splitlines() == [
        f"id,total,max,{GRID},{SHAPE},late,status"]


# -- Gradescope -------------------------------------------------------------------------------

def test_gradescope_json_is_valid(graded, tmp_path):
    for r in graded["results"]:
        data = gradescope.gradescope_json(from_dict(r))
        assert gradescope.validate_gradescope(data) == [], r["submission"]
        assert data["score"] == pytest.approx(r["score"])
        assert sum(t["max_score"] for t in data["tests"]) == pytest.approx(r["max_score"])
        assert set(data) <= gradescope.GRADESCOPE_TOP_KEYS
        assert all(set(t) <= gradescope.GRADESCOPE_TEST_KEYS for t in data["tests"])
        assert sum(t["score"] for t in data["tests"]) == pytest.approx(data["score"])
        n = sum(len(e["tests"]) for e in r["exercises"])
        assert len(data["tests"]) == n
        json.dumps(data, allow_nan=False)
    alice = gradescope.gradescope_json(graded["model_by_id"]["s01-alice"])
    assert alice["tests"][0]["name"] == f"{GRID}: square_grid_radius_1"
    assert alice["tests"][0]["visibility"] == "visible"  # public test
    assert {t["visibility"] for t in alice["tests"][1:]} >= {"after_due_date"}
    assert all(t["status"] == "passed" for t in alice["tests"])
    assert alice["output"].startswith("Score 18/18")

    carol = gradescope.gradescope_json(graded["model_by_id"]["s10-carol"])
    first = carol["tests"][0]
    assert first["status"] == "failed" and first["score"] == 0
    assert "Known mistake (manhattan window)" in first["output"]
    assert "Hint: " not in first["output"]  # the mistake names the cause: no test hint
    bob = gradescope.gradescope_json(graded["model_by_id"]["s02-bob"], hidden_visibility="visible")
    assert {t["visibility"] for t in bob["tests"]} == {"visible"}
    assert f"Not submitted: {SHAPE}" in bob["output"]
    erin = gradescope.gradescope_json(graded["model_by_id"]["s11-erin"])
    assert erin["tests"][0]["extra_data"]["grader_status"] == "error"
    assert "[error]" in erin["tests"][0]["output"]
    with pytest.raises(ValueError):
        gradescope.gradescope_json(graded["model_by_id"]["s01-alice"], hidden_visibility="secret")

    path = tmp_path / "gradescope.json"
    gradescope.write_gradescope_json(path, graded["model_by_id"]["s10-carol"])
    assert json.loads(path.read_text()) == carol
    assert _no_temp_files(tmp_path)


def test_validate_gradescope_rejects_broken_data(graded):
    data = gradescope.gradescope_json(graded["model_by_id"]["s10-carol"])
    broken = copy.deepcopy(data)
    broken["score"] = math.nan
    broken["colour"] = "red"
    broken["tests"][0]["visibility"] = "secret"
    broken["tests"][1]["score"] = "1"
    broken["tests"][2]["status"] = "ok"
    broken["tests"][3]["tags"] = "x"
    problems = gradescope.validate_gradescope(broken)
    joined = "\n".join(problems)
    for needle in ("score: expected a finite number", "unknown key 'colour'",
                   "tests[0].visibility", "tests[1].score", "tests[2].status", "tests[3].tags",
                   "strict JSON"):
        assert needle in joined, needle
    assert gradescope.validate_gradescope([]) != []
    no_score = copy.deepcopy(data)
    del no_score["score"]
    del no_score["tests"][0]["score"]
    assert any("tests[0].score" in p for p in gradescope.validate_gradescope(no_score))
    assert gradescope.validate_gradescope({"score": 1.0}) == []
    assert gradescope.validate_gradescope({"tests": "many"}) != []


# -- JUnit ------------------------------------------------------------------------------------

def test_junit_xml(graded, tmp_path):
    path = tmp_path / "junit.xml"
    junit.write_junit(path, graded["models"], graded["rejected"])
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        HOSTILE, "s01-alice", "s02-bob", "s03-dave", "s04-frank", "s05-gus", "s10-carol",
        "s11-erin"]
    totals = dict.fromkeys(("tests", "failures", "errors"), 0)
    for suite in suites:
        cases = suite.findall("testcase")
        counts = {"tests": len(cases),
                  "failures": sum(c.find("failure") is not None for c in cases),
                  "errors": sum(c.find("error") is not None for c in cases)}
        for key, n in counts.items():
            assert int(suite.get(key)) == n, (suite.get("name"), key)
            totals[key] += n
        assert float(suite.get("time")) >= 0
    for key, n in totals.items():
        assert int(root.get(key)) == n, key

    by_name = {s.get("name"): s for s in suites}
    alice = by_name["s01-alice"]
    assert alice.get("tests") == "18" and alice.get("failures") == alice.get("errors") == "0"
    case = alice.find("testcase")
    assert case.get("classname") == f"s01-alice.{GRID}"
    assert case.get("name") == "square_grid_radius_1"
    float(case.get("time"))
    bob = by_name["s02-bob"]  # shape_bias not submitted: its 9 tests fail "not submitted"
    assert bob.get("tests") == "18" and bob.get("failures") == "18"
    assert {c.get("classname") for c in bob.findall("testcase")} == {f"s02-bob.{GRID}",
                                                                      f"s02-bob.{SHAPE}"}
    missing = [c.find("failure") for c in bob.findall("testcase")
               if c.get("classname") == f"s02-bob.{SHAPE}"]
    assert len(missing) == 9 and {(f.get("type"), f.get("message")) for f in missing} == {
        ("not_submitted", "not submitted")}
    # the same count as gradescope.json, for every graded submission
    for r in graded["models"]:
        assert int(by_name[r.submission].get("tests")) == \
            len(gradescope.gradescope_json(r)["tests"]), r.submission
    assert not root.findall(".//skipped") and "skipped" not in root.attrib
    carol_fail = by_name["s10-carol"].find("testcase/failure")
    assert carol_fail.get("type") == "failed" and "manhattan" in carol_fail.text
    erin_err = by_name["s11-erin"].find("testcase/error")
    assert erin_err.get("type") == "error" and "RuntimeError: boom" in erin_err.get("message")
    dave_errors = [c for c in by_name["s03-dave"].findall("testcase")
                   if c.find("error") is not None]
    assert {c.get("classname") for c in dave_errors} == {f"s03-dave.{SHAPE}"}
    frank = by_name["s04-frank"]
    assert (frank.get("tests"), frank.get("errors")) == ("1", "1")
    err = frank.find("testcase/error")
    assert frank.find("testcase").get("name") == "not graded"
    assert err.get("type") == "rejected" and "bad CRC-32" in err.get("message")
    # the hostile message (with a control character) survives as text
    hostile_fail = by_name[HOSTILE].find("testcase/failure")
    assert HOSTILE in hostile_fail.get("message")
    assert _no_temp_files(tmp_path)


# -- class report -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(graded) -> str:
    return class_report.render_class_report(
        graded["models"], graded["rejected"], title="ViT practice — week 3",
        layout="folder of folders", generated="2025-01-01 12:00")


def test_class_report_content(graded, page):
    assert "<svg" in page and "total score (%)" in page
    for sid in graded["by_id"]:
        assert str(escape(sid)) in page
        assert f'href="{class_report.submission_href(sid)}"' in page
    assert 'href="s01-alice/index.html"' in page
    assert 'href="%3Cscript%3Ealert%281%29%3C%2Fscript%3E/index.html"' in page
    # rows ordered by id without JavaScript (natural order)
    positions = [page.index(f'href="{sid}/index.html"')
                 for sid in ("s01-alice", "s02-bob", "s03-dave", "s10-carol", "s11-erin")]
    assert positions == sorted(positions)
    assert "folder of folders" in page and "ViT practice — week 3" in page

    ctx = class_report.class_report_context(graded["models"], graded["rejected"])
    grid = next(ex for ex in ctx["exercises"] if ex["slug"] == GRID)
    first = grid["tests"][0]
    assert first["name"] == "square_grid_radius_1"
    assert (first["passed"], first["graded"]) == (1, 6)  # alice only; everyone submitted
    assert f"{first['passed']} / {first['graded']}</td>" in page
    shape = next(ex for ex in ctx["exercises"] if ex["slug"] == SHAPE)
    assert (shape["submitted"], shape["not_submitted"]) == (4, 2)
    assert f"{shape['passed']} / {shape['submitted']}" in page

    manhattan = next(m for m in grid["mistakes"] if m["name"] == "manhattan_window")
    assert manhattan["count"] == 2  # carol and dave
    assert ('<span class="count-pill">2</span><strong class="tag">manhattan_window</strong>'
            in page)
    assert str(escape(manhattan["message"])) in page
    assert manhattan["hint"] == ""  # a known mistake names its cause: no test hint beside it
    texture = next(m for m in shape["mistakes"] if m["name"] == "texture_bias")
    assert texture["count"] == 1 and "texture_bias" in page

    assert "corrupt zip: bad CRC-32" in page and "s04-frank.zip" in page
    assert "s05-gus" in page
    assert "SyntaxError" in page  # dave's shape_bias could not be loaded


def test_class_report_knows_the_class(graded):
    """Names, students without a submission, a late column, adjustments beside the computed
    score, every file written and other pages in the footer, scores with two decimals."""
    from grader.results import MarkKind

    models = copy.deepcopy(graded["models"])
    carol = next(m for m in models if m.submission == "s10-carol")
    carol.add_mark(MarkKind.ADJUST, 130 / 9 - carol.score, "regrade <ok>")
    page = class_report.render_class_report(
        models, graded["rejected"], title="T", layout="folders", generated="now",
        names={"s01-alice": "Alice A.", "s04-frank": "Frank F."}, absent=["Zoe Z."],
        late=["s02-bob"], files=["grades.csv", "canvas.csv"],
        pages=[("similarity.html", "Similar submissions")])
    assert '<td class="name" data-sort="Alice A.">Alice A.</td>' in page
    assert "<td>Frank F.</td>" in page  # a rejected submission's name
    assert '<td class="name" data-sort="Zoe Z.">Zoe Z.</td>' in page
    assert '<td class="num ns" data-sort="-1">no submission</td>' in page
    assert page.count('<td class="late" data-sort="late">late</td>') == 1
    assert ("<strong>14.44</strong> / 18<div class=\"meta adjusted\">adjusted · computed "
            f"{numbers.points(carol.score)}: regrade &lt;ok&gt;</div>") in page
    assert '<a href="canvas.csv"><code>canvas.csv</code></a>' in page
    assert '<a href="similarity.html">Similar submissions</a>' in page
    assert not re.search(r">[^<]*\d\.\d{3,}", page)  # no score with three decimals or more
    ctx = class_report.class_report_context(models, [], absent=["Zoe Z."])
    assert ctx["stats"]["absent"] == 1 and ctx["named"]


def test_class_report_histogram(graded):
    ctx = class_report.class_report_context(graded["models"], [])
    counts = ctx["hist"]["counts"]
    assert len(counts) == 10 and sum(counts) == len(graded["results"])
    assert counts[9] >= 1  # alice's 100% lands in the last bin
    assert counts[0] >= 2  # bob and the hostile copy score 0
    assert ctx["stats"]["graded"] == len(graded["results"])
    assert ctx["stats"]["uniform_max"] == 18


def test_class_report_is_offline_and_escaped(page):
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?//""", page)
    assert "@import" not in page and "url(" not in page
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script") == 1  # only the page's own small sorting script
    assert len(re.search(r"<script>(.*?)</script>", page, re.S).group(1)) < 2000


def test_write_class_report_empty_class_and_atomic(graded, tmp_path):
    out = class_report.write_class_report(
        tmp_path / "report", [], graded["rejected"], title="Empty", layout="zip of zips",
        generated="now")
    assert out == tmp_path / "report" / "index.html"
    text = out.read_text(encoding="utf-8")
    assert "No submission could be graded." in text and "<svg" in text
    assert _no_temp_files(out.parent)


def test_junit_xml_validates_against_the_consumers_rules(graded, tmp_path):
    import xmlschema

    schema = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "junit-rules.xsd"))
    path = tmp_path / "junit.xml"
    junit.write_junit(path, graded["models"], graded["rejected"])
    schema.validate(str(path))  # raises, saying where, when it does not fit
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites skipped="1"><testsuite name="x" tests="0" failures="0" '
                   'errors="0"/></testsuites>')
    assert not schema.is_valid(str(bad))  # the schema holds the rules: it can fail
