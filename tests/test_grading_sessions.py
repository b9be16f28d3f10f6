"""Suites collected once per process: one pytest session grades submission after submission,
in `grade_each` and in each process of `grade bulk`'s pool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader import catalog
from grader.bulk import runner as bulk
from grader.bulk.layouts import Submission
from grader.bulk.serve import MAX_DEATHS
from grader.engine import runner
from grader.engine.runner import Job, grade, grade_each
from grader.results import SubmissionResult

SLUGS = ["grid_local_mask", "attention_rollout", "compute_frontier"]


def _files(kind: str) -> dict[str, Path | None]:
    solutions = {s: catalog.get(s).solution for s in SLUGS}
    if kind == "solutions":
        return solutions
    if kind == "stubs":
        return {s: catalog.get(s).stub for s in SLUGS}
    # a stub, a solution and an exercise not submitted
    return {**solutions, "grid_local_mask": catalog.get("grid_local_mask").stub,
            "compute_frontier": None}


def _summary(result: SubmissionResult) -> list[tuple[str, str, list[tuple[str, str, float]]]]:
    return [(e.exercise, e.status, [(t.name, t.status, t.score) for t in e.tests])
            for e in result.exercises]


def test_one_session_grades_each_submission_as_if_alone(monkeypatch):
    kinds = ["solutions", "stubs", "mixed", "solutions", "mixed"]
    alone = {kind: _summary(grade(_files(kind), submission=kind)) for kind in set(kinds)}

    sessions = []
    real_main = runner.pytest.main
    monkeypatch.setattr(runner.pytest, "main",
                        lambda *a, **k: (sessions.append(a), real_main(*a, **k))[1])
    outcomes: list[tuple[str, SubmissionResult | Exception]] = []
    grade_each(SLUGS, [Job(_files(kind), kind) for kind in kinds],
               lambda job, outcome: outcomes.append((job.submission, outcome)))

    assert len(sessions) == 1  # collected once for the five submissions
    assert [sub for sub, _ in outcomes] == kinds
    for kind, outcome in outcomes:
        assert isinstance(outcome, SubmissionResult)
        # no state leaks from one submission to the next (import faults, modules loaded,
        # the sizes behind the "fails only on large inputs" hint)
        assert _summary(outcome) == alone[kind], kind
    assert outcomes[0][1].score == outcomes[0][1].max_score > 0
    assert outcomes[1][1].score == 0


def _subs(tmp_path: Path, ids: list[str]) -> list[Submission]:
    return [Submission(id=i, files={"grid_local_mask": catalog.get("grid_local_mask").solution},
                       notes=[], source=str(tmp_path)) for i in ids]


def test_a_pool_process_that_dies_loses_only_its_submission(tmp_path, monkeypatch):
    """A dead pool process is replaced and its submission graded again by a fresh one; one
    that ends MAX_DEATHS processes is not graded (never retried forever)."""
    real = runner._SessionDriver._grade
    seen = tmp_path / "seen"
    seen.mkdir()

    def dies(self, job):  # the pool processes are forked: they inherit this patch
        mark = seen / job.submission  # counted in files: each process is a fork
        mark.write_text(str(int(mark.read_text()) + 1 if mark.exists() else 1))
        if job.submission == "b" or (job.submission == "d" and mark.read_text() == "1"):
            os._exit(7)
        return real(self, job)

    monkeypatch.setattr(runner._SessionDriver, "_grade", dies)
    outcome = bulk.grade_all(_subs(tmp_path, ["a", "b", "c", "d", "e"]),
                             exercises=["grid_local_mask"], device="cpu", out=tmp_path / "out",
                             workers=2, force=True)
    assert outcome.ended == [("b", f"it ended {MAX_DEATHS} grading processes (the "
                                   "last: the grading process died (exit code 7))")]
    assert not outcome.failures
    assert (seen / "b").read_text() == str(MAX_DEATHS)
    assert (seen / "d").read_text() == "2"  # died once, graded by the next process
    assert outcome.graded == 4 and [r.submission for r in outcome.results] == \
        ["a", "c", "d", "e"]
    assert all(r.score == r.max_score for r in outcome.results)
    assert not (tmp_path / "out" / "b").exists()


def test_suites_that_cannot_run_make_every_submission_ungradable(tmp_path, monkeypatch):
    monkeypatch.setattr(runner.pytest, "main", lambda *a, **k: pytest.ExitCode.INTERNAL_ERROR)
    outcome = bulk.grade_all(_subs(tmp_path, ["a", "b", "c"]), exercises=["grid_local_mask"],
                             device="cpu", out=tmp_path / "out", workers=2, force=True)
    assert outcome.graded == 0
    assert sorted(outcome.failures) == [
        (i, "RuntimeError: the hidden suites could not run (pytest exit 3)")
        for i in ("a", "b", "c")]


def test_a_ctrl_c_swallowed_where_it_landed_still_ends_the_run(tmp_path):
    """Ctrl-C raises KeyboardInterrupt wherever the main thread is; where Python swallows
    it (a garbage-collector callback, as Dask's was seen to, or a ``__del__``) the run still
    ends after the answer at hand and says it was interrupted (it was seen finishing with exit
    0). Here the interrupt lands in a callback that swallows it, after the first answer."""
    import signal

    def swallowing(sub_id: str, finished: bool) -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            pass  # as `Exception ignored in: <gc callback>` does

    outcome = bulk.grade_all(_subs(tmp_path, ["a", "b", "c", "d", "e", "f"]),
                             exercises=["grid_local_mask"], device="cpu",
                             out=tmp_path / "out", workers=1, force=True, on_done=swallowing)
    assert outcome.interrupted
    assert outcome.graded < 6  # stopped after the first answer, not at the end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_ctrl_c_landing_in_a_del_prints_no_traceback(tmp_path, capfd):
    """Raised in a ``__del__`` the interrupt would be swallowed with "Exception ignored ...
    Traceback" on stderr (seen from Dask's ``Future.__del__``): there it is only remembered,
    and the run stops at its next answer."""
    import signal

    class Finalised:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)

    def dropping(sub_id: str, finished: bool) -> None:
        Finalised()  # deleted at once: its __del__ runs here

    outcome = bulk.grade_all(_subs(tmp_path, ["a", "b", "c", "d"]),
                             exercises=["grid_local_mask"], device="cpu",
                             out=tmp_path / "out", workers=1, force=True, on_done=dropping)
    assert outcome.interrupted and outcome.graded < 4
    assert "Traceback" not in capfd.readouterr().err
