"""A known mistake is named only where every piece of evidence agrees (``judge/evidence.py``),
through the real grader: wrong files nobody declared, whose result matches a mistake on one
test's inputs but not on the others', or whose fault lies in a helper they call."""

from __future__ import annotations

from conftest import by_name, edit_source, reference_source

GRID, SHIFT = "grid_local_mask", "shift_equivariance"


def test_a_mistake_a_passed_test_refutes_is_not_named(grade_src):
    """A window of radius // 2: at radius 1 and 2 it equals "the window's edge left out"
    (radius - 1), but radius_0 passes, which that mistake fails. No test names it; what was
    measured is said (where the wrong values lie). (radius_0's points are not counted: the
    window is right at no other radius, judge/confirm.py.)"""
    src = edit_source(reference_source(GRID),
                      ("<= radius  # (H_p, H_p)", "<= radius // 2  # (H_p, H_p)"),
                      ("<= radius  # (W_p, W_p)", "<= radius // 2  # (W_p, W_p)"))
    tests = by_name(grade_src(GRID, src))
    assert tests["radius_0"].kind == "unconfirmed"  # right there, but at no other radius
    failed = [t for t in tests.values() if not t.passed]
    assert failed and all(t.mistake is None and t.kind != "known_mistake" for t in failed)
    assert "exactly radius apart" in tests["square_grid_radius_1"].kind_hint


def test_the_same_mistake_made_everywhere_is_named(grade_src):
    """The control: the declared mistake itself (the window's edge left out, at every radius)
    agrees with every input, and is named."""
    src = edit_source(reference_source(GRID),
                      ("<= radius  # (H_p, H_p)", "< radius  # (H_p, H_p)"),
                      ("<= radius  # (W_p, W_p)", "< radius  # (W_p, W_p)"))
    tests = by_name(grade_src(GRID, src))
    assert tests["square_grid_radius_1"].mistake is not None
    assert all(t.mistake == tests["square_grid_radius_1"].mistake
               for t in tests.values() if not t.passed and t.kind == "known_mistake")


def test_a_function_whose_helper_fails_its_own_tests_names_no_mistake_of_its_own(grade_src):
    """``which_shifts_commute`` passes the stride on to the learner's ``equivariance_error``,
    which ignores it: the list equals the "stride not passed on" mistake's, but the cause lies
    in the helper, whose own tests fail. Said as such; no mistake named."""
    src = edit_source(
        reference_source(SHIFT),
        ("    base = _feature_map(f, x)                                   # f(x) once for "
         "every shift\n    return [d for d in range(x.shape[2])\n"
         "            if _relative_error(f, x, base, 0, d, int(stride)) <= tol]",
         "    return [d for d in range(x.shape[2])\n"
         "            if equivariance_error(f, x, (0, d), stride) <= tol]"),
        ("    return _relative_error(f, x, _feature_map(f, x), dr, dc, int(stride))",
         "    return _relative_error(f, x, _feature_map(f, x), dr, dc, 1)"))
    tests = by_name(grade_src(SHIFT, src))
    stride2 = tests["which_shifts_stride2_conv"]
    assert not stride2.passed and stride2.mistake is None
    assert "fix equivariance_error first" in stride2.kind_hint
    assert any(not t.passed for name, t in tests.items() if "stride" in name
               and not name.startswith("which_shifts"))


def _verdicts(results_json) -> dict:
    import json

    data = json.loads(results_json.read_text())
    return {(e["exercise"], t["name"]): (t["status"], t["mistake"], t["kind"], t["message"],
                                         t["kind_hint"])
            for e in data["exercises"] for t in e["tests"]}


def test_a_class_graded_in_rounds_names_the_mistakes_grade_submission_names(tmp_path):
    """``grade bulk`` at ``graded`` grades public tests and hidden tests in two rounds (two
    workers, here two pool processes): the hidden round's evidence still refutes a mistake a
    public test matched, and each submission's verdicts are those of ``grade --submission``
    (each submission lacks an exercise another one has)."""
    import subprocess
    import sys

    half = edit_source(reference_source(GRID),
                       ("<= radius  # (H_p, H_p)", "<= radius // 2  # (H_p, H_p)"),
                       ("<= radius  # (W_p, W_p)", "<= radius // 2  # (W_p, W_p)"))
    edge = edit_source(reference_source(GRID),
                       ("<= radius  # (H_p, H_p)", "< radius  # (H_p, H_p)"),
                       ("<= radius  # (W_p, W_p)", "< radius  # (W_p, W_p)"))
    klass = tmp_path / "class"
    for name, src in (("half", half), ("edge", edge)):
        (klass / name).mkdir(parents=True)
        (klass / name / f"{GRID}.py").write_text(src)
    (klass / "other").mkdir()
    (klass / "other" / f"{SHIFT}.py").write_text(reference_source(SHIFT))
    grade = [sys.executable, "-m", "grader"]
    subprocess.run([*grade, "bulk", str(klass), "--out", str(tmp_path / "out"), "--feedback",
                    "graded", "--workers", "2", "--quiet"], check=True, capture_output=True,
                   cwd=tmp_path, timeout=600)
    for name in ("half", "edge"):
        subprocess.run([*grade, "run", "--submission", str(klass / name), "--feedback",
                        "graded", "--report-dir", str(tmp_path / name), "-q", GRID, SHIFT],
                       capture_output=True, cwd=tmp_path, timeout=600)
        alone = _verdicts(tmp_path / name / "results.json")
        assert _verdicts(tmp_path / "out" / name / "results.json") == alone
    assert all(v[1] is None for v in _verdicts(tmp_path / "half" / "results.json").values())
    assert any(v[1] for v in _verdicts(tmp_path / "edge" / "results.json").values())
