"""`grade bulk --scheduler`: a class graded on Dask distributed gives what the local path
gives; workers of another pack version get no task and are named; a worker killed mid-run
costs nothing but time. Real components: a LocalCluster, and a `dask scheduler` with
`dask worker` processes started on loopback, speaking TLS with a certificate made as the
recipe in docs/cluster.md makes it (``dask_procs``: tests/dask_helpers.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import edit_source, interruptible

from grader import catalog

pytest.importorskip("distributed")

BIN = Path(sys.executable).parent
GRADE = str(BIN / "grade")
SLUG = "grid_local_mask"


def make_class(folder: Path, n: int, slow_s: float = 0.0) -> Path:
    """``n`` submissions of grid_local_mask: every third one wrong, the rest the reference
    (each call sleeping ``slow_s`` first)."""
    good = catalog.get(SLUG).solution.read_text()
    if slow_s:
        good = edit_source(good, (f"def {SLUG}(", f"import time as _t\n\ndef _{SLUG}(")) + (
            f"\n\ndef {SLUG}(*args, **kwargs):\n    _t.sleep({slow_s})\n"
            f"    return _{SLUG}(*args, **kwargs)\n")
    for i in range(n):
        (folder / f"s{i:02d}").mkdir(parents=True)
        source = good if i % 3 else "def grid_local_mask(H_p, W_p, radius, n_prefix=1):\n" \
            "    return None\n"
        (folder / f"s{i:02d}" / f"{SLUG}.py").write_text(source)
    return folder


def bulk(class_dir: Path, out: Path, *extra: str, timeout: float = 300) -> \
        subprocess.CompletedProcess:
    return subprocess.run([GRADE, "bulk", str(class_dir), "--out", str(out), "--exercises",
                           SLUG, "-q", *extra], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def class_and_local(tmp_path_factory):
    """A class of six and its grades from the local path (the reference every cluster
    run must match)."""
    root = tmp_path_factory.mktemp("cluster")
    class_dir = make_class(root / "class", 6)
    run = bulk(class_dir, root / "local")
    assert run.returncode == 0, run.stderr
    return class_dir, root / "local"


def test_a_local_cluster_writes_the_same_gradebook_as_the_local_path(class_and_local,
                                                                       tmp_path):
    class_dir, local = class_and_local
    run = bulk(class_dir, tmp_path / "out", "--scheduler", "local:2")
    assert run.returncode == 0, run.stderr
    assert "2 Dask worker(s) will grade" in run.stderr
    assert (tmp_path / "out" / "grades.csv").read_bytes() == (local / "grades.csv").read_bytes()
    for sub in sorted(p.name for p in class_dir.iterdir()):
        mine = json.loads((tmp_path / "out" / sub / "results.json").read_text())
        theirs = json.loads((local / sub / "results.json").read_text())
        assert [t["status"] for t in mine["exercises"][0]["tests"]] == \
            [t["status"] for t in theirs["exercises"][0]["tests"]]
        assert mine["cache_key"] == theirs["cache_key"]
        assert (tmp_path / "out" / sub / "index.html").is_file()
    # the same cache as locally: a second run, here on the local path, regrades nothing
    again = bulk(class_dir, tmp_path / "out")
    assert again.returncode == 0 and "Graded 0, 6 from cache" in again.stdout


def test_a_real_scheduler_and_two_workers_grade_through_their_address(class_and_local,
                                                                       dask_procs, tmp_path):
    class_dir, local = class_and_local
    dask_procs.worker("w1")
    dask_procs.worker("w2", "--resources", "GPU=1")
    dask_procs.wait_for(2)
    run = bulk(class_dir, tmp_path / "out", "--scheduler", dask_procs.address)
    assert run.returncode == 0, run.stderr
    assert "2 Dask worker(s) will grade (1 with a GPU)" in run.stderr
    assert (tmp_path / "out" / "grades.csv").read_bytes() == (local / "grades.csv").read_bytes()

    from grader.bulk import cluster

    found = cluster.connect(dask_procs.address)
    try:
        assert len(found.good) == 2 and len(found.gpus) == 1 and not found.bad
        # torch exercises on CUDA ask for the GPU resource; numpy ones run anywhere on the CPU
        assert cluster.device_for(found, "cuda", ["patch_vit"]) == "cuda"
        assert cluster.device_for(found, "auto", [SLUG]) == "cpu"
        assert cluster.task_options(found, "cuda", ["patch_vit", SLUG])["resources"] == \
            {"GPU": 1}
        assert cluster.task_options(found, "cpu", ["patch_vit"])["resources"] is None
    finally:
        found.close()


def test_a_worker_of_another_pack_version_is_named_and_gets_no_task(class_and_local,
                                                                     dask_procs, tmp_path):
    class_dir, _ = class_and_local
    other = tmp_path / "other"  # this project with one tolerance changed
    other.mkdir()
    for part in ("grader", "solutions"):
        subprocess.run(["cp", "-r", str(catalog.PROJECT_DIR / part), str(other)], check=True)
    index = other / "grader" / "exercises.toml"
    index.write_text(index.read_text() + "\n# another version\n")
    dask_procs.worker("odd", env={"PYTHONPATH": str(other)})
    dask_procs.wait_for(1)
    run = bulk(class_dir, tmp_path / "out", "--scheduler", dask_procs.address)
    assert run.returncode == 2, run.stderr
    assert "worker odd (tls://127.0.0.1:" in run.stderr
    assert "has pack version" in run.stderr and catalog.pack_version() in run.stderr
    assert "install the same vit-grader" in run.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_worker_killed_mid_run_loses_no_submission(dask_procs, tmp_path):
    from distributed import Client

    class_dir = make_class(tmp_path / "class", 4, slow_s=0.3)
    pids = {name: dask_procs.worker(name).pid for name in ("w1", "w2")}
    dask_procs.wait_for(2)
    grading = subprocess.Popen([GRADE, "bulk", str(class_dir), "--out", str(tmp_path / "out"),
                                "--exercises", SLUG, "-q", "--scheduler", dask_procs.address],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, children = None, []
    with Client(dask_procs.address, timeout=30) as client:
        deadline = time.monotonic() + 120
        while killed is None and time.monotonic() < deadline:
            busy = [addr for addr, keys in client.processing().items() if keys]
            if busy and any(k.startswith("grade-") for k in client.processing()[busy[0]]):
                time.sleep(0.5)  # well inside a submission (each takes ~3 s)
                killed = pids[client.scheduler_info()["workers"][busy[0]]["name"]]
                children = _grading_processes_of(killed)
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.1)
    assert killed is not None
    out, err = grading.communicate(timeout=300)
    assert grading.returncode == 0, err
    rows = (tmp_path / "out" / "grades.csv").read_text().splitlines()[1:]
    assert sorted(r.split(",")[0] for r in rows) == ["s00", "s01", "s02", "s03"]
    assert all(r.endswith(",graded") for r in rows)
    assert "Graded 4, 0 from cache, 0 not graded" in out
    assert children  # the killed worker's grading process follows it
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(c) for c in children):
        time.sleep(0.2)
    assert not any(_alive(c) for c in children)
    # and their staging folders went with them (grade-serve-<pid>-..., in /dev/shm or TMPDIR)
    roots = {Path(tempfile.gettempdir()), Path("/dev/shm")}
    assert not [p for root in roots for c in children for p in root.glob(f"grade-serve-{c}-*")]


def _alive(pid: int) -> bool:
    """Running (a zombie has ended: this test process may have adopted it as a subreaper)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _grading_processes_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next((line.split()[1] for line in text.splitlines()
                     if line.startswith("PPid:")), "")
        if ppid == str(pid) and b"grader.bulk.serve" in cmdline:
            found.append(int(status.parent.name))
    return found


@pytest.mark.parametrize("args, words", [
    (["local:0"], "local:N takes a number of worker processes"),
    (["local:two"], "local:N takes a number of worker processes"),
    (["tcp://127.0.0.1:9", "--allow-insecure-cluster"],
     "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
])
def test_a_bad_scheduler_is_a_usage_error(class_and_local, tmp_path, args, words):
    class_dir, _ = class_and_local
    run = bulk(class_dir, tmp_path / "out", "--scheduler", *args)
    assert run.returncode == 2 and words in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_an_interrupted_cluster_run_resumes_without_regrading(tmp_path):
    """Ctrl-C once a result is written: the run stops there (exit 130) and the next run
    grades only what was left. A submission whose every call sleeps 1.5 s keeps the run
    going well past the interruption, however loaded the machine (it was seen finishing
    before the Ctrl-C reached it); it is taken out of the class before the second run."""
    import shutil

    class_dir = make_class(tmp_path / "class", 6, slow_s=0.2)
    make_class(tmp_path / "slow", 2, slow_s=1.5)
    shutil.move(tmp_path / "slow" / "s01", class_dir / "s99")
    out = tmp_path / "out"
    grading = subprocess.Popen([GRADE, "bulk", str(class_dir), "--out", str(out), "--exercises",
                                SLUG, "-q", "--scheduler", "local:2"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=interruptible)
    deadline = time.monotonic() + 120
    while not list(out.glob("*/results.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(grading.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    stdout, stderr = grading.communicate(timeout=120)
    assert grading.returncode == 130, stderr
    assert "Traceback" not in stderr and "run the same command again to resume" in stderr
    assert not (out / "s99" / "results.json").exists()
    written = len(list(out.glob("*/results.json")))
    assert 1 <= written
    shutil.rmtree(class_dir / "s99")
    again = bulk(class_dir, out, "--scheduler", "local:2")
    assert again.returncode == 0, again.stderr
    assert f"Graded {6 - written}, {written} from cache" in again.stdout


@pytest.mark.parametrize("answer, words", [
    ({"refused": "pack", "worker": "tcp://h:1", "pack": "abc", "name": "w7"},
     "worker w7 (tcp://h:1) has pack version abc, this client PACK: install the same "
     "vit-grader"),
    ({"refused": "isolation", "worker": "tcp://h:1", "missing": ["a seccomp filter"]},
     "worker tcp://h:1 cannot isolate learner code (a seccomp filter missing; see `grade "
     "doctor` on that machine): workers grade at strict isolation only"),
    ({"refused": "plugin", "worker": "tcp://h:1"},
     "worker tcp://h:1 cannot grade: no vit-grader plugin"),
    ({"error": "the grading process did not start (exit code 1)", "worker": "tcp://h:1"},
     "worker tcp://h:1 cannot grade: the grading process did not start (exit code 1)"),
], ids=["pack", "isolation", "plugin", "no_process"])
def test_a_refusing_worker_is_named_with_what_to_fix(answer, words):
    from grader.bulk.cluster import refusal_text

    assert refusal_text(answer, "PACK").startswith(words)
