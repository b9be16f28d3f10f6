"""The similarity check: a planted copied pair (renamed variables, reordered functions) among
independent solutions of grid_local_mask ranks first; the stub's text is never a match."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from conftest import edit_source

from grader import catalog, similarity
from grader.report import similarity as report

SLUG = "grid_local_mask"
STUB = catalog.get(SLUG).stub.read_text()
HEAD, _, _ = STUB.partition("    raise NotImplementedError")  # the stub's header and docstring

INDEPENDENT = {  # eight genuinely different bodies, each under the stub's docstring
    "s_loops": """
    if radius < 0 or H_p < 1 or W_p < 1 or n_prefix < 0:
        raise ValueError("bad arguments")
    T = n_prefix + H_p * W_p
    mask = np.ones((T, T), dtype=bool)
    for i in range(H_p * W_p):
        for j in range(H_p * W_p):
            ri, ci = divmod(i, W_p)
            rj, cj = divmod(j, W_p)
            mask[n_prefix + i, n_prefix + j] = max(abs(ri - rj), abs(ci - cj)) <= radius
    return mask
""",
    "s_meshgrid": """
    if H_p < 1 or W_p < 1:
        raise ValueError(f"grid {H_p}x{W_p}")
    if radius < 0 or n_prefix < 0:
        raise ValueError("negative radius or prefix")
    rr, cc = np.meshgrid(np.arange(H_p), np.arange(W_p), indexing="ij")
    rr, cc = rr.ravel(), cc.ravel()
    cheb = np.maximum(np.abs(rr[:, None] - rr[None]), np.abs(cc[:, None] - cc[None]))
    out = np.ones((n_prefix + rr.size,) * 2, dtype=bool)
    out[n_prefix:, n_prefix:] = cheb <= radius
    return out
""",
    "s_outer": """
    for name, value, low in (("H_p", H_p, 1), ("W_p", W_p, 1), ("radius", radius, 0),
                             ("n_prefix", n_prefix, 0)):
        if value < low:
            raise ValueError(f"{name} must be at least {low}")
    band_r = np.abs(np.subtract.outer(np.arange(H_p), np.arange(H_p))) <= radius
    band_c = np.abs(np.subtract.outer(np.arange(W_p), np.arange(W_p))) <= radius
    local = np.kron(band_r, band_c)
    size = n_prefix + local.shape[0]
    full = np.full((size, size), True)
    full[n_prefix:, n_prefix:] = local
    return full
""",
    "s_window_slices": """
    if min(H_p, W_p) < 1 or radius < 0 or n_prefix < 0:
        raise ValueError("invalid grid_local_mask arguments")
    P = H_p * W_p
    m = np.ones((n_prefix + P, n_prefix + P), dtype=bool)
    for r in range(H_p):
        for c in range(W_p):
            window = np.zeros((H_p, W_p), dtype=bool)
            window[max(0, r - radius):r + radius + 1, max(0, c - radius):c + radius + 1] = True
            m[n_prefix + r * W_p + c, n_prefix:] = window.reshape(-1)
    return m
""",
    "s_tri": """
    if radius < 0:
        raise ValueError("radius < 0")
    if H_p < 1 or W_p < 1 or n_prefix < 0:
        raise ValueError("bad grid")

    def band(n):
        return np.tri(n, n, radius, dtype=bool) & ~np.tri(n, n, -radius - 1, dtype=bool)

    patch = np.kron(band(H_p), band(W_p))
    return np.pad(patch, ((n_prefix, 0), (n_prefix, 0)), constant_values=True)
""",
    "s_pure_python": """
    if not (H_p >= 1 and W_p >= 1 and radius >= 0 and n_prefix >= 0):
        raise ValueError("arguments out of range")
    cells = [(p // W_p, p % W_p) for p in range(H_p * W_p)]
    rows = []
    for q in range(n_prefix):
        rows.append([True] * (n_prefix + len(cells)))
    for (a, b) in cells:
        row = [True] * n_prefix
        row += [abs(a - x) <= radius and abs(b - y) <= radius for (x, y) in cells]
        rows.append(row)
    return np.array(rows, dtype=bool).reshape(n_prefix + len(cells), -1)
""",
    "s_indices": """
    checks = [H_p >= 1, W_p >= 1, radius >= 0, n_prefix >= 0]
    if not all(checks):
        raise ValueError("grid_local_mask: invalid input")
    coords = np.indices((H_p, W_p)).reshape(2, -1)
    gap = np.abs(coords[:, :, None] - coords[:, None, :]).max(axis=0)
    result = np.empty((n_prefix + coords.shape[1],) * 2, dtype=bool)
    result[:n_prefix, :] = True
    result[:, :n_prefix] = True
    result[n_prefix:, n_prefix:] = gap <= radius
    return result
""",
    "s_dilate": """
    if radius < 0 or n_prefix < 0 or H_p <= 0 or W_p <= 0:
        raise ValueError("check the arguments")
    eye = np.eye(H_p * W_p, dtype=bool).reshape(H_p * W_p, H_p, W_p)
    grown = eye.copy()
    for dr in range(-radius, radius + 1):
        for dc in range(-radius, radius + 1):
            shifted = np.zeros_like(eye)
            src_r = slice(max(0, -dr), H_p - max(0, dr))
            dst_r = slice(max(0, dr), H_p - max(0, -dr))
            src_c = slice(max(0, -dc), W_p - max(0, dc))
            dst_c = slice(max(0, dc), W_p - max(0, -dc))
            shifted[:, dst_r, dst_c] = eye[:, src_r, src_c]
            grown |= shifted
    total = n_prefix + H_p * W_p
    mask = np.ones((total, total), bool)
    mask[n_prefix:, n_prefix:] = grown.reshape(H_p * W_p, -1)
    return mask
""",
}

ORIGINAL = HEAD.rstrip() + """
    _validate(H_p, W_p, radius, n_prefix)
    rows, cols = _patch_coordinates(H_p, W_p)
    distance = _chebyshev(rows, cols)
    tokens = n_prefix + rows.shape[0]
    allowed = np.ones((tokens, tokens), dtype=bool)
    allowed[n_prefix:, n_prefix:] = distance <= radius
    return allowed


def _validate(H_p, W_p, radius, n_prefix):
    # everything the statement says must raise
    if H_p < 1 or W_p < 1:
        raise ValueError(f"the grid needs a row and a column, got {H_p}x{W_p}")
    if radius < 0:
        raise ValueError(f"radius must be non-negative, got {radius}")
    if n_prefix < 0:
        raise ValueError(f"n_prefix must be non-negative, got {n_prefix}")


def _patch_coordinates(H_p, W_p):
    flat = np.arange(H_p * W_p)
    return flat // W_p, flat % W_p


def _chebyshev(rows, cols):
    d_rows = np.abs(rows[:, np.newaxis] - rows[np.newaxis, :])
    d_cols = np.abs(cols[:, np.newaxis] - cols[np.newaxis, :])
    return np.maximum(d_rows, d_cols)
"""

COPY = '''"""My solution to grid_local_mask."""

import numpy as np


def check_inputs(h, w, r, prefix):
    if h < 1 or w < 1:
        raise ValueError(f"grid too small: {h}x{w}")   # rows and columns
    if r < 0:
        raise ValueError(f"negative radius {r}")
    if prefix < 0:
        raise ValueError(f"negative prefix {prefix}")


def max_gap(ys, xs):
    dy = np.abs(ys[:, np.newaxis] - ys[np.newaxis, :])
    dx = np.abs(xs[:, np.newaxis] - xs[np.newaxis, :])
    return np.maximum(dy, dx)


def coords(h, w):
    idx = np.arange(h * w)
    return idx // w, idx % w


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    check_inputs(H_p, W_p, radius, n_prefix)

    ys, xs = coords(H_p, W_p)
    gap = max_gap(ys, xs)
    n_tok = n_prefix + ys.shape[0]
    m = np.ones((n_tok, n_tok), dtype=bool)
    m[n_prefix:, n_prefix:] = gap <= radius
    return m
'''


def make_sources() -> dict[str, str]:
    """Eight independent solutions, the planted pair, two untouched stubs."""
    sources = {sid: HEAD.rstrip() + "\n" + body.lstrip("\n") for sid, body in
               INDEPENDENT.items()}
    sources["p_original"] = ORIGINAL
    sources["p_copy"] = COPY
    sources["u_stub_1"] = STUB
    sources["u_stub_2"] = STUB
    return sources


def test_renamed_variables_tokenize_alike():
    a = similarity.tokens("def f(x, y):\n    # sum\n    return x + y\n")
    b = similarity.tokens("def g(p, q):\n    '''Doc.'''\n    return p + q  # plus\n")
    assert [t.text for t in a] == [t.text for t in b]


def test_planted_copy_ranks_first_and_the_stub_is_no_match():
    pairs = similarity.find_pairs(make_sources(), STUB)
    assert pairs, "no pair found"
    top = pairs[0]
    assert {top.a, top.b} == {"p_original", "p_copy"}
    assert top.score > 0.8
    assert all(p.score < 0.5 * top.score for p in pairs[1:]), [
        (p.a, p.b, round(p.score, 2)) for p in pairs[:4]]
    assert not any(p.a.startswith("u_") or p.b.startswith("u_") for p in pairs)
    # the matching regions cover the copied helpers on both sides, in either order
    a_src, b_src = make_sources()[top.a], make_sources()[top.b]
    a_text = "".join(a_src[x:y] for r in top.regions for x, y in r.a_spans)
    b_text = "".join(b_src[x:y] for r in top.regions for x, y in r.b_spans)
    assert "np.maximum" in a_text and "np.maximum" in b_text
    assert len(top.regions) >= 3
    # what the tokens skip is not highlighted: the docstring, the comments
    assert "Boolean attention mask" not in a_text + b_text
    assert "# rows and columns" not in a_text + b_text


def test_unparsable_file_is_compared_not_fatal():
    sources = make_sources()
    sources["x_broken"] = "def grid_local_mask(:\n    return (((\n"
    pairs = similarity.find_pairs(sources, STUB)
    assert {pairs[0].a, pairs[0].b} == {"p_original", "p_copy"}


def _submissions(root: Path, sources: dict[str, str]) -> list[SimpleNamespace]:
    subs = []
    for sid, src in sources.items():
        (root / sid).mkdir(parents=True)
        path = root / sid / f"{SLUG}.py"
        path.write_text(src)
        subs.append(SimpleNamespace(id=sid, files={SLUG: path}))
    return subs


def test_page_and_csv(tmp_path):
    sources = make_sources()
    sources["z_evil"] = edit_source(sources["p_copy"], (
        "grid too small", "</pre><script>alert(1)</script>\x1b[2J"))
    subs = _submissions(tmp_path / "class", sources)
    page = report.write_similarity(tmp_path / "out", subs, [SLUG], title="Week 3")
    html = page.read_text()
    assert "<script" not in html and "\x1b" not in html
    assert "&lt;/pre&gt;&lt;script&gt;" in html and "\\x1b[2J" in html
    assert 'href="index.html"' in html and "<mark" in html
    rows = list(csv.reader((tmp_path / "out" / report.CSV).open(newline="")))
    assert rows[0][:4] == ["exercise", "a", "b", "score"]
    ranked = {frozenset(r[1:3]) for r in rows[1:4]}  # the trio of copies leads
    assert ranked == {frozenset(x) for x in (("p_copy", "p_original"), ("p_copy", "z_evil"),
                                            ("p_original", "z_evil"))}
    assert not any(r[1].startswith("u_") or r[2].startswith("u_") for r in rows[1:])


def test_grade_bulk_similarity(tmp_path):
    """Through the CLI: the page ranks the planted pair first."""
    klass = tmp_path / "class"
    _submissions(klass, make_sources())
    grade = str(Path(sys.executable).with_name("grade"))
    work = tempfile.mkdtemp(prefix="similarity-tests-")
    proc = subprocess.run([grade, "bulk", str(klass), "--out", str(tmp_path / "out"),
                           "--exercises", SLUG, "--workers", "2", "-q", "--similarity"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": work})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "similarity.html" in proc.stdout + proc.stderr
    rows = list(csv.reader((tmp_path / "out" / report.CSV).open(newline="")))
    assert set(rows[1][1:3]) == {"p_copy", "p_original"}
    html = (tmp_path / "out" / report.PAGE).read_text()
    first = html.index('id="grid_local_mask-1"')
    assert "p_copy and p_original" in html[first:first + 300]
