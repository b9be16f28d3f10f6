"""The review page (Flask): one graded submission at a time, its files highlighted beside the
autograder's verdicts, the assignment's rubric and a comment, saved at once.

``create_app(out, token)`` serves the class folder ``out`` (``grade bulk``'s OUT):

- ``/`` the class: each submission, its score and whether it is reviewed;
- ``/s/<id>`` a submission: its files (Pygments), its tests (statuses, points, the grader's
  message, known mistakes, figures: ``grader/report/svg.py``), the similarity pairs it is in
  (``OUT/similarity.csv``), the rubric items and the comment;
- ``POST /save/<id>`` what the teacher entered (JSON from the page's script, or the form
  itself without script): written to ``OUT/review.json`` (``store.save``), then every export
  of the class rewritten (``grader.bulk.exports.write_exports``), one save at a time;
- ``/files/<id>/index.html``, ``/files/similarity.html`` the reports ``grade bulk`` wrote.

Every request needs the run's token: ``?token=`` once (the answer sets a cookie and drops it
from the address), then the cookie; a POST also carries it in its body or the
``X-Review-Token`` header (a cookie alone never changes anything). Anything else is 403.
Every learner-controlled text (ids, names, code, messages) is escaped by Jinja2's autoescape
or by Pygments; pages run only the app's own script (Content-Security-Policy).
"""

from __future__ import annotations

import copy
import csv
import hashlib
import hmac
import json
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from flask import Flask, Response, abort, jsonify, redirect, render_template, request, url_for
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from grader import numbers
from grader.bulk import manifest as mf
from grader.inert import inert
from grader.report import marks as mark_words
from grader.report import svg
from grader.report.csv_cells import uncell
from grader.report.summary import SYMBOLS, Cause, mistake_label, rule_state, shared_causes
from grader.results import ExerciseResult, SubmissionResult, TestResult, from_dict
from grader.rubric import Rubric

from . import store

HERE = Path(__file__).resolve().parent
REPORT_TEMPLATES = HERE.parent / "report" / "templates"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
# the reports grade bulk wrote: their own inline CSS and data: images, no script at all
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'"
TOKEN_HEADER = "X-Review-Token"
SHOW_CHARS = 200_000  # characters of one file shown (the rest is cut, and said)
SIMILARITY_CSV = "similarity.csv"
TOP_PAIRS = 25  # pairs similarity.html shows per exercise (grader/similarity/page.py)

Exporter = Callable[[Path, Iterable[str]], list[str]]


def default_exporter() -> Exporter | None:
    """``grader.bulk.exports.write_exports``, or None where this grader has none."""
    try:
        from grader.bulk.exports import write_exports
    except ImportError:
        return None
    return write_exports


@dataclass
class _Cached:
    """A file's parsed content, read again when the file changes (its size or mtime)."""

    read: Callable[[Path], Any]
    seen: dict[Path, tuple[tuple[int, int], Any]] = field(default_factory=dict)

    def get(self, path: Path) -> Any:
        st = path.stat()
        key = (st.st_mtime_ns, st.st_size)
        hit = self.seen.get(path)
        if hit is None or hit[0] != key:
            hit = (key, self.read(path))
            self.seen[path] = hit
        return hit[1]


@dataclass(frozen=True)
class Pair:
    """A similarity pair a submission is in: the exercise, the other submission, the score
    (%), and the anchor of the pair on similarity.html ('' when the page does not show it)."""

    exercise: str
    other: str
    score: float
    anchor: str


class ClassFolder:
    """The class folder as the page reads it: the manifest and the rubric (read again when
    ``class.json`` changes), each result, the reviews and the similarity pairs."""

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self._manifest = _Cached(self._read_manifest)
        self._results = _Cached(lambda p: from_dict(json.loads(p.read_text(encoding="utf-8"))))
        self._pairs = _Cached(_read_pairs)

    @staticmethod
    def _read_manifest(path: Path) -> tuple[mf.ClassManifest, Rubric | None]:
        m = mf.read(path.parent)
        task = m.assignment()
        return m, task.rubric if task is not None else None

    def manifest(self) -> tuple[mf.ClassManifest, Rubric | None]:
        """The manifest and the run's rubric; ``ManifestError`` when OUT is no class."""
        try:
            return self._manifest.get(self.out / mf.FILE)
        except FileNotFoundError:
            return mf.read(self.out), None  # raises the manifest's own sentence

    def entry(self, sid: str) -> mf.Entry | None:
        return next((e for e in self.manifest()[0].students if e.id == sid), None)

    def folder(self, sid: str) -> Path:
        folder = self.out / sid
        if folder.resolve().parent != self.out.resolve():  # an id is one folder name
            abort(404)
        return folder

    def _result(self, sid: str) -> SubmissionResult:
        try:
            return self._results.get(self.folder(sid) / "results.json")
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a results.json this grader reads ({exc})") from None

    def result(self, sid: str) -> SubmissionResult:
        """A fresh copy of the graded result (``OSError``/``ValueError`` when unreadable)."""
        return copy.deepcopy(self._result(sid))

    def fingerprint(self, sid: str) -> str:
        """``store.fingerprint`` of the graded result, as ``result`` reads it."""
        return store.fingerprint(self._result(sid))

    def pairs(self, sid: str) -> list[Pair]:
        """The similarity pairs of ``sid``, highest score first ([] without the check)."""
        try:
            rows = self._pairs.get(self.out / SIMILARITY_CSV)
        except (OSError, ValueError):
            return []
        found = [Pair(ex, b if a == sid else a, score, anchor)
                 for ex, a, b, score, anchor in rows if sid in (a, b)]
        return sorted(found, key=lambda p: -p.score)


def _read_pairs(path: Path) -> list[tuple[str, str, str, float, str]]:
    """(exercise, a, b, score, anchor on similarity.html) of each row of similarity.csv."""
    rows = []
    rank: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            exercise = uncell(row["exercise"])
            rank[exercise] = rank.get(exercise, 0) + 1  # the rows are ranked per exercise
            anchor = f"{exercise}-{rank[exercise]}" if rank[exercise] <= TOP_PAIRS else ""
            rows.append((exercise, uncell(row["a"]), uncell(row["b"]), float(row["score"]),
                         anchor))
    return rows


def _code_html(path: Path) -> Markup:
    """The file highlighted by Pygments (which escapes it), control characters shown."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    note = ""
    if len(text) > SHOW_CHARS:
        note = f"\n# [{len(text) - SHOW_CHARS} more characters not shown]\n"
        text = text[:SHOW_CHARS]
    try:
        lexer = get_lexer_for_filename(path.name, stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    html = highlight(inert(text) + note, lexer,
                     HtmlFormatter(linenos="table", cssclass="source", wrapcode=True))
    return Markup(html)  # Pygments escaped every character of the file


def _files(folder: Path, exercises: list[str]) -> dict[str, list[tuple[str, Markup]]]:
    """Exercise -> its submitted files as (name, highlighted HTML); files of no exercise
    under ''."""
    found: dict[str, list[tuple[str, Markup]]] = {}
    try:
        paths = sorted(p for p in (folder / "submitted").iterdir() if p.is_file())
    except OSError:
        return found
    for path in paths:
        slug = path.stem if path.stem in exercises else ""
        found.setdefault(slug, []).append((path.name, _code_html(path)))
    return found


def _explain(exercise: ExerciseResult) -> tuple[list[Cause], dict[str, Cause]]:
    """The causes several tests of ``exercise`` share (told once, as the report does), and
    each such test's cause by its name."""
    causes = shared_causes(exercise)
    return causes, {name: c for c in causes for name in c.tests}


def _figures(test: TestResult) -> list[tuple[Markup, str]]:
    drawn = []
    for fig in test.figures:
        markup = svg.render(fig)
        if markup:
            drawn.append((Markup(markup), svg.caption(fig)))  # svg.py escapes its texts
    return drawn


def _progress(ids: list[str], reviews: dict[str, store.Entry],
              fingerprints: dict[str, str]) -> dict[str, str]:
    """Submission id -> "reviewed", "stale" or "" (not reviewed)."""
    states = {}
    for sid in ids:
        entry = reviews.get(sid)
        if entry is None or not entry.reviewed:
            states[sid] = ""
        elif sid in fingerprints and fingerprints[sid] != entry.fingerprint:
            states[sid] = "stale"
        else:
            states[sid] = "reviewed"
    return states


def cookie_name(token: str) -> str:
    """The cookie of a run: named after its token, so that two runs on one machine (one
    host, two ports) each find their own."""
    return "grade-review-" + hashlib.sha256(token.encode()).hexdigest()[:12]


def create_app(out: Path, token: str, exporter: Exporter | None = None) -> Flask:
    """The review app of the class folder ``out``, behind ``token``; ``exporter`` rewrites
    the class's exports after each save (``default_exporter()`` when None; none at all when
    this grader has no exports module)."""
    app = Flask(__name__, template_folder=str(HERE / "templates"),
                static_folder=str(HERE / "static"))
    app.jinja_options = {**app.jinja_options, "autoescape": True, "trim_blocks": True,
                         "lstrip_blocks": True, "undefined": jinja2.StrictUndefined}
    app.jinja_loader = jinja2.FileSystemLoader([HERE / "templates", REPORT_TEMPLATES])
    app.config["MAX_CONTENT_LENGTH"] = 1 << 20  # a save is a few items and a comment
    klass = ClassFolder(out)
    export = exporter or default_exporter()
    lock = threading.Lock()  # one save (review.json, then the exports) at a time
    cookie = cookie_name(token)

    def valid(given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), token.encode())

    @app.before_request
    def check_token() -> Response | None:
        if request.method == "POST":
            if valid(request.headers.get(TOKEN_HEADER)) or valid(request.form.get("token")):
                return None
            return _forbidden()
        if valid(request.args.get("token")):  # the printed URL: keep it as a cookie
            rest = {k: v for k, v in request.args.items() if k != "token"}
            response = redirect(url_for(request.endpoint or "index",
                                        **(request.view_args or {}), **rest), 303)
            response.set_cookie(cookie, token, httponly=True, samesite="Strict")
            return response
        if valid(request.cookies.get(cookie)):
            return None
        return _forbidden()

    @app.after_request
    def headers(response: Response) -> Response:
        if "Content-Security-Policy" not in response.headers:
            response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    @app.errorhandler(mf.ManifestError)
    @app.errorhandler(store.ReviewError)
    def unreadable(exc: ValueError) -> tuple[str, int]:
        return render_template("error.html", message=str(exc), token=token,
                               title="grade review", done=0, total=0), 500

    def state(ids: list[str]) -> tuple[dict[str, store.Entry], dict[str, str]]:
        """The reviews, and each graded submission's "reviewed", "stale" or ""."""
        reviews = store.load(out)
        fingerprints = {}
        for sid in ids:
            if sid in reviews:
                try:
                    fingerprints[sid] = klass.fingerprint(sid)
                except (OSError, ValueError):
                    pass
        return reviews, _progress(ids, reviews, fingerprints)

    def common(m: mf.ClassManifest, states: dict[str, str]) -> dict[str, Any]:
        return {"title": m.title, "token": token, "fmt": numbers.points,
                "done": sum(1 for s in states.values() if s == "reviewed"),
                "total": len(states)}

    @app.get("/")
    def index() -> str:
        m, rubric = klass.manifest()
        ids = m.graded()
        reviews, states = state(ids)
        rows = []
        for e in m.students:
            row: dict[str, Any] = {"entry": e, "state": states.get(e.id, ""), "error": False}
            if e.status == "graded":
                try:
                    result = klass.result(e.id)
                except (OSError, ValueError):
                    row["error"] = True
                else:
                    if e.id in reviews:
                        store.apply_entry(result, reviews[e.id], rubric)
                    row.update(score=result.score, final=result.final_score,
                               max=result.max_score)
            rows.append(row)
        first = next((sid for sid in ids if states[sid] != "reviewed"), ids[0] if ids else None)
        return render_template("index.html", rows=rows, first=first, **common(m, states))

    @app.get("/s/<path:sid>")
    def submission(sid: str) -> str:
        m, rubric = klass.manifest()
        entry = klass.entry(sid)
        if entry is None:
            abort(404)
        ids = m.graded()
        reviews, states = state(ids)
        view: dict[str, Any] = {"entry": entry, "review": reviews.get(sid), "rubric": rubric,
                                "state": states.get(sid, ""), "result": None, "error": "",
                                "nav": _nav(ids, sid, states), "position": _position(ids, sid),
                                "pairs": klass.pairs(sid), "files": {},
                                "similarity": (out / "similarity.html").is_file()}
        if entry.status == "graded":
            try:
                result = klass.result(sid)
            except (OSError, ValueError) as exc:
                view["error"] = f"Its results.json cannot be read ({exc})."
            else:
                if sid in reviews:
                    store.apply_entry(result, reviews[sid], rubric)
                view.update(result=result, marks=[mark_words.describe(k) for k in result.marks],
                            files=_files(klass.folder(sid),
                                         [e.exercise for e in result.exercises]))
        return render_template(
            "submission.html", sid=sid, **view, **common(m, states), symbols=SYMBOLS,
            explain=_explain, mistake_label=mistake_label, rule_state=rule_state,
            figures=_figures, signed=numbers.signed_points)

    @app.post("/save/<path:sid>")
    def save(sid: str) -> Response | tuple[Response, int]:
        m, rubric = klass.manifest()
        entry = klass.entry(sid)
        if entry is None or entry.status != "graded":
            return _refuse("This submission was not graded: there is nothing to review.", 404)
        wanted = _wanted(rubric)
        if isinstance(wanted, str):
            return _refuse(wanted, 400)
        items, comment, action = wanted
        try:
            result = klass.result(sid)
        except (OSError, ValueError) as exc:
            return _refuse(f"Its results.json cannot be read ({exc}).", 409)
        review = store.Entry(items=items, comment=comment, reviewed=action != "unreview",
                             fingerprint=store.fingerprint(result))
        with lock:
            try:
                reviews = store.save(out, sid, review)
            except store.ReviewError as exc:
                return _refuse(f"Not saved: {exc}", 409)
            except OSError as exc:
                return _refuse(f"Not saved: {store.path_of(out)} cannot be written "
                               f"({exc.strerror or exc}).", 500)
            exported, notices = _export(export, out, sid)
        if not request.is_json:  # the form, without script: back to a page
            ids = m.graded()
            if action == "next":
                nxt = _nav(ids, sid, _progress(ids, reviews, {}))["unreviewed"]
                return redirect(url_for("submission", sid=nxt or sid), 303)
            return redirect(url_for("submission", sid=sid), 303)
        saved = reviews.get(sid)
        if saved is not None:
            store.apply_entry(result, saved, rubric)
        _, states = state(m.graded())
        return jsonify(saved=True, reviewed=saved is not None and saved.reviewed,
                       marks=[mark_words.describe(k) for k in result.marks],
                       final=numbers.points(result.final_score),
                       score=numbers.points(result.score), max=numbers.points(result.max_score),
                       exported=exported, notices=notices,
                       done=sum(1 for s in states.values() if s == "reviewed"))

    @app.get("/files/similarity.html")
    def similarity_page() -> Response:
        return _report_file(out / "similarity.html")

    @app.get("/files/<path:sid>/index.html")
    def student_report(sid: str) -> Response:
        entry = klass.entry(sid)
        if entry is None or entry.status != "graded":
            abort(404)
        return _report_file(klass.folder(sid) / "index.html")

    @app.get("/assets/report.css")
    def report_css() -> Response:
        css = render_template("report.css") + HtmlFormatter().get_style_defs(".source")
        return Response(css, mimetype="text/css")

    return app


def _report_file(path: Path) -> Response:
    """A page grade bulk wrote, with the CSP the reports declare themselves."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        abort(404)
    response = Response(text, mimetype="text/html")
    response.headers["Content-Security-Policy"] = REPORT_CSP
    return response


def _forbidden() -> Response:
    return Response("403 Forbidden: open the address `grade review` printed (with its "
                    "?token=...).\n", status=403, mimetype="text/plain")


def _refuse(message: str, status: int) -> tuple[Response, int]:
    if request.is_json:
        return jsonify(saved=False, error=message), status
    return Response(message + "\n", status=status, mimetype="text/plain"), status


def _wanted(rubric: Rubric | None) -> tuple[tuple[str, ...], str, str] | str:
    """(item ids, comment, action) of the request, checked against ``rubric``; a sentence
    saying what does not fit otherwise."""
    if request.is_json:
        data = request.get_json(silent=True)
        if not isinstance(data, dict):
            return "The request is not a JSON object."
        items, comment, action = data.get("items", []), data.get("comment", ""), \
            data.get("action", "save")
    else:
        items, comment = request.form.getlist("item"), request.form.get("comment", "")
        action = request.form.get("action", "save")
    if not (isinstance(items, list) and all(isinstance(i, str) for i in items)
            and isinstance(comment, str) and action in ("save", "next", "unreview")):
        return "The request's items, comment or action are not of the right type."
    known = {i.id for i in rubric.items} if rubric is not None else set()
    unknown = [i for i in items if i not in known]
    if unknown:
        return f"Not in the rubric: {', '.join(unknown)}."
    if len(comment) > store.COMMENT_CHARS:
        return f"The comment is longer than {store.COMMENT_CHARS} characters."
    if comment.strip() and rubric is not None and not rubric.comment:
        return "The rubric allows no comment (comment = false)."
    return tuple(dict.fromkeys(items)), comment.replace("\r\n", "\n"), action


def _export(export: Exporter | None, out: Path, sid: str) -> tuple[bool, list[str]]:
    """Rewrite the class's exports after a save: (whether they were, the sentences to show)."""
    if export is None:
        return False, ["Saved in review.json; this grader cannot rewrite the exports "
                       "(no grader.bulk.exports): run grade bulk again to apply it."]
    try:
        return True, list(export(out, {sid}))
    except ValueError as exc:  # a file the exports read does not fit: one sentence
        return False, [f"Saved in review.json, but the exports were not rewritten: {exc}"]
    except Exception as exc:  # noqa: BLE001 - the review is saved; say so, keep serving
        traceback.print_exc(file=sys.stderr)
        return False, [f"Saved in review.json, but rewriting the exports failed "
                       f"({type(exc).__name__}); see the terminal."]


def _position(ids: list[str], sid: str) -> int:
    return ids.index(sid) + 1 if sid in ids else 0


def _nav(ids: list[str], sid: str, states: dict[str, str]) -> dict[str, str | None]:
    """The previous, next and next unreviewed (or stale) submission after ``sid``, in the
    class's order, wrapping round; None where there is none."""
    if not ids:
        return {"prev": None, "next": None, "unreviewed": None}
    at = ids.index(sid) if sid in ids else -1
    after = ids[at + 1:] + ids[:max(at, 0)]
    return {"prev": ids[at - 1] if at > 0 else None,
            "next": ids[at + 1] if at + 1 < len(ids) else None,
            "unreviewed": next((i for i in after if states.get(i) != "reviewed"), None)}
