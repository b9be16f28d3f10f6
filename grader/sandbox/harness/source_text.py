"""The one text rule for a learner's source file, shared by ``grade bulk`` (which checks the
files it is given), the source rules (which read them) and the worker (which imports them).

A learner's file is UTF-8 text, with or without a BOM, with any line ends. It is refused when
it holds a NUL byte (Python reads such a file in no encoding), when a coding declaration
(PEP 263: ``# -*- coding: latin-1 -*-`` on its first or second line) names anything other
than UTF-8, or when it is not valid UTF-8. A declaration is looked for on both of the first two
lines, whatever the first holds, with Python's own pattern and line ends (``\\r`` too): so a
file this rule accepts is one Python decodes as UTF-8, and the text every reader sees is the
text the interpreter runs (no ``utf-7`` file whose code a reader cannot see).

``parse`` is ``ast.parse`` for readers in the grading process: Python's parser raises
``RecursionError`` or ``MemoryError`` (not ``SyntaxError``) for code nested deeper than it
holds (``-`` repeated 200,000 times), and any such failure is a ``NotSourceText`` there. Its
memory is linear in the source but for one rule: it builds every prefix of a dotted import
name as a string of its own (``import a.a.a...``, 100,000 parts in 200 kB of text, would take
over 10 GB), so those names are measured on the text first (``MAX_DOTTED_CHARS``).

This module is part of the harness: it imports nothing from ``grader``.
"""

from __future__ import annotations

import ast
import codecs
import re

BOM = codecs.BOM_UTF8
# Python's pattern for a coding declaration (``tokenize.cookie_re``), on bytes.
_DECLARATION = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_LINE_END = re.compile(rb"\r\n|\r|\n")
_UTF8 = ("utf-8", "utf-8-sig")
MAX_DOTTED_CHARS = 10_000_000  # the prefixes of dotted import names, all together (~10 MB)
# ``import`` or ``from`` and what follows it up to the first character that cannot be part of
# an import's names: name characters (any non-ASCII one counts), dots, commas, blanks, line
# continuations; possessive, so each character is read once
_IMPORT = re.compile(r"\b(?:import|from)\b((?:[\w.,\x80-\U0010ffff \t\f]|\\\r?\n|\\\r)*+)")
_PART = re.compile(r"[\w\x80-\U0010ffff]+|[.,]")


class NotSourceText(ValueError):
    """The content cannot be a learner's source file; ``str(exc)`` completes "<file> ..."
    (``"is binary (it contains NUL bytes)"``), one sentence without its full stop."""


def source_text(content: bytes) -> str:
    """The text of a learner's file (a leading BOM dropped); raises ``NotSourceText``."""
    if b"\x00" in content:
        raise NotSourceText("is binary (it contains NUL bytes)")
    body = content[len(BOM):] if content.startswith(BOM) else content
    _check_declarations(body)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotSourceText(f"is not UTF-8 text (byte 0x{body[exc.start]:02x} at offset "
                            f"{exc.start + len(content) - len(body)})") from None


def parse(text: str) -> ast.Module:
    """``ast.parse(text)``. A ``SyntaxError`` is raised as the parser raises it; any other
    failure (``RecursionError``, ``MemoryError`` on deeply nested code, a ``ValueError`` for a
    NUL character) becomes ``NotSourceText`` ("is nested too deeply for Python's parser
    (MemoryError)"), so a reader never fails with the parser's own exception. A source whose
    dotted import names would take the parser more than ``MAX_DOTTED_CHARS`` characters is a
    ``NotSourceText`` before it is parsed."""
    if _dotted_chars(text) > MAX_DOTTED_CHARS:
        raise NotSourceText("imports a dotted name too long for Python's parser")
    try:
        return ast.parse(text)
    except SyntaxError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise NotSourceText(f"is nested too deeply for Python's parser "
                            f"({type(exc).__name__})") from None
    except Exception as exc:  # noqa: BLE001 - whatever else the parser may raise
        raise NotSourceText(f"cannot be read by Python's parser ({type(exc).__name__})") \
            from None


def _dotted_chars(text: str) -> int:
    """The characters of the strings Python's parser builds for the dotted names after
    ``import`` and ``from`` in ``text``: each prefix of two parts or more (``a.bc.d``: ``a.bc``
    and ``a.bc.d``, 10). Strings and comments are measured too: that only counts more."""
    total = 0
    for m in _IMPORT.finditer(text):
        length, dot = 0, False
        for part in _PART.finditer(m[1]):
            if part[0] == ".":
                dot = True
            elif part[0] == ",":
                length, dot = 0, False
            elif dot and length:
                length += 1 + len(part[0])
                total += length
                dot = False
            else:
                length, dot = len(part[0]), False
    return total


def text_problem(content: bytes) -> str | None:
    """Why ``content`` cannot be a learner's source file, completing "<file> ...", or None."""
    try:
        source_text(content)
    except NotSourceText as exc:
        return str(exc)
    return None


def _check_declarations(body: bytes) -> None:
    """Raise ``NotSourceText`` if line 1 or 2 of ``body`` declares a coding other than UTF-8."""
    for number, line in enumerate(_LINE_END.split(body, maxsplit=2)[:2], start=1):
        found = _DECLARATION.match(line)
        if found is not None and not _is_utf8(found.group(1).decode("ascii")):
            name = found.group(1).decode("ascii")
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise NotSourceText(f"declares the encoding {shown} (line {number}), but only UTF-8 "
                                "source files are accepted")


def _is_utf8(name: str) -> bool:
    """Whether a declared coding name is UTF-8 (``utf-8``, ``UTF8``, ``utf_8``, ``utf-8-sig``)."""
    try:
        return codecs.lookup(name).name in _UTF8
    except LookupError:
        return False
