"""``grade pack check --grade``: the rules that need a grading session.

One session of the engine (per process: ``--jobs``) grades, for every exercise checked: the
reference, the stub, each declared base, each declared variant (``solutions/<slug>.variants
.toml``) and the trivial answers (``trivial.py``), as the real grader grades a learner's file (a
worker runs it, the hidden suites decide). Submission ``i`` holds the ``i``-th file of every
exercise that has one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from grader import catalog
from grader.authoring import advice, calls, golden, mutants, shortcuts, trivial, variants
from grader.authoring.check import Problem
from grader.authoring.judged import Graded, no_grader_error
from grader.judge import confirm
from grader.results import ExerciseResult, SubmissionResult, from_dict

GRADED_RULES = ("reference-full-marks", "no-grader-error", "base-full-marks",
                "mistake-named", "variant-no-cause", "trivial-scores-nothing",
                "mistakes-separated", "golden-output", "shortcut-scores-nothing",
                "advice-preconditions", "confirm-table",
                "mutants-killed", "mutants-no-false-cause")


def _full_marks(rule: str, what: str, fix: str, unimplemented: tuple[str, ...] = ()):
    """Every test passes, but those that stop at a function of ``unimplemented``."""
    def judge(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
        for t in result.tests:
            if not t.passed and not (unimplemented and "not implemented yet" in t.message):
                yield f"{what} fails {t.name}: {t.message}", fix, rule
    return judge


def _named(v: variants.Variant):
    def judge(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
        yield from no_grader_error(result)
        tests = {t.name: t for t in result.tests}
        for test, mistake in v.named.items():
            t = tests.get(test)
            if t is None:
                yield (f"mistake {v.name}: the suite has no test {test!r}",
                       "name a test of the suite in `named`", "mistake-named")
            elif t.mistake != mistake:
                got = f"names {t.mistake}" if t.mistake else (
                    "passes" if t.passed else f"names no mistake ({t.message[:80]})")
                yield (f"mistake {v.name}: {test} {got}, not {mistake}",
                       "make the mistake's signature match this file on the test's inputs, or "
                       "add a probe that tells it apart", "mistake-named")
        for t in result.tests:
            if t.mistake and (t.hint or t.kind_hint):
                yield (f"mistake {v.name}: {t.name} shows a hint beside the named cause "
                       f"{t.mistake}", "a named cause stands alone (engine/verdict.py)",
                       "mistake-named")
    return judge


def _uncatalogued(v: variants.Variant):
    def judge(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
        yield from no_grader_error(result)
        tests = {t.name: t for t in result.tests}
        for t in result.tests:
            if t.mistake:
                yield (f"variant {v.name}: {t.name} names the mistake {t.mistake}, which this "
                       "file does not make", "make the mistake's signature stricter, or add a "
                       "probe its suite runs to confirm it", "variant-no-cause")
        for test, kind in v.fails.items():
            t = tests.get(test)
            if t is None or t.passed or t.kind != kind:
                got = ("no such test" if t is None else "passes" if t.passed
                       else f"fails with kind {t.kind}")
                yield (f"variant {v.name}: {test} should fail with kind {kind}, but {got}",
                       "fix `fails` in the declaration, or the suite", "variant-no-cause")
    return judge


def _earns_nothing(what: str, fix: str, rule: str, format_only: set[str],
                   tests: frozenset[str] | None = None):
    """A file that must score nothing (``what`` it is), on ``tests`` (None: every test) but
    the entry's ``format_only``."""
    def judge(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
        yield from no_grader_error(result)
        for t in result.tests:
            if t.score > 0 and t.name not in format_only and (tests is None or t.name in tests):
                yield f"{what} earns {t.score:g} point(s) on {t.name}", fix, rule
    return judge


def _scores_nothing(family: str, format_only: set[str]):
    return _earns_nothing(
        f"the trivial answer '{family}' ({trivial.FAMILIES[family]})",
        "make the test depend on a value only real work gives (inputs whose answer is not 0, "
        "a property that needs every parameter), or list it in the entry's format_only and "
        "say so in the statement", "trivial-scores-nothing", format_only)


def _shortcut_scores_nothing(shortcut: shortcuts.Shortcut, format_only: set[str]):
    return _earns_nothing(
        f"the shortcut '{shortcut.label}' ({shortcut.what})",
        "make the test call the function where that shortcut is wrong (other values of each "
        "parameter, inputs no public test shows), or check a value only the work gives; or "
        "list it in the entry's format_only and say so in the statement",
        "shortcut-scores-nothing", format_only, shortcut.tests)


IGNORED_SAMPLE = 2  # "a parameter ignored" shortcut files per exercise, by default


def files_to_grade(slugs: list[str], recorded: dict[str, list[calls.Call]] | None = None,
                   ignored: int | None = IGNORED_SAMPLE,
                   mutated: int | None = mutants.DEFAULT_SAMPLE) -> dict[str, list[Graded]]:
    """Per exercise, every file the checker grades, in order; ``recorded``: the calls each
    suite makes (``calls.record``, recorded here when not given); ``ignored``: how many of
    the "a parameter ignored" shortcut files of each exercise (a seeded sample; None: all);
    ``mutated``: how many generated mutants of each (``mutants.py``; None: all)."""
    from grader.engine.plugin import load_reference

    recorded = calls.record(slugs) if recorded is None else recorded
    out: dict[str, list[Graded]] = {}
    for slug in slugs:
        ex = catalog.get(slug)
        reference = ex.solution.read_text()
        found = [Graded(slug, "reference", reference, ex.solution, _full_marks(
                     "reference-full-marks", "the reference", "fix the reference or the test")),
                 Graded(slug, "stub", ex.stub.read_text(), ex.stub, no_grader_error)]
        try:
            declared = variants.load(slug)
        except variants.EditError:
            declared = variants.Declared((), ())   # the static rule edits-apply reports it
        path = variants.path_of(slug)
        bases = {(v.base_edits, v.append, v.unimplemented)
                 for v in (*declared.mistakes, *declared.uncatalogued) if v.base_edits or v.append}
        for n, (edits, append, unimplemented) in enumerate(sorted(bases)):
            try:
                src = variants.apply_edits(reference, edits) + append
            except variants.EditError:
                continue
            found.append(Graded(slug, f"base {n}", src, path, _full_marks(
                "base-full-marks", "a base (a right file the variants start from)",
                "a base must score full marks (but where it declares `unimplemented`): fix "
                "its edits", unimplemented)))
        kept = golden.shown(slug) if declared.mistakes else None
        for v in (*declared.mistakes, *declared.uncatalogued):
            try:
                src = v.source(reference)
            except variants.EditError:
                continue
            found.append(Graded(slug, v.name, src, path,
                                _named(v) if v.catalogued else _uncatalogued(v), v,
                                golden=v == kept))
        for family in trivial.FAMILIES:
            found.append(Graded(slug, f"trivial {family}", trivial.trivial_source(
                reference, ex.functions, family), ex.solution,
                _scores_nothing(family, set(ex.format_only))))
        for shortcut in shortcuts.sampled(shortcuts.shortcuts(
                reference, load_reference(slug), ex.functions, recorded[slug]), ignored, slug):
            found.append(Graded(slug, f"shortcut {shortcut.label}", shortcut.source,
                                ex.solution, _shortcut_scores_nothing(shortcut,
                                                                      set(ex.format_only))))
        out[slug] = found
    mutants.add_to(out, recorded, mutated)  # each exercise's sampled mutants
    return out


def grade_sources(sources: dict[str, list[str]]) -> list[dict[str, Any] | str]:
    """Grade every source in one session of the engine: submission ``i`` holds the ``i``-th
    source of every exercise that has one. Each submission's ``SubmissionResult.to_dict()``,
    or the one line of why it could not be graded (plain data: a child process returns it)."""
    from grader.engine.runner import Job, grade_each

    slugs = [s for s in sources if sources[s]]
    jobs = []
    with tempfile.TemporaryDirectory(prefix="grade-pack-check-") as tmp:
        for i in range(max((len(v) for v in sources.values()), default=0)):
            folder = Path(tmp) / f"submission-{i}"
            folder.mkdir()
            paths: dict[str, Path | None] = {}
            for slug in slugs:
                if i < len(sources[slug]):
                    paths[slug] = folder / f"{slug}.py"
                    paths[slug].write_text(sources[slug][i])
            jobs.append(Job(paths, f"pack-check-{i}"))
        outcomes: list[SubmissionResult | Exception] = []
        grade_each(slugs, jobs, lambda job, outcome: outcomes.append(outcome))
    return [o.to_dict() if isinstance(o, SubmissionResult) else f"{type(o).__name__}: {o}"
            for o in outcomes]


def grade_files(files: dict[str, list[Graded]], jobs: int = 1,
                ) -> Iterator[tuple[Graded, ExerciseResult | str]]:
    """Grade every file, each with its result (or why it could not be graded). With ``jobs``
    > 1, file ``i`` of each exercise goes to process ``i % jobs``: files of one exercise cost
    alike, so the processes finish together."""
    parts = [{slug: found[k::jobs] for slug, found in files.items()} for k in range(jobs)]
    sources = [{slug: [g.source for g in found] for slug, found in part.items()}
               for part in parts]
    if jobs == 1:
        outcomes = [grade_sources(sources[0])]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            outcomes = list(pool.map(grade_sources, sources))
    for part, graded in zip(parts, outcomes):
        for i, outcome in enumerate(graded):
            picked = {slug: found[i] for slug, found in part.items() if i < len(found)}
            if isinstance(outcome, str):
                for g in picked.values():
                    yield g, outcome
                continue
            for ex in from_dict(outcome).exercises:
                yield picked[ex.exercise], ex


def grade_rules(slugs: list[str], jobs: int = 1, update_golden: bool = False,
                ignored: int | None = IGNORED_SAMPLE,
                mutated: int | None = mutants.DEFAULT_SAMPLE) -> list[Problem]:
    """Every graded rule over ``slugs``: one grading session per process of ``jobs``;
    ``update_golden`` rewrites the golden outputs (and the ``confirm`` tables) instead of
    comparing them; ``ignored`` and ``mutated``: the "a parameter ignored" shortcuts and the
    mutants graded per exercise (``files_to_grade``)."""
    from grader.authoring.separation import separation_problems

    recorded = calls.record(slugs)
    if update_golden:  # (first: the files below are graded with the new tables)
        for slug in slugs:
            confirm.path_of(slug).write_text(calls.table(slug, recorded[slug]).to_json())
    return [p for slug in slugs for p in separation_problems(slug)] + [
        p for slug in slugs for p in table_problems(slug, recorded[slug])] + judge(
        grade_files(files_to_grade(slugs, recorded, ignored, mutated), jobs), update_golden)


def table_problems(slug: str, recorded: list[calls.Call] | None = None) -> Iterator[Problem]:
    """``confirm-table``: the suite's ``confirm.Table`` is there, made for the suite as it is
    (else no test's points are gated: a shortcut would keep them), and lists the counted calls
    the suite makes now (``recorded``, where given: a table whose calls differ gates the wrong
    ones)."""
    path = confirm.path_of(slug)
    fix = ("rewrite it: grade pack check SLUG --grade --update-golden (the calls the suite "
           "makes and which values change them)")
    stored = confirm.current(slug)
    if stored is None:
        yield Problem(slug, path, 1, f"{path.name} is missing or older than the suite and the "
                      "reference", fix, "confirm-table")
        return
    now = stored.places if recorded is None else calls.places_of(slug, recorded)
    if now != stored.places:
        differ = next((f"{a.test} call {a.index}" for a, b in zip(now, stored.places)
                       if a != b), "the number of calls")
        yield Problem(slug, path, 1, f"{path.name} does not list the calls the suite makes now "
                      f"(first difference: {differ})", fix, "confirm-table")


def judge(graded: Iterable[tuple[Graded, ExerciseResult | str]],
          update_golden: bool = False) -> list[Problem]:
    """The problems the graded files' results show, each by its file's rule."""
    problems: list[Problem] = []
    for g, result in graded:
        if isinstance(result, str):
            problems.append(Problem(g.slug, g.path, 1, f"{g.label}: could not be graded: "
                                    f"{result}", "see `grade doctor`", "no-grader-error"))
            continue
        for what, fix, rule in g.judge(result):
            problems.append(Problem(g.slug, g.path, 1, what, fix, rule))
        for test, what in advice.broken(result):
            problems.append(Problem(g.slug, g.path, 1, f"{g.label}: {test}: {what}",
                                    "give that advice only where its condition holds "
                                    "(grader/authoring/advice.py says which)", advice.RULE))
        if g.golden:
            for what, fix in golden.check(g.slug, g.label, result, update_golden):
                problems.append(Problem(g.slug, golden.path_of(g.slug), 1, what, fix,
                                        golden.RULE))
    return problems
