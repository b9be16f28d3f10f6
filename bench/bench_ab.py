"""A/B, interleaved: the one-exercise slope of two versions of the grader, by hand.

    .venv/bin/python bench/bench_ab.py BEFORE [AFTER] [--workers-b K] [--rounds R]
                                       [--feedback graded]

BEFORE and AFTER are git revisions (AFTER defaults to the work tree as it is); each is
checked out in a temporary worktree and run with the project's venv (``python -m grader``
with that worktree first on ``PYTHONPATH``). Every round grades the same reference-correct
``grid_local_mask`` class of N = 40 and N = 200 with A, then B, alternately, so that the load
of the moment falls on both. Printed: per round and as medians, the margin per submission
(wall seconds between N = 40 and 200 over 160) and the machine's CPU per submission at that
margin, with the load average. ``--feedback graded`` grades both at that level (a class in
two rounds, public then hidden, where the version has them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_grading import PYTHON, _reference_class, machine_cpu_s  # noqa: E402

SMALL, LARGE = 40, 200


def _worktree(rev: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(into),
                    rev], check=True)
    return into


def _bulk(tree: Path, class_dir: Path, out: Path, workers: int,
          feedback: str = "full") -> tuple[float, float]:
    """(wall seconds, machine CPU seconds) of a cold ``grade bulk`` run with ``tree``'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [PYTHON, "-m", "grader", "bulk", str(class_dir), "--out", str(out), "--workers",
            str(workers), "--device", "cpu", "--force", "-q", "--feedback", feedback]
    cpu, started = machine_cpu_s(), time.perf_counter()
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - started, machine_cpu_s() - cpu
    if done.returncode != 0:
        raise SystemExit(f"bench: {tree}: grade bulk exited {done.returncode}\n"
                         f"{done.stderr[-2000:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="git revision A")
    parser.add_argument("after", nargs="?", help="git revision B (default: the work tree)")
    parser.add_argument("--workers", type=int, default=2, help="pool processes of A (2)")
    parser.add_argument("--workers-b", type=int, help="pool processes of B (as A's)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    parser.add_argument("--feedback", default="full", choices=("full", "graded"),
                        help="the feedback level both grade at (full)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        work = Path(tmp)
        trees = {"A": _worktree(args.before, work / "A")}
        trees["B"] = _worktree(args.after, work / "B") if args.after else ROOT
        workers = {"A": args.workers, "B": args.workers_b or args.workers}
        try:
            for n in (SMALL, LARGE):
                _reference_class(work / f"class-{n}", n, ["grid_local_mask"])
            load = os.getloadavg()[0]
            print(f"A = {args.before} ({workers['A']} workers), B = {args.after or 'work tree'}"
                  f" ({workers['B']} workers), feedback {args.feedback}; load average "
                  f"{load:.2f}", flush=True)
            figures: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
            for r in range(args.rounds):
                for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
                    runs = {n: _bulk(trees[name], work / f"class-{n}",
                                     work / f"out-{name}-{n}", workers[name],
                                     args.feedback)
                            for n in (SMALL, LARGE)}
                    margin = (runs[LARGE][0] - runs[SMALL][0]) / (LARGE - SMALL)
                    cpu = (runs[LARGE][1] - runs[SMALL][1]) / (LARGE - SMALL)
                    figures[name].append((margin, cpu))
                    print(f"  round {r + 1} {name}: margin {1e3 * margin:.2f} ms, machine CPU "
                          f"{1e3 * cpu:.2f} ms per submission", flush=True)
            print(f"load average after: {os.getloadavg()[0]:.2f}")
            med = {k: (statistics.median(m for m, _ in v), statistics.median(c for _, c in v))
                   for k, v in figures.items()}
            for name in ("A", "B"):
                print(f"{name}: median margin {1e3 * med[name][0]:.2f} ms, machine CPU "
                      f"{1e3 * med[name][1]:.2f} ms per submission")
            print(f"B/A: margin {med['B'][0] / med['A'][0]:.3f}, machine CPU "
                  f"{med['B'][1] / med['A'][1]:.3f}")
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                    str(tree)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
