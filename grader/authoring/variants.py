"""The one declaration of each reference's edits: ``solutions/<slug>.variants.toml``.

Every wrong file the project grades on purpose is an edit of the reference, declared once here
and read by the pack checker, the project's tests, the benchmark and the screenshots:

- ``[[mistake]]``: edits that plant one or more known mistakes, and ``named``, the tests whose
  verdict must name each (``{test = "mistake_name"}``);
- ``[[variant]]``: a wrong file no mistake catalogues (``name``), and ``fails``, the tests that
  must fail with the failure kind each must show (``{test = "values"}``); its feedback must name
  no cause.

An edit is ``[old, new]``: ``old`` must occur exactly once in the source it is applied to.
``base = "NAME"`` applies ``[bases.NAME]`` (its own ``edits`` and ``append``) first. A base is a
right file: it scores full marks, but where it declares ``unimplemented = ["func", ...]``,
functions it leaves raising NotImplementedError (to cut a long training short, say). The file
never ships: not in a release, not in the Gradescope bundle.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader import catalog


class EditError(ValueError):
    """An edit that does not apply exactly once, or a declaration that does not parse."""


Edits = tuple[tuple[str, str], ...]


def apply_edits(src: str, edits: Edits, *, where: str = "") -> str:
    """``src`` with each ``(old, new)`` applied; each ``old`` must occur exactly once."""
    for old, new in edits:
        count = src.count(old)
        if count != 1:
            found = "not found" if count == 0 else f"found {count} times"
            raise EditError(f"{where}: {old[:60]!r} {found} (an edit must apply exactly once)")
        src = src.replace(old, new)
    return src


@dataclass(frozen=True)
class Variant:
    """One wrong file: the reference of ``slug`` with ``edits`` (after its base's)."""

    slug: str
    name: str
    edits: Edits
    catalogued: bool
    named: dict[str, str] = field(default_factory=dict)   # test -> mistake it must name
    fails: dict[str, str] = field(default_factory=dict)   # test -> failure kind it must show
    what: str = ""
    base_edits: Edits = ()
    append: str = ""
    unimplemented: tuple[str, ...] = ()   # what the base leaves raising NotImplementedError

    def source(self, reference: str | None = None) -> str:
        """The variant's source; raises ``EditError`` when an edit does not apply once."""
        src = catalog.get(self.slug).solution.read_text() if reference is None else reference
        src = apply_edits(src, self.base_edits, where=f"{self.slug} base of {self.name}")
        return apply_edits(src, self.edits, where=f"{self.slug} {self.name}") + self.append


@dataclass(frozen=True)
class Declared:
    mistakes: tuple[Variant, ...]
    uncatalogued: tuple[Variant, ...]

    def mistake_names(self) -> set[str]:
        return {name for v in self.mistakes for name in v.named.values()}

    def by_name(self, name: str) -> Variant:
        for v in (*self.mistakes, *self.uncatalogued):
            if v.name == name:
                return v
        raise KeyError(name)


def path_of(slug: str) -> Path:
    return catalog.get(slug).variants if slug in catalog.load() else (
        catalog.SOLUTIONS_DIR / f"{slug}.variants.toml")


def _edits(raw: object, where: str) -> Edits:
    if not isinstance(raw, list) or not all(
            isinstance(e, list) and len(e) == 2 and all(isinstance(s, str) for s in e)
            for e in raw):
        raise EditError(f"{where}: edits must be a list of [old, new] string pairs")
    return tuple((old, new) for old, new in raw)


def parse(slug: str, text: str) -> Declared:
    """The declaration in ``text``; raises ``EditError`` on a malformed one."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise EditError(f"{slug}: not valid TOML: {e}") from None
    bases = {name: (_edits(b.get("edits", []), f"{slug} base {name}"), b.get("append", ""),
                    tuple(b.get("unimplemented", ())))
             for name, b in data.get("bases", {}).items()}

    def one(raw: dict, catalogued: bool, n: int) -> Variant:
        named = dict(raw.get("named", {}))
        name = raw.get("name") or "+".join(dict.fromkeys(named.values())) or f"#{n}"
        base = raw.get("base")
        if base is not None and base not in bases:
            raise EditError(f"{slug} {name}: no [bases.{base}]")
        base_edits, append, unimplemented = bases.get(base, ((), "", ()))
        return Variant(slug, name, _edits(raw.get("edits"), f"{slug} {name}"), catalogued,
                       named, dict(raw.get("fails", {})), raw.get("what", ""), base_edits,
                       append + raw.get("append", ""), unimplemented)

    return Declared(tuple(one(r, True, n) for n, r in enumerate(data.get("mistake", []))),
                    tuple(one(r, False, n) for n, r in enumerate(data.get("variant", []))))


@cache
def load(slug: str) -> Declared:
    """The declared variants of ``slug`` (none when it has no declaration file)."""
    path = path_of(slug)
    return parse(slug, path.read_text()) if path.is_file() else Declared((), ())
