"""Grade a class on a Dask cluster: one task per submission, answers as plain data.

The client (``grade bulk --scheduler``) sends each submission's files as bytes with the run's
settings and its pack version; each Dask worker grades in its own long-lived grading process
(``cluster_worker.py``) and returns the result model's JSON, which the client decodes with
``json`` (never unpickles anything a learner could shape) and writes exactly as the local
path does. Workers that another pack version or weaker isolation would make grade
differently are found before the run (``Client.run``) and given no task; one that joins
later refuses its tasks, which go to the others.

Whoever can reach a Dask scheduler can run code on every worker as the user running it, and
(for ``local:N``, whose scheduler lives in ``grade bulk``) in this process: ``local:N`` speaks
TLS with temporary credentials on loopback only, a ``tls://`` scheduler is reached with the
credentials of the Dask configuration, and a plain ``tcp://`` one only when the user accepts
the risk (``--allow-insecure-cluster``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import catalog
from grader.results import from_dict

from .messages import Answer, JobMessage, Settings, failure
from .serve import MAX_DEATHS

GPU_RESOURCE = "GPU"
MAX_REFUSALS = 3  # a submission refused this often (late-joining bad workers) is not graded
LOOPBACK = "127.0.0.1"  # where ``local:N`` binds its scheduler, nannies and workers
SECURE_SCHEMES = ("tls", "wss")  # Dask comms that encrypt and authenticate both sides
INSECURE_FLAG = "--allow-insecure-cluster"


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


def _host(address: str) -> str:
    """The host of a Dask address (``tcp://h:8786``, ``h:8786``, ``tls://[::1]:8786``)."""
    location = address.split("://", 1)[-1].rsplit("/", 1)[0]
    if location.startswith("["):
        return location[1:].split("]", 1)[0]
    return location.rsplit(":", 1)[0] if location.count(":") == 1 else location


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def insecure_risk(scheduler: str) -> str | None:
    """Why grading through ``scheduler`` is unsafe, as a clause: its comm (``tcp`` when it
    names none) neither encrypts nor authenticates; None for ``local:N``, ``tls://``, ``wss://``."""
    if scheduler.startswith("local:"):
        return None
    scheme = scheduler.split("://", 1)[0] if "://" in scheduler else "tcp"
    if scheme in SECURE_SCHEMES:
        return None
    who = ("every user of this machine" if _is_loopback(_host(scheduler))
           else "anyone who can reach that scheduler")
    return (f"{scheduler} is neither encrypted nor authenticated: {who} can run code as this "
            "user on every worker and read the submissions")


def check_address(scheduler: str, *, allow_insecure: bool = False) -> str | None:
    """The warning to print for an insecure ``scheduler`` the user accepted, else None;
    raises ``ClusterError`` for one not accepted (``allow_insecure`` False)."""
    risk = insecure_risk(scheduler)
    if risk is not None and not allow_insecure:
        raise ClusterError(f"--scheduler {risk}; use a tls:// address (see docs/cluster.md) "
                           f"or pass {INSECURE_FLAG} to accept that")
    return None if risk is None else f"warning: --scheduler {risk}"


def _local_cluster(n: int) -> Any:
    """N worker processes on this machine, speaking TLS with credentials made for this run
    only, every port (scheduler, nannies, workers) on loopback, and no HTTP server at all: no
    dashboard, no health, metrics or information pages (``cluster_worker.QuietScheduler``)."""
    from distributed import Nanny, SpecCluster
    from distributed.security import Security
    from distributed.worker_memory import parse_memory_limit

    from .cluster_worker import QuietScheduler, QuietWorker

    try:
        security = Security.temporary()
    except ImportError:
        raise ClusterError("--scheduler local:N needs the cryptography package for its "
                           "temporary TLS credentials: pip install '.[cluster]'") from None
    # what LocalCluster would start, with servers that open no HTTP port
    common = {"host": LOOPBACK, "protocol": "tls://", "security": security,
              "dashboard": False, "dashboard_address": None}
    scheduler = {"cls": QuietScheduler, "options": {**common, "port": 0}}
    worker = {"cls": Nanny, "options": {
        **common, "nthreads": 1, "worker_class": QuietWorker, "silence_logs": logging.ERROR,
        "memory_limit": parse_memory_limit("auto", 1, n, logger=logging.getLogger(__name__))}}
    # the worker processes ignore Ctrl-C (a disposition they inherit): the client
    # stops them, without a traceback from each
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return SpecCluster(scheduler=scheduler, workers={i: worker for i in range(n)},
                           worker=worker, security=security, silence_logs=logging.ERROR)
    finally:
        signal.signal(signal.SIGINT, previous)


def _remote_security(scheduler: str) -> Any:
    """The Dask configuration's credentials for ``scheduler`` (``distributed.comm.tls.*``),
    encryption required for a ``tls://`` address; raises ``ClusterError`` when it has none."""
    from distributed.security import Security

    if insecure_risk(scheduler) is not None:  # accepted as plain (check_address)
        security = Security()
        if security.require_encryption:
            raise ClusterError(f"--scheduler {scheduler}: the Dask configuration requires "
                               "encryption (distributed.comm.require-encryption): use a "
                               "tls:// address")
        return security
    security = Security(require_encryption=True)
    if not (security.tls_ca_file and security.tls_client_cert):
        raise ClusterError(f"--scheduler {scheduler}: the Dask configuration has no TLS "
                           "credentials for this client (distributed.comm.tls.ca-file and "
                           "distributed.comm.tls.client.cert/key; see "
                           "docs/cluster.md)")
    return security


def _local_workers(scheduler: str) -> int:
    """N of ``local:N``; raises ``ClusterError`` unless a number of at least 1."""
    try:
        n = int(scheduler.removeprefix("local:"))
    except ValueError:
        n = 0
    if n < 1:
        raise ClusterError(f"--scheduler {scheduler}: local:N takes a number of "
                           "worker processes, at least 1")
    return n


def connect(scheduler: str, *, allow_insecure: bool = False, timeout_s: float = 10.0) -> Cluster:
    """``local:N`` starts a LocalCluster of N worker processes (TLS, loopback); anything else
    is a scheduler address: ``tls://host:8786`` with the Dask configuration's credentials, or
    a plain ``tcp://`` one only with ``allow_insecure`` (see ``check_address``)."""
    check_address(scheduler, allow_insecure=allow_insecure)
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError("--scheduler needs Dask distributed: pip install '.[cluster]'") \
            from None
    from .cluster_worker import GradingPlugin, refusal, worker_info

    local = None
    try:
        if scheduler.startswith("local:"):
            local = _local_cluster(_local_workers(scheduler))
            client = Client(local, timeout=timeout_s)
        else:
            client = Client(scheduler, timeout=timeout_s, security=_remote_security(scheduler))
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


def run(cluster: Cluster, jobs: list[JobMessage], settings: Settings) -> Iterator[Answer]:
    """Grade one round (``bulk/runner.py``) of ``jobs``, one task each (its files sent as
    bytes); yield each one's answer as it finishes, its ``data`` a result's, or a public
    round's handover. Interrupting the iteration cancels what is left."""
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    from .cluster_worker import GradingProcessDied, grade_task

    pack = catalog.pack_version()
    refusals: dict[str, int] = {}

    def submit(job: JobMessage) -> Any:
        contents = {s: (Path(path).read_bytes() if path is not None else None)
                    for s, path in job.files.items()}
        attempt = refusals.get(job.id, 0)
        return cluster.client.submit(
            grade_task, job.task(settings, pack, contents),
            key=f"grade-{job.phase}-{_digest(job.id, job.key)}-{attempt}", pure=False,
            retries=MAX_DEATHS - 1, **task_options(cluster, settings.device,
                                                   list(settings.exercises)))

    futures = {}
    for job in jobs:
        futures[submit(job)] = job
    done = as_completed(list(futures))
    try:
        for future in done:
            job = futures.pop(future)
            try:
                answer = json.loads(future.result())
            except KilledWorker as exc:
                ended = int(getattr(exc, "allowed_failures", MAX_DEATHS - 1) or 0) + 1
                yield Answer(job.id, error="its Dask worker was lost each time", ended=ended)
                continue
            except GradingProcessDied as exc:
                yield Answer(job.id, error=str(exc), ended=MAX_DEATHS)
                continue
            except FutureCancelledError:
                continue
            except Exception as exc:  # noqa: BLE001 - a Dask-side failure of this task only
                yield Answer(job.id, error=failure(exc))
                continue
            if "refused" in answer:
                addr = answer.get("worker", "?")
                cluster.bad[addr] = refusal_text(answer, pack)
                if addr in cluster.good:
                    cluster.good.remove(addr)
                refusals[job.id] = refusals.get(job.id, 0) + 1
                if cluster.good and refusals[job.id] < MAX_REFUSALS:
                    again = submit(job)
                    futures[again] = job
                    done.add(again)
                else:
                    yield Answer(job.id, error=cluster.bad[addr])
                continue
            yield Answer.from_json(job.id, answer, job.phase)
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

