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
from grader.engine.runner import grade  # noqa: E402
from grader.report.html import write_report  # noqa: E402

OUT = Path(__file__).resolve().parent

# exercise -> (the mistake, [(text of the reference, replacement)]), and the picture's height
VARIANTS: dict[str, tuple[str, list[tuple[str, str]], int]] = {
    "grid_local_mask": ("a diamond window instead of a square one", [(
        "near = np.kron(near_rows, near_cols)",
        "idx = np.arange(H_p * W_p)\n    rows, cols = idx // W_p, idx % W_p\n"
        "    near = (np.abs(rows[:, None] - rows[None, :]) +\n"
        "            np.abs(cols[:, None] - cols[None, :])) <= radius")], 1500),
    "attention_rollout": ("the first layer on the left of the product", [(
        "R = A_hat @ R", "R = R @ A_hat")], 1500),
    "mean_attention_distance": ("distances in patches, not pixels", [(
        "dist = P * np.sqrt(", "dist = np.sqrt(")], 1400),
    "shift_equivariance": ("the permutation transposed, the error not relative", [
        ("    perm[new, old] = 1", "    perm[old, new] = 1"),
        ("    return err / scale", "    return err")], 1700),
    "conv_via_attention": ("a true convolution: the kernel flipped", [(
        "target = (np.arange(n)[None, :] + np.arange(k)[:, None] - a) % n",
        "target = (np.arange(n)[None, :] - np.arange(k)[:, None] + a) % n")], 1500),
    "inductive_bias_toy": ("zero padding instead of circular neighbours", [(
        "    slope = np.roll(X, 1, axis=1) - np.roll(X, -1, axis=1)     # X[:, t-1] - X[:, t+1]",
        "    P = np.pad(X, ((0, 0), (1, 1)))\n    slope = P[:, :-2] - P[:, 2:]")], 1500),
    "shape_bias": ("dividing by every cue-conflict trial", [(
        "    decided = n_shape + n_texture ", "    decided = int(np.count_nonzero(conflict)) ")],
        1300),
    "compute_frontier": ("the frontier listed in input order", [(
        "    return order[a_sorted > best_cheaper].tolist()",
        "    return sorted(order[a_sorted > best_cheaper].tolist())")], 1500),
    "patch_vit": ("a class token returned with the patch tokens", [(
        "        return self.encoder(tokens)",
        "        cls = tokens.mean(dim=1, keepdim=True)\n"
        "        return self.encoder(torch.cat([cls, tokens], dim=1))")], 1400),
    "positional_attention": ("attention normalised over columns", [(
        "    return E / E.sum(axis=1, keepdims=True)",
        "    return E / E.sum(axis=0, keepdims=True)")], 1500),
}


def make(slug: str, work: Path) -> Path:
    what, edits, height = VARIANTS[slug]
    source = catalog.get(slug).solution.read_text()
    for old, new in edits:
        if old not in source:
            raise SystemExit(f"{slug}: the reference no longer contains {old!r}")
        source = source.replace(old, new, 1)
    sub = work / slug
    sub.mkdir(parents=True)
    (sub / f"{slug}.py").write_text(source)
    result = grade({slug: sub / f"{slug}.py"}, submission=f"example: {what}")
    page = write_report(result, work / f"{slug}-report")
    png = chromium.screenshot(page, OUT / f"{slug}.png", 1100, height)
    print(f"{png.relative_to(ROOT)}: {result.score:g}/{result.max_score:g} ({what})")
    return png


def main(argv: list[str]) -> int:
    if chromium.binary() is None:
        print("chromium is not installed", file=sys.stderr)
        return 2
    slugs = argv or list(VARIANTS)
    with tempfile.TemporaryDirectory() as tmp:
        for slug in slugs:
            make(slug, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
