"""Source rules: read from the learner's file with ``ast`` (never imported by the grader), a
broken rule is a failed test with its own message; stubs, unparsable and missing files are
told apart."""

from __future__ import annotations

import importlib

from conftest import by_name, edit_source, reference_source

from grader import catalog
from grader.suite import rules_in

CONV, ROLLOUT = "conv_via_attention", "attention_rollout"


def test_rules_are_declared_and_counted_in_the_points():
    for slug, name in ((CONV, "no_convolution_routine"), (ROLLOUT, "no_library_rollout")):
        module = importlib.import_module(f"grader.suites.test_{slug}")
        assert [r.name for r in rules_in(vars(module))] == [name]
        assert hasattr(module, f"test_rule_{name}")
    assert catalog.get(CONV).points == 16 and catalog.get(ROLLOUT).points == 9


def test_convolution_routine_breaks_the_rule_however_it_is_named(grade_src):
    src = edit_source(reference_source(CONV), ("import numpy as np\n", (
        "import numpy as np\n"
        "from numpy import convolve as smooth\n"))) + (
        "\n\ndef _helpers(x):\n"
        "    spectrum = np.fft.rfft(x)\n"
        "    corr = getattr(np, 'correlate')\n"
        "    return smooth(x, x), spectrum, corr, eval('1 + 1')\n")
    result = grade_src(CONV, src)
    tests = by_name(result)
    rule = tests["rule_no_convolution_routine"]
    assert rule.status == "failed" and rule.score == 0 and rule.kind == "rule"
    assert rule.message.startswith("conv_via_attention must compute the convolution with "
                                   "attention heads")
    for part in ("line 8 uses numpy.convolve", "uses numpy.fft.rfft", "uses numpy.correlate",
                 "calls eval, which hides what the code uses"):
        assert part in rule.message, part
    assert rule.message.count("uses numpy.convolve") == 2     # the import and the call
    assert rule.kind_hint and rule.hint
    # everything else still passes: the rule is one test among the others
    assert result.score == result.max_score - rule.max_score


def test_library_rollout_breaks_the_rule(grade_src):
    src = reference_source(ROLLOUT) + (
        "\n\ndef _library():\n"
        "    from vit_explain import attention_rollout as lib_rollout\n"
        "    import json\n"
        "    return lib_rollout, json\n")
    rule = by_name(grade_src(ROLLOUT, src))["rule_no_library_rollout"]
    assert rule.status == "failed" and rule.kind == "rule"
    assert "import only numpy and math" in rule.message
    assert "imports vit_explain" in rule.message
    assert "imports attention_rollout from vit_explain" in rule.message
    assert "imports json" in rule.message


def test_the_reference_keeps_the_rules(grade_src):
    for slug, name in ((CONV, "rule_no_convolution_routine"),
                       (ROLLOUT, "rule_no_library_rollout")):
        assert by_name(grade_src(slug, reference_source(slug)))[name].passed


def test_a_stub_earns_no_points_for_a_rule(grade_src):
    rule = by_name(grade_src(ROLLOUT, catalog.get(ROLLOUT).stub.read_text()))[
        "rule_no_library_rollout"]
    assert rule.status == "failed" and rule.score == 0
    assert rule.message.startswith("not implemented yet: attention_rollout still raises "
                                   "NotImplementedError")


def test_unparsable_or_incomplete_source(grade_src):
    rule = by_name(grade_src(ROLLOUT, "import numpy as np\n\ndef attention_rollout(:\n"))[
        "rule_no_library_rollout"]
    assert rule.status == "error" and rule.score == 0
    assert rule.message.startswith("attention_rollout.py has a SyntaxError at line 3")
    rule = by_name(grade_src(ROLLOUT, "import numpy as np\n"))["rule_no_library_rollout"]
    assert rule.status == "error"  # a file defining none of the functions is not loaded
    assert rule.message == ("attention_rollout.py does not define the exercise's function "
                            "attention_rollout")
