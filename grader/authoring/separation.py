"""``mistakes-separated``: a known mistake is named only when it is the explanation.

A learner's wrong result that matches a mistake on a test's input must also match it on the
suite's probe calls of that function (``suite.probes``) wherever the mistake differs from the
reference, before the mistake is named. So, for each function with known mistakes, on its
probes (run here, in the checker's process: references and mistakes are trusted code):

- the function declares probes, or says why it has none (``probes(F, none="...")``);
- each mistake differs from the reference on some probe (else the probes confirm nothing);
- no two mistakes agree on every probe (a learner making one would be told the other);
- no generic slip of the reference's result (a transpose, a roll or flip by one along an axis,
  a factor of 2 or 1/2, a sign, an offset of 1) agrees with a mistake wherever the mistake
  differs from the reference (a learner making that slip would be told the mistake).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from grader import catalog
from grader.authoring.check import Problem, _line_of
from grader.engine.plugin import load_reference
from grader.judge.check import _run_here
from grader.judge.compare import compare
from grader.suite import Probes, mistakes_in

RULE = "mistakes-separated"


def _slips(value: Any) -> Iterator[tuple[str, Any]]:
    """Generic slips of a result: (what, the slipped result)."""
    try:
        y = np.asarray(value)
    except Exception:  # noqa: BLE001 - an object that is not array-like: no slips
        return
    if y.dtype.kind not in "biuf" or y.dtype == object:
        return
    if y.dtype.kind == "b":
        yield "negated", ~y
    else:
        yield "doubled", y * 2.0
        yield "halved", y * 0.5
        yield "with its sign flipped", -y
        yield "plus one", y + 1.0
        yield "minus one", y - 1.0
    if y.ndim == 2 and y.shape[0] == y.shape[1]:
        yield "transposed", y.T
    for axis in range(y.ndim):
        if y.shape[axis] > 1:
            yield f"rolled by one along axis {axis}", np.roll(y, 1, axis=axis)
            yield f"rolled back by one along axis {axis}", np.roll(y, -1, axis=axis)
            yield f"flipped along axis {axis}", np.flip(y, axis=axis)


# The names ``_slips`` gives (N: an axis), for ``@mistake(..., slip=...)``.
SLIP_NAMES = ("negated", "doubled", "halved", "with its sign flipped", "plus one", "minus one",
              "transposed", "rolled by one along axis N", "rolled back by one along axis N",
              "flipped along axis N")


def slip_names(slip: str | tuple[str, ...]) -> set[str]:
    """The slips a mistake declares it is: one name, or a tuple of them (a mistake that is
    several slips at once: a swap of two values is a roll and a flip along an axis of 2)."""
    return {n for n in ((slip,) if isinstance(slip, str) else tuple(slip)) if n}


def _same(a: Any, b: Any) -> bool:
    try:
        return compare(a, b, rtol=1e-9, atol=1e-12).ok
    except Exception:  # noqa: BLE001 - values that cannot be compared are different
        return False


def _outputs(fn: Callable[..., Any], calls: tuple[tuple[Any, ...], ...]) -> list[Any]:
    out = []
    for args in calls:
        try:
            out.append(_run_here(fn, args, {}))
        except Exception as exc:  # noqa: BLE001 - raising is an output too
            out.append(f"raises {type(exc).__name__}")
    return out


def separation_problems(slug: str) -> list[Problem]:
    """Every problem of ``mistakes-separated`` in exercise ``slug``."""
    suite_path = catalog.get(slug).suite
    module = importlib.import_module(f"grader.suites.test_{slug}")
    reference = load_reference(slug)
    catalogue = mistakes_in(vars(module))
    excused = {v.func for v in vars(module).values() if isinstance(v, Probes) and v.none}
    by_func: dict[str, list[Any]] = {}
    for m in catalogue:
        by_func.setdefault(m.func, []).append(m)
    problems: list[Problem] = []

    def bad(name: str, what: str, fix: str) -> None:
        problems.append(Problem(slug, suite_path, _line_of(suite_path, f'"{name}"'), what, fix,
                                RULE))

    for func, mistakes in by_func.items():
        if not callable(getattr(reference, func, None)) or func in excused:
            continue  # a property the suite checks itself, or probes excused with a reason
        calls = catalogue.probes.get(func, ())
        if not calls:
            bad(mistakes[0].name, f"{func} has {len(mistakes)} known mistake(s) and no probes",
                f"declare probes({func!r}, ...) with inputs that tell its mistakes apart "
                "(sizes that break ties, grids wider than any roll, values away from 0 and "
                "1), or probes(..., none=\"why\")")
            continue
        right = _outputs(getattr(reference, func), calls)
        wrong = {m.name: _outputs(m.fn, calls) for m in mistakes}
        for name, outs in wrong.items():
            differs = [i for i in range(len(calls)) if not _same(outs[i], right[i])]
            if not differs:
                bad(name, f"mistake {name} gives the reference's result on every probe of "
                    f"{func}: the probes confirm nothing", "add a probe where it shows")
                continue
            for other, theirs in wrong.items():
                if other < name and all(_same(outs[i], theirs[i]) for i in range(len(calls))):
                    bad(name, f"mistakes {other} and {name} agree on every probe of {func}",
                        "add a probe where they differ")
            slips: dict[str, list[bool]] = {}
            for i in differs:
                for what, slipped in _slips(right[i]):
                    slips.setdefault(what, []).append(_same(outs[i], slipped))
            declared = slip_names(next(m.slip for m in mistakes if m.name == name))
            for what, hits in slips.items():
                if what not in declared and len(hits) == len(differs) and all(hits):
                    bad(name, f"mistake {name} is the reference's result {what} on every probe "
                        f"of {func} where it shows", "add a probe where the two differ (a "
                        "slip of that kind must not be told it is this mistake); or, if the "
                        "mistake is that slip on every input, declare it: @mistake(..., "
                        f"slip={what!r}) (several at once: a tuple; the names: "
                        f"{', '.join(SLIP_NAMES)})")
    return problems
