"""Benchmark: where a one-exercise submission's CPU goes, part by part, in one process.

    .venv/bin/python bench/bench_parts.py            # about a minute, on an idle machine

Each part is measured in this process against the real sandbox (reference-correct
``grid_local_mask`` files), as the machine's CPU (``/proc/stat``: every process and the
kernel) and this process's own CPU, per unit, after a warm-up:

- a learner worker's life: started (forked by the warm server, confined), its file imported,
  stopped; no call;
- one call into a worker (a small one: the round trip, both processes and the kernel);
- a submission graded by one grading session (``grade_each``: full feedback), with the
  engine's item runner and with pytest's protocol (``GRADER_RUNNER=pytest``);
- the two rounds of the ``graded`` level (every public round, then every hidden one) against
  one ``full`` job.

What it prints is the floor analysis of ``bench/README.md``; ``bench_grading.py --slope``
measures the same class through ``grade bulk`` (its main process, pool and reports included).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_grading import machine_cpu_s  # noqa: E402

from grader import catalog  # noqa: E402
from grader.engine.policy import Policy, Runner  # noqa: E402
from grader.engine.runner import Job, Phase, grade_each  # noqa: E402
from grader.sandbox.process import WorkerProcess  # noqa: E402
from grader.sandbox.proxy import CallLog, LearnerProxy  # noqa: E402

SLUG = "grid_local_mask"


def _per(n: int, work: Callable[[], None]) -> tuple[float, float, float]:
    """(wall, machine CPU, this process's CPU) in ms per run of ``work``, ``n`` runs."""
    wall, cpu, own = time.perf_counter(), machine_cpu_s(), time.process_time()
    for _ in range(n):
        work()
    return (1e3 * (time.perf_counter() - wall) / n, 1e3 * (machine_cpu_s() - cpu) / n,
            1e3 * (time.process_time() - own) / n)


def _row(label: str, figures: tuple[float, float, float]) -> None:
    print(f"| {label} | {figures[1]:.2f} ms | {figures[2]:.2f} ms | {figures[0]:.2f} ms |",
          flush=True)


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="bench-parts-"))
    source = catalog.get(SLUG).solution.read_text()
    path = folder / f"{SLUG}.py"
    path.write_text(source)
    functions = catalog.get(SLUG).functions
    print(f"# parts of a {SLUG} submission, load average {os.getloadavg()[0]:.2f}")
    print("| part | machine CPU | this process | wall |")
    print("| --- | --- | --- | --- |")

    def life() -> None:
        with WorkerProcess({SLUG: path}) as worker:
            worker.start()
            LearnerProxy(worker, SLUG, timeout=10, log=CallLog()).load(functions)

    for _ in range(5):
        life()
    _row("a worker's life (start, import, stop)", _per(80, life))
    with WorkerProcess({SLUG: path}) as worker:
        worker.start()
        proxy = LearnerProxy(worker, SLUG, timeout=10, log=CallLog())
        proxy.load(functions)
        call = getattr(proxy, SLUG)
        for _ in range(50):
            call(3, 3, 1, 1)
        _row("one small call (round trip)", _per(1000, lambda: call(3, 3, 1, 1)))

    def session(n: int, jobs: Callable[[int], list[Job]], runner: Runner,
                first: list | None = None) -> tuple[float, float, float]:
        """Per job of ``jobs(n)`` graded in one session, the first 10 not counted."""
        marks: list[tuple[float, float, float]] = []

        def deliver(job: Job, outcome: object) -> None:
            if isinstance(outcome, Exception):
                raise SystemExit(f"bench: not graded: {outcome}")
            if first is not None:
                first.append(outcome)
            marks.append((time.perf_counter(), machine_cpu_s(), time.process_time()))

        grade_each([SLUG], jobs(n), deliver, runner)
        (w0, c0, p0), (w1, c1, p1), k = marks[9], marks[-1], len(marks) - 10
        return 1e3 * (w1 - w0) / k, 1e3 * (c1 - c0) / k, 1e3 * (p1 - p0) / k

    files = []
    for i in range(120):
        (folder / f"s{i}").mkdir()
        (folder / f"s{i}" / f"{SLUG}.py").write_text(source)
        files.append({SLUG: folder / f"s{i}" / f"{SLUG}.py"})

    def whole(n: int) -> list[Job]:
        return [Job(files[i], f"s{i}") for i in range(n)]

    _row("a submission, engine's item runner", session(120, whole, Runner.ENGINE))
    _row("a submission, pytest's protocol", session(120, whole, Runner.PYTEST))
    graded = Policy(feedback="graded")
    handovers: list = []
    _row("its public round (graded)", session(
        120, lambda n: [Job(files[i], f"s{i}", policy=graded, phase=Phase.PUBLIC)
                        for i in range(n)], Runner.ENGINE, handovers))
    _row("its hidden round (graded)", session(
        120, lambda n: [Job(files[i], f"s{i}", policy=graded, phase=Phase.HIDDEN,
                            handover=handovers[i]) for i in range(n)], Runner.ENGINE))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
