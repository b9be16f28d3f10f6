"""The seccomp allow-list (``harness/syscall_filter.py``): every reference scores full marks
under it, and what it leaves out fails inside a confined worker with the errno it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import catalog
from grader.sandbox import isolation
from grader.sandbox.harness import syscall_filter

GRADE = str(Path(sys.executable).with_name("grade"))

pytestmark = pytest.mark.skipif(not isolation.probe().seccomp, reason="no seccomp filter here")


def test_every_reference_scores_full_marks_under_the_filter(tmp_path):
    """Without the fork server, Python starts and imports numpy and torch under the filter.
    (With it, every exercise's own tests grade its reference under the filter already.)"""
    forkserver = "0"
    if isolation.probe().level != "strict":
        pytest.skip("needs every layer")
    proc = subprocess.run([GRADE, "--submission", str(catalog.SOLUTIONS_DIR), "--isolation",
                           "strict", "--report-dir", str(tmp_path), "-q"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GRADER_FORKSERVER": forkserver})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads((tmp_path / "results.json").read_text())
    graded = {e["exercise"]: (e["score"], e["max_score"]) for e in data["exercises"]}
    assert set(graded) == {p.stem for p in catalog.SOLUTIONS_DIR.glob("*.py")}
    assert all(score == top > 0 for score, top in graded.values()), graded
    bad = [(t["name"], t["status"], t["message"][:200]) for e in data["exercises"]
           for t in e["tests"] if t["status"] != "passed"]
    assert not bad
    assert data["isolation"]["level"] == "strict"


PROBES = '''import ctypes, errno, fcntl, mmap, os, socket, struct, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def _raw(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]


def _py(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]


def _ioctl(request, path=sys.executable):
    fd = os.open(path, os.O_RDONLY)
    try:
        return _py(lambda: fcntl.ioctl(fd, request, b"\\0" * 8))
    finally:
        os.close(fd)


def _mincore():
    with open(sys.executable, "rb") as f:
        m = mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_COPY)
    vec = ctypes.create_string_buffer(1)
    buf = ctypes.c_char.from_buffer(m)
    addr = ctypes.addressof(buf)
    out = _raw(27, addr, 4096, ctypes.addressof(vec))
    del buf
    m.close()
    return out


def _preadv2(flags):
    fd = os.open(sys.executable, os.O_RDONLY)
    try:
        return _py(lambda: os.preadv(fd, [bytearray(16)], 0, flags))
    finally:
        os.close(fd)


def _fadvise(advice):
    fd = os.open(sys.executable, os.O_RDONLY)
    try:
        return _py(lambda: os.posix_fadvise(fd, 0, 0, advice))
    finally:
        os.close(fd)


def _socket(family, kind=socket.SOCK_STREAM):
    def make():
        s = socket.socket(family, kind)
        if family == 40:  # AF_VSOCK: VMADDR_CID_ANY, a port
            s.bind((0xFFFFFFFF, 1234))
        s.close()
    return _py(make)


def _thread_and_fork():
    import subprocess
    import threading
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    return subprocess.run(["/bin/sh", "-c", "echo hi"], capture_output=True).stdout.decode()


def _record_locks():
    """Each fcntl record-lock command on a library every worker may read (a channel between
    workers: one holds a lock on a byte range, another tests it)."""
    found = {}
    lock = struct.pack("hhqqi", fcntl.F_RDLCK, 0, 7, 1, 0)  # struct flock: bytes 7 to 8
    fd = os.open(os.__file__, os.O_RDONLY)
    for name, cmd in (("F_GETLK", 5), ("F_SETLK", 6), ("F_SETLKW", 7), ("F_OFD_GETLK", 36),
                      ("F_OFD_SETLK", 37), ("F_OFD_SETLKW", 38)):
        found[f"fcntl_{name}"] = _py(lambda cmd=cmd: fcntl.fcntl(fd, cmd, lock))
    found["lockf"] = _py(lambda: fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 3))
    os.close(fd)
    return found


def probe():
    r, w = os.pipe()
    found = {
        "inotify_init1": _raw(294, 0),
        "inotify_init": _raw(253),
        "fanotify_init": _raw(300, 0, 0),
        "mincore": _mincore(),
        "cachestat": _raw(451, 0, 0, 0, 0),
        "socket_vsock": _socket(40),
        "socket_unix": _socket(socket.AF_UNIX),
        "socket_netlink": _socket(socket.AF_NETLINK, socket.SOCK_RAW),
        "socket_packet": _socket(17, socket.SOCK_RAW),
        "socket_inet": _socket(socket.AF_INET),
        "socket_inet6": _socket(socket.AF_INET6),
        "socketpair": _py(lambda: socket.socketpair()),
        "FS_IOC_SETVERSION": _ioctl(0x40087602),
        "FS_IOC_GETVERSION": _ioctl(0x80087601),
        "FS_IOC_SETFLAGS": _ioctl(0x40086602),
        "FS_IOC_FSSETXATTR": _ioctl(0x401C5820),
        "unknown_ioctl": _ioctl(0x1234),
        "FIONBIO": _py(lambda: fcntl.ioctl(r, 0x5421, struct.pack("i", 1))),
        "FIOCLEX": _py(lambda: os.set_inheritable(r, False)),
        "FIONREAD": _py(lambda: fcntl.ioctl(r, 0x541B, b"\\0" * 4)),
        "file_setattr": _raw(469, -100, 0, 0, 0, 0),
        "file_getattr": _raw(468, -100, 0, 0, 0, 0),
        "syscall_1000": _raw(1000),
        "clone3": _raw(435, 0, 0),
        "unshare_by_clone": _raw(56, 0x10000000 | 17, 0, 0, 0, 0),  # CLONE_NEWUSER|SIGCHLD
        "sched_setaffinity": _py(lambda: os.sched_setaffinity(0, {0})),
        "nice_up": _py(lambda: os.nice(1)),
        "nice_down": _py(lambda: os.setpriority(os.PRIO_PROCESS, 0, -1)),
        "renice_user": _py(lambda: os.setpriority(os.PRIO_USER, 0, 19)),
        "prlimit_other": _py(lambda: __import__("resource").prlimit(2, 7)),
        "preadv2": _preadv2(0),
        "preadv2_nowait": _preadv2(os.RWF_NOWAIT),
        "prctl_set_dumpable": _raw(157, 4, 1, 0, 0, 0),
        "prctl_set_name": _raw(157, 15, ctypes.addressof(ctypes.create_string_buffer(b"x")),
                               0, 0, 0),
        "fcntl_setlease": _py(lambda: fcntl.fcntl(r, 1024, fcntl.F_RDLCK)),
        "fcntl_notify": _py(lambda: fcntl.fcntl(r, 1026, 0)),
        "fcntl_getfl": _py(lambda: fcntl.fcntl(r, fcntl.F_GETFL)),
        **_record_locks(),
        "read_meminfo": _py(lambda: open("/proc/meminfo").read()),
        "chmod": _py(lambda: os.chmod(sys.executable, 0o755)),
        "fadvise_dontneed": _fadvise(os.POSIX_FADV_DONTNEED),
        "fadvise_sequential": _fadvise(os.POSIX_FADV_SEQUENTIAL),
        "shmget": _raw(29, 0, 4096, 0o1600),
        "personality": _raw(135, 0xFFFFFFFF),
        "threads_and_subprocess": _thread_and_fork(),
    }
    return found
'''

EXPECTED = {
    "inotify_init1": "EPERM", "inotify_init": "EPERM", "fanotify_init": "EPERM",
    "mincore": "EPERM", "cachestat": "EPERM", "socket_vsock": "EPERM", "socket_unix": "EPERM",
    "socket_netlink": "EPERM", "socket_packet": "EPERM", "socket_inet": "ok",
    "socket_inet6": "ok", "socketpair": "EPERM", "FS_IOC_SETVERSION": "EPERM",
    "FS_IOC_GETVERSION": "EPERM", "FS_IOC_SETFLAGS": "EPERM", "FS_IOC_FSSETXATTR": "EPERM",
    "unknown_ioctl": "ENOTTY", "FIONBIO": "ok", "FIOCLEX": "ok", "FIONREAD": "ok",
    "file_setattr": "EPERM", "file_getattr": "EPERM", "syscall_1000": "ENOSYS",
    "clone3": "ENOSYS", "unshare_by_clone": "EPERM", "sched_setaffinity": "EPERM",
    "nice_up": "ok", "nice_down": "EPERM", "renice_user": "EPERM", "prlimit_other": "EPERM",
    "preadv2": "ok", "preadv2_nowait": "EPERM", "prctl_set_dumpable": "EPERM",
    "prctl_set_name": "ok", "fcntl_setlease": "EPERM", "fcntl_notify": "EPERM",
    "fcntl_getfl": "ok", **{f"fcntl_{name}": "EPERM" for name in (
        "F_GETLK", "F_SETLK", "F_SETLKW", "F_OFD_GETLK", "F_OFD_SETLK", "F_OFD_SETLKW")},
    "lockf": "EPERM", "read_meminfo": "EACCES", "chmod": "EPERM", "fadvise_dontneed": "EPERM",
    "fadvise_sequential": "ok", "shmget": "EPERM", "personality": "ENOSYS",
    "threads_and_subprocess": "hi\n",
}


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """What each probe got inside a worker confined as learner code is."""
    from grader.sandbox.process import WorkerProcess

    path = tmp_path_factory.mktemp("allowlist") / "probes.py"
    path.write_text(PROBES)
    with WorkerProcess({"probes": path}) as worker:
        return worker.request("call", module="probes", func="probe").value


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_confined_worker_gets_what_the_list_says(refused, name):
    assert refused[name] == EXPECTED[name]


def _in_child(code: bytes, calls: str) -> dict[str, str]:
    """``calls`` (Python defining ``probe()`` -> dict) run in a forked child after loading
    ``code`` (a compiled filter) by hand."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            namespace: dict = {}
            exec(compile(PROBES + calls, "probes", "exec"), namespace)
            import ctypes

            buffer = ctypes.create_string_buffer(code, len(code))
            prog = syscall_filter._SockFprog(len(code) // 8,
                                             ctypes.cast(buffer, ctypes.c_void_p))
            syscall_filter.check(syscall_filter.libc.prctl(38, 1, 0, 0, 0), "nnp")
            syscall_filter.check(syscall_filter.libc.prctl(22, 2, ctypes.byref(prog), 0, 0),
                                 "load")
            os.write(write, json.dumps(namespace["found"]()).encode())
        finally:
            os._exit(0)
    os.close(write)
    out = b""
    while chunk := os.read(read, 65536):
        out += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(out)


LOGGED = '''
def found():
    return {"personality": _raw(135, 0xFFFFFFFF), "inotify_init1": _raw(294, 0),
            "unknown_ioctl": _ioctl(0x1234), "clone3": _raw(435, 0, 0)}
'''


def test_another_abi_is_killed():
    """An x32 system call number (the x86_64 ABI's 0x40000000 bit) bypasses nothing."""
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("x86_64 only")
    pid = os.fork()
    if pid == 0:
        try:
            syscall_filter.install()
            import ctypes

            ctypes.CDLL(None).syscall(0x40000000 + 294, 0)  # x32 inotify_init1
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 31  # SIGSYS


def test_the_logging_filter_lets_unnamed_calls_through_and_still_refuses():
    """``GRADER_SECCOMP_LOG=1``: unnamed calls and arguments run (and are logged), explicit
    refusals still fail, clone3 still falls back to clone."""
    code = syscall_filter._compiled(False, True)
    assert _in_child(code, LOGGED) == {"personality": "ok", "inotify_init1": "EPERM",
                                       "unknown_ioctl": "ENOTTY", "clone3": "ENOSYS"}


def test_the_gpu_profile_adds_the_nvidia_ioctls_only_for_cuda_workers(tmp_path):
    sc = syscall_filter._library()[0]
    assert sc is not None
    texts = {}
    for gpu in (False, True):
        with open(tmp_path / f"{gpu}.pfc", "w") as out:
            syscall_filter.prepare(gpu, False).export_pfc(out)
        texts[gpu] = (tmp_path / f"{gpu}.pfc").read_text()
    nvidia = "& 0x0000ff00 == 17920"  # type 'F'
    assert nvidia in texts[True] and nvidia not in texts[False]
    assert '"mlock"' in texts[True] and '"mlock"' not in texts[False]
    assert isolation.Sandbox("cpu").confinement(tmp_path).devices == ()  # the CPU profile
