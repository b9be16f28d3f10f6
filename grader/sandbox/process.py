"""The grader's side of one learner worker: start it, send calls, enforce the wall clock.

A ``WorkerProcess`` serves every call of one submission. When a call times out, crashes the
process or garbles the channel, the process group is killed and the next call starts a
fresh worker (learner modules are imported again there).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import faults, forkserver, isolation
from .harness import protocol
from .treewatch import TreeWatch

FD_OUTPUT_CAP = 64 * 1024


@dataclass
class Reply:
    value: Any
    output: str
    duration_s: float


class _Drain(threading.Thread):
    """Reads the worker's fd 1/2 to the end, keeping the first ``cap`` bytes."""

    def __init__(self, stream: Any, cap: int = FD_OUTPUT_CAP) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.kept = bytearray()
        self.dropped = 0
        self.taken = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        for chunk in iter(lambda: self.stream.read1(65536), b""):
            with self.lock:
                room = self.cap - len(self.kept)
                self.kept += chunk[:max(room, 0)]
                self.dropped += max(0, len(chunk) - max(room, 0))

    def take(self) -> str:
        with self.lock:
            text = self.kept[self.taken:].decode(errors="replace")
            self.taken = len(self.kept)
            if self.dropped and self.taken >= self.cap:
                text += f"\n[output truncated: {self.dropped} more bytes]"
                self.dropped = 0
            return text


class WorkerProcess:
    """One learner submission's worker. ``files`` maps exercise slug -> learner file.

    ``budget_s`` bounds the wall-clock time of all calls of the submission together.
    """

    START_TIMEOUT_S = 60.0

    def __init__(self, files: dict[str, Path], *, device: str = "cpu",
                 budget_s: float = 900.0, preload: str = "numpy") -> None:
        self.files = dict(files)
        self.device = device
        self.preload = preload  # what a warm fork server has imported: "numpy" or "torch"
        self.budget_s = budget_s
        self.deadline: float | None = None
        self.proc: subprocess.Popen[bytes] | forkserver.ForkedWorker | None = None
        self.workdir: Path | None = None
        self.sandbox: isolation.Sandbox | None = None
        self.generation = 0
        self._drain: _Drain | None = None
        self._watch: TreeWatch | None = None
        self._req_w = self._resp_r = -1

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Start a worker; raise ``isolation.SandboxError`` when it cannot be started."""
        isolation.harden_grader()
        if self.deadline is None:
            self.deadline = time.monotonic() + self.budget_s
        self.workdir = isolation.prepare_workdir(self.files)
        self.sandbox = isolation.Sandbox(self.device)
        req_r, self._req_w = os.pipe()
        self._resp_r, resp_w = os.pipe()
        protocol.widen_pipe(self._req_w)
        protocol.widen_pipe(self._resp_r)
        os.set_blocking(self._req_w, False)  # requests are written against the call's deadline
        try:
            spec = self.sandbox.launch(self.workdir, req_r, resp_w)
            self.proc = self._fork(spec, req_r, resp_w) or subprocess.Popen(
                spec.argv, env=spec.env, cwd=spec.cwd, preexec_fn=spec.preexec_fn,
                pass_fds=(req_r, resp_w), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True)
        except (OSError, subprocess.SubprocessError) as exc:
            self.stop()
            raise isolation.SandboxError(f"could not start the sandbox: {exc}") from None
        finally:
            os.close(req_r)
            os.close(resp_w)
        isolation.register_child(self.proc.pid, alive=True)
        self._drain = _Drain(self.proc.stdout)
        self._drain.start()
        self.generation += 1
        try:  # the harness says it is ready before any learner code is imported
            protocol.read_frame(self._resp_r, time.monotonic() + self.START_TIMEOUT_S)
        except protocol.ProtocolError as exc:
            output = self.take_output()
            self.stop()
            raise isolation.SandboxError(
                f"could not start the sandbox: the worker did not start ({exc}); it said: "
                f"{output[-500:] or 'nothing'}") from None
        if not self.sandbox.caps.cgroup:
            self._watch = TreeWatch(self.proc.pid, max_growth=isolation.MEMORY_BYTES,
                                    max_procs=isolation.PIDS)
            self._watch.start()

    def _fork(self, spec: isolation.LaunchSpec, req_r: int,
              resp_w: int) -> forkserver.ForkedWorker | None:
        """A worker forked by the warm server, or None (then it is started with subprocess)."""
        server = forkserver.get(self.preload)
        if server is None:
            return None
        out_r, out_w = os.pipe()
        try:
            pid = server.spawn(env=spec.env, spec=spec.spec, submission=spec.cwd,
                               fds=[req_r, resp_w, out_w])
        except (OSError, ValueError):
            forkserver.drop(server)
            os.close(out_r)
            return None
        finally:
            os.close(out_w)
        return forkserver.ForkedWorker(server, pid, os.fdopen(out_r, "rb"))

    def stop(self) -> None:
        """Kill the worker's whole process tree and remove its work directory."""
        if self._watch is not None:
            self._watch.stop()
            self._watch.join(timeout=2)  # done with the pid before it is reaped (and reusable)
        if self.proc is not None:
            if self.sandbox is not None:
                self.sandbox.kill_all(self.proc.pid)
            self.proc.wait()
            isolation.register_child(self.proc.pid, alive=False)
            if self._drain is not None:
                self._drain.join(timeout=1)
            self.proc = None
        for fd in (self._req_w, self._resp_r):
            if fd >= 0:
                os.close(fd)
        self._req_w = self._resp_r = -1
        if self.sandbox is not None:
            self.sandbox.cleanup()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def take_output(self) -> str:
        """Output the worker wrote to its file descriptors 1 and 2 since the last call."""
        return self._drain.take() if self._drain is not None else ""

    # -- calls --------------------------------------------------------------------------
    def request(self, op: str, *, module: str, func: str = "", args: tuple = (),
                kwargs: dict | None = None, handle: int | None = None,
                timeout: float = 10.0) -> Reply:
        if self.proc is None:
            self.start()
        header = {"op": op, "module": module, "func": func, "handle": handle}
        try:
            frame = protocol.encode_frame(header, [list(args), dict(kwargs or {})])
        except protocol.ProtocolError as exc:
            raise RuntimeError(f"grader bug: cannot send arguments: {exc}") from exc
        left = (self.deadline or float("inf")) - time.monotonic()
        if left <= 0:
            raise faults.TimedOut(self.budget_s, message=self._budget_message())
        deadline = time.monotonic() + min(timeout, left)
        try:
            protocol.write_frame(self._req_w, frame, deadline)
            head, blobs = protocol.read_frame(self._resp_r, deadline)
        except protocol.ReadTimeout:
            self.stop()
            if timeout > left:
                raise faults.TimedOut(self.budget_s, message=self._budget_message()) from None
            raise faults.TimedOut(timeout) from None
        except (protocol.PeerClosed, BrokenPipeError):
            code = self.proc.wait() if self.proc is not None else None
            why = self._why_it_ended(code)
            self.stop()
            raise faults.Crashed(code, why=why) from None
        except protocol.ProtocolError as exc:
            self.stop()
            raise faults.BadReturn(f"the result could not be read: {exc}") from None
        output = str(head.get("output", ""))
        if not head.get("ok"):
            raise self._fault(head, output, module)
        try:
            value = protocol.decode_value(head, blobs, tensor_device=None)
        except protocol.ProtocolError as exc:
            raise faults.BadReturn(f"the result could not be read: {exc}", output=output) from None
        return Reply(value=value, output=output, duration_s=float(head.get("duration_s", 0.0)))

    def _budget_message(self) -> str:
        return (f"timed out: the submission's time budget of {self.budget_s:g} s for all its "
                "calls is used up")

    def _why_it_ended(self, code: int | None) -> str:
        if code == -signal.SIGKILL and self._watch is not None and self._watch.why:
            return self._watch.why
        if code == -signal.SIGKILL and self.sandbox is not None and self.sandbox.out_of_memory():
            return f"out of memory: over the {isolation.MEMORY_BYTES / 2**30:g} GiB limit"
        if code == -signal.SIGXCPU:
            return f"CPU time limit of {isolation.CPU_SECONDS} s"
        if code == -signal.SIGXFSZ:
            return f"file size limit of {isolation.FILE_BYTES >> 20} MiB"
        return ""

    def _fault(self, head: dict[str, Any], output: str, module: str) -> faults.LearnerFault:
        kind, where = head.get("kind"), head.get("where")
        tb = [str(line) for line in head.get("traceback", [])]
        message, exc_type = str(head.get("message", "")), str(head.get("type", "Exception"))
        kw = {"output": output, "traceback": tb}
        if kind == "bad_return":
            return faults.BadReturn(f"the function returned {message}", **kw)
        if where == "import":
            if kind == "missing" or exc_type == "FileNotFoundError":
                return faults.NotSubmitted(f"{module}.py was not submitted", **kw)
            if exc_type in ("SyntaxError", "IndentationError", "TabError"):
                line = head.get("lineno")
                return faults.ImportFailed(
                    f"{module}.py has a {exc_type} at line {line}: {message.split(' (line')[0]}",
                    **kw)
            return faults.ImportFailed(
                f"{module}.py raised {exc_type} while being imported: {message}", **kw)
        if kind == "missing":
            return faults.MissingName(f"{module}.py {message}", **kw)
        if exc_type == "NotImplementedError":
            return faults.NotImplementedYet("not implemented yet (the function raises "
                                            "NotImplementedError)", output=output)
        mro = [str(m) for m in head.get("mro", [])]
        return faults.LearnerRaised(exc_type, mro, message, **kw)
