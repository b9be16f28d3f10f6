"""A small Markdown-to-HTML renderer for exercise statements (no dependency, no raw HTML).

Supported: ``#``-``###`` headings, paragraphs, ``-`` bullet lists, fenced code blocks, indented
code blocks (4 spaces), pipe tables, ``inline code``, ``**bold**`` and ``*italic*``. All text
is HTML-escaped first, so a statement cannot inject markup.
"""

from __future__ import annotations

import html
import re

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    codes: list[str] = []

    def stash(m: re.Match[str]) -> str:
        codes.append(f"<code>{m.group(1)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    out = _CODE.sub(stash, html.escape(text, quote=False))
    out = _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", out))
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def render(text: str) -> str:
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
        elif stripped.startswith("```"):
            i += 1
            code = []
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
        elif line.startswith("    "):
            code = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                code.append(lines[i][4:])
                i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(code).rstrip())}</code></pre>")
        elif m := re.match(r"(#{1,3})\s+(.*)", stripped):
            level = len(m.group(1)) + 1  # the report's own h1 is the page title
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
            i += 1
        elif stripped.startswith("|") and i + 1 < len(lines) and \
                re.match(r"^\|?\s*:?-{3,}", lines[i + 1].strip()):
            head = _cells(stripped)
            i += 2
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            thead = "".join(f"<th>{_inline(c)}</th>" for c in head)
            tbody = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>"
                            for r in rows)
            out.append(f"<table><thead><tr>{thead}</tr></thead><tbody>{tbody}</tbody></table>")
        elif re.match(r"^[-*]\s+", stripped):
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                item = lines[i].strip()
                if re.match(r"^[-*]\s+", item):
                    items.append(re.sub(r"^[-*]\s+", "", item))
                elif items:
                    items[-1] += " " + item
                i += 1
            out.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith("    ") \
                    and not re.match(r"^(#{1,3}\s|```|[-*]\s|\|)", lines[i].strip()):
                para.append(lines[i].strip())
                i += 1
            if not para:  # a line no rule above could take: show it as text
                para.append(stripped)
                i += 1
            out.append(f"<p>{_inline(' '.join(para))}</p>")
    return "\n".join(out)
