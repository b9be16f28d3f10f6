"""vit-grader: an interview-practice autograder for ML (Vision Transformers, inductive bias)."""

import os

# One BLAS/OpenMP thread in the grading process, set before numpy or torch is imported: the
# reference's runtime is then comparable with the learner's (the worker runs on one thread),
# and a process that later forks workers never ran multi-threaded kernels.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

__version__ = "0.1.0"


def load_ipython_extension(ip: object) -> None:
    """``%load_ext grader``: the ``%%grade SLUG`` and ``%grade_hint SLUG`` magics (IPython
    looks for this function in the module named; the magics load only then)."""
    from grader.notebook.magic import load_ipython_extension as load

    load(ip)
