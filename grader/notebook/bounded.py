"""JSON from a learner's file, read within bounds: its nesting is measured on the raw text
before ``json.loads`` ever sees it (the standard decoder recurses once per level, so a file
nested 100,000 deep would raise ``RecursionError`` in the reading process).

Plain text processing; imports nothing from ``grader``.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 100  # a notebook nests about 6 deep; an output's JSON data a few more
# an opening bracket, a closing one, or a string (skipped: brackets inside it do not nest),
# closed or running to the end of the text: a string that never closes is one token, so the
# scan is linear (``"\"\"\"...`` is not re-read from each of its quotes)
_TOKEN = re.compile(r'(?P<open>[\[{])|(?P<close>[\]}])|"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)',
                    re.DOTALL)


class TooDeep(ValueError):
    """The JSON text nests deeper than the bound; ``str(exc)`` says how deep it may."""


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    """Raise ``TooDeep`` when arrays and objects in ``text`` nest more than ``limit`` deep.

    Linear in ``len(text)``, never recursive; text that is not JSON is measured as far as it
    goes (``json.loads`` then says what is wrong with it)."""
    depth = 0
    for m in _TOKEN.finditer(text):
        if m["open"] is not None:
            depth += 1
            if depth > limit:
                raise TooDeep(f"its JSON nests deeper than {limit} levels")
        elif m["close"] is not None and depth:  # a stray closer: json.loads stops there
            depth -= 1


def loads(text: str, limit: int = MAX_DEPTH) -> Any:
    """``json.loads(text)`` once ``check_depth`` has passed; ``TooDeep`` or the decoder's
    ``ValueError`` otherwise."""
    check_depth(text, limit)
    return json.loads(text)
