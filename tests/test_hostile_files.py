"""One submission never costs the class: reading a notebook, a zip member or a source file,
or a source rule's walk over it, fails for that student only (whatever it raises:
RecursionError, MemoryError, ...), with one line, and everyone else is graded.

The class test grades, through ``grade bulk``, a Canvas zip holding a notebook whose JSON nests
100,000 deep (also in a nested zip), a notebook with a cell of 200,000 minus signs, one with a
cell importing a 100,000-part dotted name, a source of 900 chained conditionals that breaks a
source rule, and a forged notebook header; the generated tests throw notebooks and sources at
the readers ``grade bulk`` and a grading process use."""

from __future__ import annotations

import csv
import importlib
import io
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import reference_source
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.bulk import layouts
from grader.judge import rules
from grader.notebook import bounded, lines
from grader.notebook.extract import NotebookError, from_notebook
from grader.sandbox import faults
from grader.sandbox.harness.source_text import NotSourceText, parse, source_text
from grader.similarity import compare
from grader.suite import GradeFailure, rules_in

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "attention_rollout"  # its rule: imports only numpy and math
CONV = "conv_via_attention"  # its rule: no convolution routine (numpy.fft, ...)
UNARY = "X = " + "-" * 200_000 + "1\n"  # Python's parser: MemoryError
DOTTED = "import " + ".".join(["numpy"] * 100_000) + "\n"  # Python's parser: over 10 GB


def rule_of(slug: str) -> rules.Rule:
    return rules_in(vars(importlib.import_module(f"grader.suites.test_{slug}")))[0]


def chained(n: int) -> str:
    """One line of ``n`` chained conditionals (``ast.NodeVisitor`` recurses once per level)."""
    return "X = " + " if 0 else ".join(["1"] * (n + 1)) + "\n"


def deep_notebook(depth: int) -> bytes:
    return ('{"cells": ' + "[" * depth + "]" * depth +
            ', "metadata": {}, "nbformat": 4, "nbformat_minor": 5}').encode()


def notebook(*cells: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nbformat.writes(nb).encode()


def forged_header(code: str) -> str:
    """``code`` under a copied notebook header whose line map claims a run of 10**15 lines."""
    return ('# vit-grader notebook: "x.ipynb" (its definitions only; the rest is not run)\n'
            '# vit-grader line map: [[-1000000000000000,"cell 1",1]]\n# nothing was left out\n'
            + code)


def _nested_zip(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"work/{name}", data)
    return buf.getvalue()


# --- the class, through grade bulk -------------------------------------------------------------


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Path]:
    base = tmp_path_factory.mktemp("hostile")
    right = reference_source(SLUG)
    members = {
        f"ann_101_5001_{SLUG}.py": right.encode(),
        f"deep_102_5002_{SLUG}.ipynb": deep_notebook(100_000),
        f"minus_103_5003_{SLUG}.ipynb": notebook(right, UNARY),
        f"cond_104_5004_{SLUG}.py": (right + "import json\n" + chained(900)).encode(),
        f"forged_105_5005_{SLUG}.py": forged_header(right).encode(),
        "nested_106_5006_work.zip": _nested_zip(f"{SLUG}.ipynb", deep_notebook(100_000)),
        f"zoe_107_5007_{SLUG}.ipynb": notebook(right),
        f"dots_108_5008_{SLUG}.ipynb": notebook(right, DOTTED),
    }
    klass = base / "class.zip"
    with zipfile.ZipFile(klass, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    done = subprocess.run([GRADE, "bulk", str(klass), "--out", str(base / "out"), "--workers",
                           "1", "--exercises", SLUG, "--feedback", "full"], cwd=base,
                          capture_output=True, text=True, timeout=600)
    return done, base / "out"


def _grades(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv", newline="") as fh:
        return {row["id"]: row for row in csv.DictReader(fh)}


def test_the_class_is_graded_whatever_one_file_holds(graded_class):
    done, out = graded_class
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    grades = _grades(out)
    for student in ("ann_101", "cond_104", "forged_105", "zoe_107"):
        assert (grades[student]["status"], grades[student]["total"]) == ("graded", "9"), student


@pytest.mark.parametrize(("student", "reason"), [
    ("deep_102", f"{SLUG}.ipynb (submission 5002) is not a readable notebook: its JSON nests "
                 "deeper than 100 levels"),
    ("minus_103", f"{SLUG}.ipynb (submission 5003) has a cell 2 that does not parse: it is "
                  "nested too deeply for Python's parser (MemoryError)"),
    ("nested_106", "is not a readable notebook: its JSON nests deeper than 100 levels"),
    ("dots_108", f"{SLUG}.ipynb (submission 5008) has a cell 2 that does not parse: it imports "
                 "a dotted name too long for Python's parser"),
])
def test_each_bad_file_is_its_students_one_line(graded_class, student, reason):
    _, out = graded_class
    status = _grades(out)[student]["status"]
    assert status.startswith("not graded: ") and "\n" not in status
    assert reason in status


def test_900_chained_conditionals_are_read_and_the_rule_checked(graded_class):
    _, out = graded_class
    result = json.loads((out / "cond_104" / "results.json").read_text())
    rule = next(t for t in result["exercises"][0]["tests"] if t["name"].startswith("rule_"))
    assert rule["status"] == "failed" and rule["kind"] == "rule"
    assert "Your file breaks the rule: line " in rule["message"]
    assert rule["message"].endswith("imports json.")


# --- the readers, one by one -------------------------------------------------------------------


def test_a_rule_reads_a_deep_expression_without_recursing():
    source = rules.LearnerSource(f"{CONV}.py", reference_source(CONV) + chained(900) +
                                 "Y = np" + ".fft" * 1200 + "\n")
    with pytest.raises(GradeFailure, match=r"uses numpy\.fft\.fft\.fft") as failed:
        rules.enforce(source, rule_of(CONV))
    assert len(str(failed.value)) < 1000  # a 1,200-part name is shown by its beginning


def test_a_file_pythons_parser_cannot_hold_is_the_rules_own_error():
    source = rules.LearnerSource(f"{SLUG}.py", reference_source(SLUG) + UNARY)
    with pytest.raises(faults.ImportFailed, match=f"{SLUG}.py is nested too deeply for "
                                                  r"Python's parser \(MemoryError\)"):
        rules.enforce(source, rule_of(SLUG))


def test_a_dotted_import_is_measured_before_pythons_parser_builds_it():
    source = rules.LearnerSource(f"{SLUG}.py", reference_source(SLUG) + DOTTED)
    with pytest.raises(faults.ImportFailed, match=f"{SLUG}.py imports a dotted name too long "
                                                  "for Python's parser"):
        rules.enforce(source, rule_of(SLUG))


def test_json_nesting_is_bounded_but_brackets_in_strings_and_real_outputs_are_read():
    nb = nbformat.v4.new_notebook()
    deep_data: object = 1
    for _ in range(60):
        deep_data = {"a": [deep_data]}  # 120 levels of the output's own data
    cell = nbformat.v4.new_code_cell("S = '" + "[{" * 5000 + "'\n")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "1"},
                                           execution_count=1)]
    nb.cells = [cell]
    made = from_notebook(nbformat.writes(nb).encode(), f"{SLUG}.ipynb")
    assert "S = '[{[{" in made.text
    cell.outputs[0]["data"]["application/json"] = deep_data
    with pytest.raises(NotebookError, match="its JSON nests deeper than 100 levels"):
        from_notebook(nbformat.writes(nb).encode(), f"{SLUG}.ipynb")


def test_a_string_that_never_closes_is_measured_once():
    # read again from each of its quotes, this 2 MB notebook would take hours to measure
    unclosed = ('{"cells": [], "x": "' + '\\"' * 1_000_000).encode()
    with pytest.raises(NotebookError, match="it is not JSON"):
        from_notebook(unclosed, f"{SLUG}.ipynb")


def test_a_forged_line_map_is_no_line_map():
    assert lines.parse(forged_header("X = 1\n")) is None
    assert lines.where(forged_header("X = 1\n"), 4) == "line 4"


def test_a_message_naming_a_line_past_any_file_is_left_as_it_is():
    huge = "9" * 5000  # more digits than int() reads
    message = f"{SLUG}.py, line {huge}: {SLUG}.py has a SyntaxError at line {huge}"
    assert lines.relabel_with(message, SLUG, f"{SLUG}.ipynb", {1: ("cell 1", 1)}) == \
        message.replace(f"{SLUG}.py", f"{SLUG}.ipynb")


# --- generated notebooks and sources -----------------------------------------------------------

_OPS = ["-", "~", "not ", "+", "lambda: ", "await ", "*"]
_NESTS = [("(", ")"), ("[", "]"), ("{", "}"), ("f(", ")"), ("x[", "]")]


@st.composite
def hostile_code(draw) -> str:
    """A line of Python, valid or not, that nests or repeats up to parser limits and past."""
    n = draw(st.sampled_from([1, 50, 199, 201, 900, 3000, 5000, 100_000, 200_000]))
    kind = draw(st.sampled_from(["unary", "nest", "chain", "binary", "attr", "call", "indent",
                                 "text", "import"]))
    if kind == "unary":
        return "X = " + draw(st.sampled_from(_OPS)) * n + "1"
    if kind == "nest":
        left, right = draw(st.sampled_from(_NESTS))
        return "X = " + left * n + "1" + right * draw(st.sampled_from([n, 0, n - 1]))
    if kind == "chain":
        return chained(n).rstrip()
    if kind == "binary":
        return "X = 1" + draw(st.sampled_from(["+1", "**2", " or 1", " < 1", ",1"])) * n
    if kind == "attr":
        return "X = np" + draw(st.sampled_from([".fft", "().a", "[0]", ".a()"])) * n
    if kind == "call":
        return "X = " + 'getattr(' * min(n, 300) + "np" + ', "fft")' * min(n, 300)
    if kind == "indent":
        depth = min(n, 120)
        return "".join(" " * i + "if 1:\n" for i in range(depth)) + " " * depth + "pass"
    if kind == "import":
        return "import " + ".".join(["numpy"] * n)
    return draw(st.text(max_size=200))


@st.composite
def python_file(draw) -> bytes:
    parts = draw(st.lists(st.one_of(hostile_code(), st.just(reference_source(SLUG))),
                          min_size=1, max_size=3))
    text = "\n".join(parts) + "\n"
    if draw(st.booleans()):
        text = forged_header(text) if draw(st.booleans()) else (
            "# vit-grader notebook: " + "[" * 50_000 + "\n# vit-grader line map: " +
            "[" * 50_000 + "\n# x\n" + text)
    return draw(st.sampled_from([text.encode(), b"\xef\xbb\xbf" + text.encode(),
                                 text.encode()[:-1] + b"\xff", text.encode() + b"\x00"]))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) |
                    st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@st.composite
def notebook_file(draw) -> bytes:
    kind = draw(st.sampled_from(["cells", "deep", "deep_meta", "fields", "bytes"]))
    if kind == "deep":
        return deep_notebook(draw(st.sampled_from([10, 99, 101, 1000, 100_000])))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    nb: dict[str, object] = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    if kind == "deep_meta":
        depth = draw(st.sampled_from([50, 101, 5000]))
        text = json.dumps(nb)
        return (text[:-1] + ', "x": ' + "{\"a\": " * depth + "1" + "}" * depth + "}").encode()
    cells = []
    for code in draw(st.lists(st.one_of(hostile_code(), st.just(reference_source(SLUG))),
                              min_size=1, max_size=3)):
        cell: dict[str, object] = {"cell_type": "code", "metadata": {}, "outputs": [],
                                   "execution_count": None, "id": "a1",
                                   "source": code.splitlines(keepends=True)}
        if kind == "fields":
            cell[draw(st.sampled_from(["source", "cell_type", "metadata", "outputs"]))] = \
                draw(JSON)
        cells.append(cell)
    nb["cells"] = cells if kind == "cells" or draw(st.booleans()) else draw(JSON)
    return json.dumps(nb).encode()


student = st.one_of(st.tuples(st.just(".py"), python_file()),
                    st.tuples(st.just(".ipynb"), notebook_file()))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example])
@given(st.lists(student, min_size=1, max_size=4), st.booleans())
def test_generated_notebooks_and_sources_never_stop_the_batch(files, zipped):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "class"
        root.mkdir()
        ids = [f"s{n}" for n in range(len(files))]
        for sid, (suffix, data) in zip(ids, files, strict=True):
            if zipped:
                with zipfile.ZipFile(root / f"{sid}.zip", "w") as zf:
                    zf.writestr(f"{SLUG}{suffix}", data)
            else:
                (root / sid).mkdir()
                (root / sid / f"{SLUG}{suffix}").write_bytes(data)
        found = layouts.discover([root], [SLUG], Path(tmp) / "work")
        assert sorted([s.id for s in found.submissions] + [r.id for r in found.rejected]) == ids
        for rejected in found.rejected:
            assert rejected.reason and "\n" not in rejected.reason
        rule = rule_of(SLUG)
        sources = {}
        for sub in found.submissions:
            source = rules.read_source(sub.files[SLUG])
            try:
                rules.enforce(source, rule)
            except (GradeFailure, faults.LearnerFault):
                pass  # a verdict: the rule's test failed, or the file is the learner's error
            if source.text is not None:
                sources[sub.id] = source.text
                lines.where(source.text, 5)
        assert isinstance(compare.find_pairs(sources), list)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.large_base_example])
@given(student)
def test_each_reader_raises_only_its_own_error(file):
    suffix, data = file
    try:
        bounded.loads(data.decode("utf-8", "replace"))
    except ValueError:
        pass  # TooDeep, or not JSON
    if suffix == ".ipynb":
        try:
            data = from_notebook(data, f"{SLUG}.ipynb").text.encode()
        except NotebookError as exc:
            assert str(exc) and "\n" not in str(exc)
            return
    try:
        text = source_text(data)
        parse(text)
    except (SyntaxError, NotSourceText):
        return
    lines.parse(text)
    for slug in (SLUG, CONV):
        rules.violations(text, rule_of(slug))

