"""Benchmark, by hand: one class graded locally and on Dask (`--scheduler local:1`, `local:2`).

    .venv/bin/python bench/bench_cluster.py                 # N = 40 and 160, grid_local_mask
    .venv/bin/python bench/bench_cluster.py --sizes 20,80 --json /tmp/cluster.json

In one run on one machine it writes a class of reference-correct and wrong grid_local_mask
files (every fourth one wrong), then times `grade bulk --force` from start to exit at two class
sizes for each way of grading: local with 1 and 2 workers, and Dask with 1 and 2 worker
processes. From the two sizes it prints, per way, the marginal time per submission (the slope:
start-up cancels out) and the fixed start-up (the intercept); then the Dask overhead per task
(the slope on `local:1` minus the slope locally with 1 worker) and the throughput gained from
1 to 2 Dask workers. Every way must give the same grades.csv; the load average is printed
before and after (figures are wall-clock times on a possibly busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADE = str(Path(sys.executable).parent / "grade")
SLUG = "grid_local_mask"
WAYS = {"local, 1 worker": ["--workers", "1"], "local, 2 workers": ["--workers", "2"],
        "dask local:1": ["--scheduler", "local:1"], "dask local:2": ["--scheduler", "local:2"]}


def make_class(folder: Path, n: int) -> None:
    good = (ROOT / "solutions" / f"{SLUG}.py").read_text()
    wrong = good.replace("return", "return ~", 1)
    for i in range(n):
        (folder / f"s{i:03d}").mkdir(parents=True)
        (folder / f"s{i:03d}" / f"{SLUG}.py").write_text(wrong if i % 4 == 0 else good)


def timed(class_dir: Path, out: Path, extra: list[str]) -> float:
    start = time.perf_counter()
    run = subprocess.run([GRADE, "bulk", str(class_dir), "--out", str(out), "--exercises", SLUG,
                          "--force", "-q", *extra], capture_output=True, text=True)
    took = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"grade bulk {' '.join(extra)} failed ({run.returncode}):\n{run.stderr}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="40,160", help="two class sizes, comma-separated")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    small, large = (int(s) for s in args.sizes.split(","))
    load_before = os.getloadavg()
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        root = Path(tmp)
        for n in (small, large):
            make_class(root / f"class{n}", n)
        gradebooks: dict[str, bytes] = {}
        for way, extra in WAYS.items():
            t = {}
            for n in (small, large):
                out = root / f"out-{len(figures)}-{n}"
                t[n] = timed(root / f"class{n}", out, extra)
                gradebooks[f"{way} {n}"] = (out / "grades.csv").read_bytes()
                shutil.rmtree(out)
            slope = (t[large] - t[small]) / (large - small)
            figures[way] = {"small_s": t[small], "large_s": t[large], "slope_ms": 1e3 * slope,
                            "startup_s": t[small] - slope * small}
        for n in (small, large):
            assert len({v for k, v in gradebooks.items() if k.endswith(f" {n}")}) == 1, \
                f"the ways gave different grades.csv at N = {n}"
    load_after = os.getloadavg()
    print(f"class: {SLUG}, N = {small} and {large}; load average before "
          f"{load_before[0]:.2f}, after {load_after[0]:.2f}; {os.cpu_count()} cores")
    print(f"{'way':18} {'N=' + str(small):>9} {'N=' + str(large):>9} "
          f"{'per submission':>15} {'start-up':>9}")
    for way, f in figures.items():
        print(f"{way:18} {f['small_s']:8.2f}s {f['large_s']:8.2f}s {f['slope_ms']:12.1f} ms "
              f"{f['startup_s']:8.2f}s")
    overhead = figures["dask local:1"]["slope_ms"] - figures["local, 1 worker"]["slope_ms"]
    gain = figures["dask local:1"]["slope_ms"] / figures["dask local:2"]["slope_ms"]
    print(f"Dask overhead per task: {overhead:.1f} ms (local:1 slope minus local 1-worker "
          f"slope)")
    print(f"throughput from 1 to 2 Dask workers: {gain:.2f}x; same grades.csv everywhere")
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "dask_overhead_ms": overhead,
                                         "throughput_gain": gain, "load": [load_before[0],
                                                                           load_after[0]]},
                                        indent=2))


if __name__ == "__main__":
    main()
