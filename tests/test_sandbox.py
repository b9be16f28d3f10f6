"""The sandbox's layers, `grade doctor`, `--isolation strict`, and ungradable submissions."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_driver import invoke as run
from click.testing import CliRunner
from conftest import reference_variant

from grader import catalog
from grader.cli import main
from grader.sandbox import isolation

SLUG = "grid_local_mask"


def test_doctor_lists_every_layer_and_the_level():
    result = run("doctor")
    assert result.exit_code == 0
    for layer in isolation.probe().layers:
        assert layer.name in result.output
    assert f"Isolation level: {isolation.probe().level}" in result.output


def test_results_record_the_isolation_level(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(catalog.SOLUTIONS_DIR, tmp_path / "sub")
    run("--submission", str(tmp_path / "sub"), SLUG, "-q")
    data = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert data["isolation"]["level"] == isolation.probe().level
    assert "rlimits" in data["isolation"]["layers"]
    assert f"isolation {isolation.probe().level}" in (tmp_path / "reports" /
                                                       "index.html").read_text()


def _basic(monkeypatch):
    caps = isolation.probe()
    weak = isolation.Capabilities(landlock_abi=0, netns=None, cgroup=caps.cgroup,
                                  drop_uid=caps.drop_uid, no_privileges=caps.no_privileges,
                                  seccomp=caps.seccomp, layers=caps.layers)
    monkeypatch.setattr(isolation, "probe", lambda: weak)


def test_strict_refuses_a_machine_without_isolation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _basic(monkeypatch)
    result = run("--isolation", "strict", "--submission", str(catalog.SOLUTIONS_DIR), SLUG)
    assert result.exit_code == 2
    assert "cannot give learner code filesystem isolation, network isolation" in result.output
    result = run("--submission", str(catalog.SOLUTIONS_DIR), SLUG, "-q")
    assert result.exit_code == 0
    assert "warning: learner code will run without filesystem isolation, network isolation" \
        in result.stderr


@pytest.mark.skipif(not isolation.probe().filesystem_isolated, reason="no Landlock here")
def test_learner_cannot_read_the_references(grade_src):
    src = (f"def grid_local_mask(*a, **k):\n"
           f"    return open({str(catalog.get(SLUG).solution)!r}).read()\n")
    t = grade_src(SLUG, src).tests[0]
    assert t.status == "error" and t.message.startswith("PermissionError")
    assert "def grid_local_mask" not in t.message + t.output


def test_a_sandbox_that_cannot_start_makes_the_submission_ungradable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def broken(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(isolation.Sandbox, "launch", broken)
    result = CliRunner().invoke(main, ["--submission", str(catalog.SOLUTIONS_DIR), SLUG])
    assert result.exit_code == 3
    assert "could not start the sandbox" in result.stderr
    assert not (tmp_path / "reports" / "results.json").exists()  # no 0-point report
    sub = tmp_path / "class" / "ann"
    sub.mkdir(parents=True)
    shutil.copy(catalog.get(SLUG).solution, sub)
    result = CliRunner().invoke(main, ["bulk", str(tmp_path / "class"), "--out",
                                       str(tmp_path / "out"), "--exercises", SLUG, "-q"])
    assert result.exit_code == 3
    assert "not graded" in result.output
    rows = (tmp_path / "out" / "grades.csv").read_text()
    assert "grading failed (not the learner's fault)" in rows
    assert not Path(tmp_path / "out" / "ann" / "results.json").exists()


def test_numpy_only_workers_never_import_torch(grade_src):
    line = "    r, c = np.arange(H_p), np.arange(W_p)\n"
    src = reference_variant(SLUG, (line, "    import sys\n    if 'torch' in sys.modules:\n"
                                         "        raise RuntimeError('torch was imported')\n"
                                         + line))
    result = grade_src(SLUG, src)
    assert result.score == result.max_score == 9, [t.message for t in result.tests]


def test_workers_start_without_the_fork_server_too(tmp_path):
    import os
    import subprocess
    import sys

    grade = str(Path(sys.executable).with_name("grade"))
    proc = subprocess.run([grade, "--submission", str(catalog.SOLUTIONS_DIR), SLUG,
                           "patch_vit", "-q", "--report-dir", str(tmp_path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GRADER_FORKSERVER": "0"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Score 23/23" in proc.stdout


def test_a_worker_whose_fork_fails_starts_with_subprocess_and_its_own_harness(tmp_path,
                                                                               monkeypatch):
    from grader.sandbox import forkserver
    from grader.sandbox.process import WorkerProcess

    def refuse(self, **kw):
        raise OSError("the fork server is gone")

    monkeypatch.setattr(forkserver.ForkServer, "spawn", refuse)
    shutil.copy(catalog.get(SLUG).solution, tmp_path / f"{SLUG}.py")
    with WorkerProcess({SLUG: tmp_path / f"{SLUG}.py"}) as worker:
        worker.start()
        assert not isinstance(worker.proc, forkserver.ForkedWorker)
        assert (worker.workdir / isolation.HARNESS_NAME / "worker.py").is_file()
        reply = worker.request("call", module=SLUG, func=SLUG, args=(2, 2, 0, 1))
        assert reply.value.shape == (5, 5)


NEIGHBOURS = """import os, socket
_kept = []


def where():
    return [os.getpid(), os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/pid")]


def open_files():
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed since
            continue
        if target.startswith("socket:"):  # which kind: the handout is a SOCK_SEQPACKET one
            with socket.socket(fileno=os.dup(int(fd))) as s:
                target = f"socket:{s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)}"
        held.append(target)
    return sorted(held)


def listen(port):
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        s.bind(("127.0.0.1", port))
        if kind == socket.SOCK_STREAM:
            s.listen()
        _kept.append(s)


def reach(port):
    out = []
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2)
        out.append("tcp connected")
    except OSError as exc:
        out.append(f"tcp: {exc.strerror}")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", port))
        out.append("udp sent")
    except OSError as exc:
        out.append(f"udp: {exc.strerror}")
    return out
"""


@pytest.mark.skipif(isolation.probe().level != "strict", reason="needs the namespaces")
def test_workers_of_one_fork_server_reach_nothing_through_its_network_namespace(tmp_path):
    """A fork server run as root keeps one network namespace (no interface up) for all its
    workers and forks each into a PID namespace of its own, as process 1: two workers alive
    at once, one listening on the loopback address, cannot reach each other."""
    from grader.sandbox import forkserver
    from grader.sandbox.process import WorkerProcess

    (tmp_path / "m.py").write_text(NEIGHBOURS)
    with WorkerProcess({"m": tmp_path / "m.py"}) as a, \
            WorkerProcess({"m": tmp_path / "m.py"}) as b:
        a.request("call", module="m", func="listen", args=(47001,))
        assert b.request("call", module="m", func="reach", args=(47001,)).value == [
            "tcp: Network is unreachable", "udp: Network is unreachable"]
        where = [w.request("call", module="m", func="where").value for w in (a, b)]
        assert [pid for pid, _, _ in where] == [1, 1]
        if isinstance(a.proc, forkserver.ForkedWorker) and a.proc.init:
            assert where[0][1] == where[1][1]  # one network namespace, shared...
            assert where[0][2] != where[1][2]  # ...and a PID namespace each
        # none of the fork server's descriptors (its PID namespace, its control socket) is
        # left open in a worker (b's own sockets are closed already): its one socket is its
        # end of the pair it is handed shared inputs on (``shared_inputs.Handout``)
        held = b.request("call", module="m", func="open_files").value
        assert not [f for f in held if f.startswith(("pid:", "net:", "mnt:"))], held
        assert [f for f in held if f.startswith("socket:")] == \
            [f"socket:{int(socket.SOCK_SEQPACKET)}"], held


@pytest.mark.skipif(isolation.probe().level != "strict", reason="the disk cache needs strict")
def test_expected_values_are_cached_on_disk_and_a_bad_entry_is_recomputed(tmp_path,
                                                                         monkeypatch):
    from grader.judge import expected
    monkeypatch.chdir(tmp_path)
    shutil.copy(catalog.get(SLUG).solution, tmp_path / f"{SLUG}.py")
    expected._MEMORY.clear()  # earlier tests of this process computed them in memory
    assert run("--submission", str(tmp_path), SLUG, "-q").exit_code == 0
    entries = list((tmp_path / ".grade" / "cache" / "expected").rglob("*.bin"))
    assert len(entries) >= 8
    for entry in entries:
        entry.write_bytes(b"garbage")  # a damaged cache is ignored, never trusted
    expected._MEMORY.clear()
    assert run("--submission", str(tmp_path), SLUG, "-q").exit_code == 0
    expected.use_disk(None)


@pytest.mark.parametrize("body, why", [
    ("    x = np.ones(2**27)  # 1 GiB, under the address-space cap\n    time.sleep(10)\n",
     "out of memory: over the 0.25 GiB limit"),
    ("    for _ in range(300):\n        if os.fork() == 0:\n            time.sleep(30)\n"
     "            os._exit(0)\n    time.sleep(10)\n", "over 128 processes"),
], ids=["memory", "processes"])
def test_without_a_cgroup_the_grader_watches_memory_and_processes(grade_src, monkeypatch,
                                                                   body, why):
    caps = isolation.probe()
    # the grader's sampling alone: no cgroup, and no per-uid process limit (RLIMIT_NPROC
    # stops a fork bomb of another uid first, as the learner's BlockingIOError)
    monkeypatch.setattr(isolation, "probe", lambda: isolation.Capabilities(
        landlock_abi=caps.landlock_abi, netns=caps.netns, cgroup=False,
        drop_uid=False, layers=caps.layers))
    if why.startswith("out of memory"):
        monkeypatch.setattr(isolation, "MEMORY_BYTES", 256 * 2**20)
    src = f"import os\nimport time\nimport numpy as np\n\ndef grid_local_mask(*a, **k):\n{body}"
    t = grade_src(SLUG, src).tests[0]
    assert t.status == "crashed", t
    assert why in t.message


@pytest.mark.parametrize("argv, servers", [
    (["grid_local_mask"], ["numpy"]), (["run", "patch_vit", "-q"], ["torch"]),
    (["list"], []), (["bulk", "class", "--out", "o"], []), ([], []),
    (["grid_local_mask", "--help"], [])])
def test_the_grade_command_starts_the_fork_server_its_exercises_need(argv, servers):
    import subprocess
    import sys

    code = ("import sys; from grader import launch; from grader.sandbox import forkserver; "
            "launch.start_fork_server_early(sys.argv[1:]); "
            "print(sorted(k[1] for k, v in forkserver._SERVERS.items() if v))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == str(servers), out.stderr


@pytest.mark.skipif(isolation.probe().level != "strict", reason="every layer must work here")
def test_a_missing_layer_is_named_and_strict_needs_it(monkeypatch):
    """Without libseccomp the one probe that confines a child like a worker is not enough:
    each layer is probed alone, the seccomp layer says why it is missing, the others stay."""
    from grader.sandbox.harness import syscall_filter

    monkeypatch.setattr(syscall_filter, "available", lambda: "libseccomp cannot be loaded")
    isolation.probe.cache_clear()
    try:
        caps = isolation.probe()
        layers = {layer.name: layer for layer in caps.layers}
        assert not layers["seccomp"].active
        assert "libseccomp cannot be loaded" in layers["seccomp"].detail
        assert all(layers[n].active for n in ("tmpfs work folder", "PID namespace",
                                              "no capabilities", "landlock"))
        assert caps.missing() == ["a seccomp filter"] and caps.level == "basic"
    finally:
        isolation.probe.cache_clear()


def test_a_killed_graders_staging_folders_are_swept_later(tmp_path, monkeypatch):
    """Folders in the staging root are named after their grader's process: a later probe
    removes those whose process has ended and that were left untouched for an hour, and
    nothing else."""
    import os
    import time

    monkeypatch.setattr(isolation, "staging_root", lambda: str(tmp_path))
    dead = 2 ** 22 + 12345  # above pid_max's default ceiling: no such process
    old = time.time() - 2 * isolation.STALE_AFTER_S
    folders = {name: tmp_path / name for name in (
        f"grade-bulk-{dead}-abc", f"grade-worker-{dead}-def", f"grade-serve-{dead}-ghi",
        f"grade-bulk-{os.getpid()}-live", f"grade-worker-{dead}-recent", "grade-bulk-notapid",
        f"other-{dead}-x")}
    for name, path in folders.items():
        (path / "submission").mkdir(parents=True)
        if not name.endswith("recent"):
            os.utime(path, (old, old))
    isolation.sweep_stale_staging()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"grade-bulk-{os.getpid()}-live", f"grade-worker-{dead}-recent", "grade-bulk-notapid",
         f"other-{dead}-x"])


def test_the_fork_servers_warm_up_leaves_nothing_behind(tmp_path):
    """The fork server runs the worker's paths once on a trusted module before any fork: the
    module is unloaded, its folder removed and its pipe closed (run in a process of its own,
    as the server does: the worker's paths reset ``builtins``)."""
    probe = ("import gc, os, sys\n"
             "from grader.sandbox.harness import zygote\n"
             "gc.collect()\n"
             "before = sorted(os.listdir('/proc/self/fd'))\n"
             "zygote._warm_up()\n"
             "print(zygote._WARM_MODULE in sys.modules, before == sorted(os.listdir("
             "'/proc/self/fd')))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
    assert list(tmp_path.iterdir()) == []
