"""Learner text made inert: the one function that turns text from the learner's side into text
the grader may show on a terminal or in a report.

Everything a learner controls (an exception's class name and message, traceback lines, what it
printed, names of uploaded files) goes through ``inert`` where it enters the grading process.
Control characters are shown escaped, as the visible characters of their Python escape: C0
(except newline and tab), DEL and C1, so ESC and every escape sequence (OSC titles and
clipboard writes, cursor moves, erasing, hidden text) and a bare carriage return that would
redraw a line (shown as ``\\r``); also Unicode's bidirectional overrides (text shown in another
order than it is stored) and lone surrogates (which no UTF-8 file or terminal can hold).
ESC becomes the four characters ``\\x1b``.

The result holds none of those characters, so applying ``inert`` again changes nothing.
"""

from __future__ import annotations

import re

_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_MULTI_LINE = re.compile(f"[{_CONTROL}]")
_ONE_LINE = re.compile(f"[\n{_CONTROL}]")
_SHORT = {"\r": "\\r", "\n": "\\n"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str, *, newlines: bool = True, cap: int | None = None,
          what: str = "text") -> str:
    """``text`` with its control characters escaped; with ``newlines=False`` (a name, one
    traceback line) a newline is escaped too, so the text cannot start a line of its own.

    With ``cap``, at most ``cap`` characters of the escaped text are kept (an escape is never
    cut) and a note says how many characters of ``text`` were left out:
    ``[output truncated: N more characters]`` for ``what="output"``.
    """
    pattern = _MULTI_LINE if newlines else _ONE_LINE
    if cap is None or len(text) <= cap:
        if pattern.search(text) is None:
            return text
        if cap is None:
            return pattern.sub(_escaped, text)
    parts: list[str] = []
    size = pos = 0
    for match in pattern.finditer(text):  # lazily: stops at the cap, however long the text
        start = match.start()
        plain = min(start - pos, cap - size)
        parts.append(text[pos:pos + plain])
        size += plain
        if plain < start - pos:
            pos += plain
            break
        escape = _escaped(match)
        if size + len(escape) > cap:
            pos = start
            break
        parts.append(escape)
        size += len(escape)
        pos = match.end()
    else:
        plain = min(len(text) - pos, cap - size)
        parts.append(text[pos:pos + plain])
        pos += plain
    shown = "".join(parts)
    if pos < len(text):
        shown += f"{chr(10) if newlines else ' '}[{what} truncated: {len(text) - pos} more " \
                 "characters]"
    return shown
