"""Promises of the docs that no other test held through the public surface (the `grade`
command, or `grader.engine.runner.grade`): each test quotes its promise and where it is made.
Dask workers and faults, the bulk cache, `--feedback`, `--device auto`, the limits on learner
code, an assignment's `submission_seconds`, the Canvas and Moodle gradebooks, watch mode's `r`
and the interview's clock."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_driver import Session
from conftest import copy_of_this_project, csv_rows, edit_source, interruptible, reference_variant
from test_gradebooks import ASSIGNMENT, ROSTER

from grader import catalog
from grader.engine.runner import grade

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
REF = catalog.get(SLUG).solution.read_text()
WRONG = edit_source(REF, ("return mask", "return ~mask"))  # every value wrong
# each import takes a second: a run stopped after its first submission has more to grade
SLOW_IMPORT = REF + "\nimport time\n\ntime.sleep(1)\n"


def _class(root: Path, sources: dict[str, str]) -> Path:
    """A folder of folders: ``root/<id>/grid_local_mask.py`` for each id."""
    for sid, source in sources.items():
        (root / sid).mkdir(parents=True)
        (root / sid / f"{SLUG}.py").write_text(source)
    return root


def _bulk(class_dir: Path, out: Path, *extra: str, env: dict[str, str] | None = None,
          timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([GRADE, "bulk", str(class_dir), "--out", str(out), "-q", *extra],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _until(ready: Callable[[], bool], proc: subprocess.Popen, what: str,
           timeout: float = 120) -> None:
    """Wait for ``ready()`` while ``proc`` runs (a bound against a hang, not a measure)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def _edit_index(project: Path, key: str, value: str) -> None:
    """Set ``key`` of grid_local_mask's entry in ``project``'s exercise index."""
    index = project / "grader" / "exercises.toml"
    text, n = re.subn(rf'(slug = "{SLUG}"\n(?:(?!\[\[exercise\]\]).*\n)*?{key} = ).*\n',
                      rf"\g<1>{value}\n", index.read_text(), count=1)
    assert n == 1, key
    index.write_text(text)


# -- docs/cluster.md: workers and faults ----------------------------------------------------

# Loaded by every Python process of a run given its folder as PYTHONPATH (the learner's
# workers, `python -I`, excepted): the grading process of whatever grades a submission named
# "always" ends (exit code 7) each time, one named "once" the first time only; each grading
# is counted in a file (each grading process is a process of its own).
DYING_GRADER = '''
import importlib.machinery, os, sys
from pathlib import Path


def _patch(module):
    real = module._SessionDriver._grade

    def grade(self, job):
        mark = Path(os.environ["PROMISE_MARKS"]) / job.submission
        n = int(mark.read_text()) + 1 if mark.exists() else 1
        mark.write_text(str(n))
        if job.submission == "always" or (job.submission == "once" and n == 1):
            os._exit(7)
        return real(self, job)

    module._SessionDriver._grade = grade


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != "grader.engine.runner":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        spec.loader.exec_module = lambda module: (run(module), _patch(module))
        return spec


sys.meta_path.insert(0, _Finder())
'''


def test_a_dask_grading_process_that_dies_is_restarted_and_the_run_says_so(tmp_path):
    """docs/cluster.md, "Workers, GPUs, faults": "a grading process that dies is restarted and
    the submission graded again; a submission that ends 3 grading processes is reported "not
    graded: it ended 3 grading processes" [...] neither is retried forever (exit 3)"."""
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    site, marks = tmp_path / "site", tmp_path / "marks"
    site.mkdir()
    marks.mkdir()
    (site / "sitecustomize.py").write_text(DYING_GRADER)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    klass = _class(tmp_path / "class", {"always": REF, "fine": REF, "once": REF})
    out = tmp_path / "out"
    run = _bulk(klass, out, "--exercises", SLUG, "--scheduler", "local:2",
                env={"PYTHONPATH": path, "PROMISE_MARKS": str(marks)})
    assert run.returncode == 3, run.stderr
    assert "Graded 2, 0 from cache, 1 not graded" in run.stdout
    rows = {r["id"]: r for r in _rows(out / "grades.csv")}
    said = rows["always"]["status"]  # (its exact words: the test below)
    assert said.startswith("not graded: ") and ("it ended 3 grading processes (the last: the "
                                                 "grading process on tls://127.0.0.1:") in said
    assert said.endswith("died while grading it (exit code 7))"), said
    assert "it ended 3 grading processes" in (out / "index.html").read_text()
    assert (rows["once"]["status"], rows["once"]["total"]) == ("graded", "9")
    assert (rows["fine"]["status"], rows["fine"]["total"]) == ("graded", "9")
    # three grading processes ended by "always", and no more; "once" graded by a fresh one:
    # its public round, then its hidden round (a class is graded in two rounds at `graded`)
    assert (marks / "always").read_text() == "3"
    assert (marks / "once").read_text() == "3"


def test_a_submission_that_ends_3_grading_processes_is_reported_in_the_documented_words(
        tmp_path):
    """docs/cluster.md, "Workers, GPUs, faults": "a submission that ends 3 grading processes is
    reported "not graded: it ended 3 grading processes""; docs/teacher.md, `grades.csv`: "the
    status is `graded`, `not graded: <why>` or `pending`". The words come from the code both
    paths share (``bulk/runner.grade_all``): shown here on the local pool, which is quicker."""
    site, marks = tmp_path / "site", tmp_path / "marks"
    site.mkdir()
    marks.mkdir()
    (site / "sitecustomize.py").write_text(DYING_GRADER)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    klass = _class(tmp_path / "class", {"always": REF})
    run = _bulk(klass, tmp_path / "out", "--exercises", SLUG, "--workers", "1",
                env={"PYTHONPATH": path, "PROMISE_MARKS": str(marks)})
    assert run.returncode == 3, run.stderr
    assert (marks / "always").read_text() == "3"
    [row] = _rows(tmp_path / "out" / "grades.csv")
    assert row["status"] == ("not graded: it ended 3 grading processes (the last: the grading "
                             "process died (exit code 7))")


def test_a_late_joining_worker_of_another_pack_version_refuses_its_tasks(dask_procs, tmp_path):
    """docs/cluster.md, "Workers, GPUs, faults": "a worker with another version [...] gets no
    task (a worker that joins later refuses its tasks, which go to the others)". The late
    worker's pack has another reference (every value of the mask inverted): a task it graded
    would score less than 9 in grades.csv."""
    from distributed import Client

    other = tmp_path / "other"
    for part in ("grader", "solutions"):
        shutil.copytree(catalog.PROJECT_DIR / part, other / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (other / "solutions" / f"{SLUG}.py").write_text(WRONG)  # another reference
    klass = _class(tmp_path / "class", {f"s{i}": REF for i in range(6)})
    out = tmp_path / "out"
    good = dask_procs.worker("good")
    dask_procs.wait_for(1)
    grading = subprocess.Popen([GRADE, "bulk", str(klass), "--out", str(out), "--exercises",
                                SLUG, "-q", "--scheduler", dask_procs.address],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with Client(dask_procs.address, timeout=30) as client:
            _until(lambda: any(str(k).startswith("grade-") for keys in
                               client.processing().values() for k in keys),
                   grading, "the run's tasks reached the good worker")
            # the good worker grades nothing until the late one has taken tasks
            os.kill(good.pid, signal.SIGSTOP)
            try:
                dask_procs.worker("late", env={"PYTHONPATH": str(other)})
                client.wait_for_workers(2, timeout=60)
                late = next(a for a, w in client.scheduler_info()["workers"].items()
                            if w["name"] == "late")
                _until(lambda: client.run(lambda dask_worker: dask_worker.state.executed_count,
                                          workers=[late])[late] > 0,
                       grading, "the late worker ran a task")
            finally:
                os.kill(good.pid, signal.SIGCONT)
        stdout, stderr = grading.communicate(timeout=300)
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.wait()
    assert grading.returncode == 0, stderr
    assert "1 Dask worker(s) will grade" in stderr  # the late worker was not checked
    assert "Graded 6, 0 from cache, 0 not graded" in stdout
    assert [(r["id"], r["total"], r["max"], r["status"]) for r in _rows(out / "grades.csv")] \
        == [(f"s{i}", "9", "9", "graded") for i in range(6)]


def test_cluster_workers_grade_at_strict_isolation_whatever_isolation_says(tmp_path):
    """docs/cluster.md, "Workers, GPUs, faults": "a worker [...] that cannot isolate learner
    code strictly, is named with what to install or fix and gets no task [...] with no usable
    worker the command stops (exit 2). Workers grade at `strict` isolation only, whatever
    `--isolation` says." (`GRADER_SECCOMP=0` takes a layer away: `basic`.)"""
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    klass = _class(tmp_path / "class", {"ann": REF})
    basic = {"GRADER_SECCOMP": "0"}
    here = _bulk(klass, tmp_path / "here", "--exercises", SLUG, "--isolation", "auto",
                 env=basic)
    assert here.returncode == 0, here.stderr  # on this machine, auto grades at basic
    level = json.loads((tmp_path / "here" / "ann" / "results.json").read_text())["isolation"]
    assert level["level"] == "basic"
    run = _bulk(klass, tmp_path / "out", "--exercises", SLUG, "--isolation", "auto",
                "--scheduler", "local:1", env=basic)
    assert run.returncode == 2, run.stderr
    assert re.search(r"no worker of local:1 can grade: worker \S+ \(tls://127\.0\.0\.1:\d+\) "
                     r"cannot isolate learner code \([^)]*a seccomp filter[^)]*; see `grade "
                     r"doctor` on that machine\): workers grade at strict isolation only",
                     run.stderr), run.stderr
    assert not (tmp_path / "out" / "ann").exists()


# -- docs/teacher.md, "Grading a class": the cache ------------------------------------------

def test_bulk_regrades_a_changed_submission(tmp_path):
    """docs/teacher.md, "Grading a class": "Results are cached by the hash of the
    submission's files, the exercise pack [...] and the settings"."""
    klass = _class(tmp_path / "class", {"ann": REF, "bob": REF})
    out = tmp_path / "out"
    first = _bulk(klass, out, "--exercises", SLUG)
    assert first.returncode == 0 and "Graded 2, 0 from cache" in first.stdout, first.stderr
    (klass / "bob" / f"{SLUG}.py").write_text(WRONG)
    again = _bulk(klass, out, "--exercises", SLUG)
    assert again.returncode == 0 and "Graded 1, 1 from cache" in again.stdout, again.stderr
    totals = {r["id"]: float(r["total"]) for r in _rows(out / "grades.csv")}
    assert totals["ann"] == 9 and totals["bob"] < 9


def test_bulk_regrades_when_the_pack_or_a_setting_changes(tmp_path):
    """docs/teacher.md, "Grading a class": "Results are cached by the hash of the
    submission's files, the exercise pack (suites, references, tolerances) and the settings".
    The pack: this project copied (the same pack: its cache holds), then one tolerance
    changed there."""
    klass = _class(tmp_path / "class", {"ann": REF, "bob": WRONG})
    out = tmp_path / "out"
    assert "Graded 2, 0 from cache" in _bulk(klass, out, "--exercises", SLUG).stdout
    for setting in (["--time-budget", "600"], ["--feedback", "full"]):
        changed = _bulk(klass, out, "--exercises", SLUG, *setting)
        assert "Graded 2, 0 from cache" in changed.stdout, (setting, changed.stderr)
    project = copy_of_this_project(tmp_path / "project")

    def from_the_copy() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grader", "bulk", str(klass), "--out",
                               str(out), "--exercises", SLUG, "--feedback", "full", "-q"],
                              cwd=project, capture_output=True, text=True, timeout=300)

    same = from_the_copy()
    assert "Graded 0, 2 from cache" in same.stdout, same.stderr
    _edit_index(project, "atol", "1e-12")
    changed = from_the_copy()
    assert changed.returncode == 0 and "Graded 2, 0 from cache" in changed.stdout, \
        changed.stderr


def test_bulk_force_regrades_everything(tmp_path):
    """docs/teacher.md, "Grading a class": "`--force` regrades everything"."""
    klass = _class(tmp_path / "class", {"ann": REF, "bob": WRONG})
    out = tmp_path / "out"
    assert "Graded 2, 0 from cache" in _bulk(klass, out, "--exercises", SLUG).stdout
    assert "Graded 0, 2 from cache" in _bulk(klass, out, "--exercises", SLUG).stdout
    forced = _bulk(klass, out, "--exercises", SLUG, "--force")
    assert forced.returncode == 0 and "Graded 2, 0 from cache" in forced.stdout, forced.stderr


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies have ended)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def test_a_bulk_run_killed_with_sigkill_resumes_without_regrading(tmp_path):
    """docs/teacher.md, "Grading a class": "a run stopped by Ctrl-C or killed resumes where it
    stopped (every file is written atomically)"."""
    ids = [f"s{i}" for i in range(4)]
    klass = _class(tmp_path / "class", dict.fromkeys(ids, SLOW_IMPORT))
    out = tmp_path / "out"
    proc = subprocess.Popen([GRADE, "bulk", str(klass), "--out", str(out), "--exercises", SLUG,
                             "--workers", "1", "-q"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _until(lambda: any(out.glob("*/results.json")), proc, "a submission was graded")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 60  # its pool processes die with it: none writes after
    while _group_alive(proc.pid):
        assert time.monotonic() < deadline, "the killed run's processes live on"
        time.sleep(0.05)
    done = len(list(out.glob("*/results.json")))
    assert 1 <= done < len(ids)
    again = _bulk(klass, out, "--exercises", SLUG, "--workers", "2")
    assert again.returncode == 0, again.stderr
    assert f"Graded {len(ids) - done}, {done} from cache, 0 not graded" in again.stdout
    assert [(r["id"], r["status"]) for r in _rows(out / "grades.csv")] == \
        [(i, "graded") for i in ids]


def test_an_interrupted_bulk_run_says_which_rows_are_pending(tmp_path):
    """docs/teacher.md, "Grading a class", `grades.csv`: "the status is `graded`, `not graded:
    <why>` or `pending` (an interrupted run had not graded it: a partial file says so)"."""
    ids = [f"s{i}" for i in range(6)]
    klass = _class(tmp_path / "class", dict.fromkeys(ids, SLOW_IMPORT))
    out = tmp_path / "out"
    proc = subprocess.Popen([GRADE, "bulk", str(klass), "--out", str(out), "--exercises", SLUG,
                             "--workers", "1", "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    try:
        # one process grades them in turn, sent the next once the run has taken the last
        # answer: a second report written, the first is the run's
        _until(lambda: len(list(out.glob("*/results.json"))) >= 2, proc,
               "two submissions were graded")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    status = {r["id"]: r["status"] for r in _rows(out / "grades.csv")}
    assert sorted(status) == ids
    graded = {i for i, s in status.items() if s == "graded"}
    pending = {i for i, s in status.items() if s == "pending"}
    assert graded and pending and graded | pending == set(ids), status
    assert graded <= {p.parent.name for p in out.glob("*/results.json")}


# -- the `--feedback` option, `--device auto` ----------------------------------------------

def _hidden_failures(data: dict) -> list[dict]:
    return [t for e in data["exercises"] for t in e["tests"]
            if t["visibility"] != "public" and t["status"] != "passed"]


def test_the_feedback_option_sets_what_hidden_tests_tell(tmp_path):
    """docs/learner.md, options of `grade [run]`: "`--feedback full|graded` (what hidden tests
    tell)"; docs/teacher.md, "What hidden tests tell": `full` is the default of a learner's own
    `grade`, `graded` of `grade bulk`; "`--feedback full|graded` overrides the default"."""
    klass = _class(tmp_path / "class", {"sub": WRONG})

    def own(*extra: str) -> dict:
        run = subprocess.run([GRADE, "--submission", str(klass / "sub"), SLUG, "--json",
                              "-q", "--report-dir", str(tmp_path / "reports"), *extra],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert run.returncode == 1, run.stderr
        return json.loads(run.stdout)

    def bulk(*extra: str) -> dict:
        run = _bulk(klass, tmp_path / "out", "--exercises", SLUG, "--force", *extra)
        assert run.returncode == 0, run.stderr
        return json.loads((tmp_path / "out" / "sub" / "results.json").read_text())

    for data, level in ((own(), "full"), (own("--feedback", "graded"), "graded"),
                        (bulk(), "graded"), (bulk("--feedback", "full"), "full")):
        assert data["feedback"] == level
        hidden = _hidden_failures(data)
        assert hidden
        for t in hidden:
            told = (t["description"], t["diagnostics"], t["figures"])
            assert all(told) if level == "full" else told == ("", None, []), (level, t)


def test_device_auto_never_imports_torch_for_a_numpy_only_run(tmp_path):
    """docs/learner.md, options of `grade [run]`: "`--device cpu|cuda|auto` (default auto: cuda
    only when available, and never even imports torch for numpy-only exercises)". The grading
    process's imports are logged (`PYTHONPROFILEIMPORTTIME`); the learner's file fails if its
    worker has torch loaded."""
    (tmp_path / "sub").mkdir()
    line = "    r, c = np.arange(H_p), np.arange(W_p)\n"
    (tmp_path / "sub" / f"{SLUG}.py").write_text(reference_variant(SLUG, (
        line, "    import sys\n    if 'torch' in sys.modules:\n"
              "        raise RuntimeError('torch was imported')\n" + line)))
    run = subprocess.run([GRADE, "--submission", str(tmp_path / "sub"), SLUG, "--device", "auto",
                          "--json", "-q", "--report-dir", str(tmp_path / "reports")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(run.stdout)
    assert data["device"] == "cpu" and data["score"] == data["max_score"] == 9
    imported = re.findall(r"^import time:.*\|\s*([\w.]+)\s*$", run.stderr, re.MULTILINE)
    assert "numpy" in imported  # the log is there
    assert not [m for m in imported if m.split(".")[0] == "torch"]


def test_device_auto_grades_on_the_cpu_where_there_is_no_cuda(tmp_path):
    """docs/learner.md, options of `grade [run]`: "default auto: cuda only when available";
    docs/security.md, "GPU workers": "`--device cuda` (or `auto` on a machine with CUDA)
    grades the torch exercises on the GPU". No CUDA device is visible here
    (`CUDA_VISIBLE_DEVICES` empty): a torch exercise is graded on the CPU."""
    pytest.importorskip("torch")
    (tmp_path / "sub").mkdir()
    shutil.copy(catalog.get("patch_vit").stub, tmp_path / "sub")
    run = subprocess.run([GRADE, "--submission", str(tmp_path / "sub"), "patch_vit",
                          "--device", "auto", "--json", "-q", "--report-dir",
                          str(tmp_path / "reports")], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 1, run.stderr  # the stub fails its tests
    data = json.loads(run.stdout)
    assert data["device"] == "cpu"
    assert data["exercises"][0]["tests"] and "Traceback" not in run.stderr


# -- limits on learner code ------------------------------------------------------------------

LIMITS_PROBE = """
import errno
import resource


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    seen = [f"{name}={resource.getrlimit(getattr(resource, 'RLIMIT_' + name))}"
            for name in ("CPU", "FSIZE", "NOFILE", "CORE")]
    try:
        with open("big.bin", "wb") as f:
            f.write(bytes(64 * 2**20 + 1))
        seen.append("big=written")
    except OSError as exc:
        seen.append(f"big={errno.errorcode[exc.errno]}")
    files = []
    try:
        for _ in range(300):
            files.append(open("big.bin", "rb"))
        seen.append("files=opened")
    except OSError as exc:
        seen.append(f"files={errno.errorcode[exc.errno]}")
    finally:
        for f in files:
            f.close()
    raise RuntimeError(" ".join(seen))
"""


def test_learner_code_runs_under_cpu_file_size_open_files_and_core_limits(tmp_path):
    """docs/security.md, "The layers", rlimits: "always | CPU time (600 s), file size (64
    MiB), open files (256), no core dumps". The learner's file reads its limits and tries
    the file size and open files ones (600 s of CPU time are read, not spent)."""
    (tmp_path / f"{SLUG}.py").write_text(LIMITS_PROBE)
    result = grade({SLUG: tmp_path / f"{SLUG}.py"}, submission="limits", device="cpu")
    first = result.exercises[0].tests[0]
    assert first.status == "error", first
    assert first.message == (f"RuntimeError: CPU=(600, 605) FSIZE=({64 * 2**20}, {64 * 2**20}) "
                             "NOFILE=(256, 256) CORE=(0, 0) big=EFBIG files=EMFILE")


def test_an_assignments_submission_seconds_bounds_all_its_calls(tmp_path):
    """docs/teacher.md, "The assignment file": "[limits] [...] submission_seconds = 900 # all
    the calls of one submission together". Each call sleeps 0.5 s, well inside the call limit
    (10 s): only the submission's 2 s can stop the nine tests' calls."""
    slow = edit_source(REF, (f"def {SLUG}(", f"import time\n\n\ndef _{SLUG}(")) + (
        f"\n\ndef {SLUG}(*args, **kwargs):\n    time.sleep(0.5)\n"
        f"    return _{SLUG}(*args, **kwargs)\n")
    klass = _class(tmp_path / "class", {"ann": slow})
    (tmp_path / "a.toml").write_text(f'title = "W1"\nexercises = ["{SLUG}"]\nfeedback = "full"\n'
                                     "[limits]\nsubmission_seconds = 2\n")
    out = tmp_path / "out"
    run = _bulk(klass, out, "--assignment", str(tmp_path / "a.toml"))
    assert run.returncode == 0, run.stderr
    tests = json.loads((out / "ann" / "results.json").read_text())["exercises"][0]["tests"]
    budget = [t for t in tests
              if "the submission's time budget of 2 s for all its" in t["message"]]
    assert budget and all(t["status"] == "timeout" for t in budget), tests
    assert sum(t["status"] == "passed" for t in tests) < len(tests)


# -- docs/teacher.md, "Importing the grades: Canvas and Moodle" -----------------------------



def test_canvas_csv_matches_submissions_by_id_and_by_sis_user_id(tmp_path):
    """docs/teacher.md, "Canvas": "Submissions are matched to students by the Canvas user id in
    a "download submissions" zip, else by their id as the ID, SIS User ID or SIS Login ID"."""
    (tmp_path / "roster.csv").write_text(ROSTER)
    (tmp_path / "a.toml").write_text(ASSIGNMENT)
    klass = _class(tmp_path / "class", {"101": REF, "S-2": WRONG})  # an ID, a SIS User ID
    out = tmp_path / "out"
    run = _bulk(klass, out, "--assignment", str(tmp_path / "a.toml"), "--roster",
                str(tmp_path / "roster.csv"))
    assert run.returncode == 0, run.stderr
    assert "match no student" not in run.stderr
    rows = csv_rows(out / "canvas.csv")
    assert rows[0][-1] == "Week 3 masks"
    score = {r[1]: r[-1] for r in rows[2:]}
    assert score["101"] == "10" and float(score["102"]) < 10 and score["103"] == ""
    names = {r["id"]: r["name"] for r in _rows(out / "grades.csv") if r["id"]}
    assert names == {"101": "Smith, Ann", "S-2": "Jones, Bob"}


def test_moodle_csv_is_written_without_a_roster(tmp_path):
    """docs/teacher.md, "Moodle: the gradebook import": "Without a worksheet, `moodle.csv` is
    for Grades → Import → CSV file [...] `moodle.csv` only holds rows keyed by a username: a
    Canvas roster's SIS Login ID, or the id of a folder or zip submission"; "Grading a class":
    `ls class-report # ann/ bob/ grades.csv index.html junit.xml moodle.csv`."""
    (tmp_path / "a.toml").write_text(ASSIGNMENT)
    klass = _class(tmp_path / "class", {"ann": REF, "bob": WRONG})
    out = tmp_path / "out"
    run = _bulk(klass, out, "--assignment", str(tmp_path / "a.toml"))
    assert run.returncode == 0, run.stderr
    rows = csv_rows(out / "moodle.csv")
    assert rows[0] == ["Username", "ID number", "Week 3 masks"]
    assert [r[:2] for r in rows[1:]] == [["ann", ""], ["bob", ""]]
    assert float(rows[1][2]) == 10 and float(rows[2][2]) < 10
    assert not (out / "canvas.csv").exists()


# -- docs/learner.md: watch mode and the interview ------------------------------------------

def test_watch_r_regrades_the_exercise_now(project):
    """docs/learner.md, commands: "`grade --watch [EXERCISE]` | [...] keys: `h` the next hint,
    `r` re-grade, `q` quit". Nothing is saved: only the key can start the second grading."""
    s = Session(["--watch", SLUG, "-q"], project)
    try:
        first = s.until("r: re-grade · q: quit")
        assert "Score 0/9" in first
        s.send("r\n")
        second = s.until("r: re-grade · q: quit", timeout=60)
        assert "Since the last run: no test changed its verdict (0/9 pass)" in second
        assert "Score 0/9" in second
        s.send("q\n")
        code, rest = s.finish()
        assert code == 0 and "stopped watching." in rest
        assert "Traceback" not in s.output
    finally:
        s.close()


def test_the_interview_clock_stops_while_the_grader_grades(tmp_path, monkeypatch):
    """docs/learner.md, "Commands and options": "an interview counts its own clock, which
    stops while the grader grades"; `grade interview` says "the clock stops while grading".
    The interview lasts 1.2 s; grading each file takes over 1.5 s (it sleeps at import): the
    second exercise is still reached, and submitted, after the first one's grading."""
    both = ("grid_local_mask", "shape_bias")
    (tmp_path / "exercises").mkdir()
    for slug in both:
        (tmp_path / "exercises" / f"{slug}.py").write_text(
            catalog.get(slug).solution.read_text() + "\nimport time\n\ntime.sleep(1.5)\n")
    (tmp_path / ".grade").mkdir()
    mastered = {s: {"attempts": 1, "best": [e.points, e.points], "mastered_at": 1.0}
                for s, e in catalog.load().items() if s not in both}
    (tmp_path / ".grade" / "state.json").write_text(json.dumps({"progress": mastered}))
    monkeypatch.chdir(tmp_path)
    s = Session(["interview", "--minutes", "0.02", "--count", "2", "--seed", "1"], tmp_path)
    try:
        s.send("\n\n")  # two submissions, read as soon as each exercise's clock runs
        code, _ = s.finish()
    finally:
        s.close()
    assert code == 0, s.output
    assert "Time is up." not in s.output and "left · exercise 2/2" in s.output
    [folder] = (tmp_path / "reports").glob("interview-*")
    summary = json.loads((folder / "results.json").read_text())["interview"]
    assert [e["outcome"] for e in summary["exercises"]] == ["submitted", "submitted"]
    assert summary["time_s"] <= 1.2
    assert all(e["score"] == e["max_score"] > 0 for e in summary["exercises"])
