"""Whatever a learner's functions return, a verdict is the learner's: no test of any exercise
ends as "grader error (not your fault)" for a value the learner chose (a grader error is kept
for faults of the suite itself)."""

from __future__ import annotations

import pytest

from grader import catalog
from grader.engine.runner import grade

ODD_VALUES = {
    "a_string": "'x'",
    "none": "None",
    "nested_strings": "[['a', 1], ['b']]",
    "a_dict": "{'k': 'v', 1: (2, 3)}",
    "nan": "float('nan')",
    "a_negative_int": "-1",
    "a_bool": "True",
    "empty_tuple": "()",
    "a_pair_of_strings": "('a', 'b')",
    "ragged_numbers": "[[1.0, 2.0], [3.0]]",
    "a_huge_int": "10**30",
    "a_complex": "1j",
    "a_string_array": "__import__('numpy').array(['a', 'b'])",
    "a_bool_array": "__import__('numpy').ones((3, 3), bool)",
}


def _learner(slug: str, value: str) -> str:
    """A file defining every function of ``slug`` to return ``value`` (a class: its every
    method and call return it)."""
    lines = []
    for name in catalog.get(slug).functions:
        if name[0].isupper():
            lines += [f"class {name}:", "    def __init__(self, *args, **kwargs):", "        pass",
                      "    def __call__(self, *args, **kwargs):", f"        return {value}",
                      "    def __getattr__(self, name):",
                      f"        return lambda *args, **kwargs: {value}", ""]
        else:
            lines += [f"def {name}(*args, **kwargs):", f"    return {value}", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("value", ODD_VALUES.values(), ids=ODD_VALUES.keys())
def test_odd_return_values_are_the_learners_failures(tmp_path, value):
    files = {}
    for ex in catalog.load().values():
        files[ex.slug] = tmp_path / f"{ex.slug}.py"
        files[ex.slug].write_text(_learner(ex.slug, value))
    result = grade(files, submission="odd")
    errors = [(ex.exercise, t.name, t.message[:200]) for ex in result.exercises
              for t in ex.tests if t.message.startswith("grader error")]
    assert errors == [], "\n".join(map(str, errors))
