"""Every export written again from OUT alone (``grader.bulk.exports.write_exports``): what
``grade review`` calls after each save. Graded once by the real ``grade bulk``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import catalog, files
from grader.bulk import exports, manifest

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
EXPORTS = ("index.html", "grades.csv", "moodle.csv", "junit.xml", "s1/gradescope.json",
           "s1/index.html", "s2/gradescope.json", "s2/index.html")


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """A class of two (s1 right, s2 the stub) graded with an adjustment of s2."""
    root = tmp_path_factory.mktemp("class")
    for sid, source in (("s1", catalog.get(SLUG).solution), ("s2", catalog.get(SLUG).stub)):
        (root / "in" / sid).mkdir(parents=True)
        shutil.copy(source, root / "in" / sid / f"{SLUG}.py")
    (root / "adjust.csv").write_text("student,points,comment\ns2,2,attempt <b>seen</b>\n")
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1800000000"}
    proc = subprocess.run([GRADE, "bulk", str(root / "in"), "--out", str(root / "out"), "-q",
                           "--adjust", str(root / "adjust.csv")], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return root / "out"


def _bytes(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in EXPORTS}


def test_the_run_is_kept_with_the_files_as_graded(graded):
    m = manifest.read(graded)
    assert [(e.id, e.status) for e in m.students] == [("s1", "graded"), ("s2", "graded")]
    assert m.exercises == (SLUG,) and m.copy("adjust").read_text().startswith("student,")
    assert (graded / "s2" / "submitted" / f"{SLUG}.py").read_bytes() == \
        catalog.get(SLUG).stub.read_bytes()


def test_exporting_again_writes_the_same_bytes(graded, monkeypatch, tmp_path):
    """Marks are applied from scratch each time and never enter results.json: a second
    export of the same class changes nothing (a copy, so the module's folder stays as
    graded)."""
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    before = _bytes(out)
    results = (out / "s2" / "results.json").read_bytes()
    assert exports.write_exports(out) == []
    assert _bytes(out) == before
    assert (out / "s2" / "results.json").read_bytes() == results
    assert b"marks" not in results and b"attempt" not in results


def test_an_export_flushes_the_class_folder_once(graded, monkeypatch, tmp_path):
    """Each file is written whole and renamed without an fsync of its own; OUT is flushed
    once, at the end, and a file written afterwards is fsynced again."""
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    fsyncs, flushed = [], []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    monkeypatch.setattr(files, "sync_tree", flushed.append)
    exports.write_exports(out)
    assert (fsyncs, flushed) == ([], [out])
    files.atomic_write_text(tmp_path / "after.txt", "x")
    assert len(fsyncs) == 1 and flushed == [out]


def test_the_students_report_shows_the_teachers_marks(graded):
    page = (graded / "s2" / "index.html").read_text()
    assert "From your teacher" in page
    assert "Adjustment: attempt &lt;b&gt;seen&lt;/b&gt;" in page and "<b>seen" not in page
    assert "From your teacher" not in (graded / "s1" / "index.html").read_text()
    assert ",2,9," in (graded / "grades.csv").read_text().replace("\r", "")


def test_a_folder_grade_bulk_did_not_write_is_one_sentence(tmp_path):
    with pytest.raises(manifest.ManifestError, match="not a class folder written by"):
        exports.write_exports(tmp_path)
    (tmp_path / manifest.FILE).write_text("{")
    with pytest.raises(manifest.ManifestError, match="cannot be read"):
        exports.write_exports(tmp_path)


def test_a_late_policy_reaches_every_export(tmp_path, monkeypatch):
    """The assignment's late policy, applied from the run's copy with the time the download
    gave (here written into the manifest as a Moodle worksheet would give it): the total after
    the penalty in every gradebook, the rule in the student's report."""
    import json

    root = tmp_path
    (root / "in" / "s1").mkdir(parents=True)
    shutil.copy(catalog.get(SLUG).solution, root / "in" / "s1" / f"{SLUG}.py")
    (root / "a.toml").write_text(
        f'title = "Week 1"\nexercises = ["{SLUG}"]\ndue = 2026-12-01T12:00:00Z\n'
        '[late]\ngrace = "15 minutes"\nper_day = "10%"\n')
    proc = subprocess.run([GRADE, "bulk", str(root / "in"), "--out", str(root / "out"), "-q",
                           "--assignment", str(root / "a.toml")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = root / "out"
    assert ",9,9," in (out / "grades.csv").read_text()  # no time known: no penalty
    data = json.loads((out / manifest.FILE).read_text())
    data["students"][0]["submitted_at"] = "2026-12-02T13:00:00+00:00"  # 1 day 1 hour late
    (out / manifest.FILE).write_text(json.dumps(data))
    assert exports.write_exports(out) == []
    assert ",7.2,9," in (out / "grades.csv").read_text()  # 2 days of 10% of 9 points
    assert json.loads((out / "s1" / "gradescope.json").read_text())["score"] == 7.2
    page = (out / "s1" / "index.html").read_text()
    assert "Late: 2 days late" in page and "-1.8" in page
    assert "7.2</strong> / 9" in (out / "index.html").read_text()


RUBRIC_TOML = (f'title = "Week 1"\nexercises = ["{SLUG}"]\ndue = 2026-12-01T12:00:00Z\n'
               '[late]\nper_day = "10%"\n'
               '[[rubric]]\nid = "names"\ntitle = "Clear names"\npoints = -1\n')


def _graded_with(tmp_path: Path, roster: list[str], ids: list[str]) -> Path:
    """ids graded (the reference each) with the rubric, the late policy and ``roster``."""
    for sid in ids:
        (tmp_path / "in" / sid).mkdir(parents=True)
        shutil.copy(catalog.get(SLUG).solution, tmp_path / "in" / sid / f"{SLUG}.py")
    (tmp_path / "a.toml").write_text(RUBRIC_TOML)
    (tmp_path / "roster.csv").write_text("\r\n".join(roster) + "\r\n")
    env = {**os.environ, "TZ": "UTC"}  # the worksheet's times: the downloader's zone
    proc = subprocess.run([GRADE, "bulk", str(tmp_path / "in"), "--out", str(tmp_path / "out"),
                           "-q", "--assignment", str(tmp_path / "a.toml"), "--roster",
                           str(tmp_path / "roster.csv")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "out"


def _review(out: Path, sid: str, comment: str) -> None:
    assert _review_item(out, sid, "names", comment) == []


def _rows(path: Path) -> list[list[str]]:
    import csv

    return list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))


def test_a_review_reaches_canvas_csv(tmp_path):
    """Canvas: the review's rubric item in the total of the roster's own column."""
    out = _graded_with(tmp_path, [
        "Student,ID,SIS User ID,SIS Login ID,Section,Week 1 (4321)",
        "\"Smith, Ann\",101,S-1,ann,A,", "\"Jones, Bob\",102,S-2,bob,A,"], ["ann", "bob"])
    _review(out, "bob", "See the <edges>.")
    rows = _rows(out / "canvas.csv")
    assert rows[0][-1] == "Week 1 (4321)"
    assert {r[1]: r[-1] for r in rows[2:]} == {"101": "9", "102": "8"}
    grades = {r[0]: r for r in _rows(out / "grades.csv")[1:]}
    assert grades["bob"][-1] == "graded; adjusted from 9: -1 Clear names; See the <edges>."
    page = (out / "bob" / "index.html").read_text()
    assert "Rubric: Clear names" in page and "See the &lt;edges&gt;." in page


def test_a_review_and_a_late_penalty_reach_moodles_worksheet(tmp_path):
    """Moodle: the worksheet's Grade after the rubric item and the late penalty (the time
    from its own "Last modified (submission)"), the feedback saying both and the comment."""
    header = ("Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be "
              "changed,Last modified (submission),Last modified (grade),Feedback comments")
    out = _graded_with(tmp_path, [
        header,
        'Participant 5101,Ann Smith,ann@x.org,Submitted for grading,,9.00,Yes,'
        '"Monday, 1 December 2026, 10:15 AM",-,',
        'Participant 5102,Bob Jones,bob@x.org,Submitted for grading - 1 day 1 hour late,,'
        '9.00,Yes,"Wednesday, 2 December 2026, 1:00 PM",-,'], ["5101", "5102"])
    _review(out, "5102", "-2 was the old rule; see me")
    rows = _rows(out / "moodle-worksheet.csv")
    cols = {name: i for i, name in enumerate(rows[0])}
    sheet = {r[cols["Identifier"]]: r for r in rows[1:]}
    ann, bob = sheet["Participant 5101"], sheet["Participant 5102"]
    assert ann[cols["Grade"]] == "9.00"
    # 9 - 1 (rubric) = 8, then 2 days late at 10% of 9 a day: 8 - 1.8 = 6.2
    assert bob[cols["Grade"]] == "6.20"
    feedback = bob[cols["Feedback comments"]]
    assert "-1 Clear names" in feedback and "late: 2 days late" in feedback
    assert feedback.endswith("-2 was the old rule; see me")  # as written, no '
    assert "Late: 2 days late" in (out / "5102" / "index.html").read_text()


def test_regrading_keeps_a_review_and_says_when_it_is_stale(tmp_path):
    """A review survives `grade bulk` run again: the same result keeps it silently; a new
    upload graded otherwise keeps it applied, and the run says it was made against an earlier
    result (on the terminal and in the class report)."""
    from grader.review import store

    (tmp_path / "in" / "bob").mkdir(parents=True)
    shutil.copy(catalog.get(SLUG).stub, tmp_path / "in" / "bob" / f"{SLUG}.py")
    (tmp_path / "a.toml").write_text(f'title = "Week 1"\nexercises = ["{SLUG}"]\n'
                                     '[[rubric]]\nid = "tried"\ntitle = "A fair try"\n'
                                     'points = 1\n')

    def grade() -> subprocess.CompletedProcess:
        done = subprocess.run([GRADE, "bulk", str(tmp_path / "in"), "--out",
                               str(tmp_path / "out"), "-q", "--assignment",
                               str(tmp_path / "a.toml")], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    grade()
    out = tmp_path / "out"
    _review_item(out, "bob", "tried", "Keep going.")
    saved = (out / store.FILE).read_bytes()
    again = grade()  # nothing changed: from the cache, the review as it was
    assert "earlier result" not in again.stderr
    assert ",1,9," in (out / "grades.csv").read_text()
    shutil.copy(catalog.get(SLUG).solution, tmp_path / "in" / "bob" / f"{SLUG}.py")
    regraded = grade()
    assert "were made against an earlier result" in regraded.stderr
    assert "earlier result" in (out / "index.html").read_text()
    assert ",9,9," in (out / "grades.csv").read_text()  # 9 + 1, kept at the maximum
    assert "A fair try" in (out / "grades.csv").read_text()
    assert (out / store.FILE).read_bytes() == saved  # the teacher's file is never rewritten


def _review_item(out: Path, sid: str, item: str, comment: str) -> list[str]:
    """Save a review of ``sid`` as the page does (the item, the comment, the result's
    fingerprint), then write the exports again; return what they said."""
    from grader.review import store

    results = exports.read_results(out, [sid])
    store.save(out, sid, store.Entry(items=(item,), comment=comment,
                                     fingerprint=store.fingerprint(results[0])))
    return exports.write_exports(out, only={sid})


def test_the_files_kept_follow_the_submission_and_the_mode(tmp_path):
    """``OUT/<id>/submitted/`` holds the files as last graded: a file the submission no
    longer has is removed, a changed one replaced, and a run with ``--private`` leaves none
    readable by others (an unchanged copy of an earlier public run included)."""
    sub = tmp_path / "in" / "ann"
    sub.mkdir(parents=True)
    shutil.copy(catalog.get(SLUG).solution, sub / f"{SLUG}.py")
    shutil.copy(catalog.get("attention_rollout").stub, sub / "attention_rollout.py")

    def grade(*extra: str) -> None:
        done = subprocess.run([GRADE, "bulk", str(tmp_path / "in"), "--out",
                               str(tmp_path / "out"), "-q", *extra], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    grade()
    kept = tmp_path / "out" / "ann" / "submitted"
    assert sorted(p.name for p in kept.iterdir()) == ["attention_rollout.py", f"{SLUG}.py"]
    (sub / "attention_rollout.py").unlink()
    (sub / f"{SLUG}.py").write_text(catalog.get(SLUG).stub.read_text())
    grade("--private")
    assert [p.name for p in kept.iterdir()] == [f"{SLUG}.py"]
    assert (kept / f"{SLUG}.py").read_bytes() == catalog.get(SLUG).stub.read_bytes()
    assert (kept / f"{SLUG}.py").stat().st_mode & 0o077 == 0
    (sub / f"{SLUG}.py").write_text(catalog.get(SLUG).solution.read_text())
    grade()  # public again: the copy rewritten readable, though the bytes differ anyway
    grade("--private")  # same bytes as the public copy: still made private
    assert (kept / f"{SLUG}.py").stat().st_mode & 0o077 == 0
