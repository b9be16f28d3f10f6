"""The grader's side of one learner worker: start it, send calls, enforce the wall clock.

A ``WorkerProcess`` serves every call of one submission. When a call times out, crashes the
process or garbles the channel, the process group is killed and the next call starts a
fresh worker (learner modules are imported again there).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.inert import inert

from . import faults, forkserver, gpu_watch, isolation, reply, shared_inputs
from .harness import protocol
from .harness.worker import NOT_TEXT
from .reply import Reply
from .treewatch import TreeWatch

FD_OUTPUT_CAP = 64 * 1024
STARVED_SHARE = 0.5  # a timed-out call waited for a CPU over half its time, and used less
QUICK_S = 0.05  # a call answered within this is never judged for starvation: not sampled
FULL_SLACK = 1 << 20  # a work folder with less free space than this is full


def _run_delay(pid: int | None) -> float | None:
    """Seconds ``pid`` has spent runnable but waiting for a CPU (``/proc/<pid>/schedstat``)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _on_cuda(value: Any) -> bool:
    """Whether a decoded result holds a tensor that says it is on a CUDA device."""
    return protocol.any_leaf(value, lambda leaf: str(getattr(leaf, "device", ""))
                             .startswith("cuda"))


class _Drain(threading.Thread):
    """Reads the worker's fd 1/2 to the end, keeping the first ``cap`` bytes (shown inert)."""

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
            text = inert(self.kept[self.taken:].decode(errors="replace"))
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
        self._main: tuple[int, int] | None = None  # (worker pid, pid of its learner process)
        self.starved_retries = 0  # calls sent again after a timeout they did not cause
        self.device_evidence = ""  # for a CUDA worker: how its device is known (gpu_watch)
        # how this worker is handed the sealed shared inputs its requests name, or None
        self._shared: shared_inputs.Handout | None = None

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Start a worker; raise ``isolation.SandboxError`` when it cannot be started."""
        isolation.harden_grader()
        if self.deadline is None:
            self.deadline = time.monotonic() + self.budget_s
        server = forkserver.get(self.preload)  # None: started with subprocess
        # a fresh worker that takes over a request sent again (``starved_retries`` grew since
        # the last worker started) is handed the shared inputs that request names; any other
        # is handed none before its own requests name them
        previous, self._shared = self._shared, None  # (set by _fork: this worker's handout)
        carried = previous.pending if previous is not None and \
            previous.retries != self.starved_retries else frozenset()
        if previous is not None:
            previous.close()
        self.workdir = isolation.prepare_workdir(self.files, harness=server is None)
        self.sandbox = isolation.Sandbox(self.device)
        req_r, self._req_w = os.pipe()
        self._resp_r, resp_w = os.pipe()
        protocol.widen_pipe(self._req_w)
        protocol.widen_pipe(self._resp_r)
        os.set_blocking(self._req_w, False)  # requests are written against the call's deadline
        try:
            spec = self.sandbox.launch(self.workdir, req_r, resp_w)
            self.proc = self._fork(server, spec, req_r, resp_w, carried) if server else None
            if self.proc is None:
                if server is not None:  # the fork server failed: this worker needs the files
                    isolation.add_harness(self.workdir, self.sandbox.uid)
                self.proc = subprocess.Popen(
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
            protocol.read_frame(self._resp_r, time.monotonic() + self.START_TIMEOUT_S,
                                limits=reply.LIMITS)
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

    def _fork(self, server: forkserver.ForkServer, spec: isolation.LaunchSpec, req_r: int,
              resp_w: int, carried: frozenset[str] = frozenset(),
              ) -> forkserver.ForkedWorker | None:
        """A worker forked by the warm server, or None (then it is started with subprocess).
        It holds no shared input at its start but ``carried`` (``shared_inputs.Handout``)."""
        out_r, out_w = os.pipe()
        handout = shared_inputs.Handout() if shared_inputs.enabled() else None
        try:
            pid, init = server.spawn(env=spec.env, confinement=spec.confinement,
                                     submission=spec.cwd, fds=[req_r, resp_w, out_w],
                                     handout=handout.worker_end() if handout else None)
        except (OSError, ValueError):
            forkserver.drop(server)
            os.close(out_r)
            if handout is not None:
                handout.close()
            return None
        finally:
            os.close(out_w)
        if handout is not None:
            handout.retries = self.starved_retries
            handout.started(carried)
        self._shared = handout
        return forkserver.ForkedWorker(server, pid, os.fdopen(out_r, "rb"), init)

    def stop(self) -> None:
        """Kill the worker's whole process tree and remove its work directory."""
        if self._watch is not None:
            self._watch.stop()
            self._watch.join(timeout=2)  # done with the pid before it is reaped (and reusable)
        if self.proc is not None:
            leader: int | None = self.proc.pid
            if getattr(self.proc, "init", False):
                # process 1 of its own PID namespace: the kernel ends every other process
                # in it before process 1 can be reaped, so nothing is left to look for
                isolation.signal_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                leader = None  # reaped: its number may be another process's already
            if self.sandbox is not None:
                self.sandbox.kill_all(leader)
            self.proc.wait()
            isolation.register_child(self.proc.pid, alive=False)
            if self._drain is not None:
                self._drain.join(timeout=1)
            self.proc = None
        for fd in (self._req_w, self._resp_r):
            if fd >= 0:
                os.close(fd)
        self._req_w = self._resp_r = -1
        if self._shared is not None:
            self._shared.close()  # (kept: a fresh worker may take its last request over)
        if self.sandbox is not None:
            self.sandbox.cleanup()
        if self.workdir is not None:
            left = isolation.remove_workdir(self.workdir)
            if left:
                print(f"grader: {left}", file=sys.stderr)
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
                timeout: float = 10.0, bounds: protocol.Limits | None = None,
                names: tuple[str, ...] = ()) -> Reply:
        """The learner's reply to one request, read within ``bounds`` (``reply.limits`` of
        the value the test expects; ``reply.LIMITS`` when unknown); raises the learner's
        ``faults.LearnerFault`` (``BadReturn`` for a reply that cannot be read). ``names``
        (``load`` only): the names the module must define; the reply lists those it lacks."""
        if self.proc is None:
            self.start()
        header = {"op": op, "module": module, "func": func, "handle": handle}
        if names:
            header["names"] = list(names)
        try:
            frame = protocol.encode_frame(header, [list(args), dict(kwargs or {})], shared=(
                self._shared.for_request() if self._shared is not None else None))
        except protocol.ProtocolError as exc:
            raise RuntimeError(f"grader bug: cannot send arguments: {exc}") from exc
        # a call that refers to learner objects cannot be sent to a fresh worker
        head, blobs, deadline = self._exchange(frame, timeout, lambda: handle is None and not
                                     protocol.any_leaf((args, kwargs), lambda leaf:
                                                       isinstance(leaf, protocol.Handle)),
                                     bounds or reply.LIMITS)
        try:  # faults.BadReturn when it cannot be read
            answer = reply.read(head, blobs, op=op, deadline=deadline)
        except protocol.ReadTimeout:  # this process's time on the reply is the call's too
            raise faults.TimedOut(timeout) from None
        if isinstance(answer, reply.Failure):
            raise _in_cells(self._fault(answer, module, op), module, self.files.get(module))
        if self.device.startswith("cuda") and self.device_evidence != gpu_watch.OBSERVED \
                and _on_cuda(answer.value):
            self.device_evidence = gpu_watch.evidence(self._main_pid())
            if self.device_evidence == gpu_watch.NOT_SEEN:
                raise reply.unreadable("its tensors say they are on a GPU, but its process "
                                       "holds no GPU memory (NVML)", answer.output)
        return answer

    def _exchange(self, frame: protocol.Frame, timeout: float, retryable: Callable[[], bool],
                  bounds: protocol.Limits) -> tuple[dict[str, Any], list[bytes], float]:
        """Send one request and read its reply within the call's wall clock; the reply and
        the deadline left to decode it in (``reply.read``). A call that ran
        out of time while its worker was starved (it waited for a CPU most of the time and
        its tree used little: load it did not cause) is sent once more to a fresh worker
        when it holds no learner object; any other timeout is the learner's."""
        for attempt in range(2):
            left = (self.deadline or float("inf")) - time.monotonic()
            if left <= 0:
                raise faults.TimedOut(self.budget_s, message=self._budget_message(), budget=True)
            deadline = time.monotonic() + min(timeout, left)
            fairness = None
            try:
                protocol.write_frame(self._req_w, frame, deadline)
                quick = min(QUICK_S, max(0.0, deadline - time.monotonic()))
                if not select.select([self._resp_r], [], [], quick)[0]:
                    # not a quick call: how fairly its worker is served is measured from here
                    # (most calls end sooner, and read nothing from /proc)
                    fairness = self._fairness_sample()
                return (*protocol.read_frame(self._resp_r, deadline, limits=bounds), deadline)
            except protocol.ReadTimeout:
                starved = fairness is not None and self._was_starved(fairness)
                self.stop()
                if timeout > left:
                    raise faults.TimedOut(self.budget_s, message=self._budget_message(),
                                          budget=True) from None
                if not (starved and attempt == 0 and retryable()):
                    raise faults.TimedOut(timeout) from None
                self.starved_retries += 1
                self.start()
            except (protocol.PeerClosed, BrokenPipeError):
                code = self.proc.wait() if self.proc is not None else None
                cause = self._why_it_ended(code)
                self.stop()
                raise faults.Crashed(code, why=_cause_text(cause) if cause else "",
                                     cause=cause) from None
            except protocol.ProtocolError as exc:
                self.stop()
                raise reply.unreadable(str(exc)) from None
        raise AssertionError("unreachable")

    # -- fairness: was a timed-out call starved by load it did not cause? ---------------
    def _fairness_sample(self) -> tuple[float, float | None, float | None]:
        """(now, CPU seconds the worker's tree used, seconds its main process waited for a
        CPU) at the start of a call."""
        return time.monotonic(), self._tree_cpu(), _run_delay(self._main_pid())

    def _was_starved(self, start: tuple[float, float | None, float | None]) -> bool:
        t0, cpu0, delay0 = start
        wall = time.monotonic() - t0
        cpu, delay = self._tree_cpu(), _run_delay(self._main_pid())
        if wall <= 0 or None in (cpu0, delay0, cpu, delay):
            return False
        return delay - delay0 > STARVED_SHARE * wall and cpu - cpu0 < STARVED_SHARE * wall

    def _tree_cpu(self) -> float | None:
        if self.sandbox is not None and (used := self.sandbox.cpu_seconds()) is not None:
            return used
        if self._watch is not None:
            return self._watch.cpu_seconds
        return None

    def _main_pid(self) -> int | None:
        """The process that runs the learner's code: the worker, or its only child when the
        worker is a PID namespace's waiter."""
        if self.proc is None:
            return None
        if self._main is None or self._main[0] != self.proc.pid:
            main = self.proc.pid
            if self.sandbox is not None and self.sandbox.caps.pidns and \
                    not getattr(self.proc, "init", False):
                try:
                    children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
                except OSError:
                    children = []
                if not children:
                    return None
                main = int(children[0])
            self._main = (self.proc.pid, main)
        return self._main[1]

    def _budget_message(self) -> str:
        return (f"timed out: the submission's time budget of {self.budget_s:g} s for all its "
                "calls is used up")

    def _why_it_ended(self, code: int | None) -> faults.CrashCause | None:
        """Why the worker ended with ``code``, where the grading process knows it."""
        if code == -signal.SIGKILL and self._watch is not None and self._watch.cause:
            return self._watch.cause
        if code == -signal.SIGKILL and self.sandbox is not None and self.sandbox.out_of_memory():
            return faults.CrashCause.OUT_OF_MEMORY
        if code == -signal.SIGXCPU:
            return faults.CrashCause.CPU_TIME
        if code == -signal.SIGXFSZ:
            return faults.CrashCause.FILE_SIZE
        return None

    def _work_folder_full(self) -> bool:
        """Whether the worker's work folder (its own tmpfs) has less than ``FULL_SLACK`` bytes
        free, measured by this process through the worker's root (``/proc/PID/root``), never
        taken from the worker's word."""
        pid = self._main_pid()
        if pid is None or self.workdir is None:
            return False
        try:
            st = os.statvfs(f"/proc/{pid}/root{self.workdir}")
        except OSError:
            return False
        return st.f_bavail * st.f_frsize < FULL_SLACK

    def _fault(self, failure: reply.Failure, module: str, op: str) -> faults.LearnerFault:
        """The fault of a request that failed (its fields are checked and inert already).

        Only a ``load`` request's failure can be the file's: its import failed, or it was not
        submitted. Any other request's failure is a failed call, whatever the worker says it
        was (a reply that claims a failed import or a missing name is the learner's word, and
        a call's word may depend on its inputs): ``MissingName`` comes from the names recorded
        at ``load`` (``proxy.LearnerProxy``), and a full disk from the folder measured here."""
        kind, where, exc_type, message = (failure.kind, failure.where, failure.exc_type,
                                          failure.message)
        kw = {"output": failure.output, "traceback": failure.traceback}
        if kind == "bad_return":
            return faults.BadReturn(f"the function returned {message}", **kw)
        if op == "load":
            if kind == "missing" or exc_type == "FileNotFoundError":
                return faults.NotSubmitted(f"{module}.py was not submitted", **kw)
            if exc_type == NOT_TEXT:  # the worker never imported it (text_problem)
                return faults.ImportFailed(f"{module}.py {message}", **kw)
            if exc_type in ("SyntaxError", "IndentationError", "TabError"):
                at = f" at line {failure.lineno}" if failure.lineno is not None else ""
                return faults.ImportFailed(
                    f"{module}.py has a {exc_type}{at}: {message.split(' (line')[0]}", **kw)
            return faults.ImportFailed(
                f"{module}.py raised {exc_type} while being imported: {message}", **kw)
        if where == "import":  # a fresh worker imported the file again, and it failed there
            return faults.LearnerRaised(exc_type, failure.mro,
                                        f"while {module}.py was imported again: {message}", **kw)
        if kind == "missing":
            return faults.LearnerRaised("AttributeError", ["AttributeError", "Exception",
                                                           "BaseException"], message, **kw)
        if exc_type == "NotImplementedError":
            return faults.NotImplementedYet(faults.NOT_IMPLEMENTED, output=failure.output)
        if message.startswith("[Errno 28]") and "OSError" in failure.mro and \
                self.sandbox is not None and self.sandbox.caps.private_mounts and \
                self._work_folder_full():
            return faults.DiskFull(exc_type, failure.mro, message, isolation.DISK_BYTES, **kw)
        return faults.LearnerRaised(exc_type, failure.mro, message, **kw)


def _cause_text(cause: faults.CrashCause) -> str:
    """The words for why a worker ended, with the limits as they are set now."""
    return {
        faults.CrashCause.OUT_OF_MEMORY:
            f"out of memory: over the {isolation.MEMORY_BYTES / 2**30:g} GiB limit",
        faults.CrashCause.PROCESSES: f"over {isolation.PIDS} processes",
        faults.CrashCause.CPU_TIME: f"CPU time limit of {isolation.CPU_SECONDS} s",
        faults.CrashCause.FILE_SIZE: f"file size limit of {isolation.FILE_BYTES >> 20} MiB",
    }[cause]


def _in_cells(fault: faults.LearnerFault, module: str,
              path: Path | None) -> faults.LearnerFault:
    """``fault`` of a learner file generated from a notebook, with its lines and file name
    pointing at the notebook's cells ("SLUG.ipynb, cell 4, line 7"); any other file's as is."""
    from grader.notebook import lines

    found = lines.read(path)
    if found is None:
        return fault
    name, line_map, _ = found
    fault.message = lines.relabel_with(fault.message, module, name, line_map)
    fault.args = (fault.message,)
    fault.traceback = [lines.relabel_with(t, module, name, line_map) for t in fault.traceback]
    return fault
