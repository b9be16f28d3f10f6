"""`grade review OUT`: the teacher's review page of a graded class, served on this machine
only (127.0.0.1), behind a token made for this run (``grader/review/app.py``)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import click

HOST = "127.0.0.1"  # the loopback interface only: never reachable from another machine


def make_server(host: str, port: int, app):  # -> werkzeug.serving.BaseWSGIServer
    """The threaded WSGI server of ``app`` on ``host``:``port`` (0: a free port), which logs
    errors only (a line per request would bury the address, and print the token)."""
    from werkzeug.serving import WSGIRequestHandler
    from werkzeug.serving import make_server as werkzeug_server

    class Quiet(WSGIRequestHandler):
        def log_request(self, *args, **kwargs) -> None:
            pass

    return werkzeug_server(host, port, app, threaded=True, request_handler=Quiet)


@click.command("review")
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default="a free port",
              help="The port to serve the page on (on 127.0.0.1 only).")
@click.option("--no-browser", is_flag=True, help="Print the page's address; open no browser.")
def review(out: Path, port: int, no_browser: bool) -> None:
    """Review a class graded by `grade bulk --out OUT`: a local web page with each
    submission's files, its tests and the assignment's rubric. What you enter is saved at once
    in OUT/review.json, and every export (grades.csv, the LMS files, the reports) is written
    again. Ctrl-C stops it."""
    from grader.bulk import manifest
    from grader.files import use_private
    from grader.review import store

    try:
        from grader.review.app import create_app, default_exporter
    except ImportError as exc:  # the `review` extra (Flask, Pygments) is not installed
        raise click.UsageError(f"grade review needs Flask and Pygments ({exc.name} is "
                               "missing): pip install 'vit-grader[review]' (./dev installs "
                               "them)") from None

    try:
        m = manifest.read(out)
        task = m.assignment()
        store.load(out)  # a review file that does not read: said now, not on the first click
    except (manifest.ManifestError, store.ReviewError) as exc:
        raise click.UsageError(str(exc)) from None
    # what is written from here (review.json, the exports) is as private as the last grade
    # bulk run made the class (--private: its class.json is the owner's only)
    use_private((out / manifest.FILE).stat().st_mode & 0o077 == 0)
    token = secrets.token_urlsafe(32)
    try:
        server = make_server(HOST, port, create_app(out, token))
    except OSError as exc:
        raise click.UsageError(f"cannot serve on {HOST}:{port} ({exc.strerror or exc})") \
            from None
    url = f"http://{HOST}:{server.server_port}/?token={token}"
    graded = len(m.graded())
    rubric = task.rubric if task is not None else None
    items = f"{len(rubric.items)} rubric item(s)" if rubric is not None else "no rubric"
    click.echo(f"Reviewing {m.title!r}: {graded} graded submission(s), {items}.", err=True)
    if default_exporter() is None:
        click.secho("This grader cannot rewrite the exports: reviews are saved in "
                    "review.json only (grade bulk applies them).", fg="yellow", err=True)
    click.echo("Open this address in your browser (it holds this run's key; Ctrl-C stops):",
               err=True)
    click.echo(f"    {url}")
    sys.stdout.flush()
    if not no_browser:
        click.launch(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("Stopped.", err=True)
    finally:
        server.server_close()
