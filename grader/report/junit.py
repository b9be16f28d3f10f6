"""JUnit XML of a class's results, as the common consumers accept it (the rules of Jenkins'
``junit-10.xsd``).

failed -> ``<failure type="failed">``; error, timeout, crashed -> ``<error type=STATUS>``; each
test of a not-submitted exercise -> ``<failure type="not_submitted" message="not submitted">``
(so a suite counts the tests ``gradescope.json`` lists); a rejected submission -> a suite with
one testcase ``not graded`` holding an ``<error type="rejected">``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from grader import numbers
from grader.files import atomic_write_bytes
from grader.results import ERROR_STATUSES, SubmissionResult

from .plain import entry_get, natural_key, test_text

# Characters XML 1.0 cannot carry (control characters, lone surrogates, U+FFFE/U+FFFF).
_XML_BAD = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: Any) -> str:
    """Text XML 1.0 can carry: invalid characters become U+FFFD."""
    return _XML_BAD.sub("\ufffd", str(text))


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _set_counts(elem: ET.Element, counts: dict[str, float]) -> None:
    """The counts common JUnit consumers accept (Jenkins' junit-10.xsd): on a suite and on
    ``<testsuites>``, ``tests``, ``failures``, ``errors`` and ``time``."""
    for key in ("tests", "failures", "errors"):
        elem.set(key, str(int(counts[key])))
    elem.set("time", f"{counts['time']:.3f}")


def write_junit(path: Path, results: list[SubmissionResult], rejected: list) -> None:
    """Write JUnit XML: one ``<testsuite>`` per submission, one ``<testcase>`` per test.

    ``classname`` is ``SUBMISSION.EXERCISE``, ``name`` the test, ``time`` its duration. Counts
    (tests, failures, errors, time) are set on every suite and on ``<testsuites>``. A
    not-submitted exercise's tests are failures "not submitted" (one testcase ``not
    submitted`` when it lists no test). Suites are ordered by submission id; a rejected
    submission is a suite whose single testcase ``not graded`` is an error. The ``score``
    property is the exported (adjusted) total, ``computed_score`` the tests' when adjusted.
    """
    root = ET.Element("testsuites", name="vit-grader")
    total = dict.fromkeys(("tests", "failures", "errors", "time"), 0.0)
    suites: list[tuple[tuple, ET.Element]] = []
    for r in results:
        sid = str(r.submission)
        suite = ET.Element("testsuite", name=_x(sid))
        counts = dict.fromkeys(total, 0.0)
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="score", value=numbers.exact(r.final_score))
        ET.SubElement(props, "property", name="max_score", value=numbers.exact(r.max_score))
        if r.marks:
            ET.SubElement(props, "property", name="computed_score",
                          value=numbers.exact(r.score))
        for e in r.exercises:
            if e.status == "not_submitted":
                for name in [t.name for t in e.tests] or ["not submitted"]:
                    case = ET.SubElement(suite, "testcase", classname=_x(f"{sid}.{e.exercise}"),
                                         name=_x(name), time="0.000")
                    fail = ET.SubElement(case, "failure", type="not_submitted",
                                         message="not submitted")
                    fail.text = _x(f"{e.exercise}.py was not submitted")
                    counts["tests"] += 1
                    counts["failures"] += 1
                continue
            for t in e.tests:
                duration = t.duration_s or 0.0  # (not reported at the graded level: 0)
                case = ET.SubElement(suite, "testcase", classname=_x(f"{sid}.{e.exercise}"),
                                     name=_x(t.name), time=f"{duration:.3f}")
                counts["tests"] += 1
                counts["time"] += duration
                status = t.status
                if status == "passed":
                    pass
                elif status in ERROR_STATUSES:
                    err = ET.SubElement(case, "error", type=status,
                                        message=_x(_one_line(t.reason or status)))
                    err.text = _x(test_text(t))
                    counts["errors"] += 1
                else:
                    fail = ET.SubElement(case, "failure", type=str(status or "failed"),
                                         message=_x(_one_line(t.reason or "failed")))
                    fail.text = _x(test_text(t))
                    counts["failures"] += 1
        _set_counts(suite, counts)
        suites.append((natural_key(sid), suite))
        for key in total:
            total[key] += counts[key]
    for entry in rejected:
        sid = str(entry_get(entry, "id"))
        reason = str(entry_get(entry, "reason") or "unknown reason")
        suite = ET.Element("testsuite", name=_x(sid))
        case = ET.SubElement(suite, "testcase", classname=_x(sid), name="not graded", time="0.000")
        err = ET.SubElement(case, "error", type="rejected", message=_x(_one_line(reason)))
        source = entry_get(entry, "source", "")
        err.text = _x(f"not graded: {reason}" + (f"\nsource: {source}" if source else ""))
        counts = {"tests": 1, "failures": 0, "errors": 1, "time": 0.0}
        _set_counts(suite, counts)
        suites.append((natural_key(sid), suite))
        for key in total:
            total[key] += counts[key]
    for _, suite in sorted(suites, key=lambda kv: kv[0]):
        root.append(suite)
    _set_counts(root, total)
    ET.indent(root)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    atomic_write_bytes(path, data + b"\n")
