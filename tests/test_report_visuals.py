"""Pictures and what each kind of test shows: public tests their inputs, expected and actual
values and heatmaps; hidden tests where and by how much a result is off, never the inputs or
the expected values (in the result, results.json and the HTML); curves from the learner's
own outputs on passing solutions."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from conftest import by_name, declared, edit_source, reference_source

from grader import catalog
from grader.engine.runner import grade
from grader.report.submission_html import render, write_report
from grader.results import SubmissionResult

GRID, ROLLOUT, CONV = "grid_local_mask", "attention_rollout", "conv_via_attention"
MANHATTAN = declared(GRID, "manhattan_window")


@pytest.fixture(scope="module")
def manhattan(tmp_path_factory) -> SubmissionResult:
    path = tmp_path_factory.mktemp("manhattan") / f"{GRID}.py"
    path.write_text(MANHATTAN)
    return grade({GRID: path}, submission="manhattan")


def test_a_public_test_shows_inputs_expected_and_actual(manhattan):
    t = by_name(manhattan.exercises[0])["square_grid_radius_1"]
    assert t.visibility == "public" and t.mistake == "manhattan_window"
    assert "first at index (1, 5): expected True, got False" in t.message
    assert t.inputs == ["grid_local_mask(3, 3, 1, 1)"]
    assert t.values["expected"].startswith("[[1 1 1") and "(1 = True" in t.values["actual"]
    fig = t.figures[0]
    assert fig["type"] == "heatmap" and fig["boolean"] and fig["shape"] == [10, 10]
    assert fig["expected"][1][5] == 1 and fig["actual"][1][5] == 0
    assert fig["worst"] == [1, 5] and fig["n_bad"] == 16
    assert t.diagnostics["expected_at_worst"] is True


def test_a_hidden_test_shows_where_and_how_much_never_what(manhattan, tmp_path):
    t = by_name(manhattan.exercises[0])["non_square_grid"]
    assert t.visibility == "hidden" and t.mistake == "manhattan_window"
    assert t.reason == "grid_local_mask's result: 16 of 121 values differ; first at index (1, 7)"
    assert t.inputs == [] and t.values is None
    assert "expected_at_worst" not in t.diagnostics and "actual_at_worst" not in t.diagnostics
    fig = t.figures[0]
    assert "expected" not in fig and "actual" not in fig and fig["hidden"]
    assert fig["bad"][1][7] == 1 and fig["diff"][1][7] == 1 and fig["worst"] == [1, 7]
    write_report(manhattan, tmp_path)
    data = json.loads((tmp_path / "results.json").read_text())
    hidden = [t for t in data["exercises"][0]["tests"] if t["visibility"] == "hidden"]
    for t in hidden:
        assert "expected True" not in t["message"] and t["inputs"] == []
        assert all("expected" not in f and "actual" not in f for f in t["figures"])
    html = (tmp_path / "index.html").read_text()
    section = html[html.index('<span class="test-name">non_square_grid'):
                   html.index('<span class="test-name">several_prefix_tokens')]
    assert "where yours differs" in section and "expected there" not in section
    assert "never its inputs or the expected values" in section


def test_hidden_float_results_never_show_the_expected_values(grade_src):
    """A hidden test off by a constant: neither its message nor its diagnostics, figure or
    JSON contain any expected value (the public test's do)."""
    src = edit_source(reference_source(ROLLOUT), (
        "    return R[0, n_prefix:].reshape(H_p, W_p)",
        "    return R[0, n_prefix:].reshape(H_p, W_p) + (0.01 if len(layers) == 6 else 0.02)"))
    tests = by_name(grade_src(ROLLOUT, src))
    from grader.suites.test_attention_rollout import _layers

    expected = catalog_reference(ROLLOUT).attention_rollout(_layers(3, 6, 2, 10), 1, 3, 3)
    hidden = json.dumps(vars(tests["order_of_layers"]))
    assert tests["order_of_layers"].status == "failed"
    for v in expected.ravel():
        for text in (f"{v:.6g}", f"{v:.4g}"):
            assert text not in hidden, text
    public = tests["three_layers_four_heads"]
    assert "expected 0." in public.message and public.figures[0]["expected"]


def catalog_reference(slug):
    from grader.engine.plugin import load_reference

    return load_reference(slug)


def test_large_results_are_drawn_in_blocks(manhattan):
    t = by_name(manhattan.exercises[0])["large_grid"]
    fig = t.figures[0]
    assert fig["full_shape"] == [1025, 1025] and fig["block"] == [22, 22]
    assert fig["shape"] == [1025, 1025] and len(fig["diff"]) == 47 and len(fig["diff"][0]) == 47
    assert "blocks of 22x22" in fig["note"] and "block maxima" in fig["note"]
    assert len(json.dumps(t.figures)) < 15_000
    html = render(manhattan)
    assert "blocks of 22x22" in html


def test_three_d_results_show_the_worst_slice_and_one_d_a_line(grade_src):
    src = edit_source(reference_source(CONV), (
        "    return np.einsum(\"uvrcx,oxuv->rco\", Z, W_conv)",
        "    out = np.einsum(\"uvrcx,oxuv->rco\", Z, W_conv)\n"
        "    if out.shape == (5, 6, 3):\n"
        "        out[2, 3, 1] += 0.5\n"
        "    return out"))
    t = by_name(grade_src(CONV, src))["two_d_small"]
    fig = t.figures[0]
    assert fig["type"] == "heatmap" and fig["slice"] == "[:, :, 1]" and fig["shape"] == [5, 6]
    assert fig["worst"] == [2, 3] and fig["full_shape"] == [5, 6, 3]
    mad = edit_source(reference_source("mean_attention_distance"), (
        "    return per_query.mean(axis=(0, 2))", "    return per_query.mean(axis=(0, 2)) * "
        "np.array([1.0, 1.5])[:per_query.shape[1]].sum()"))
    t = by_name(grade_src("mean_attention_distance", mad))["one_image"]
    fig = t.figures[0]
    assert fig["type"] == "line" and len(fig["expected"]) == 2 and len(fig["actual"]) == 2
    assert '<svg class="figure line-diff"' in render(_one(t, "mean_attention_distance"))


def _one(test, slug) -> SubmissionResult:
    from grader.results import ExerciseResult

    return SubmissionResult("x", "cpu", [ExerciseResult(slug, slug, "failed", [test])])


def test_passing_solutions_draw_their_curves_from_the_learners_outputs(tmp_path):
    files = {slug: catalog.get(slug).solution for slug in
             ("conv_via_attention", "inductive_bias_toy", "compute_frontier")}
    # a learner whose rho is half the reference's: error_tracks_rho still passes (it measures
    # the learner's convolution) and the curve shows the learner's own rho
    half = tmp_path / "conv_via_attention.py"
    half.write_text(edit_source(reference_source(CONV), (
        "    return float(2.0 * np.exp(-alpha * z**2).sum())",
        "    return float(np.exp(-alpha * z**2).sum())")))
    files["conv_via_attention"] = half
    result = grade(files, submission="curves")
    curves = {e.exercise: [f for t in e.tests for f in t.figures if f["type"] == "curve"]
              for e in result.exercises}
    assert {slug: len(c) for slug, c in curves.items()} == {
        "conv_via_attention": 1, "inductive_bias_toy": 1, "compute_frontier": 1}
    conv = curves["conv_via_attention"][0]
    errors, rho = conv["series"]
    assert by_name(result.exercises[0])["error_tracks_rho"].passed
    ref = catalog_reference(CONV)
    for alpha, r in zip(rho["x"], rho["y"]):
        assert r == pytest.approx(ref.rho(alpha) / 2, rel=1e-3)
    assert errors["y"][0] > 0.1 and errors["y"][-1] < 1e-9        # the error falls with alpha
    toy = curves["inductive_bias_toy"][0]
    assert toy["marks"][0]["label"] == "your crossover N* = 121.9"
    assert [s["name"] for s in toy["series"]][:2] == ["shared kernel, measured (your fits)",
                                                      "full map, measured (your fits)"]
    frontier = curves["compute_frontier"][0]
    names = [s["name"] for s in frontier["series"]]
    assert "your ViT frontier" in names and "ResNets (Table 6)" in names
    pairs = next(s for s in frontier["series"] if s["style"] == "pairs")
    assert len(pairs["x"]) == 2 * 5 and all(math.isfinite(x) for x in pairs["x"])
    html = render(result)
    assert html.count('<svg class="figure curve"') == 3
    assert "Your heads approach the convolution as alpha grows" in html


def test_the_report_is_self_contained(manhattan):
    html = render(manhattan)
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert html.count('<svg class="figure heatmap"') == 6   # the six failing tests
    assert np.isfinite(len(html)) and len(html) < 400_000


def test_a_known_mistake_of_several_tests_is_explained_once(manhattan):
    """The report explains a known mistake once, above the exercise's tests, with the tests it
    matched; each of them names it."""
    from markupsafe import escape

    ex = manhattan.exercises[0]
    matched = [t.name for t in ex.tests if t.mistake == "manhattan_window"]
    assert len(matched) >= 2
    html = render(manhattan)
    assert html.count(str(escape(ex.tests[0].mistake_message))) == 1
    assert f"Known mistake (manhattan window)</strong>, matched by {len(matched)} tests" in html
    assert ", ".join(matched[:-1]) + " and " + matched[-1] in html
    assert html.count("Known mistake (manhattan window)</strong>, explained above.") == \
        len(matched)


@pytest.mark.parametrize("content, message", [
    (b"import numpy as np\n\x00\x00\n", "grid_local_mask.py is binary (it contains NUL bytes)"),
    (b"import numpy as np\n\n\ndef grid_local_mask(:\n    pass\n",
     "grid_local_mask.py has a SyntaxError at line 4: "),
], ids=["nul_bytes", "syntax_error"])
def test_a_file_that_cannot_be_loaded_is_one_message(tmp_path, content, message):
    """One message for the exercise (the real line number, or what is wrong with the file),
    none per test, and no test's hint: its code never ran."""
    path = tmp_path / f"{GRID}.py"
    path.write_bytes(content)
    result = grade({GRID: path}, submission="broken")
    ex = result.exercises[0]
    assert ex.status == "error" and ex.message.startswith(message), ex.message
    assert all(t.status == "error" and t.message == ex.message for t in ex.tests)
    html = render(result)
    section = html[html.index('<section class="exercise"'):]
    assert section.count(message) == 1
    assert f"(all {len(ex.tests)} tests)" in section
    assert 'class="hint"' not in section and 'class="test-body"' not in section
    assert "line None" not in html


def _mask_figure(n_bad: int, side: int = 4) -> dict:
    cells = [[(r * side + c) < n_bad for c in range(side)] for r in range(side)]
    bad = [[int(v) for v in row] for row in cells]
    return {"type": "heatmap", "title": "result", "boolean": True, "hidden": False,
            "full_shape": [side, side], "shape": [side, side], "worst": [0, 0],
            "worst_index": [0, 0], "n_bad": n_bad, "n_total": side * side, "diff": bad,
            "bad": bad, "expected": [[1] * side for _ in range(side)],
            "actual": [[0 if v else 1 for v in row] for row in cells]}


def test_a_mask_where_most_cells_differ_has_no_per_cell_outlines():
    """The cells that differ are outlined in "yours" while they are few; when most differ the
    outlines would cover the panel, and the difference panel's legend says how many instead."""
    from grader.report import svg

    few = svg.render(_mask_figure(3))
    assert few.count('stroke="#dc2626"') == 1 and "red = differs<" in few
    most = svg.render(_mask_figure(12))
    assert 'stroke="#dc2626"' not in most
    assert "red = differs: 12 of 16 cells" in most
    every = svg.render(_mask_figure(16))
    assert 'stroke="#dc2626"' not in every and "red = differs: 16 of 16 cells" in every


def test_descriptions_are_never_cut_mid_sentence(manhattan):
    """A test's description is its docstring's first paragraph, whole (not its first line:
    "... raise ValueError; radius 0 and")."""
    import ast
    import inspect

    from markupsafe import escape

    docs = {n.name.removeprefix("test_"): inspect.cleandoc(ast.get_docstring(n) or "")
            for n in ast.parse(catalog.get(GRID).suite.read_text()).body
            if isinstance(n, ast.FunctionDef)}
    html = render(manhattan)
    cut = 0
    for t in manhattan.exercises[0].tests:
        whole = " ".join(docs[t.name].split("\n\n")[0].split())
        cut += "\n" in docs[t.name].split("\n\n")[0]
        assert t.description == whole, t.name
        assert str(escape(whole)) in html
    assert cut  # (some description spans several lines of its docstring)


@pytest.mark.parametrize("payload", [
    {**_mask_figure(3), "worst": [9, 9]},                 # the worst cell outside the grid
    {**_mask_figure(3), "diff": "0.123456789"},           # a string for a grid
    {"type": "curve", "title": "t", "series": [{"x": ["0.5"], "y": [[1]]}], "marks": [],
     "log_x": False, "log_y": False, "x_label": "x", "y_label": "y"},
    ["heatmap", 0.123456789],                             # not a payload at all
], ids=["index", "grid", "curve", "list"])
def test_a_figure_that_cannot_be_drawn_is_a_caption_and_a_line_or_a_failure(
        payload, monkeypatch, caplog):
    """Figure payloads are plain data from outside the process (an older results.json, a Dask
    worker's reply): one that cannot be drawn leaves a caption in the grader's words where the
    figure was, and one logged line naming no value of the payload, and the report is written;
    under GRADER_STRICT_FIGURES=1 (the tests' setting) it fails."""
    import logging

    from grader.report import svg
    from grader.results import ExerciseResult, TestResult

    monkeypatch.delenv(svg.STRICT_ENV, raising=False)
    with caplog.at_level(logging.WARNING, logger=svg.__name__):
        assert svg.render(payload) == svg.NOT_DRAWN
    line, = [r.getMessage() for r in caplog.records if r.name == svg.__name__]
    assert re.fullmatch(r"a figure \((heatmap|curve|unknown kind)\) could not be drawn: "
                        r"[A-Za-z]+Error at [a-z_]+\.py:\d+ in [A-Za-z_<>]+", line), line
    if isinstance(payload, dict):  # (the report's template reads a figure's type)
        test = TestResult(name="broken", status="failed", score=0.0, max_score=1.0,
                          message="wrong", figures=[payload])
        html = render(SubmissionResult("x", "cpu",
                                       [ExerciseResult(GRID, GRID, "failed", [test])]))
        assert "This figure could not be drawn." in html and "0.123456789" not in html

    monkeypatch.setenv(svg.STRICT_ENV, "1")
    with pytest.raises((IndexError, TypeError, ValueError, AttributeError)):
        svg.render(payload)


def test_a_figure_of_an_unknown_kind_is_left_out_silently(monkeypatch, caplog):
    """A payload of a kind this grader does not draw (a newer grader's) is not an error."""
    from grader.report import svg

    monkeypatch.setenv(svg.STRICT_ENV, "1")
    assert svg.render({"type": "violin", "values": [1, 2]}) == ""
    assert svg.render({"kind": "heatmap"}) == "" and not caplog.records


def test_a_heatmap_with_non_finite_values_is_drawn(grade_src):
    """NaN and infinities travel as "nan"/"inf" in a figure's payload (JSON has none): they
    are drawn in the non-finite colour, and the figure is there (it vanished before the
    strict mode of the tests found it)."""
    from grader.report import svg

    source = reference_source("attention_rollout").replace(
        "return R[0, n_prefix:].reshape(H_p, W_p)",
        "out = R[0, n_prefix:].reshape(H_p, W_p).copy()\n"
        "    out[0, 0], out[-1, -1] = np.nan, np.inf\n    return out", 1)
    result = grade_src("attention_rollout", source)
    figures = [f for t in result.tests for f in t.figures if f.get("type") == "heatmap"]
    assert figures and any("nan" in json.dumps(f) or "inf" in json.dumps(f) for f in figures)
    drawn = [svg.render(f) for f in figures]
    assert all(d.startswith("<svg") for d in drawn)
    assert any(svg.NONFINITE in d for d in drawn)
