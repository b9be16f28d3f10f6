"""The class's similarity check (``grade bulk --similarity``), in two steps:

- ``compare.py``: which submissions of one exercise are unusually alike (MOSS-style tokens,
  winnowed fingerprints, greedy string tiling, a score). Pure computation on source text.
- ``page.py``: the check run over a class, written as ``OUT/similarity.html`` (template
  ``grader/report/templates/similarity.html.j2``) and ``OUT/similarity.csv``.
"""
