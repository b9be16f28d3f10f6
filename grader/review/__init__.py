"""`grade review OUT`: the teacher's review of a graded class, in a local web page.

``store.py`` reads and writes ``OUT/review.json`` and applies it to a class's results (what
``grade bulk`` and every export call); ``app.py`` is the page (Flask), served on the loopback
interface only, behind a per-run token, by ``grader/commands/review.py``.
"""
