"""``grade pack new SLUG``: every file of a new exercise, and its entry at the end of the
exercise order, so that ``grade pack check SLUG`` runs at once and lists what is left to
write (the ``TODO(pack new)`` markers).

The scaffold is a complete, tiny exercise (scale a vector by a factor), so that the engine
grades it from the first minute; the author replaces each marked part by the real one.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader import catalog

from .check import TODO

STATEMENT = f"""# {{title}}

{TODO}: the idea in a paragraph, with the seed's figures.

## What to write

`{{slug}}(x, factor)` returns `x * factor` as a float array of `x`'s shape.
{TODO}: the real contract (shapes, dtypes, conventions).

## The interview question

{TODO}: the question this exercise prepares for, in one sentence.
"""

STUB = f'''"""{{title}}."""

import numpy as np


def {{slug}}(x: np.ndarray, factor: float) -> np.ndarray:
    """``x * factor``: a float array of ``x``'s shape. {TODO}: the real contract."""
    raise NotImplementedError
'''

REFERENCE = f'''"""Reference solution of {{slug}}."""

import numpy as np


def {{slug}}(x: np.ndarray, factor: float) -> np.ndarray:
    """``x * factor``: a float array of ``x``'s shape."""
    return np.asarray(x, dtype=float) * factor  # {TODO}: the real reference
'''

SUITE = f'''"""Hidden suite of {{slug}}."""

import numpy as np

from grader.suite import graded, mistake, probes

F = "{{slug}}"


@mistake(F, "forgot_the_factor", "Your output equals the input: multiply by factor.")
def _forgot(x, factor):
    return np.asarray(x, dtype=float)


@mistake(F, "divided", "Your output is the input divided by factor: multiply instead.")
def _divided(x, factor):
    return np.asarray(x, dtype=float) / factor


# inputs that tell each mistake apart from the reference, from the other and from slips
PROBES = probes(F, (np.array([3.0, -0.5, 2.0]), -4.0), (np.array([[1.5, 2.0]]), 3.0))


@graded(1, "Every entry is scaled by the same factor.", hint_for=("values",),
        visibility="public")
def test_small(check):
    """A 3-vector scaled by 2.5."""  # {TODO}: real tests, with real inputs
    check.call(F, np.array([1.0, -2.0, 4.0]), 2.5)


@graded(1, "The shape stays the input's.", hint_for=("values", "shape"))
def test_matrix(check):
    """A 4x3 matrix scaled by -0.5."""
    check.call(F, np.arange(12.0).reshape(4, 3), -0.5)
'''

VARIANTS = f"""# Edits of solutions/{{slug}}.py (format: grader/authoring/variants.py).
# {TODO}: the real ones. Each known mistake of the suite is planted by a [[mistake]]
# whose tests must name it; each [[variant]] is a wrong file a learner is likely to write
# that no mistake catalogues: its feedback must name no cause.

[[mistake]]
edits = [["np.asarray(x, dtype=float) * factor", "np.asarray(x, dtype=float)"]]
named = {{{{ small = "forgot_the_factor" }}}}

[[mistake]]
edits = [["np.asarray(x, dtype=float) * factor", "np.asarray(x, dtype=float) / factor"]]
named = {{{{ small = "divided" }}}}

[[variant]]
name = "factor_added"
edits = [["np.asarray(x, dtype=float) * factor", "np.asarray(x, dtype=float) + factor"]]
fails = {{{{ small = "values" }}}}

[[variant]]
name = "factor_squared"
edits = [["np.asarray(x, dtype=float) * factor", "np.asarray(x, dtype=float) * factor ** 2"]]
fails = {{{{ small = "values", matrix = "values" }}}}

[[variant]]
name = "flattened"
edits = [["np.asarray(x, dtype=float) * factor", "np.ravel(x) * factor"]]
fails = {{{{ matrix = "shape" }}}}

[[variant]]
name = "rounded_down"
edits = [["np.asarray(x, dtype=float) * factor", "np.floor(np.asarray(x, dtype=float) * factor)"]]
fails = {{{{ small = "values" }}}}

[[variant]]
name = "sign_of_factor_dropped"
edits = [["np.asarray(x, dtype=float) * factor", "np.asarray(x, dtype=float) * abs(factor)"]]
fails = {{{{ matrix = "values" }}}}
"""

ENTRY = f"""
[[exercise]]
slug = "{{slug}}"
title = "{{title}}"
difficulty = "easy"
tags = ["numpy"]
points = 2
rtol = 1e-7
atol = 1e-10
functions = ["{{slug}}"]
summary = "{TODO}: one line on what the learner computes and why it matters."
hints = [
  "{TODO}: the idea.",
  "{TODO}: the next step.",
  "{TODO}: the last step, almost the answer.",
]
"""

SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


class ScaffoldError(ValueError):
    """The exercise cannot be made: one sentence says why."""


def new_exercise(slug: str, title: str | None = None) -> list[Path]:
    """Write the files of exercise ``slug`` and append its index entry; return the files."""
    if not SLUG.match(slug):
        raise ScaffoldError(f"{slug!r} is not a valid exercise name: use lower case letters, "
                            "digits and underscores, starting with a letter")
    if slug in catalog.load():
        raise ScaffoldError(f"the pack already has an exercise {slug!r}")
    title = title or slug.replace("_", " ").capitalize()
    ex = catalog.Exercise(slug=slug, title=title, difficulty="easy", tags=("numpy",),
                          points=2, rtol=0, atol=0, hints=())
    files = {ex.statement: STATEMENT, ex.stub: STUB, ex.working_copy: STUB,
             ex.solution: REFERENCE, ex.variants: VARIANTS, ex.suite: SUITE}
    taken = [p for p in files if p.exists()]
    if taken:
        raise ScaffoldError(f"{taken[0]} exists already: remove it or choose another name")
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(slug=slug, title=title))
    with catalog.INDEX.open("a") as index:
        index.write(ENTRY.format(slug=slug, title=title))
    catalog.load.cache_clear()
    return list(files)
