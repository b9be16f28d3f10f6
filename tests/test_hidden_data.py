"""Hidden data is unreadable from a worker in every form the grader is installed in.

A learner file searches every path it can read for lines of the hidden suites and the
references, expected-values cache entries and results files (``hidden_search.py``): graded
from this checkout (an editable install) it finds nothing, while the same search run here
finds the suites (the control: the search would see a leak).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import set_up_bundle
from hidden_search import findings, search, searcher

from grader import catalog
from grader.engine.policy import Policy
from grader.engine.runner import grade

GRADE = Path(sys.executable).with_name("grade")


def test_the_search_finds_the_suites_when_unconfined():
    found, read = search(catalog.PACKAGE_DIR)
    assert read > 10
    assert any(Path(p).name == "test_grid_local_mask.py" for p in found), found


def test_a_worker_of_this_checkout_reads_no_hidden_data(tmp_path):
    path = searcher(tmp_path / "sub")
    result = grade({"grid_local_mask": path}, submission="search",
                   policy=Policy(call_timeout_s=120))
    outputs = "\n".join(t.output for t in result.exercises[0].tests)
    leaks, read = findings(outputs)
    assert read > 1000, outputs[:2000]  # it read the interpreter, numpy and torch
    assert leaks == []


# -- installed forms: the Gradescope bundle set up by its own setup.sh (a non-editable
# install, as a wheel's), then the same venv as a Dask worker's install ----------------------

# at the full level every test runs in one worker (one search) and shows what it printed
ASSIGNMENT = """title = "hidden data"
exercises = ["grid_local_mask"]
feedback = "full"

[limits]
call_seconds = 120
"""


def _run(*args, cwd=None, env=None, timeout=600):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """A Gradescope autograder set up by its own setup.sh (as root, like Gradescope): its venv
    holds the grader as installed, not linked (``conftest.set_up_bundle``)."""
    root = set_up_bundle(tmp_path_factory.mktemp("bundle"), ASSIGNMENT)
    (root / "results").mkdir()
    return root


def _installed_suites(root: Path) -> list[Path]:
    return list((root / "venv/lib").glob("python3*/site-packages/grader/suites/test_*.py"))


def test_the_bundle_grades_a_search_and_it_finds_nothing(bundle):
    assert _installed_suites(bundle), "the bundle's venv holds the suites (what is searched for)"
    (bundle / "submission").mkdir()
    searcher(bundle / "submission")
    done = _run("bash", bundle / "source/run_autograder", env={"AUTOGRADER_ROOT": str(bundle)})
    assert done.returncode == 0, done.stderr
    data = json.loads((bundle / "results/results.json").read_text())
    leaks, read = findings("\n".join(t.get("output", "") for t in data["tests"]))
    assert read > 1000, data["tests"][0].get("output", "")[:2000]
    assert leaks == []
    # the control: unconfined, the same search finds the installed suites
    found, _ = search(_installed_suites(bundle)[0].parent)
    assert found


INSTALLED = """
import sys
from pathlib import Path

import grader
from grader.sandbox.process import WorkerProcess
from grader.sandbox.proxy import CallLog, LearnerProxy

assert "site-packages" in grader.__file__, grader.__file__
with WorkerProcess({"grid_local_mask": Path(sys.argv[1])}, budget_s=300) as worker:
    worker.start()
    log = CallLog()
    learner = LearnerProxy(worker, "grid_local_mask", timeout=120, log=log)
    learner.load()
    try:
        learner.grid_local_mask(2, 2, 1)
    except Exception:
        pass
    print(log.text())
"""


def test_the_installed_grader_outside_its_source_finds_nothing(bundle, tmp_path):
    """The grader imported from the venv's site-packages, as a wheel, `pip install .` or a
    Dask worker's `pip install '.[cluster]'` puts it (its grading processes start workers
    through this same sandbox): a worker it starts reads nothing hidden."""
    path = searcher(tmp_path / "sub")
    out = _run(bundle / "venv/bin/python", "-c", INSTALLED, path, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    leaks, read = findings(out.stdout)
    assert read > 1000, out.stdout[:2000]
    assert leaks == []
