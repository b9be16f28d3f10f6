"""``grade pack check``: every rule of the exercise pack, checked in one run.

Each problem names the exercise, the file and line, what is wrong, how to fix it and the
rule's id (``docs/AUTHORING.md`` lists the same rules under the same ids). The static rules
read files as text and AST (a couple of seconds for the pack); ``grade_rules`` grades the
references and stubs in one grading session.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grader import catalog
from grader.authoring import variants

DIFFICULTIES = ("easy", "medium", "hard")
TAGS = ("numpy", "torch")
TODO = "TODO(pack new)"
MIN_UNCATALOGUED = 5


@dataclass(frozen=True)
class Problem:
    slug: str
    file: Path
    line: int
    what: str
    fix: str
    rule: str

    def __str__(self) -> str:
        try:
            where = self.file.relative_to(catalog.PROJECT_DIR)
        except ValueError:
            where = self.file
        return f"{self.slug}: {where}:{self.line}: {self.what} — {self.fix} ({self.rule})"


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    check: Callable[[dict], Iterator[Problem]]


def _entries() -> list[dict]:
    return tomllib.loads(catalog.INDEX.read_text()).get("exercise", [])


def _line_of(path: Path, text: str) -> int:
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return n
    return 1


def _files(entry: dict) -> dict[str, Path]:
    ex = catalog.get(entry["slug"])
    return {"statement": ex.statement, "stub": ex.stub, "reference": ex.solution,
            "variants": ex.variants, "suite": ex.suite}


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


# -- the rules --------------------------------------------------------------------------------

def files_exist(entry: dict) -> Iterator[Problem]:
    for kind, path in _files(entry).items():
        if not path.is_file():
            yield Problem(entry["slug"], path, 1, f"the {kind} is missing",
                          f"write {path.name} (grade pack new makes every file)", "files-exist")


def index_schema(entry: dict) -> Iterator[Problem]:
    slug, index = entry["slug"], catalog.INDEX
    at = _line_of(index, f'slug = "{slug}"')

    def bad(what: str, fix: str) -> Problem:
        return Problem(slug, index, at, what, fix, "index-schema")

    for key in ("title", "summary"):
        if not str(entry.get(key, "")).strip():
            yield bad(f"no {key}", f"give the entry a {key}")
    if entry.get("difficulty") not in DIFFICULTIES:
        yield bad(f"difficulty {entry.get('difficulty')!r}", f"use one of {DIFFICULTIES}")
    tags = entry.get("tags", [])
    if not tags or not set(tags) <= set(TAGS):
        yield bad(f"tags {tags!r}", f"one or more of {TAGS} (torch: the worker imports torch)")
    if not isinstance(entry.get("points"), (int, float)) or entry["points"] <= 0:
        yield bad(f"points {entry.get('points')!r}", "a positive number: the suite's sum")
    for key in ("rtol", "atol"):
        if not isinstance(entry.get(key), (int, float)) or entry[key] < 0:
            yield bad(f"{key} {entry.get(key)!r}", "a number >= 0")
    if not entry.get("functions"):
        yield bad("no functions listed", "list the functions (or classes) the stub defines")
    format_only = entry.get("format_only", [])
    tests = _suite_test_names(entry)
    if not isinstance(format_only, list) or any(t not in tests for t in format_only):
        yield bad(f"format_only {format_only!r} names no test of the suite",
                  "list test names without test_, each documented in the statement as points "
                  "for the form alone")
    if len(entry.get("hints", [])) < 3:
        yield bad(f"{len(entry.get('hints', []))} hints", "write at least three progressive "
                  "hints, from the idea to the last step")


def statement_headings(entry: dict) -> Iterator[Problem]:
    path = _files(entry)["statement"]
    if not path.is_file():
        return
    text = path.read_text()
    if not text.startswith("# "):
        yield Problem(entry["slug"], path, 1, "the statement does not start with its title",
                      "begin with '# <title>'", "statement-headings")
    if "\n## The interview question" not in text:
        yield Problem(entry["slug"], path, 1, "no '## The interview question' heading",
                      "end with the question this exercise prepares for", "statement-headings")


def _defs(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _raises_not_implemented(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n)
               for n in ast.walk(node))


def stub_contract(entry: dict) -> Iterator[Problem]:
    path = _files(entry)["stub"]
    tree = _parse(path) if path.is_file() else None
    if tree is None:
        if path.is_file():
            yield Problem(entry["slug"], path, 1, "the stub does not parse",
                          "fix its syntax", "stub-contract")
        return
    defs = _defs(tree)
    for name in entry.get("functions", []):
        node = defs.get(name)
        if node is None:
            yield Problem(entry["slug"], path, 1, f"the stub does not define {name}",
                          f"add {name} with its exact signature", "stub-contract")
            continue
        if not ast.get_docstring(node):
            yield Problem(entry["slug"], path, node.lineno, f"{name} has no docstring",
                          "state the contract: shapes, dtypes, conventions", "stub-contract")
        if not _raises_not_implemented(node):
            yield Problem(entry["slug"], path, node.lineno, f"{name} has a body",
                          "leave `raise NotImplementedError` as its body", "stub-contract")


def _signature(node: ast.FunctionDef | ast.ClassDef) -> str:
    """The names, defaults and kinds of ``node``'s parameters (annotations left out); for a
    class, its public methods' names."""
    if isinstance(node, ast.ClassDef):
        return "class " + ", ".join(sorted(n.name for n in node.body if isinstance(
            n, ast.FunctionDef) and (not n.name.startswith("_") or n.name == "__init__")))
    a = node.args

    def bare(args: list[ast.arg]) -> list[ast.arg]:
        return [ast.arg(arg=x.arg) for x in args]

    return ast.unparse(ast.arguments(
        posonlyargs=bare(a.posonlyargs), args=bare(a.args),
        vararg=a.vararg and ast.arg(arg=a.vararg.arg), kwonlyargs=bare(a.kwonlyargs),
        kw_defaults=a.kw_defaults, kwarg=a.kwarg and ast.arg(arg=a.kwarg.arg),
        defaults=a.defaults))


def reference_signatures(entry: dict) -> Iterator[Problem]:
    files = _files(entry)
    stub = _parse(files["stub"]) if files["stub"].is_file() else None
    ref = _parse(files["reference"]) if files["reference"].is_file() else None
    if stub is None or ref is None:
        if files["reference"].is_file() and ref is None:
            yield Problem(entry["slug"], files["reference"], 1, "the reference does not parse",
                          "fix its syntax", "reference-signatures")
        return
    stub_defs, ref_defs = _defs(stub), _defs(ref)
    for name in entry.get("functions", []):
        if name not in ref_defs:
            yield Problem(entry["slug"], files["reference"], 1, f"no {name} in the reference",
                          f"define {name} as the stub does", "reference-signatures")
        elif name in stub_defs and _signature(stub_defs[name]) != _signature(ref_defs[name]):
            yield Problem(entry["slug"], files["reference"], ref_defs[name].lineno,
                          f"{name}({_signature(ref_defs[name])}) differs from the stub's "
                          f"({_signature(stub_defs[name])})", "give both the same signature",
                          "reference-signatures")


def _decorator(node: ast.FunctionDef, name: str) -> ast.Call | None:
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == name:
            return dec
    return None


def _suite_test_names(entry: dict) -> set[str]:
    suite = _files(entry)["suite"]
    tree = _parse(suite) if suite.is_file() else None
    return {t.name.removeprefix("test_") for t in _tests(tree)} if tree else set()


def _tests(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def suite_tests(entry: dict) -> Iterator[Problem]:
    path = _files(entry)["suite"]
    tree = _parse(path) if path.is_file() else None
    if tree is None:
        if path.is_file():
            yield Problem(entry["slug"], path, 1, "the suite does not parse", "fix its syntax",
                          "suite-tests")
        return
    tests = _tests(tree)
    if not tests:
        yield Problem(entry["slug"], path, 1, "the suite has no test", "write a @graded test",
                      "suite-tests")
    for test in tests:
        dec = _decorator(test, "graded") or _decorator(test, "source_rule")
        if dec is None:
            yield Problem(entry["slug"], path, test.lineno, f"{test.name} is not @graded",
                          "decorate it with @graded(points, hint, hint_for=(...))",
                          "suite-tests")
        elif dec.func.id == "graded":
            if len(dec.args) < 2:
                yield Problem(entry["slug"], path, test.lineno, f"{test.name} has no hint",
                              "give @graded a hint that points at the idea", "suite-tests")
            if not any(k.arg == "hint_for" for k in dec.keywords):
                yield Problem(entry["slug"], path, test.lineno,
                              f"{test.name} does not say what its hint is about",
                              "add hint_for=(...) with the failure kinds the hint explains",
                              "suite-tests")
        if not ast.get_docstring(test):
            yield Problem(entry["slug"], path, test.lineno, f"{test.name} has no docstring",
                          "say in one line what it checks (the report shows it)", "suite-tests")


def _suite_mistakes(tree: ast.Module) -> Iterator[tuple[str | None, int]]:
    """Each ``@mistake`` of a suite: its name (None when not a literal) and line."""
    for name, _, line in _mistake_decls(tree):
        yield name, line


def _mistake_decls(tree: ast.Module) -> Iterator[tuple[str | None, str | None, int]]:
    """Each ``@mistake``: its name and the start of its message (None when not literal)."""
    def start(node: ast.AST | None) -> str | None:
        while isinstance(node, ast.BinOp):  # "..." + "..."
            node = node.left
        if isinstance(node, ast.JoinedStr) and node.values:
            node = node.values[0]
        return node.value if isinstance(node, ast.Constant) and isinstance(
            node.value, str) else None

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (dec := _decorator(node, "mistake")):
            name = dec.args[1] if len(dec.args) > 1 else None
            message = dec.args[2] if len(dec.args) > 2 else next(
                (k.value for k in dec.keywords if k.arg == "message"), None)
            yield (name.value if isinstance(name, ast.Constant) else None), start(message), \
                node.lineno


def suite_mistakes(entry: dict) -> Iterator[Problem]:
    path = _files(entry)["suite"]
    tree = _parse(path) if path.is_file() else None
    if tree is None:
        return
    names: dict[str | None, int] = {}
    for name, message, line in _mistake_decls(tree):
        if name in names:
            yield Problem(entry["slug"], path, line, f"mistake {name!r} is declared "
                          "twice", "give every mistake a name of its own", "suite-mistakes")
        if message is not None and not message.startswith("Your "):
            yield Problem(entry["slug"], path, line, f"mistake {name!r}'s message starts "
                          f"{message[:20]!r}", "say what the learner's result matches: "
                          "\"Your output matches ...\"", "suite-mistakes")
        names[name] = line
    if len(names) < 2:
        yield Problem(entry["slug"], path, 1, f"{len(names)} known mistake(s)",
                      "declare at least two @mistake functions, each a real wrong answer",
                      "suite-mistakes")


def points_sum(entry: dict) -> Iterator[Problem]:
    path = _files(entry)["suite"]
    tree = _parse(path) if path.is_file() else None
    if tree is None or not isinstance(entry.get("points"), (int, float)):
        return
    total = 0.0
    for test in _tests(tree):
        dec = _decorator(test, "graded")
        if dec is not None and dec.args and isinstance(dec.args[0], ast.Constant):
            total += float(dec.args[0].value)
    if abs(total - entry["points"]) > 1e-9:
        yield Problem(entry["slug"], catalog.INDEX, _line_of(catalog.INDEX,
                                                             f'slug = "{entry["slug"]}"'),
                      f"points = {entry['points']:g} but the suite's tests sum to {total:g}",
                      f"set points = {total:g} (or change the tests' points)", "points-sum")


def _confirms(node: ast.AST, helpers: set[str]) -> bool:
    """Whether ``node`` checks a right value: ``check.call``, ``check.equal(...,
    confirms=...)`` or a call of a module function that does."""
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        if isinstance(n.func, ast.Attribute) and (n.func.attr == "call" or (
                n.func.attr == "equal" and any(k.arg == "confirms" for k in n.keywords))):
            return True
        if isinstance(n.func, ast.Name) and n.func.id in helpers:
            return True
    return False


def raises_confirmed(entry: dict) -> Iterator[Problem]:
    path = _files(entry)["suite"]
    tree = _parse(path) if path.is_file() else None
    if tree is None:
        return
    helpers: set[str] = set()
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)
                 and not n.name.startswith("test_")]
    for _ in range(3):  # helpers that call helpers
        helpers |= {f.name for f in functions if _confirms(f, helpers)}
    for test in _tests(tree):
        raises = [n for n in ast.walk(test) if isinstance(n, ast.Call) and isinstance(
            n.func, ast.Attribute) and n.func.attr == "raises"]
        if raises and not _confirms(test, helpers):
            yield Problem(entry["slug"], path, test.lineno, f"{test.name} checks that a call "
                          "raises but no right value", "add check.call(func, valid args) after "
                          "the invalid calls, so that raising for everything earns nothing",
                          "raises-confirmed")


def _declared(entry: dict) -> tuple[Path, variants.Declared | None, str]:
    """The declaration of the reference's edits: its path, what it declares (None when it is
    missing or does not parse) and why not."""
    path = variants.path_of(entry["slug"])
    if not path.is_file():
        return path, None, "missing"
    try:  # parsed once for the three rules that read it (variants.load keeps it)
        return path, variants.load(entry["slug"]), ""
    except variants.EditError as e:
        return path, None, str(e)


def _at(entry: dict, path: Path, text: str, what: str, fix: str, rule: str) -> Problem:
    return Problem(entry["slug"], path, _line_of(path, text) if path.is_file() else 1, what,
                   fix, rule)


def variants_declared(entry: dict) -> Iterator[Problem]:
    path, declared, why = _declared(entry)
    if why == "missing":
        return  # files-exist says so
    if declared is None:
        yield _at(entry, path, "", why, "see the format in grader/authoring/variants.py",
                  "variants-declared")
    elif len(declared.uncatalogued) < MIN_UNCATALOGUED:
        yield _at(entry, path, "", f"{len(declared.uncatalogued)} uncatalogued variant(s)",
                  f"declare at least {MIN_UNCATALOGUED} [[variant]] entries: wrong files a "
                  "learner is likely to write that no mistake catalogues", "variants-declared")


def edits_apply(entry: dict) -> Iterator[Problem]:
    path, declared, _ = _declared(entry)
    reference = _files(entry)["reference"]
    if declared is None or not reference.is_file():
        return
    src = reference.read_text()
    for v in (*declared.mistakes, *declared.uncatalogued):
        try:
            if v.source(src) == src:
                yield _at(entry, path, v.name, f"{v.name} changes nothing",
                          "edit the reference", "edits-apply")
        except variants.EditError as e:
            yield _at(entry, path, v.name, str(e), "quote the reference's current text, once",
                      "edits-apply")


def mistake_has_variant(entry: dict) -> Iterator[Problem]:
    path, declared, _ = _declared(entry)
    suite = _files(entry)["suite"]
    tree = _parse(suite) if suite.is_file() else None
    if declared is None or tree is None:
        return
    in_suite = {name for name, _ in _suite_mistakes(tree)}
    planted = declared.mistake_names()
    for name in sorted(n for n in in_suite - planted if n):
        yield _at(entry, suite, f'"{name}"', f"no declared variant plants the mistake {name}",
                  f"add a [[mistake]] to {path.name} whose `named` expects it",
                  "mistake-has-variant")
    for name in sorted(planted - in_suite):
        yield _at(entry, path, name, f"the suite has no mistake {name}",
                  "name one of the suite's @mistake functions", "mistake-has-variant")


_TODO_FIX = {
    "statement": "write your exercise's statement over the example",
    "stub": "write your exercise's signatures and contracts over the example (bodies `raise "
            "NotImplementedError`)",
    "reference": "write your exercise's reference over the example",
    "variants": "declare your exercise's planted mistakes and wrong files over the example",
    "suite": "write your exercise's known mistakes, probes and tests over the example",
    "index entry": "write the entry's summary, hints, points (the suite's sum) and tolerances "
                   "over the example",
}
_TABLE = re.compile(r"^\[\[?[A-Za-z_]")  # a TOML table's header: [[exercise]], [name]


def _entry_lines(slug: str) -> list[tuple[int, str]]:
    """The numbered lines of ``slug``'s entry in the index: from its ``[[exercise]]`` header
    to the next table header (comments included; none when the slug is not found)."""
    lines = catalog.INDEX.read_text().splitlines()
    at = next((n for n, line in enumerate(lines) if line.strip() == f'slug = "{slug}"'), None)
    if at is None:
        return []
    start = at
    while start > 0 and not _TABLE.match(lines[start]):
        start -= 1
    end = at + 1
    while end < len(lines) and not _TABLE.match(lines[end]):
        end += 1
    return list(enumerate(lines[start:end], start + 1))


def nothing_left_to_write(entry: dict) -> Iterator[Problem]:
    """Every ``TODO(pack new)`` marker in the exercise's files, its working copy
    (``exercises/SLUG.py``) and its index entry: one problem per marker line."""
    slug = entry["slug"]
    places: list[tuple[Path, str, list[tuple[int, str]]]] = []
    for kind, path in (*_files(entry).items(), ("working copy", catalog.get(slug).working_copy)):
        if path.is_file():
            places.append((path, kind, list(enumerate(path.read_text().splitlines(), 1))))
    places.append((catalog.INDEX, "index entry", _entry_lines(slug)))
    for path, kind, lines in places:
        for n, line in lines:
            if TODO not in line:
                continue
            said = line.split(TODO, 1)[1].strip(" :") or "left to write"
            fix = _TODO_FIX.get(kind) or (
                f"once the stub is written, run `grade reset {slug}`: the working copy becomes "
                "the stub (the file it replaces is kept in .grade/backups/)")
            yield Problem(slug, path, n, f"{TODO} in the {kind}: {said}", fix,
                          "nothing-left")


RULES = (
    Rule("files-exist", "statement, stub, reference and suite exist", files_exist),
    Rule("index-schema", "index entry: title, summary, difficulty, tags, points, tolerances, "
         "functions, three hints", index_schema),
    Rule("statement-headings", "the statement's title and interview question",
         statement_headings),
    Rule("stub-contract", "the stub defines every function with a docstring, unimplemented",
         stub_contract),
    Rule("reference-signatures", "the reference has the stub's names and signatures",
         reference_signatures),
    Rule("suite-tests", "every test @graded with a hint, its kinds and a docstring",
         suite_tests),
    Rule("suite-mistakes", "at least two uniquely named known mistakes", suite_mistakes),
    Rule("points-sum", "the index's points equal the suite's sum", points_sum),
    Rule("raises-confirmed", "a raises-test also checks a right value", raises_confirmed),
    Rule("variants-declared", "the reference's edits declared, five uncatalogued variants",
         variants_declared),
    Rule("edits-apply", "every declared edit applies exactly once and changes the file",
         edits_apply),
    Rule("mistake-has-variant", "every suite mistake is planted by a declared variant",
         mistake_has_variant),
    Rule("nothing-left", f"no '{TODO}' marker left in the exercise's files, its working "
         "copy or its index entry", nothing_left_to_write),
)


def order_problems() -> Iterator[Problem]:
    """Files of the pack that no index entry owns, and entries listed twice."""
    seen: set[str] = set()
    for entry in _entries():
        if entry.get("slug") in seen:
            yield Problem(entry["slug"], catalog.INDEX, _line_of(catalog.INDEX, entry["slug"]),
                          "listed twice", "keep one entry", "index-order")
        seen.add(entry.get("slug", ""))
    folders = [(catalog.SUITES_DIR, "test_*.py", lambda p: p.stem.removeprefix("test_")),
               (catalog.STUBS_DIR, "*.py", lambda p: p.stem),
               (catalog.SOLUTIONS_DIR, "*.py", lambda p: p.stem),
               (catalog.EXERCISES_DIR, "*.md", lambda p: p.stem)]
    for folder, pattern, slug_of in folders:
        for path in sorted(folder.glob(pattern)) if folder.is_dir() else []:
            if slug_of(path) not in seen:
                yield Problem(slug_of(path), path, 1, "no index entry owns this file",
                              "add its [[exercise]] entry to grader/exercises.toml, or remove "
                              "the file", "index-order")


def check(slugs: list[str] | None = None) -> tuple[list[Problem], int]:
    """Every static rule over ``slugs`` (default: the whole pack, and the pack's order):
    the problems found, and how many exercises were checked."""
    entries = [e for e in _entries() if slugs is None or e.get("slug") in slugs]
    problems = list(order_problems()) if slugs is None else []
    for entry in entries:
        for rule in RULES:
            problems += list(rule.check(entry))
    return problems, len(entries)
