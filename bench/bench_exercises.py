"""Benchmark: the grader's own cost per test, exercise by exercise, in one grading process.

    .venv/bin/python bench/bench_exercises.py                    # every exercise (~2 minutes)
    .venv/bin/python bench/bench_exercises.py grid_local_mask patch_vit --n 12
    .venv/bin/python bench/bench_exercises.py --whole       # and whole-pack submissions

For each exercise, one grading session (``grade_each``, as a pool process of ``grade bulk``
runs it) grades ``--n`` reference-correct submissions one after the other; the first
``--skip`` are not counted (the fork server starting, expected values computed once, caches
filling). For the others it reads, per submission:

- the machine's CPU time (``/proc/stat``: the grading process, the fork server, the learner's
  worker and the kernel working for them; run it on an otherwise idle machine);
- the learner's own time: the sum of the durations the worker measured around the learner's
  calls (the same code in the same fresh worker the grade uses);
- overhead = machine CPU - learner time, shown per submission and per test.

Unlike ``bench_grading.py --slope``, whose whole-pack figure subtracts the learner's time
measured in another process (positional_attention's ~9 s of training, which varies by about
a second from run to run), both terms here come from the same calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_grading import machine_cpu_s  # noqa: E402

from grader import catalog  # noqa: E402
from grader.engine.runner import Job, grade_each  # noqa: E402
from grader.sandbox import process  # noqa: E402

_LEARNER = {"s": 0.0, "calls": 0}


def _count_learner_time() -> None:
    """Add up the learner's own time of every call the worker answers (its ``duration_s``)."""
    request = process.WorkerProcess.request

    def counted(self: process.WorkerProcess, op: str, **kw: Any) -> Any:
        reply = request(self, op, **kw)
        _LEARNER["s"] += reply.duration_s or 0.0
        _LEARNER["calls"] += 1
        return reply

    process.WorkerProcess.request = counted


def measure(slugs: list[str], n: int, skip: int, folder: Path,
            label: str | None = None) -> dict[str, Any]:
    """The figures of ``n`` reference submissions each holding every exercise of ``slugs``
    (one learner worker per submission), graded in one session."""
    label = label or slugs[0]
    jobs = []
    for i in range(n):
        (folder / label / f"s{i}").mkdir(parents=True)
        files: dict[str, Path | None] = {}
        for slug in slugs:
            files[slug] = folder / label / f"s{i}" / f"{slug}.py"
            files[slug].write_text(catalog.get(slug).solution.read_text())
        jobs.append(Job(files, f"s{i}"))
    marks: list[tuple[float, float, float, int, int, float]] = []

    def deliver(job: Job, outcome: Any) -> None:
        if isinstance(outcome, Exception):
            raise SystemExit(f"bench: {label} could not be graded: {outcome}")
        marks.append((time.perf_counter(), machine_cpu_s(), _LEARNER["s"], _LEARNER["calls"],
                      sum(len(ex.tests) for ex in outcome.exercises),
                      outcome.score / outcome.max_score))

    grade_each(slugs, iter(jobs), deliver)
    first, last = marks[skip - 1], marks[-1]
    counted = n - skip
    cpu = (last[1] - first[1]) / counted
    learner = (last[2] - first[2]) / counted
    return {"exercise": label, "tests": last[4], "score": last[5],
            "wall_ms": 1e3 * (last[0] - first[0]) / counted, "machine_cpu_ms": 1e3 * cpu,
            "learner_ms": 1e3 * learner, "calls": (last[3] - first[3]) / counted,
            "overhead_ms": 1e3 * (cpu - learner),
            "overhead_per_test_ms": 1e3 * (cpu - learner) / last[4]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exercises", nargs="*", help="exercises to measure (default: all)")
    ap.add_argument("--n", type=int, default=8, help="submissions per exercise (8)")
    ap.add_argument("--skip", type=int, default=2, help="first submissions not counted (2)")
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--whole", action="store_true",
                    help="also whole-pack submissions (every exercise, one learner worker "
                         "each), as `grade bulk` grades them: the last row")
    args = ap.parse_args(argv)
    slugs = args.exercises or list(catalog.load())
    if args.n <= args.skip or args.skip < 1:
        ap.error("--n must be larger than --skip, and --skip at least 1")
    _count_learner_time()
    load = os.getloadavg()[0]
    print(f"# per exercise, one grading process, {args.n - args.skip} of {args.n} "
          f"reference submissions counted; load average {load:.2f}")
    print("| exercise | tests | calls | machine CPU | learner | overhead | per test |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-exercises-") as tmp:
        for slug in slugs:
            row = measure([slug], args.n, args.skip, Path(tmp))
            rows.append(row)
            print(f"| {slug} | {row['tests']} | {row['calls']:.0f} | "
                  f"{row['machine_cpu_ms']:.0f} ms | {row['learner_ms']:.0f} ms | "
                  f"{row['overhead_ms']:.0f} ms | {row['overhead_per_test_ms']:.1f} ms |",
                  flush=True)
    tests = sum(r["tests"] for r in rows)
    overhead = sum(r["overhead_ms"] for r in rows)
    print(f"| all | {tests} | {sum(r['calls'] for r in rows):.0f} | "
          f"{sum(r['machine_cpu_ms'] for r in rows):.0f} ms | "
          f"{sum(r['learner_ms'] for r in rows):.0f} ms | {overhead:.0f} ms | "
          f"{overhead / tests:.1f} ms |")
    if args.whole:
        with tempfile.TemporaryDirectory(prefix="bench-exercises-") as tmp:
            row = measure(slugs, args.n, args.skip, Path(tmp), label="whole pack")
        rows.append(row)
        print(f"| whole pack, one worker | {row['tests']} | {row['calls']:.0f} | "
              f"{row['machine_cpu_ms']:.0f} ms | {row['learner_ms']:.0f} ms | "
              f"{row['overhead_ms']:.0f} ms | {row['overhead_per_test_ms']:.1f} ms |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"load_before": load, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
