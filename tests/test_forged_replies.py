"""A learner owns its whole worker process: it can replace the harness and answer with any bytes.

Each learner file here patches the public harness at import (``gradeharness.protocol``, the
package the worker runs as) so that every call is answered with one kind of forged reply: its
function returns a marker, and the patched ``encode_frame`` sends the forgery instead of the
marker's reply (also for the first call of a fresh worker, which imports the module). Whatever
it sends, the submission is graded: each test is the learner's failed test "returned data the
grader cannot read: ...", never a grader error, and never "not graded". The grading process
also enforces the output cap itself, and learner text reaches the terminal and the HTML report
inert (control characters shown escaped).
"""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner
from conftest import by_name

from grader.cli import main
from grader.inert import inert
from grader.sandbox import faults, reply
from grader.sandbox.harness import protocol

SLUG = "grid_local_mask"
UNREADABLE = "returned data the grader cannot read: "

FORGER = '''
import io, json, pickle, struct, sys
import numpy as np

_protocol = sys.modules["gradeharness.protocol"]
_real_encode = _protocol.encode_frame


def npy(array, **kw):
    buf = io.BytesIO()
    np.save(buf, array, **kw)
    return buf.getvalue()


def raw(text, *blobs):
    data = text.encode()
    return [struct.pack(">Q", len(data)), data, *blobs]


def frame(head, *blobs):
    head = {"output": "", "duration_s": 0.0, **head, "blobs": [len(b) for b in blobs]}
    return raw(json.dumps(head), *blobs)


def value(node, *blobs):
    return frame({"ok": True, "value": node}, *blobs)


def tensor(dtype, data=None, device="cpu"):
    data = np.zeros(4, np.uint8) if data is None else data
    return value({"$T": 0, "dtype": dtype, "device": device}, npy(data))


def fail(**fields):
    return frame({"ok": False, "kind": "exception", "where": "call", "type": "ValueError",
                  "mro": ["ValueError", "Exception", "BaseException", "object"],
                  "message": "forged", "traceback": [], **fields})


class _Marker:
    pass


_FORGE = _Marker()


def _encode(header, payload):
    if payload is _FORGE:
        return FORGED
    return _real_encode(header, payload)


_protocol.encode_frame = _encode


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    return _FORGE
'''

FORGERIES = {
    # the reply's own fields, with the wrong types or values
    "ok_is_text": 'frame({"ok": "yes", "value": None})',
    "ok_missing": 'raw(\'{"output": "", "blobs": []}\')',
    "duration_is_text": 'frame({"ok": True, "value": None, "duration_s": "slow"})',
    "duration_negative": 'frame({"ok": True, "value": None, "duration_s": -1})',
    "duration_nan": 'raw(\'{"ok": true, "duration_s": NaN, "value": null, "blobs": []}\')',
    "output_is_a_dict": 'frame({"ok": True, "value": None, "output": {"a": 1}})',
    "message_is_a_dict": 'fail(message={"a": 1})',
    "traceback_is_a_number": "fail(traceback=5)",
    "traceback_of_numbers": "fail(traceback=[1, 2])",
    "mro_is_text": 'fail(mro="x")',
    "type_is_a_number": "fail(type=7)",
    "unknown_kind": 'fail(kind="zzz")',
    "kind_is_a_list": 'fail(kind=["exception"])',
    "unknown_where": 'fail(where="moon")',
    "lineno_is_text": 'fail(where="import", type="SyntaxError", lineno="x")',
    # the frame itself
    "header_is_a_list": "raw('[1, 2]')",
    "header_is_not_json": "raw('{\"ok\": tru')",
    "blob_table_is_text": 'raw(\'{"ok": true, "value": null, "blobs": "x"}\')',
    # values: unknown tags, tags with the wrong contents
    "f_unknown_word": 'value({"$f": "zzz"})',
    "f_holds_a_list": 'value({"$f": [1]})',
    "unknown_tag_q": 'value({"$q": 1})',
    "c_holds_a_number": 'value({"$c": 5})',
    "c_one_part": 'value({"$c": [1]})',
    "c_of_text": 'value({"$c": ["a", "b"]})',
    "d_holds_a_number": 'value({"$d": 3})',
    "d_item_not_a_pair": 'value({"$d": [[1]]})',
    "d_list_key": 'value({"$d": [[[1], 2]]})',
    "d_tuple_key_holding_a_list": 'value({"$d": [[{"$t": [[1]]}, 2]]})',
    "t_holds_a_number": 'value({"$t": 5})',
    "h_holds_text": 'value({"$h": "x"})',
    "h_holds_a_float": 'value({"$h": 1.5})',
    "a_missing_blob": 'value({"$a": 3})',
    "a_holds_true": 'value({"$a": True}, npy(np.zeros(2)))',
    "two_tags": 'value({"$a": 0, "$s": 0}, npy(np.zeros(2)))',
    "tag_with_extra_key": 'value({"$f": "nan", "x": 1})',
    "empty_object": "value({})",
    "untagged_object": 'value({"x": 1})',
    "recipe_from_the_learner": 'value({"$r": "param_count", "p": {"$d": []}})',
    "integer_over_64_bits": "value(2 ** 70)",
    "float_overflowing_to_inf": 'raw(\'{"ok": true, "value": 1e999, "blobs": []}\')',
    "scalar_not_0d": 'value({"$s": 0}, npy(np.zeros(3)))',
    "npy_garbage": 'value({"$a": 0}, b"\\x93NUMPY garbage")',
    "npy_of_pickled_objects": 'value({"$a": 0}, npy(np.array([{"a": 1}]), allow_pickle=True))',
    # tensors whose dtype is not on the allow-list, or whose tag lies
    "tensor_float8_e4m3fn": 'tensor("torch.float8_e4m3fn")',
    "tensor_float8_e5m2": 'tensor("torch.float8_e5m2")',
    "tensor_qint8": 'tensor("torch.qint8", np.zeros(4, np.int8))',
    "tensor_quint8": 'tensor("torch.quint8")',
    "tensor_bits8": 'tensor("torch.bits8")',
    "tensor_uint1": 'tensor("torch.uint1")',
    "tensor_complex32": 'tensor("torch.complex32")',
    "tensor_dtype_not_a_dtype": 'tensor("torch.__class__")',
    "tensor_dtype_a_number": "tensor(5)",
    "tensor_values_not_its_dtype": 'tensor("torch.float32", np.zeros(4, np.int8))',
    "tensor_device_meta": 'tensor("torch.uint8", device="meta")',
    "tensor_device_a_number": 'tensor("torch.uint8", device=7)',
    "tensor_without_device": 'value({"$T": 0, "dtype": "torch.uint8"}, npy(np.zeros(2, np.uint8)))',
    # arrays whose dtype is not on the allow-list, or whose header lies
    "npy_structured": 'value({"$a": 0}, npy(np.zeros((2, 2), dtype=[("a", "<f8")])))',
    "npy_structured_scalar": 'value({"$s": 0}, npy(np.zeros((), dtype=[("a", "<f8")])))',
    "npy_strings": 'value({"$a": 0}, npy(np.array(["ab", "c"])))',
    "npy_datetime": 'value({"$a": 0}, npy(np.zeros(2, "M8[ns]")))',
    "npy_void": 'value({"$a": 0}, npy(np.zeros(2, "V8")))',
    "npy_longdouble": 'value({"$a": 0}, npy(np.zeros(2, np.longdouble)))',
    "npy_shape_over_its_data": 'value({"$a": 0}, npy(np.zeros(4)).replace(b"(4,), }" + b" " * 9, '
                               'b"(1000000000,), }"))',
    "npy_version_3": 'value({"$a": 0}, npy(np.zeros(2)).replace(b"\\x01\\x00", b"\\x03\\x00", 1))',
    # sizes: each refused before it is decoded (the blobs a table lists are not even read)
    "millions_of_empty_lists": 'raw(\'{"ok": true, "value": [\' + "[]," * 2_500_000 + '
                               '\'[]], "blobs": []}\')',
    "a_blob_table_of_a_gibibyte": 'raw(\'{"ok": true, "value": {"$a": 0}, \''
                                  '\'"blobs": [1073741824]}\')',
    "many_blobs": 'raw(\'{"ok": true, "value": 0, "blobs": [\' + "0," * 70_000 + \'0]}\')',
}


def forger(expr: str) -> str:
    return FORGER.replace("FORGED", expr)


def assert_graded_and_unreadable(result) -> None:
    """Graded (a result, 0 points, every test the learner's failure), never a grader error."""
    assert result.status == "failed" and result.score == 0
    for t in result.tests:
        assert t.status == "failed", (t.name, t.status, t.message)
        assert t.message.startswith(UNREADABLE), (t.name, t.message)
        assert "grader error" not in t.message


@pytest.mark.parametrize("expr", list(FORGERIES.values()), ids=list(FORGERIES))
def test_a_forged_reply_is_the_learners_failed_test(grade_src, expr):
    assert_graded_and_unreadable(grade_src(SLUG, forger(expr)))


def test_a_well_formed_forgery_is_read_like_any_reply(grade_src):
    """The control: the forging harness itself is fine; a valid failure reply is read as the
    learner's ValueError."""
    tests = by_name(grade_src(SLUG, forger("fail()")))
    assert tests["square_grid_radius_1"].status == "error"
    assert tests["square_grid_radius_1"].message == "ValueError: forged"
    assert not any(t.message.startswith(UNREADABLE) or "grader error" in t.message
                   for t in tests.values())


def test_a_new_request_must_be_answered_with_a_handle():
    """``learner.new`` keeps a handle to the object: any other value cannot be read."""
    with pytest.raises(faults.BadReturn, match=UNREADABLE + "the object built is of type int"):
        reply.read({"ok": True, "value": 5, "blobs": []}, [], op="new")
    got = reply.read({"ok": True, "value": {"$h": 3}, "blobs": []}, [], op="new")
    assert got.value == protocol.Handle(3)


def test_caps_and_inert_text_apply_to_every_field_of_a_failure():
    long_lines = [f"line {i} \x1b[2J" for i in range(100)]
    got = reply.read({"ok": False, "kind": "exception", "type": "E\x1b[1A\n" + "x" * 999,
                      "mro": ["E"] * 1000, "message": "m" * 10**6, "traceback": long_lines,
                      "output": "o" * 10**6, "duration_s": 0}, [], op="call")
    assert got.exc_type.startswith("E\\x1b[1A\\n") and len(got.exc_type) < reply.NAME_CAP + 60
    assert len(got.mro) == reply.MRO_NAMES
    assert len(got.message) < reply.MESSAGE_CAP + 60 and "[message truncated:" in got.message
    assert len(got.traceback) == reply.TRACEBACK_LINES + 1
    assert got.traceback[0] == "[traceback truncated: 60 more lines]"
    assert got.traceback[-1] == "line 99 \\x1b[2J"
    assert got.output.endswith(f"[output truncated: {10**6 - reply.OUTPUT_CAP - reply.ROOM} "
                               "more characters]")


GOOD_BODY = """
    if radius < 0 or H_p < 1 or W_p < 1 or n_prefix < 0:
        raise ValueError("bad arguments")
    i = np.arange(H_p * W_p)
    r, c = i // W_p, i % W_p
    near = np.maximum(abs(r[:, None] - r), abs(c[:, None] - c)) <= radius
    m = np.ones((n_prefix + H_p * W_p,) * 2, dtype=bool)
    m[n_prefix:, n_prefix:] = near
    return m
"""

CAP_LIFTED = """
import sys
import numpy as np

_worker = sys.modules["gradeharness.worker"]


class _Uncapped(_worker.CappedWriter):
    def __init__(self, cap=1 << 40):
        super().__init__(cap)


_worker.CappedWriter = _Uncapped


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    print("x" * 4 * 2**20)
""" + GOOD_BODY


def _limit() -> int:
    """The most a test's output may hold: the cap (and room for the worker's own note), plus
    the grader's note."""
    return reply.OUTPUT_CAP + reply.ROOM + 80


def test_the_grader_keeps_at_most_the_cap_of_a_lifted_output_cap(grade_src):
    """The worker's cap is lifted and 4 MiB are printed per call: the grading process keeps
    the cap and a note; the answers still count."""
    result = grade_src(SLUG, CAP_LIFTED)
    assert result.score == result.max_score
    for t in result.tests:
        assert len(t.output) <= _limit(), (t.name, len(t.output))
        assert "[output truncated: " in t.output
    assert sum(len(t.output) for t in result.tests) <= len(result.tests) * _limit()


def test_a_forged_output_field_is_capped_too(grade_src):
    result = grade_src(SLUG, forger('frame({"ok": True, "value": None, "output": "y" * 2**22})'))
    for t in result.tests:
        assert len(t.output) <= _limit(), (t.name, len(t.output))
        assert "[output truncated: " in t.output


ESCAPES = ("\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b[1A\x1b[2K\r\x1b[8mhidden\x1b[0m"
           "\x9b2J\u202eevil")
FAKE = "Score 9/9 · 9/9 tests pass"
RAW = ("\x1b", "\r", "\x07", "\x9b", "\u202e")
SHOWN = ("\\x1b]0;pwned\\x07", "\\x1b]52;c;cHduZWQ=\\x07", "\\x1b[1A\\x1b[2K\\r",
         "\\x1b[8mhidden", "\\x9b2J", "\\u202eevil")

ESCAPING = f"""
import numpy as np

Evil = type("Evil" + {ESCAPES!r} + "\\n" + {FAKE!r}, (RuntimeError,), {{}})


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    print({ESCAPES!r} + "\\n" + {FAKE!r})
    raise Evil({ESCAPES!r} + "\\n" + {FAKE!r})


grid_local_mask.__code__ = grid_local_mask.__code__.replace(
    co_name="f" + {ESCAPES!r} + "\\n" + {FAKE!r})
"""

IMPORT_ESCAPING = f"raise RuntimeError({ESCAPES!r} + '\\n' + {FAKE!r})\n"


def test_escape_sequences_reach_terminal_and_report_inert(tmp_path, monkeypatch):
    """An exception's class name, message and traceback line, printed output and an import
    error carry OSC title and clipboard writes, cursor-up, erase-line, a carriage return,
    hidden text, a C1 CSI and a bidi override, with a fake score line after a newline: the
    terminal and the HTML report show them escaped, and no line of the terminal starts with
    the fake score."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / f"{SLUG}.py").write_text(textwrap.dedent(ESCAPING))
    (sub / "shape_bias.py").write_text(IMPORT_ESCAPING)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", SLUG, "shape_bias", "--submission", str(sub),
                                       "--report-dir", str(tmp_path / "r"), "-v"],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    text = result.output
    assert "Evil\\x1b]0;pwned" in text and "raised RuntimeError while being imported" in text
    html = (tmp_path / "r" / "index.html").read_text()
    for out in (text, html):
        for char in RAW:
            assert char not in out, (char, out[max(out.find(char) - 200, 0):][:400])
        for shown in SHOWN:
            assert shown in out, shown
    assert "Evil\\x1b]0;pwned" in html
    lines = [line.strip() for line in text.splitlines()]
    assert not any(line.startswith(FAKE) for line in lines), text
    assert [line for line in lines if line.startswith("Score ")] == \
        [next(line for line in lines if line.startswith("Score 0/"))]


@pytest.mark.parametrize(("text", "shown"), [
    ("plain text, é 中\n\tindented", "plain text, é 中\n\tindented"),
    ("\x1b[2J\r\x00\x7f\x85\x9b", "\\x1b[2J\\r\\x00\\x7f\\x85\\x9b"),
    ("\u202eevil\u2066\ud800", "\\u202eevil\\u2066\\ud800"),
])
def test_inert_escapes_control_characters_and_is_idempotent(text, shown):
    assert inert(text) == shown
    assert inert(shown) == shown
    assert inert("a\nb", newlines=False) == "a\\nb"


def test_names_from_uploads_are_inert_in_bulk_reports():
    """Zip member and file names reach the class report through a submission's notes and
    source, or a rejection's reason and source."""
    from grader.bulk import layouts

    sub = layouts.Submission("a", {}, ["ignored \x1b[2Jx.py"], "class.zip: a\r\x1b]0;t\x07.py")
    assert sub.notes == ["ignored \\x1b[2Jx.py"]
    assert sub.source == "class.zip: a\\r\\x1b]0;t\\x07.py"
    rej = layouts.Rejected("b", "has an unsafe path ('\x1b[1A')", "b\x9b.zip")
    assert rej.reason == "has an unsafe path ('\\x1b[1A')" and rej.source == "b\\x9b.zip"


def test_a_source_rule_quoting_the_learners_file_shows_it_inert(grade_src):
    """A source rule names what the file uses, from its text (here a getattr string)."""
    src = ('import numpy as np\n\n\ndef conv_via_attention(X, W, alpha):\n'
           '    getattr(np.fft, "fft\\x1b[1A\\x1b[2K\\rScore 9/9")\n'
           '    raise ValueError("no")\n')
    tests = by_name(grade_src("conv_via_attention", src))
    rule = next(t for name, t in tests.items() if name.startswith("rule_"))
    assert rule.status == "failed" and "numpy.fft.fft\\x1b[1A\\x1b[2K\\rScore" in rule.message
    assert all("\x1b" not in t.message and "\r" not in t.message for t in tests.values())


ATTACK = ('raw(\'{"ok": true, "value": [\' + "[]," * 5_600_000 + \'[]], "blobs": [524288000]}\', '
          'memoryview(np.zeros(524288000, np.uint8)))')


def test_a_huge_forged_reply_costs_the_grading_process_little(grade_src):
    """The attack of a 16 MiB header of 5.6 million empty lists beside a 500 MiB array (it
    took the grading process to 1.3 GiB and 7-11 s of decoding): refused on its header's
    size, before anything of it is decoded or its array read."""
    import time
    import tracemalloc

    tracemalloc.start()
    started = time.perf_counter()
    try:
        result = grade_src(SLUG, forger(ATTACK))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_graded_and_unreadable(result)
    assert all("message header of" in t.message for t in result.tests)
    assert peak < 64 * 2**20, peak / 2**20
    assert time.perf_counter() - started < 60  # 9 tests, each a fresh worker: the forgery


def test_a_result_far_larger_than_the_expected_one_is_refused_unread(grade_src):
    """A 98 MiB array where a mask of at most 1 MiB is expected: over the bounds that the
    expected value sets, the reply is refused before its array is read."""
    tests = by_name(grade_src(SLUG, "import numpy as np\n\n\ndef grid_local_mask(H_p, W_p, "
                                    "radius, n_prefix=1):\n    return np.ones((3500, 3500))\n"))
    for name in ("square_grid_radius_1", "large_grid"):
        assert tests[name].status == "failed"
        assert tests[name].message.startswith(UNREADABLE + "the result is 93 MiB, over the ")


STRUCTURED = """
import numpy as np


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    n = n_prefix + H_p * W_p
    return np.zeros((n, n), dtype=[("a", "<f8")])
"""


def _grade_in_one_session(tmp_path, sources: list[str]) -> list:
    """Each learner source (or None: the reference), graded in turn by one grading process's
    pytest session (``grade_each``, as ``grade bulk``'s pool processes do)."""
    from grader import catalog
    from grader.engine.runner import Job, grade_each

    jobs = []
    for i, src in enumerate(sources):
        path = catalog.get(SLUG).solution
        if src is not None:
            path = tmp_path / str(i) / f"{SLUG}.py"
            path.parent.mkdir(parents=True)
            path.write_text(textwrap.dedent(src))
        jobs.append(Job({SLUG: path}, str(i)))
    outcomes: list = []
    grade_each([SLUG], jobs, lambda job, outcome: outcomes.append(outcome))
    assert not any(isinstance(o, Exception) for o in outcomes), outcomes
    return [o.exercises[0] for o in outcomes]


def test_after_hostile_values_the_same_session_grades_the_reference_as_if_fresh(tmp_path):
    """A structured-dtype array (it once left the pytest session broken: the reference graded
    next scored 8/9, "grader error: KeyError 'check'"), the same array forged past the
    learner's encoder, and millions of empty lists: each is the learner's failed test, and
    the reference after each gets full marks."""
    hostile = [STRUCTURED, forger(FORGERIES["npy_structured"]),
               forger(FORGERIES["millions_of_empty_lists"])]
    results = _grade_in_one_session(tmp_path, [v for src in hostile for v in (src, None)])
    for src, result in zip(hostile, results[::2]):
        assert result.score == 0 and result.status == "failed", src
        for t in result.tests:
            assert t.status == "failed" and "grader error" not in t.message, (t.name, t.message)
    assert all("a structured dtype" in t.message for t in results[0].tests + results[2].tests)
    for result in results[1::2]:
        assert result.score == result.max_score > 0, [(t.name, t.message) for t in result.tests]


def test_an_error_while_the_grader_explains_a_value_is_the_learners_failed_test(tmp_path,
                                                                                monkeypatch):
    """Whatever fails while a wrong value is compared, explained (hints) or drawn (figures),
    the test is the learner's failure "the grader could not interpret the returned value:
    ...", never a grader error; the session grades the reference next with full marks."""
    from grader.feedback import hints
    from grader.judge import check, figures
    def broken(*args, **kwargs):
        raise TypeError('data type "[(\'a\', \'<f8\')]" not understood')

    monkeypatch.setattr(figures, "from_comparison", broken)
    monkeypatch.setattr(hints, "_dtype", broken)
    wrong = {"dtype": "m = np.ones((n_prefix + H_p * W_p,) * 2, dtype=np.int8)",
             "values": "m = np.zeros((n_prefix + H_p * W_p,) * 2, dtype=bool)"}
    sources = [f"import numpy as np\n\n\ndef grid_local_mask(H_p, W_p, radius, n_prefix=1):"
               f"\n    {line}\n    return m\n" for line in wrong.values()]
    results = _grade_in_one_session(tmp_path, [sources[0], None, sources[1], None])
    for result in results[0::2]:
        assert result.score == 0
        for t in result.tests:
            if t.name != "invalid_arguments_raise":
                assert t.status == "failed", (t.name, t.status, t.message)
                assert check.UNINTERPRETABLE + ": TypeError: data type" in t.message, t.message
    for result in results[1::2]:
        assert result.score == result.max_score > 0, [(t.name, t.message) for t in result.tests]

    monkeypatch.setattr(check, "compare", broken)  # comparing itself fails on the value
    results = _grade_in_one_session(tmp_path / "again", [sources[1]])
    assert all(t.message.startswith(f"{SLUG}'s result: {check.UNINTERPRETABLE}: TypeError")
               for t in results[0].tests if t.name != "invalid_arguments_raise")
