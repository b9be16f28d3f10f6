"""Regenerate docs/screenshots/<exercise>.png: the report of a failing-but-instructive
submission per exercise (a reference solution with one typical mistake), as a learner sees it
in a browser. Needs Chromium (Debian: apt-get install chromium).

    .venv/bin/python docs/screenshots/make_screenshots.py [EXERCISE...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import chromium  # noqa: E402  (tests/chromium.py)

from grader import catalog  # noqa: E402
from grader.authoring import golden, variants  # noqa: E402
from grader.engine.runner import grade  # noqa: E402
from grader.report.submission_html import write_report  # noqa: E402

OUT = Path(__file__).resolve().parent

# exercise -> the picture's height; the file shown is the typical mistake declared in
# solutions/<slug>.variants.toml (the variant with a `what`: authoring/golden.shown)
HEIGHTS = {"grid_local_mask": 1500, "attention_rollout": 1500, "mean_attention_distance": 1400,
           "shift_equivariance": 1700, "conv_via_attention": 1500, "inductive_bias_toy": 1500,
           "shape_bias": 1300, "compute_frontier": 1500, "patch_vit": 1400,
           "positional_attention": 1500}


def make(slug: str, work: Path) -> Path:
    variant = golden.shown(slug)  # the typical mistake, whose output is also kept as golden
    if variant is None:
        raise SystemExit(f"{slug}: no declared variant to show")
    what = variant.what or variant.name
    try:
        source = variant.source()
    except variants.EditError as e:
        raise SystemExit(str(e)) from None
    sub = work / slug
    sub.mkdir(parents=True)
    (sub / f"{slug}.py").write_text(source)
    result = grade({slug: sub / f"{slug}.py"}, submission=f"example: {what}")
    page = write_report(result, work / f"{slug}-report")
    png = chromium.screenshot(page, OUT / f"{slug}.png", 1100, HEIGHTS.get(slug, 1500))
    print(f"{png.relative_to(ROOT)}: {result.score:g}/{result.max_score:g} ({what})")
    return png


def main(argv: list[str]) -> int:
    if chromium.binary() is None:
        print("chromium is not installed", file=sys.stderr)
        return 2
    slugs = argv or list(catalog.load())
    with tempfile.TemporaryDirectory() as tmp:
        for slug in slugs:
            make(slug, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
