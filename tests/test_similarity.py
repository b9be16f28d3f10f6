"""The similarity check: a planted copied pair (renamed variables, reordered functions) among
independent solutions of grid_local_mask ranks first; the stub's text is never a match.

Issue 35 (6), similarity as documented, as tables: a fragment held by at least
``common_limit(n)`` submissions is boilerplate; files that differ score below 100%; every line
that differs is marked on the page; and the calibration of ``REPORT_MIN``: independent
implementations of grid_local_mask and attention_rollout (written in different styles, some
converging on the same steps) never pair in a small class, disguised copies (renamed
variables, reordered statements or functions) do."""

from __future__ import annotations

import csv
import itertools
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import edit_source

from grader import catalog
from grader.similarity import compare
from grader.similarity.page import CSV, PAGE, write_similarity

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


CONVERGENT = {  # two more independent bodies, on the steps most learners take
    "c_divmod": """
    if radius < 0 or H_p < 1 or W_p < 1 or n_prefix < 0:
        raise ValueError("invalid arguments")
    T = n_prefix + H_p * W_p
    mask = np.ones((T, T), dtype=bool)
    rows = np.arange(H_p * W_p) // W_p
    cols = np.arange(H_p * W_p) % W_p
    dr = np.abs(rows[:, None] - rows[None, :])
    dc = np.abs(cols[:, None] - cols[None, :])
    mask[n_prefix:, n_prefix:] = (dr <= radius) & (dc <= radius)
    return mask
""",
    "c_loops": """
    if H_p < 1 or W_p < 1:
        raise ValueError("H_p and W_p must be positive")
    if radius < 0:
        raise ValueError("radius must be non-negative")
    if n_prefix < 0:
        raise ValueError("n_prefix must be non-negative")
    T = n_prefix + H_p * W_p
    mask = np.ones((T, T), dtype=bool)
    for i in range(H_p * W_p):
        r1, c1 = i // W_p, i % W_p
        for j in range(H_p * W_p):
            r2, c2 = j // W_p, j % W_p
            if max(abs(r1 - r2), abs(c1 - c2)) > radius:
                mask[n_prefix + i, n_prefix + j] = False
    return mask
""",
}

REFERENCE = (catalog.SOLUTIONS_DIR / f"{SLUG}.py").read_text()

REFERENCE_DISGUISED = '''"""grid_local_mask, my version."""

import numpy as np


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    if radius < 0:
        raise ValueError(f"radius cannot be negative ({radius})")
    if H_p < 1 or W_p < 1:
        raise ValueError(f"empty grid: {H_p}x{W_p}")
    if n_prefix < 0:
        raise ValueError(f"n_prefix cannot be negative ({n_prefix})")
    ys, xs = np.arange(H_p), np.arange(W_p)
    # neighbours along each axis
    ok_x = np.abs(xs[:, None] - xs[None, :]) <= radius
    ok_y = np.abs(ys[:, None] - ys[None, :]) <= radius
    n_tokens = n_prefix + H_p * W_p
    window = np.kron(ok_y, ok_x)
    attend = np.ones((n_tokens, n_tokens), dtype=bool)
    attend[n_prefix:, n_prefix:] = window
    return attend
'''

R_SLUG = "attention_rollout"
R_STUB = catalog.get(R_SLUG).stub.read_text()
R_HEAD, _, _ = R_STUB.partition("    raise NotImplementedError")

ROLLOUT = {  # five independent bodies of attention_rollout, each under the stub's docstring
    "r_loop": """
    layers = list(A_layers)
    if len(layers) == 0:
        raise ValueError("no layers")
    if n_prefix < 1:
        raise ValueError("need a class token")
    T = n_prefix + H_p * W_p
    R = np.eye(T)
    for A in layers:
        A = np.asarray(A, dtype=float)
        if A.ndim == 2:
            A = A[np.newaxis]
        if A.shape[-1] != T or A.shape[-2] != T:
            raise ValueError("wrong token count")
        avg = A.mean(axis=0)
        mixed = 0.5 * avg + 0.5 * np.eye(T)
        mixed = mixed / mixed.sum(axis=1, keepdims=True)
        R = mixed @ R
    return R[0, n_prefix:].reshape(H_p, W_p)
""",
    "r_reduce": """
    from functools import reduce
    if n_prefix < 1 or not len(A_layers):
        raise ValueError("rollout: bad n_prefix or empty layers")
    size = n_prefix + H_p * W_p

    def normalised(layer):
        heads = np.atleast_3d(np.asarray(layer, float).T).T
        if heads.shape[1:] != (size, size):
            raise ValueError(f"layer of shape {heads.shape}, expected T={size}")
        step = (heads.mean(0) + np.identity(size)) / 2
        return step / step.sum(-1)[:, None]

    steps = [normalised(layer) for layer in A_layers]
    rollout = reduce(lambda acc, m: m @ acc, steps)
    return np.array(rollout[0][n_prefix:]).reshape((H_p, W_p))
""",
    "r_einsum": """
    count = n_prefix + H_p * W_p
    if n_prefix <= 0:
        raise ValueError(f"n_prefix={n_prefix}")
    stack = [np.array(a, dtype=np.float64, ndmin=3) for a in A_layers]
    if not stack:
        raise ValueError("A_layers must not be empty")
    result = None
    for depth, heads in enumerate(stack):
        if heads.shape[-2:] != (count, count):
            raise ValueError(f"layer {depth}: {heads.shape}")
        joint = np.einsum("hij->ij", heads) / heads.shape[0]
        joint = joint * 0.5
        joint[np.diag_indices(count)] += 0.5
        joint /= joint.sum(axis=-1)[..., None]
        result = joint if result is None else np.einsum("ij,jk->ik", joint, result)
    return result[0, n_prefix:].reshape(H_p, W_p).astype(float)
""",
    "r_vector": """
    if n_prefix < 1:
        raise ValueError("n_prefix < 1")
    maps = list(A_layers)
    if not maps:
        raise ValueError("empty")
    n = n_prefix + H_p * W_p
    # only the class token's row is needed: carry it backwards through the layers
    row = np.zeros(n)
    row[0] = 1.0
    matrices = []
    for m in maps:
        m = np.asarray(m, dtype=float)
        m = m.reshape((-1,) + m.shape[-2:])
        if m.shape[1] != n or m.shape[2] != n:
            raise ValueError("T mismatch")
        hat = 0.5 * m.mean(axis=0) + 0.5 * np.eye(n)
        matrices.append(hat / hat.sum(axis=1, keepdims=True))
    for hat in reversed(matrices):
        row = row @ hat
    return row[n_prefix:].reshape(H_p, W_p)
""",
    "r_python": """
    if n_prefix < 1:
        raise ValueError("a class token is required")
    if len(A_layers) < 1:
        raise ValueError("at least one layer is required")
    tokens = n_prefix + H_p * W_p
    total = np.identity(tokens)
    for k in range(len(A_layers)):
        layer = np.asarray(A_layers[k], dtype=float)
        heads = [layer] if layer.ndim == 2 else [layer[h] for h in range(layer.shape[0])]
        if any(h.shape != (tokens, tokens) for h in heads):
            raise ValueError("layer %d does not have %d tokens" % (k, tokens))
        mean = sum(heads) / len(heads)
        aug = (mean + np.identity(tokens)) * 0.5
        for i in range(tokens):
            aug[i] = aug[i] / aug[i].sum()
        total = np.dot(aug, total)
    cls = total[0]
    return np.asarray(cls[n_prefix:], dtype=float).reshape(H_p, W_p)
""",
}

ROLLOUT_REFERENCE_DISGUISED = '''"""attention rollout"""

import numpy as np


def attention_rollout(A_layers, n_prefix, H_p, W_p):
    maps = list(A_layers)
    if n_prefix < 1:
        raise ValueError(f"n_prefix must be >= 1 (class token), got {n_prefix}")
    if not maps:
        raise ValueError("no attention maps were given")
    n_tok = n_prefix + H_p * W_p
    roll = np.eye(n_tok)
    for k, att in enumerate(maps):
        att = np.asarray(att, dtype=np.float64)
        if att.ndim == 2:
            att = att[None]
        if att.ndim != 3 or att.shape[1:] != (n_tok, n_tok):
            raise ValueError(f"map {k}: shape {att.shape}, want (heads, {n_tok}, {n_tok})")
        step = 0.5 * att.mean(axis=0) + 0.5 * np.eye(n_tok)
        step /= step.sum(axis=-1, keepdims=True)
        roll = step @ roll
    return roll[0, n_prefix:].reshape(H_p, W_p)
'''


def independent(exercise: str) -> tuple[dict[str, str], str]:
    """Every independent implementation of ``exercise`` (id -> source), and its stub."""
    if exercise == SLUG:
        bodies = {**INDEPENDENT, **CONVERGENT}
        sources = {sid: HEAD.rstrip() + "\n" + body.lstrip("\n") for sid, body in bodies.items()}
        return {**sources, "reference": REFERENCE, "original": ORIGINAL}, STUB
    sources = {sid: R_HEAD.rstrip() + "\n" + body.lstrip("\n") for sid, body in ROLLOUT.items()}
    return {**sources, "reference": (catalog.SOLUTIONS_DIR / f"{R_SLUG}.py").read_text()}, R_STUB


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
    a = compare.tokens("def f(x, y):\n    # sum\n    return x + y\n")
    b = compare.tokens("def g(p, q):\n    '''Doc.'''\n    return p + q  # plus\n")
    assert [t.text for t in a] == [t.text for t in b]


def test_planted_copy_ranks_first_and_the_stub_is_no_match():
    pairs = compare.find_pairs(make_sources(), STUB)
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
    pairs = compare.find_pairs(sources, STUB)
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
    page = write_similarity(tmp_path / "out", subs, [SLUG], title="Week 3")
    html = page.read_text()
    assert "<script" not in html and "\x1b" not in html
    assert "&lt;/pre&gt;&lt;script&gt;" in html and "\\x1b[2J" in html
    assert 'href="index.html"' in html and "<mark" in html
    rows = list(csv.reader((tmp_path / "out" / CSV).open(newline="")))
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
    rows = list(csv.reader((tmp_path / "out" / CSV).open(newline="")))
    assert set(rows[1][1:3]) == {"p_copy", "p_original"}
    html = (tmp_path / "out" / PAGE).read_text()
    first = html.index('id="grid_local_mask-1"')
    assert "p_copy and p_original" in html[first:first + 300]


# Issue 35 (6): similarity as documented ------------------------------------------------------


def renamed(source: str, k: int) -> str:
    """``source`` with its local names renamed (``k`` tells copies apart): what a copier does."""
    names = {"mask": f"allowed_{k}", "near_rows": f"rows_ok_{k}", "near_cols": f"cols_ok_{k}",
             "near": f"window_{k}", "T": f"size_{k}", "ri": f"y{k}", "ci": f"x{k}"}
    return re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group()], source)


@pytest.mark.parametrize(("n", "limit"), [
    (2, 4), (11, 4), (40, 4), (41, 5), (45, 5), (200, 20), (201, 21)])
def test_common_limit_is_a_tenth_of_the_class_and_at_least_4(n, limit):
    assert compare.common_limit(n) == limit


@pytest.mark.parametrize(("class_size", "copies", "paired"), [
    (11, 3, True),   # a copied trio of a small class shows
    (11, 4, False),  # the tester's class: the reference copied by 4 of 11 is boilerplate
    (45, 4, True),   # a tenth of 45 is 4.5: 4 copies are not boilerplate yet
    (45, 5, False),
    (4, 4, False),   # the whole class
])
def test_a_fragment_in_common_limit_submissions_is_boilerplate(class_size, copies, paired):
    others = {sid: HEAD.rstrip() + "\n" + body.lstrip("\n") for sid, body in INDEPENDENT.items()}
    klass = {f"copy_{k}": renamed(REFERENCE, k) for k in range(copies)}
    pool = sorted(others)
    for k in range(class_size - copies):
        klass[pool[k] if k < len(pool) else f"u_stub_{k}"] = (
            others[pool[k]] if k < len(pool) else STUB)
    assert len(klass) == class_size
    found = [(p.a, p.b, round(p.score, 3)) for p in compare.find_pairs(klass, STUB, min_score=0)
             if p.a.startswith("copy_") and p.b.startswith("copy_")]
    assert len(found) == (copies * (copies - 1) // 2 if paired else 0), found
    assert all(score == 1.0 for _, _, score in found), found
    reported = {(p.a, p.b) for p in compare.find_pairs(klass, STUB)}
    assert reported == {(a, b) for a, b, _ in found}  # and no pair of independent solutions


BASE = HEAD.rstrip() + "\n" + INDEPENDENT["s_loops"].lstrip("\n")
ONES = "mask = np.ones((T, T), dtype=bool)"
EDITS = {  # a second file: BASE but for some lines
    "zeros mask, one extra line": ((ONES, ONES.replace("ones", "zeros")),
                                   ("    return mask", "    assert mask.dtype == bool\n"
                                                       "    return mask")),
    "zeros mask": ((ONES, ONES.replace("ones", "zeros")),),
    "one extra line": (("    return mask", "    mask[:n_prefix] = True\n    return mask"),),
    "one line less": (("            rj, cj = divmod(j, W_p)\n", ""),),
    "another comparison": (("abs(ci - cj)) <= radius", "abs(ci - cj)) < radius"),),
}


def _class_page(tmp_path: Path, sources: dict[str, str]) -> tuple[str, list[list[str]]]:
    """The page and the CSV rows of ``write_similarity`` on ``sources``."""
    page = write_similarity(tmp_path / "out", _submissions(tmp_path / "class", sources),
                                   [SLUG], title="Week 3")
    return page.read_text(), list(csv.reader((tmp_path / "out" / CSV).open(newline="")))


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_files_that_differ_score_below_100(edit, tmp_path):
    changed = edit_source(BASE, *EDITS[edit])
    pair, = compare.find_pairs({"a": BASE, "b": changed}, STUB)
    assert pair.score < 1 and min(pair.share_a, pair.share_b) < 1
    html, rows = _class_page(tmp_path, {"a": BASE, "b": changed})
    assert float(rows[1][3]) < 100 and min(float(rows[1][4]), float(rows[1][5])) < 100
    score = re.search(r'<td class="num score">(\d+)%</td>', html)
    assert score is not None and int(score.group(1)) < 100


def test_a_renamed_copy_scores_100():
    pair, = compare.find_pairs({"a": BASE, "b": renamed(BASE, 1)}, STUB)
    assert (pair.score, pair.share_a, pair.share_b) == (1.0, 1.0, 1.0)


class _Pre(HTMLParser):
    """The ``<pre>`` blocks of a page: their text (region labels left out), and for each
    character whether it lies in a ``differs`` span."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[list[str], list[bool]]] = []
        self.open: list[tuple[str, bool]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self.blocks.append(([], []))
            self.open = []
        elif self.open is not None:
            self.open.append((tag, tag == "span" and ("class", "differs") in attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.open = None
        elif self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.open is not None and not any(tag == "sup" for tag, _ in self.open):
            text, marked = self.blocks[-1]
            text.append(data)
            marked += [any(differs for _, differs in self.open)] * len(data)


@pytest.mark.parametrize("edit", [*sorted(EDITS), "renamed"])
def test_every_differing_line_is_highlighted(edit, tmp_path):
    """Side by side, every line not in the other file is marked (even at 100%), no other."""
    changed = renamed(BASE, 1) if edit == "renamed" else edit_source(BASE, *EDITS[edit])
    html, _ = _class_page(tmp_path, {"a": BASE, "b": changed})
    parser = _Pre()
    parser.feed(html)
    assert len(parser.blocks) == 2
    differing = 0
    for (parts, marked), source, other in zip(parser.blocks, (BASE, changed), (changed, BASE)):
        text = "".join(parts)
        assert text == source
        theirs = Counter(line.strip() for line in other.splitlines())
        pos = 0
        for line in source.splitlines(keepends=True):
            flags = [m for ch, m in zip(line, marked[pos:pos + len(line)]) if not ch.isspace()]
            differs = bool(line.strip()) and not theirs[line.strip()]
            differing += differs
            assert all(flags) if differs else not any(flags), (edit, line)
            pos += len(line)
    assert differing, edit


@pytest.mark.parametrize("exercise", [SLUG, R_SLUG])
def test_independent_implementations_never_pair(exercise, tmp_path):
    """Calibration: no two independent implementations reach ``REPORT_MIN``, in a class of two
    (where only the stub is boilerplate) or of four."""
    sources, stub = independent(exercise)
    ids = sorted(sources)
    scores = {(x, y): max((p.score for p in compare.find_pairs(
        {x: sources[x], y: sources[y]}, stub, min_score=0)), default=0.0)
        for x, y in itertools.combinations(ids, 2)}
    worst = max(scores, key=scores.__getitem__)
    assert scores[worst] < compare.REPORT_MIN, (worst, scores[worst])
    for k in range(len(ids)):
        klass = {sid: sources[sid] for sid in (ids + ids)[k:k + 4]}
        assert compare.find_pairs(klass, stub) == [], sorted(klass)


DISGUISES = {  # exercise, the original (an id of ``independent``), its disguised copy
    "renamed, functions reordered": (SLUG, "original", COPY),
    "renamed, statements reordered": (SLUG, "reference", REFERENCE_DISGUISED),
    "rollout renamed, statements reordered": (R_SLUG, "reference", ROLLOUT_REFERENCE_DISGUISED),
}


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_a_disguised_copy_still_pairs(disguise, tmp_path):
    """Calibration: the copy pairs with its original, and nothing else pairs, in every class of
    four (the pair and two independent implementations) and in the whole class."""
    exercise, original, copy = DISGUISES[disguise]
    sources, stub = independent(exercise)
    others = sorted(set(sources) - {original})
    classes = [others[k:k + 2] for k in range(0, len(others), 2)] + [others]
    for members in classes:
        klass = {original: sources[original], "copy": copy, **{s: sources[s] for s in members}}
        pairs = compare.find_pairs(klass, stub)
        assert [(p.a, p.b) for p in pairs] == [("copy", original)], (
            members, [(p.a, p.b, round(p.score, 2)) for p in pairs])
    if exercise == SLUG:  # the CSV lists that pair alone
        _, rows = _class_page(tmp_path, klass)
        assert [row[1:3] for row in rows[1:]] == [["copy", original]]


def test_the_teacher_guide_states_the_rules():
    guide = (Path(__file__).resolve().parent.parent / "docs" / "teacher.md").read_text()
    section = guide[guide.index("`--similarity` also compares"):]
    text = " ".join(section[:section.index("```")].split())
    assert "more than a tenth" not in text
    assert (f"at least a tenth of the class and in at least {compare.MIN_COMMON} "
            "submissions") in text
    assert f"fingerprints of {compare.K} tokens" in text
    assert f"{round(100 * compare.REPORT_MIN)}% or more" in text
