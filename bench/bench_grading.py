"""Benchmark: `grade bulk` against the naive way (one pytest process per submission), by hand.

    .venv/bin/python bench/bench_grading.py                       # 200 submissions, 2 workers
    .venv/bin/python bench/bench_grading.py --n 20 --workers 2    # a quick run
    .venv/bin/python bench/bench_grading.py --naive-subset 40 --json /tmp/bench.json
    .venv/bin/python bench/bench_grading.py --exclude positional_attention   # no ~5 s trainings
    .venv/bin/python bench/bench_grading.py --slope     # margins and start-up (~4 minutes)

In one run on one machine it
1. generates a synthetic class of N submissions (deterministic from --seed): each submits 3 or
   4 exercises drawn from all of them (positional_attention, whose correct answer trains two
   models for about 5 s, less often), and each file is correct (the reference), wrong (a known
   mistake from tests/test_exercise_*.py planted in the reference), erroring (an exception at
   import, or in a call) or slow-but-correct (the reference behind a pure-Python loop on every
   call, and a 0.2 s sleep on the first call);
2. grades it with `grade bulk --workers W` into a fresh folder (cold cache), then again (warm
   cache: nothing to regrade), timing each command from start to exit;
3. grades the same class the naive way: one `python -m pytest` process per submission running
   the same hidden suites with the fixtures of bench/naive_plugin.py (the learner's module
   imported in the pytest process), W processes at a time (a thread pool of subprocesses);
   with --naive-subset K only every (N/K)-th submission, the figures extrapolated per
   submission;
4. prints the figures beside the grading targets (PASS/MISS; see docs/performance.md) and writes
   them as JSON with --json.

Memory: the grade process and all its descendants, sampled from /proc every 50 ms (RSS) and
every 0.5 s (PSS, which counts a page shared by k processes as 1/k in each). Figures are
wall-clock times on a possibly busy machine: noisy, reported as measured.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))

from grader import catalog  # noqa: E402
from grader.authoring import variants  # noqa: E402

PYTHON = sys.executable
GRADE = [str(Path(PYTHON).parent / "grade")] if (Path(PYTHON).parent / "grade").exists() \
    else [PYTHON, "-m", "grader"]
THREADS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# -- the synthetic class -------------------------------------------------------------------

KINDS = {"correct": 0.45, "wrong": 0.30, "error_import": 0.05, "error_call": 0.05, "slow": 0.15}
WEIGHT = {"positional_attention": 0.3}  # others 1.0: its correct answer trains for ~5 s

NO_SLEEP = {"attention_rollout"}  # its source rule allows importing only numpy and math

_DETOUR = """
def _bench_detour():
    acc = 0
    for i in range({loops}):  # a pure-Python detour on every call
        acc += i % 7
    return acc
"""


def _wrap_slow(src: str, target: str, is_class: bool, sleep: bool) -> str:
    head = "import time as _bench_time\n" if sleep else ""
    first = ("    if not _bench_slept:\n        _bench_slept.append(1)\n"
             "        _bench_time.sleep(0.2)\n") if sleep else ""
    loops = 30_000 if sleep else 300_000
    if is_class:
        return (src + "\n" + head + _DETOUR.format(loops=loops) +
                f"_bench_slept = []\n_bench_forward = {target}.forward\n\n\n"
                "def _bench_slow_forward(self, *args, **kwargs):\n" + first +
                "    _bench_detour()\n    return _bench_forward(self, *args, **kwargs)\n\n\n"
                f"{target}.forward = _bench_slow_forward\n")
    return (src + "\n" + head + _DETOUR.format(loops=loops) +
            f"_bench_slept = []\n_bench_inner = {target}\n\n\n"
            f"def {target}(*args, **kwargs):\n" + first +
            "    _bench_detour()\n    return _bench_inner(*args, **kwargs)\n")


def _wrap_call_error(src: str, target: str, is_class: bool) -> str:
    body = '    raise IndexError("index 3 is out of bounds for axis 0 with size 3")\n'
    if is_class:
        return (src + "\n\ndef _bench_forward(self, *args, **kwargs):\n" + body +
                f"\n\n{target}.forward = _bench_forward\n")
    return src + f"\n\ndef {target}(*args, **kwargs):\n" + body


def learner_file(slug: str, kind: str, rng: random.Random) -> tuple[str, str]:
    """(source, variant label) of one learner file of ``kind`` for exercise ``slug``."""
    ex = catalog.get(slug)
    src = ex.solution.read_text()
    target = ex.functions[0]
    is_class = f"\nclass {target}(" in src
    if kind == "correct":
        return src, "reference"
    if kind == "wrong":
        # a known mistake, as declared in solutions/<slug>.variants.toml
        mistake = rng.choice(variants.load(slug).mistakes)
        try:
            return mistake.source(src), f"mistake {mistake.name}"
        except variants.EditError as e:
            raise SystemExit(f"bench: {e}") from None
    if kind == "error_import":
        return src + "\n_BENCH_SETTINGS = {'radius': 1}\n_bench = _BENCH_SETTINGS['window']\n", \
            "KeyError at import"
    if kind == "error_call":
        return _wrap_call_error(src, target, is_class), f"IndexError in {target}"
    sleep = slug not in NO_SLEEP
    return _wrap_slow(src, target, is_class, sleep), \
        f"Python loop{' + 0.2 s sleep' if sleep else ''} in {target}"


@dataclass
class Submission:
    id: str
    files: dict[str, str] = field(default_factory=dict)  # slug -> kind


def make_class(folder: Path, n: int, seed: int,
               exclude: set[str] = frozenset()) -> list[Submission]:
    """Write ``folder/<id>/<slug>.py`` for N submissions; deterministic from ``seed``."""
    rng = random.Random(seed)
    slugs = [s for s in catalog.load() if s not in exclude]
    weights = [WEIGHT.get(s, 1.0) for s in slugs]
    kinds, kind_w = list(KINDS), list(KINDS.values())
    subs = []
    for i in range(n):
        sub = Submission(f"s{i + 1:04d}")
        chosen: list[str] = []
        count = rng.choice((3, 4))
        while len(chosen) < count:
            slug = rng.choices(slugs, weights)[0]
            if slug not in chosen:
                chosen.append(slug)
        (folder / sub.id).mkdir(parents=True)
        for slug in chosen:
            kind = rng.choices(kinds, kind_w)[0]
            src, _ = learner_file(slug, kind, rng)
            (folder / sub.id / f"{slug}.py").write_text(src)
            sub.files[slug] = kind
        subs.append(sub)
    return subs


def describe_mix(subs: list[Submission]) -> tuple[str, dict[str, Any]]:
    slugs = list(catalog.load())
    table = {s: {k: 0 for k in KINDS} for s in slugs}
    for sub in subs:
        for slug, kind in sub.files.items():
            table[slug][kind] += 1
    torch_subs = sum(any(catalog.get(s).needs_torch for s in sub.files) for sub in subs)
    files = sum(len(sub.files) for sub in subs)
    lines = [f"{'exercise':<24}" + "".join(f"{k:>13}" for k in KINDS) + f"{'files':>8}"]
    for slug in slugs:
        row = table[slug]
        lines.append(f"{slug:<24}" + "".join(f"{row[k]:>13}" for k in KINDS) +
                     f"{sum(row.values()):>8}")
    totals = {k: sum(table[s][k] for s in slugs) for k in KINDS}
    lines.append(f"{'all':<24}" + "".join(f"{totals[k]:>13}" for k in KINDS) + f"{files:>8}")
    lines.append(f"{len(subs)} submissions, {files} files ({files / max(len(subs), 1):.2f} per "
                 f"submission), {torch_subs} submissions with a torch exercise "
                 f"({', '.join(s for s in slugs if catalog.get(s).needs_torch)})")
    return "\n".join(lines), {"per_exercise": table, "per_kind": totals, "files": files,
                              "submissions_with_torch": torch_subs}


# -- memory of a process tree ---------------------------------------------------------------

PAGE = os.sysconf("SC_PAGE_SIZE")


class TreeMemory(threading.Thread):
    """Samples the summed RSS (every ``every`` s) and PSS (every 10th sample) of ``pid`` and
    all its descendants until ``stop()``; keeps the peaks."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.parent: dict[int, int] = {}
        self.peak_rss = self.peak_pss = 0
        self.peak_procs = 0
        self.samples = 0
        self.cpu_s = 0.0
        self._halt = threading.Event()

    def _ppid(self, pid: int) -> int:
        if pid not in self.parent:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                self.parent[pid] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                return -1
        return self.parent[pid]

    def tree(self) -> list[int]:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        inside = {self.pid}
        grew = True
        while grew:  # parents nearly always have smaller pids: one pass, and one to confirm
            grew = False
            for pid in sorted(pids):
                if pid not in inside and self._ppid(pid) in inside:
                    inside.add(pid)
                    grew = True
        return sorted(inside & set(pids))

    @staticmethod
    def _rss(pid: int) -> int:
        try:
            return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            return 0

    @staticmethod
    def _pss(pid: int) -> int:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def run(self) -> None:
        started = time.thread_time()
        while not self._halt.is_set():
            pids = self.tree()
            self.peak_rss = max(self.peak_rss, sum(self._rss(p) for p in pids))
            if self.samples % 10 == 0:
                self.peak_pss = max(self.peak_pss, sum(self._pss(p) for p in pids))
            self.peak_procs = max(self.peak_procs, len(pids))
            self.samples += 1
            self._halt.wait(self.every)
        self.cpu_s = time.thread_time() - started

    def stop(self) -> None:
        self._halt.set()
        self.join()


def run_measured(argv: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess,
                                                      TreeMemory]:
    """Run ``argv`` to its end; (wall seconds from start to exit, the process, its memory)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    mem = TreeMemory(proc.pid)
    mem.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    mem.stop()
    return wall, subprocess.CompletedProcess(argv, proc.returncode, out, err), mem


# -- the three gradings ----------------------------------------------------------------------

def grade_bulk(class_dir: Path, out: Path, workers: int, cwd: Path) -> dict[str, Any]:
    argv = GRADE + ["bulk", str(class_dir), "--out", str(out), "--workers", str(workers),
                    "--device", "cpu", "-q"]
    wall, proc, mem = run_measured(argv, cwd)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"bench: grade bulk exited {proc.returncode}")
    return {"wall_s": wall, "peak_rss": mem.peak_rss, "peak_pss": mem.peak_pss,
            "peak_procs": mem.peak_procs, "samples": mem.samples, "sampler_cpu_s": mem.cpu_s,
            "said": proc.stdout.strip().splitlines()[-1:]}


def naive_one(sub: Submission, class_dir: Path, times_dir: Path) -> dict[str, Any]:
    times = times_dir / f"{sub.id}.json"
    env = {**os.environ, **THREADS_ENV, "BENCH_NAIVE_SUBMISSION": str(class_dir / sub.id),
           "BENCH_NAIVE_TIMES": str(times),
           "PYTHONPATH": os.pathsep.join([str(BENCH), str(ROOT)])}
    suites = [str(catalog.get(slug).suite) for slug in sub.files]
    argv = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "naive_plugin",
            "-c", str(BENCH / "naive_pytest.ini"), *suites]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        stats = json.loads(times.read_text())
    except (OSError, ValueError):
        print(proc.stdout[-3000:], proc.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"bench: the naive pytest run of {sub.id} wrote no figures "
                         f"(exit {proc.returncode})") from None
    return {"id": sub.id, "wall_s": wall, "exit": proc.returncode, **stats}


def grade_naive(subs: list[Submission], class_dir: Path, workers: int,
                work: Path) -> tuple[float, list[dict[str, Any]]]:
    times_dir = work / "naive-times"
    times_dir.mkdir()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(lambda s: naive_one(s, class_dir, times_dir), subs))
    return time.perf_counter() - started, rows


# -- single-exercise latency, and where time goes ----------------------------------------------

ONE_TEST = "import numpy as np\n\n\ndef test_one():\n    assert np.ones(3).sum() == 3\n"


def latency(work: Path, runs: int) -> dict[str, Any]:
    """`grade --submission DIR grid_local_mask -q` on a correct file vs `python -m pytest` on
    a one-test file that imports numpy: each process start to exit, median of ``runs``."""
    sub = work / "single"
    sub.mkdir()
    shutil.copy(catalog.get("grid_local_mask").solution, sub / "grid_local_mask.py")
    (work / "one_test").mkdir()
    (work / "one_test" / "test_one.py").write_text(ONE_TEST)
    grade_argv = GRADE + ["--submission", str(sub), "grid_local_mask", "-q", "--device", "cpu",
                          "--report-dir", str(work / "single-report")]
    pytest_argv = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   str(work / "one_test" / "test_one.py")]
    samples: dict[str, list[float]] = {"grade": [], "pytest": []}
    for i in range(runs + 1):  # the first round warms the page cache and is not counted
        for name, argv, ok in (("grade", grade_argv, 0), ("pytest", pytest_argv, 0)):
            started = time.perf_counter()
            proc = subprocess.run(argv, cwd=work, capture_output=True, text=True)
            took = time.perf_counter() - started
            if proc.returncode != ok:
                print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"bench: {name} exited {proc.returncode} in the latency run")
            if i:
                samples[name].append(took)
    return {"grade_s": statistics.median(samples["grade"]),
            "pytest_s": statistics.median(samples["pytest"]), "runs": samples}


PROBE = r"""
import json, statistics, sys, time
from pathlib import Path
out = {}
try:
    import inspect
    from grader import catalog
    from grader.sandbox.process import WorkerProcess
    for slug in ("grid_local_mask", "patch_vit"):
        # as engine/runner.py does: a torch exercise's worker comes from a torch fork server
        kw = {"preload": "torch" if catalog.get(slug).needs_torch else "numpy"} \
            if "preload" in inspect.signature(WorkerProcess).parameters else {}
        took = []
        for _ in range(4):  # the first start may start a fork server: not counted
            t = time.perf_counter()
            with WorkerProcess({slug: Path(sys.argv[1]) / f"{slug}.py"}, device="cpu",
                               **kw) as w:
                w.start()
                w.request("load", module=slug)
                took.append(time.perf_counter() - t)
        out[slug] = statistics.median(took[1:])
        out[slug + "_first"] = took[0]
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
try:
    import io, contextlib, pytest
    from grader import catalog
    argv = ["--collect-only", "-q", "-p", "no:cacheprovider", "-c",
            str(catalog.SUITES_DIR / "pytest.ini"), "--rootdir", str(catalog.SUITES_DIR),
            *[str(ex.suite) for ex in catalog.load().values()]]
    took = []
    for _ in range(3):
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main(argv)
        took.append(time.perf_counter() - t)
    out["collect_first_s"], out["collect_again_s"] = took[0], statistics.median(took[1:])
except Exception as exc:
    out["collect_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def where_time_goes(work: Path) -> dict[str, Any]:
    """Context: interpreter start, numpy and torch imports (median of 3 processes); a worker
    started and the learner's module imported, numpy-only and torch exercise (median of 3
    after a first start); pytest collecting every suite in one process, again and again."""
    def median_of(argv: list[str]) -> float:
        took = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True, env={**os.environ,
                                                                       **THREADS_ENV})
            took.append(time.perf_counter() - started)
        return statistics.median(took)

    figures: dict[str, Any] = {
        "python_start_s": median_of([PYTHON, "-c", "pass"]),
        "import_numpy_s": median_of([PYTHON, "-c", "import numpy"]),
        "import_torch_s": median_of([PYTHON, "-c", "import torch"]),
    }
    refs = work / "probe"
    refs.mkdir()
    for slug in ("grid_local_mask", "patch_vit"):
        shutil.copy(catalog.get(slug).solution, refs / f"{slug}.py")
    proc = subprocess.run([PYTHON, "-c", PROBE, str(refs)], capture_output=True, text=True,
                          cwd=ROOT)
    try:
        probe = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        probe = {"error": (proc.stderr or proc.stdout)[-300:]}
    figures["worker_start_and_import"] = probe
    return figures


# -- figures from the reports -----------------------------------------------------------------

def bulk_breakdown(out: Path, subs: list[Submission]) -> dict[str, Any]:
    """From OUT/<id>/results.json: per submission, the grading call's own duration and the time
    inside the tests (learner + reference + comparisons + the worker round trips); and the
    passed tests of the submitted exercises (to compare with the naive run)."""
    durations, inside, unsubmitted, n_unsubmitted, passed = [], [], [], [], {}
    for sub in subs:
        data = json.loads((out / sub.id / "results.json").read_text())
        durations.append(float(data["duration_s"]))
        inside.append(sum(float(t["duration_s"]) for e in data["exercises"] for t in e["tests"]))
        absent = [t for e in data["exercises"] if e["exercise"] not in sub.files
                  for t in e["tests"]]
        unsubmitted.append(sum(float(t["duration_s"]) for t in absent))
        n_unsubmitted.append(len(absent))
        passed[sub.id] = sum(t["status"] == "passed" for e in data["exercises"]
                             if e["exercise"] in sub.files for t in e["tests"])
    return {"grade_s_mean": statistics.mean(durations), "in_tests_s_mean": statistics.mean(inside),
            "unsubmitted_tests_mean": statistics.mean(n_unsubmitted),
            "unsubmitted_s_mean": statistics.mean(unsubmitted), "passed": passed}


def outcomes_by_kind(out: Path, subs: list[Submission]) -> dict[str, dict[str, int]]:
    """Per kind of learner file: how many files' exercises passed in full in the bulk run."""
    table = {k: {"files": 0, "all_passed": 0} for k in KINDS}
    for sub in subs:
        data = json.loads((out / sub.id / "results.json").read_text())
        for e in data["exercises"]:
            if e["exercise"] in sub.files:
                kind = sub.files[e["exercise"]]
                table[kind]["files"] += 1
                table[kind]["all_passed"] += e["status"] == "passed"
    return table


# -- main ----------------------------------------------------------------------------------

def _ms(s: float) -> str:
    return f"{s * 1e3:,.1f} ms"


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB"


# -- --slope: marginal costs and start-up, against the targets of docs/performance.md ------

def _reference_class(folder: Path, n: int, slugs: list[str]) -> list[Submission]:
    """``n`` submissions, each the reference of every exercise in ``slugs``."""
    subs = []
    for i in range(n):
        sub = Submission(f"r{i + 1:04d}")
        (folder / sub.id).mkdir(parents=True)
        for slug in slugs:
            shutil.copy(catalog.get(slug).solution, folder / sub.id / f"{slug}.py")
            sub.files[slug] = "correct"
        subs.append(sub)
    return subs


def machine_cpu_s() -> float:
    """CPU seconds all processes have used since boot (user, nice, system, irq, softirq:
    ``/proc/stat``), this grader's and whatever else runs."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:8]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def _bulk_timed(class_dir: Path, out: Path, workers: int, cwd: Path,
                feedback: str = "full") -> tuple[float, float, float]:
    """(seconds to the first graded submission, seconds to exit, machine CPU seconds) of a
    cold `grade bulk` at the ``feedback`` level (below ``full``: the class in two rounds)."""
    argv = GRADE + ["bulk", str(class_dir), "--out", str(out), "--workers", str(workers),
                    "--device", "cpu", "--force", "-q", "--feedback", feedback]
    cpu = machine_cpu_s()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    first = None
    while proc.poll() is None:
        if first is None and next(out.glob("*/results.json"), None) is not None:
            first = time.perf_counter() - started
        time.sleep(0.005)
    wall = time.perf_counter() - started
    cpu = machine_cpu_s() - cpu
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        print(stdout[-2000:], stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"bench: grade bulk exited {proc.returncode}")
    return (first if first is not None else wall), wall, cpu


def _tests_per_submission(out: Path) -> float:
    counts = [sum(len(e["tests"]) for e in json.loads(p.read_text())["exercises"])
              for p in out.glob("*/results.json")]
    return statistics.mean(counts)


def _imports_torch(class_dir: Path, work: Path) -> bool:
    out = work / "importtime"
    proc = subprocess.run([PYTHON, "-X", "importtime", "-m", "grader", "bulk", str(class_dir),
                           "--out", str(out), "--device", "cpu", "--force", "-q"],
                          cwd=work, capture_output=True, text=True)
    return any(line.split("|")[-1].strip() == "torch"
               for line in proc.stderr.splitlines() if line.startswith("import time:"))


def slope_mode(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The three figures of the performance targets, in one run, printed against them."""
    cores = os.cpu_count() or 1
    parallel = min(args.workers, cores)
    load = os.getloadavg()[0]
    figures: dict[str, Any] = {"load_before": load, "workers": args.workers, "cores": cores}
    print(f"--slope: {args.workers} workers on {cores} cores, load average {load:.2f}",
          flush=True)

    # 1. one exercise, reference-correct files: the slope between N = 40 and N = 200, the
    # median of --repeat runs (wall time on a shared machine varies by 20% from run to run)
    small, large = 40, 200
    for n in (small, large):
        _reference_class(work / f"one-{n}", n, ["grid_local_mask"])
    runs: list[tuple[float, float, float]] = []  # (margin s, machine CPU s per sub, first s)
    graded: list[tuple[float, float, float]] = []  # the same at the graded level
    for r in range(args.repeat):
        for level, kept in (("full", runs), ("graded", graded)):  # (interleaved)
            one = {n: _bulk_timed(work / f"one-{n}", work / f"one-out-{level}-{n}-{r}",
                                  args.workers, work, level) for n in (small, large)}
            kept.append(((one[large][1] - one[small][1]) / (large - small),
                         (one[large][2] - one[small][2]) / (large - small), one[small][0]))
            print(f"  grid_local_mask class at {level}, run {r + 1}: N = {small} "
                  f"{one[small][1]:.2f} s, N = {large} {one[large][1]:.2f} s: margin "
                  f"{1e3 * kept[-1][0]:.1f} ms, machine CPU {1e3 * kept[-1][1]:.1f} ms per "
                  f"submission (first graded after {one[small][0]:.2f} s)", flush=True)
    margin = statistics.median(m for m, _, _ in runs)
    margin_cpu = statistics.median(c for _, c, _ in runs)
    graded_margin = statistics.median(m for m, _, _ in graded)
    graded_cpu = statistics.median(c for _, c, _ in graded)
    first_graded = statistics.median(f for _, _, f in runs)
    (work / "times-one").mkdir()
    (work / "times-pack").mkdir()
    learner_one = naive_one(Submission("r0001", {"grid_local_mask": "correct"}),
                            work / f"one-{small}", work / "times-one")["learner_s"]
    torch_imported = _imports_torch(work / f"one-{small}", work)

    # 2. the whole pack, reference-correct files: per-test overhead
    slugs = list(catalog.load())
    pack: dict[int, tuple[float, float]] = {}  # (wall s, machine CPU s)
    pack_small, pack_large = 4, 12
    for n in (pack_small, pack_large):
        class_dir = work / f"pack-{n}"
        _reference_class(class_dir, n, slugs)
        pack[n] = _bulk_timed(class_dir, work / f"pack-out-{n}", args.workers, work)[1:]
        print(f"  whole-pack class, N = {n}: {pack[n][0]:.2f} s, machine CPU {pack[n][1]:.1f} s",
              flush=True)
    pack_margin = (pack[pack_large][0] - pack[pack_small][0]) / (pack_large - pack_small)
    pack_cpu = (pack[pack_large][1] - pack[pack_small][1]) / (pack_large - pack_small)
    tests = _tests_per_submission(work / f"pack-out-{pack_small}")
    learner_pack = naive_one(Submission("r0001", dict.fromkeys(slugs, "correct")),
                             work / f"pack-{pack_small}", work / "times-pack")["learner_s"]
    per_test = (pack_margin - learner_pack / parallel) / tests
    # the same in CPU time, which another process's load disturbs far less than wall time:
    # all the machine's CPU per submission at the margin, less the learner's, per test
    per_test_cpu = (pack_cpu - learner_pack) / tests

    # 3. start-up of one exercise against a one-test pytest run
    lat = latency(work, args.latency_runs)
    ratio = lat["grade_s"] / lat["pytest_s"]

    figures.update({
        "one_exercise_margin_ms": 1e3 * margin, "one_exercise_learner_ms": 1e3 * learner_one,
        "one_exercise_margin_runs_ms": [1e3 * m for m, _, _ in runs],
        "one_exercise_machine_cpu_ms": 1e3 * margin_cpu,
        "graded_margin_ms": 1e3 * graded_margin, "graded_machine_cpu_ms": 1e3 * graded_cpu,
        "graded_margin_runs_ms": [1e3 * m for m, _, _ in graded],
        "first_graded_s": first_graded, "numpy_class_imports_torch": torch_imported,
        "pack_margin_ms": 1e3 * pack_margin, "pack_tests": tests,
        "pack_learner_ms": 1e3 * learner_pack, "overhead_per_test_ms": 1e3 * per_test,
        "pack_machine_cpu_ms": 1e3 * pack_cpu, "overhead_per_test_cpu_ms": 1e3 * per_test_cpu,
        "grade_s": lat["grade_s"], "pytest_s": lat["pytest_s"], "latency_ratio": ratio,
        "load_after": os.getloadavg()[0]})

    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    print(f"\n## --slope figures (load average {load:.2f} before, "
          f"{figures['load_after']:.2f} after)")
    print(f"one-exercise class, margin per submission (N {small} -> {large}, median of "
          f"{len(runs)}): {1e3 * margin:.1f} ms  [target <= 12 ms] {verdict(margin <= 0.012)}")
    print(f"one-exercise class, machine CPU per submission at the margin: "
          f"{1e3 * margin_cpu:.1f} ms  [target <= 20 ms] {verdict(margin_cpu <= 0.020)}")
    print(f"  ({1e3 * margin_cpu / cores:.1f} ms with every core busy all the time)")
    print(f"the same at the graded level (public rounds of the class, then hidden ones): "
          f"margin {1e3 * graded_margin:.1f} ms  [target <= 12 ms] "
          f"{verdict(graded_margin <= 0.012)}, machine CPU {1e3 * graded_cpu:.1f} ms  "
          f"[target <= 20 ms] {verdict(graded_cpu <= 0.020)}")
    print(f"  (the learner's own time per submission: {1e3 * learner_one:.1f} ms, "
          f"{1e3 * learner_one / parallel:.1f} ms of wall share on {parallel} workers)")
    print(f"whole pack, grader overhead per test in CPU time: (machine CPU "
          f"{1e3 * pack_cpu:.0f} ms - learner {1e3 * learner_pack:.0f} ms) / {tests:.0f} "
          f"tests = {1e3 * per_test_cpu:.2f} ms  [target <= 3 ms] "
          f"{verdict(per_test_cpu <= 0.003)}")
    print(f"  (in wall time: (margin {1e3 * pack_margin:.0f} ms - learner "
          f"{1e3 * learner_pack:.0f} ms / {parallel}) / {tests:.0f} tests = "
          f"{1e3 * per_test:.2f} ms per test)")
    print(f"grade bulk, numpy-only class: first graded submission after "
          f"{first_graded:.2f} s  [target <= 1 s] {verdict(first_graded <= 1.0)}; torch "
          f"imported: {'yes' if torch_imported else 'no'}")
    print(f"grade grid_local_mask: {lat['grade_s']:.3f} s vs pytest one test "
          f"{lat['pytest_s']:.3f} s = {ratio:.2f}x  [target <= 1.5x] {verdict(ratio <= 1.5)}")
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="submissions in the class (200)")
    ap.add_argument("--workers", type=int, default=2, help="parallel gradings, both ways (2)")
    ap.add_argument("--seed", type=int, default=0, help="the class's seed (0)")
    ap.add_argument("--naive-subset", type=int, default=0, metavar="K",
                    help="run the naive baseline on K evenly spaced submissions and "
                         "extrapolate (default 0: all N)")
    ap.add_argument("--exclude", default="", metavar="SLUGS",
                    help="comma-separated exercises left out of the class (e.g. "
                         "positional_attention, whose correct answer trains for ~5 s)")
    ap.add_argument("--latency-runs", type=int, default=5, help="runs per latency median (5)")
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--keep", type=Path, help="keep the class and reports in this new folder")
    ap.add_argument("--repeat", type=int, default=3, metavar="K",
                    help="--slope: runs of the one-exercise class, their median shown (3)")
    ap.add_argument("--slope", action="store_true",
                    help="only the performance targets: the margin per submission of a "
                         "one-exercise class (N 40 -> 200), the grader's overhead per test of "
                         "the whole pack, and start-up (about 3 minutes)")
    args = ap.parse_args(argv)
    if args.n < 1 or args.workers < 1:
        ap.error("--n and --workers must be at least 1")
    exclude = {x.strip() for x in args.exclude.split(",") if x.strip()}
    if exclude - set(catalog.load()) or len(set(catalog.load()) - exclude) < 4:
        ap.error(f"--exclude: unknown exercises, or fewer than 4 left: {sorted(exclude)}")

    check = subprocess.run([PYTHON, "-c", "import grader.engine.plugin, grader.engine.runner, "
                            "grader.cli"], cwd=ROOT, capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit("bench: the grader does not import here (a change in progress?):\n" +
                         check.stderr[-1500:])
    work = Path(tempfile.mkdtemp(prefix="bench-grading-")) if args.keep is None else args.keep
    if args.keep is not None:
        work.mkdir(parents=True, exist_ok=False)
    cores = os.cpu_count() or 1
    if args.slope:
        try:
            figures = slope_mode(args, work)
            if args.json:
                args.json.write_text(json.dumps(figures, indent=2))
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
        return 0
    try:
        class_dir = work / "class"
        subs = make_class(class_dir, args.n, args.seed, exclude)
        mix_text, mix = describe_mix(subs)
        print(f"# Grading benchmark: N={args.n}, workers={args.workers}, seed={args.seed}, "
              f"{cores} cores, {work}")
        print(f"Mix (3 or 4 exercises per submission; kinds drawn with weights "
              f"{', '.join(f'{k} {w:g}' for k, w in KINDS.items())}; exercise weight 1, "
              f"positional_attention {WEIGHT['positional_attention']:g}" +
              (f"; excluded: {', '.join(sorted(exclude))}" if exclude else "") + "):")
        print(mix_text, flush=True)

        print("\n[1/4] grade bulk, cold cache ...", flush=True)
        cold = grade_bulk(class_dir, work / "out", args.workers, work)
        print(f"      {cold['wall_s']:.1f} s; {cold['said'][0] if cold['said'] else ''}")
        print("[2/4] grade bulk, warm cache ...", flush=True)
        warm = grade_bulk(class_dir, work / "out", args.workers, work)
        print(f"      {warm['wall_s']:.2f} s; {warm['said'][0] if warm['said'] else ''}")

        k = args.naive_subset if 0 < args.naive_subset < args.n else args.n
        step = args.n / k
        naive_subs = [subs[int(i * step)] for i in range(k)]
        print(f"[3/4] naive: one pytest process per submission, {args.workers} at a time, "
              f"{k} of {args.n} submissions ...", flush=True)
        naive_wall, naive_rows = grade_naive(naive_subs, class_dir, args.workers, work)
        print(f"      {naive_wall:.1f} s")
        print("[4/4] latency of one exercise, and where time goes ...", flush=True)
        lat = latency(work, args.latency_runs)
        context = where_time_goes(work)

        breakdown = bulk_breakdown(work / "out", subs)
        by_kind = outcomes_by_kind(work / "out", subs)
        agree = sum(breakdown["passed"][r["id"]] == r["outcomes"]["passed"] for r in naive_rows)
        n = args.n
        per_cold, per_warm = cold["wall_s"] / n, warm["wall_s"] / n
        per_naive = naive_wall / k
        learner_per_sub = statistics.mean(r["learner_s"] for r in naive_rows)
        parallel = min(args.workers, cores)
        overhead = per_cold - learner_per_sub / parallel
        warm_200 = warm["wall_s"] * 200 / n
        ratio = per_naive / per_cold
        latency_ratio = lat["grade_s"] / lat["pytest_s"]
        extrapolated = k < n

        print("\n## Figures (wall clock, start to exit of each command)")
        rows = [
            ("bulk, cold cache", f"{cold['wall_s']:.1f} s", _ms(per_cold), f"{1 / per_cold:.1f}"),
            ("bulk, warm cache", f"{warm['wall_s']:.2f} s", _ms(per_warm), f"{1 / per_warm:.0f}"),
            (f"naive, {k} pytest processes" + (" (subset)" if extrapolated else ""),
             f"{naive_wall:.1f} s", _ms(per_naive), f"{1 / per_naive:.2f}"),
        ]
        print(f"{'grading':<40}{'total':>10}{'per submission':>18}{'subs/s':>9}")
        for r in rows:
            print(f"{r[0]:<40}{r[1]:>10}{r[2]:>18}{r[3]:>9}")
        walls = [r["wall_s"] for r in naive_rows]
        print(f"  (naive: each pytest process took {statistics.median(walls):.2f} s median, "
              f"{max(walls):.2f} s at most, {args.workers} at a time; the learner's modules "
              f"imported in it, no worker, no wall-clock limit)")
        if extrapolated:
            print(f"  (naive: one submission in {step:g}, evenly spaced; per submission = its "
                  f"total / {k}; "
                  f"for all {n}: about {per_naive * n:.0f} s)")
        ceiling = per_naive / max(learner_per_sub / parallel, 1e-9)
        print(f"ratio naive / bulk cold, per submission: {ratio:.1f}x (on this class at most "
              f"{ceiling:.1f}x even with no grader overhead at all: the learner code's own "
              f"time, below, spread over {parallel} workers)")
        print(f"learner code's own time per submission: {_ms(learner_per_sub)} (the sum of its "
              f"calls' durations, measured in the naive run{' subset' if extrapolated else ''}, "
              f"imports excluded; mean import of its files {_ms(statistics.mean(r['import_s'] for r in naive_rows))})")  # noqa: E501
        print(f"grader's own overhead per submission: {_ms(overhead)} = bulk cold per submission "
              f"- learner time / {parallel} (its calls spread over {parallel} workers: the "
              f"least the learner code could take of the wall time)")
        print(f"  inside each pool process, per submission: grading {_ms(breakdown['grade_s_mean'])}"  # noqa: E501
              f", of which inside tests {_ms(breakdown['in_tests_s_mean'])} (learner + reference "
              f"+ comparisons + worker round trips; {breakdown['unsubmitted_tests_mean']:.0f} "
              f"tests of exercises not submitted, not run: verdicts made once per process, "
              f"{_ms(breakdown['unsubmitted_s_mean'])}); "
              f"the rest is the worker's start and stop and the report (the suites are collected "
              f"once per pool process)")
        print(f"peak memory of the bulk run (grade and all its descendants, {cold['peak_procs']} "
              f"processes at most): RSS {_gib(cold['peak_rss'])} (shared pages counted in each "
              f"process), PSS {_gib(cold['peak_pss'])} (sampled every 0.5 s); sampler "
              f"{cold['samples']} samples, {cold['sampler_cpu_s']:.1f} s CPU")
        print(f"single exercise (grid_local_mask, correct): grade {_ms(lat['grade_s'])} vs "
              f"pytest one-test file importing numpy {_ms(lat['pytest_s'])} "
              f"(median of {args.latency_runs}): {latency_ratio:.2f}x")
        w = context["worker_start_and_import"]
        worker = ", ".join(f"{s} {_ms(w[s])}" + (f" ({_ms(w[s + '_first'])} the first time)"
                                                 if s + "_first" in w else "")
                           for s in ("grid_local_mask", "patch_vit") if s in w) or \
            f"n/a ({w.get('error', '')})"
        if "collect_first_s" in w:
            worker += (f"; pytest collecting all {len(catalog.load())} suites (what collecting "
                       f"once per pool process saves per submission): "
                       f"{_ms(w['collect_first_s'])} the first time, {_ms(w['collect_again_s'])}"
                       " each time after")
        print(f"context: python start {_ms(context['python_start_s'])}, import numpy "
              f"{_ms(context['import_numpy_s'])}, import torch {_ms(context['import_torch_s'])};"
              f" a worker started + the learner's module imported: {worker}")
        print("check: per kind of learner file, exercises passed in full by grade bulk: " +
              "; ".join(f"{kd} {v['all_passed']}/{v['files']}" for kd, v in by_kind.items()))
        print(f"check: passed tests of the submitted exercises, grade bulk = naive for "
              f"{agree} of {k} submissions")

        targets = [
            ("bulk cold >= 50x faster per submission than naive", f"{ratio:.1f}x", ratio >= 50),
            ("grader overhead <= 25 ms per submission", _ms(overhead), overhead <= 0.025),
            ("bulk warm < 2 s for 200 submissions",
             f"{warm['wall_s']:.2f} s for {n}" +
             (f" (not judged under 200; x200/{n} = {warm_200:.2f} s, an upper bound)"
              if n < 200 else ""), None if n < 200 else warm["wall_s"] < 2.0),
            ("single exercise <= 2x pytest one-test", f"{latency_ratio:.2f}x",
             latency_ratio <= 2.0),
            # resident memory of the whole run: PSS counts a page shared by k processes
            # (fork server, forked workers, pool processes) 1/k in each, so once in all; the
            # RSS sum counts it k times and is shown beside it
            (f"peak resident (PSS) < 2 GiB, {args.workers} workers",
             f"{_gib(cold['peak_pss'])} (RSS summed: {_gib(cold['peak_rss'])})",
             cold["peak_pss"] < 2 * 2**30 if cold["peak_pss"] else None),
        ]
        print("\n## Targets (docs/performance.md)")
        for name, value, ok in targets:
            print(f"{'----' if ok is None else 'PASS' if ok else 'MISS'}  {name:<52}{value}")
        if args.workers != 2:
            print("(the memory target is stated for 2 workers)")

        if args.json:
            args.json.write_text(json.dumps({
                "config": {"n": n, "workers": args.workers, "seed": args.seed, "cores": cores,
                           "naive_submissions": k, "naive_extrapolated": extrapolated,
                           "excluded": sorted(exclude)},
                "mix": mix,
                "bulk_cold": cold, "bulk_warm": warm,
                "naive": {"wall_s": naive_wall, "per_submission_s": per_naive,
                          "rows": naive_rows},
                "per_submission_s": {"bulk_cold": per_cold, "bulk_warm": per_warm,
                                     "naive": per_naive},
                "submissions_per_s": {"bulk_cold": 1 / per_cold, "bulk_warm": 1 / per_warm,
                                      "naive": 1 / per_naive},
                "ratio_naive_over_bulk_cold": ratio, "ratio_ceiling": ceiling,
                "learner_s_per_submission": learner_per_sub,
                "overhead_s_per_submission": overhead,
                "bulk_inside": {k2: v for k2, v in breakdown.items() if k2 != "passed"},
                "latency": lat, "context": context,
                "outcomes_by_kind": by_kind, "bulk_equals_naive": agree,
                "targets": [{"target": t, "value": v, "pass": ok} for t, v, ok in targets],
            }, indent=2, default=str))
            print(f"\nFigures written to {args.json}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
