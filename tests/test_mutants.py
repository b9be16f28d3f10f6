"""Generated mutants (grader/authoring/mutants.py): which mutants a reference gives, how they
are named, which are set aside as equivalent, and how the real grader's results judge them."""

from __future__ import annotations

import difflib

import numpy as np
import pytest

from grader.authoring import mutants
from grader.authoring.calls import Call

TINY = '''"""A tiny reference."""

import numpy as np


def scaled(x: np.ndarray, n: int = 2) -> np.ndarray:
    """``round(x, 2) * n``; n must be >= 0."""
    if n < 0:
        raise ValueError("n must be >= 0")
    y = np.round(x, 2)
    return y * n


def helper(z):
    return z - 1
'''

TINY_MUTANTS = [  # every mutant of scaled's body, in source order
    ("tiny:scaled:8:swap_op", "line 8: `< 0` -> `<= 0`"),
    ("tiny:scaled:8:number", "line 8: `0` -> `1`"),
    ("tiny:scaled:9:drop_statement", 'line 9: dropped `raise ValueError("n must be >= 0")`'),
    ("tiny:scaled:9:arg_removal", 'line 9: `"n must be >= 0"` -> `None`'),
    ("tiny:scaled:9:string", 'line 9: `"n must be >= 0"` -> `"XXn must be >= 0XX"`'),
    ("tiny:scaled:9:string:2", 'line 9: `"n must be >= 0"` -> `"N MUST BE >= 0"`'),
    ("tiny:scaled:10:drop_statement", "line 10: dropped `y = np.round(x, 2)`"),
    ("tiny:scaled:10:assignment", "line 10: `np.round(x, 2)` -> `None`"),
    ("tiny:scaled:10:arg_removal", "line 10: `x` -> `None`"),
    ("tiny:scaled:10:arg_removal:2", "line 10: `2` -> `None`"),
    ("tiny:scaled:10:arg_removal:3", "line 10: `x,` removed"),
    ("tiny:scaled:10:arg_removal:4", "line 10: `2` removed"),
    ("tiny:scaled:10:number", "line 10: `2` -> `3`"),
    ("tiny:scaled:11:drop_statement", "line 11: dropped `return y * n`"),
    ("tiny:scaled:11:swap_op", "line 11: `* n` -> `/ n`"),
]


def test_every_mutant_of_the_listed_function_with_its_id_and_change():
    """mutmut's operators (and the dropped statement) on the listed function's body only:
    not its docstring, annotations or defaults, not another function."""
    found = mutants.mutants_of(TINY, ("scaled",), "tiny")
    assert [(m.id, m.description) for m in found] == TINY_MUTANTS
    assert {m.function for m in found} == {"scaled"}


@pytest.mark.parametrize("index", range(len(TINY_MUTANTS)))
def test_each_mutant_is_the_reference_with_its_one_line_changed(index):
    m = mutants.mutants_of(TINY, ("scaled",), "tiny")[index]
    compile(m.source, m.id, "exec")
    changed = [line for line in difflib.unified_diff(TINY.splitlines(), m.source.splitlines(),
                                                     lineterm="", n=0) if line.startswith("@@")]
    assert changed == [f"@@ -{m.line} +{m.line} @@"], changed


def test_ids_hold_while_their_lines_do_not_move():
    """An edit below (or elsewhere on other lines' counts) keeps every id; a line added above
    moves the ids below it by one."""
    before = {m.id: m.description for m in mutants.mutants_of(TINY, ("scaled",), "tiny")}
    edited = TINY.replace("return z - 1", "return z + 1") + "\n\ndef more():\n    return 3\n"
    assert {m.id: m.description for m in mutants.mutants_of(edited, ("scaled",), "tiny")} \
        == before
    shifted = TINY.replace("import numpy as np\n", "import numpy as np\nimport math\n")
    assert [m.id for m in mutants.mutants_of(shifted, ("scaled",), "tiny")][0] == \
        "tiny:scaled:9:swap_op"


def test_a_class_is_mutated_method_by_method():
    source = ("class Model:\n    def __init__(self, k=3):\n        self.k = k\n\n"
              "    def forward(self, x):\n        return x * self.k\n")
    found = mutants.mutants_of(source, ("Model",), "cls")
    assert {m.function for m in found} == {"Model.__init__", "Model.forward"}
    assert "cls:Model.forward:6:swap_op" in {m.id for m in found}


def test_a_class_is_replayed_request_by_request():
    """A class's mutants are compared on each test's requests (build, recipes, method calls)
    replayed on it and on the reference: checking k <= 0 instead of k < 0 changes nothing when
    the suite only builds Model(k=2); dividing by k changes forward's result."""
    from grader.sandbox.harness.protocol import Handle

    source = ("class Model:\n    def __init__(self, k=3):\n        if k < 0:\n"
              "            raise ValueError('k must be >= 0')\n        self.k = k\n\n"
              "    def forward(self, x):\n        return x * self.k\n")
    session = mutants.Session("forward_doubles", (
        ("new", "Model", (), {"k": 2}, Handle(1)),
        ("call", "forward", (np.array([0.5, 1.5]),), {}, None)))
    found = {m.id: m for m in mutants.mutants_of(source, ("Model",), "cls")}
    replay = mutants.Replayer(mutants.Inputs("cls", [], source, 1e-9, 1e-12,
                                             sessions=[session]))
    try:
        same = replay.where(mutants._Task(found["cls:Model.__init__:3:swap_op"]))
        other = replay.where(mutants._Task(found["cls:Model.forward:8:swap_op"]))
    finally:
        replay.close()
    assert same == ""
    assert other.startswith("on the inputs of test forward_doubles, forward differs from the "
                            "reference: ")


def test_perturbed_inputs_keep_ints_shapes_and_what_the_floats_mean():
    rng = np.random.default_rng(0)
    x = np.array([[0.1, 0.7, 0.2], [0.3, 0.3, 0.4]])                 # rows sum to 1
    labels = np.array([1.0, -1.0, -1.0, 1.0])                       # whole numbers
    nan = np.array([0.5, np.nan, 2.0])
    args = (x, labels, nan, [1.5, 2.5], 3, (2, 3), "text")
    out = mutants.perturbed(args, rng)
    assert out[4:] == (3, (2, 3), "text")
    assert out[0].shape == x.shape and out[0].dtype == x.dtype and not np.allclose(out[0], x)
    assert np.allclose(out[0].sum(axis=-1), 1.0) and out[0].min() >= 0
    assert sorted(out[1]) == sorted(labels)
    assert np.isnan(out[2][1]) and 0.5 <= out[2][0] <= 2.0
    assert type(out[3]) is list and all(1.5 <= v <= 2.5 for v in out[3])
    again = mutants.perturbed(args, np.random.default_rng(0))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(out[:3], again[:3]))


def _tiny_inputs(source: str, calls: list[Call]) -> mutants.Inputs:
    return mutants.Inputs("tiny", calls, source, rtol=1e-9, atol=1e-12)


def test_equivalent_mutants_are_set_aside_and_the_rest_say_where_they_differ():
    """On the recorded calls (n = 2, and n = -1, which raises), checking n <= 0 instead of
    n < 0, or raising another message, changes nothing: set aside. Rounding to 3 digits
    instead of 2 gives the same on the recorded x, [0.25, 0.5], but not on random x like it."""
    x = np.array([0.25, 0.5])
    calls = [Call("positive", True, "scaled", (x, 2)),
             Call("negative_raises", False, "scaled", (x,), {"n": -1})]
    outcome = mutants.Outcome("tiny")
    replay = mutants.Replayer(_tiny_inputs(TINY, calls))
    try:
        chosen = dict(mutants.sample(mutants.mutants_of(TINY, ("scaled",), "tiny"), None, {},
                                     replay, outcome))
    finally:
        replay.close()
    assert sorted(m.id for m in outcome.equivalent) == sorted([
        "tiny:scaled:8:swap_op", "tiny:scaled:8:number", "tiny:scaled:9:arg_removal",
        "tiny:scaled:9:string", "tiny:scaled:9:string:2"])
    where = {m.id: w for m, w in chosen.items()}
    assert where["tiny:scaled:10:number"].startswith(
        "on random inputs shaped like those of test positive, scaled differs from the "
        "reference:")
    assert where["tiny:scaled:9:drop_statement"] == (
        "on the inputs of test negative_raises, scaled differs from the reference: returns a "
        "value")
    assert len(chosen) + len(outcome.equivalent) == len(TINY_MUTANTS)


def test_the_sample_is_seeded_and_skips_allowed_mutants():
    x = np.array([0.25, 0.5])
    calls = [Call("positive", True, "scaled", (x, 2))]
    found = mutants.mutants_of(TINY, ("scaled",), "tiny")
    picks = []
    for allow in ({}, {}, {"tiny:scaled:11:swap_op": "TODO suite"}):
        replay = mutants.Replayer(_tiny_inputs(TINY, calls))
        try:
            picks.append([m.id for m, _ in mutants.sample(found, 3, allow, replay,
                                                          mutants.Outcome("tiny"))])
        finally:
            replay.close()
    assert picks[0] == picks[1] and len(picks[0]) == 3
    assert "tiny:scaled:11:swap_op" not in picks[2]


def test_a_mutant_that_loops_forever_differs(monkeypatch):
    source = "def countdown(n):\n    while n > 0:\n        n -= 1\n    return n\n"
    monkeypatch.setattr(mutants, "MIN_LIMIT_S", 1.0)
    found = {m.id: m for m in mutants.mutants_of(source, ("countdown",), "loop")}
    replay = mutants.Replayer(_tiny_inputs(source, [Call("t", True, "countdown", (3,))]))
    try:
        forever = replay.where(mutants._Task(found["loop:countdown:3:swap_op"]))   # n += 1
        after = replay.where(mutants._Task(found["loop:countdown:2:swap_op"]))     # n >= 0
    finally:
        replay.close()
    assert forever == mutants.TIMED_OUT
    assert after == "on the inputs of test t, countdown differs from the reference: expected " \
        "0, got -1"


def test_the_allow_list_reads_ids_and_reasons(tmp_path, monkeypatch):
    path = tmp_path / "tiny.mutants.toml"
    monkeypatch.setattr(mutants, "allow_path", lambda slug: path)
    assert mutants.allowed("tiny") == {}
    path.write_text('[[survivor]]\nid = "tiny:scaled:8:swap_op"\n'
                    'reason = "equivalent on every valid input: n is an int"\n')
    assert mutants.allowed("tiny") == {
        "tiny:scaled:8:swap_op": "equivalent on every valid input: n is an int"}
    path.write_text('[[survivor]]\nid = "tiny:scaled:8:swap_op"\n')
    with pytest.raises(ValueError, match="needs an id and a reason"):
        mutants.allowed("tiny")


@pytest.fixture(scope="module")
def grid_inputs() -> mutants.Inputs:
    """The calls grid_local_mask's suite makes, recorded on its reference."""
    from grader.authoring import calls

    return mutants.Inputs.of("grid_local_mask", calls.record(["grid_local_mask"])[
        "grid_local_mask"])


def _rows_exclusive() -> mutants.Mutant:
    """grid_local_mask's mutant `<= radius` -> `< radius` on the rows."""
    return next(m for m in mutants.generate("grid_local_mask") if m.operator == "swap_op"
                and "`<= radius` -> `< radius`" in m.description)


def test_a_mutant_is_held_to_the_mistake_it_is_named(grid_inputs):
    """radius_exclusive is the window max(|dr|, |dc|) < radius: the mutant that makes only the
    rows exclusive is not that mistake; the file that makes both exclusive is."""
    rows = _rows_exclusive()
    both = mutants.Mutant("both", rows.slug, rows.function, rows.line, "swap_op", "",
                          rows.source.replace("<= radius", "< radius"))
    replay = mutants.Replayer(grid_inputs)
    try:
        assert "differs from the mistake radius_exclusive" in replay.where(
            mutants._Task(rows, "radius_exclusive"))
        assert replay.where(mutants._Task(both, "radius_exclusive")) == ""
        assert replay.where(mutants._Task(both, "no_such_mistake")) == \
            "the suite has no mistake no_such_mistake"
    finally:
        replay.close()


def test_the_real_grader_tells_a_killed_mutant_from_a_survivor(grid_inputs):
    """grid_local_mask, graded for real: `<=` -> `<` on the rows loses points; dropping the
    check of n_prefix survives (numpy raises the ValueError itself): a mutants-killed problem
    naming its line, unless the allow-list lets it survive."""
    from grader.authoring import graded

    slug = "grid_local_mask"
    killed = _rows_exclusive()
    survivor = next(m for m in mutants.generate(slug) if m.operator == "drop_statement"
                    and "n_prefix must be >= 0" in m.description)
    replay = mutants.Replayer(grid_inputs)
    outcome, allowed = mutants.Outcome(slug), mutants.Outcome(slug)
    files = {slug: [mutants.as_graded(killed, "", replay, outcome),
                    mutants.as_graded(survivor, "it is the one", replay, outcome),
                    mutants.as_graded(survivor, "", replay, allowed,
                                      {survivor.id: "TODO suite"})]}
    try:
        problems = graded.judge(graded.grade_files(files))
    finally:
        replay.close()
    assert outcome.killed == [killed] and outcome.survived == [survivor]
    assert allowed.allowed == [survivor] and allowed.score == "0/1"
    assert [(p.rule, p.file.name) for p in problems] == [("mutants-killed",
                                                          "grid_local_mask.py")]
    assert problems[0].what.startswith(f"line {survivor.line}: dropped `raise ValueError(")
    assert f"mutant {survivor.id} survives (every test passes); it is the one" in \
        problems[0].what


def test_graded_files_samples_judges_and_sums_up(grid_inputs, tmp_path, monkeypatch):
    """``files_to_grade``'s mutants: the seeded sample, an allow-list entry that names no
    mutant said once, and the summary's score."""
    from grader.authoring import graded

    path = tmp_path / "grid_local_mask.mutants.toml"
    path.write_text('[[survivor]]\nid = "grid_local_mask:grid_local_mask:99:number"\n'
                    'reason = "TODO suite"\n')
    monkeypatch.setattr(mutants, "allow_path", lambda slug: path)
    first, files = (mutants.graded_files(["grid_local_mask"], size=2, recorded={
        "grid_local_mask": grid_inputs.calls}) for _ in range(2))
    assert [g.label for g in first["grid_local_mask"]] == [
        g.label for g in files["grid_local_mask"]]
    problems = graded.judge(graded.grade_files(files))
    assert [(p.rule, p.what) for p in problems] == [(
        "mutants-killed", "grid_local_mask.mutants.toml lets grid_local_mask:grid_local_mask:"
        "99:number survive, but the reference has no such mutant (did its line move?)")]
    assert mutants.summary()[0] == ("Mutants killed (a seeded sample of 2 per exercise; 0 "
                                    "equivalent set aside): grid_local_mask 2/2.")


def test_a_replay_starved_of_cpu_is_waited_for(monkeypatch):
    """The time limit of a replay is CPU time: a child stopped for 2.5 s (SIGSTOP, as load
    others cause would starve it) past its 1 s limit, having used none, is waited for, and an
    equivalent mutant stays equivalent (one that spins is still past its limit:
    ``test_a_mutant_that_loops_forever_differs``)."""
    import os
    import signal
    import threading
    import time

    source = "def f(n):\n    label = 'a'\n    return 2 * n\n"
    monkeypatch.setattr(mutants, "MIN_LIMIT_S", 1.0)
    found = {m.id: m for m in mutants.mutants_of(source, ("f",), "cpu")}
    same = next(m for i, m in found.items() if ":string" in i)
    replay = mutants.Replayer(_tiny_inputs(source, [Call("t", True, "f", (3,))]))
    try:
        replay._start()
        pid = replay._child.pid
        os.kill(pid, signal.SIGSTOP)
        resume = threading.Timer(2.5, os.kill, (pid, signal.SIGCONT))
        resume.start()
        started = time.monotonic()
        assert replay.where(mutants._Task(same)) == ""
        assert time.monotonic() - started >= 2.4
        resume.join()
    finally:
        replay.close()
