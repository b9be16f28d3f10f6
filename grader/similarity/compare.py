"""Code similarity: which submissions of one exercise are unusually alike (MOSS-style).

``find_pairs(sources, stub)`` compares every pair of ``sources`` (id -> Python source of one
exercise) and returns the pairs whose score reaches ``REPORT_MIN``, best first. The method is
MOSS's:

- **Tokens**: Python's ``tokenize``. An identifier the learner chooses (a variable, a
  parameter, a function of their own, an import's alias) becomes ``V``, every string ``S``;
  keywords, numbers, operators, attribute names (``np.zeros`` and ``np.ones`` differ), builtins
  (``len``, ``range``) and keyword arguments of a call (``dtype=``) are kept as written.
  Comments, blank lines, docstrings (a string that is a statement of its own), import
  statements and the annotations of a ``def``'s parameters and result are dropped. Renamed
  variables and functions, re-spaced or re-commented code match.
- **Fingerprints**: the hashes of every ``K`` consecutive tokens, winnowed (the smallest hash
  of each window of ``WINDOW`` k-grams): any run of ``K + WINDOW - 1`` tokens in common is
  found, wherever it is in either file (reordered functions match).
- **Boilerplate matches nothing**: the statements of the stub (the skeleton everyone starts
  from: its signatures, ``raise NotImplementedError``) and the k-grams found in at least
  ``common_limit(n)`` of the ``n`` submissions (a tenth of the class, and at least 4: what the
  statement makes everyone write, or a solution that went round) are never a match, and count
  for neither file. A pair sharing nothing beyond them is not compared.
- **Matching regions**: runs of equal k-grams at the same offset (diagonals) are tiled
  greedily, longest first, without overlap (greedy string tiling); a region is at least ``K``
  tokens.
- **Score**: a file's *own* tokens are those outside the stub's statements and outside every
  common k-gram that the other file has too (common code that one file lacks is a
  difference); ``matched_a`` counts the own tokens of ``a`` inside a region. ``share_a =
  matched_a / own_a``, and ``score = (matched_a + matched_b) / (own_a + own_b)``: 1.0 exactly
  when every own token of both files lies in a region, so code that one file has and the other
  lacks (a changed call, an extra line) makes it less than 1.0. ``REPORT_MIN`` is calibrated
  in ``tests/test_similarity.py``: independent implementations stay below it, disguised
  copies (renamed variables, reordered statements or functions) above.

Pure computation: no file is read or written. A file that does not tokenize (a syntax error,
or anything else the tokenizer raises on it) is compared on the tokens before the error; a file
is compared on its first ``MAX_CHARS`` characters and ``MAX_TOKENS`` tokens. The sources are
the learners': nothing here recurses on them, and no source makes ``find_pairs`` raise.
"""

from __future__ import annotations

import builtins
import hashlib
import heapq
import io
import keyword
import tokenize
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, combinations, pairwise

__all__ = ["K", "REPORT_MIN", "WINDOW", "Pair", "Region", "Token", "common_limit",
           "find_pairs", "tokens"]

K = 20          # tokens per k-gram: a line or two of code
WINDOW = 5      # k-grams per winnowing window: a shared run of K + WINDOW - 1 tokens is found
MIN_SHARED = 2  # winnowed fingerprints a pair must share to be compared in detail
MIN_MATCHED = 2 * K  # own tokens each file of a pair must have in regions to be a pair
MIN_COMMON = 4  # a k-gram in this many submissions is boilerplate, whatever the class's size
REPORT_MIN = 0.6  # the lowest score reported: independent solutions <= 0.45, copies >= 0.76
MAX_POSITIONS = 16   # occurrences of one k-gram in a file used as seeds (repetitive code)
MAX_CHARS = 200_000  # characters of a file compared (a class's files are far shorter)
MAX_TOKENS = 20_000

INDENT, DEDENT = "{indent}", "{dedent}"  # no Python token reads so (``>`` and ``<`` do)
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, None}
_KEPT_NAMES = frozenset(dir(builtins))
# Python 3.12 splits an f-string into parts (3.14 a t-string too): compared as one string
_FSTRING_START = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START")
                  if hasattr(tokenize, n)}
_FSTRING_END = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END")
                if hasattr(tokenize, n)}


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
    """Two submissions whose code matches: ``a < b``; ``score``, ``share_a`` and ``share_b``
    in [0, 1] (see the module docstring); ``matched``: the tokens of the regions."""

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
    for tok, text in _normalised(source):
        (srow, scol), (erow, ecol) = tok.start, tok.end
        start = lines[srow] + scol if srow < len(lines) else len(source)
        end = lines[erow] + ecol if erow < len(lines) else len(source)
        out.append(Token(text, start, end))
        if limit is not None and len(out) >= limit:
            break
    return out


def _normalised(source: str) -> Iterator[tuple[tokenize.TokenInfo, str]]:
    """The tokens of ``source`` that are compared, each with its normalised text: docstrings,
    import statements and annotations of a ``def``'s parameters and result dropped."""
    statement_start = True
    skip_statement = False  # a docstring, a bare string or an import statement
    brackets: list[str] = []  # per open bracket: "call", "def" (parameters) or "other"
    annotation: int | None = None  # bracket depth where the annotation being dropped ends
    lambda_depth: int | None = None  # bracket depth of the lambda whose parameters these are
    prev = ""  # the previous token's string
    for tok, following in pairwise(chain(_raw_tokens(source), [None])):
        assert tok is not None
        kind, string = tok.type, tok.string
        was_start, statement_start = statement_start, kind in _STATEMENT_START
        if skip_statement:
            skip_statement = kind != tokenize.NEWLINE
            statement_start = True
            continue
        if was_start and (string in ("import", "from") and kind == tokenize.NAME or (
                kind == tokenize.STRING
                and (following is None or following.type == tokenize.NEWLINE))):
            skip_statement = following is not None
            statement_start = True
            continue
        opened = string in ("(", "[", "{") and kind == tokenize.OP
        if opened:
            brackets.append("other" if string != "(" else "def" if prev == "def:name"
                            else "call")
        elif string in (")", "]", "}") and kind == tokenize.OP and brackets:
            brackets.pop()
        depth = len(brackets)
        if annotation is not None:
            ends = depth < annotation or depth == annotation and (
                string in (",", "=") if annotation else string == ":")
            if not ends:
                continue
            annotation = None
        elif string == "->" or (string == ":" and brackets and brackets[-1] == "def"
                                and lambda_depth is None):
            annotation = depth
            continue
        if string == "lambda":
            lambda_depth = depth if lambda_depth is None else lambda_depth
        elif string == ":" and lambda_depth == depth:
            lambda_depth = None
        if kind in (tokenize.INDENT, tokenize.DEDENT):
            text = INDENT if kind == tokenize.INDENT else DEDENT
        elif kind == tokenize.NEWLINE:
            text = ";"
        elif kind == tokenize.NAME:
            kept = (keyword.iskeyword(string) or prev == "." or string in _KEPT_NAMES
                    or (following is not None and following.string == "=" and brackets
                        and brackets[-1] == "call" and lambda_depth is None))
            text = string if kept else "V"
        elif kind == tokenize.STRING:
            text = "S"
        else:
            text = string
        prev = "def:name" if prev == "def" and kind == tokenize.NAME else string
        yield tok, text


def _raw_tokens(source: str) -> Iterator[tokenize.TokenInfo]:
    """Python's tokens of ``source`` but comments, blank lines and markers, an f-string as one
    ``STRING``, up to the first error (whatever the tokenizer raises: ``TokenError``,
    ``SyntaxError``, ...)."""
    first: tokenize.TokenInfo | None = None
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in _FSTRING_START:
                first = first if depth else tok
                depth += 1
            elif depth:
                if tok.type in _FSTRING_END:
                    depth -= 1
                    if not depth and first is not None:
                        yield tokenize.TokenInfo(tokenize.STRING, "f''", first.start, tok.end,
                                                 first.line)
            elif tok.type not in _SKIP:
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
    """A k-gram found in at least this many of ``n`` submissions is boilerplate: a tenth of
    the class (rounded up), and never fewer than ``MIN_COMMON`` (so that what a pair or a trio
    of a small class copied is not boilerplate by itself)."""
    return max(MIN_COMMON, -(-n // 10))


@dataclass
class _Doc:
    id: str
    toks: list[Token]
    hashes: list[int]
    kgrams: set[int] = field(default_factory=set)
    fingerprints: set[int] = field(default_factory=set)
    boiler_at: list[tuple[int, int]] = field(default_factory=list)  # (position, hash)
    stub: int = 0  # a bit mask of the tokens in a statement of the stub


def _tile(a: _Doc, b: _Doc, boiler: set[int]) -> list[tuple[int, int, int]]:
    """Greedy string tiling of two documents: ``(i, j, length)`` token runs, longest first,
    none overlapping on either side (a run that overlaps a longer one keeps its free parts),
    each at least ``K`` tokens, seeded by non-boilerplate k-grams."""
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
    heap = [(-length, i, j) for i, j, length in runs]
    heapq.heapify(heap)
    used_a = bytearray(len(a.toks))
    used_b = bytearray(len(b.toks))
    tiles = []
    while heap:
        length, i, j = heapq.heappop(heap)
        length = -length
        free = [not (used_a[i + t] or used_b[j + t]) for t in range(length)]
        if all(free):
            used_a[i:i + length] = b"\x01" * length
            used_b[j:j + length] = b"\x01" * length
            tiles.append((i, j, length))
            continue
        start = None  # a run that overlaps a longer tile: its free parts, still long enough
        for t, ok in enumerate([*free, False]):
            if ok and start is None:
                start = t
            elif not ok and start is not None:
                if t - start >= K:
                    heapq.heappush(heap, (start - t, i + start, j + start))
                start = None
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


def _shared_boilerplate(doc: _Doc, other: _Doc) -> int:
    """A bit mask of the tokens of ``doc`` inside a boilerplate k-gram ``other`` has too."""
    mask = 0
    run = (1 << K) - 1
    for i, h in doc.boiler_at:
        if h in other.kgrams:
            mask |= run << i
    return mask & ((1 << len(doc.toks)) - 1)


def _statements(toks: list[Token]) -> Iterator[tuple[int, int, tuple[str, ...]]]:
    """Each statement (logical line) of ``toks``: its first index, its last plus one (its
    NEWLINE in), and its tokens' texts (INDENT and DEDENT, which come before it, left out)."""
    start, texts = 0, []
    for i, tok in enumerate(toks):
        if not texts and tok.text in (INDENT, DEDENT):
            continue
        if not texts:
            start = i
        texts.append(tok.text)
        if tok.text == ";":
            yield start, i + 1, tuple(texts)
            texts = []
    if texts:
        yield start, len(toks), tuple(texts)


def _stub_mask(toks: list[Token], stub: set[tuple[str, ...]]) -> int:
    """A bit mask of the tokens of ``toks`` in a statement that is one of ``stub``'s (the
    signature of the function asked for, ``raise NotImplementedError``, ...)."""
    mask = 0
    for start, end, texts in _statements(toks):
        if texts in stub:
            mask |= ((1 << (end - start)) - 1) << start
    return mask


def _compare(a: _Doc, b: _Doc, boiler: set[int], sources: Mapping[str, str]) -> Pair | None:
    """The pair ``a``, ``b`` as the module docstring scores it, or None below ``MIN_MATCHED``."""
    tiles = _tile(a, b, boiler)
    tiled_a = tiled_b = 0
    for i, j, n in tiles:
        tiled_a |= ((1 << n) - 1) << i
        tiled_b |= ((1 << n) - 1) << j
    shared_a = _shared_boilerplate(a, b) | a.stub
    shared_b = _shared_boilerplate(b, a) | b.stub
    own_a = len(a.toks) - shared_a.bit_count()
    own_b = len(b.toks) - shared_b.bit_count()
    matched_a = (tiled_a & ~shared_a).bit_count()
    matched_b = (tiled_b & ~shared_b).bit_count()
    if min(matched_a, matched_b) < MIN_MATCHED:
        return None
    regions = [Region(_spans(sources[a.id], a.toks[i:i + n]),
                      _spans(sources[b.id], b.toks[j:j + n]), n)
               for i, j, n in sorted(tiles)]
    return Pair(a.id, b.id, (matched_a + matched_b) / (own_a + own_b), matched_a / own_a,
                matched_b / own_b, sum(n for _, _, n in tiles), regions)


def find_pairs(sources: Mapping[str, str], stub: str = "", *,
               min_score: float = REPORT_MIN) -> list[Pair]:
    """The pairs of ``sources`` (id -> source) whose files each have at least
    ``MIN_MATCHED`` own tokens in matching regions (outside the boilerplate: ``stub``'s text
    and what ``common_limit`` submissions share) and whose score is at least ``min_score``
    (``REPORT_MIN`` unless given; 0.0 for every pair with matching code): best score first,
    then by ids. See the module docstring."""
    docs = []
    for sid in sorted(sources):
        toks = tokens(sources[sid][:MAX_CHARS], MAX_TOKENS)
        hashes = _kgram_hashes(toks)
        docs.append(_Doc(sid, toks, hashes, set(hashes)))
    stub_toks = tokens(stub) if stub else []
    stub_statements = {texts for _, _, texts in _statements(stub_toks)}
    boiler = set(_kgram_hashes(stub_toks))
    seen: dict[int, int] = defaultdict(int)
    for doc in docs:
        for h in doc.kgrams:
            seen[h] += 1
    limit = common_limit(len(docs))
    boiler |= {h for h, count in seen.items() if count >= limit}
    by_print: dict[int, list[int]] = defaultdict(list)
    for n, doc in enumerate(docs):
        doc.fingerprints = _winnow(doc.hashes) - boiler
        doc.boiler_at = [(i, h) for i, h in enumerate(doc.hashes) if h in boiler]
        doc.stub = _stub_mask(doc.toks, stub_statements)
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
        pair = _compare(docs[x], docs[y], boiler, sources)
        if pair is not None and pair.score >= min_score:
            pairs.append(pair)
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return pairs
