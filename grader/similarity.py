"""Code similarity: which submissions of one exercise are unusually alike (MOSS-style).

``find_pairs(sources, stub)`` compares every pair of ``sources`` (id -> Python source of one
exercise) and returns the pairs whose code matches, best first. The method is MOSS's:

- **Tokens**: Python's ``tokenize``; every identifier (not a keyword) becomes ``V``, every
  string ``S``; comments, blank lines and docstrings (a string that is a statement of its own)
  are dropped. Renamed variables and functions, re-spaced or re-commented code match.
- **Fingerprints**: the hashes of every ``K`` consecutive tokens, winnowed (the smallest hash
  of each window of ``WINDOW`` k-grams): any run of ``K + WINDOW - 1`` tokens in common is
  found, wherever it is in either file (reordered functions match).
- **Boilerplate is ignored**: k-grams of the stub (the skeleton everyone starts from: its
  signature, docstring, imports) and k-grams found in more than ``common_limit(n)``
  submissions (what the statement makes everyone write, whatever they copy) match nothing.
- **Matching regions**: for each pair sharing ``MIN_SHARED`` fingerprints, runs of equal
  k-grams at the same offset (diagonals) are tiled greedily, longest first, without overlap
  (greedy string tiling). ``score`` is the Dice coefficient of the tiled tokens:
  ``2 * matched / (own_a + own_b)``, where ``own`` counts a file's tokens outside the
  boilerplate; ``share_a`` and ``share_b`` are each file's part.

Pure computation: no file is read or written. A file that does not tokenize (a syntax error,
or anything else the tokenizer raises on it) is compared on the tokens before the error; a file
is compared on its first ``MAX_CHARS`` characters and ``MAX_TOKENS`` tokens. The sources are
the learners': nothing here recurses on them, and no source makes ``find_pairs`` raise.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import tokenize
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, combinations, pairwise

__all__ = ["K", "WINDOW", "Pair", "Region", "Token", "common_limit", "find_pairs", "tokens"]

K = 12          # tokens per k-gram: about one line of code
WINDOW = 6      # k-grams per winnowing window: a shared run of K + WINDOW - 1 tokens is found
MIN_SHARED = 2  # winnowed fingerprints a pair must share to be compared in detail
MIN_MATCHED = 2 * K  # tokens a pair must have tiled to be reported
MAX_POSITIONS = 16   # occurrences of one k-gram in a file used as seeds (repetitive code)
MAX_CHARS = 200_000  # characters of a file compared (a class's files are far shorter)
MAX_TOKENS = 20_000

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, None}


@dataclass(frozen=True)
class Token:
    """One normalised token and where it is in its source (character offsets)."""

    text: str
    start: int
    end: int


Spans = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Region:
    """A matching region, ``tokens`` normalised tokens long: the characters ``a_spans`` of
    ``a`` match ``b_spans`` of ``b`` (``(start, end)`` offsets, in order; what the tokens
    skip, such as a comment or a docstring, and the blank ends are left out)."""

    a_spans: Spans
    b_spans: Spans
    tokens: int


@dataclass
class Pair:
    """Two submissions whose code matches: ``a < b``; ``score`` in [0, 1]."""

    a: str
    b: str
    score: float
    share_a: float
    share_b: float
    matched: int
    regions: list[Region] = field(default_factory=list)


def _offsets(source: str) -> list[int]:
    """Character offset of the start of each line (1-based line numbers: index 0 unused)."""
    starts = [0, 0]
    for line in io.StringIO(source):
        starts.append(starts[-1] + len(line))
    return starts


def tokens(source: str, limit: int | None = None) -> list[Token]:
    """The normalised tokens of ``source`` (see the module docstring), at most ``limit``
    (None: all); never raises. Tokenizing stops at the limit: some Pythons' tokenizers are
    quadratic on a long line."""
    lines = _offsets(source)
    out: list[Token] = []
    prev_type = None
    dropped = False
    for tok, following in pairwise(chain(_raw_tokens(source), [None])):
        assert tok is not None
        kind = tok.type
        if kind == tokenize.STRING and prev_type in _STATEMENT_START and (
                following is None or following.type == tokenize.NEWLINE):
            dropped = True
            continue  # a docstring or a bare string statement, and its NEWLINE below
        if dropped and kind == tokenize.NEWLINE:
            dropped = False
            continue
        prev_type, dropped = kind, False
        if kind in (tokenize.INDENT, tokenize.DEDENT):
            text = ">" if kind == tokenize.INDENT else "<"
        elif kind == tokenize.NEWLINE:
            text = ";"
        elif kind == tokenize.NAME:
            text = tok.string if keyword.iskeyword(tok.string) else "V"
        elif kind == tokenize.STRING:
            text = "S"
        else:
            text = tok.string
        (srow, scol), (erow, ecol) = tok.start, tok.end
        start = lines[srow] + scol if srow < len(lines) else len(source)
        end = lines[erow] + ecol if erow < len(lines) else len(source)
        out.append(Token(text, start, end))
        if limit is not None and len(out) >= limit:
            break
    return out


def _raw_tokens(source: str) -> Iterator[tokenize.TokenInfo]:
    """Python's tokens of ``source`` but comments, blank lines and markers, up to the first
    error (whatever the tokenizer raises: ``TokenError``, ``SyntaxError``, ...)."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in _SKIP:
                yield tok
    except Exception:  # noqa: BLE001 - the learner's file: compared on what came before
        return


def _kgram_hashes(toks: list[Token]) -> list[int]:
    """A 64-bit hash of each run of ``K`` tokens (stable across runs)."""
    texts = [t.text for t in toks]
    return [int.from_bytes(hashlib.blake2b("\x00".join(texts[i:i + K]).encode(),
                                           digest_size=8).digest(), "big")
            for i in range(len(texts) - K + 1)]


def _winnow(hashes: list[int]) -> set[int]:
    """The winnowed fingerprints: the smallest hash of every window of ``WINDOW`` k-grams."""
    if len(hashes) <= WINDOW:
        return {min(hashes)} if hashes else set()
    return {min(hashes[i:i + WINDOW]) for i in range(len(hashes) - WINDOW + 1)}


def common_limit(n: int) -> int:
    """A k-gram found in more than this many of ``n`` submissions is boilerplate: a tenth of
    the class, and never fewer than 4 (so a copied pair or trio of a small class still
    shows)."""
    return max(4, n // 10)


@dataclass
class _Doc:
    id: str
    toks: list[Token]
    hashes: list[int]
    fingerprints: set[int]
    own: int = 0


def _tile(a: _Doc, b: _Doc, boiler: set[int]) -> list[tuple[int, int, int]]:
    """Greedy string tiling of two documents: ``(i, j, length)`` token runs, longest first,
    none overlapping on either side, each at least ``K`` tokens, seeded by non-boilerplate
    k-grams."""
    where: dict[int, list[int]] = defaultdict(list)
    for j, h in enumerate(b.hashes):
        if h not in boiler and len(where[h]) < MAX_POSITIONS:
            where[h].append(j)
    runs: list[tuple[int, int, int]] = []
    previous: dict[int, int] = {}  # j -> length of the diagonal run ending at (i - 1, j)
    for i, h in enumerate(a.hashes):
        current: dict[int, int] = {}
        for j in where.get(h, ()):
            current[j] = previous.get(j - 1, 0) + 1
        for j, length in previous.items():
            if current.get(j + 1) is None:  # the run ending at (i - 1, j) stops here
                runs.append((i - length, j - length + 1, length + K - 1))
        previous = current
    for j, length in previous.items():
        runs.append((len(a.hashes) - length, j - length + 1, length + K - 1))
    runs.sort(key=lambda r: (-r[2], r[0], r[1]))
    used_a = bytearray(len(a.toks))
    used_b = bytearray(len(b.toks))
    tiles = []
    for i, j, length in runs:
        if any(used_a[i:i + length]) or any(used_b[j:j + length]):
            continue
        used_a[i:i + length] = b"\x01" * length
        used_b[j:j + length] = b"\x01" * length
        tiles.append((i, j, length))
    return tiles


def _spans(source: str, toks: list[Token]) -> Spans:
    """The character spans of ``toks`` (consecutive tokens of ``source``): runs of visible
    tokens, cut where the text between two holds more than whitespace."""
    spans: list[list[int]] = []
    for tok in toks:
        if not source[tok.start:tok.end].strip():
            continue  # NEWLINE, INDENT, DEDENT
        if spans and not source[spans[-1][1]:tok.start].strip():
            spans[-1][1] = tok.end
        else:
            spans.append([tok.start, tok.end])
    return tuple((a, b) for a, b in spans)


def _own(doc: _Doc, boiler: set[int]) -> int:
    """Tokens of ``doc`` outside every boilerplate k-gram."""
    covered = bytearray(len(doc.toks))
    for i, h in enumerate(doc.hashes):
        if h in boiler:
            covered[i:i + K] = b"\x01" * K
    return len(doc.toks) - sum(covered[:len(doc.toks)])


def find_pairs(sources: Mapping[str, str], stub: str = "", *,
               min_score: float = 0.0) -> list[Pair]:
    """The pairs of ``sources`` (id -> source) with at least ``MIN_MATCHED`` matching tokens
    outside the boilerplate (``stub``'s text and what many submissions share) and a score of
    at least ``min_score``: best score first, then by ids. See the module docstring."""
    docs = []
    for sid in sorted(sources):
        toks = tokens(sources[sid][:MAX_CHARS], MAX_TOKENS)
        hashes = _kgram_hashes(toks)
        docs.append(_Doc(sid, toks, hashes, set()))
    boiler = set(_kgram_hashes(tokens(stub))) if stub else set()
    seen: dict[int, int] = defaultdict(int)
    for doc in docs:
        for h in set(doc.hashes):
            seen[h] += 1
    limit = common_limit(len(docs))
    boiler |= {h for h, count in seen.items() if count > limit}
    by_print: dict[int, list[int]] = defaultdict(list)
    for n, doc in enumerate(docs):
        doc.fingerprints = _winnow(doc.hashes) - boiler
        doc.own = _own(doc, boiler)
        for h in doc.fingerprints:
            by_print[h].append(n)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in by_print.values():
        for x, y in combinations(members, 2):
            shared[x, y] += 1
    pairs = []
    for (x, y), count in shared.items():
        if count < MIN_SHARED:
            continue
        a, b = docs[x], docs[y]
        tiles = _tile(a, b, boiler)
        matched = sum(length for _, _, length in tiles)
        if matched < MIN_MATCHED or not a.own or not b.own:
            continue
        share_a, share_b = min(1.0, matched / a.own), min(1.0, matched / b.own)
        score = min(1.0, 2 * matched / (a.own + b.own))
        if score < min_score:
            continue
        regions = [Region(_spans(sources[a.id], a.toks[i:i + n]),
                          _spans(sources[b.id], b.toks[j:j + n]), n)
                   for i, j, n in sorted(tiles)]
        pairs.append(Pair(a.id, b.id, score, share_a, share_b, matched, regions))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return pairs
