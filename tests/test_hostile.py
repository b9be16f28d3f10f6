"""The hostile-submission corpus: each submission gets the verdict it must get, through the
real `grade bulk` CLI, and none of them changes another's result or the machine."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import edit_source

from grader import catalog
from grader.sandbox import isolation

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
REF = catalog.get(SLUG).solution.read_text()
FIRST = "square_grid_radius_1"  # the first test of the suite: n_prefix=1, a 3x3 grid

pytestmark = pytest.mark.skipif(isolation.probe().level != "strict",
                                reason="this machine offers no filesystem/network isolation")


def fn(body: str) -> str:
    """A learner file whose grid_local_mask runs ``body`` first, then the reference."""
    ref = edit_source(REF, ("def grid_local_mask(", "def _reference("))
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return (f"{ref}\n\ndef grid_local_mask(H_p, W_p, radius, n_prefix=1):\n{indented}\n"
            "    return _reference(H_p, W_p, radius, n_prefix)\n")


FORGE_AT_IMPORT = """
import io, json, struct, sys
import numpy as np
_p = sys.modules["gradeharness.protocol"]
_real = _p.encode_frame
_buf = io.BytesIO()
np.save(_buf, np.zeros(4, np.uint8))
NPY = _buf.getvalue()


def _forged(header, payload):
    if header.get("ok") is None or payload is None and header.get("ok") is True:
        return _real(header, payload)
    data = json.dumps({reply}).encode()
    return [struct.pack(">Q", len(data)), data{blob_part}]


_p.encode_frame = _forged
"""


def _forge(reply: str, learner: str, blobs: str = "") -> str:
    """``learner`` (a learner file) whose every reply after the first is ``reply``."""
    return learner + FORGE_AT_IMPORT.replace("{reply}", reply).replace(
        "{blob_part}", f", {blobs}" if blobs else "")


def corpus(ctx: dict[str, str]) -> dict[str, str | bytes]:
    return {
        "loop": fn("while True:\n    pass"),
        "sleep_at_import": "import time\ntime.sleep(10**6)\n",
        "fork_bomb": fn("import os\nwhile True:\n    os.fork()"),
        "setsid_child_lingers": fn(
            "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(10**6)\n"
            "    os._exit(0)"),
        "memory_bomb_numpy": fn("import numpy as np\nx = np.ones(10**10)"),
        "memory_bomb_torch": fn("import torch\nx = torch.ones(10**10)"),
        "stdout_flood": fn("import os, sys\nchunk = b'x' * 2**20\nfor _ in range(1024):\n"
                           "    os.write(1, chunk)\nfor _ in range(50):\n"
                           "    print('y' * 2**20)"),
        "sys_exit_at_import": "import sys\nsys.exit(0)\n",
        "os_exit_at_import": "import os\nos._exit(0)\n",
        "sys_exit_in_call": fn("import sys\nsys.exit(0)"),
        "os_exit_in_call": fn("import os\nos._exit(0)"),
        # in its own PID namespace getppid() is 0: the parent's number is read from /proc
        "kill_the_grader": fn(
            "import os, signal\nppid = int([l for l in open('/proc/self/status')\n"
            "            if l.startswith('PPid')][0].split()[1])\nos.kill(ppid, signal.SIGKILL)"),
        "segfault": fn("import ctypes\nctypes.string_at(0)"),
        "deep_recursion": fn("import sys\nsys.setrecursionlimit(10**6)\n"
                             "def f(n):\n    return f(n + 1) + 1\nf(0)"),
        "read_reference_by_path": fn(
            f"src = open({ctx['solution']!r}).read()\nns = {{}}\nexec(src, ns)\n"
            "return ns['grid_local_mask'](H_p, W_p, radius, n_prefix) | True"),
        "walk_filesystem": fn(
            "import os\nfound = []\nfor root in ('/', os.path.dirname(__file__) + '/../..'):\n"
            "    for d, _, files in os.walk(root):\n"
            "        found += [os.path.join(d, f) for f in files\n"
            "                  if f == 'test_grid_local_mask.py']\n"
            "        if len(found) > 0:\n            break\n"
            "if found:\n    raise RuntimeError('FOUND ' + found[0])"),
        "read_other_submission": fn(
            f"import glob\nothers = glob.glob({ctx['klass']!r} + '/*/*.py') + "
            "glob.glob('/tmp/grade-worker-*/submission/*.py')\n"
            "for p in others:\n    open(p).read()\n"
            "if others:\n    raise RuntimeError('READ ' + others[0])"),
        "write_into_reports": fn(f"open({ctx['out']!r} + '/pwned.html', 'w').write('pwned')"),
        "tcp_to_loopback": fn(
            f"import socket\ns = socket.create_connection(('127.0.0.1', {ctx['port']}), 2)\n"
            "s.sendall(b'stolen')"),
        "monkeypatch_numpy_and_builtins": (
            "import builtins, numpy, numpy.testing\n"
            "numpy.allclose = lambda *a, **k: True\nnumpy.array_equal = lambda *a, **k: True\n"
            "numpy.testing.assert_allclose = lambda *a, **k: None\n"
            "builtins.isinstance = lambda *a: True\n"
            "def grid_local_mask(H_p, W_p, radius, n_prefix=1):\n"
            "    return numpy.zeros((n_prefix + H_p * W_p,) * 2, dtype=bool)\n"),
        "ndarray_subclass": fn("import numpy as np\nclass Liar(np.ndarray):\n"
                               "    def __eq__(self, other):\n        return True\n"
                               "return np.zeros((2, 2)).view(Liar)"),
        "eq_always_true": fn("class Eq:\n    def __eq__(self, other):\n        return True\n"
                             "return Eq()"),
        "array_that_lies": fn("class A:\n    def __array__(self, *a, **k):\n"
                              "        import numpy as np\n        return np.ones((10, 10), bool)\n"
                              "return A()"),
        "gigantic_array": fn("import numpy as np\nreturn np.zeros(100 * 2**20)"),
        "pickled_payload": fn("import pickle\nreturn pickle.dumps(object)"),
        "forged_protocol_tag": fn("return {'$a': 0}"),
        "sitecustomize_and_pth": fn(
            "import os, site\n"
            "open('sitecustomize.py', 'w').write('print(\"PWNED\")')\n"
            "open('evil.pth', 'w').write('import os; print(\"PWNED\")')\n"
            "for d in site.getsitepackages():\n    try:\n"
            "        open(os.path.join(d, 'evil.pth'), 'w').write('print(\"PWNED\")')\n"
            "    except OSError:\n        pass\n"
            "if n_prefix == 1 and H_p == 3:\n    os._exit(3)"),
        "changes_its_own_file": fn(
            f"for p in (__file__, {ctx['klass']!r} + '/changes_its_own_file/grid_local_mask.py'):\n"
            "    try:\n        open(p, 'w').write('def grid_local_mask(*a): return 1\\n')\n"
            "    except OSError:\n        pass"),
        "non_utf8_source": b"# \xff\xfe latin-1 bytes\ndef grid_local_mask(): pass\n",
        "imports_missing_module": "import does_not_exist_anywhere\n",
        "reads_grader_memory": fn(
            "ppid = [l for l in open('/proc/self/status') if l.startswith('PPid')][0].split()[1]\n"
            "open(f'/proc/{ppid}/environ').read()"),
        "holds_no_capabilities": fn(
            "lines = open('/proc/self/status').read().splitlines()\n"
            "status = dict(line.split(':', 1) for line in lines)\n"
            "caps = {k: v.strip() for k, v in status.items() if k.startswith('Cap')}\n"
            "if any(int(v, 16) for v in caps.values()) or status['NoNewPrivs'].strip() != '1' \\\n"
            "        or status['Seccomp'].strip() != '2':\n"
            "    raise RuntimeError('PRIVILEGED ' + repr(caps))"),
        "sethostname": fn("import socket\nsocket.sethostname('pwned')"),
        "negative_nice": fn("import os\nos.nice(-20)"),
        "realtime_scheduling": fn("import os\nos.sched_setscheduler(0, os.SCHED_FIFO, "
                                  "os.sched_param(1))"),
        "mknod_kmsg": fn("import os, stat\nos.mknod('kmsg', 0o600 | stat.S_IFCHR, "
                         "os.makedev(1, 11))\nopen('kmsg', 'rb').read(100)"),
        "chmod_outside": fn(f"import os\nos.chmod({ctx['canary']!r}, 0o4777)"),
        "chown_outside": fn(f"import os\nos.chown({ctx['canary']!r}, 12345, 12345)"),
        "utime_outside": fn(f"import os\nos.utime({ctx['canary']!r}, (0, 0))"),
        "setxattr_outside": fn(f"import os\nos.setxattr({ctx['canary']!r}, 'user.pwned', b'1')"),
        "chattr_outside": fn(
            f"import fcntl, os, struct\nfd = os.open({ctx['canary']!r}, os.O_RDONLY)\n"
            "fcntl.ioctl(fd, 0x40086602, struct.pack('i', 0x10))  # FS_IOC_SETFLAGS, +i"),
        "veth_into_host": fn(
            "import socket, subprocess\ntry:\n"
            "    subprocess.run(['ip', 'link', 'add', 'gradeveth0', 'netns', '1', 'type',\n"
            "                    'veth', 'peer', 'gradeveth1'], capture_output=True)\n"
            "except OSError:\n    pass  # no ip command: the socket below is what it would use\n"
            "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)"),
        "unix_socket_by_path": fn(
            f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({ctx['unix']!r})\n"
            "s.sendall(b'stolen')"),
        # the host's cgroups (v1's memory controller, else the unified tree): present, refused
        "cgroup_of_the_neighbour": fn(f"import os\nos.listdir({_cgroups()!r})"),
        "disk_flood": fn(
            "import os\nchunk = b'x' * 2**20\nfor i in range(24):\n"
            "    with open(f'flood{i}', 'wb') as f:\n"
            "        for _ in range(63):\n            f.write(chunk)"),
        "immutable_leftover": fn(
            "import fcntl, os, struct\nopen('keep', 'w').write('x')\n"
            "fd = os.open('keep', os.O_RDONLY)\n"
            "fcntl.ioctl(fd, 0x40086602, struct.pack('i', 0x30))  # +i +a"),
        # the harness is the learner's to patch: a reply with wrong field types, a tensor
        # tagged with a dtype no grader reads, an output cap lifted to 4 MiB a call
        "forged_reply_types": _forge(
            "{'ok': False, 'kind': 'exception', 'where': 'call', 'type': 'ValueError', "
            "'mro': 'ValueError', 'message': {'x': 1}, 'traceback': 5, 'output': ''}",
            fn("raise ValueError('x')")),
        "forged_float8_tensor": _forge(
            "{'ok': True, 'output': '', 'value': {'$T': 0, 'dtype': 'float8_e4m3fn', "
            "'device': 'cpu'}, 'blobs': [len(NPY)]}", fn("pass"), "NPY"),
        "lifted_output_cap": fn("print('z' * 4 * 2**20)") +
        "\nimport gradeharness.worker as w\nw.OUTPUT_CAP = 2**30\n",
        "escape_sequences": fn(
            "E = type('Score\\x1b]0;pwned\\x07\\x1b[1A\\x1b[2K', (ValueError,), {})\n"
            "raise E('\\rScore 9/9\\x1b[8mhidden\\x1b[0m')"),
        "raises_for_everything": (
            "class Everything(ValueError, TypeError, KeyError, IndexError, ArithmeticError):\n"
            "    pass\n\ndef grid_local_mask(*args, **kwargs):\n    raise Everything('no')\n"),
        # 100 busy processes, started (once) as the neighbour's worker appears: they share
        # this worker's one CPU, and the neighbour's calls must not time out
        "spinners_beside_a_neighbour": fn(
            "import os, time\nif not os.path.exists('spun'):\n    open('spun', 'w').close()\n"
            "    for _ in range(100):\n        if os.fork() == 0:\n            os.setsid()\n"
            "            try:\n                os.nice(-20)\n            except OSError:\n"
            "                pass\n            while True:\n                pass"),
    }


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    klass, out = base / "class", base / "out"
    hits: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                hits.append(conn.recv(100))
                conn.close()
            except OSError:
                continue

    threading.Thread(target=serve, daemon=True).start()
    canary = base / "canary.txt"  # outside every work folder: its metadata must not change
    canary.write_text("canary")
    private = base / "private"  # a Unix socket in a mode-700 folder
    private.mkdir(mode=0o700)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(private / "grader.sock"))
    unix.listen()
    unix.settimeout(0.2)

    def serve_unix() -> None:
        while not stop.is_set():
            try:
                conn, _ = unix.accept()
                hits.append(b"unix:" + conn.recv(100))
                conn.close()
            except OSError:
                continue

    threading.Thread(target=serve_unix, daemon=True).start()
    canary_before = _metadata(canary)
    ctx = {"solution": str(catalog.get(SLUG).solution), "klass": str(klass), "out": str(out),
           "port": str(server.getsockname()[1]), "canary": str(canary),
           "unix": str(private / "grader.sock")}
    files = corpus(ctx)
    for name, src in {**files, "control_ok": REF,
                      "control_wrong": edit_source(REF, ("return mask", "return ~mask"))}.items():
        (klass / name).mkdir(parents=True)
        path = klass / name / f"{SLUG}.py"
        path.write_bytes(src) if isinstance(src, bytes) else path.write_text(src)
    before = {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()}
    tmp = base / "tmp"  # the grader's own temporary folder: workers' folders go there
    tmp.mkdir()
    proc = subprocess.run([GRADE, "bulk", str(klass), "--out", str(out), "--exercises", SLUG,
                           "--workers", "2", "--time-budget", "12", "--isolation", "strict",
                           "-q"], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TMPDIR": str(tmp)})
    stop.set()
    server.close()
    unix.close()
    results = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}
    return {"proc": proc, "results": results, "files": files, "klass": klass, "out": out,
            "before": before, "hits": hits, "tmp": tmp, "base": base,
            "canary": (canary_before, _metadata(canary))}


def _metadata(path: Path) -> tuple:
    """What a learner must not be able to change about a file outside its work folder."""
    info = os.stat(path)
    flags = subprocess.run(["lsattr", "-d", str(path)], capture_output=True, text=True).stdout \
        if shutil.which("lsattr") else ""
    return (info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, os.listxattr(path),
            flags.split()[0] if flags else "")


def _tests_of(batch, name):
    return {t["name"]: t for t in batch["results"][name]["exercises"][0]["tests"]}


def test_the_batch_completes(batch):
    proc = batch["proc"]
    grades = batch["out"] / "grades.csv"
    ungraded = [line for line in grades.read_text().splitlines()
                if "not graded" in line] if grades.exists() else ["no grades.csv"]
    assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-1500:], ungraded)
    assert len(batch["files"]) >= 25
    assert set(batch["results"]) == (set(batch["files"]) | {"control_ok", "control_wrong"}) - {
        "non_utf8_source"}


def test_controls_are_unaffected(batch, tmp_path):
    small = tmp_path / "class"
    for name in ("control_ok", "control_wrong"):
        (small / name).mkdir(parents=True)
        (small / name / f"{SLUG}.py").write_bytes(batch["before"][batch["klass"] / name /
                                                                  f"{SLUG}.py"])
    subprocess.run([GRADE, "bulk", str(small), "--out", str(tmp_path / "out"), "--exercises",
                    SLUG, "-q"], check=True, capture_output=True, timeout=300)
    for name in ("control_ok", "control_wrong"):
        alone = json.loads((tmp_path / "out" / name / "results.json").read_text())
        together = batch["results"][name]
        assert [(t["name"], t["status"], t["message"]) for t in alone["exercises"][0]["tests"]] \
            == [(t["name"], t["status"], t["message"])
                for t in together["exercises"][0]["tests"]]
    assert batch["results"]["control_ok"]["score"] == 9


def _cgroups() -> str:
    """The host's cgroup folder a worker may try to list (GPU machines have no v1 memory one)."""
    return next((p for p in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup") if os.path.isdir(p)),
                "/sys/fs/cgroup")


# Files outside the work folder that lie, like this test's, under a folder others cannot enter
# (pytest's, mode 0700): a worker of another uid has that folder covered in its own mounts by
# a tmpfs holding only the way to its work folder, so it does not even find them.
UNSEEN = {"write_into_reports", "chattr_outside"}


@pytest.mark.parametrize("name, status, words", [
    # the call's 10 s, or (a fair retry on a loaded machine) the submission's 12 s
    ("loop", "timeout", "timed out"),
    ("sleep_at_import", "timeout", "importing grid_local_mask.py: timed out"),
    ("sys_exit_at_import", "error", "sys.exit(0)"),
    ("os_exit_at_import", "crashed", "exit code 0"),
    ("sys_exit_in_call", "error", "sys.exit(0)"),
    ("os_exit_in_call", "crashed", "exit code 0"),
    ("kill_the_grader", "error", "ProcessLookupError"),  # not in its PID namespace
    ("segfault", "crashed", "signal SIGSEGV"),
    ("read_reference_by_path", "error", "PermissionError"),
    ("write_into_reports", "error", "PermissionError"),
    ("tcp_to_loopback", "error", "OSError"),
    ("monkeypatch_numpy_and_builtins", "failed", "values differ"),
    ("ndarray_subclass", "failed", "not plain data"),
    ("eq_always_true", "failed", "not plain data"),
    ("array_that_lies", "failed", "not plain data"),
    ("gigantic_array", "failed", "over the"),
    ("pickled_payload", "failed", "not plain data"),
    ("forged_protocol_tag", "failed", "expected an array"),
    ("imports_missing_module", "error", "ModuleNotFoundError"),
    ("reads_grader_memory", "error", "PermissionError"),
    ("holds_no_capabilities", "passed", ""),
    ("sethostname", "error", "PermissionError"),
    ("negative_nice", "error", "PermissionError"),
    ("realtime_scheduling", "error", "PermissionError"),
    ("mknod_kmsg", "error", "PermissionError"),
    ("chmod_outside", "error", "PermissionError"),
    ("chown_outside", "error", "PermissionError"),
    ("utime_outside", "error", "PermissionError"),
    ("setxattr_outside", "error", "PermissionError"),
    ("chattr_outside", "error", "PermissionError"),
    ("veth_into_host", "error", "PermissionError"),
    ("unix_socket_by_path", "error", "PermissionError"),
    ("cgroup_of_the_neighbour", "error", "PermissionError"),
    ("disk_flood", "error", "wrote more than 256 MiB"),
    ("immutable_leftover", "error", "PermissionError"),
    ("forged_reply_types", "failed", "returned data the grader cannot read"),
    ("forged_float8_tensor", "failed", "returned data the grader cannot read"),
    ("lifted_output_cap", "passed", ""),
    ("escape_sequences", "error", "\\x1b]0;pwned\\x07"),
])
def test_verdicts(batch, name, status, words):
    if name in UNSEEN and isolation.probe().drop_uid:
        words = "FileNotFoundError"
    first = _tests_of(batch, name)[FIRST]
    assert first["status"] == status, first
    assert words in first["message"], first["message"]


def test_loops_use_up_the_budget_not_the_whole_run(batch):
    tests = list(_tests_of(batch, "loop").values())
    ended = [i for i, t in enumerate(tests) if "time budget of 12 s" in t["message"]]
    # the budget's 12 s end within the first two tests: the first call runs out its 10 s (on
    # a loaded machine a fair retry gives it another 10 s, on a fresh worker, and the budget
    # ends there), the second call the rest
    assert ended and ended[0] <= 1, [t["message"] for t in tests]
    assert all(t["status"] == "timeout" for t in tests[:ended[0] + 1])
    # then nothing more is called: every later test is not run, or says the budget is used up
    assert all(t["status"] == "not_run" or "time budget of 12 s" in t["message"]
               for t in tests[ended[0] + 1:])


@pytest.mark.parametrize("name, status, words", [
    # the worker's process limit: the first fork past it fails with EAGAIN
    ("fork_bomb", "error", "BlockingIOError: [Errno 11] Resource temporarily unavailable"),
    # the worker's memory limit: the allocation is refused, the learner's code sees the error
    ("memory_bomb_numpy", "error", "MemoryError: Unable to allocate 74.5 GiB"),
    # a million frames under the harness outlast the call's 10 s limit (or the submission's
    # 12 s, where load starved the call and it was retried)
    ("deep_recursion", "timeout", "timed out"),
])
def test_resource_bombs_fail_without_harm(batch, name, status, words):
    first = _tests_of(batch, name)[FIRST]
    assert first["status"] == status, first
    assert words in first["message"], first["message"]


def test_nothing_outside_the_work_folder_changed(batch):
    before, after = batch["canary"]
    assert before == after
    if shutil.which("ip"):  # no interface was added to the host's network namespace
        ip = subprocess.run(["ip", "link", "show", "gradeveth0"], capture_output=True)
        assert ip.returncode != 0


def test_escapes_find_nothing(batch):
    for name in ("walk_filesystem", "read_other_submission"):
        for t in _tests_of(batch, name).values():
            assert "FOUND" not in t["message"] and "READ" not in t["message"], t
    assert batch["hits"] == []  # the loopback server never heard from a learner
    assert not (batch["out"] / "pwned.html").exists()


def test_learner_text_reaches_no_terminal_raw(batch):
    first = _tests_of(batch, "escape_sequences")[FIRST]
    assert "\x1b" not in first["message"] and "\r" not in first["message"]
    shown = batch["proc"].stdout + batch["proc"].stderr + (batch["out"] / "index.html").read_text()
    assert "\x1b" not in shown and "pwned\x07" not in shown


def test_a_lifted_output_cap_is_still_capped_by_the_reader(batch):
    for t in _tests_of(batch, "lifted_output_cap").values():
        assert len(t["output"]) < 70_000, len(t["output"])


def test_raising_for_everything_earns_nothing(batch):
    assert batch["results"]["raises_for_everything"]["score"] == 0


def test_flood_is_truncated_and_the_answer_still_counts(batch):
    first = _tests_of(batch, "stdout_flood")[FIRST]
    assert first["status"] == "passed"
    assert "[output truncated" in first["output"] and len(first["output"]) < 200_000


def test_dropped_startup_files_are_never_run(batch):
    tests = _tests_of(batch, "sitecustomize_and_pth")
    assert tests[FIRST]["status"] == "crashed"
    assert all("PWNED" not in t["output"] for t in tests.values())
    assert tests["radius_0"]["status"] == "passed"  # a fresh worker, with nothing left behind


def test_bad_source_is_rejected_with_a_reason(batch):
    html = (batch["out"] / "index.html").read_text()
    assert "non_utf8_source" in html and "not UTF-8" in html


def test_machine_is_left_as_it_was(batch):
    after = {p: p.read_bytes() for p in batch["klass"].rglob("*") if p.is_file()}
    assert after == batch["before"]  # the learners' files were not changed
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(batch["tmp"]) not in ps  # no worker or escaped child of this run is left
    assert list(batch["tmp"].iterdir()) == []  # every work folder was removed
    written = {p.relative_to(batch["base"]).parts[0] for p in batch["base"].rglob("*")}
    assert written <= {"class", "out", "tmp", "canary.txt", "private"}


def test_a_torch_allocation_bomb_fails_with_the_memory_error(tmp_path):
    """A file that imports torch in its call and asks for 40 GB: the allocation is refused
    (the worker's memory limit) and the learner's code sees the error. Graded on its own with
    a time budget that importing torch on a loaded machine cannot use up (the batch's 12 s
    could: a starved call's retry got what was left of them), so the one outcome is the
    memory error."""
    files = corpus({"solution": "", "klass": "", "out": "", "port": "0", "canary": "",
                    "unix": ""})
    klass = tmp_path / "class"
    for name, src in {"memory_bomb_torch": files["memory_bomb_torch"], "control_ok": REF}.items():
        (klass / name).mkdir(parents=True)
        (klass / name / f"{SLUG}.py").write_text(src)
    proc = subprocess.run([GRADE, "bulk", str(klass), "--out", str(tmp_path / "out"),
                           "--exercises", SLUG, "--workers", "2", "--time-budget", "300",
                           "-q"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-1500:])
    results = {p.parent.name: json.loads(p.read_text())
               for p in (tmp_path / "out").glob("*/results.json")}
    assert results["control_ok"]["score"] == 9
    first = {t["name"]: t for t in results["memory_bomb_torch"]["exercises"][0]["tests"]}[FIRST]
    assert first["status"] == "error", first
    assert "can't allocate memory" in first["message"], first["message"]


def test_without_cgroups_the_bombs_are_still_contained(tmp_path):
    """Where no cgroup exists (containers, the GPU machines), the grader itself samples each
    worker's processes and memory: the bombs end with a reason, the control is unharmed."""
    names = ("fork_bomb", "memory_bomb_numpy", "memory_bomb_torch")
    files = corpus({"solution": "", "klass": "", "out": "", "port": "0", "canary": "",
                    "unix": ""})
    klass, tmp = tmp_path / "class", tmp_path / "tmp"
    tmp.mkdir()
    for name, src in {**{n: files[n] for n in names}, "control_ok": REF}.items():
        (klass / name).mkdir(parents=True)
        (klass / name / f"{SLUG}.py").write_text(src)
    proc = subprocess.run([GRADE, "bulk", str(klass), "--out", str(tmp_path / "out"),
                           "--exercises", SLUG, "--workers", "2", "--time-budget", "300",
                           "-q"], capture_output=True, text=True, timeout=900,
                          # (a budget importing torch under load cannot use up)
                          # the grader's sampling alone: no cgroup, and no uid of the
                          # worker's own (whose process limit would stop a fork bomb first)
                          env={**os.environ, "GRADER_CGROUP": "0", "GRADER_UID": "0",
                               "TMPDIR": str(tmp)})
    assert proc.returncode == 0, (proc.stdout[-1500:], proc.stderr[-1500:])
    results = {p.parent.name: json.loads(p.read_text())
               for p in (tmp_path / "out").glob("*/results.json")}
    assert results["control_ok"]["score"] == 9
    first = {n: results[n]["exercises"][0]["tests"][0] for n in names}
    assert first["fork_bomb"]["status"] == "crashed", first["fork_bomb"]
    assert "over 128 processes" in first["fork_bomb"]["message"]
    for name in names[1:]:
        assert "memory" in first[name]["message"].lower(), first[name]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp) not in ps and list(tmp.iterdir()) == []


LINGER = fn(  # a grandchild that leaves the worker's session and sleeps under a unique name
    "import os, time\nif not os.path.exists('forked'):\n    open('forked', 'w').close()\n"
    "    if os.fork() == 0:\n        os.setsid()\n"
    "        os.execv('/bin/sleep', ['sleep', '7391.5'])\ntime.sleep(3)")


@pytest.mark.parametrize("how", ["submission", "bulk"])
def test_nothing_outlives_a_killed_grader(tmp_path, how):
    """SIGKILL of `grade --submission` or `grade bulk` (no clean-up can run) still ends every
    process the learner started: each worker is process 1 of its own PID namespace and dies
    with the fork server that forked it (or with its waiter, when started with subprocess),
    which dies with the grader."""
    klass = tmp_path / "class"
    (klass / "s0").mkdir(parents=True)
    (klass / "s0" / f"{SLUG}.py").write_text(LINGER)
    argv = [GRADE, "--submission", str(klass / "s0"), SLUG, "--report-dir",
            str(tmp_path / "out"), "-q"] if how == "submission" else \
        [GRADE, "bulk", str(klass), "--out", str(tmp_path / "out"), "--exercises", SLUG, "-q"]
    # its temporary folders are left behind (nothing can remove them): here, not in /dev/shm
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(tmp_path)})

    def sleepers() -> list[str]:
        ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        return [line for line in ps.splitlines() if "sleep 7391.5" in line]

    deadline = time.monotonic() + 60
    while not sleepers():
        assert time.monotonic() < deadline and proc.poll() is None, "the child never started"
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while sleepers():
        assert time.monotonic() < deadline, f"outlived the grader: {sleepers()}"
        time.sleep(0.05)
