"""One text rule for a learner's file (``harness/source_text.py``): UTF-8, with or without a
BOM, any line ends; NUL bytes, invalid UTF-8 and a coding declaration naming anything else are
refused with one sentence, the same one by ``grade bulk``, by the worker (``grade
--submission``) and by the source rules."""

from __future__ import annotations

import codecs
import io
import json
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from cli_driver import invoke

from grader import catalog
from grader.judge import rules
from grader.sandbox.harness import worker
from grader.sandbox.harness.source_text import NotSourceText, source_text, text_problem

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
REF = catalog.get(SLUG).solution.read_text()
LATIN1 = ("# -*- coding: latin-1 -*-\n# café\n" + REF).encode("latin-1")
LATIN1_SAID = "declares the encoding latin-1 (line 1), but only UTF-8 source files are accepted"
BOM_CRLF = b"\xef\xbb\xbf" + ("# café\n" + REF).replace("\n", "\r\n").encode()

REFUSED = [  # (content, what completes "<file> ...")
    (b"x = 1\n\x00", "is binary (it contains NUL bytes)"),
    (b"\xef\xbb\xbfx = 1\x00\n", "is binary (it contains NUL bytes)"),
    (LATIN1, LATIN1_SAID),
    (b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nx = 1\n",
     "declares the encoding latin-1 (line 2), but only UTF-8 source files are accepted"),
    (b"x = 1\r# coding=utf-7\rx = '+AGk-'\r",  # old Mac line ends: Python reads line 2 too
     "declares the encoding utf-7 (line 2), but only UTF-8 source files are accepted"),
    (b"\xef\xbb\xbf# coding: cp1252\nx = 1\n",
     "declares the encoding cp1252 (line 1), but only UTF-8 source files are accepted"),
    (b"# coding: no-such-codec\nx = 1\n",
     "declares the encoding no-such-codec (line 1), but only UTF-8 source files are "
     "accepted"),
    (b"# coding: " + b"x" * 100 + b"\n",
     f"declares the encoding {'x' * 40}... (line 1), but only UTF-8 source files are "
     "accepted"),
    ("café = 1\n".encode("latin-1"), "is not UTF-8 text (byte 0xe9 at offset 3)"),
    (b"\xef\xbb\xbfx = '\xff'\n", "is not UTF-8 text (byte 0xff at offset 8)"),
]
ACCEPTED = [  # (content, its text)
    (b"x = 1\n", "x = 1\n"),
    (BOM_CRLF, "# café\r\n" + REF.replace("\n", "\r\n")),
    (b"# -*- coding: utf-8 -*-\nx = 'caf\xc3\xa9'\n", "# -*- coding: utf-8 -*-\nx = 'café'\n"),
    (b"#!/usr/bin/env python\n# coding=UTF8\n", "#!/usr/bin/env python\n# coding=UTF8\n"),
    (b"\xef\xbb\xbf# coding: utf_8\n", "# coding: utf_8\n"),
    (b"# coding: utf-8-sig\n", "# coding: utf-8-sig\n"),
    (b"x = 1\ny = 2\n# coding: latin-1\n", "x = 1\ny = 2\n# coding: latin-1\n"),  # line 3
    (b"", ""),
]


@pytest.mark.parametrize("content, said", REFUSED)
def test_what_is_refused_is_said_in_one_sentence(content: bytes, said: str) -> None:
    with pytest.raises(NotSourceText) as caught:
        source_text(content)
    assert str(caught.value) == said and text_problem(content) == said
    assert worker.text_problem(content) == said  # the worker's name for the same rule


@pytest.mark.parametrize("content, text", ACCEPTED)
def test_what_is_accepted_is_what_python_reads_as_utf8(content: bytes, text: str) -> None:
    assert source_text(content) == text and text_problem(content) is None
    encoding, _ = tokenize.detect_encoding(io.BytesIO(content).readline)
    assert codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    compile(content, "f.py", "exec")  # no SyntaxError: Python's own decoding agrees


def test_source_rules_read_by_the_same_rule(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(LATIN1)
    (tmp_path / "b.py").write_bytes(BOM_CRLF)
    assert rules.read_source(tmp_path / "a.py").error == f"a.py {LATIN1_SAID}"
    assert rules.read_source(tmp_path / "b.py").text == source_text(BOM_CRLF)


def _grade_submission(folder: Path, out: Path) -> dict:
    """``grade --submission folder`` through the CLI: the exercise's results.json entry."""
    invoke("--submission", str(folder), SLUG, "--report-dir", str(out), "-q")
    (exercise,) = json.loads((out / "results.json").read_text())["exercises"]
    return exercise


def _grade_bulk(root: Path, out: Path) -> dict:
    """``grade bulk root`` through the CLI: its results.json files and rejections by id."""
    done = subprocess.run([GRADE, "bulk", str(root), "--out", str(out), "--exercises", SLUG,
                           "-q"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    graded = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}
    grades = (out / "grades.csv").read_text()
    return {"graded": graded, "grades.csv": grades}


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("class")
    for who, content in (("latin", LATIN1), ("bom", BOM_CRLF)):
        (root / "in" / who).mkdir(parents=True)
        (root / "in" / who / f"{SLUG}.py").write_bytes(content)
    return _grade_bulk(root / "in", root / "out")


def test_a_latin1_file_is_refused_alike_by_bulk_and_by_the_worker(bulk, project,
                                                                   tmp_path: Path) -> None:
    said = f"{SLUG}.py {LATIN1_SAID}"
    (tmp_path / "latin").mkdir()
    (tmp_path / "latin" / f"{SLUG}.py").write_bytes(LATIN1)
    exercise = _grade_submission(tmp_path / "latin", tmp_path / "out")
    assert exercise["status"] == "error" and exercise["message"] == said
    assert "latin" not in bulk["graded"]
    assert f'latin,,,,,"not graded: no usable exercise file: {said}"' in bulk["grades.csv"]


def test_a_utf8_file_with_a_bom_and_crlf_is_accepted_by_both(bulk, project,
                                                             tmp_path: Path) -> None:
    (tmp_path / "bom").mkdir()
    (tmp_path / "bom" / f"{SLUG}.py").write_bytes(BOM_CRLF)
    exercise = _grade_submission(tmp_path / "bom", tmp_path / "out")
    assert exercise["status"] == "passed" and exercise["score"] == exercise["max_score"]
    (graded,) = bulk["graded"]["bom"]["exercises"]
    assert graded["status"] == "passed" and graded["score"] == graded["max_score"]
