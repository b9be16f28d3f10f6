"""`grade bulk` end to end through the real CLI, on a synthetic class of 32 submissions."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from conftest import declared, interruptible

from grader import catalog
from grader.report.gradescope import validate_gradescope

GRADE = str(Path(sys.executable).with_name("grade"))
EXERCISES = "grid_local_mask,attention_rollout,mean_attention_distance"
REF = {s: catalog.get(s).solution.read_text() for s in EXERCISES.split(",")}


WRONG = {  # known mistakes (declared in solutions/), each as a submission of one exercise
    "m_inverted": ("grid_local_mask", "inverted_convention"),
    "m_manhattan": ("grid_local_mask", "manhattan_window"),
    "m_prefix": ("grid_local_mask", "prefix_not_free"),
    "m_flat": ("grid_local_mask", "flattened_distance"),
    "m_order": ("attention_rollout", "first_layer_on_left"),
    "m_residual": ("attention_rollout", "no_residual"),
    "m_renorm": ("attention_rollout", "no_row_renormalisation"),
    "m_maxheads": ("attention_rollout", "max_over_heads"),
    "m_column": ("attention_rollout", "column_not_row"),
    "m_mad_renorm": ("mean_attention_distance", "no_renormalisation"),
    "m_mad_pixels": ("mean_attention_distance", "distance_in_patches"),
}
BROKEN = {  # learner files that fail in every way but politely
    "x_syntax": "def grid_local_mask(:\n",
    "x_raise_at_import": "raise RuntimeError('no')\n",
    "x_exit_at_import": "import sys\nsys.exit(3)\n",
    "x_os_exit": "import os\ndef grid_local_mask(*a, **k):\n    os._exit(0)\n",
    "x_missing_function": "def something_else():\n    pass\n",
    "x_returns_object": "def grid_local_mask(*a, **k):\n    return object()\n",
    "x_prints_a_lot": "def grid_local_mask(*a, **k):\n    print('y' * 200000)\n",
    "x_segfault": "import ctypes\ndef grid_local_mask(*a, **k):\n    ctypes.string_at(0)\n",
}


def make_class(root: Path) -> Path:
    """32 submission folders plus 2 that cannot be graded."""
    root.mkdir()
    for i in range(6):  # correct
        d = root / f"ok_{i:02d}"
        d.mkdir()
        for slug, src in REF.items():
            (d / f"{slug}.py").write_text(src)
    for i, slug in enumerate(REF):  # partially correct: one exercise only
        d = root / f"partial_{i}"
        d.mkdir()
        (d / f"{slug}.py").write_text(REF[slug])
    for name, (slug, mistake) in WRONG.items():
        d = root / name
        d.mkdir()
        (d / f"{slug}.py").write_text(declared(slug, mistake))
        (d / "grid_local_mask.py").exists() or (d / "grid_local_mask.py").write_text(
            REF["grid_local_mask"])
    for name, src in BROKEN.items():
        d = root / name
        d.mkdir()
        (d / "grid_local_mask.py").write_text(src)
    for i in range(4):  # stubs
        d = root / f"stub_{i}"
        d.mkdir()
        shutil.copy(catalog.get("grid_local_mask").stub, d)
    (root / "z_empty").mkdir()
    (root / "z_binary").mkdir()
    (root / "z_binary" / "grid_local_mask.py").write_bytes(b"\x00\xff\xfe binary")
    return root


# the grader's temporary folders (workers, unpacked zips) of this module's runs go here
BULK_TMP = Path(tempfile.mkdtemp(prefix="bulk-cli-tests-"))


def bulk(*args: str, workers: int = 2, check: bool = True,
         exercises: str = EXERCISES) -> subprocess.CompletedProcess:
    proc = subprocess.run([GRADE, "bulk", *args, "--exercises", exercises, "--workers",
                           str(workers), "-q"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(BULK_TMP)})
    if check:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("bulk")
    klass = make_class(base / "class")
    proc = bulk(str(klass), "--out", str(base / "out"))
    return klass, base / "out", proc


def _results(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}


def _verdicts(data: dict) -> list:
    """What must not depend on the batch: statuses, scores, messages, mistakes."""
    return [(e["exercise"], e["status"], e["score"],
             [(t["name"], t["status"], t["score"], t["message"], t["mistake"])
              for t in e["tests"]]) for e in data["exercises"]]


def test_detects_the_layout_and_grades_everyone(graded):
    klass, out, proc = graded
    assert "a folder of 34 sub-folders" in proc.stderr
    assert "32 submission(s) to grade, 2 rejected" in proc.stderr
    assert "Graded 32, 0 from cache, 2 not graded" in proc.stdout
    results = _results(out)
    assert len(results) == 32
    assert all(r["score"] == r["max_score"] == 26 for k, r in results.items()
               if k.startswith("ok_"))


def test_known_mistakes_and_broken_files_get_their_verdicts(graded):
    _, out, _ = graded
    results = _results(out)
    for name, (slug, _) in WRONG.items():
        ex = next(e for e in results[name]["exercises"] if e["exercise"] == slug)
        assert any(t["mistake"] for t in ex["tests"]), name
    first = {k: results[k]["exercises"][0] for k in BROKEN}
    assert first["x_syntax"]["status"] == "error"
    assert "SyntaxError at line 1" in first["x_syntax"]["message"]
    assert "sys.exit(3)" in first["x_exit_at_import"]["message"]
    assert first["x_os_exit"]["tests"][0]["message"] == \
        "the learner's process ended: exit code 0"
    assert first["x_segfault"]["tests"][0]["status"] == "crashed"
    assert first["x_missing_function"]["status"] == "error"  # defines none of the functions
    assert "does not define the exercise's function grid_local_mask" in \
        first["x_missing_function"]["message"]
    assert "[output truncated" in first["x_prints_a_lot"]["tests"][0]["output"]


def test_grades_csv_is_a_gradebook(graded):
    _, out, _ = graded
    rows = list(csv.DictReader((out / "grades.csv").open(newline="")))
    assert list(rows[0]) == ["id", "total", "max", *EXERCISES.split(","), "late", "status"]
    by_id = {r["id"]: r for r in rows}
    assert len(rows) == 34
    assert by_id["ok_00"]["total"] == "26" and by_id["ok_00"]["max"] == "26"
    assert by_id["partial_0"]["grid_local_mask"] == "9"
    assert by_id["z_empty"]["total"] == "" and by_id["z_empty"]["status"].startswith("not graded")


def test_gradescope_and_junit_files(graded):
    _, out, _ = graded
    for sub in ("ok_00", "m_order", "x_syntax"):
        data = json.loads((out / sub / "gradescope.json").read_text())
        assert validate_gradescope(data) == []
    assert json.loads((out / "ok_00" / "gradescope.json").read_text())["score"] == 26
    root = ET.parse(out / "junit.xml").getroot()
    suites = root.findall("testsuite")
    assert len(suites) == 34
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    ok = next(s for s in suites if s.get("name") == "ok_00")
    assert ok.get("failures") == "0" and ok.get("errors") == "0"


def test_class_report_lists_everyone(graded):
    _, out, _ = graded
    html = (out / "index.html").read_text()
    for sub in ("ok_00", "m_inverted", "x_syntax", "z_empty"):
        assert sub in html
    assert "<svg" in html and "inverted_convention" in html
    assert "http://" not in html and "https://" not in html


def test_second_run_grades_nothing_and_new_submissions_only(graded, tmp_path):
    klass, out, _ = graded
    proc = bulk(str(klass), "--out", str(out))
    assert "Graded 0, 32 from cache" in proc.stdout
    shutil.copytree(klass, tmp_path / "class")
    for i in range(3):
        d = tmp_path / "class" / f"new_{i}"
        d.mkdir()
        (d / "grid_local_mask.py").write_text(REF["grid_local_mask"])
    shutil.copytree(out, tmp_path / "out")
    proc = bulk(str(tmp_path / "class"), "--out", str(tmp_path / "out"))
    assert "Graded 3, 32 from cache" in proc.stdout


def test_same_verdicts_alone_or_in_a_batch_with_any_worker_count(graded, tmp_path):
    """A submission graded alone, with one worker, gets what it got in the 32-strong batch."""
    klass, out, _ = graded
    names = ["ok_00", "m_order", "m_mad_pixels", "x_segfault", "partial_1", "stub_0"]
    small = tmp_path / "small"
    for name in names:
        shutil.copytree(klass / name, small / name)
    bulk(str(small), "--out", str(tmp_path / "out1"), workers=1)
    batch, alone = _results(out), _results(tmp_path / "out1")
    for name in names:
        assert _verdicts(alone[name]) == _verdicts(batch[name]), name


def test_interrupted_run_resumes_and_keeps_complete_files(tmp_path):
    klass = tmp_path / "class"
    klass.mkdir()
    for i in range(8):
        (klass / f"s{i}").mkdir()
        # each import takes a second: the signal comes long before the eighth is graded
        (klass / f"s{i}" / "grid_local_mask.py").write_text(
            REF["grid_local_mask"] + "\nimport time\n\ntime.sleep(1)\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([GRADE, "bulk", str(klass), "--out", str(out), "--exercises",
                             "grid_local_mask", "--workers", "1", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(BULK_TMP)},
                            preexec_fn=interruptible)
    deadline = time.monotonic() + 120
    while not list(out.glob("*/results.json")):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    for path in out.rglob("*"):
        assert not path.name.endswith(".tmp"), f"half-written file left: {path}"
    for path in out.glob("*/results.json"):
        json.loads(path.read_text())  # every report that exists is complete
    done_before = len(list(out.glob("*/results.json")))
    proc = bulk(str(klass), "--out", str(out), workers=2, exercises="grid_local_mask")
    assert f"Graded {8 - done_before}, {done_before} from cache" in proc.stdout
    assert len(_results(out)) == 8


def _zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_other_layouts(tmp_path):
    zips = tmp_path / "zips"
    zips.mkdir()
    _zip(zips / "ann.zip", {"work/grid_local_mask.py": REF["grid_local_mask"]})
    _zip(zips / "bad.zip", {"../evil.py": "x = 1"})
    (zips / "corrupt.zip").write_bytes(b"PK\x03\x04 not really a zip")
    proc = bulk(str(zips), "--out", str(tmp_path / "o1"))
    assert "zip" in proc.stderr and "1 submission(s) to grade, 2 rejected" in proc.stderr
    assert not (tmp_path / "evil.py").exists()
    canvas = _zip(tmp_path / "submissions.zip", {
        "smithjo_101_9001_grid_local_mask.py": "def grid_local_mask(*a, **k):\n    return 0\n",
        "smithjo_late_101_9002_grid_local_mask-1.py": REF["grid_local_mask"],
        "leeann_102_9003_attention_rollout.py": REF["attention_rollout"],
    })
    proc = bulk(str(canvas), "--out", str(tmp_path / "o2"))
    assert "Canvas" in proc.stderr
    results = _results(tmp_path / "o2")
    assert len(results) == 2
    smith = next(v for k, v in results.items() if "101" in k)
    assert smith["exercises"][0]["score"] == 9  # the latest (late) upload was taken
    files = [tmp_path / "grid_local_mask.py", tmp_path / "attention_rollout.py"]
    files[0].write_text(REF["grid_local_mask"])
    files[1].write_text(REF["attention_rollout"])
    proc = bulk(*map(str, files), "--out", str(tmp_path / "o3"))
    assert "1 submission(s) to grade" in proc.stderr
    assert len(_results(tmp_path / "o3")) == 1


def test_nothing_is_left_running_or_written_outside(graded):
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(BULK_TMP) not in out  # no worker or fork server of these runs is left
    assert list(BULK_TMP.iterdir()) == []  # work folders and unpacked zips were removed


SHM = Path("/dev/shm")


@pytest.mark.skipif(not (SHM.is_dir() and os.access(SHM, os.W_OK)), reason="no /dev/shm")
def test_without_tmpdir_nothing_is_left_in_dev_shm(tmp_path):
    """With no TMPDIR, workers' folders are made in /dev/shm (isolation.staging_root), and
    none is left there after the run. (A folder is named after its grader's pid: one of a
    grader still running, another test's beside this one, is not a leftover.)"""
    def ours() -> set[str]:
        return {p.name for p in SHM.glob("grade-*")
                if not Path(f"/proc/{p.name.split('-')[2]}").exists()}

    before = ours()
    (tmp_path / "class" / "s1").mkdir(parents=True)
    (tmp_path / "class" / "s1" / "grid_local_mask.py").write_text(REF["grid_local_mask"])
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    proc = subprocess.run([GRADE, "bulk", str(tmp_path / "class"), "--out", str(tmp_path / "o"),
                           "--exercises", "grid_local_mask", "-q"], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert _results(tmp_path / "o")["s1"]["exercises"][0]["score"] == 9
    assert ours() - before == set()


def _children(pid: int) -> set[int]:
    kids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            pass
    return kids


def test_a_killed_run_leaves_no_grading_process_behind(tmp_path):
    klass = tmp_path / "class"
    for i in range(6):
        (klass / f"s{i}").mkdir(parents=True)
        (klass / f"s{i}" / "grid_local_mask.py").write_text(
            "import time\n\ndef grid_local_mask(*args, **kwargs):\n    time.sleep(3)\n")
    proc = subprocess.Popen([GRADE, "bulk", str(klass), "--out", str(tmp_path / "out"),
                             "--exercises", "grid_local_mask", "--workers", "2", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(BULK_TMP)})
    deadline = time.monotonic() + 60
    pool: set[int] = set()
    while len(pool) < 2:  # the fork server and the pool processes
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
        pool = _children(proc.pid)
    time.sleep(1)
    proc.kill()  # SIGKILL: the run cannot stop its pool itself
    proc.wait()
    deadline = time.monotonic() + 20

    def left() -> list[str]:
        alive = [pid for pid in pool if Path(f"/proc/{pid}").exists() and
                 "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()]
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        return [str(pid) for pid in alive] + [line for line in ps.splitlines()
                                              if str(tmp_path) in line]

    while left():
        assert time.monotonic() < deadline, f"outlived their run: {left()}"
        time.sleep(0.1)
