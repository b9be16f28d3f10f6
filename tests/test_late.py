"""The late policy (``[late]``, ``grader/late.py``): how lateness is counted and what it costs,
the form's errors, extensions, the marks ``apply`` adds, and the submission times read from
the LMS downloads (``Submission.submitted_at``)."""

from __future__ import annotations

import datetime as dt
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from grader import assignment, late, numbers
from grader.bulk.adjust import student_keys
from grader.bulk.layouts import discover
from grader.bulk.moodle_layout import member_time, submission_times
from grader.report import marks
from grader.results import ExerciseResult, MarkKind, SubmissionResult, TestResult

UTC = dt.UTC
DUE = dt.datetime(2026, 12, 15, 23, 59, tzinfo=UTC)
H, D, M, S = (dt.timedelta(hours=1), dt.timedelta(days=1), dt.timedelta(minutes=1),
              dt.timedelta(seconds=1))
SLUG = "grid_local_mask"
TEN_PERCENT = {"per_day": "10%"}
FULL = {"grace": "1 hour", "per_day": "10%", "floor": "50%", "cutoff": "7 days"}


def policy(**fields: Any) -> late.LatePolicy:
    result = late.parse(fields)
    assert result is not None
    return result


# --- counting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fields, lateness, before, points, label", [
    # exactly on time, early, inside the grace and exactly at its end: on time
    (TEN_PERCENT, dt.timedelta(0), 10, None, None),
    (TEN_PERCENT, -D, 10, None, None),
    (FULL, 59 * M, 10, None, None),
    (FULL, H, 10, None, None),
    # a second past the grace: a whole day, counted from the due date-time
    (FULL, H + S, 10, 1, "1 day late (1 h 1 min after the due date, past a 1 h grace): 10% "
                         "of 10 points a day"),
    # any part of a day is a day: 1 s late is 1 day, 24 h 1 min is 2 days
    (TEN_PERCENT, S, 10, 1, "1 day late (1 s after the due date): 10% of 10 points a day"),
    (TEN_PERCENT, D, 10, 1, "1 day late (1 d after the due date): 10% of 10 points a day"),
    (TEN_PERCENT, D + M, 10, 2, "2 days late (1 d 1 min after the due date): 10% of 10 "
                                "points a day"),
    # per hour, in points
    ({"per_hour": 1}, 2 * H + 30 * M, 10, 3, "3 hours late (2 h 30 min after the due date): "
                                             "1 point an hour"),
    ({"per_day": 1.5}, 2 * D, 10, 3, "2 days late (2 d after the due date): 1.5 points a day"),
    # a percentage is of the maximum, whatever the total left
    (TEN_PERCENT, 3 * D, 4, 3, "3 days late"),
    # the floor: never below 50% of 10 points; a total already below it loses nothing
    (FULL, 3 * D, 9, 3, "3 days late (3 d after the due date, past a 1 h grace): 10% of 10 "
                        "points a day"),
    (FULL, 6 * D, 9, 4, "6 days late (6 d after the due date, past a 1 h grace): 10% of 10 "
                        "points a day, kept at the floor of 5 points (50%)"),
    (FULL, D + 2 * H, 4, 0, "kept at the floor of 5 points (50%)"),
    ({"per_day": 2, "floor": 3}, 4 * D, 10, 7, "4 days late (4 d after the due date): 2 points "
                                                "a day, kept at the floor of 3 points"),
    # the cut-off: exactly at it still counts by the day; past it, nothing is left
    (FULL, 7 * D, 9, 4, "7 days late"),
    (FULL, 7 * D + S, 9, 9, "not accepted, more than 7 d late (7 d 1 min after the due date, "
                            "past a 1 h grace)"),
    # a cut-off alone: late but within it costs nothing, past it everything
    ({"cutoff": "2 days"}, D, 8, 0, "1 d after the due date, within the 2 d cut-off: no "
                                    "penalty"),
    ({"cutoff": "0 days", "grace": "10 min"}, 11 * M, 8, 8,
     "not accepted (11 min after the due date, past a 10 min grace)"),
])
def test_what_a_late_submission_costs(fields: dict, lateness: dt.timedelta, before: float,
                                      points: float | None, label: str | None) -> None:
    penalty = late.assess(policy(**fields), DUE, DUE + lateness, 10.0, before)
    if points is None:
        assert penalty is None
        return
    assert penalty is not None
    assert penalty.points == points
    assert label and label in penalty.label


def test_lateness_is_counted_in_utc_across_zones_and_daylight_saving() -> None:
    """Fixed offsets: the same instant written in two zones is on time; a DST change in the
    submitter's zone does not add or take an hour."""
    hourly = policy(per_hour="1%")
    due = dt.datetime(2026, 12, 16, 1, 59, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    same = dt.datetime(2026, 12, 15, 18, 59, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    assert late.assess(hourly, due, same, 10, 10) is None
    assert late.assess(hourly, due, same + S, 10, 10).label.startswith("1 hour late (1 s")
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        paris = zoneinfo.ZoneInfo("Europe/Paris")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone data on this machine")
    # 28 March 2026 12:00 (UTC+1) to 29 March 12:00 (UTC+2): 23 hours, not 24
    penalty = late.assess(hourly, dt.datetime(2026, 3, 28, 12, tzinfo=paris),
                          dt.datetime(2026, 3, 29, 12, tzinfo=paris), 100, 100)
    assert penalty.label.startswith("23 hours late (23 h after") and penalty.points == 23


@pytest.mark.parametrize("seconds, text", [
    (0, "0 s"), (0.2, "1 s"), (59, "59 s"), (59.5, "1 min"), (60, "1 min"), (60.5, "2 min"),
    (3600, "1 h"), (3601, "1 h 1 min"), (93900, "1 d 2 h 5 min"), (7 * 86400, "7 d")])
def test_a_span_is_rounded_up(seconds: float, text: str) -> None:
    assert numbers.span(seconds) == text


# --- the form ---------------------------------------------------------------------------------


def test_the_full_form_reads() -> None:
    p = policy(**FULL)
    assert (p.grace, p.per, p.rate, p.floor, p.cutoff) == (
        H, "day", late.Amount(10, True), late.Amount(50, True), 7 * D)
    assert policy(per_hour=0.5, grace="1 day 12 hours", floor=0).grace == D + 12 * H
    assert late.parse(None) is None


@pytest.mark.parametrize("data, words", [
    ("10%", "'late' must be a table (fields: grace, per_day, per_hour, floor, cutoff, "
            "extensions)"),
    ({"per_week": "1%"}, "late: unknown field(s) per_week"),
    ({}, "late needs a penalty: per_day or per_hour"),
    ({"grace": "1 h"}, "late needs a penalty"),
    ({"per_day": "1%", "per_hour": "1%"}, "late.per_day and late.per_hour: give one"),
    ({"cutoff": "2 days", "floor": "50%"}, "late.floor needs a penalty per_day or per_hour"),
    ({"per_day": "0%"}, "late.per_day must be a percentage of the maximum such as \"10%\" or "
                        "a number of points > 0, not '0%'"),
    ({"per_day": "120%"}, "late.per_day must be a percentage"),
    ({"per_day": "ten"}, "late.per_day must be a percentage"),
    ({"per_hour": -1}, "late.per_hour must be a percentage"),
    ({"per_hour": True}, "late.per_hour must be a percentage"),
    ({"per_hour": float("nan")}, "late.per_hour must be a percentage"),
    ({"per_day": 1, "floor": -2}, "late.floor must be a percentage of the maximum such as "
                                  "\"10%\" or a number of points >= 0, not -2"),
    ({"per_day": 1, "grace": 15}, "late.grace must be a duration such as \"15 minutes\""),
    ({"per_day": 1, "grace": "15"}, "late.grace must be a duration"),
    ({"per_day": 1, "grace": "2 weeks"}, "late.grace must be a duration"),
    ({"per_day": 1, "grace": "-1 h"}, "late.grace must be a duration"),
    ({"cutoff": "soon"}, "late.cutoff must be a duration"),
    ({"per_day": 1, "extensions": 3}, "late.extensions must be a CSV file's name or a table"),
    ({"per_day": 1, "extensions": {"ann": 3}}, "late.extensions: 'ann' must be more time"),
    ({"per_day": 1, "extensions": {"ann": "later"}}, "late.extensions: 'ann' must be a "
                                                     "duration"),
    ({"per_day": 1, "extensions": {"ann": "1 day", "ANN": "2 days"}},
     "'ANN' has an extension already"),
])
def test_a_malformed_policy_says_which_field(tmp_path: Path, data: Any, words: str) -> None:
    with pytest.raises(ValueError) as err:
        late.parse(data, tmp_path / "assignment.toml")
    message = str(err.value)
    assert message.startswith(words) or words in message
    assert message.count(". ") == 0 and "\n" not in message  # one sentence


def test_the_assignment_names_its_file_and_needs_a_due_date(tmp_path: Path) -> None:
    path = tmp_path / "assignment.toml"
    path.write_text(f'title = "W"\nexercises = ["{SLUG}"]\n[late]\nper_day = "lots"\n')
    with pytest.raises(assignment.AssignmentError, match=r"assignment.toml: late.per_day must"):
        assignment.load(path)
    path.write_text(f'title = "W"\nexercises = ["{SLUG}"]\n[late]\nper_day = "10%"\n')
    with pytest.raises(assignment.AssignmentError, match=r"\[late\] needs a 'due' date"):
        assignment.load(path)
    path.write_text(f'title = "W"\nexercises = ["{SLUG}"]\ndue = 2026-12-15T23:59:00Z\n'
                    '[late]\nper_day = "10%"\n[late.extensions]\n"Jones, Bob" = "2 days"\n'
                    'ann = 2026-12-20\n')
    task = assignment.load(path)
    assert task.late is not None and task.due == DUE
    bob, ann = task.late.extensions
    assert (bob.student, bob.extra, bob.due_for(DUE)) == ("Jones, Bob", 2 * D, DUE + 2 * D)
    assert ann.due_for(DUE) == dt.datetime(2026, 12, 20, 23, 59).astimezone()


# --- the extensions file ----------------------------------------------------------------------


def test_an_extensions_file_is_read_beside_the_assignment(tmp_path: Path) -> None:
    (tmp_path / "deadlines").mkdir()
    (tmp_path / "deadlines" / "ext.csv").write_text(
        "\ufeffStudent,Due,Extra,Comment\n"
        "# a comment line\n"
        '"Jones, Bob",,36 hours,"illness, see the note"\n'
        "\n"
        "ann,2026-12-17T12:00:00+01:00,,\n"
        "5101,2026-12-18,,\n", encoding="utf-8")
    p = late.parse({"per_day": "10%", "extensions": "deadlines/ext.csv"},
                   tmp_path / "assignment.toml")
    assert p.extensions_file == tmp_path / "deadlines" / "ext.csv"
    assert [(e.student, e.where) for e in late.read_extensions(p)] == [
        ("Jones, Bob", "deadlines/ext.csv line 3"), ("ann", "deadlines/ext.csv line 5"),
        ("5101", "deadlines/ext.csv line 6")]
    bob, ann, pid = late.read_extensions(p)
    assert bob.due_for(DUE) == DUE + 36 * H
    assert ann.due_for(DUE) == dt.datetime(2026, 12, 17, 11, tzinfo=UTC)
    assert pid.due_for(DUE) == dt.datetime(2026, 12, 18, 23, 59).astimezone()


@pytest.mark.parametrize("text, words", [
    ("name,extra\nann,1 day\n", "ext.csv line 1: the header must name student and due or "
                                "extra (and may name comment), not name, extra"),
    ("student\nann\n", "ext.csv line 1: the header must name student"),
    ("student,extra\nann,1 day,x\n", "ext.csv line 2: 3 cells for 2 columns"),
    ("student,due,extra\n,,1 day\n", "ext.csv line 2: no student"),
    ("student,due,extra\nann,2026-12-17,1 day\n", "ext.csv line 2: give either due or extra "
                                                  "for 'ann', not both"),
    ("student,due,extra\nann,,\n", "not neither"),
    ("student,due\nann,next friday\n", "ext.csv line 2: due must be a date-time such as "
                                       "2026-12-17T23:59:00Z, not 'next friday'"),
    ("student,extra\nann,a while\n", "ext.csv line 2: extra must be a duration"),
    ("student,extra\nann,1 day\nAnn,2 days\n", "ext.csv line 3: 'Ann' has an extension "
                                               "already (ext.csv line 2)"),
])
def test_a_malformed_extensions_file_names_the_line(tmp_path: Path, text: str,
                                                    words: str) -> None:
    (tmp_path / "ext.csv").write_text(text)
    p = late.parse({"per_day": 1, "extensions": "ext.csv"}, tmp_path / "assignment.toml")
    with pytest.raises(late.ExtensionError) as err:
        late.check_extensions(p, KEYS)
    assert str(err.value).startswith("late.extensions: ") and words in str(err.value)


@pytest.mark.parametrize("content, words", [
    (None, "late.extensions: ext.csv cannot be read (No such file or directory)"),
    (b"\xff\xfe\x00bad", "late.extensions: ext.csv cannot be read (not UTF-8 text)")])
def test_the_file_is_read_when_extensions_are_used(tmp_path: Path, content: bytes | None,
                                                   words: str) -> None:
    """A copy of the assignment without its extensions file (a student release, a Gradescope
    bundle) still loads; using the extensions says the file is missing or unreadable."""
    if content is not None:
        (tmp_path / "ext.csv").write_bytes(content)
    path = tmp_path / "assignment.toml"
    path.write_text(f'title = "W"\nexercises = ["{SLUG}"]\ndue = 2026-12-15T23:59:00Z\n'
                    '[late]\nper_day = "10%"\nextensions = "ext.csv"\n')
    p = assignment.load(path).late
    for use in (lambda: late.check_extensions(p, KEYS),
                lambda: late.apply([], p, DUE, {}, set(), KEYS)):
        with pytest.raises(late.ExtensionError) as err:
            use()
        assert str(err.value) == words


# --- apply ------------------------------------------------------------------------------------


def result(sid: str, score: float, max_score: float = 10.0) -> SubmissionResult:
    tests = [TestResult(name="t", status="passed" if score else "failed", score=score,
                        max_score=max_score)]
    return SubmissionResult(submission=sid, device="cpu", exercises=[
        ExerciseResult(exercise=SLUG, title="T", status="passed", tests=tests)])


KEYS = student_keys([("ann_1", ["1", "Ann Lee"]), ("bob_2", ["2", "Bob Jones"]),
                     ("cy_3", ["3", "Cy Lee"]), ("dee_4", ["4", "Lee"]), ("eve_5", ["5", "Lee"])])


def test_apply_marks_each_late_result_on_the_total_left() -> None:
    p = policy(grace="1 hour", per_day="10%", floor="50%",
               extensions={"Bob Jones": "2 days", "Zed": "1 day"})
    ann, bob, cy, dee, eve = (result(s, 8) for s in ("ann_1", "bob_2", "cy_3", "dee_4", "eve_5"))
    dee.add_mark(MarkKind.ADJUST, -2, "regrade")  # 6 left: the penalty starts from there
    times = {"ann_1": DUE + 30 * M,            # inside the grace
             "bob_2": DUE + D + 3 * H,         # on time with the extension
             "cy_3": DUE + 2 * D + M,          # 3 days
             "dee_4": DUE + 2 * D}             # 2 days, but only 1 point above the floor
    notices = late.apply([ann, bob, cy, dee, eve], p, DUE, times, {"eve_5", "ann_1"}, KEYS)
    assert notices == [
        "The extension of 'Zed' ([late.extensions]) names no submission of this class: it is "
        "not used.",
        "eve_5 is marked late by its LMS, but when it was submitted is unknown: no late "
        "penalty computed."]
    assert not ann.marks and not bob.marks and not eve.marks
    (mark,) = cy.marks_of(MarkKind.LATE)
    assert (mark.points, cy.final_score) == (-3, 5)
    assert marks.describe(mark) == ("-3 late: 3 days late (2 d 1 min after the due date, past "
                                    "a 1 h grace): 10% of 10 points a day")
    (mark,) = dee.marks_of(MarkKind.LATE)
    assert (mark.points, dee.final_score) == (-1, 5)
    assert mark.label.endswith("kept at the floor of 5 points (50%)")
    # bob, late against the extended due date: said so
    bob_late = result("bob_2", 8)
    late.apply([bob_late], p, DUE, {"bob_2": DUE + 2 * D + 2 * H}, set(), KEYS)
    assert bob_late.marks[0].label.startswith(
        "1 day late (2 h after the extended due date, past a 1 h grace)")


def test_past_the_cut_off_nothing_is_left_and_one_mark_per_result() -> None:
    p = policy(per_day=1, cutoff="3 days")
    r = result("ann_1", 7)
    late.apply([r], p, DUE, {"ann_1": DUE + 4 * D}, {"ann_1"}, KEYS)
    (mark,) = r.marks
    assert (mark.kind, mark.points, r.final_score, mark.kept) == (MarkKind.LATE, -7, 0, False)
    assert mark.label == "not accepted, more than 3 d late (4 d after the due date)"


def test_an_ambiguous_extension_stops_before_grading() -> None:
    p = policy(per_day=1, extensions={"lee": "1 day"})
    with pytest.raises(late.ExtensionError, match=r"late.extensions: \[late.extensions\]: "
                       r"'lee' names 2 submissions \(dee_4, eve_5\): use one of their ids"):
        late.check_extensions(p, KEYS)
    with pytest.raises(late.ExtensionError):
        late.apply([result("dee_4", 5)], p, DUE, {}, set(), KEYS)
    twice = policy(per_day=1, extensions={"ann lee": "1 day", "1": "2 days"})
    with pytest.raises(late.ExtensionError, match="'1' is ann_1, given an extension already"):
        late.check_extensions(twice, KEYS)
    late.check_extensions(policy(per_day=1, extensions={"nobody": "1 day"}), KEYS)  # a notice


# --- submission times from the downloads ------------------------------------------------------


def _zip(path: Path, members: list[tuple[str, tuple[int, ...], bytes]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, when, extra in members:
            info = zipfile.ZipInfo(name, date_time=when)
            info.extra = extra
            zf.writestr(info, "a = 1\n")
    return path


def _ut(when: dt.datetime) -> bytes:
    """An extended timestamp extra field ("UT") holding ``when``."""
    return struct.pack("<HHBi", 0x5455, 5, 1, int(when.timestamp()))


def test_a_moodle_zip_gives_each_participant_their_latest_file(tmp_path: Path) -> None:
    path = _zip(tmp_path / "C1-Week 3-42.zip", [
        (f"Bob Jones_5102_assignsubmission_file/{SLUG}.py", (2026, 12, 14, 9, 0, 0), b""),
        ("Bob Jones_5102_assignsubmission_file/notes.txt", (2026, 12, 16, 8, 30, 0), b""),
        ("Bob Jones_5102_assignsubmission_onlinetext/onlinetext.html", (2027, 1, 1, 0, 0, 0),
         b""),  # another plugin's member: the download's time, not counted
        (f"Alice Smith_5101_assignsubmission_file/{SLUG}.py", (2026, 12, 15, 20, 0, 0),
         _ut(DUE + 5 * M)),
        (f"Cy Lee_5103_assignsubmission_file/{SLUG}.py", (1980, 1, 1, 0, 0, 0), b""),
    ])
    found = discover([path], [SLUG], tmp_path / "work")
    times = {s.id: s.submitted_at for s in found.submissions}
    assert times == {"Alice_Smith_5101": DUE + 5 * M,  # the extended timestamp, in UTC
                     "Bob_Jones_5102": dt.datetime(2026, 12, 16, 8, 30).astimezone(),
                     "Cy_Lee_5103": None}              # no time: unknown


@pytest.mark.parametrize("stamps, trusted", [
    # a download stamped by the zip writer: every member within seconds
    ([("1", (2026, 12, 20, 10, 0, 0)), ("2", (2026, 12, 20, 10, 0, 2)),
      ("3", (2026, 12, 20, 10, 0, 3))], False),
    # a slow download: never going back, across 3 participants
    ([("1", (2026, 12, 20, 10, 0, 0)), ("2", (2026, 12, 20, 10, 7, 0)),
      ("3", (2026, 12, 20, 10, 15, 0))], False),
    # files' own times
    ([("1", (2026, 12, 14, 10, 0, 0)), ("2", (2026, 12, 16, 9, 0, 0)),
      ("3", (2026, 12, 15, 22, 0, 0))], True),
    ([("1", (2026, 12, 14, 10, 0, 0)), ("2", (2026, 12, 16, 9, 0, 0))], True),
    ([("1", (2026, 12, 14, 10, 0, 0))], False),
    ([], False),
])
def test_times_stamped_at_the_download_are_unknown(stamps: list, trusted: bool) -> None:
    times = submission_times([(pid, dt.datetime(*when, tzinfo=UTC)) for pid, when in stamps])
    assert bool(times) is trusted


def test_a_download_time_zip_gives_no_time(tmp_path: Path) -> None:
    now = (2026, 12, 20, 10, 0, 0)
    path = _zip(tmp_path / "m.zip", [
        (f"Alice Smith_5101_assignsubmission_file/{SLUG}.py", now, b""),
        (f"Bob Jones_5102_assignsubmission_file/{SLUG}.py", now, b"")])
    found = discover([path], [SLUG], tmp_path / "work")
    assert [s.submitted_at for s in found.submissions] == [None, None]


def test_a_member_time_that_does_not_read_is_unknown() -> None:
    info = zipfile.ZipInfo("x", date_time=(2026, 12, 15, 10, 0, 0))
    assert member_time(info) == dt.datetime(2026, 12, 15, 10).astimezone()
    info.extra = b"\x55\x54\x05\x00\x00"  # a truncated extended timestamp: the DOS time
    assert member_time(info) == dt.datetime(2026, 12, 15, 10).astimezone()
    info.date_time = (2026, 13, 40, 10, 0, 0)
    assert member_time(info) is None


def test_canvas_and_folders_give_no_time(tmp_path: Path) -> None:
    """Canvas stamps every member with the time the zip was made: its times are never used,
    only its LATE flag."""
    path = _zip(tmp_path / "submissions.zip", [
        (f"leeann_LATE_101_900_{SLUG}.py", (2026, 12, 14, 10, 0, 0), b""),
        (f"jonesbob_102_901_{SLUG}.py", (2026, 12, 18, 10, 0, 0), b""),
        (f"smithcy_103_902_{SLUG}.py", (2026, 12, 16, 10, 0, 0), b"")])
    found = discover([path], [SLUG], tmp_path / "w1")
    assert found.layout == "canvas"
    assert [(s.id, s.late, s.submitted_at) for s in found.submissions] == [
        ("jonesbob_102", False, None), ("leeann_101", True, None), ("smithcy_103", False, None)]
    (tmp_path / "class" / "ann").mkdir(parents=True)
    (tmp_path / "class" / "ann" / f"{SLUG}.py").write_text("a = 1\n")
    found = discover([tmp_path / "class"], [SLUG], tmp_path / "w2")
    assert [s.submitted_at for s in found.submissions] == [None]
