"""Notebooks as learner files: ``SLUG.ipynb`` graded by its definitions, and the IPython magic.

- ``extract``: a notebook (or a list of cells) -> the text of a generated ``SLUG.py`` holding
  only its definitions, with a header that maps each generated line back to "cell N, line M";
  plain text processing in the grading process, nothing is ever executed.
- ``lines``: that header, read back: relabels traceback lines and messages of a generated file.
- ``files``: the learner files of a grading with their notebooks replaced by generated files.
- ``magic``: ``%load_ext grader``, ``%%grade SLUG`` and ``%grade_hint SLUG`` (needs IPython).

This package imports nothing heavy at import time (``grader`` and the CLI stay light).
"""
