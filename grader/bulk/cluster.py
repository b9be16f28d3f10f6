"""Grade a class on a Dask cluster: one task per submission, answers as plain data.

The client (``grade bulk --scheduler``) sends each submission's files as bytes with the run's
settings and its pack version; each Dask worker grades in its own long-lived grading process
(``cluster_worker.py``) and returns the result model's JSON, which the client decodes with
``json`` (never unpickles anything a learner could shape) and writes exactly as the local
path does. Workers that another pack version or weaker isolation would make grade
differently are found before the run (``Client.run``) and given no task; one that joins
later refuses its tasks, which go to the others.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from grader import catalog
from grader.engine.policy import Policy
from grader.engine.results import from_dict

from .layouts import Submission
from .serve import MAX_DEATHS

GPU_RESOURCE = "GPU"
MAX_REFUSALS = 3  # a submission refused this often (late-joining bad workers) is not graded


class ClusterError(Exception):
    """The cluster cannot grade this run at all (unreachable, no usable worker)."""


@dataclass
class Cluster:
    """A connected client, with what its workers said about themselves."""

    client: Any
    local: Any = None  # the LocalCluster of ``local:N``, closed with the client
    good: list[str] = field(default_factory=list)
    bad: dict[str, str] = field(default_factory=dict)  # address -> why it gets no task
    gpus: list[str] = field(default_factory=list)  # good workers offering the GPU resource
    device: str = "cpu"  # the run's device, once resolved (``device_for``)

    def close(self) -> None:
        self.client.close()
        if self.local is not None:
            self.local.close()


def refusal_text(answer: dict[str, Any], client_pack: str) -> str:
    """One sentence: why this worker refuses to grade, and what would fix it."""
    worker = answer.get("worker", "?")
    if answer.get("name"):
        worker = f"{answer['name']} ({worker})"
    if answer.get("refused") == "pack":
        return (f"worker {worker} has pack version {answer.get('pack')}, this client "
                f"{client_pack}: install the same vit-grader (the same commit of the "
                f"repository, `pip install .[cluster]`) on it and restart it")
    if answer.get("refused") == "isolation":
        return (f"worker {worker} cannot isolate learner code ({', '.join(answer['missing'])} "
                f"missing; see `grade doctor` on that machine): workers grade at strict "
                f"isolation only")
    if answer.get("refused") == "plugin" or "error" in answer:
        return f"worker {worker} cannot grade: {answer.get('error', 'no vit-grader plugin')}"
    return f"worker {worker} refused the task"


def connect(scheduler: str, *, timeout_s: float = 10.0) -> Cluster:
    """``local:N`` starts a LocalCluster of N worker processes; anything else is a scheduler
    address (``tcp://host:8786``, ``tls://...`` with distributed's security settings)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError("--scheduler needs Dask distributed: pip install '.[cluster]'") \
            from None
    from .cluster_worker import GradingPlugin, refusal, worker_info

    local = None
    try:
        if scheduler.startswith("local:"):
            try:
                n = int(scheduler.removeprefix("local:"))
            except ValueError:
                n = 0
            if n < 1:
                raise ClusterError(f"--scheduler {scheduler}: local:N takes a number of "
                                   "worker processes, at least 1")
            # the worker processes ignore Ctrl-C (a disposition they inherit): the client
            # stops them, without a traceback from each
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                local = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                     dashboard_address=None, silence_logs=logging.ERROR)
            finally:
                signal.signal(signal.SIGINT, previous)
            client = Client(local, timeout=timeout_s)
        else:
            client = Client(scheduler, timeout=timeout_s)
    except ClusterError:
        raise
    except (OSError, TimeoutError, ValueError) as exc:
        if local is not None:
            local.close()
        raise ClusterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    cluster = Cluster(client, local)
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:
        cluster.close()
        raise ClusterError(f"no Dask worker joined the scheduler at {scheduler} within "
                           f"{timeout_s:g} s (start some with `dask worker {scheduler} "
                           "--nthreads 1`)") from None
    client.register_plugin(GradingPlugin(), name="vit-grader")
    pack = catalog.pack_version()
    workers = client.scheduler_info()["workers"]
    resources = {addr: w.get("resources", {}) for addr, w in workers.items()}
    for addr, hello in client.run(worker_info).items():
        name = workers.get(addr, {}).get("name")
        if name is not None and str(name) != addr:
            hello = {**hello, "name": str(name)}
        why = None if "error" in hello else refusal(hello, pack)
        if "error" in hello or why is not None:
            cluster.bad[addr] = refusal_text({"worker": addr, "refused": why, **hello}, pack)
        else:
            cluster.good.append(addr)
            if resources.get(addr, {}).get(GPU_RESOURCE, 0) >= 1:
                cluster.gpus.append(addr)
    if not cluster.good:
        why = "; ".join(cluster.bad.values())
        cluster.close()
        raise ClusterError(f"no worker of {scheduler} can grade: {why}")
    return cluster


def device_for(cluster: Cluster, device: str, exercises: list[str]) -> str:
    """``cuda``, ``cpu`` or ``auto`` for a cluster: CUDA comes from workers started with
    ``--resources GPU=1``, not from this client's machine."""
    if device == "cpu" or not any(catalog.get(s).needs_torch for s in exercises):
        return "cpu"  # numpy exercises run anywhere, on the CPU
    if not cluster.gpus:
        if device == "cuda":
            raise ClusterError("--device cuda: no worker offers the GPU resource (start GPU "
                               f"workers with `dask worker ... --resources {GPU_RESOURCE}=1`)")
        return "cpu"
    return "cuda"


def task_options(cluster: Cluster, device: str, exercises: list[str]) -> dict[str, Any]:
    """``Client.submit``'s placement of a submission's task: torch exercises on CUDA ask for
    the GPU resource; workers given no task (``cluster.bad``) are left out."""
    gpu = device.startswith("cuda") and any(catalog.get(s).needs_torch for s in exercises)
    return {"resources": {GPU_RESOURCE: 1} if gpu else None,
            "workers": list(cluster.good) if cluster.bad else None,
            "allow_other_workers": False}


def run(cluster: Cluster, todo: list[tuple[Submission, str]], *, exercises: list[str],
        device: str, budget_s: float, policy: Policy,
        ) -> Iterator[tuple[str, dict[str, Any] | None, str | None, int]]:
    """Grade ``todo`` (``(submission, cache key)``); yield ``(id, results data, error,
    processes it ended)`` as each finishes. Interrupting the iteration cancels what is left."""
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    from .cluster_worker import GradingProcessDied, grade_task

    pack = catalog.pack_version()
    settings = {"exercises": exercises, "device": device, "budget_s": budget_s,
                "policy": dataclasses.asdict(policy), "pack": pack}
    refusals: dict[str, int] = {}

    def submit(sub: Submission, key: str) -> Any:
        task = {**settings, "id": sub.id, "files": {
            s: (sub.files[s].read_bytes() if s in sub.files else None) for s in exercises}}
        attempt = refusals.get(sub.id, 0)
        return cluster.client.submit(
            grade_task, task, key=f"grade-{_digest(sub.id, key)}-{attempt}", pure=False,
            retries=MAX_DEATHS - 1, **task_options(cluster, device, exercises))

    futures = {}
    for sub, key in todo:
        futures[submit(sub, key)] = (sub, key)
    done = as_completed(list(futures))
    try:
        for future in done:
            sub, key = futures.pop(future)
            try:
                answer = json.loads(future.result())
            except KilledWorker as exc:
                ended = int(getattr(exc, "allowed_failures", MAX_DEATHS - 1) or 0) + 1
                yield sub.id, None, "its Dask worker was lost each time", ended
                continue
            except GradingProcessDied as exc:
                yield sub.id, None, str(exc), MAX_DEATHS
                continue
            except FutureCancelledError:
                continue
            except Exception as exc:  # noqa: BLE001 - a Dask-side failure of this task only
                yield sub.id, None, f"{type(exc).__name__}: {exc}", 0
                continue
            if "refused" in answer:
                addr = answer.get("worker", "?")
                cluster.bad[addr] = refusal_text(answer, pack)
                if addr in cluster.good:
                    cluster.good.remove(addr)
                refusals[sub.id] = refusals.get(sub.id, 0) + 1
                if cluster.good and refusals[sub.id] < MAX_REFUSALS:
                    again = submit(sub, key)
                    futures[again] = (sub, key)
                    done.add(again)
                else:
                    yield sub.id, None, cluster.bad[addr], 0
                continue
            if "error" in answer:
                yield sub.id, None, str(answer["error"]), 0
                continue
            yield sub.id, answer["result"], None, 0
    finally:
        if futures:
            cluster.client.cancel(list(futures))


def _digest(*parts: str) -> str:
    """A task's name: unique per submission (ids and cache keys repeat across runs' files)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def decode(data: dict[str, Any]) -> Any:
    """A worker's result data as the result model (raises ``ValueError`` when malformed)."""
    try:
        return from_dict(data)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"the worker's result cannot be read: {exc}") from None


def worker_notices(cluster: Cluster) -> list[str]:
    """One line per worker given no task, for the terminal."""
    return [f"warning: {why}; it gets no task" for why in cluster.bad.values()]

