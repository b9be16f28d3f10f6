"""``grade pack new SLUG``: every file of a new exercise, and its entry at the end of the
exercise order, so that ``grade pack check SLUG`` runs at once and lists what is left to
write (the ``TODO(pack new)`` markers).

The scaffold is a complete, small exercise, a sliding-window sum (``SLUG(x, k)``: the sum of
each window of ``k`` consecutive values of ``x``) with its statement, stub, reference, suite,
known mistakes and wrong files, so that the engine grades it from the first minute. Each file
(the learner's working copy, a copy of the stub, included) and the index entry carry one marker
line (``TODO(pack new): ...``, a comment in code and TOML): ``grade pack check`` reports each,
saying what to write there, until the line is deleted.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader import catalog

from .check import TODO

STATEMENT = """# {title}

{todo}: the scaffold's example (a sliding-window sum); delete this line once replaced

A 1-D convolution with a kernel of ones is a moving sum: each output is the sum of a window of
`k` consecutive inputs, and the window slides by one value at a time. Counting the windows
right is the whole difficulty: an array of `n` values has `n - k + 1` of them, the last one
ending at the array's last value.

## What to write

`{slug}(x, k)` returns the sums of every window of `k` consecutive values of `x`:

- `x`: a 1-D float array of length `n >= 1`; `k`: an int with `1 <= k <= n`;
- the result: a float array of length `n - k + 1` whose entry `i` is
  `x[i] + x[i + 1] + ... + x[i + k - 1]`.

For `x = [1, 2, 3, 4]` and `k = 2` it is `[3, 5, 7]`.

## The interview question

How many outputs does a "valid" convolution of `n` values with a kernel of length `k` have,
and why is a convolution with a kernel of ones a moving sum?
"""

STUB = '''"""{title}."""

import numpy as np


def {slug}(x: np.ndarray, k: int) -> np.ndarray:
    """The sums of every window of ``k`` consecutive values of ``x``.

    ``x`` is a 1-D float array of length ``n >= 1`` and ``k`` an int with ``1 <= k <= n``;
    the result is a float array of length ``n - k + 1`` whose entry ``i`` is
    ``x[i] + x[i + 1] + ... + x[i + k - 1]``.
    """
    # {todo}: the scaffold's example (a sliding-window sum); delete this line once replaced
    raise NotImplementedError
'''

REFERENCE = '''"""Reference solution of {slug}."""

import numpy as np


def {slug}(x: np.ndarray, k: int) -> np.ndarray:
    """The sums of every window of ``k`` consecutive values of ``x`` (``len(x) - k + 1``)."""
    # {todo}: the scaffold's example (a sliding-window sum); delete this line once replaced
    x = np.asarray(x, dtype=float)
    windows = np.lib.stride_tricks.sliding_window_view(x, k)
    return windows.sum(axis=1)
'''

SUITE = '''"""Hidden suite of {slug}."""

import numpy as np

from grader.suite import graded, mistake, probes, reference

F = "{slug}"
# {todo}: the scaffold's example (a sliding-window sum); delete this line once replaced


@mistake(F, "window_mean", "Your output is each window's mean: sum its k values, do not "
         "divide by k.")
def _window_mean(x, k):
    return reference(F).{slug}(x, k) / k


@mistake(F, "last_window_missing", "Your output stops one window early: the last window ends "
         "at x[-1], so there are len(x) - k + 1 windows.")
def _last_window_missing(x, k):
    return reference(F).{slug}(x, k)[:-1]


# inputs that tell each mistake apart from the reference, from the other and from slips
PROBES = probes(F, (np.array([3.0, -0.5, 2.0, 1.25, -4.0]), 3),
                (np.array([1.5, 2.0, -1.0, 0.5, 4.0, -2.5]), 4))


@graded(1, "Window i holds x[i], ..., x[i + k - 1]: there are len(x) - k + 1 windows.",
        hint_for=("values", "shape"), visibility="public")
def test_small(check):
    """Windows of 2 over four values."""
    check.call(F, np.array([1.0, 2.0, 3.0, 4.0]), 2)


@graded(1, "Sum each window's k values, as floats.", hint_for=("values", "shape"))
def test_random(check):
    """Windows of 3 over seven random values."""
    check.call(F, np.random.default_rng(0).normal(size=7), 3)


@graded(1, "When k is len(x) there is one window: the whole array.", hint_for=("values", "shape"))
def test_one_window(check):
    """One window: k is the array's length."""
    check.call(F, np.random.default_rng(1).normal(size=5), 5)
'''

VARIANTS = """# Edits of solutions/{slug}.py (format: grader/authoring/variants.py).
# {todo}: the scaffold's example (a sliding-window sum); delete this line once replaced
# Each known mistake of the suite is planted by a [[mistake]] whose tests must name it; each
# [[variant]] is a wrong file a learner is likely to write that no mistake catalogues: its
# feedback must name no cause.

[[mistake]]
edits = [["windows.sum(axis=1)", "windows.mean(axis=1)"]]
named = {{ small = "window_mean", random = "window_mean", one_window = "window_mean" }}

[[mistake]]
edits = [["return windows.sum(axis=1)", "return windows.sum(axis=1)[:-1]"]]
named = {{ small = "last_window_missing", random = "last_window_missing" }}

[[variant]]
name = "window_one_too_wide"
edits = [["sliding_window_view(x, k)", "sliding_window_view(x, k + 1)"]]
fails = {{ small = "shape", random = "shape" }}

[[variant]]
name = "first_value_left_out"
edits = [["windows.sum(axis=1)", "windows[:, 1:].sum(axis=1)"]]
fails = {{ small = "values", random = "values", one_window = "values" }}

[[variant]]
name = "running_sum_from_the_start"
edits = [["windows.sum(axis=1)", "np.cumsum(x)[k - 1:]"]]
fails = {{ small = "values", random = "values" }}

[[variant]]
name = "whole_array_summed"
edits = [["windows.sum(axis=1)", "np.full(len(windows), x.sum())"]]
fails = {{ small = "values", random = "values" }}

[[variant]]
name = "largest_value_of_each_window"
edits = [["windows.sum(axis=1)", "windows.max(axis=1)"]]
fails = {{ small = "values", random = "values", one_window = "values" }}
"""

ENTRY = """
[[exercise]]
slug = "{slug}"
title = "{title}"
# {todo}: the scaffold's example (a sliding-window sum); delete this line once replaced
difficulty = "easy"
tags = ["numpy"]
points = 3
rtol = 1e-7
atol = 1e-10
functions = ["{slug}"]
summary = "Sums over a sliding window: the 1-D convolution with a kernel of ones."
hints = [
{hints}
]
"""
HINTS = (
    "Window i holds x[i], ..., x[i + k - 1]; the last one ends at x[-1], so there are "
    "len(x) - k + 1 windows.",
    "A loop over i in range(len(x) - k + 1) is right; numpy gives every window at once: "
    "np.lib.stride_tricks.sliding_window_view(x, k) is the (len(x) - k + 1, k) array of windows.",
    "Sum that array of windows along its last axis (axis=1), as floats.",
)

SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


class ScaffoldError(ValueError):
    """The exercise cannot be made: one sentence says why."""


def new_exercise(slug: str, title: str | None = None) -> list[Path]:
    """Write the files of exercise ``slug`` (statement, stub, working copy, reference,
    variants, suite: none may exist yet) and append its index entry; return the files."""
    if not SLUG.match(slug):
        raise ScaffoldError(f"{slug!r} is not a valid exercise name: use lower case letters, "
                            "digits and underscores, starting with a letter")
    if slug in catalog.load():
        raise ScaffoldError(f"the pack already has an exercise {slug!r}")
    title = title or slug.replace("_", " ").capitalize()
    ex = catalog.Exercise(slug=slug, title=title, difficulty="easy", tags=("numpy",),
                          points=3, rtol=0, atol=0, hints=())
    files = {ex.statement: STATEMENT, ex.stub: STUB, ex.working_copy: STUB,
             ex.solution: REFERENCE, ex.variants: VARIANTS, ex.suite: SUITE}
    taken = [p for p in files if p.exists()]
    if taken:
        raise ScaffoldError(f"{taken[0]} exists already: remove it or choose another name")
    for path, template in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(slug=slug, title=title, todo=TODO))
    with catalog.INDEX.open("a") as index:
        index.write(ENTRY.format(slug=slug, title=title, todo=TODO,
                                 hints="\n".join(f'  "{hint}",' for hint in HINTS)))
    catalog.load.cache_clear()
    return list(files)
