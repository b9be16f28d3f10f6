"""The similarity check on a synthetic class of 200 (``grade bulk --similarity``'s cost).

Usage: ``.venv/bin/python bench/bench_similarity.py [--n 200] [--repeat 3]``

The class: the eight independent grid_local_mask solutions of ``tests/test_similarity.py``,
each the base of n/8 variants (random statements inserted between the lines, so that the
variants of one base share long runs, as a class full of near-copies would: the hard case),
plus the planted copied pair. Prints the seconds of ``find_pairs`` (tokens, fingerprints,
tiling) and of ``write_similarity`` (also reading the files and writing the page and CSV),
the number of pairs found, and where the planted pair ranks.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_similarity import SLUG, STUB, make_sources  # noqa: E402

from grader.similarity import compare  # noqa: E402
from grader.similarity.page import write_similarity  # noqa: E402


def variant(source: str, rng: random.Random) -> str:
    """``source`` with a few random statements inserted after indented lines."""
    lines = source.splitlines()
    out = []
    for line in lines:
        out.append(line)
        body = line.startswith("    ") and not line.rstrip().endswith((":", ",", "(")) \
            and '"""' not in line and "raise" not in line and "return" not in line
        if body and rng.random() < 0.25:
            indent = line[:len(line) - len(line.lstrip())]
            name = rng.choice(["tmp", "check", "debug", "seen", "k", "acc"])
            out.append(f"{indent}{name}_{rng.randrange(100)} = {rng.randrange(1000)} "
                       f"{rng.choice('+-*')} len({rng.choice(['str(radius)', '[H_p]'])})")
    return "\n".join(out) + "\n"


def make_class(n: int, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)
    base = make_sources()
    planted = {k: base.pop(k) for k in ("p_original", "p_copy")}
    bases = [v for k, v in base.items() if k.startswith("s_")]
    sources = {f"v{i:03d}": variant(bases[i % len(bases)], rng) for i in range(n - 2)}
    sources.update(planted)
    return sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sources = make_class(args.n)
    times, pairs = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        pairs = compare.find_pairs(sources, STUB)
        times.append(time.perf_counter() - t0)
    rank = next(n for n, p in enumerate(pairs, 1) if {p.a, p.b} == {"p_original", "p_copy"})
    print(f"{args.n} submissions, {args.n * (args.n - 1) // 2} pairs: find_pairs "
          f"{statistics.median(times):.2f} s (median of {args.repeat}), {len(pairs)} pairs "
          f"with matching code, planted pair ranked {rank}")
    with tempfile.TemporaryDirectory() as tmp:
        subs = []
        for sid, src in sources.items():
            path = Path(tmp) / "class" / sid / f"{SLUG}.py"
            path.parent.mkdir(parents=True)
            path.write_text(src)
            subs.append(SimpleNamespace(id=sid, files={SLUG: path}))
        t0 = time.perf_counter()
        page = write_similarity(Path(tmp) / "out", subs, [SLUG])
        elapsed = time.perf_counter() - t0
        print(f"write_similarity (read, compare, page and CSV): {elapsed:.2f} s, page "
              f"{page.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
